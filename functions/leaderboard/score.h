/*
 * score.h — how an event changes a player's score on a board: the operators
 * `best`, `set` and `incr` of a board's config, as one pure function.
 *
 *   best  keeps the better of the old score and the new value (higher for a
 *         descending board, lower for an ascending one). A value that is not
 *         strictly better changes nothing, so the player keeps the earlier
 *         updated_unix_ms, which ranks first among equal scores.
 *   set   replaces the score. The same value again changes nothing, for the same
 *         reason.
 *   incr  adds the value (a delta) to the old score, or to 0 for a new player. A
 *         sum beyond +-2^62 (GF_BOARD_SCORE_MAX) is refused with GF_ERR_INVALID and
 *         the score stays as it was: refusing makes the bad event visible (the
 *         consumer dead-letters it with its reason), where saturating would corrupt
 *         every later sum without a trace. ScoreEvent.delta is at most 1e12, so an
 *         honest game needs millions of maximal deltas to get there.
 *
 * Scores beyond 2^53 lose precision in JavaScript numbers: see board.h.
 * Reentrant; no state.
 */
#ifndef GAMEFN_SCORE_H
#define GAMEFN_SCORE_H

#include <stdbool.h>
#include <stdint.h>

#include "board.h"
#include "gamefn/err.h"

typedef enum gf_score_op {
    GF_SCORE_BEST = 0,
    GF_SCORE_SET,
    GF_SCORE_INCR,
} gf_score_op;

/* old: the current score, or NULL for a player with none. *out: the new score;
 * *changed: whether the entry must be written (with the event's time). Values and
 * results are bounded by +-GF_BOARD_SCORE_MAX; GF_ERR_INVALID otherwise. */
gf_err gf_score_apply(gf_score_op op, gf_board_order order, const int64_t *old, int64_t value,
                      int64_t *out, bool *changed);

/* Reads the player's score from b, applies op and writes the result back with
 * updated_unix_ms if it changed. */
gf_err gf_board_apply(gf_board *b, gf_score_op op, const char *player_id, int64_t value,
                      int64_t updated_unix_ms);

#endif
