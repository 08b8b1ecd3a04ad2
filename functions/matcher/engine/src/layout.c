/*
 * layout.c — puts the valid tickets in rank order, links them, and orders the seeds.
 *
 * Design notes:
 *  - Rank order = (partition, skill) — or (partition, queue time) for FIFO partitions —
 *    ties by input index. The full order key is 64 bits: partition in the top
 *    GF_MT_PART_BITS bits, then the order-preserving bits of the skill double (truncated;
 *    ties only between skills within ~1e-10 of each other) or the queue time. The search
 *    compares the real doubles; the key only decides who is a neighbour.
 *  - Sorting 64-bit keys with a payload is the costly way to get that order. Instead the
 *    keys are mapped to 24 bits (their top bits above the pool's smallest key, which keeps
 *    their order up to ties) and packed with the input index into one word; a packed
 *    radix sort on those 24 bits (3 passes) orders everything but entries that share a
 *    24-bit key: a few hundred at 100k tickets. Those short runs are then sorted on the
 *    full key (insertion sort; a long run, which only a contrived pool makes, by the full
 *    radix sort), so the order is exactly that of a stable sort on the full key.
 *  - The ingest records are then copied into rank order (random reads, prefetched a few
 *    entries ahead), so a seed's window of neighbours is a run of adjacent memory; the
 *    input-order copies are freed. A rank's ping row is padded to a multiple of
 *    GF_MT_LANES datacenters (with GF_MATCH_PING_NONE), so the diagnosis can read it as
 *    whole vectors; with 8 datacenters it is not padded at all. Rank-order state is
 *    split in two 24-byte records:
 *    what the walk reads for every candidate (gf_mt_hot) and what is read once per seed
 *    or member (gf_mt_cold). Seeds come in age order, at random ranks, so fewer cache
 *    lines per window matter.
 *  - alive[] marks the unmatched ranks (all, to begin with); walks stop at their
 *    partition's edges.
 *  - A merged ticket may have a second rank, a copy in its queue's partition (merge.c):
 *    its entry carries GF_MT_COPY, and c->twin links the two ranks.
 *  - Seeds = ranks sorted by queue time (oldest first), ties by rank, packed the same
 *    way (ages fit 32 bits: at most 7 days in ms). A ticket that accepts no datacenter
 *    now can be in no match, so it is left out of the seeds; it stays in the rank order,
 *    where walks step over it and the diagnosis finds it.
 */
#include <string.h>

#include "internal.h"

#define APPROX_BITS  24
#define SHORT_RUN    16 /* longer runs of equal approximate keys use the full radix sort */
#define GATHER_AHEAD 16

/* The partition of an entry: its ticket's, or its copy's (GF_MT_COPY). */
static uint32_t entry_part(const gf_mt_ctx *c, uint32_t e)
{
    const gf_mt_tk *k = &c->rec[e & ~GF_MT_COPY];
    return e & GF_MT_COPY ? k->twin : k->part;
}

static uint64_t full_key(const gf_mt_ctx *c, uint32_t e)
{
    uint32_t part = entry_part(c, e);
    return gf_mt_order_key(c, &c->rec[e & ~GF_MT_COPY], part, c->parts[part].by_time);
}

/* Sorts a[lo, hi) (equal approximate keys, input order) by (full key, input index). */
static gf_err fix_run(gf_mt_ctx *c, uint64_t *a, size_t lo, size_t hi)
{
    size_t n = hi - lo;
    if (n <= SHORT_RUN) {
        uint64_t key[SHORT_RUN];
        for (size_t i = 0; i < n; i++)
            key[i] = full_key(c, (uint32_t)a[lo + i]);
        /* Insertion sort; equal keys keep their (input) order. */
        for (size_t i = 1; i < n; i++) {
            uint64_t k = key[i], v = a[lo + i];
            size_t j = i;
            for (; j > 0 && key[j - 1] > k; j--) {
                key[j] = key[j - 1];
                a[lo + j] = a[lo + j - 1];
            }
            key[j] = k;
            a[lo + j] = v;
        }
        return GF_OK;
    }
    gf_err err = GF_OK;
    uint64_t *keys = gf_mt_alloc(&c->mem, n, sizeof *keys);
    uint64_t *tkeys = gf_mt_alloc(&c->mem, n, sizeof *tkeys);
    uint32_t *vals = gf_mt_alloc(&c->mem, n, sizeof *vals);
    uint32_t *tvals = gf_mt_alloc(&c->mem, n, sizeof *tvals);
    if (!keys || !tkeys || !vals || !tvals) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        vals[i] = (uint32_t)a[lo + i];
        keys[i] = full_key(c, vals[i]);
    }
    gf_mt_radix_sort(keys, vals, tkeys, tvals, n, c->hist);
    uint64_t high = a[lo] & ~0xffffffffull; /* the shared approximate key */
    for (size_t i = 0; i < n; i++)
        a[lo + i] = high | vals[i];
out:
    gf_mt_free(&c->mem, keys, n, sizeof *keys);
    gf_mt_free(&c->mem, tkeys, n, sizeof *tkeys);
    gf_mt_free(&c->mem, vals, n, sizeof *vals);
    gf_mt_free(&c->mem, tvals, n, sizeof *tvals);
    return err;
}

/* a[0..nv) = (approximate key << 32 | entry) of every valid ticket and copy (entry: the
 * input index, | GF_MT_COPY for a copy), sorted into exactly the order of the full keys. */
static gf_err rank_order(gf_mt_ctx *c, uint64_t *a, uint64_t *tmp)
{
    gf_err err = GF_OK;
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t v = 0;
    for (size_t j = 0; j < c->nv; j++) {
        uint64_t k = c->keys[j]; /* the full keys, from the partition pass */
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    /* Keep the top APPROX_BITS bits of the keys' range: order preserved up to ties. */
    unsigned range = hi > lo ? 64 - (unsigned)__builtin_clzll(hi - lo) : 0;
    unsigned shift = range > APPROX_BITS ? range - APPROX_BITS : 0;
    v = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->bad[i] != GF_MATCH_BAD_NONE)
            continue;
        a[v] = ((c->keys[v] - lo) >> shift) << 32 | i;
        v++;
        if (c->rec[i].twin != GF_MT_NONE) { /* its copy's key follows (merge.c) */
            a[v] = ((c->keys[v] - lo) >> shift) << 32 | i | GF_MT_COPY;
            v++;
        }
    }
    gf_mt_free(&c->mem, c->keys, c->nv, sizeof *c->keys);
    c->keys = NULL;
    gf_mt_radix_sort_packed(a, tmp, v, 32, 32, c->hist);
    if (shift == 0)
        return GF_OK; /* the approximate keys were exact */
    for (size_t r = 0; r < v;) {
        size_t e = r + 1;
        while (e < v && (a[e] >> 32) == (a[r] >> 32))
            e++;
        if (e - r > 1 && (err = fix_run(c, a, r, e)) != GF_OK)
            return err;
        r = e;
    }
    return GF_OK;
}

gf_err gf_mt_layout(gf_mt_ctx *c)
{
    gf_err err = GF_OK;
    size_t nv = c->nv, nseeds = 0;
    uint32_t *first = NULL; /* [n], only when there are copies */
    uint64_t *a = gf_mt_alloc(&c->mem, nv, sizeof *a);
    uint64_t *tmp = gf_mt_alloc(&c->mem, nv, sizeof *tmp);

    if (!a || !tmp) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    if ((err = rank_order(c, a, tmp)) != GF_OK)
        goto out;

    c->cold = gf_mt_alloc(&c->mem, nv, sizeof *c->cold);
    c->hot = gf_mt_alloc(&c->mem, nv, sizeof *c->hot);
    c->pstride = (c->ndc + GF_MT_LANES - 1) / GF_MT_LANES * GF_MT_LANES;
    c->ping = gf_mt_alloc(&c->mem, nv * c->pstride, sizeof *c->ping);
    if (!c->cold || !c->hot || !c->ping) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    /* A ticket with a copy: its two ranks, linked through the first one seen. */
    if (c->ncopies) {
        c->twin = gf_mt_alloc(&c->mem, nv, sizeof *c->twin);
        first = gf_mt_alloc(&c->mem, c->n, sizeof *first);
        if (!c->twin || !first) {
            err = GF_ERR_NOMEM;
            goto out;
        }
        memset(c->twin, 0xff, nv * sizeof *c->twin);
        memset(first, 0xff, c->n * sizeof *first);
    }
    for (uint32_t p = 0; p < c->nparts; p++)
        c->parts[p].count = 0;
    for (uint32_t r = 0; r < nv; r++) {
        if (r + GATHER_AHEAD < nv) {
            uint32_t ahead = (uint32_t)a[r + GATHER_AHEAD] & ~GF_MT_COPY;
            __builtin_prefetch(&c->rec[ahead]);
            __builtin_prefetch((const char *)&c->rec[ahead] + 47);
            __builtin_prefetch(&c->rec_ping[(size_t)ahead * c->ndc]);
        }
        uint32_t e = (uint32_t)a[r], i = e & ~GF_MT_COPY, part = entry_part(c, e);
        const gf_mt_tk *k = &c->rec[i];
        c->hot[r] = (gf_mt_hot){.skill = k->skill,
                                .gap = k->gap,
                                .dcmask = k->dcmask,
                                .plimit = k->plimit,
                                .size = k->size};
        c->cold[r] = (gf_mt_cold){.queued = k->queued,
                                  .in = i,
                                  .part = part,
                                  .best = k->best,
                                  .queue = k->queue,
                                  .bestdc = k->bestdc,
                                  .frac = k->frac,
                                  .copy = e != i};
        if (k->twin != GF_MT_NONE) {
            if (first[i] == GF_MT_NONE) {
                first[i] = r;
            } else {
                c->twin[r] = first[i];
                c->twin[first[i]] = r;
            }
        }
        uint16_t *row = &c->ping[(size_t)r * c->pstride];
        memcpy(row, &c->rec_ping[(size_t)i * c->ndc], c->ndc * sizeof *c->ping);
        for (uint32_t d = c->ndc; d < c->pstride; d++)
            row[d] = GF_MATCH_PING_NONE;
        gf_mt_part *p = &c->parts[part];
        if (p->count++ == 0)
            p->first = r;
        /* Seed keys, reusing tmp: queue time (< 2^30 ms apart), then rank. A copy is not a
         * seed: its ticket seeds from its first rank and then from the copy (search.c). */
        if (k->dcmask && e == i)
            tmp[nseeds++] = (uint64_t)(k->queued - c->minq) << 32 | r;
    }
    gf_mt_free(&c->mem, c->rec, c->n, sizeof *c->rec);
    gf_mt_free(&c->mem, c->rec_ping, c->n * c->ndc, sizeof *c->rec_ping);
    c->rec = NULL;
    c->rec_ping = NULL;

    /* Seeds: ranks by queue time, oldest first. */
    gf_mt_radix_sort_packed(tmp, a, nseeds, 32, 32, c->hist);
    c->seeds = gf_mt_alloc(&c->mem, nseeds, sizeof *c->seeds);
    c->alive_words = (nv + 63) / 64;
    c->alive = gf_mt_alloc(&c->mem, c->alive_words, sizeof *c->alive);
    if (!c->seeds || !c->alive) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    c->nseeds = (uint32_t)nseeds;
    for (size_t s = 0; s < nseeds; s++)
        c->seeds[s] = (uint32_t)tmp[s];
    memset(c->alive, 0xff, c->alive_words * sizeof *c->alive);
    if (nv & 63)
        c->alive[c->alive_words - 1] = (1ull << (nv & 63)) - 1;
out:
    gf_mt_free(&c->mem, first, c->n, sizeof *first);
    gf_mt_free(&c->mem, a, nv, sizeof *a);
    gf_mt_free(&c->mem, tmp, nv, sizeof *tmp);
    return err;
}
