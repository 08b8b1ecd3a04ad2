/*
 * test_match_property.c — thousands of random, seeded pools under random configs. For
 * every result, checked here from the rule formulas (not with the engine's own code):
 *   - no ticket and no player is in two matches; every ticket is reported exactly once
 *     (in a match or as unmatched), invalid ones as INVALID with a reason;
 *   - every match has the configured shape: each team exactly full, parties whole;
 *   - every match is valid for every member: the skill gap to every other member is within
 *     that member's own limit, and its ping to the chosen datacenter and to every fallback
 *     datacenter is within its own limit (limits recomputed from age, queue and party);
 *   - the reported limits are those limits; the chosen datacenter has the lowest total
 *     ping over all players (exact pings) of all datacenters every member accepts, and
 *     the list is in that order;
 *   - members share a queue, or a playlist when the match is marked merged, and share the
 *     configured match attributes.
 * Seeds are fixed, so a failure names a pool that can be replayed.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/match/tick.h"
#include "match_ref.h"

#define POOLS     3000
#define MAXN      160
#define NDC       5
#define BRUTE_MAX 10 /* the oracle is checked by brute force up to this many candidates */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(rng *r)
{
    return (double)(next(r) >> 11) * 0x1.0p-53;
}

static int pick(rng *r, int n)
{
    return (int)(next(r) % (uint64_t)n);
}

typedef struct world {
    gf_match_dc dcs[NDC];
    gf_match_queue q[4];
    gf_match_config cfg;
    const char *attr_keys[1];
    gf_match_ticket t[MAXN];
    gf_match_player pl[MAXN][8];
    gf_match_ping pg[MAXN][NDC];
    gf_match_attr at[MAXN][1];
    char ids[MAXN][9][16];
    size_t n;
    int64_t now;
} world;

static world W;

static const char *const shapes[] = {"1v1",  "2v2",     "3v3",   "5v5", "4v4v4",
                                     "ffa6", "2v2v2v2", "ffa16", "6v6"};

static void make_world(rng *r, world *w)
{
    static const char *const dc_names[NDC] = {"a", "b", "c", "d", "e"};
    static const char *const regions[NDC] = {"x", "x", "y", "z", "z"};
    static const char *const qnames[4] = {"q0", "q1", "q2", "q3"};
    memset(w, 0, sizeof *w);
    for (int i = 0; i < NDC; i++)
        w->dcs[i] = (gf_match_dc){dc_names[i], regions[i]};
    const char *shape = shapes[pick(r, (int)(sizeof shapes / sizeof shapes[0]))];
    int nq = 1 + pick(r, 3);
    bool playlist = pick(r, 2);
    bool attrs = pick(r, 4) == 0;
    w->attr_keys[0] = "platform";
    for (int i = 0; i < nq; i++) {
        gf_match_queue *q = &w->q[i];
        gf_match_queue_defaults(q, qnames[i], (gf_match_mode)pick(r, 3), shape);
        q->playlist = playlist ? "pl" : NULL;
        q->population_floor = pick(r, 3) == 0 ? 0 : 1 + pick(r, 60);
        if (pick(r, 2)) { /* random curves */
            q->curve.skill_base = 10 + 100 * unif(r);
            q->curve.skill_alpha = 10 * unif(r);
            q->curve.skill_gamma = 0.5 + 1.5 * unif(r);
            q->curve.skill_cap = q->curve.skill_base + 800 * unif(r);
            q->curve.sigma_widen = pick(r, 3) == 0 ? 2 * unif(r) : 0;
            q->curve.ping_base_ms = 10 + pick(r, 60);
            q->curve.ping_beta_ms = pick(r, 30);
            q->curve.ping_step_ms = 500 + pick(r, 8000);
            q->curve.ping_cap_ms = q->curve.ping_base_ms + pick(r, 200);
        }
        q->party_skill = pick(r, 2) ? GF_MATCH_PARTY_MAX : GF_MATCH_PARTY_AVERAGE;
        q->premade_bonus = pick(r, 3) == 0 ? 50 * unif(r) : 0;
        if (attrs) {
            q->match_attributes = w->attr_keys;
            q->match_attributes_len = 1;
        }
    }
    w->cfg = (gf_match_config){.datacenters = w->dcs,
                               .datacenters_len = NDC,
                               .queues = w->q,
                               .queues_len = (size_t)nq,
                               .search_window = 4 + pick(r, 60),
                               .clock_skew_ms = 5000};
    char why[256];
    if (gf_match_config_prepare(&w->cfg, why, sizeof why) != GF_OK)
        fail_msg("config: %s", why);
    w->now = 1700000000000 + pick(r, 1000000);

    /* Tickets: a skill cluster or two, random ages, parties up to the team size. */
    w->n = (size_t)pick(r, MAXN + 1);
    double centre[2] = {1200 + 600 * unif(r), 1200 + 600 * unif(r)};
    for (size_t i = 0; i < w->n; i++) {
        gf_match_ticket *t = &w->t[i];
        int q = pick(r, nq);
        int max_party = (int)w->q[q].team_size;
        int party = pick(r, 3) == 0 ? 1 + pick(r, max_party < 8 ? max_party : 8) : 1;
        snprintf(w->ids[i][0], 16, "t%u", (unsigned)i);
        double base = centre[pick(r, 2)] + 150 * (unif(r) - 0.5) * (1 + pick(r, 4));
        for (int k = 0; k < party; k++) {
            snprintf(w->ids[i][k + 1], 16, "p%u-%d", (unsigned)i, k);
            w->pl[i][k] = (gf_match_player){w->ids[i][k + 1], base + 40 * (unif(r) - 0.5),
                                            pick(r, 4) == 0 ? 100 * unif(r) : 0};
        }
        size_t np = 0;
        for (int d = 0; d < NDC; d++) {
            if (pick(r, 3) == 0 && !(d == NDC - 1 && np == 0))
                continue;
            w->pg[i][np++] = (gf_match_ping){(uint32_t)d, 5 + 200 * unif(r)};
        }
        w->at[i][0] = (gf_match_attr){"platform", pick(r, 2) ? "pc" : "console"};
        *t = (gf_match_ticket){.id = w->ids[i][0],
                               .queue = (uint32_t)q,
                               .region = GF_MATCH_REGION_AUTO,
                               .queued_ms = w->now - (int64_t)pick(r, 200000),
                               .players = w->pl[i],
                               .players_len = (size_t)party,
                               .pings = w->pg[i],
                               .pings_len = np,
                               .attrs = pick(r, 8) ? w->at[i] : NULL,
                               .attrs_len = 0};
        t->attrs_len = t->attrs ? 1 : 0;
        /* A few bad tickets and duplicates, to keep the checks honest. */
        int spoil = pick(r, 40);
        if (spoil == 0)
            w->pl[i][0].skill = NAN;
        else if (spoil == 1 && i > 0)
            w->pl[i][0].id = w->pl[i - 1][0].id; /* a player in two tickets */
        else if (spoil == 2)
            t->queued_ms = w->now - 10 * 60000; /* past the TTL */
    }
}

/* ---- the rules, recomputed ------------------------------------------------------------ */

typedef struct lim {
    double skill, gap, plimit;
} lim;

static lim limits(const world *w, const gf_match_ticket *t)
{
    const gf_match_queue *q = &w->cfg.queues[t->queue];
    double sum = 0, top = -INFINITY, var = 0;
    for (size_t k = 0; k < t->players_len; k++) {
        sum += t->players[k].skill;
        top = fmax(top, t->players[k].skill);
        var += t->players[k].sigma * t->players[k].sigma;
    }
    double n = (double)t->players_len;
    int64_t age = w->now > t->queued_ms ? w->now - t->queued_ms : 0;
    lim l;
    l.skill = (q->party_skill == GF_MATCH_PARTY_MAX ? top : sum / n) + q->premade_bonus * (n - 1);
    double gap = q->curve.skill_base +
                 q->curve.skill_alpha * pow(age / 1000.0, q->curve.skill_gamma) +
                 q->curve.sigma_widen * sqrt(var / n);
    l.gap = q->mode == GF_MATCH_PING_FIRST ? INFINITY : fmin(gap, q->curve.skill_cap);
    double steps = floor((double)age / (double)q->curve.ping_step_ms);
    double ping = fmin((double)q->curve.ping_cap_ms,
                       (double)q->curve.ping_base_ms + (double)q->curve.ping_beta_ms * steps);
    l.plimit = q->mode == GF_MATCH_SBMM ? (double)q->curve.ping_cap_ms : ping;
    return l;
}

/* Its limits no longer widen: at their caps, or on curves that do not widen. */
static bool settled(const world *w, const gf_match_ticket *t)
{
    const gf_match_queue *q = &w->cfg.queues[t->queue];
    lim l = limits(w, t);
    bool skill =
        q->mode == GF_MATCH_PING_FIRST || l.gap >= q->curve.skill_cap || q->curve.skill_alpha == 0;
    bool ping = q->mode == GF_MATCH_SBMM || l.plimit >= (double)q->curve.ping_cap_ms ||
                q->curve.ping_beta_ms == 0;
    return skill && ping;
}

static double ping_of(const gf_match_ticket *t, uint32_t dc)
{
    for (size_t i = 0; i < t->pings_len; i++) {
        if (t->pings[i].dc == dc)
            return t->pings[i].ms;
    }
    return NAN;
}

static const char *platform(const gf_match_ticket *t)
{
    return t->attrs_len ? t->attrs[0].value : "";
}

/* ---- population and merges, recomputed ------------------------------------------------- */

#define NREG 3 /* x, y, z */

typedef struct pop {
    bool valid[MAXN];     /* valid and unexpired (from the result's reasons) */
    int region[MAXN];     /* that of the ticket's lowest exact ping, lower index on ties */
    bool merged[4][NREG]; /* (queue, region): its playlist is merged there */
} pop;

static int region_of_dc(uint32_t d)
{
    static const int r[NDC] = {0, 0, 1, 2, 2};
    return r[d];
}

static void population(const world *w, const gf_match_result *r, pop *p)
{
    int players[4][NREG] = {{0}};
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < w->n; i++)
        p->valid[i] = true;
    for (size_t k = 0; k < r->unmatched_len; k++) {
        uint8_t why = r->unmatched[k].why;
        if (why == GF_MATCH_WHY_INVALID || why == GF_MATCH_WHY_EXPIRED)
            p->valid[r->unmatched[k].ticket] = false;
    }
    for (size_t i = 0; i < w->n; i++) {
        const gf_match_ticket *t = &w->t[i];
        double best = INFINITY;
        for (size_t k = 0; k < t->pings_len; k++) {
            const gf_match_ping *pg = &t->pings[k];
            if (pg->ms < best || (pg->ms == best && region_of_dc(pg->dc) < p->region[i])) {
                best = pg->ms;
                p->region[i] = region_of_dc(pg->dc);
            }
        }
        if (p->valid[i])
            players[t->queue][p->region[i]] += (int)t->players_len;
    }
    for (size_t q = 0; q < w->cfg.queues_len; q++) {
        for (int g = 0; g < NREG && w->q[q].playlist; g++) {
            for (size_t o = 0; o < w->cfg.queues_len; o++)
                p->merged[q][g] |= players[o][g] > 0 && players[o][g] < w->q[o].population_floor;
        }
    }
}

/* May tickets i and j share a match? A merge only adds partners: the same queue, or one
 * playlist and both in regions where it is merged; and the same match attributes. */
static bool partners(const world *w, const pop *p, size_t i, size_t j)
{
    const gf_match_ticket *a = &w->t[i], *b = &w->t[j];
    if (w->q[a->queue].match_attributes_len && strcmp(platform(a), platform(b)) != 0)
        return false;
    return a->queue == b->queue ||
           (w->q[a->queue].playlist && w->q[b->queue].playlist &&
            p->merged[a->queue][p->region[i]] && p->merged[b->queue][p->region[j]]);
}

static void check(const world *w, const gf_match_result *r, unsigned seed)
{
    static uint8_t seen[MAXN];
    static pop P;
    memset(seen, 0, sizeof seen);
    char where[64];
    population(w, r, &P);
    /* The engine's merge decisions are the ones recomputed here. */
    for (size_t k = 0; k < r->pools_len; k++) {
        const gf_match_pool_stat *ps = &r->pools[k];
        if (ps->merged != P.merged[ps->queue][ps->region])
            fail_msg("pool %u: queue %u region %u merged %d, recomputed %d", seed, ps->queue,
                     ps->region, ps->merged, P.merged[ps->queue][ps->region]);
    }

    for (size_t mi = 0; mi < r->matches_len; mi++) {
        const gf_match *m = &r->matches[mi];
        snprintf(where, sizeof where, "pool %u match %zu", seed, mi);
        assert_true(m->members_len >= 1 && m->dcs_len >= 1);
        const gf_match_queue *q0 = &w->cfg.queues[w->t[m->members[0].ticket].queue];
        int teams = (int)q0->teams, size = (int)q0->team_size;
        int team_players[64] = {0};
        double lo = INFINITY, hi = -INFINITY;
        lim l[128];
        for (uint32_t k = 0; k < m->members_len; k++) {
            const gf_match_member *mb = &m->members[k];
            assert_true(mb->ticket < w->n);
            if (seen[mb->ticket]++)
                fail_msg("%s: ticket %u in two matches", where, mb->ticket);
            const gf_match_ticket *t = &w->t[mb->ticket];
            const gf_match_queue *q = &w->cfg.queues[t->queue];
            if (t->queue != w->t[m->members[0].ticket].queue) {
                /* Different queues only in a merged pool of one playlist. */
                if (!m->merged || !q->playlist || !q0->playlist ||
                    strcmp(q->playlist, q0->playlist) != 0)
                    fail_msg("%s: queues mixed without a merge", where);
            }
            if (q0->match_attributes_len &&
                strcmp(platform(t), platform(&w->t[m->members[0].ticket])) != 0)
                fail_msg("%s: attributes differ", where);
            /* Every two members are partners; a merged match is all in merged regions. */
            for (uint32_t o = 0; o < k; o++) {
                if (!partners(w, &P, mb->ticket, m->members[o].ticket))
                    fail_msg("%s: tickets %u and %u are not partners", where, mb->ticket,
                             m->members[o].ticket);
            }
            if (m->merged && !P.merged[t->queue][P.region[mb->ticket]])
                fail_msg("%s: merged match with ticket %u outside a merged region", where,
                         mb->ticket);
            if (mb->team >= teams)
                fail_msg("%s: team %u of %d", where, mb->team, teams);
            team_players[mb->team] += (int)t->players_len;
            l[k] = limits(w, t);
            lo = fmin(lo, l[k].skill);
            hi = fmax(hi, l[k].skill);
            /* Reported limits are the member's own. */
            if (fabs(mb->skill - l[k].skill) > 1e-9 ||
                !(mb->allowed_skill_gap == l[k].gap ||
                  fabs(mb->allowed_skill_gap - l[k].gap) <= 1e-9 * fabs(l[k].gap)) ||
                mb->allowed_ping_ms != (uint16_t)l[k].plimit)
                fail_msg("%s: reported limits differ for ticket %u", where, mb->ticket);
        }
        for (int tm = 0; tm < teams; tm++) {
            if (team_players[tm] != size)
                fail_msg("%s: team %d has %d players, shape wants %d", where, tm, team_players[tm],
                         size);
        }
        /* Members grouped by team. */
        for (uint32_t k = 1; k < m->members_len; k++)
            assert_true(m->members[k - 1].team <= m->members[k].team);
        /* Each member's own skill limit against every other member. */
        for (uint32_t k = 0; k < m->members_len; k++) {
            if (fmax(hi - l[k].skill, l[k].skill - lo) > l[k].gap)
                fail_msg("%s: ticket %u's own skill limit %.3f broken (range %.3f..%.3f)", where,
                         m->members[k].ticket, l[k].gap, lo, hi);
        }
        assert_true(fabs(m->skill_spread - (hi - lo)) < 1e-6);
        /* Each member's own ping limit at the chosen and every fallback datacenter.
         * Totals count every player (a ticket's ping times its players): the order is on
         * the exact pings, the reported totals on the pings rounded up. */
        double best_total = INFINITY;
        uint32_t acceptable = 0;
        for (uint32_t d = 0; d < NDC; d++) {
            double total = 0;
            bool ok = true;
            for (uint32_t k = 0; k < m->members_len && ok; k++) {
                const gf_match_ticket *t = &w->t[m->members[k].ticket];
                double p = ping_of(t, d);
                ok = !isnan(p) && p <= l[k].plimit;
                total += p * (double)t->players_len;
            }
            if (ok) {
                best_total = fmin(best_total, total);
                acceptable++;
            }
        }
        /* Every acceptable datacenter is listed (for failover), none twice. */
        if (m->dcs_len != acceptable)
            fail_msg("%s: %u datacenters listed, %u acceptable", where, m->dcs_len, acceptable);
        /* The seed is a member; the exact search only forms a match around a seed whose
         * limits no longer widen. */
        bool has_seed = false;
        for (uint32_t k = 0; k < m->members_len; k++)
            has_seed |= m->members[k].ticket == m->seed;
        if (!has_seed)
            fail_msg("%s: seed %u is not a member", where, m->seed);
        if (m->starved && !settled(w, &w->t[m->seed]))
            fail_msg("%s: formed by the exact search around a seed whose limits still widen",
                     where);
        double prev_total = -INFINITY, first_total = 0;
        for (uint32_t j = 0; j < m->dcs_len; j++) {
            uint32_t d = m->dcs[j].dc;
            double total = 0, rounded = 0;
            for (uint32_t k = 0; k < m->members_len; k++) {
                const gf_match_ticket *t = &w->t[m->members[k].ticket];
                double p = ping_of(t, d);
                if (isnan(p) || p > l[k].plimit)
                    fail_msg("%s: datacenter %u (position %u) breaks ticket %u's own ping "
                             "limit %.0f",
                             where, d, j, m->members[k].ticket, l[k].plimit);
                total += p * (double)t->players_len;
                rounded += ceil(p) * (double)t->players_len;
            }
            assert_true(m->dcs[j].total_ping_ms == (uint32_t)rounded);
            /* Sums in another order may differ in the last bits: near-ties in any order. */
            if (total < prev_total - 1e-9 * (1 + total))
                fail_msg("%s: datacenter %u (position %u) is out of order: total %.3f after %.3f",
                         where, d, j, total, prev_total);
            prev_total = total;
            if (j == 0)
                first_total = total;
        }
        if (first_total > best_total + 1e-9 * (1 + best_total))
            fail_msg("%s: chosen total %.3f, best acceptable %.3f", where, first_total, best_total);
    }

    /* No player in two matches. */
    for (size_t i = 0; i < w->n; i++) {
        for (size_t j = i + 1; seen[i] && j < w->n; j++) {
            if (!seen[j])
                continue;
            for (size_t a = 0; a < w->t[i].players_len; a++) {
                for (size_t b = 0; b < w->t[j].players_len; b++) {
                    if (w->t[i].players[a].id == w->t[j].players[b].id ||
                        strcmp(w->t[i].players[a].id, w->t[j].players[b].id) == 0)
                        fail_msg("pool %u: player %s in tickets %zu and %zu, both matched", seed,
                                 w->t[i].players[a].id, i, j);
                }
            }
        }
    }
    /* Every ticket reported exactly once. */
    for (size_t k = 0; k < r->unmatched_len; k++) {
        const gf_match_unmatched *u = &r->unmatched[k];
        assert_true(u->ticket < w->n);
        if (seen[u->ticket]++)
            fail_msg("pool %u: ticket %u reported twice", seed, u->ticket);
        assert_true(u->why < GF_MATCH_WHY__COUNT);
        if (u->why == GF_MATCH_WHY_INVALID)
            assert_true(u->bad != GF_MATCH_BAD_NONE && u->bad < GF_MATCH_BAD__COUNT);
        if (k > 0)
            assert_true(r->unmatched[k - 1].ticket < u->ticket);
    }
    for (size_t i = 0; i < w->n; i++) {
        if (seen[i] != 1)
            fail_msg("pool %u: ticket %zu reported %u times", seed, i, seen[i]);
    }
}

/* ---- starvation, checked exhaustively ---------------------------------------------------- */

/* Can the tickets idx[0..k) (ticket `who` among them) form a match? Every rule by brute
 * force: the shape's players, each member's own gap against every other, a datacenter
 * every member accepts, parties packed whole into exactly full teams. */
static bool place_brute(const int *sizes, int k, int *room, int teams)
{
    if (k == 0)
        return true;
    for (int b = 0; b < teams; b++) {
        if (room[b] >= sizes[0]) {
            room[b] -= sizes[0];
            bool ok = place_brute(sizes + 1, k - 1, room, teams);
            room[b] += sizes[0];
            if (ok)
                return true;
        }
    }
    return false;
}

static bool valid_brute(const world *w, const uint32_t *idx, int k)
{
    const gf_match_queue *q = &w->q[w->t[idx[0]].queue];
    int players = 0, sizes[GF_MATCH_MAX_PLAYERS], room[GF_MATCH_MAX_TEAMS];
    lim l[GF_MATCH_MAX_PLAYERS];
    for (int a = 0; a < k; a++) {
        l[a] = limits(w, &w->t[idx[a]]);
        sizes[a] = (int)w->t[idx[a]].players_len;
        players += sizes[a];
    }
    if (players != (int)(q->teams * q->team_size))
        return false;
    for (int a = 0; a < k; a++) {
        for (int b = 0; b < k; b++) {
            double d = fabs(l[a].skill - l[b].skill);
            if (d > l[a].gap)
                return false;
        }
    }
    bool dc_ok = false;
    for (uint32_t d = 0; d < NDC && !dc_ok; d++) {
        dc_ok = true;
        for (int a = 0; a < k && dc_ok; a++) {
            double p = ping_of(&w->t[idx[a]], d);
            dc_ok = !isnan(p) && p <= l[a].plimit;
        }
    }
    if (!dc_ok)
        return false;
    for (int a = 1; a < k; a++) { /* largest first */
        for (int b = a; b > 0 && sizes[b - 1] < sizes[b]; b--) {
            int x = sizes[b];
            sizes[b] = sizes[b - 1];
            sizes[b - 1] = x;
        }
    }
    for (int b = 0; b < (int)q->teams; b++)
        room[b] = (int)q->team_size;
    return place_brute(sizes, k, room, (int)q->teams);
}

/* Subsets of cand[0..n) with `who` added, by brute force. */
static bool exists_brute(const world *w, uint32_t who, const uint32_t *cand, int n)
{
    uint32_t idx[GF_MATCH_MAX_PLAYERS];
    for (uint32_t set = 0; set < (1u << n); set++) {
        int k = 0;
        idx[k++] = who;
        for (int b = 0; b < n && k < GF_MATCH_MAX_PLAYERS; b++) {
            if (set >> b & 1)
                idx[k++] = cand[b];
        }
        if (valid_brute(w, idx, k))
            return true;
    }
    return false;
}

typedef struct starve_counts {
    size_t capped, below, below_group, brute;
} starve_counts;

/* Every ticket left unmatched that had a turn as a seed: if its limits no longer widen,
 * no valid group may have held it among the tickets still waiting at its turn — among
 * its own queue's (a merge only adds partners) nor, in a merged region, among the
 * merged pool's. The oracle says; where the candidates are few it is itself checked
 * against brute force. */
static void check_starvation(const world *w, const gf_match_result *r, const pop *p, unsigned seed,
                             starve_counts *sc)
{
    static uint32_t own[MAXN], merged[MAXN], cand[MAXN];
    gf_ref_pool pool;
    assert_int_equal(gf_ref_pool_make(&w->cfg, w->t, w->n, w->now, r, &pool), 0);
    for (size_t i = 0; i < w->n; i++) {
        const gf_match_ticket *t = &w->t[i];
        uint32_t plat = w->q[t->queue].match_attributes_len ? (strcmp(platform(t), "pc") == 0 ? 1
                                                               : *platform(t)                 ? 2
                                                                                              : 3)
                                                            : 0;
        own[i] = t->queue * 4 + plat;
        merged[i] = p->merged[t->queue][p->region[i]] ? 1000 + plat : 2000 + (uint32_t)i;
    }
    for (size_t k = 0; k < r->unmatched_len; k++) {
        const gf_match_unmatched *u = &r->unmatched[k];
        if (u->turn == GF_MATCH_NONE)
            continue;
        uint32_t who = u->ticket;
        bool capped = gf_ref_settled(&w->cfg, &w->t[who], w->now);
        for (int cls = 0; cls < 2; cls++) {
            const uint32_t *c = cls ? merged : own;
            if (cls && c[who] >= 2000)
                continue; /* not in a merged region */
            long budget = 50000000;
            int v = gf_ref_group_exists(&w->cfg, w->t, w->now, who, &pool, u->turn, c, &budget);
            if (v == GF_REF_UNDECIDED)
                fail_msg("pool %u: the oracle ran out of budget on ticket %u", seed, who);
            if (capped && v == GF_REF_GROUP)
                fail_msg("pool %u: ticket %u is at its caps and unmatched, though a valid group "
                         "held it at its turn (%u)%s",
                         seed, who, u->turn, cls ? " in the merged pool" : "");
            sc->below_group += !capped && v == GF_REF_GROUP;
            /* The oracle against brute force, over the few tickets that could join. */
            int n = 0;
            for (size_t i = 0; i < w->n; i++) {
                if (i == who || pool.gone[i] <= u->turn || c[i] != c[who])
                    continue;
                if (n == BRUTE_MAX) {
                    n = -1;
                    break;
                }
                cand[n++] = (uint32_t)i;
            }
            if (n >= 0) {
                sc->brute++;
                if (exists_brute(w, who, cand, n) != (v == GF_REF_GROUP))
                    fail_msg("pool %u: the oracle says %d for ticket %u, brute force differs", seed,
                             v, who);
            }
        }
        sc->capped += capped;
        sc->below += !capped;
    }
    gf_ref_pool_free(&pool);
}

static void test_random_pools(void **state)
{
    (void)state;
    size_t matches = 0, merged = 0, invalid = 0;
    starve_counts sc = {0};
    static pop P;
    gf_match_workspace *ws = NULL;
    assert_int_equal(gf_match_workspace_create(&ws), GF_OK);
    for (unsigned seed = 1; seed <= POOLS; seed++) {
        rng r = {seed * 7919ull};
        make_world(&r, &W);
        gf_match_result *res = NULL;
        gf_err err = seed % 2 ? gf_match_tick(&W.cfg, W.t, W.n, W.now, &res)
                              : gf_match_tick_ws(ws, &W.cfg, W.t, W.n, W.now, &res);
        if (err != GF_OK)
            fail_msg("pool %u: tick failed: %s", seed, gf_err_str(err));
        check(&W, res, seed);
        population(&W, res, &P);
        check_starvation(&W, res, &P, seed, &sc);
        matches += res->matches_len;
        invalid += res->stats.invalid;
        for (size_t i = 0; i < res->matches_len; i++)
            merged += res->matches[i].merged;
        gf_match_result_free(res);
    }
    gf_match_workspace_free(ws);
    /* The pools must actually exercise the engine. */
    print_message("%d pools: %zu matches (%zu merged), %zu invalid tickets\n", POOLS, matches,
                  merged, invalid);
    print_message("unmatched with a turn: %zu at their caps (none with a valid group), %zu below "
                  "(%zu with one); %zu oracle answers checked by brute force\n",
                  sc.capped, sc.below, sc.below_group, sc.brute);
    assert_true(sc.capped > 1000 && sc.brute > 1000);
    /* Tickets below their caps may wait with a group around (the walk is greedy and
     * bounded), but few: retrying parties first keeps it near 0.5 % (2.4 % without). */
    assert_true(sc.below_group * 100 < sc.below);
    assert_true(matches > POOLS);
    assert_true(merged > 100);
    assert_true(invalid > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
