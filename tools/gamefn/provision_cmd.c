/* provision_cmd.c — `gamefn provision [--update]`: every asset in config, once. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gamefn/conn.h"
#include "gamefn/provision.h"

int gf_cli_provision(const gf_config *cfg, int argc, char **argv)
{
    bool update = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--update") != 0) {
            fprintf(stderr, "gamefn provision: unknown option '%s' (only --update)\n", argv[i]);
            return 2;
        }
        update = true;
    }
    gf_conn *conn = NULL;
    gf_err err = gf_conn_open(&cfg->nats, "gamefn-cli", NULL, 10000, &conn);
    if (err != GF_OK) {
        fprintf(stderr, "gamefn provision: cannot connect to NATS (%s)\n", gf_err_str(err));
        return 1;
    }
    gf_provision_result res;
    memset(&res, 0, sizeof res);
    err = gf_provision_all(gf_conn_js(conn), &cfg->jetstream, update, &res);
    if (err != GF_OK)
        fprintf(stderr, "gamefn provision: %s: %s\n", gf_err_str(err), res.message);
    else
        printf("provisioned %zu streams, %zu buckets, %zu consumers\n", cfg->jetstream.streams_len,
               cfg->jetstream.buckets_len, cfg->jetstream.consumers_len);
    gf_conn_close(conn, 1000);
    return err == GF_OK ? 0 : 1;
}
