/*
 * lb_support.h — helpers for the leaderboard integration tests: the environment
 * (server with the event mapping, EVENTS, the leaderboard group, buckets, the
 * function's config), queries, and a brute-force reference board.
 *
 * Ownership: replies are protobuf-c's (lb_reply_free). One test thread.
 */
#ifndef GAMEFN_TEST_LB_SUPPORT_H
#define GAMEFN_TEST_LB_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event_support.h"
#include "gamefn/v1/leaderboard.pb-c.h"

#define LB_BIN  "functions/leaderboard/gamefn-leaderboard"
#define DLQ_BIN "functions/dlq/gamefn-dlq"

/* Starts a server and writes the config: boards global (incr, desc, none), daily (incr,
 * desc, daily), last (set, desc, none), lap (best, asc, none); snapshot_interval
 * `snapshot` (e.g. "1s"); `extra_boards` more board lines (or NULL). */
int lb_env_start(gf_fnenv *env, const char *snapshot, const char *extra_boards);

/* A query; NULL on any error (*code = the error code, or -1 without an answer). */
Gamefn__V1__LeaderboardQueryReply *lb_top(gf_fnenv *env, const char *board, const char *period,
                                          uint32_t limit, int *code);
Gamefn__V1__LeaderboardQueryReply *lb_page(gf_fnenv *env, const char *board, const char *period,
                                           uint64_t start, uint32_t limit, int *code);
Gamefn__V1__LeaderboardQueryReply *lb_around(gf_fnenv *env, const char *board, const char *period,
                                             const char *player, uint32_t before, uint32_t after,
                                             int *code);
Gamefn__V1__LeaderboardQueryReply *lb_rank(gf_fnenv *env, const char *board, const char *period,
                                           const char *player, int *code);
void lb_reply_free(Gamefn__V1__LeaderboardQueryReply *r);

/* A brute-force board: players with a score, ranked by sorting everything. */
typedef struct ref_entry {
    char player[65];
    int64_t score, updated;
    bool has;
} ref_entry;

typedef struct ref_board {
    ref_entry *e;
    size_t n;
    bool ascending;
} ref_board;

/* Sorts (score, then earlier updated, then player id) and drops players without a score. */
void ref_rank(ref_board *b);

/* Whether reply entries equal ranks [first, first + n) of the sorted reference (and
 * total_players its size); `report` prints the first difference. */
bool ref_matches(const ref_board *b, size_t first, const Gamefn__V1__LeaderboardQueryReply *r,
                 bool report);

#endif
