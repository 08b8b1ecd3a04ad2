/*
 * lb_cmd.c — `gamefn lb top|page|around|rank`: leaderboard queries
 * (gamefn.v1.leaderboard.query, docs/PROTOCOL.md §10).
 *
 *   gamefn lb top    [--board B] [--period P] [--limit N]             [--json]
 *   gamefn lb page   --start RANK [--board B] [--period P] [--limit N] [--json]
 *   gamefn lb around PLAYER [--board B] [--period P] [--before N] [--after N] [--json]
 *   gamefn lb rank   PLAYER [--board B] [--period P]                  [--json]
 *
 * --board defaults to "global", --period to the current one ("previous" or an id like
 * 2026-12-01 / 2026-W49). The answer's freshness is printed under the table; with --json
 * the reply as JSON (scores as strings when beyond 2^53, as JavaScript needs).
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
#include "gamefn/v1/leaderboard.pb-c.h"

#define JS_SAFE INT64_C(9007199254740991) /* 2^53 - 1 */

typedef struct lb_opts {
    const char *board, *period;
    long limit, before, after;
    bool json;
} lb_opts;

const char gf_cli_lb_help[] =
    "usage: gamefn lb top    [--board B] [--period P] [--limit N]              [--json]\n"
    "       gamefn lb page   --start RANK [--board B] [--period P] [--limit N] [--json]\n"
    "       gamefn lb around PLAYER [--board B] [--period P] [--before N] [--after N] [--json]\n"
    "       gamefn lb rank   PLAYER [--board B] [--period P]                  [--json]\n"
    "       (each also takes --timeout D, default 2s)\n\n"
    "Asks the leaderboard function (gamefn.v1.leaderboard.query): the top N, a page from\n"
    "a rank, the players around one, or one player's rank. The answer's freshness (the\n"
    "KV_leaderboard sequence it reflects, and whether the replica is caught up) is\n"
    "printed under the table.\n\n"
    "  --board B     default global\n"
    "  --period P    current (default), previous, or an id (2026-12-01 for a daily board,\n"
    "                2026-W49 for a weekly one)\n"
    "  --limit N     1..100 (default 10)\n"
    "  --before N, --after N  0..50 (default 5)\n"
    "  --json        the reply as one JSON object (scores beyond 2^53 as strings)\n\n"
    "exit: 0 answered, 2 usage, 3 NATS unreachable, 4 unknown board, period or player,\n"
    "      5 timeout, 6 no leaderboard instance running, 7 refused\n";

static json_t *score_json(int64_t score)
{
    if (score <= JS_SAFE && score >= -JS_SAFE)
        return json_integer(score);
    char text[24];
    snprintf(text, sizeof text, "%" PRId64, score);
    return json_string(text);
}

static void print_reply(const Gamefn__V1__LeaderboardQueryReply *r, bool json)
{
    if (json) {
        json_t *entries = json_array();
        for (size_t i = 0; i < r->n_entries; i++)
            json_array_append_new(
                entries, json_pack("{s:I, s:s, s:o, s:I}", "rank", (json_int_t)r->entries[i]->rank,
                                   "player_id", r->entries[i]->player_id, "score",
                                   score_json(r->entries[i]->score), "updated_unix_ms",
                                   (json_int_t)r->entries[i]->updated_unix_ms));
        json_t *o =
            json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I}", "board", r->board, "period", r->period,
                      "entries", entries, "total_players", (json_int_t)r->total_players,
                      "as_of_stream_seq", (json_int_t)r->as_of_stream_seq, "as_of_unix_ms",
                      (json_int_t)r->as_of_unix_ms, "pending", (json_int_t)r->pending);
        gf_cli_json_print(o, true);
        return;
    }
    if (r->n_entries > 0)
        printf("%8s  %-24s %20s  %s\n", "RANK", "PLAYER", "SCORE", "UPDATED");
    for (size_t i = 0; i < r->n_entries; i++) {
        char when[40];
        printf("%8" PRIu64 "  %-24s %20" PRId64 "  %s\n", r->entries[i]->rank,
               r->entries[i]->player_id, r->entries[i]->score,
               gf_clock_rfc3339(r->entries[i]->updated_unix_ms * 1000000, 0, when, sizeof when));
    }
    char heard[40];
    printf("%sboard %s, period %s: %" PRIu64 " player(s); as of KV_leaderboard seq %" PRIu64
           " (%s, %s)\n",
           r->n_entries ? "" : "(no entries) ", r->board, r->period, r->total_players,
           r->as_of_stream_seq,
           r->as_of_unix_ms ? gf_clock_rfc3339(r->as_of_unix_ms * 1000000, 0, heard, sizeof heard)
                            : "never",
           r->pending ? "lagging" : "caught up");
    if (r->pending)
        printf("  %" PRIu64 " write(s) of the bucket not applied yet by the answering replica\n",
               r->pending);
}

int gf_cli_lb(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"board", required_argument, NULL, 'b'},
        {"period", required_argument, NULL, 'p'},
        {"limit", required_argument, NULL, 'l'},
        {"start", required_argument, NULL, 's'},
        {"before", required_argument, NULL, 'B'},
        {"after", required_argument, NULL, 'A'},
        {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    if (argc < 2)
        return gf_cli_usage_error("lb", "which query: top, page, around or rank?");
    const char *sub = argv[1];
    bool player = strcmp(sub, "around") == 0 || strcmp(sub, "rank") == 0;
    if (!player && strcmp(sub, "top") != 0 && strcmp(sub, "page") != 0)
        return gf_cli_usage_error("lb", "unknown query '%s' (top, page, around, rank)", sub);
    lb_opts o = {.board = "global", .period = "", .limit = 10, .before = 5, .after = 5};
    long long start = 0, v = 0;
    int64_t timeout_ms = 2000;
    int c;
    optind = 0;
    while ((c = getopt_long(argc - 1, argv + 1, "", longopts, NULL)) != -1) {
        bool ok = true;
        switch (c) {
        case 'b':
            o.board = optarg;
            break;
        case 'p':
            o.period = optarg;
            break;
        case 'l':
            ok = gf_cli_integer("lb", "--limit", optarg, 1, 100, &v);
            o.limit = (long)v;
            break;
        case 's':
            ok = gf_cli_integer("lb", "--start", optarg, 1, INT64_MAX, &start);
            break;
        case 'B':
            ok = gf_cli_integer("lb", "--before", optarg, 0, 50, &v);
            o.before = (long)v;
            break;
        case 'A':
            ok = gf_cli_integer("lb", "--after", optarg, 0, 50, &v);
            o.after = (long)v;
            break;
        case 'j':
            o.json = true;
            break;
        case 't':
            ok = gf_cli_duration("lb", "--timeout", optarg, 1, 60000, &timeout_ms);
            break;
        default:
            return gf_cli_usage_error("lb", "unknown option");
        }
        if (!ok)
            return GF_CLI_USAGE;
    }
    int nargs = argc - 1 - optind;
    char **args = argv + 1 + optind;
    if (player ? nargs != 1 : nargs != 0)
        return gf_cli_usage_error("lb", "%s %s", sub,
                                  player ? "needs one PLAYER" : "takes no arguments");
    Gamefn__V1__LeaderboardQueryRequest req = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__INIT;
    Gamefn__V1__TopQuery top = GAMEFN__V1__TOP_QUERY__INIT;
    Gamefn__V1__PageQuery page = GAMEFN__V1__PAGE_QUERY__INIT;
    Gamefn__V1__AroundQuery around = GAMEFN__V1__AROUND_QUERY__INIT;
    Gamefn__V1__RankQuery rank = GAMEFN__V1__RANK_QUERY__INIT;
    req.board = (char *)(uintptr_t)o.board;
    req.period = (char *)(uintptr_t)o.period;
    if (strcmp(sub, "top") == 0) {
        top.limit = (uint32_t)o.limit;
        req.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_TOP;
        req.top = &top;
    } else if (strcmp(sub, "page") == 0) {
        if (start < 1)
            return gf_cli_usage_error("lb", "page needs --start RANK (>= 1)");
        page.start_rank = (uint64_t)start;
        page.limit = (uint32_t)o.limit;
        req.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_PAGE;
        req.page = &page;
    } else if (strcmp(sub, "around") == 0) {
        around.player_id = args[0];
        around.before = (uint32_t)o.before;
        around.after = (uint32_t)o.after;
        req.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_AROUND;
        req.around = &around;
    } else {
        rank.player_id = args[0];
        req.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_RANK;
        req.rank = &rank;
    }
    Gamefn__V1__LeaderboardQueryReply *r = NULL;
    int rc = gf_cli_ask(cli, "lb", "gamefn.v1.leaderboard.query", &req.base,
                        &gamefn__v1__leaderboard_query_reply__descriptor, timeout_ms,
                        (ProtobufCMessage **)&r);
    if (rc == GF_CLI_OK) {
        print_reply(r, o.json);
        gamefn__v1__leaderboard_query_reply__free_unpacked(r, NULL);
    }
    return rc;
}
