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
 * hashed every id (32 bits, see ticket.c). Two bitmaps of 8+ bits per id ("seen", "seen
 * twice") find the ids whose hash bucket is hit more than once — every real duplicate and
 * about 1/8 of the others at worst; the bitmaps fit in the L2 cache, so this is two
 * cheap streaming passes. Only those candidates are radix sorted by hash and compared as
 * strings, so a hash collision never merges two ids.
 * A reference packs (input index << 7 | slot), slot 0 = the ticket id, 1..64 = player.
 */
#include <string.h>

#include "internal.h"

#define SLOT_BITS 7
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
                c->bad[t] = verdict;
            refs[j] = GF_MT_NONE; /* settled */
        }
    }
}

typedef struct idlist {
    const uint32_t *hash; /* ticket ids: per input ticket; players: c->hash_stride each */
    bool players;
} idlist;

enum scan_pass { MARK, COLLECT };

static size_t bucket(uint32_t h, uint32_t shift)
{
    return (size_t)(((uint64_t)h * 0x9e3779b97f4a7c15ull) >> shift);
}

/* One pass over the ids of every valid ticket, in input order:
 *   MARK     set `seen`, and `twice` for buckets already seen;
 *   COLLECT  write the (hash, reference) of ids in a `twice` bucket to keys/refs.
 * Returns the number collected. */
static size_t scan(const gf_mt_ctx *c, const idlist *l, enum scan_pass pass, uint64_t *seen,
                   uint64_t *twice, uint32_t shift, uint64_t *keys, uint32_t *refs)
{
    size_t k = 0;
    for (uint32_t t = 0; t < c->n; t++) {
        uint32_t np = l->players ? c->np[t] : 1;
        bool valid = c->bad[t] == GF_MATCH_BAD_NONE;
        for (uint32_t j = 0; valid && j < np; j++) {
            uint32_t h = l->players ? l->hash[(size_t)t * c->hash_stride + j] : l->hash[t];
            uint32_t ref = (t << SLOT_BITS) | (l->players ? j + 1 : 0);
            size_t b = bucket(h, shift);
            uint64_t bit = 1ull << (b & 63);
            bool hit = (twice[b >> 6] & bit) != 0;
            switch (pass) {
            case MARK:
                twice[b >> 6] |= seen[b >> 6] & bit;
                seen[b >> 6] |= bit;
                break;
            case COLLECT:
                if (hit) {
                    keys[k] = h;
                    refs[k++] = ref;
                }
                break;
            }
        }
    }
    return k;
}

static gf_err dedup_kind(gf_mt_ctx *c, const idlist *l, size_t m, uint8_t verdict)
{
    gf_err err = GF_OK;
    size_t bits = 4096, ncand = 0;
    while (bits < 8 * m)
        bits <<= 1;
    uint32_t shift = 64 - (uint32_t)__builtin_ctzll(bits);
    size_t words = bits / 64;
    uint64_t *seen = gf_mt_zalloc(&c->mem, words, sizeof *seen);
    uint64_t *twice = gf_mt_zalloc(&c->mem, words, sizeof *twice);
    uint64_t *keys = NULL, *tkeys = NULL;
    uint32_t *refs = NULL, *trefs = NULL;
    if (!seen || !twice) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    (void)scan(c, l, MARK, seen, twice, shift, NULL, NULL);
    /* Candidates are a few percent of m; the arrays are sized for all m but only the
     * candidates are written (untouched pages cost nothing). */
    keys = gf_mt_alloc(&c->mem, m, sizeof *keys);
    refs = gf_mt_alloc(&c->mem, m, sizeof *refs);
    if (!keys || !refs) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    ncand = scan(c, l, COLLECT, seen, twice, shift, keys, refs);
    tkeys = gf_mt_alloc(&c->mem, ncand, sizeof *tkeys);
    trefs = gf_mt_alloc(&c->mem, ncand, sizeof *trefs);
    if (!tkeys || !trefs) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    gf_mt_radix_sort(keys, refs, tkeys, trefs, ncand, c->hist);
    for (size_t lo = 0; lo < ncand;) {
        size_t hi = lo + 1;
        while (hi < ncand && keys[hi] == keys[lo])
            hi++;
        if (hi - lo > 1)
            settle(c, refs, lo, hi, verdict);
        lo = hi;
    }
out:
    gf_mt_free(&c->mem, keys, m, sizeof *keys);
    gf_mt_free(&c->mem, tkeys, ncand, sizeof *tkeys);
    gf_mt_free(&c->mem, refs, m, sizeof *refs);
    gf_mt_free(&c->mem, trefs, ncand, sizeof *trefs);
    gf_mt_free(&c->mem, seen, words, sizeof *seen);
    gf_mt_free(&c->mem, twice, words, sizeof *twice);
    return err;
}

gf_err gf_mt_dedup(gf_mt_ctx *c)
{
    size_t tickets = 0, players = 0;
    for (size_t t = 0; t < c->n; t++) {
        if (c->bad[t] == GF_MATCH_BAD_NONE) {
            tickets++;
            players += c->np[t];
        }
    }
    idlist ids = {c->hash_ticket, false};
    gf_err err = tickets > 1 ? dedup_kind(c, &ids, tickets, GF_MATCH_BAD_DUP_TICKET) : GF_OK;
    if (err != GF_OK)
        return err;
    idlist pids = {c->hash_player, true};
    return players > 1 ? dedup_kind(c, &pids, players, GF_MATCH_BAD_DUP_PLAYER) : GF_OK;
}
