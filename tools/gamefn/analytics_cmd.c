/*
 * analytics_cmd.c — `gamefn analytics`: event counts of a time range, by type,
 * datacenter or queue, from the analytics function (gamefn.v1.analytics.query).
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gamefn/clock.h"
#include "gamefn/v1/analytics.pb-c.h"
#include "query.h"

#define MINUTE INT64_C(60000)

static const char *const dims[] = {"type", "datacenter", "queue"};

const char gf_cli_analytics_help[] =
    "usage: gamefn analytics [--last D | --from T [--to T]] [--by DIM] [--per-minute]\n"
    "                        [--json] [--timeout D]\n\n"
    "Event counts per UTC minute, added up over a range, from the analytics function\n"
    "(gamefn.v1.analytics.query; exact: each event counts once, whatever the consumers\n"
    "went through).\n\n"
    "  --last D      the last D up to now (90s, 15m, 2h; default 1h)\n"
    "  --from T      start: an RFC 3339 time (2026-11-29T15:00:00Z), a duration ago\n"
    "                (3h) or Unix ms, rounded down to the minute\n"
    "  --to T        end, exclusive, rounded up to the minute (default: now)\n"
    "  --by DIM      type (default), datacenter or queue\n"
    "  --per-minute  also one row per minute with events\n"
    "  --json        the reply as one JSON object\n"
    "  --timeout D   how long to wait for the answer (default 5s)\n\n"
    "exit: 0 answered, 2 usage, 3 NATS unreachable, 5 timeout, 6 no analytics instance\n"
    "      running, 7 refused (a range over functions.analytics.max_range), 8 other\n";

static int print_json(const Gamefn__V1__AnalyticsQueryReply *r)
{
    json_t *root = gf_query_analytics_json(r);
    if (!root) {
        fprintf(stderr, "gamefn analytics: out of memory\n");
        return GF_CLI_FAILED;
    }
    gf_cli_json_print(root, true);
    return GF_CLI_OK;
}

static void print_counts(Gamefn__V1__AnalyticsCount **c, size_t n, uint64_t total, uint64_t other,
                         uint64_t unattributed, const char *dim)
{
    for (size_t i = 0; i < n; i++)
        printf("  %-32s %12" PRIu64 " %6.1f%%\n", c[i]->name, c[i]->count,
               total ? 100.0 * (double)c[i]->count / (double)total : 0.0);
    if (other)
        printf("  %-32s %12" PRIu64 "\n", "(other names)", other);
    if (unattributed) {
        char label[48];
        snprintf(label, sizeof label, "(no %s)", dim);
        printf("  %-32s %12" PRIu64 "\n", label, unattributed);
    }
}

static void print_text(const Gamefn__V1__AnalyticsQueryReply *r)
{
    char from[GF_CLOCK_RFC3339_MAX], to[GF_CLOCK_RFC3339_MAX];
    const char *dim = dims[r->group_by < 3 ? r->group_by : 0];
    printf("events %s .. %s by %s: %" PRIu64 " (from %u partition records)\n",
           gf_clock_rfc3339(r->from_unix_ms * 1000000, 0, from, sizeof from),
           gf_clock_rfc3339(r->to_unix_ms * 1000000, 0, to, sizeof to), dim, r->total, r->records);
    print_counts(r->counts, r->n_counts, r->total, r->other, r->unattributed, dim);
    for (size_t i = 0; i < r->n_minutes; i++) {
        const Gamefn__V1__AnalyticsMinute *m = r->minutes[i];
        printf("%s  %" PRIu64 "\n",
               gf_clock_rfc3339(m->minute_unix_ms * 1000000, 0, from, sizeof from), m->total);
        print_counts(m->counts, m->n_counts, m->total, m->other, m->unattributed, dim);
    }
}

int gf_cli_analytics(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"last", required_argument, NULL, 'l'},    {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},      {"by", required_argument, NULL, 'b'},
        {"per-minute", no_argument, NULL, 'p'},    {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 'T'}, {NULL, 0, NULL, 0},
    };
    int64_t last = 3600000, from = -1, to = -1, timeout_ms = 5000;
    int by = 0;
    bool json = false, per_minute = false;
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (!gf_cli_duration("analytics", "--last", optarg, 1, INT64_C(3650) * 86400000, &last))
                return GF_CLI_USAGE;
            break;
        case 'f':
        case 't':
            if (!gf_cli_since("analytics", c == 'f' ? "--from" : "--to", optarg,
                              c == 'f' ? &from : &to))
                return GF_CLI_USAGE;
            break;
        case 'b':
            for (by = 0; by < 3 && strcmp(optarg, dims[by]) != 0; by++)
                ;
            if (by == 3)
                return gf_cli_usage_error("analytics", "--by must be type, datacenter or queue");
            break;
        case 'p':
            per_minute = true;
            break;
        case 'j':
            json = true;
            break;
        case 'T':
            if (!gf_cli_duration("analytics", "--timeout", optarg, 1, 60000, &timeout_ms))
                return GF_CLI_USAGE;
            break;
        default:
            return gf_cli_usage_error("analytics", "unknown option");
        }
    }
    if (optind < argc)
        return gf_cli_usage_error("analytics", "unexpected argument '%s'", argv[optind]);
    if (to < 0)
        to = gf_clock_unix_ms();
    to = (to + MINUTE - 1) / MINUTE * MINUTE; /* up: the current minute is included */
    from = from < 0 ? to - last : from / MINUTE * MINUTE;
    if (from < 0)
        from = 0;

    Gamefn__V1__AnalyticsQueryRequest q = GAMEFN__V1__ANALYTICS_QUERY_REQUEST__INIT;
    q.from_unix_ms = from;
    q.to_unix_ms = to;
    q.group_by = (Gamefn__V1__AnalyticsGroupBy)by;
    q.per_minute = per_minute;
    Gamefn__V1__AnalyticsQueryReply *r = NULL;
    int code = gf_cli_ask(cli, "analytics", "gamefn.v1.analytics.query", &q.base,
                          &gamefn__v1__analytics_query_reply__descriptor, timeout_ms,
                          (ProtobufCMessage **)&r);
    if (code != GF_CLI_OK)
        return code;
    if (json)
        code = print_json(r);
    else
        print_text(r);
    gamefn__v1__analytics_query_reply__free_unpacked(r, NULL);
    return code;
}
