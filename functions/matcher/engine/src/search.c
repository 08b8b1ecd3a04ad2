/*
 * search.c — the candidate search: oldest tickets seed matches, each from a bounded walk
 * over its skill neighbours (walk.c); then the match's datacenters, teams and output.
 *
 * Design notes:
 *  - Seeds go oldest first. An old ticket therefore picks its group before any newer one
 *    can take its candidates; a seed that cannot be matched now stays available as a
 *    candidate for later seeds.
 *  - Skill-first seeds (sbmm, hybrid): the group starts from every datacenter the seed
 *    accepts and narrows it (the nearest skills that still share a datacenter).
 *    ping_first seeds: the group is pinned to one datacenter, the seed's own lowest-ping
 *    one first, then the next (first in, first out within a datacenter).
 *  - A seed whose limits have stopped widening (skill gap and ping at their caps, or
 *    curves that do not widen) will not get a better chance in a later tick, so if the
 *    greedy group falls short it gets the exact search (exact.c): it is matched as soon as
 *    a valid group holding it exists. Younger seeds just wait: their limits widen.
 *  - The match's datacenters are then every one all members accept, best first
 *    (gf_match_dc_rank), and its teams the most balanced split (gf_match_teams_balance).
 *  - Without the exact search this makes exactly the choices of the all-pairs greedy
 *    reference in bench/match_naive.c, within the window; see docs/MATCHMAKING.md.
 *  - Before a walk, gf_mt_reach_possible (reach.c) may prove that it cannot fill: then it
 *    is skipped and counted as the walk would have been. Matches remove their members
 *    from its counts (gf_mt_reach_take) as from alive[].
 *  - A merged ticket with a copy in its queue's partition (merge.c) seeds from its merged
 *    rank first, then from the copy; a match takes both ranks off.
 *  - Most seeds are already matched when their turn comes: c->alive says so from the L1
 *    cache, without touching the seed's records. Seeds come at random ranks, so the next
 *    unmatched seed's records are prefetched while the current one walks, and the walk
 *    prefetches what writing the match will read of each member it takes.
 */
#include <math.h>
#include <string.h>

#include "walk.h"

/* Datacenter choice for a group, as gf_match_dc_rank() makes it: every datacenter all
 * members accept, lowest total ping over all players first (each ticket's ping times its
 * players), then lowest worst ping, then lowest index, on the exact pings. A member
 * accepts d iff its dcmask has d (measured and within its own limit), so the candidates
 * are the AND of the masks and no ping needs checking. The totals are first made from
 * the rounded pings in rank order; rounding moves a total by less than the players of
 * the members whose pings have fractions (none for whole-millisecond pings, as on the
 * wire), so only when two totals are closer than that can the exact order differ: then
 * the members' exact pings are read from the caller's tickets and gf_match_dc_rank()
 * ranks them. Returns the count. */
static size_t group_dcs(const gf_mt_ctx *c, const gf_mt_grp *g, gf_match_dc_choice *out)
{
    uint32_t mask = UINT32_MAX, band = 0;
    size_t n = 0;
    for (uint32_t i = 0; i < g->st.len; i++) {
        uint32_t r = g->rank[i];
        mask &= c->hot[r].dcmask;
        band += c->cold[r].frac ? c->hot[r].size : 0;
    }
    for (uint32_t m = mask; m; m &= m - 1) {
        uint32_t d = (uint32_t)__builtin_ctz(m), total = 0, worst = 0;
        for (uint32_t i = 0; i < g->st.len; i++) {
            uint32_t ping = gf_mt_ping(c, g->rank[i], d);
            total += ping * c->hot[g->rank[i]].size;
            worst = ping > worst ? ping : worst;
        }
        size_t j = n++;
        for (; j > 0 && (out[j - 1].total_ping_ms > total ||
                         (out[j - 1].total_ping_ms == total && out[j - 1].max_ping_ms > worst));
             j--)
            out[j] = out[j - 1];
        out[j] = (gf_match_dc_choice){.dc = d, .max_ping_ms = worst, .total_ping_ms = total};
    }
    bool near = false;
    for (size_t j = 1; j < n; j++)
        near |= out[j].total_ping_ms - out[j - 1].total_ping_ms < band;
    if (!near)
        return n;
    gf_match_dc_member mb[GF_MATCH_MAX_PLAYERS];
    double exact[GF_MATCH_MAX_PLAYERS][GF_MATCH_MAX_DCS];
    for (uint32_t i = 0; i < g->st.len; i++) {
        uint32_t r = g->rank[i];
        const gf_match_ticket *t = &c->in[c->cold[r].in];
        mb[i] = (gf_match_dc_member){.ping = &c->ping[(size_t)r * c->pstride],
                                     .limit_ms = c->hot[r].plimit,
                                     .players = c->hot[r].size,
                                     .exact = c->cold[r].frac ? exact[i] : NULL};
        for (size_t k = 0; c->cold[r].frac && k < t->pings_len; k++)
            exact[i][t->pings[k].dc] = t->pings[k].ms;
    }
    return gf_match_dc_rank(mb, g->st.len, c->ndc, out);
}

static gf_err commit(gf_mt_ctx *c, gf_mt_reach *rc, gf_mt_exact *x, const gf_mt_part *p,
                     const gf_mt_grp *g, const gf_match_dc_choice *dcs, size_t ndcs, bool starved)
{
    gf_match_result *res = c->res;
    double skills[GF_MATCH_MAX_PLAYERS];
    uint8_t sizes[GF_MATCH_MAX_PLAYERS];
    uint16_t team[GF_MATCH_MAX_PLAYERS];
    double diff = 0;

    for (uint32_t i = 0; i < g->st.len; i++) {
        skills[i] = c->hot[g->rank[i]].skill;
        sizes[i] = c->hot[g->rank[i]].size;
    }
    if (gf_match_teams_balance(skills, sizes, g->st.len, p->teams, p->team_size, team, &diff) !=
        GF_OK)
        return GF_ERR_INVALID; /* broken invariant: the search only keeps packable groups */
    if (res->matches_len >= c->matches_cap || c->dcs_len + ndcs > c->dcs_cap ||
        (size_t)(c->members_next - c->members_buf) + g->st.len > c->members_cap)
        return GF_ERR_INVALID; /* broken invariant: capacities are upper bounds */

    gf_match *mt = &res->matches[res->matches_len++];
    mt->queue = c->cold[g->rank[0]].queue;
    mt->region = c->dc_region[dcs[0].dc];
    mt->merged = p->merged;
    mt->starved = starved;
    mt->seed = c->cold[g->rank[0]].in;
    mt->members = c->members_next;
    mt->members_len = g->st.len;
    mt->dcs = c->dcs_next;
    mt->dcs_len = (uint32_t)ndcs;
    mt->skill_spread = g->st.hi - g->st.lo;
    mt->team_skill_diff = diff;
    memcpy(mt->dcs, dcs, ndcs * sizeof *dcs);
    c->dcs_next += ndcs;
    c->dcs_len += ndcs;

    /* Members grouped by team, team 0 first, in group order within a team: each member's
     * slot comes from per-team offsets rather than a scan per team. */
    uint32_t at[GF_MATCH_MAX_TEAMS];
    for (uint32_t t = 0; t < p->teams; t++)
        at[t] = 0;
    for (uint32_t i = 0; i < g->st.len; i++)
        at[team[i]]++;
    for (uint32_t t = 0, sum = 0; t < p->teams; t++) {
        uint32_t cnt = at[t];
        at[t] = sum;
        sum += cnt;
    }
    for (uint32_t i = 0; i < g->st.len; i++) {
        uint32_t r = g->rank[i];
        gf_match_member *m = &mt->members[at[team[i]]++];
        m->ticket = c->cold[r].in;
        m->team = team[i];
        m->ping_ms = gf_mt_ping(c, r, dcs[0].dc);
        m->allowed_ping_ms = c->hot[r].plimit;
        m->skill = c->hot[r].skill;
        m->allowed_skill_gap = c->hot[r].gap;
    }
    c->members_next += g->st.len;
    for (uint32_t i = 0; i < g->st.len; i++) {
        uint32_t r = g->rank[i], twin = c->twin ? c->twin[r] : GF_MT_NONE;
        c->alive[r >> 6] &= ~(1ull << (r & 63));
        gf_mt_reach_take(rc, r);
        gf_mt_exact_take(c, x, r);
        if (twin != GF_MT_NONE) { /* the ticket's other rank (merge.c) */
            c->alive[twin >> 6] &= ~(1ull << (twin & 63));
            gf_mt_reach_take(rc, twin);
            gf_mt_exact_take(c, x, twin);
        }
        c->bad[c->cold[r].in] = GF_MT_IN_MATCH;
        res->stats.matched_tickets++;
        res->stats.matched_players += c->hot[r].size;
    }
    return GF_OK;
}

/* The seed's accepted datacenters, by its own ping, lowest first: its exact lowest one
 * (bestdc) leads, the others follow by rounded ping, then index. */
static uint32_t seed_dcs(const gf_mt_ctx *c, uint32_t s, uint32_t *out)
{
    uint32_t n = 0, m = c->hot[s].dcmask, lead = c->cold[s].bestdc;
    while (m) {
        uint32_t d = (uint32_t)__builtin_ctz(m);
        m &= m - 1;
        uint32_t j = n++;
        uint32_t key = (uint32_t)(d != lead) << 16 | gf_mt_ping(c, s, d);
        while (j > 0 &&
               ((uint32_t)(out[j - 1] != lead) << 16 | gf_mt_ping(c, s, out[j - 1])) > key) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = d;
    }
    return n;
}

/* What the search keeps from seed to seed. */
typedef struct searcher {
    gf_mt_scratch x;
    gf_mt_reach rc;
    gf_mt_exact *exact; /* created when a seed first needs it */
    gf_mt_grp g;
} searcher;

/* Limits that no longer widen: at their caps, or on a curve that does not widen. Such a
 * seed will not get a better chance in a later tick. */
static bool settled(const gf_match_queue *q, const gf_mt_hot *k)
{
    const gf_match_curve *cv = &q->curve;
    bool skill = !isfinite(k->gap) || k->gap >= cv->skill_cap || cv->skill_alpha == 0;
    bool ping = q->mode == GF_MATCH_SBMM || k->plimit >= cv->ping_cap_ms || cv->ping_beta_ms == 0;
    return skill && ping;
}

/* A full valid group around seed rank s in its partition, into sr->g: the walk's greedy
 * group, or for a seed whose limits no longer widen the exact search's (*starved set). */
static gf_err seed_group(gf_mt_ctx *c, searcher *sr, uint32_t s, bool *found, bool *starved)
{
    const gf_mt_hot *sk = &c->hot[s];
    const gf_mt_part *p = &c->parts[c->cold[s].part];
    gf_mt_grp *g = &sr->g;
    *found = false;
    if (p->players < (uint32_t)p->teams * p->team_size)
        return GF_OK;
    gf_mt_shape sh = gf_mt_shape_of(p);
    const gf_match_queue *sq = &c->cfg->queues[c->cold[s].queue];
    bool per_dc = sq->mode == GF_MATCH_PING_FIRST;
    uint32_t order[GF_MATCH_MAX_DCS];
    uint32_t nd = per_dc ? seed_dcs(c, s, order) : 1;
    for (uint32_t i = 0; i < nd; i++) {
        uint32_t players = 0, seen = 0;
        uint32_t mask = sk->dcmask & (per_dc ? 1u << order[i] : UINT32_MAX);
        c->res->stats.seeds_tried++;
        if (!gf_mt_reach_possible(c, &sr->rc, s, p, mask, &sh, &seen)) {
            c->res->stats.candidates_seen += seen;
            continue;
        }
        gf_mt_grp_init(g, sk, s, &sh, mask);
        uint32_t n = gf_mt_walk(c, s, p, g, &sh, sr->x.cand, &players);
        if ((*found = g->st.players == sh.players ||
                      gf_mt_parties_first(c, s, p, g, sr->x.cand, n, &sh, sr->x.all)))
            return GF_OK;
    }
    if (!settled(sq, sk))
        return GF_OK;
    gf_err err = GF_OK;
    if (!sr->exact && (err = gf_mt_exact_create(c, &sr->rc, &sr->exact)) != GF_OK)
        return err;
    *found = *starved = gf_mt_exact_group(c, sr->exact, &sr->rc, s, p, &sh, g);
    return GF_OK;
}

gf_err gf_mt_search(gf_mt_ctx *c)
{
    gf_err err = GF_OK;
    gf_match_dc_choice dcs[GF_MATCH_MAX_DCS];
    searcher sr = {.exact = NULL};
    sr.x.cand = gf_mt_alloc(&c->mem, c->window, sizeof *sr.x.cand);
    sr.x.all = gf_mt_alloc(&c->mem, c->window + GF_MATCH_MAX_PLAYERS, sizeof *sr.x.all);
    c->turn = gf_mt_alloc(&c->mem, c->nv, sizeof *c->turn);
    if (!sr.x.cand || !sr.x.all || !c->turn) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    memset(c->turn, 0xff, c->nv * sizeof *c->turn);
    if ((err = gf_mt_reach_init(c, &sr.rc)) != GF_OK)
        goto out;

    for (uint32_t si = 0, ahead = 0; si < c->nseeds; si++) {
        uint32_t s = c->seeds[si];
        if (!gf_mt_alive(c, s))
            continue;
        /* The next seed still unmatched now: fetch its records during this one's walk. */
        if (ahead <= si)
            ahead = si + 1;
        while (ahead < c->nseeds && !gf_mt_alive(c, c->seeds[ahead]))
            ahead++;
        if (ahead < c->nseeds) {
            __builtin_prefetch(&c->hot[c->seeds[ahead]]);
            __builtin_prefetch(&c->cold[c->seeds[ahead]]);
        }
        c->turn[s] = (uint32_t)c->res->matches_len;
        /* A merged ticket with a copy in its queue's partition tries that one too. */
        uint32_t copy = c->twin ? c->twin[s] : GF_MT_NONE;
        bool found = false, starved = false;
        if ((err = seed_group(c, &sr, s, &found, &starved)) != GF_OK)
            goto out;
        if (!found && copy != GF_MT_NONE &&
            (err = seed_group(c, &sr, copy, &found, &starved)) != GF_OK)
            goto out;
        if (!found)
            continue;
        const gf_mt_grp *g = &sr.g;
        const gf_mt_part *p = &c->parts[c->cold[g->rank[0]].part]; /* where it was found */
        size_t nd_g = group_dcs(c, g, dcs);
        if (nd_g == 0) {
            err = GF_ERR_INVALID; /* broken invariant: every member accepts one datacenter */
            goto out;
        }
        if ((err = commit(c, &sr.rc, sr.exact, p, g, dcs, nd_g, starved)) != GF_OK)
            goto out;
    }
out:
    gf_mt_exact_free(c, sr.exact);
    gf_mt_reach_free(c, &sr.rc);
    gf_mt_free(&c->mem, sr.x.cand, c->window, sizeof *sr.x.cand);
    gf_mt_free(&c->mem, sr.x.all, c->window + GF_MATCH_MAX_PLAYERS, sizeof *sr.x.all);
    return err;
}
