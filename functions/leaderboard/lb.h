/*
 * lb.h — the leaderboard function's pure logic (no NATS): its config, its effect (the
 * consumer framework's ops), the in-memory boards every replica keeps, the queries, and
 * snapshots. main.c, follow.c and snapshot.c wire it to NATS.
 *
 * The model (docs/EVENTS.md, "Leaderboards"):
 *  - Effect store: KV bucket `leaderboard`, key "<board>.<period>.<player_id>", value an
 *    EffectRecord whose effect is a LeaderboardScore {score, updated_unix_ms}. A
 *    ScoreEvent scores its player_id on the board it names (empty = "global"), in the
 *    period of its occurred_unix_ms (gf_period_of), with the board's operator.
 *  - Every replica follows the whole bucket (stream KV_leaderboard) into one gf_board per
 *    board and period, so a query answered by any replica sees every partition's effects;
 *    as_of_stream_seq is the last KV_leaderboard sequence applied.
 *  - Periods: a board keeps in memory its periods from `periods_kept - 1` periods before
 *    the current one (by the replica's clock) onwards; "previous" is the one before the
 *    current one. A period boundary is a new key prefix: nothing is deleted.
 *
 * Ownership: lb_boards_alloc / lb_boards_free; replies and snapshot buffers are malloc'd
 * for the caller. Threads: lb_boards is not locked (main.c holds a rwlock around it);
 * the effect ops are reentrant (the config is immutable).
 */
#ifndef GAMEFN_LB_H
#define GAMEFN_LB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "gamefn/config.h"
#include "gamefn/consumer_ops.h"
#include "gamefn/consumer_options.h"
#include "gamefn/v1/leaderboard.pb-c.h"
#include "gamefn/v1/state.pb-c.h"
#include "period.h"
#include "score.h"

enum { LB_BOARDS_MAX = 64, LB_NAME_MAX = 32, LB_PERIOD_ID_MAX = 15 };

/* ---- config: functions.leaderboard ------------------------------------------------- */

typedef struct lb_board_config {
    const char *name;
    int op;     /* gf_score_op */
    int order;  /* gf_board_order */
    int period; /* gf_period_kind */
} lb_board_config;

typedef struct lb_config {
    lb_board_config *boards;
    size_t boards_len;
    int64_t periods_kept;
    int64_t snapshot_interval_ms;
    int64_t snapshot_chunk;
    int64_t follow_batch;
    gf_consumer_options events;
} lb_config;

extern const gf_cfg_table lb_config_table;

const lb_board_config *lb_config_board(const lb_config *cfg, const char *name);

/* ---- the effect: consumer ops (ctx = the lb_config) --------------------------------- */

extern const gf_consumer_ops lb_effect_ops;

/* LeaderboardScore <-> fields; has = false for empty bytes. GF_ERR_INVALID on bad bytes. */
gf_err lb_score_decode(const uint8_t *buf, size_t len, bool *has, int64_t *score,
                       int64_t *updated_unix_ms);

/* ---- periods ---------------------------------------------------------------------- */

/* The period `back` periods before the one holding now (0 = current). */
gf_err lb_period_back(gf_period_kind kind, int64_t now_unix_ms, unsigned back, gf_period *out);
/* Whether id is shaped like an id of kind ("all", "2026-12-01", "2026-W49"). */
bool lb_period_id_ok(gf_period_kind kind, const char *id);

/* ---- the boards every replica keeps -------------------------------------------------- */

typedef struct lb_boards lb_boards;

gf_err lb_boards_alloc(const lb_config *cfg, lb_boards **out);
void lb_boards_free(lb_boards *b);

/* Applies one write of bucket `leaderboard` (key "<board>.<period>.<player>", value an
 * EffectRecord; deleted = a delete/purge marker). Keys of unknown boards, malformed
 * keys or values, and periods older than the kept ones are skipped (counted). */
void lb_boards_apply(lb_boards *b, const char *key, const uint8_t *value, size_t len, bool deleted);

/* Drops periods no longer kept (call now and then). */
void lb_boards_trim(lb_boards *b, int64_t now_unix_ms);

size_t lb_boards_players(const lb_boards *b); /* over every board and period */
uint64_t lb_boards_skipped(const lb_boards *b);

const lb_config *lb_boards_config(const lb_boards *b);
/* Whether the period is one this replica keeps for the board (not older than the kept). */
bool lb_boards_period_kept(const lb_boards *b, const lb_board_config *cfg, const char *period);

/* The board of (name, period id), or NULL. */
const gf_board *lb_boards_get(const lb_boards *b, const char *name, const char *period);

/* ---- queries ------------------------------------------------------------------------ */

typedef struct lb_freshness {
    uint64_t as_of_stream_seq;
    int64_t as_of_unix_ms;
    uint64_t pending;
} lb_freshness;

/* Answers one LeaderboardQueryRequest. GF_OK: *out is a packed LeaderboardQueryReply.
 * Otherwise the error, with `code` (a gamefn.v1.ErrorCode: INVALID_ARGUMENT or
 * NOT_FOUND), `field` and `why` filled for the error reply. */
gf_err lb_query(const lb_boards *b, const uint8_t *req, size_t len, const lb_freshness *fresh,
                int64_t now_unix_ms, uint8_t **out, size_t *out_len, int *code, char *field,
                size_t field_size, char *why, size_t why_size);

/* ---- snapshots ----------------------------------------------------------------------- */

/* One chunk to store: BoardSnapshotChunk bytes of board/period. */
typedef struct lb_chunk {
    char board[LB_NAME_MAX + 1];
    char period[LB_PERIOD_ID_MAX + 1];
    uint8_t *data;
    size_t len;
    uint64_t players; /* the board's size */
} lb_chunk;

/* Every board and period as chunks of at most chunk_entries (an empty board: one
 * chunk with no entries); *chunks malloc'd, free with lb_chunks_free. */
gf_err lb_boards_snapshot(const lb_boards *b, size_t chunk_entries, lb_chunk **chunks, size_t *n);
void lb_chunks_free(lb_chunk *chunks, size_t n);

/* Loads one chunk (in rank order per board); boards are created as needed. */
gf_err lb_boards_load_chunk(lb_boards *b, const char *board, const char *period,
                            const uint8_t *data, size_t len);

#endif
