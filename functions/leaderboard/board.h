/*
 * board.h — one leaderboard (a board in one period): players ranked by score.
 *
 * Ordering: the better score first (higher for GF_BOARD_DESCENDING, lower for
 * GF_BOARD_ASCENDING); equal scores by earlier updated_unix_ms, then by player_id
 * in byte order. Every player has a distinct position, so ranks are dense: 1, 2,
 * 3, ... with no shared ranks, and a page of ranks is well defined.
 *
 * Operations are O(log n) expected (a treap with subtree sizes, see board.c), plus a
 * hash from player id to node for upserts and rank queries; a board holds millions
 * of players (about 90 bytes each). How scores change (best, set, incr) is
 * gf_score_apply in score.h; gf_board_apply combines the two.
 *
 * Scores are limited to +-2^62 (GF_BOARD_SCORE_MAX) so that sums can be checked
 * without overflow. Note for JavaScript clients: numbers are exact only up to 2^53;
 * read int64 scores as BigInt (or strings) if a game can go beyond that.
 *
 * Snapshots: gf_board_snapshot_encode writes a range of ranks as one
 * BoardSnapshotChunk (schemas/gamefn/v1/state.proto); loading the chunks in rank
 * order into an empty board rebuilds it, each chunk validated (order, ranks, ids,
 * bounds, strictly increasing entries, no duplicate player) before it changes
 * anything. Chunks keep each stored message small (e.g. 20,000 entries, ~0.6 MB).
 *
 * Ownership: gf_board_alloc allocates, gf_board_free frees (NULL is fine); ids are
 * copied in and out; encoded snapshots are malloc'd for the caller to free().
 * Threads: a board is not locked; one thread at a time (its function's loop).
 */
#ifndef GAMEFN_BOARD_H
#define GAMEFN_BOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

enum {
    GF_BOARD_ID_MAX = 64,           /* player id: token 1..64 */
    GF_BOARD_PLAYERS_MAX = 1 << 30, /* per board */
    GF_BOARD_CHUNK_MAX = 1 << 20,   /* entries per snapshot chunk */
};
#define GF_BOARD_SCORE_MAX (INT64_C(1) << 62)

/* The values equal gamefn.v1.BoardOrder's. */
typedef enum gf_board_order {
    GF_BOARD_DESCENDING = 0,
    GF_BOARD_ASCENDING = 1,
} gf_board_order;

typedef struct gf_board_entry {
    uint64_t rank; /* 1-based */
    int64_t score;
    int64_t updated_unix_ms;
    char player_id[GF_BOARD_ID_MAX + 1];
} gf_board_entry;

typedef struct gf_board gf_board;

gf_err gf_board_alloc(gf_board_order order, gf_board **out);
void gf_board_free(gf_board *b);

gf_board_order gf_board_order_get(const gf_board *b);
size_t gf_board_size(const gf_board *b);

/* Inserts or moves a player. GF_ERR_INVALID: id not a token, |score| > 2^62, or
 * updated_unix_ms < 0. GF_ERR_NOMEM, or GF_ERR_INVALID at GF_BOARD_PLAYERS_MAX. */
gf_err gf_board_upsert(gf_board *b, const char *player_id, int64_t score, int64_t updated_unix_ms);

/* GF_ERR_NOT_FOUND if the player has no entry. */
gf_err gf_board_remove(gf_board *b, const char *player_id);

/* The player's entry with its rank; GF_ERR_NOT_FOUND if none. */
gf_err gf_board_get(const gf_board *b, const char *player_id, gf_board_entry *out);
gf_err gf_board_rank(const gf_board *b, const char *player_id, uint64_t *rank);

/* Ranks 1..limit (fewer if the board is smaller); returns how many were written. */
size_t gf_board_top(const gf_board *b, size_t limit, gf_board_entry *out);

/* Ranks start_rank .. start_rank + limit - 1 that exist: 0 past the end or for
 * start_rank 0. */
size_t gf_board_page(const gf_board *b, uint64_t start_rank, size_t limit, gf_board_entry *out);

/* The player with up to `before` better and `after` worse neighbours, in rank
 * order, into out (room for before + 1 + after); *n entries written.
 * GF_ERR_NOT_FOUND if the player has no entry. */
gf_err gf_board_around(const gf_board *b, const char *player_id, size_t before, size_t after,
                       gf_board_entry *out, size_t *n);

/* One chunk: ranks first_rank .. first_rank + limit - 1 that exist (first_rank >= 1,
 * limit 1..GF_BOARD_CHUNK_MAX). */
gf_err gf_board_snapshot_encode(const gf_board *b, uint64_t first_rank, size_t limit, uint8_t **out,
                                size_t *len);

/* Appends the next chunk (its first_rank is gf_board_size(b) + 1). *total_players
 * is the board's size when the snapshot was written: loading is complete when
 * gf_board_size(b) reaches it. GF_ERR_INVALID, with b unchanged, on any malformed or
 * out-of-sequence chunk. */
gf_err gf_board_snapshot_load(gf_board *b, const uint8_t *buf, size_t len, uint64_t *total_players);

#endif
