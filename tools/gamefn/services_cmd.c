/*
 * services_cmd.c — `gamefn services`: who is running, from $SRV.STATS answers.
 *
 * Every instance answers $SRV.STATS (it is a plain subscription, not a queue
 * group), so one request with an inbox collects all of them; we stop after
 * --wait ms (default 500). An unhealthy instance (metadata healthy "false": a
 * request handler past its deadline, starting, stopping) still answers STATS: its
 * rows say so and the reason follows them.
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gamefn/conn.h"

static void print_instance(json_t *root)
{
    const char *name = json_string_value(json_object_get(root, "name"));
    const char *id = json_string_value(json_object_get(root, "id"));
    const char *version = json_string_value(json_object_get(root, "version"));
    json_t *md = json_object_get(root, "metadata");
    const char *healthy = json_string_value(json_object_get(md, "healthy"));
    const char *why = json_string_value(json_object_get(md, "unhealthy"));
    bool sick = healthy && strcmp(healthy, "false") == 0;
    json_t *eps = json_object_get(root, "endpoints");
    size_t i;
    json_t *ep;
    json_array_foreach(eps, i, ep)
    {
        printf("%-14s %-24s %-8s %-12s %10lld %8lld %12.1f %8lld %8lld %s\n", name ? name : "?",
               id ? id : "?", version ? version : "?",
               json_string_value(json_object_get(ep, "name")),
               (long long)json_integer_value(json_object_get(ep, "num_requests")),
               (long long)json_integer_value(json_object_get(ep, "num_errors")),
               (double)json_integer_value(json_object_get(ep, "average_processing_time")) / 1e3,
               (long long)json_integer_value(json_object_get(ep, "num_dropped")),
               (long long)json_integer_value(json_object_get(ep, "num_refused")),
               sick ? "UNHEALTHY" : "ok");
    }
    if (sick)
        printf("  %s %s: %s\n", name ? name : "?", id ? id : "?", why ? why : "unhealthy");
}

const char gf_cli_services_help[] =
    "usage: gamefn services [--json] [--wait MS]\n\n"
    "Lists every running function instance ($SRV.STATS, answered by every instance) with\n"
    "its endpoints' request, error, dropped and refused counts and average handling time.\n"
    "`gamefn status` shows the same with health, streams and consumers.\n\n"
    "  --json      the $SRV.STATS answers as one JSON array\n"
    "  --wait MS   how long to collect answers (1..60000, default 500)\n\n"
    "exit: 0 listed (even none), 2 usage, 3 NATS unreachable\n";

int gf_cli_services(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"wait", required_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    int64_t wait_ms = 500;
    bool json = false;
    int c;
    optind = 0; /* a fresh scan: argv is the command's */
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        long long v = 0;
        if (c == 'j')
            json = true;
        else if (c != 'w')
            return gf_cli_usage_error("services", "unknown option");
        else if (!gf_cli_integer("services", "--wait", optarg, 1, 60000, &v))
            return GF_CLI_USAGE;
        else
            wait_ms = v;
    }
    if (optind < argc)
        return gf_cli_usage_error("services", "unexpected argument '%s'", argv[optind]);
    gf_conn *conn = NULL;
    int rc = gf_cli_connect(cli, "services", &conn);
    if (rc != GF_CLI_OK)
        return rc;
    json_t *all = gf_cli_srv_collect(gf_conn_nats(conn), "$SRV.STATS", wait_ms);
    gf_conn_close(conn, 1000);
    if (json) {
        gf_cli_json_print(all, false);
        return GF_CLI_OK;
    }
    printf("%-14s %-24s %-8s %-12s %10s %8s %12s %8s %8s %s\n", "FUNCTION", "INSTANCE", "VERSION",
           "ENDPOINT", "REQUESTS", "ERRORS", "AVG_US", "DROPPED", "REFUSED", "HEALTH");
    size_t i;
    json_t *x;
    json_array_foreach(all, i, x) print_instance(x);
    printf("%zu instance(s)\n", json_array_size(all));
    json_decref(all);
    return GF_CLI_OK;
}
