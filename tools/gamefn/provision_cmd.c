/* provision_cmd.c — `gamefn provision [--update]`: every asset in config, once. */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gamefn/conn.h"
#include "gamefn/provision.h"

int gf_cli_provision(const gf_config *cfg, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"update", no_argument, NULL, 'u'},
        {NULL, 0, NULL, 0},
    };
    bool update = false;
    int c;
    optind = 0; /* a fresh scan: argv is the command's */
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c != 'u') {
            fprintf(stderr, "usage: gamefn provision [--update]\n");
            return 2;
        }
        update = true;
    }
    if (optind < argc) {
        fprintf(stderr, "gamefn provision: unexpected argument '%s' (only --update)\n",
                argv[optind]);
        return 2;
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
