/*
 * gamefn/effect_record.h — the value an event consumer keeps under each effect key:
 * the consumer's effect and, in the same write, exactly which events it contains.
 *
 * Stored as EffectRecord (schemas/gamefn/v1/state.proto):
 *   owner_token  the fencing token of the partition owner that wrote it last;
 *   applied      a dedup window (gamefn/dedup_window.h): per source, the highest
 *                applied seq M and the applied seqs in (M - W, M];
 *   dead         DeadMarks: events this key dead-lettered without applying them;
 *   effect       the consumer's own bytes (leaderboard: a LeaderboardScore).
 *
 * Why `dead` exists. The window answers "applied" for every seq <= M - W, because a
 * producer's seqs that far below M were stored, and so processed, before M (the
 * window's lemma). Processed is not applied when the event was dead-lettered: a
 * re-drive of it, or a later copy, would be skipped as a duplicate. So a key that
 * dead-lettered an event records it here, in the same write that keeps its other
 * effects, and gf_effect_record_applied answers exactly:
 *     applied(s) = window says DUPLICATE  and  s is not a dead mark.
 * Applying a dead-marked event removes the mark (and marks it in the window while it is
 * within W). The proof is in effect_record.c and docs/EVENTS.md.
 *
 * Bounds: dead marks older than the consumer's dead horizon (the DLQ's retention) are
 * pruned with gf_effect_record_prune, as are window sources idle past the dedup
 * horizon; at most GF_EFFECT_DEAD_MAX marks are kept (the oldest go first, counted).
 *
 * Pure (protobuf-c, no NATS). Ownership: a record owns its window, marks and effect
 * bytes: gf_effect_record_init / _decode fill one, gf_effect_record_fini frees it.
 * Encoded buffers are malloc'd for the caller. Threads: one thread per record.
 */
#ifndef GAMEFN_EFFECT_RECORD_H
#define GAMEFN_EFFECT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/dedup_window.h"
#include "gamefn/err.h"

enum {
    GF_EFFECT_DEAD_MAX = 1024,
    GF_EFFECT_SOURCE_MAX = 64, /* source id: token 1..64 */
};

typedef struct gf_dead_mark {
    char source_id[GF_EFFECT_SOURCE_MAX + 1];
    uint64_t seq;
    int64_t dead_unix_ms;
} gf_dead_mark;

typedef struct gf_effect_record {
    uint64_t owner_token;
    gf_dedup_window *applied; /* never NULL in an initialised record */
    gf_dead_mark *dead;       /* sorted by (source_id byte order, seq), unique */
    size_t ndead, dead_cap;
    uint8_t *effect; /* the consumer's bytes; NULL when effect_len is 0 */
    size_t effect_len;
    int64_t updated_unix_ms;
} gf_effect_record;

/* An empty record with window w (1..GF_DEDUP_WINDOW_MAX). */
gf_err gf_effect_record_init(gf_effect_record *r, uint32_t w);

/* Validates every field (version, the window, marks sorted and unique with token ids
 * and seq >= 1) and fills r. GF_ERR_INVALID (r zeroed) on anything malformed. */
gf_err gf_effect_record_decode(const uint8_t *buf, size_t len, gf_effect_record *r);

void gf_effect_record_fini(gf_effect_record *r); /* NULL and zeroed records are fine */

gf_err gf_effect_record_encode(const gf_effect_record *r, uint8_t **out, size_t *len);

/* Replaces the effect bytes (copied; len 0 clears). */
gf_err gf_effect_record_set_effect(gf_effect_record *r, const uint8_t *effect, size_t len);

/* Whether this key has applied (source_id, seq). GF_ERR_INVALID for a bad id or seq 0. */
gf_err gf_effect_record_applied(const gf_effect_record *r, const char *source_id, uint64_t seq,
                                bool *applied);

/* Records that the key applied (source_id, seq) now: removes its dead mark and marks
 * it in the window (unless the window already counts it, below M - W).
 * GF_ERR_CONFLICT if it was applied already. */
gf_err gf_effect_record_mark_applied(gf_effect_record *r, const char *source_id, uint64_t seq,
                                     int64_t now_unix_ms);

/* Records that the key dead-lettered (source_id, seq) without applying it.
 * GF_ERR_CONFLICT if it was applied (nothing to record); a mark already there keeps
 * its first time. When GF_EFFECT_DEAD_MAX marks are kept, the oldest is dropped and
 * *dropped (may be NULL) is set. */
gf_err gf_effect_record_mark_dead(gf_effect_record *r, const char *source_id, uint64_t seq,
                                  int64_t now_unix_ms, bool *dropped);

/* Drops window sources last marked before dedup_cutoff and dead marks older than
 * dead_cutoff (Unix ms; 0 = keep all). Returns how many of each went. */
void gf_effect_record_prune(gf_effect_record *r, int64_t dedup_cutoff_unix_ms,
                            int64_t dead_cutoff_unix_ms, size_t *sources, size_t *marks);

/* Reads only the owner token and a copy of the effect bytes of an encoded record (for
 * readers that follow a bucket, e.g. the leaderboard's replicas); *effect is malloc'd
 * (NULL when empty). GF_ERR_INVALID if it is not an EffectRecord. */
gf_err gf_effect_record_peek(const uint8_t *buf, size_t len, uint64_t *owner_token,
                             uint8_t **effect, size_t *effect_len);

#endif
