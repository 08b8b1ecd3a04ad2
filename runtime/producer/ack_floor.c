/*
 * ack_floor.c — contiguous floor over out-of-order acknowledgements.
 *
 * Design notes: seqs in (floor, floor + W] map to bit s % W, so each bit names
 * exactly one seq at a time. Advancing the floor clears the bit it passes, which
 * frees that slot for seq floor + W + 1. Invariant: every set bit is a seq above the
 * floor that is acknowledged, and bit (floor + 1) % W is clear.
 */
#include "gamefn/ack_floor.h"

#include <stdlib.h>

static bool bit_get(const gf_ack_floor *a, uint64_t seq)
{
    uint64_t i = seq % a->window;
    return (a->bits[i / 64] >> (i % 64)) & 1;
}

static void bit_put(gf_ack_floor *a, uint64_t seq, bool on)
{
    uint64_t i = seq % a->window, m = (uint64_t)1 << (i % 64);
    a->bits[i / 64] = on ? a->bits[i / 64] | m : a->bits[i / 64] & ~m;
}

gf_err gf_ack_floor_init(gf_ack_floor *a, uint64_t floor, uint32_t window)
{
    *a = (gf_ack_floor){.floor = floor, .window = window};
    if (window == 0 || window > GF_ACK_FLOOR_WINDOW_MAX || floor > UINT64_MAX - window - 1)
        return GF_ERR_INVALID;
    a->bits = calloc((window + 63) / 64, sizeof *a->bits);
    return a->bits != NULL ? GF_OK : GF_ERR_NOMEM;
}

void gf_ack_floor_fini(gf_ack_floor *a)
{
    free(a->bits);
    a->bits = NULL;
}

bool gf_ack_floor_can_send(const gf_ack_floor *a, uint64_t seq)
{
    return seq > 0 && seq - a->floor - 1 < a->window;
}

gf_err gf_ack_floor_mark(gf_ack_floor *a, uint64_t seq)
{
    if (seq == 0)
        return GF_ERR_INVALID;
    if (seq <= a->floor)
        return GF_OK;
    if (!gf_ack_floor_can_send(a, seq))
        return GF_ERR_INVALID;
    bit_put(a, seq, true);
    while (a->floor < UINT64_MAX - a->window && bit_get(a, a->floor + 1)) {
        bit_put(a, a->floor + 1, false);
        a->floor++;
    }
    return GF_OK;
}
