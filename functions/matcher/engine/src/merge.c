/*
 * merge.c — population, low-population merge, and partitions.
 *
 * Design notes:
 *  - A ticket's region (the one it names, else that of its lowest-ping datacenter) is
 *    only a population unit: players are counted per (queue, region) over valid,
 *    unexpired tickets. Regions are not matching boundaries: a match may use any
 *    datacenter every member's own ping limit accepts, and reports the region of the
 *    datacenter chosen.
 *  - A playlist is merged in a region while any of its queues has players there but fewer
 *    than that queue's floor (a queue with nobody in it starves nobody, so it does not
 *    trigger a merge). The decision is remade every tick from the pool itself: no state,
 *    so replicas agree and the queues split again as soon as population returns.
 *  - Pool = the ticket's queue, or its playlist's merged pool when its region is merged.
 *    Partition = (pool, values of the pool's match_attributes). Tickets only ever match
 *    inside a partition; each keeps its own queue's rules. Partition ids are dense, in
 *    order of first appearance in the input, so the tick is deterministic.
 *  - A merge only adds partners. A ticket moved into the merged pool must still meet the
 *    tickets of its own queue left outside it (those of regions not merged), as it
 *    could without the merge. So two tickets may share a match iff they share a queue,
 *    or a playlist and both are in merged regions: a match is all of one queue, or all
 *    of the merged pool. Such a ticket therefore gets a second rank, a copy, in its
 *    queue's partition, next to the unmerged tickets of its queue; both ranks are one
 *    ticket (c->twin links them; a match takes both off). A queue with nobody outside the
 *    merged regions needs no copies: the merged pool holds all of it.
 *  - Attribute values are hashed (64-bit) to find the partition; the search still
 *    compares the strings, so a hash collision can only put two groups in one partition,
 *    never match tickets whose attributes differ.
 */
#include <string.h>

#include "internal.h"

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t str_hash(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    h ^= 0xff; /* separator, so ("ab","c") and ("a","bc") differ */
    h *= 1099511628211ull;
    return h;
}

static const char *attr_value(const gf_match_ticket *t, const char *key)
{
    for (size_t i = 0; i < t->attrs_len; i++) {
        if (strcmp(t->attrs[i].key, key) == 0)
            return t->attrs[i].value;
    }
    return ""; /* a missing attribute equals the empty value */
}

static uint64_t attrs_hash(const gf_match_queue *q, const gf_match_ticket *t)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < q->match_attributes_len; i++)
        h = str_hash(h, attr_value(t, q->match_attributes[i]));
    return h;
}

bool gf_mt_attrs_equal(const gf_mt_ctx *c, const gf_mt_part *p, uint32_t in_a, uint32_t in_b)
{
    const gf_match_queue *q = &c->cfg->queues[p->queue];
    for (size_t i = 0; i < q->match_attributes_len; i++) {
        const char *k = q->match_attributes[i];
        if (strcmp(attr_value(&c->in[in_a], k), attr_value(&c->in[in_b], k)) != 0)
            return false;
    }
    return true;
}

typedef struct part_slot {
    uint64_t key;
    uint32_t part; /* GF_MT_NONE = empty */
} part_slot;

typedef struct builder {
    gf_mt_ctx *c;
    part_slot *tab;
    size_t cap, used;
    uint32_t parts_cap;
} builder;

static gf_err parts_grow(builder *b)
{
    gf_mt_ctx *c = b->c;
    uint32_t ncap = b->parts_cap ? b->parts_cap * 2 : 16;
    gf_mt_part *np = gf_mt_zalloc(&c->mem, ncap, sizeof *np);
    if (!np)
        return GF_ERR_NOMEM;
    if (c->parts)
        memcpy(np, c->parts, c->nparts * sizeof *np);
    gf_mt_free(&c->mem, c->parts, b->parts_cap, sizeof *np);
    c->parts = np;
    b->parts_cap = ncap;
    return GF_OK;
}

static gf_err tab_grow(builder *b)
{
    gf_mt_ctx *c = b->c;
    size_t ncap = b->cap ? b->cap * 2 : 64;
    part_slot *nt = gf_mt_alloc(&c->mem, ncap, sizeof *nt);
    if (!nt)
        return GF_ERR_NOMEM;
    for (size_t i = 0; i < ncap; i++)
        nt[i].part = GF_MT_NONE;
    for (size_t i = 0; i < b->cap; i++) {
        if (b->tab[i].part == GF_MT_NONE)
            continue;
        size_t at = (size_t)mix64(b->tab[i].key) & (ncap - 1);
        while (nt[at].part != GF_MT_NONE)
            at = (at + 1) & (ncap - 1);
        nt[at] = b->tab[i];
    }
    gf_mt_free(&c->mem, b->tab, b->cap, sizeof *b->tab);
    b->tab = nt;
    b->cap = ncap;
    return GF_OK;
}

/* The partition of (pool, attribute hash), created on first sight. */
static gf_err part_of(builder *b, uint32_t pool, uint64_t attrs, uint32_t queue, bool by_time,
                      uint32_t *out)
{
    gf_mt_ctx *c = b->c;
    gf_err err = GF_OK;
    uint64_t key = mix64(pool) ^ attrs;
    if (2 * (b->used + 1) > b->cap && (err = tab_grow(b)) != GF_OK)
        return err;
    size_t at = (size_t)mix64(key) & (b->cap - 1);
    while (b->tab[at].part != GF_MT_NONE &&
           (b->tab[at].key != key || c->parts[b->tab[at].part].pool != pool))
        at = (at + 1) & (b->cap - 1);
    if (b->tab[at].part != GF_MT_NONE) {
        *out = b->tab[at].part;
        return GF_OK;
    }
    if (c->nparts >= (1u << GF_MT_PART_BITS))
        return GF_ERR_INVALID; /* over a million attribute groups in one tick */
    if (c->nparts == b->parts_cap && (err = parts_grow(b)) != GF_OK)
        return err;
    const gf_match_queue *q = &c->cfg->queues[queue];
    gf_mt_part *p = &c->parts[c->nparts];
    p->pool = pool;
    p->queue = queue;
    p->teams = (uint16_t)q->teams;
    p->team_size = (uint16_t)q->team_size;
    p->merged = pool >= c->nq;
    p->attrs = q->match_attributes_len > 0;
    p->by_time = by_time;
    b->tab[at].key = key;
    b->tab[at].part = c->nparts;
    b->used++;
    *out = c->nparts++;
    return GF_OK;
}

gf_err gf_mt_partition(gf_mt_ctx *c)
{
    const gf_match_config *cfg = c->cfg;
    gf_err err = GF_OK;
    uint32_t playlist[GF_MATCH_MAX_QUEUES]; /* queue -> playlist id, GF_MT_NONE = none */
    bool pool_fifo[2 * GF_MATCH_MAX_QUEUES];
    uint32_t npl = 0;
    bool *merged = NULL; /* [npl * nreg] */
    builder b = {.c = c};
    gf_match_pool_stat *pools = c->res->pools;

    for (uint32_t q = 0; q < c->nq; q++) {
        const char *pl = cfg->queues[q].playlist;
        playlist[q] = GF_MT_NONE;
        if (!pl || !*pl)
            continue;
        for (uint32_t o = 0; o < q; o++) {
            if (playlist[o] != GF_MT_NONE && strcmp(cfg->queues[o].playlist, pl) == 0) {
                playlist[q] = playlist[o];
                break;
            }
        }
        if (playlist[q] == GF_MT_NONE)
            playlist[q] = npl++;
    }
    /* A pool is FIFO (ordered by queue time) when every queue in it is ping_first. */
    for (uint32_t pool = 0; pool < c->nq + npl; pool++) {
        pool_fifo[pool] = true;
        for (uint32_t q = 0; q < c->nq; q++) {
            bool member = pool < c->nq ? q == pool : playlist[q] == pool - c->nq;
            if (member && cfg->queues[q].mode != GF_MATCH_PING_FIRST)
                pool_fifo[pool] = false;
        }
    }

    merged = gf_mt_zalloc(&c->mem, (size_t)npl * c->nreg + 1, sizeof *merged);
    if (!merged) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    /* pools[] holds the population already: ingest counted it (dup.c took the refused
     * tickets off). */
    for (uint32_t q = 0; q < c->nq; q++) {
        if (playlist[q] == GF_MT_NONE)
            continue;
        for (uint32_t r = 0; r < c->nreg; r++) {
            const gf_match_pool_stat *ps = &pools[(size_t)q * c->nreg + r];
            if (ps->players > 0 && (int64_t)ps->players < cfg->queues[q].population_floor)
                merged[(size_t)playlist[q] * c->nreg + r] = true;
        }
    }
    for (uint32_t q = 0; q < c->nq; q++) {
        for (uint32_t r = 0; r < c->nreg; r++) {
            pools[(size_t)q * c->nreg + r].merged =
                playlist[q] != GF_MT_NONE && merged[(size_t)playlist[q] * c->nreg + r];
        }
    }

    /* A merged ticket is copied into its queue's partition when its queue has tickets
     * outside the merged regions. */
    bool copied[GF_MATCH_MAX_QUEUES] = {false};
    uint32_t ncopies = 0;
    for (uint32_t q = 0; q < c->nq; q++) {
        for (uint32_t r = 0; r < c->nreg && playlist[q] != GF_MT_NONE; r++) {
            const gf_match_pool_stat *ps = &pools[(size_t)q * c->nreg + r];
            copied[q] |= ps->tickets > 0 && !ps->merged;
        }
        for (uint32_t r = 0; r < c->nreg && copied[q]; r++) {
            const gf_match_pool_stat *ps = &pools[(size_t)q * c->nreg + r];
            ncopies += ps->merged ? ps->tickets : 0;
        }
    }
    c->nv += ncopies; /* ranks from now on: the copies have theirs */
    c->ncopies = ncopies;
    c->keys = gf_mt_alloc(&c->mem, c->nv, sizeof *c->keys);
    if (!c->keys) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    uint32_t last_part = GF_MT_NONE, last_pool = 0;
    uint64_t last_attrs = 0;
    for (size_t i = 0, v = 0; i < c->n; i++) {
        if (c->bad[i] != GF_MATCH_BAD_NONE)
            continue;
        gf_mt_tk *k = &c->rec[i];
        const gf_match_queue *q = &cfg->queues[k->queue];
        uint32_t pl = playlist[k->queue];
        bool m = pl != GF_MT_NONE && merged[(size_t)pl * c->nreg + k->region];
        uint32_t pool = m ? c->nq + pl : k->queue;
        uint64_t attrs = q->match_attributes_len ? attrs_hash(q, &c->in[i]) : 0;
        /* Runs of one partition are the rule (one queue, no attributes): the last
         * partition found answers without a hash probe. */
        if (last_part == GF_MT_NONE || pool != last_pool || attrs != last_attrs) {
            if ((err = part_of(&b, pool, attrs, k->queue, pool_fifo[pool], &last_part)) != GF_OK)
                goto out;
            last_pool = pool;
            last_attrs = attrs;
        }
        uint32_t part = last_part;
        k->part = part;
        k->twin = GF_MT_NONE;
        c->parts[part].count++;
        c->parts[part].players += k->size;
        /* The rank-order key, while the record is at hand (layout.c sorts these). */
        c->keys[v++] = gf_mt_order_key(c, k, part, pool_fifo[pool]);
        if (m && copied[k->queue]) {
            if ((err = part_of(&b, k->queue, attrs, k->queue, pool_fifo[k->queue], &k->twin)) !=
                GF_OK)
                goto out;
            c->parts[k->twin].count++;
            c->parts[k->twin].players += k->size;
            c->keys[v++] = gf_mt_order_key(c, k, k->twin, pool_fifo[k->queue]);
        }
    }
    c->res->stats.partitions = c->nparts;
    /* Trim to nparts entries: the tick frees c->parts as nparts entries. */
    if (b.parts_cap > c->nparts && c->parts) {
        gf_mt_part *np = gf_mt_alloc(&c->mem, c->nparts, sizeof *np);
        if (!np) {
            err = GF_ERR_NOMEM;
            goto out;
        }
        memcpy(np, c->parts, c->nparts * sizeof *np);
        gf_mt_free(&c->mem, c->parts, b.parts_cap, sizeof *np);
        c->parts = np;
        b.parts_cap = c->nparts;
    }
out:
    if (err != GF_OK && c->parts) {
        gf_mt_free(&c->mem, c->parts, b.parts_cap, sizeof *c->parts);
        c->parts = NULL;
        c->nparts = 0;
    }
    gf_mt_free(&c->mem, b.tab, b.cap, sizeof *b.tab);
    gf_mt_free(&c->mem, merged, (size_t)npl * c->nreg + 1, sizeof *merged);
    return err;
}
