/*
 * dup.c — pool-wide duplicate checks: a ticket id used twice, a player held by several
 * tickets.
 *
 * Design notes: the rule is order-independent: for every id, the oldest ticket holding it
 * (queue time, then input index) keeps it and every other holder is refused. That keeps
 * invariant 1 (no player in two matches) inside one tick whatever order the pool arrives
 * in, and keeps the oldest claim's priority. Ticket ids are settled first, so a ticket
 * refused for its id does not take players away from others.
 *
 * Duplicates are rare, so the work is arranged around the common case. The ingest pass
 * hashed every id (32 bits, see ticket.c) and stored it with its reference in c->ids,
 * packed in input order. A first pass over them marks a filter of two bits per bucket,
 * "seen" and "seen twice" (32 buckets per ticket, about ten per id, so few ids land in a
 * bucket hit twice); a second collects the ids whose bucket was hit more than once:
 * every real duplicate and a few percent of the others. Both are tight loops over the
 * packed array, which keeps the filter in the cache (marking it during ingest instead,
 * while the caller's tickets stream through, missed the cache on nearly every id). Only
 * the candidates are radix sorted by hash and compared as strings, so a hash collision
 * never merges two ids. Ticket ids are settled in a first sweep over the sorted
 * candidates, player ids in a second.
 * A reference packs (input index << 7 | slot), slot 0 = the ticket id, 1..64 = player.
 */
#include <string.h>

#include "internal.h"

#define SLOT_BITS GF_MT_SLOT_BITS
#define SLOT_MASK ((1u << SLOT_BITS) - 1)

static const char *ref_str(const gf_match_ticket *in, uint32_t ref)
{
    uint32_t t = ref >> SLOT_BITS, slot = ref & SLOT_MASK;
    return slot == 0 ? in[t].id : in[t].players[slot - 1].id;
}

static bool older(const gf_match_ticket *in, uint32_t a, uint32_t b)
{
    if (in[a].queued_ms != in[b].queued_ms)
        return in[a].queued_ms < in[b].queued_ms;
    return a < b;
}

/* A ticket valid until now is refused: it leaves the valid count and its population. */
static void refuse(gf_mt_ctx *c, uint32_t t, uint8_t verdict)
{
    const gf_mt_tk *k = &c->rec[t];
    gf_match_pool_stat *ps = &c->res->pools[(size_t)k->queue * c->nreg + k->region];
    ps->tickets--;
    ps->players -= k->size;
    c->bad[t] = verdict;
    c->nv--;
    c->res->stats.invalid++;
}

/* Within refs[lo, hi) (all with the same hash): for each distinct string, every holder
 * but the oldest still-valid one gets `verdict`. */
static void settle(gf_mt_ctx *c, uint32_t *refs, size_t lo, size_t hi, uint8_t verdict)
{
    for (size_t i = lo; i < hi; i++) {
        if (refs[i] == GF_MT_NONE)
            continue;
        const char *s = ref_str(c->in, refs[i]);
        uint32_t owner = GF_MT_NONE;
        for (size_t j = i; j < hi; j++) {
            if (refs[j] == GF_MT_NONE || strcmp(ref_str(c->in, refs[j]), s) != 0)
                continue;
            uint32_t t = refs[j] >> SLOT_BITS;
            if (c->bad[t] != GF_MATCH_BAD_NONE && c->bad[t] != verdict)
                continue; /* refused for another reason: holds nothing */
            if (owner == GF_MT_NONE || older(c->in, t, owner))
                owner = t;
        }
        for (size_t j = i; j < hi; j++) {
            if (refs[j] == GF_MT_NONE || strcmp(ref_str(c->in, refs[j]), s) != 0)
                continue;
            uint32_t t = refs[j] >> SLOT_BITS;
            if (t != owner && c->bad[t] == GF_MATCH_BAD_NONE)
                refuse(c, t, verdict);
            refs[j] = GF_MT_NONE; /* settled */
        }
    }
}

typedef struct filter {
    uint64_t *map; /* two bits per bucket: seen, seen twice */
    size_t words;
    uint32_t shift; /* bucket = top bits of a multiplicative hash */
} filter;

static size_t bucket(const filter *f, uint32_t h, uint32_t kind)
{
    /* The kind is mixed in, so a ticket id and a player id spelled alike rarely share a
     * bucket (they would only be compared for nothing). */
    uint64_t x = (uint64_t)h ^ ((uint64_t)kind << 40);
    return (size_t)((x * 0x9e3779b97f4a7c15ull) >> f->shift);
}

static void mark(filter *f, uint32_t h, uint32_t kind)
{
    size_t b = bucket(f, h, kind);
    uint64_t *w = &f->map[b >> 5];
    uint64_t seen = 1ull << (2 * (b & 31));
    *w |= seen | ((*w & seen) << 1);
}

static bool twice(const filter *f, uint32_t h, uint32_t kind)
{
    size_t b = bucket(f, h, kind);
    return (f->map[b >> 5] >> (2 * (b & 31) + 1)) & 1;
}

/* Settles every group of candidates with the same hash and kind (slot 0 = ticket id). */
static void settle_kind(gf_mt_ctx *c, const uint64_t *cand, uint32_t *refs, size_t n, bool players)
{
    uint8_t verdict = players ? GF_MATCH_BAD_DUP_PLAYER : GF_MATCH_BAD_DUP_TICKET;
    for (size_t lo = 0; lo < n;) {
        size_t hi = lo + 1, m = 0;
        while (hi < n && cand[hi] >> 32 == cand[lo] >> 32)
            hi++;
        for (size_t i = lo; hi - lo > 1 && i < hi; i++) {
            uint32_t ref = (uint32_t)cand[i];
            if (((ref & SLOT_MASK) != 0) == players)
                refs[m++] = ref;
        }
        if (m > 1)
            settle(c, refs, 0, m, verdict);
        lo = hi;
    }
}

gf_err gf_mt_dedup(gf_mt_ctx *c)
{
    gf_err err = GF_OK;
    size_t m = c->nids, ncand = 0, buckets = 4096;
    uint64_t *cand = NULL, *tmp = NULL;
    uint32_t *refs = NULL;
    filter f = {0};

    if (m < 2)
        goto out;
    while (buckets < 32 * c->n)
        buckets <<= 1;
    f.shift = 64 - (uint32_t)__builtin_ctzll(buckets);
    f.words = buckets / 32;
    f.map = gf_mt_zalloc(&c->mem, f.words, sizeof *f.map);
    /* Candidates are a few percent of the ids; the array is sized for all of them but
     * only the candidates are written (untouched pages cost nothing). */
    cand = gf_mt_alloc(&c->mem, m, sizeof *cand);
    if (!f.map || !cand) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < m; i++)
        mark(&f, (uint32_t)(c->ids[i] >> 32), (c->ids[i] & SLOT_MASK) != 0);
    for (size_t i = 0; i < m; i++) {
        uint64_t id = c->ids[i];
        cand[ncand] = id;
        ncand += twice(&f, (uint32_t)(id >> 32), (id & SLOT_MASK) != 0);
    }
    tmp = gf_mt_alloc(&c->mem, ncand, sizeof *tmp);
    refs = gf_mt_alloc(&c->mem, ncand, sizeof *refs);
    if (!tmp || !refs) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    gf_mt_radix_sort_packed(cand, tmp, ncand, 32, 32, c->hist);
    /* Ticket ids first: a ticket refused for its id then holds no players. */
    settle_kind(c, cand, refs, ncand, false);
    settle_kind(c, cand, refs, ncand, true);
out:
    gf_mt_free(&c->mem, cand, m, sizeof *cand);
    gf_mt_free(&c->mem, tmp, ncand, sizeof *tmp);
    gf_mt_free(&c->mem, refs, ncand, sizeof *refs);
    gf_mt_free(&c->mem, f.map, f.words, sizeof *f.map);
    gf_mt_free(&c->mem, c->ids, c->ids_cap, sizeof *c->ids);
    c->ids = NULL;
    return err;
}
