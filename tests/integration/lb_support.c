/* lb_support.c — see lb_support.h. */
#include "lb_support.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"
#include "gamefn/wire_error.h"

int lb_env_start(gf_fnenv *env, const char *snapshot, const char *extra_boards)
{
    char functions[2048];
    snprintf(functions, sizeof functions,
             "  leaderboard:\n"
             "    snapshot_interval: %s\n"
             "    boards:\n"
             "      - {name: global, operator: incr, order: descending, period: none}\n"
             "      - {name: daily, operator: incr, order: descending, period: daily}\n"
             "      - {name: last, operator: set, order: descending, period: none}\n"
             "      - {name: lap, operator: best, order: ascending, period: none}\n"
             "%s",
             snapshot, extra_boards ? extra_boards : "");
    gf_fnenv_opts o = {
        .server_config = gf_ev_mapping,
        .runtime = "  drain_timeout: 5s\n"
                   "  fetch_batch: 256\n"
                   "  fetch_expiry: 1s\n"
                   "  heartbeat: 250ms\n"
                   "  max_in_flight: 8\n",
        .streams = "    - name: EVENTS\n"
                   "      subjects: [\"gamefn.v1.evp.>\"]\n"
                   "      duplicate_window: 10m\n"
                   "    - name: LB_SNAPSHOTS\n"
                   "      subjects: [\"gamefn.v1.lb.snapshot.>\"]\n"
                   "    - name: DLQ\n"
                   "      subjects: [\"gamefn.v1.dlq.>\"]\n"
                   "      duplicate_window: 1h\n"
                   "    - name: ADVISORIES\n"
                   "      subjects:\n"
                   "        - \"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>\"\n"
                   "        - \"$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>\"\n",
        .consumers = "    - stream: EVENTS\n"
                     "      name: leaderboard\n"
                     "      partitions: 16\n"
                     "      filter_subject: \"gamefn.v1.evp.{partition}.>\"\n"
                     "      lease_ttl: 3s\n"
                     "      ack_wait: 2s\n"
                     "      max_deliver: 3\n"
                     "      backoff: [200ms, 400ms]\n"
                     "      max_ack_pending: 10000\n"
                     "    - stream: ADVISORIES\n"
                     "      name: dlq\n"
                     "      ack_wait: 5s\n"
                     "      max_deliver: 10\n",
        .buckets = "    - name: leaderboard\n"
                   "    - name: dlq_reasons\n"
                   "      ttl: 7d\n",
        .functions = functions,
    };
    return gf_fnenv_start_opts(env, &o);
}

static Gamefn__V1__LeaderboardQueryReply *ask(gf_fnenv *env,
                                              Gamefn__V1__LeaderboardQueryRequest *req, int *code)
{
    uint8_t *body = NULL;
    size_t len = 0;
    natsMsg *reply = NULL;
    *code = -1;
    if (gf_pack(&req->base, &body, &len) != GF_OK)
        return NULL;
    natsStatus s = natsConnection_Request(&reply, env->nc, "gamefn.v1.leaderboard.query", body,
                                          (int)len, 3000);
    free(body);
    if (s != NATS_OK)
        return NULL;
    const char *ch = NULL, *mh = NULL;
    natsMsgHeader_Get(reply, "Nats-Service-Error-Code", &ch);
    natsMsgHeader_Get(reply, "Nats-Service-Error", &mh);
    gf_wire_error werr;
    const uint8_t *data = (const uint8_t *)natsMsg_GetData(reply);
    size_t dlen = (size_t)natsMsg_GetDataLength(reply);
    Gamefn__V1__LeaderboardQueryReply *r = NULL;
    if (gf_wire_reply_check(ch, mh, data, dlen, &werr) == GF_OK) {
        r = gamefn__v1__leaderboard_query_reply__unpack(NULL, dlen, data);
        *code = 0;
    } else {
        *code = werr.code;
    }
    gf_wire_error_fini(&werr);
    natsMsg_Destroy(reply);
    return r;
}

static void request(Gamefn__V1__LeaderboardQueryRequest *req, const char *board, const char *period)
{
    gamefn__v1__leaderboard_query_request__init(req);
    req->board = (char *)(uintptr_t)board;
    req->period = (char *)(uintptr_t)(period ? period : "");
}

Gamefn__V1__LeaderboardQueryReply *lb_top(gf_fnenv *env, const char *board, const char *period,
                                          uint32_t limit, int *code)
{
    Gamefn__V1__LeaderboardQueryRequest req;
    Gamefn__V1__TopQuery q = GAMEFN__V1__TOP_QUERY__INIT;
    request(&req, board, period);
    q.limit = limit;
    req.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_TOP;
    req.top = &q;
    return ask(env, &req, code);
}

Gamefn__V1__LeaderboardQueryReply *lb_page(gf_fnenv *env, const char *board, const char *period,
                                           uint64_t start, uint32_t limit, int *code)
{
    Gamefn__V1__LeaderboardQueryRequest req;
    Gamefn__V1__PageQuery q = GAMEFN__V1__PAGE_QUERY__INIT;
    request(&req, board, period);
    q.start_rank = start;
    q.limit = limit;
    req.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_PAGE;
    req.page = &q;
    return ask(env, &req, code);
}

Gamefn__V1__LeaderboardQueryReply *lb_around(gf_fnenv *env, const char *board, const char *period,
                                             const char *player, uint32_t before, uint32_t after,
                                             int *code)
{
    Gamefn__V1__LeaderboardQueryRequest req;
    Gamefn__V1__AroundQuery q = GAMEFN__V1__AROUND_QUERY__INIT;
    request(&req, board, period);
    q.player_id = (char *)(uintptr_t)player;
    q.before = before;
    q.after = after;
    req.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_AROUND;
    req.around = &q;
    return ask(env, &req, code);
}

Gamefn__V1__LeaderboardQueryReply *lb_rank(gf_fnenv *env, const char *board, const char *period,
                                           const char *player, int *code)
{
    Gamefn__V1__LeaderboardQueryRequest req;
    Gamefn__V1__RankQuery q = GAMEFN__V1__RANK_QUERY__INIT;
    request(&req, board, period);
    q.player_id = (char *)(uintptr_t)player;
    req.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_RANK;
    req.rank = &q;
    return ask(env, &req, code);
}

void lb_reply_free(Gamefn__V1__LeaderboardQueryReply *r)
{
    if (r)
        gamefn__v1__leaderboard_query_reply__free_unpacked(r, NULL);
}

static bool ref_ascending;

static int ref_cmp(const void *a, const void *b)
{
    const ref_entry *x = a, *y = b;
    if (x->has != y->has)
        return x->has ? -1 : 1;
    if (x->score != y->score)
        return (x->score > y->score) == !ref_ascending ? -1 : 1;
    if (x->updated != y->updated)
        return x->updated < y->updated ? -1 : 1;
    return strcmp(x->player, y->player);
}

void ref_rank(ref_board *b)
{
    ref_ascending = b->ascending;
    qsort(b->e, b->n, sizeof *b->e, ref_cmp);
    while (b->n > 0 && !b->e[b->n - 1].has)
        b->n--;
}

bool ref_matches(const ref_board *b, size_t first, const Gamefn__V1__LeaderboardQueryReply *r,
                 bool report)
{
    if (!r || r->total_players != b->n) {
        if (report)
            fprintf(stderr, "total_players %" PRIu64 ", want %zu\n", r ? r->total_players : 0,
                    b->n);
        return false;
    }
    for (size_t i = 0; i < r->n_entries; i++) {
        size_t k = first + i;
        const Gamefn__V1__LeaderboardEntry *e = r->entries[i];
        if (k >= b->n || e->rank != k + 1 || strcmp(e->player_id, b->e[k].player) != 0 ||
            e->score != b->e[k].score || e->updated_unix_ms != b->e[k].updated) {
            if (!report)
                return false;
            fprintf(stderr,
                    "rank %zu: got %s %" PRId64 " @%" PRId64 ", want %s %" PRId64 " @%" PRId64 "\n",
                    k + 1, e->player_id, e->score, e->updated_unix_ms,
                    k < b->n ? b->e[k].player : "-", k < b->n ? b->e[k].score : 0,
                    k < b->n ? b->e[k].updated : 0);
            return false;
        }
    }
    return true;
}
