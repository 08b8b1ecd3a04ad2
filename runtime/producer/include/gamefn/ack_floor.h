/*
 * gamefn/ack_floor.h — the contiguous acknowledged floor of a producer's seqs.
 *
 * Publish acks arrive out of order; the spool wants "every seq <= floor is
 * acknowledged" (gf_spool_ack), and the producer's sequence window wants the oldest
 * seq not yet acknowledged. This is a ring of `window` bits over the seqs above the
 * floor: marking is O(1) amortised, and seqs at or beyond floor + 1 + window cannot be
 * marked, which is exactly the window the producer must not send past:
 *
 *     never publish seq s unless gf_ack_floor_can_send(a, s)
 *
 * (the guarantee gamefn/dedup_window.h relies on). A seq that will never be published
 * (refused by a full spool, or skipped after a crash) is marked as if acknowledged.
 *
 * Ownership: gf_ack_floor_init allocates the ring, gf_ack_floor_fini frees it.
 * Threads: one thread (the producer's loop) at a time.
 */
#ifndef GAMEFN_ACK_FLOOR_H
#define GAMEFN_ACK_FLOOR_H

#include <stdbool.h>
#include <stdint.h>

#include "gamefn/err.h"

enum { GF_ACK_FLOOR_WINDOW_MAX = 1048576 };

typedef struct gf_ack_floor {
    uint64_t floor;  /* every seq <= floor is acknowledged */
    uint32_t window; /* W */
    uint64_t *bits;  /* bit (s % W) set: s in (floor, floor + W] acknowledged */
} gf_ack_floor;

/* window: 1..GF_ACK_FLOOR_WINDOW_MAX. floor: what gf_spool_stats reports on open. */
gf_err gf_ack_floor_init(gf_ack_floor *a, uint64_t floor, uint32_t window);
void gf_ack_floor_fini(gf_ack_floor *a);

/* floor < seq < floor + 1 + window: seq may be published now. */
bool gf_ack_floor_can_send(const gf_ack_floor *a, uint64_t seq);

/* Marks seq acknowledged and advances the floor over every contiguous mark. A seq
 * at or below the floor is a no-op; one the window does not reach yet, or seq 0, is
 * GF_ERR_INVALID. */
gf_err gf_ack_floor_mark(gf_ack_floor *a, uint64_t seq);

#endif
