/*
 * diag.c — why each ticket left over after the search was not matched, and its nearest
 * miss.
 *
 * Design notes: the verdict is recomputed from the tickets still waiting, looking only
 * at each one's skill neighbours inside its partition (a bounded window, so O(N) overall):
 *   POPULATION    fewer waiting players in the partition than one match needs;
 *   PING (own)    its own ping limit accepts no datacenter it measured;
 *   SKILL         not enough neighbours within both its own and their skill limits;
 *   PING          enough skill-compatible neighbours measured a datacenter it measured,
 *                 but some ping is over its owner's limit there;
 *   NO_COMMON_DC  not even that: their measured datacenters do not overlap enough;
 *   SHAPE         enough compatible players accept a datacenter, but too few solo players
 *                 among them to fill the teams around the parties (a heuristic: parties
 *                 are the usual reason such a group cannot be completed);
 *   SKILL         otherwise: the candidates are compatible with it but not with each
 *                 other.
 * The nearest miss names the ticket and limit closest to letting it through.
 * Counting a neighbour into every datacenter's tally is the inner loop (each ticket left
 * over looks at up to 2 x (players + 8) neighbours): it is done for eight datacenters at
 * once in 16-bit lanes (GCC vector extensions, SSE2 on x86-64), without branches.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

/* Per-datacenter counters, one 16-bit lane per datacenter, GF_MT_LANES to a vector:
 * a neighbour is counted into every datacenter at once (its ping row is padded to whole
 * vectors with GF_MATCH_PING_NONE, which counts nowhere). Lanes cannot overflow: a
 * window holds at most 2 x (128 + 8) neighbours of at most 64 players (17,408), pings
 * and limits are at most 5000 ms. */
typedef int16_t lanes __attribute__((vector_size(2 * GF_MT_LANES)));
#define CHUNKS (GF_MATCH_MAX_DCS / GF_MT_LANES)
_Static_assert(GF_MT_LANES == 8, "look() spells out eight lanes");

typedef struct tally {
    uint32_t skill_ok;    /* players mutually skill-compatible */
    lanes solos[CHUNKS];  /* ... of whom solo players accepting d now */
    lanes acc[CHUNKS];    /* ... of whom accept d now (players) */
    lanes meas[CHUNKS];   /* ... of whom measured d (players) */
    lanes excess[CHUNKS]; /* smallest ping excess over its owner's limit at d (ms, >= 1) */
    lanes who[CHUNKS];    /* ... whose neighbour: its offset in the window */
    double skill_excess;  /* smallest excess over a skill limit */
    gf_match_miss skill_miss;
} tally;

static int16_t lane(const lanes *v, uint32_t dc)
{
    int16_t x[GF_MT_LANES];
    memcpy(x, &v[dc / GF_MT_LANES], sizeof x);
    return x[dc % GF_MT_LANES];
}

/* The nearest ping miss at datacenter dc, from the neighbour look() remembered: its own
 * limit broken (the ticket's own is handled by judge()). um + base: window offset 0. */
static gf_match_miss ping_miss(const gf_mt_ctx *c, const tally *t, const uint32_t *um,
                               uint32_t base, uint32_t dc)
{
    gf_match_miss m = {.other = GF_MATCH_NONE, .dc = GF_MATCH_NONE};
    if (lane(t->excess, dc) == INT16_MAX)
        return m;
    uint32_t v = um[base + (uint32_t)lane(t->who, dc)];
    m.other = c->cold[v].in;
    m.dc = dc;
    m.ping_ms = gf_mt_ping(c, v, dc);
    m.allowed_ping_ms = c->hot[v].plimit;
    m.own_limit = false;
    return m;
}

static void look(const gf_mt_ctx *c, const gf_mt_part *p, uint32_t u, uint32_t v, int16_t at,
                 tally *t)
{
    const gf_mt_hot *a = &c->hot[u], *b = &c->hot[v];
    double d = fabs(a->skill - b->skill);
    if (p->attrs && !gf_mt_attrs_equal(c, p, c->cold[u].in, c->cold[v].in))
        return;
    if (d > a->gap || d > b->gap) {
        bool own = d > a->gap;
        double allowed = own ? a->gap : b->gap;
        double excess = d - allowed;
        if (excess < t->skill_excess) {
            t->skill_excess = excess;
            t->skill_miss.other = c->cold[v].in;
            t->skill_miss.skill_gap = d;
            t->skill_miss.allowed_gap = allowed;
            t->skill_miss.own_limit = own;
        }
        return;
    }
    t->skill_ok += b->size;
    /* Which datacenters a neighbour measured and accepts is unpredictable: all of them
     * are counted at once, without branches. The nearest miss is the first smallest
     * excess in look order (strictly smaller replaces). */
    const lanes bit = {1, 2, 4, 8, 16, 32, 64, 128};
    const lanes none = {-1, -1, -1, -1, -1, -1, -1, -1}; /* GF_MATCH_PING_NONE */
    lanes size = (lanes){0} + (int16_t)b->size, solo = (lanes){0} + (int16_t)(b->size == 1);
    lanes limit = (lanes){0} + (int16_t)b->plimit, pos = (lanes){0} + at;
    const uint16_t *row = &c->ping[(size_t)v * c->pstride];
    for (uint32_t k = 0; k < c->pstride / GF_MT_LANES; k++) {
        lanes ping;
        memcpy(&ping, row + k * GF_MT_LANES, sizeof ping);
        lanes measured = ping != none;
        lanes accepts =
            (((lanes){0} + (int16_t)((b->dcmask >> (k * GF_MT_LANES)) & 0xff)) & bit) != 0;
        t->meas[k] += measured & size;
        t->acc[k] += accepts & size;
        t->solos[k] += accepts & solo;
        lanes excess = ping - limit;
        lanes nearer = measured & ~accepts & (excess < t->excess[k]);
        t->excess[k] = (excess & nearer) | (t->excess[k] & ~nearer);
        t->who[k] = (pos & nearer) | (t->who[k] & ~nearer);
    }
}

static void judge(const gf_mt_ctx *c, const uint32_t *um, uint32_t lo, uint32_t hi, uint32_t i,
                  uint32_t remaining, gf_match_unmatched *out)
{
    uint32_t u = um[i];
    const gf_mt_hot *a = &c->hot[u];
    const gf_mt_cold *ac = &c->cold[u];
    const gf_mt_part *p = &c->parts[ac->part];
    uint32_t need_all = (uint32_t)p->teams * p->team_size;
    gf_match_miss none = {.other = GF_MATCH_NONE, .dc = GF_MATCH_NONE};
    uint32_t w = need_all + 8;
    tally t;

    out->miss = none;
    if (remaining < need_all) {
        out->why = GF_MATCH_WHY_POPULATION;
        out->miss.players_short = need_all - remaining;
        return;
    }
    if (a->dcmask == 0) {
        out->why = GF_MATCH_WHY_PING;
        out->miss.dc = ac->bestdc;
        out->miss.ping_ms = ac->best;
        out->miss.allowed_ping_ms = a->plimit;
        out->miss.own_limit = true;
        return;
    }
    t.skill_ok = 0;
    t.skill_excess = INFINITY;
    t.skill_miss = none;
    for (uint32_t k = 0; k < c->pstride / GF_MT_LANES; k++) {
        t.solos[k] = t.acc[k] = t.meas[k] = t.who[k] = (lanes){0};
        t.excess[k] = (lanes){0} + INT16_MAX;
    }
    /* Neighbours by window offset (um index - i + w, 0..2w), left side first, nearest
     * first; base + offset gives the um index back (unsigned arithmetic wraps). */
    uint32_t base = i - w;
    for (uint32_t j = i; j > lo && i - j < w; j--)
        look(c, p, u, um[j - 1], (int16_t)(j - 1 - base), &t);
    for (uint32_t j = i + 1; j < hi && j - i <= w; j++)
        look(c, p, u, um[j], (int16_t)(j - base), &t);

    uint32_t need = need_all - a->size;
    if (t.skill_ok < need) {
        out->why = GF_MATCH_WHY_SKILL;
        out->miss = t.skill_miss;
        out->miss.players_short = need - t.skill_ok;
        return;
    }
    uint32_t best_acc = 0, best_dc = GF_MT_NONE;
    for (uint32_t dc = 0; dc < c->ndc; dc++) {
        uint32_t acc = (uint32_t)lane(t.acc, dc);
        if ((a->dcmask & (1u << dc)) && acc > best_acc) {
            best_acc = acc;
            best_dc = dc;
        }
    }
    if (best_acc >= need) {
        bool solos_fill = (uint32_t)lane(t.solos, best_dc) >= need;
        out->why = solos_fill ? GF_MATCH_WHY_SKILL : GF_MATCH_WHY_SHAPE;
        out->miss = solos_fill ? t.skill_miss : none;
        out->miss.dc = best_dc;
        return;
    }
    /* Which datacenter that u measured did most compatible players measure too? */
    uint32_t best_meas = 0, meas_dc = GF_MT_NONE;
    for (uint32_t dc = 0; dc < c->ndc; dc++) {
        uint32_t meas = (uint32_t)lane(t.meas, dc);
        if (gf_mt_ping(c, u, dc) != GF_MATCH_PING_NONE && meas > best_meas) {
            best_meas = meas;
            meas_dc = dc;
        }
    }
    if (best_meas >= need) {
        out->why = GF_MATCH_WHY_PING;
        uint16_t own = gf_mt_ping(c, u, meas_dc);
        if (own > a->plimit) {
            out->miss.dc = meas_dc;
            out->miss.ping_ms = own;
            out->miss.allowed_ping_ms = a->plimit;
            out->miss.own_limit = true;
        } else {
            out->miss = ping_miss(c, &t, um, base, meas_dc);
        }
        out->miss.players_short = need - (uint32_t)lane(t.acc, meas_dc);
        return;
    }
    out->why = GF_MATCH_WHY_NO_COMMON_DC;
    out->miss.dc = meas_dc;
    out->miss.players_short = need - best_meas;
}

gf_err gf_mt_diagnose(gf_mt_ctx *c)
{
    gf_match_result *res = c->res;
    gf_match_miss none = {.other = GF_MATCH_NONE, .dc = GF_MATCH_NONE};
    size_t n_um = 0, n_valid_um = 0;
    uint32_t *um = NULL, *slot = NULL;

    for (size_t i = 0; i < c->n; i++) {
        if (c->bad[i] != GF_MT_IN_MATCH)
            n_um++;
        if (c->bad[i] == GF_MATCH_BAD_NONE)
            n_valid_um++;
    }
    n_valid_um += c->ncopies; /* unmatched ranks: at most these and the copies (merge.c) */
    res->unmatched = gf_mt_alloc_result(&c->mem, n_um, sizeof *res->unmatched);
    um = gf_mt_alloc(&c->mem, n_valid_um, sizeof *um);
    /* slot[input index] = its entry in res->unmatched, for the valid ones still waiting */
    slot = gf_mt_alloc(&c->mem, c->n, sizeof *slot);
    if (!res->unmatched || !um || !slot) {
        gf_mt_free(&c->mem, um, n_valid_um, sizeof *um);
        gf_mt_free(&c->mem, slot, c->n, sizeof *slot);
        return GF_ERR_NOMEM;
    }
    for (size_t i = 0; i < c->n; i++) {
        uint8_t b = c->bad[i];
        if (b == GF_MT_IN_MATCH)
            continue;
        gf_match_unmatched *e = &res->unmatched[res->unmatched_len];
        slot[i] = (uint32_t)res->unmatched_len++;
        e->ticket = (uint32_t)i;
        e->turn = GF_MATCH_NONE;
        e->miss = none;
        e->bad = GF_MATCH_BAD_NONE;
        if (b == GF_MT_EXPIRED) {
            e->why = GF_MATCH_WHY_EXPIRED;
        } else if (b != GF_MATCH_BAD_NONE) {
            e->why = GF_MATCH_WHY_INVALID;
            e->bad = b;
        }
    }
    size_t k = 0;
    for (uint32_t r = 0; r < c->nv; r++) {
        if (gf_mt_alive(c, r))
            um[k++] = r;
    }
    /* One partition at a time: [lo, hi) of um, with its remaining players. */
    for (uint32_t lo = 0; lo < k;) {
        uint32_t part = c->cold[um[lo]].part, hi = lo, remaining = 0;
        while (hi < k && c->cold[um[hi]].part == part)
            remaining += c->hot[um[hi++]].size;
        for (uint32_t i = lo; i < hi; i++) {
            /* A copy (merge.c) is a neighbour in its queue's partition; its ticket is
             * judged once, from its merged rank. */
            if (c->cold[um[i]].copy)
                continue;
            gf_match_unmatched *e = &res->unmatched[slot[c->cold[um[i]].in]];
            judge(c, um, lo, hi, i, remaining, e);
            e->turn = c->turn[um[i]];
        }
        lo = hi;
    }
    gf_mt_free(&c->mem, um, n_valid_um, sizeof *um);
    gf_mt_free(&c->mem, slot, c->n, sizeof *slot);
    return GF_OK;
}
