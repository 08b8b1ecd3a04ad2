/* provision_cmd.c — `gamefn provision [--update]` and `gamefn check-config`. */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gamefn/provision.h"

const char gf_cli_check_config_help[] =
    "usage: gamefn check-config [--json]\n\n"
    "Validates the configuration file: every key, type and range, the jetstream section's\n"
    "cross-checks, and every functions.<name> section of the functions this build knows.\n"
    "A mistake is reported as file:line:column with the key's name. Needs no NATS.\n\n"
    "A valid file may still get warnings (stderr): a retention stream too small for the\n"
    "outage functions.lag says it must hold (docs/EVENTS.md, \"Can EVENTS hold an outage?\").\n\n"
    "  --json   {path, streams, buckets, consumers, functions, warnings} when the file is\n"
    "           valid\n\n"
    "exit: 0 valid (warnings or not), 2 invalid (or usage)\n";

const char gf_cli_provision_help[] =
    "usage: gamefn provision [--update] [--json]\n\n"
    "Creates every stream, bucket and consumer of the config's jetstream section, or\n"
    "verifies that the existing ones match. A difference is a conflict (named, with the\n"
    "field) unless --update is given, which applies what the server can change in place.\n\n"
    "Warns first, like check-config, when the retention stream cannot hold the outage\n"
    "functions.lag says it must.\n\n"
    "  --update   apply differing settings (needs the admin role)\n"
    "  --json     {ok, streams, buckets, consumers, error}\n\n"
    "exit: 0 provisioned, 2 usage, 3 NATS unreachable, 8 a conflict or a refused change\n";

int gf_cli_check_config(gf_cli *cli, int argc, char **argv)
{
    bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
    if (argc > 1 && !json)
        return gf_cli_usage_error("check-config", "unexpected argument '%s'", argv[1]);
    size_t n = 0;
    const gf_config_section *functions = gf_cli_functions(&n);
    const gf_config *cfg = cli->cfg;
    const gf_jetstream_config *js = &cfg->jetstream;
    json_t *warnings = json_array();
    gf_cli_retention_warnings(cfg, warnings);
    if (json) {
        json_t *names = json_array();
        for (size_t f = 0; f < n; f++)
            json_array_append_new(names, json_string(functions[f].name));
        gf_cli_json_print(json_pack("{s:s, s:I, s:I, s:I, s:o, s:o}", "path", cli->config_path,
                                    "streams", (json_int_t)js->streams_len, "buckets",
                                    (json_int_t)js->buckets_len, "consumers",
                                    (json_int_t)js->consumers_len, "functions", names, "warnings",
                                    warnings),
                          false);
        return GF_CLI_OK;
    }
    json_decref(warnings);
    printf("%s: ok (%zu streams, %zu buckets, %zu consumers; functions known:", cli->config_path,
           js->streams_len, js->buckets_len, js->consumers_len);
    for (size_t f = 0; f < n; f++)
        printf(" %s%s", functions[f].name, f + 1 < n ? "," : ")\n");
    return GF_CLI_OK;
}

int gf_cli_provision(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"update", no_argument, NULL, 'u'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    bool update = false, json = false;
    int c;
    optind = 0; /* a fresh scan: argv is the command's */
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c != 'u' && c != 'j')
            return gf_cli_usage_error("provision", "unknown option");
        update |= c == 'u';
        json |= c == 'j';
    }
    if (optind < argc)
        return gf_cli_usage_error("provision", "unexpected argument '%s' (only --update)",
                                  argv[optind]);
    gf_cli_retention_warnings(cli->cfg, NULL);
    gf_conn *conn = NULL;
    int rc = gf_cli_connect(cli, "provision", &conn);
    if (rc != GF_CLI_OK)
        return rc;
    gf_provision_result res;
    memset(&res, 0, sizeof res);
    const gf_config *cfg = cli->cfg;
    gf_err err = gf_provision_all(gf_conn_js(conn), &cfg->jetstream, update, &res);
    if (err != GF_OK)
        fprintf(stderr, "gamefn provision: %s: %s\n", gf_err_str(err), res.message);
    if (json)
        gf_cli_json_print(json_pack("{s:b, s:I, s:I, s:I, s:s}", "ok", err == GF_OK, "streams",
                                    (json_int_t)cfg->jetstream.streams_len, "buckets",
                                    (json_int_t)cfg->jetstream.buckets_len, "consumers",
                                    (json_int_t)cfg->jetstream.consumers_len, "error",
                                    err == GF_OK ? "" : res.message),
                          false);
    else if (err == GF_OK)
        printf("provisioned %zu streams, %zu buckets, %zu consumers\n", cfg->jetstream.streams_len,
               cfg->jetstream.buckets_len, cfg->jetstream.consumers_len);
    gf_conn_close(conn, 1000);
    return err == GF_OK ? GF_CLI_OK : GF_CLI_FAILED;
}
