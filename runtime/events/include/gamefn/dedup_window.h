/*
 * gamefn/dedup_window.h — exact, cheap idempotency for event consumers.
 *
 * A consumer must never apply an event twice: not on a redelivery, not after a
 * crash or a rebalance, and not when a producer's spool replays an event hours after
 * the stream's duplicate window, so that the stream stores it again at a new
 * sequence. Instead of one dedup record per event, each effect key (a player's score
 * record, a per-partition state document) carries a small gf_dedup_window, stored
 * with the effect itself in the same write, so effect and dedup state never diverge.
 *
 * Contract (the proof that the answers are exact is in dedup_window.c):
 *   1. Producers keep a sequence window W: a producer never publishes seq s unless
 *      s < (its oldest seq not yet acknowledged by the server) + W
 *      (gamefn/ack_floor.h: gf_ack_floor_can_send). Acknowledged = a publish ack,
 *      duplicate or not: the server has stored the event.
 *   2. A key's events are applied in stream order (one owner per partition, and all
 *      of a key's events in one partition), and a window is marked in the same
 *      atomic write as the effect it guards.
 *   3. All producers and consumers agree on W.
 * Under these, gf_dedup_check answers DUPLICATE exactly for the events this key has
 * already applied — as long as the source was not pruned: gf_dedup_prune drops
 * sources idle longer than a horizon, after which an even older replay of theirs is
 * taken as new. Choose the horizon above the longest a spool can hold an event
 * (producer outage + stream retention; e.g. 8 days with EVENTS' 7).
 *
 * Cost: per (key, source) the highest applied seq plus the applied seqs within W
 * below it; encoded as DedupWindow (schemas/gamefn/v1/state.proto) with gaps as
 * varints, about 1..2 bytes per applied event in the window plus the source id.
 *
 * Ownership: gf_dedup_alloc / gf_dedup_decode allocate, gf_dedup_free frees (NULL is
 * fine); gf_dedup_encode returns a malloc'd buffer the caller frees. Source ids are
 * copied. Threads: a window is used by one thread at a time; no global state.
 */
#ifndef GAMEFN_DEDUP_WINDOW_H
#define GAMEFN_DEDUP_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

enum {
    GF_DEDUP_WINDOW_MAX = 1048576, /* W */
    GF_DEDUP_SOURCES_MAX = 65536,  /* sources per window */
};

typedef enum gf_dedup_verdict {
    GF_DEDUP_NEW = 0,
    GF_DEDUP_DUPLICATE,
} gf_dedup_verdict;

typedef struct gf_dedup_window gf_dedup_window;

/* w: the producers' sequence window, 1..GF_DEDUP_WINDOW_MAX. */
gf_err gf_dedup_alloc(uint32_t w, gf_dedup_window **out);
void gf_dedup_free(gf_dedup_window *win);

/* GF_ERR_INVALID: source_id not a token of 1..64 bytes, or seq 0. */
gf_err gf_dedup_check(const gf_dedup_window *win, const char *source_id, uint64_t seq,
                      gf_dedup_verdict *out);

/* Records that the key applied (source_id, seq) at now_unix_ms (the consumer's clock,
 * >= 0, used only for pruning). GF_ERR_CONFLICT if gf_dedup_check says DUPLICATE. */
gf_err gf_dedup_mark(gf_dedup_window *win, const char *source_id, uint64_t seq,
                     int64_t now_unix_ms);

/* Drops the sources last marked before cutoff_unix_ms; returns how many. */
size_t gf_dedup_prune(gf_dedup_window *win, int64_t cutoff_unix_ms);

uint32_t gf_dedup_w(const gf_dedup_window *win);
size_t gf_dedup_sources(const gf_dedup_window *win);

/* DedupWindow protobuf bytes; *out malloc'd (free()). */
gf_err gf_dedup_encode(const gf_dedup_window *win, uint8_t **out, size_t *len);

/* Validates everything (W, counts, token ids in strictly increasing byte order,
 * seqs >= 1, gaps >= 1 and within W) and builds a window. GF_ERR_INVALID on any
 * malformed input, never a crash. */
gf_err gf_dedup_decode(const uint8_t *buf, size_t len, gf_dedup_window **out);

#endif
