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

static void print_instance(const char *data, int len)
{
    json_error_t jerr;
    json_t *root = json_loadb(data, (size_t)len, 0, &jerr);
    if (!root) {
        fprintf(stderr, "gamefn services: unreadable answer: %s\n", jerr.text);
        return;
    }
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
    json_decref(root);
}

int gf_cli_services(const gf_config *cfg, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"wait", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0},
    };
    int64_t wait_ms = 500;
    int c;
    optind = 0; /* a fresh scan: argv is the command's */
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        char *end = NULL;
        wait_ms = c == 'w' ? strtoll(optarg, &end, 10) : -1;
        if (wait_ms <= 0 || wait_ms > 60000 || (end && *end)) {
            fprintf(stderr, "gamefn services: --wait must be 1..60000 ms\n");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gamefn services: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    gf_conn *conn = NULL;
    if (gf_conn_open(&cfg->nats, "gamefn-cli", NULL, 10000, &conn) != GF_OK) {
        fprintf(stderr, "gamefn services: cannot connect to NATS\n");
        return 1;
    }
    natsConnection *nc = gf_conn_nats(conn);
    natsSubscription *sub = NULL;
    natsInbox *inbox = NULL;
    int count = 0;
    if (natsInbox_Create(&inbox) == NATS_OK &&
        natsConnection_SubscribeSync(&sub, nc, inbox) == NATS_OK &&
        natsConnection_PublishRequest(nc, "$SRV.STATS", inbox, NULL, 0) == NATS_OK) {
        printf("%-14s %-24s %-8s %-12s %10s %8s %12s %8s %8s %s\n", "FUNCTION", "INSTANCE",
               "VERSION", "ENDPOINT", "REQUESTS", "ERRORS", "AVG_US", "DROPPED", "REFUSED",
               "HEALTH");
        natsMsg *m = NULL;
        while (natsSubscription_NextMsg(&m, sub, wait_ms) == NATS_OK) {
            print_instance(natsMsg_GetData(m), natsMsg_GetDataLength(m));
            natsMsg_Destroy(m);
            count++;
        }
    }
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    gf_conn_close(conn, 1000);
    printf("%d instance(s)\n", count);
    return 0;
}
