/*
 * search.c — the candidate search: oldest tickets seed matches, each from a bounded walk
 * over its skill neighbours.
 *
 * Design notes:
 *  - Seeds go oldest first. An old ticket therefore picks its group before any newer one
 *    can take its candidates; a seed that cannot be matched now stays available as a
 *    candidate for later seeds.
 *  - From seed s the walk goes outward along the rank order (skill; queue time in FIFO
 *    partitions), closest first, over unmatched tickets of s's partition that are
 *    mutually skill-compatible with s. A side stops at the partition edge, or once the
 *    skill distance passes s's own gap (sorted by skill: nothing further that way can be
 *    compatible). At most 4 x window entries are looked at, so a seed costs O(window) and
 *    the tick O(N x window) after the O(N) sorts: never all pairs.
 *  - Each candidate met is offered to a greedy group, which takes it if the group stays
 *    valid for every member: the skill range must lie inside every member's own
 *    [skill - gap, skill + gap], some datacenter must still be accepted by everyone, and
 *    the parties must still pack into the shape. The walk stops when the group is full.
 *      skill-first seeds (sbmm, hybrid): the group starts from every datacenter the seed
 *        accepts and narrows it (the nearest skills that still share a datacenter);
 *      ping_first seeds: the group is pinned to one datacenter, the seed's own lowest-ping
 *        one first, then the next (first in, first out within a datacenter).
 *  - A seed whose limits have stopped widening (skill gap and ping at their caps) will not
 *    get a better chance in a later tick, so if the greedy group falls short it gets a
 *    fallback over everything the walk saw: a bounded exhaustive search in closeness
 *    order, then greedy oldest first. Younger seeds just wait: their limits widen.
 *  - The match's datacenters are then every one all members accept, best first
 *    (gf_match_dc_rank).
 *  - Without the fallback this makes exactly the choices of the all-pairs greedy
 *    reference in bench/match_naive.c, within the window; see docs/MATCHMAKING.md.
 *  - Seeds come in age order, at random ranks, so the walk reads the 24-byte hot records
 *    and prefetches the neighbourhood of a seed a few iterations ahead.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

#define DFS_BUDGET 256 /* nodes of the exhaustive fallback per seed */
#define PREFETCH   8   /* seeds ahead */

typedef struct grp {
    uint32_t rank[GF_MATCH_MAX_PLAYERS];
    uint32_t len, players;
    double lo, hi;       /* skill range of the members */
    double minlo, maxhi; /* intersection of the members' own windows */
    uint32_t by_size[GF_MATCH_MAX_TEAM_SIZE + 1];
    /* Two-team shapes: bit a set = the parties (2+ players) can put exactly a players in
     * team A (a <= team_size); party_sum = their players. */
    uint64_t reach;
    uint32_t party_sum;
    uint32_t common;  /* datacenters every member accepts */
    uint32_t common0; /* the mask the group started from */
} grp;

/* Per-tick buffers sized by the window (heap, not stack: windows may be 4096). */
typedef struct scratch {
    uint32_t *cand;   /* [window] candidates the greedy walk passed over */
    uint32_t *all;    /* [window + players] fallback candidates */
    uint32_t *suffix; /* [window + players + 1] */
    double *key;      /* [window + players] */
    size_t cap;       /* window + players */
} scratch;

typedef struct shape {
    uint32_t teams, team_size, players;
    bool two;       /* two teams of at most 63: the bitset packing test applies */
    uint64_t below; /* bits 0..team_size */
} shape;

static shape shape_of(const gf_mt_part *p)
{
    shape sh = {p->teams, p->team_size, (uint32_t)p->teams * p->team_size, false, 0};
    sh.two = p->teams == 2 && p->team_size <= 63;
    sh.below = sh.two ? (2ull << p->team_size) - 1 : 0;
    return sh;
}

static void grp_init(grp *g, const gf_mt_hot *s, uint32_t rank, const shape *sh, uint32_t mask)
{
    g->common = g->common0 = s->dcmask & mask;
    g->len = 1;
    g->rank[0] = rank;
    g->players = s->size;
    g->lo = g->hi = s->skill;
    g->minlo = s->skill - s->gap;
    g->maxhi = s->skill + s->gap;
    memset(g->by_size, 0, (sh->team_size + 1) * sizeof g->by_size[0]);
    g->by_size[s->size] = 1;
    g->reach = 1;
    g->party_sum = 0;
    if (s->size > 1) {
        g->reach |= 1ull << s->size;
        g->party_sum = s->size;
    }
}

/* Would adding k keep every member's own skill limit, k's included, and leave a
 * datacenter everyone accepts? */
static bool grp_fits(const grp *g, const gf_mt_hot *k)
{
    return (k->dcmask & g->common) && k->skill >= g->minlo && k->skill <= g->maxhi &&
           k->skill - k->gap <= g->lo && k->skill + k->gap >= g->hi;
}

/* Two teams: the parties fit iff some achievable team-A share a (a <= size) leaves at most
 * `size` for team B; solo players then fill both, as the total is within 2 x size. */
static bool two_fits(uint64_t reach, uint32_t party_sum, const shape *sh)
{
    uint32_t need = party_sum > sh->team_size ? party_sum - sh->team_size : 0;
    return (reach & sh->below & ~((1ull << need) - 1)) != 0;
}

static bool grp_packs(grp *g, const gf_mt_hot *k, const shape *sh)
{
    if (g->players + k->size > sh->players)
        return false;
    if (k->size == 1)
        return true; /* the current parties pack, and some team still has room */
    if (sh->two)
        return two_fits((g->reach | (g->reach << k->size)) & sh->below, g->party_sum + k->size, sh);
    g->by_size[k->size]++;
    bool ok = gf_match_pack_feasible(g->by_size, sh->teams, sh->team_size);
    g->by_size[k->size]--;
    return ok;
}

static void grp_add(grp *g, const gf_mt_hot *k, uint32_t rank, const shape *sh)
{
    g->rank[g->len++] = rank;
    g->players += k->size;
    g->by_size[k->size]++;
    g->common &= k->dcmask;
    if (k->size > 1) {
        g->reach = (g->reach | (g->reach << k->size)) & sh->below;
        g->party_sum += k->size;
    }
    if (k->skill < g->lo)
        g->lo = k->skill;
    if (k->skill > g->hi)
        g->hi = k->skill;
    if (k->skill - k->gap > g->minlo)
        g->minlo = k->skill - k->gap;
    if (k->skill + k->gap < g->maxhi)
        g->maxhi = k->skill + k->gap;
}

static bool mutual(const gf_mt_hot *a, const gf_mt_hot *b)
{
    double d = fabs(a->skill - b->skill);
    return d <= a->gap && d <= b->gap;
}

/* Walks the partition outward from seed s, closest first (by skill, or by queue time in
 * FIFO partitions), over unmatched tickets that accept datacenter d and are mutually
 * skill-compatible with s (and share its match attributes). Each one is offered to the
 * greedy group; the ones it does not take are kept in cand[] (up to c->window) for the
 * fallbacks. Stops when the group is full, when both sides are out of reach, or after
 * 4 x window entries. Returns the number kept in cand[]; *cand_players = their players. */
static uint32_t walk(gf_mt_ctx *c, uint32_t s, const gf_mt_part *p, grp *g, const shape *sh,
                     uint32_t *cand, uint32_t *cand_players)
{
    const gf_mt_hot *sk = &c->hot[s];
    uint32_t lo = p->first, hi = p->first + p->count;
    uint32_t left = c->prv[s], right = c->nxt[s];
    uint32_t n = 0, seen = 0, budget = 4 * c->window, players = 0, mask = g->common;
    double key = p->by_time ? (double)c->cold[s].queued : sk->skill;
    double lo_edge = sk->skill - sk->gap, hi_edge = sk->skill + sk->gap;

    if (left != GF_MT_NONE && left < lo)
        left = GF_MT_NONE;
    if (right != GF_MT_NONE && right >= hi)
        right = GF_MT_NONE;
    while (g->players < sh->players && seen < budget &&
           (left != GF_MT_NONE || right != GF_MT_NONE)) {
        bool go_left;
        if (left == GF_MT_NONE)
            go_left = false;
        else if (right == GF_MT_NONE)
            go_left = true;
        else if (p->by_time)
            go_left = key - (double)c->cold[left].queued <= (double)c->cold[right].queued - key;
        else
            go_left = key - c->hot[left].skill <= c->hot[right].skill - key;
        uint32_t r = go_left ? left : right;
        const gf_mt_hot *k = &c->hot[r];
        seen++;
        if (!p->by_time && (go_left ? k->skill < lo_edge : k->skill > hi_edge)) {
            /* Sorted by skill: nothing further this way is compatible with s. */
            if (go_left)
                left = GF_MT_NONE;
            else
                right = GF_MT_NONE;
            continue;
        }
        if (go_left) {
            left = c->prv[r];
            if (left != GF_MT_NONE && left < lo)
                left = GF_MT_NONE;
        } else {
            right = c->nxt[r];
            if (right != GF_MT_NONE && right >= hi)
                right = GF_MT_NONE;
        }
        if (!(k->dcmask & mask) || !mutual(sk, k) ||
            (p->attrs && !gf_mt_attrs_equal(c, p, c->cold[s].in, c->cold[r].in)))
            continue;
        if (grp_fits(g, k) && grp_packs(g, k, sh)) {
            grp_add(g, k, r, sh);
        } else if (n < c->window) {
            cand[n++] = r;
            players += k->size;
        }
    }
    c->res->stats.candidates_seen += seen;
    *cand_players = players;
    return n;
}

static bool greedy(gf_mt_ctx *c, grp *g, const uint32_t *cand, uint32_t n, const shape *sh)
{
    for (uint32_t i = 0; i < n && g->players < sh->players; i++) {
        const gf_mt_hot *k = &c->hot[cand[i]];
        if (grp_fits(g, k) && grp_packs(g, k, sh))
            grp_add(g, k, cand[i], sh);
    }
    return g->players == sh->players;
}

static bool dfs(gf_mt_ctx *c, grp *g, const uint32_t *cand, const uint32_t *suffix, uint32_t n,
                uint32_t i, const shape *sh, int *budget)
{
    if (g->players == sh->players)
        return true;
    if (i == n || --*budget < 0 || g->players + suffix[i] < sh->players)
        return false;
    const gf_mt_hot *k = &c->hot[cand[i]];
    if (grp_fits(g, k) && grp_packs(g, k, sh)) {
        double lo = g->lo, hi = g->hi, minlo = g->minlo, maxhi = g->maxhi;
        uint64_t reach = g->reach;
        uint32_t party_sum = g->party_sum, common = g->common;
        grp_add(g, k, cand[i], sh);
        if (dfs(c, g, cand, suffix, n, i + 1, sh, budget))
            return true;
        g->len--;
        g->players -= k->size;
        g->by_size[k->size]--;
        g->lo = lo;
        g->hi = hi;
        g->minlo = minlo;
        g->maxhi = maxhi;
        g->reach = reach;
        g->party_sum = party_sum;
        g->common = common;
    }
    return dfs(c, g, cand, suffix, n, i + 1, sh, budget);
}

/* Sorts ranks by a key (insertion sort: windows are small). */
static void sort_by(uint32_t *a, uint32_t m, double *key)
{
    for (uint32_t i = 1; i < m; i++) {
        uint32_t v = a[i];
        double kv = key[i];
        uint32_t j = i;
        while (j > 0 && key[j - 1] > kv) {
            a[j] = a[j - 1];
            key[j] = key[j - 1];
            j--;
        }
        a[j] = v;
        key[j] = kv;
    }
}

/* The greedy walk left the group short: retry from everything it saw (the members it took
 * and the candidates it passed over) with (1) a bounded exhaustive search in closeness
 * order, whose first answer keeps the spread small, then (2) greedy oldest first (older
 * candidates have the widest limits). True if a full valid group was found (in *g). */
static bool fallback(gf_mt_ctx *c, const scratch *x, uint32_t s, const gf_mt_part *p, grp *g,
                     uint32_t n, uint32_t cand_players, const shape *sh)
{
    const gf_mt_hot *sk = &c->hot[s];
    uint32_t *all = x->all, *suffix = x->suffix, *cand = x->cand;
    double *key = x->key;
    uint32_t m = 0, players = cand_players;
    for (uint32_t i = 1; i < g->len; i++) {
        all[m++] = g->rank[i];
        players += c->hot[g->rank[i]].size;
    }
    for (uint32_t i = 0; i < n; i++)
        all[m++] = cand[i];
    if (sk->size + players < sh->players)
        return false;
    uint32_t mask = g->common0;

    for (uint32_t i = 0; i < m; i++) {
        key[i] = p->by_time ? fabs((double)(c->cold[all[i]].queued - c->cold[s].queued))
                            : fabs(c->hot[all[i]].skill - sk->skill);
    }
    sort_by(all, m, key);
    suffix[m] = 0;
    for (uint32_t i = m; i-- > 0;)
        suffix[i] = suffix[i + 1] + c->hot[all[i]].size;
    int budget = DFS_BUDGET;
    grp_init(g, sk, s, sh, mask);
    if (dfs(c, g, all, suffix, m, 0, sh, &budget))
        return true;

    for (uint32_t i = 0; i < m; i++)
        key[i] = (double)c->cold[all[i]].queued;
    sort_by(all, m, key);
    grp_init(g, sk, s, sh, mask);
    return greedy(c, g, all, m, sh);
}

/* Datacenter choice for a group; returns the number of choices written. */
static size_t group_dcs(gf_mt_ctx *c, const grp *g, gf_match_dc_choice *out)
{
    gf_match_dc_member m[GF_MATCH_MAX_PLAYERS];
    for (uint32_t i = 0; i < g->len; i++) {
        m[i].ping = &c->ping[(size_t)g->rank[i] * c->ndc];
        m[i].limit_ms = c->cold[g->rank[i]].plimit;
    }
    return gf_match_dc_rank(m, g->len, c->ndc, out);
}

static void unlink_rank(gf_mt_ctx *c, uint32_t r)
{
    uint32_t pv = c->prv[r], nx = c->nxt[r];
    c->hot[r].flags |= GF_MT_MATCHED;
    if (pv != GF_MT_NONE)
        c->nxt[pv] = nx;
    if (nx != GF_MT_NONE)
        c->prv[nx] = pv;
}

static gf_err commit(gf_mt_ctx *c, const gf_mt_part *p, const grp *g, const gf_match_dc_choice *dcs,
                     size_t ndcs)
{
    gf_match_result *res = c->res;
    double skills[GF_MATCH_MAX_PLAYERS];
    uint8_t sizes[GF_MATCH_MAX_PLAYERS];
    uint16_t team[GF_MATCH_MAX_PLAYERS];
    double diff = 0;

    for (uint32_t i = 0; i < g->len; i++) {
        skills[i] = c->hot[g->rank[i]].skill;
        sizes[i] = c->hot[g->rank[i]].size;
    }
    if (gf_match_teams_balance(skills, sizes, g->len, p->teams, p->team_size, team, &diff) != GF_OK)
        return GF_ERR_INVALID; /* broken invariant: the search only keeps packable groups */
    if (res->matches_len >= c->matches_cap || c->dcs_len + ndcs > c->dcs_cap ||
        (size_t)(c->members_next - c->members_buf) + g->len > c->members_cap)
        return GF_ERR_INVALID; /* broken invariant: capacities are upper bounds */

    gf_match *mt = &res->matches[res->matches_len++];
    mt->queue = c->cold[g->rank[0]].queue;
    mt->region = c->dc_region[dcs[0].dc];
    mt->merged = p->merged;
    mt->members = c->members_next;
    mt->members_len = g->len;
    mt->dcs = c->dcs_next;
    mt->dcs_len = (uint32_t)ndcs;
    mt->skill_spread = g->hi - g->lo;
    mt->team_skill_diff = diff;
    memcpy(mt->dcs, dcs, ndcs * sizeof *dcs);
    c->dcs_next += ndcs;
    c->dcs_len += ndcs;

    uint32_t at = 0;
    for (uint32_t t = 0; t < p->teams; t++) {
        for (uint32_t i = 0; i < g->len; i++) {
            if (team[i] != t)
                continue;
            uint32_t r = g->rank[i];
            gf_match_member *m = &mt->members[at++];
            m->ticket = c->cold[r].in;
            m->team = (uint16_t)t;
            m->ping_ms = gf_mt_ping(c, r, dcs[0].dc);
            m->allowed_ping_ms = c->cold[r].plimit;
            m->skill = c->hot[r].skill;
            m->allowed_skill_gap = c->hot[r].gap;
        }
    }
    c->members_next += g->len;
    for (uint32_t i = 0; i < g->len; i++) {
        uint32_t r = g->rank[i];
        unlink_rank(c, r);
        c->bad[c->cold[r].in] = GF_MT_IN_MATCH;
        res->stats.matched_tickets++;
        res->stats.matched_players += c->hot[r].size;
    }
    return GF_OK;
}

/* The seed's accepted datacenters, by its own ping, lowest first. */
static uint32_t seed_dcs(const gf_mt_ctx *c, uint32_t s, uint32_t *out)
{
    uint32_t n = 0, m = c->hot[s].dcmask;
    while (m) {
        uint32_t d = (uint32_t)__builtin_ctz(m);
        m &= m - 1;
        uint32_t j = n++;
        while (j > 0 && gf_mt_ping(c, s, out[j - 1]) > gf_mt_ping(c, s, d)) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = d;
    }
    return n;
}

static void prefetch_seed(const gf_mt_ctx *c, uint32_t s)
{
    const gf_mt_hot *h = &c->hot[s];
    __builtin_prefetch(h);
    __builtin_prefetch(h - (s >= 2 ? 2 : 0));
    __builtin_prefetch(h + (s + 2 < c->nv ? 2 : 0));
    __builtin_prefetch(&c->nxt[s]);
    __builtin_prefetch(&c->prv[s]);
    __builtin_prefetch(&c->cold[s]);
}

gf_err gf_mt_search(gf_mt_ctx *c)
{
    gf_err err = GF_OK;
    grp g;
    gf_match_dc_choice dcs[GF_MATCH_MAX_DCS];
    scratch x = {.cap = (size_t)c->window + GF_MATCH_MAX_PLAYERS};
    x.cand = gf_mt_alloc(&c->mem, c->window, sizeof *x.cand);
    x.all = gf_mt_alloc(&c->mem, x.cap, sizeof *x.all);
    x.suffix = gf_mt_alloc(&c->mem, x.cap + 1, sizeof *x.suffix);
    x.key = gf_mt_alloc(&c->mem, x.cap, sizeof *x.key);
    if (!x.cand || !x.all || !x.suffix || !x.key) {
        err = GF_ERR_NOMEM;
        goto out;
    }

    for (uint32_t si = 0; si < c->nv; si++) {
        if (si + PREFETCH < c->nv)
            prefetch_seed(c, c->seeds[si + PREFETCH]);
        uint32_t s = c->seeds[si];
        const gf_mt_hot *sk = &c->hot[s];
        if ((sk->flags & GF_MT_MATCHED) || sk->dcmask == 0)
            continue;
        const gf_mt_part *p = &c->parts[c->cold[s].part];
        if (p->players < (uint32_t)p->teams * p->team_size)
            continue;
        shape sh = shape_of(p);
        /* Skill-first seeds (sbmm, hybrid) take the nearest skills that still share a
         * datacenter; ping_first seeds fill their own best datacenter first (FIFO). */
        const gf_match_queue *sq = &c->cfg->queues[c->cold[s].queue];
        bool per_dc = sq->mode == GF_MATCH_PING_FIRST;
        uint32_t order[GF_MATCH_MAX_DCS];
        uint32_t nd = per_dc ? seed_dcs(c, s, order) : 1;
        /* Limits that no longer widen: the seed will not get a better chance later. */
        bool settled = (!isfinite(sk->gap) || sk->gap >= sq->curve.skill_cap) &&
                       c->cold[s].plimit >= sq->curve.ping_cap_ms;
        bool found = false;
        for (uint32_t i = 0; i < nd && !found; i++) {
            uint32_t players = 0;
            grp_init(&g, sk, s, &sh, per_dc ? 1u << order[i] : sk->dcmask);
            uint32_t n = walk(c, s, p, &g, &sh, x.cand, &players);
            c->res->stats.seeds_tried++;
            found =
                g.players == sh.players || (settled && fallback(c, &x, s, p, &g, n, players, &sh));
        }
        if (!found)
            continue;
        size_t nd_g = group_dcs(c, &g, dcs);
        if (nd_g == 0) {
            err = GF_ERR_INVALID; /* broken invariant: every member accepts one datacenter */
            goto out;
        }
        if ((err = commit(c, p, &g, dcs, nd_g)) != GF_OK)
            goto out;
    }
out:
    gf_mt_free(&c->mem, x.cand, c->window, sizeof *x.cand);
    gf_mt_free(&c->mem, x.all, x.cap, sizeof *x.all);
    gf_mt_free(&c->mem, x.suffix, x.cap + 1, sizeof *x.suffix);
    gf_mt_free(&c->mem, x.key, x.cap, sizeof *x.key);
    return err;
}
