/*
 * layout.c — puts the valid tickets in rank order, links them, and orders the seeds.
 *
 * Design notes:
 *  - Rank order = (partition, skill) — or (partition, queue time) for FIFO partitions —
 *    by one radix sort on a 64-bit key: partition in the top GF_MT_PART_BITS bits, then
 *    the order-preserving bits of the skill double (truncated; ties only between skills
 *    within ~1e-10 of each other, broken by input order). The search compares the real
 *    doubles; the key only decides who is a neighbour.
 *  - The ingest records are then copied into rank order, so a seed's window of
 *    neighbours is a run of adjacent memory; the input-order copies are freed. Rank-order
 *    state is split in two 24-byte records: what the walk reads for every candidate
 *    (gf_mt_hot) and what is read once per seed or member (gf_mt_cold). Seeds come in age
 *    order, at random ranks, so fewer cache lines per window matter.
 *  - nxt/prv link the unmatched ranks; a walk crossing a partition edge stops there.
 *  - Seeds = ranks sorted by queue time (oldest first), ties by rank.
 */
#include <string.h>

#include "internal.h"

static uint64_t skill_bits(double skill)
{
    uint64_t u = 0;
    memcpy(&u, &skill, sizeof u);
    /* IEEE-754 to an unsigned integer with the same order. */
    u = (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
    return u >> GF_MT_PART_BITS;
}

typedef struct sorter {
    uint64_t *keys, *tkeys;
    uint32_t *vals, *tvals;
    size_t n;
} sorter;

static gf_err sorter_alloc(gf_mt_mem *m, sorter *s, size_t n)
{
    s->n = n;
    s->keys = gf_mt_alloc(m, n, sizeof *s->keys);
    s->tkeys = gf_mt_alloc(m, n, sizeof *s->tkeys);
    s->vals = gf_mt_alloc(m, n, sizeof *s->vals);
    s->tvals = gf_mt_alloc(m, n, sizeof *s->tvals);
    return s->keys && s->tkeys && s->vals && s->tvals ? GF_OK : GF_ERR_NOMEM;
}

/* Frees everything but vals, which the caller keeps (or NULL). */
static void sorter_free(gf_mt_mem *m, sorter *s, bool keep_vals)
{
    gf_mt_free(m, s->keys, s->n, sizeof *s->keys);
    gf_mt_free(m, s->tkeys, s->n, sizeof *s->tkeys);
    gf_mt_free(m, s->tvals, s->n, sizeof *s->tvals);
    if (!keep_vals)
        gf_mt_free(m, s->vals, s->n, sizeof *s->vals);
    memset(s, 0, sizeof *s);
}

gf_err gf_mt_layout(gf_mt_ctx *c)
{
    gf_err err = GF_OK;
    size_t nv = c->nv;
    sorter s = {0};
    int64_t minq = c->minq;

    if ((err = sorter_alloc(&c->mem, &s, nv)) != GF_OK)
        goto out;
    size_t v = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->bad[i] != GF_MATCH_BAD_NONE)
            continue;
        const gf_mt_tk *k = &c->rec[i];
        uint64_t order = c->parts[k->part].by_time ? (uint64_t)(k->queued - minq) /* < 2^40 */
                                                   : skill_bits(k->skill);
        s.keys[v] = ((uint64_t)k->part << (64 - GF_MT_PART_BITS)) | order;
        s.vals[v++] = (uint32_t)i;
    }
    gf_mt_radix_sort(s.keys, s.vals, s.tkeys, s.tvals, nv, c->hist);

    c->cold = gf_mt_alloc(&c->mem, nv, sizeof *c->cold);
    c->hot = gf_mt_alloc(&c->mem, nv, sizeof *c->hot);
    c->ping = gf_mt_alloc(&c->mem, nv * c->ndc, sizeof *c->ping);
    if (!c->cold || !c->hot || !c->ping) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    for (uint32_t r = 0; r < nv; r++) {
        uint32_t i = s.vals[r];
        const gf_mt_tk *k = &c->rec[i];
        c->hot[r] = (gf_mt_hot){.skill = k->skill,
                                .gap = k->gap,
                                .dcmask = k->dcmask,
                                .best = k->best,
                                .size = k->size,
                                .flags = 0};
        c->cold[r] = (gf_mt_cold){.queued = k->queued,
                                  .in = k->in,
                                  .part = k->part,
                                  .plimit = k->plimit,
                                  .queue = k->queue,
                                  .bestdc = k->bestdc};
        memcpy(&c->ping[(size_t)r * c->ndc], &c->rec_ping[(size_t)i * c->ndc],
               c->ndc * sizeof *c->ping);
        /* Seed keys, reusing the sort arrays: queue time, then rank. */
        s.keys[r] = (uint64_t)(k->queued - minq);
        s.tvals[r] = r;
    }
    memcpy(s.vals, s.tvals, nv * sizeof *s.vals);
    gf_mt_free(&c->mem, c->rec, c->n, sizeof *c->rec);
    gf_mt_free(&c->mem, c->rec_ping, c->n * c->ndc, sizeof *c->rec_ping);
    c->rec = NULL;
    c->rec_ping = NULL;

    for (uint32_t p = 0; p < c->nparts; p++)
        c->parts[p].count = 0;
    for (uint32_t r = 0; r < nv; r++) {
        gf_mt_part *p = &c->parts[c->cold[r].part];
        if (p->count++ == 0)
            p->first = r;
    }

    /* Seeds: ranks by queue time (keys filled above). */
    gf_mt_radix_sort(s.keys, s.vals, s.tkeys, s.tvals, nv, c->hist);
    c->seeds = s.vals;
    sorter_free(&c->mem, &s, true);

    c->nxt = gf_mt_alloc(&c->mem, nv, sizeof *c->nxt);
    c->prv = gf_mt_alloc(&c->mem, nv, sizeof *c->prv);
    if (!c->nxt || !c->prv) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    for (uint32_t r = 0; r < nv; r++) {
        c->nxt[r] = r + 1 < nv ? r + 1 : GF_MT_NONE;
        c->prv[r] = r > 0 ? r - 1 : GF_MT_NONE;
    }
out:
    sorter_free(&c->mem, &s, false);
    return err;
}
