/*
 * crashes_cmd.c — `gamefn crashes`: the most frequent crash fingerprints, or one
 * fingerprint's detail, from the crashes function (gamefn.v1.crashes.query).
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
#include "gamefn/v1/crashes.pb-c.h"
#include "query.h"

const char gf_cli_crashes_help[] =
    "usage: gamefn crashes [top] [--limit N] [--since T] [--json] [--timeout D]\n"
    "       gamefn crashes show <fingerprint> [--json] [--timeout D]\n\n"
    "Crash reports grouped by fingerprint (a hash of the crashing thread's\n"
    "normalised top frames): counts, first and last seen, a sample; from the crashes\n"
    "function (gamefn.v1.crashes.query).\n\n"
    "  --limit N    fingerprints listed (1..100, default 20)\n"
    "  --since T    only fingerprints seen since T: RFC 3339, or a duration ago (24h)\n"
    "  --json       the reply as one JSON object\n"
    "  --timeout D  how long to wait for the answer (default 5s)\n\n"
    "exit: 0 answered, 2 usage, 3 NATS unreachable, 4 unknown fingerprint (show),\n"
    "      5 timeout, 6 no crashes instance running, 7 refused, 8 other\n";

static char *when(int64_t ms, char *buf, size_t size)
{
    return gf_clock_rfc3339(ms * 1000000, 0, buf, size);
}

static json_t *counts_json(Gamefn__V1__CrashCount **c, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_pack("{s:s, s:I}", "name", c[i]->name, "count",
                                               (json_int_t)c[i]->count)) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *detail_json(const Gamefn__V1__CrashGroup *g, uint32_t partitions)
{
    /* json_pack refuses invalid UTF-8: the sample's text fields came validated */
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:I, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:o, s:o, "
        "s:I, s:I, s:i}",
        "fingerprint", g->fingerprint, "count", (json_int_t)g->count, "first_seen_unix_ms",
        (json_int_t)g->first_seen_unix_ms, "last_seen_unix_ms", (json_int_t)g->last_seen_unix_ms,
        "frames", (int)g->frames, "normalized", g->normalized, "signature", g->signature, "message",
        g->message, "stack", g->stack, "build", g->build, "platform", g->platform,
        "sample_event_id", g->sample_event_id, "sample_player_id", g->sample_player_id,
        "sample_source_id", g->sample_source_id, "sample_source_seq",
        (json_int_t)g->sample_source_seq, "builds", counts_json(g->builds, g->n_builds),
        "platforms", counts_json(g->platforms, g->n_platforms), "other_builds",
        (json_int_t)g->other_builds, "other_platforms", (json_int_t)g->other_platforms,
        "partitions", (int)partitions);
    return o;
}

static int print(const Gamefn__V1__CrashesQueryReply *r, bool json)
{
    char a[GF_CLOCK_RFC3339_MAX], b[GF_CLOCK_RFC3339_MAX];
    if (json) {
        json_t *root = NULL;
        if (r->detail) {
            root = detail_json(r->detail, r->partitions);
        } else {
            root = gf_query_crashes_top_json(r);
        }
        if (!root) {
            fprintf(stderr, "gamefn crashes: out of memory\n");
            return GF_CLI_FAILED;
        }
        gf_cli_json_print(root, true);
        return GF_CLI_OK;
    }
    if (r->detail) {
        const Gamefn__V1__CrashGroup *g = r->detail;
        printf("fingerprint %s: %" PRIu64 " crashes in %u partitions, first %s, last %s\n",
               g->fingerprint, g->count, r->partitions, when(g->first_seen_unix_ms, a, sizeof a),
               when(g->last_seen_unix_ms, b, sizeof b));
        printf("grouped by %s\n", g->frames ? "these normalised frames:" : "signature");
        if (g->frames)
            printf("%s", g->normalized);
        printf("sample: event %s (player %s, source %s#%" PRIu64 ")\n  signature: %s\n"
               "  build: %s  platform: %s\n  message: %s\n  stack:\n%s\n",
               g->sample_event_id, g->sample_player_id, g->sample_source_id, g->sample_source_seq,
               g->signature, g->build, g->platform, g->message, g->stack);
        printf("builds:");
        for (size_t i = 0; i < g->n_builds; i++)
            printf(" %s=%" PRIu64, g->builds[i]->name[0] ? g->builds[i]->name : "(none)",
                   g->builds[i]->count);
        if (g->other_builds)
            printf(" (other)=%" PRIu64, g->other_builds);
        printf("\nplatforms:");
        for (size_t i = 0; i < g->n_platforms; i++)
            printf(" %s=%" PRIu64, g->platforms[i]->name[0] ? g->platforms[i]->name : "(none)",
                   g->platforms[i]->count);
        printf("\n");
        return GF_CLI_OK;
    }
    printf("%-32s %8s %-20s %-20s %-12s %-10s %s\n", "FINGERPRINT", "COUNT", "FIRST_SEEN",
           "LAST_SEEN", "BUILD", "PLATFORM", "SIGNATURE");
    for (size_t i = 0; i < r->n_top; i++) {
        const Gamefn__V1__CrashSummary *s = r->top[i];
        printf("%-32s %8" PRIu64 " %-20s %-20s %-12s %-10s %s\n", s->fingerprint, s->count,
               when(s->first_seen_unix_ms, a, sizeof a), when(s->last_seen_unix_ms, b, sizeof b),
               s->build, s->platform, s->signature);
    }
    printf("%" PRIu64 " fingerprints, %" PRIu64 " crashes\n", r->fingerprints, r->crashes);
    return GF_CLI_OK;
}

int gf_cli_crashes(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"limit", required_argument, NULL, 'n'},
        {"since", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    long long limit = 20;
    int64_t since = 0, timeout_ms = 5000;
    bool json = false;
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!gf_cli_integer("crashes", "--limit", optarg, 1, 100, &limit))
                return GF_CLI_USAGE;
            break;
        case 's':
            if (!gf_cli_since("crashes", "--since", optarg, &since))
                return GF_CLI_USAGE;
            break;
        case 'j':
            json = true;
            break;
        case 't':
            if (!gf_cli_duration("crashes", "--timeout", optarg, 1, 60000, &timeout_ms))
                return GF_CLI_USAGE;
            break;
        default:
            return gf_cli_usage_error("crashes", "unknown option");
        }
    }
    Gamefn__V1__CrashesQueryRequest q = GAMEFN__V1__CRASHES_QUERY_REQUEST__INIT;
    Gamefn__V1__CrashTopQuery top = GAMEFN__V1__CRASH_TOP_QUERY__INIT;
    Gamefn__V1__CrashDetailQuery detail = GAMEFN__V1__CRASH_DETAIL_QUERY__INIT;
    const char *what = optind < argc ? argv[optind] : "top";
    if (strcmp(what, "top") == 0 && argc - optind <= 1) {
        top.limit = (uint32_t)limit;
        top.since_unix_ms = since;
        q.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_TOP;
        q.top = &top;
    } else if (strcmp(what, "show") == 0 && argc - optind == 2) {
        detail.fingerprint = argv[optind + 1]; /* checked by the function: typed error */
        q.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_DETAIL;
        q.detail = &detail;
    } else if (strcmp(what, "show") == 0) {
        return gf_cli_usage_error("crashes", "show takes one fingerprint");
    } else {
        return gf_cli_usage_error("crashes", "unknown query '%s' (top, show)", what);
    }
    Gamefn__V1__CrashesQueryReply *r = NULL;
    int code = gf_cli_ask(cli, "crashes", "gamefn.v1.crashes.query", &q.base,
                          &gamefn__v1__crashes_query_reply__descriptor, timeout_ms,
                          (ProtobufCMessage **)&r);
    if (code != GF_CLI_OK)
        return code;
    code = print(r, json);
    gamefn__v1__crashes_query_reply__free_unpacked(r, NULL);
    return code;
}
