/*
 * bench/match_exists.c — does a valid group holding a given ticket exist among given
 * tickets? The oracle behind the starvation counts of `gamefn-bench match` and of the
 * property test.
 *
 * Design notes: nothing here calls the engine's rule, packing or search code; limits
 * come from gf_ref_limits (the checker's own formulas) and pings are the exact ones. A
 * group is valid iff its members share a datacenter each of them accepts, each member's
 * own gap holds against every other member, and the parties fill the shape exactly.
 * With lo and hi the lowest and highest skill of the group, the skill part holds iff
 * every member i has skill_i - gap_i <= lo and hi <= skill_i + gap_i. So, per
 * datacenter, each member's skill is tried as lo; the tickets tolerating that lo are
 * then taken in order of skill as hi rises, each staying while hi <= skill + gap; after
 * each step the tickets in are counted by party size, and a plain search over how many
 * parties of each size to take, placing them into teams by backtracking, says whether
 * they fill the shape around the ticket (results kept per count vector). Work is bounded
 * by the caller's budget; when it runs out the answer is "undecided".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "match_ref.h"

typedef struct cand {
    double x, g; /* skill, own gap */
    uint32_t size;
} cand;

#define MEMO 1024

typedef struct oracle {
    uint32_t teams, size, players, own; /* own: the ticket's players */
    long *budget;
    uint8_t memo_key[MEMO][GF_MATCH_MAX_TEAM_SIZE + 1];
    int8_t memo_val[MEMO]; /* -1 empty, 0 no, 1 yes */
} oracle;

static double ping_at(const gf_match_ticket *t, uint32_t dc)
{
    for (size_t i = 0; i < t->pings_len; i++) {
        if (t->pings[i].dc == dc)
            return t->pings[i].ms;
    }
    return NAN;
}

/* Parties sizes[0..k) (largest first) into teams with room[] left. */
static bool place(const uint32_t *sizes, uint32_t k, uint32_t *room, uint32_t teams)
{
    if (k == 0)
        return true;
    for (uint32_t b = 0; b < teams; b++) {
        if (room[b] < sizes[0])
            continue;
        room[b] -= sizes[0];
        bool ok = place(sizes + 1, k - 1, room, teams);
        room[b] += sizes[0];
        if (ok)
            return true;
    }
    return false;
}

/* Takes c parties of size s (from s down to 2) on top of sizes[0..k); solo players fill
 * what is left. */
static bool compose(oracle *o, const uint32_t *have, uint32_t s, uint32_t *sizes, uint32_t k,
                    uint32_t party)
{
    if (--*o->budget < 0)
        return false;
    if (s < 2) {
        uint32_t self = o->own == 1; /* the ticket itself, when solo */
        if (party + self > o->players || o->players - party - self > have[1])
            return false;
        uint32_t room[GF_MATCH_MAX_TEAMS], sorted[GF_MATCH_MAX_PLAYERS];
        for (uint32_t b = 0; b < o->teams; b++)
            room[b] = o->size;
        for (uint32_t i = 0; i < k; i++) { /* largest first */
            uint32_t j = i;
            for (; j > 0 && sorted[j - 1] < sizes[i]; j--)
                sorted[j] = sorted[j - 1];
            sorted[j] = sizes[i];
        }
        return place(sorted, k, room, o->teams);
    }
    for (uint32_t c = 0; c <= have[s] && party + c * s <= o->players; c++) {
        for (uint32_t j = 0; j < c; j++)
            sizes[k + j] = s;
        if (compose(o, have, s - 1, sizes, k + c, party + c * s))
            return true;
    }
    return false;
}

/* Can parties of these counts by size (the ticket's own not counted) fill the shape
 * around the ticket? Remembered per count vector (counts above what a match holds
 * change nothing). */
static bool fills(oracle *o, const uint32_t *have)
{
    uint8_t key[GF_MATCH_MAX_TEAM_SIZE + 1];
    uint32_t h = 2166136261u, capped[GF_MATCH_MAX_TEAM_SIZE + 1];
    for (uint32_t s = 1; s <= o->size; s++) {
        capped[s] = have[s] < o->players / s ? have[s] : o->players / s;
        key[s] = (uint8_t)capped[s];
        h = (h ^ key[s]) * 16777619u;
    }
    uint32_t at = h % MEMO;
    if (o->memo_val[at] >= 0 && memcmp(o->memo_key[at] + 1, key + 1, o->size) == 0)
        return o->memo_val[at];
    uint32_t sizes[GF_MATCH_MAX_PLAYERS], k = 0, party = 0;
    if (o->own > 1) {
        sizes[k++] = o->own;
        party = o->own;
    }
    bool ok = compose(o, capped, o->size, sizes, k, party);
    if (*o->budget >= 0) { /* a search the budget cut short proves nothing */
        memcpy(o->memo_key[at], key, sizeof key);
        o->memo_val[at] = ok;
    }
    return ok;
}

static int by_x(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    return (a->x > b->x) - (a->x < b->x);
}

static int by_top(const void *pa, const void *pb)
{
    const cand *a = pa, *b = pb;
    double x = a->x + a->g, y = b->x + b->g;
    return (x > y) - (x < y);
}

/* Among c[0..m) (all tolerating the ticket, all accepting one datacenter): is there a
 * range [lo, hi] holding the ticket (skill xs, gap gs) whose tickets fill the shape? */
static bool any_range(oracle *o, const cand *c, uint32_t m, double xs, double gs, cand *in,
                      cand *out)
{
    uint32_t have[GF_MATCH_MAX_TEAM_SIZE + 1];
    for (uint32_t j = 0; j <= m; j++) {
        double lo = j == m ? xs : c[j].x;
        if (lo > xs || lo < xs - gs)
            continue;
        /* The tickets tolerating lo, by skill (in) and by the highest hi they take (out). */
        uint32_t n = 0;
        for (uint32_t i = 0; i < m; i++) {
            if (c[i].x >= lo && c[i].x - c[i].g <= lo)
                in[n++] = c[i];
        }
        memcpy(out, in, n * sizeof *in);
        qsort(out, n, sizeof *out, by_top);
        memset(have, 0, (o->size + 1) * sizeof have[0]);
        *o->budget -= n;
        uint32_t a = 0, r = 0;
        while (a < n) {
            /* hi: the next skill at or above the ticket's, taking every ticket up to it */
            double hi = in[a].x > xs ? in[a].x : xs;
            if (hi > xs + gs || *o->budget < 0)
                break;
            while (a < n && (in[a].x > xs ? in[a].x : xs) <= hi)
                have[in[a++].size]++;
            while (r < n && out[r].x + out[r].g < hi) {
                if (out[r].x <= hi) /* it was taken: it leaves */
                    have[out[r].size]--;
                r++;
            }
            if (fills(o, have))
                return true;
        }
    }
    return false;
}

int gf_ref_group_exists(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now,
                        uint32_t who, const gf_ref_pool *pool, uint32_t turn, const uint32_t *cls,
                        long *budget)
{
    const gf_match_ticket *w = &t[who];
    const gf_match_queue *q = &cfg->queues[w->queue];
    gf_ref_lim lw = gf_ref_limits(cfg, w, now);
    oracle *o = malloc(sizeof *o);
    size_t n_order = pool->n;
    const uint32_t *order = pool->order;
    const double *skill = pool->skill;
    cand *c = malloc((n_order + 1) * sizeof *c), *in = malloc((n_order + 1) * sizeof *in),
         *out = malloc((n_order + 1) * sizeof *out);
    int verdict = GF_REF_NO_GROUP;
    if (!o || !c || !in || !out) {
        verdict = GF_REF_UNDECIDED;
        goto done;
    }
    o->teams = (uint32_t)q->teams;
    o->size = (uint32_t)q->team_size;
    o->players = o->teams * o->size;
    o->own = (uint32_t)w->players_len;
    o->budget = budget;
    memset(o->memo_val, -1, sizeof o->memo_val);
    /* The tickets within the ticket's own gap: a binary search on the sorted skills. */
    size_t from = 0, to = n_order;
    if (isfinite(lw.gap)) {
        size_t a = 0, b = n_order;
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (skill[order[mid]] < lw.skill - lw.gap)
                a = mid + 1;
            else
                b = mid;
        }
        from = a;
        b = n_order;
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (skill[order[mid]] <= lw.skill + lw.gap)
                a = mid + 1;
            else
                b = mid;
        }
        to = a;
    }
    for (uint32_t dc = 0; dc < cfg->datacenters_len; dc++) {
        double own = ping_at(w, dc);
        if (isnan(own) || own > lw.ping_limit)
            continue;
        uint32_t m = 0, players = o->own;
        for (size_t k = from; k < to; k++) {
            uint32_t i = order[k];
            if (i == who || pool->gone[i] <= turn || (cls && cls[i] != cls[who]))
                continue;
            gf_ref_lim li = gf_ref_limits(cfg, &t[i], now);
            double p = ping_at(&t[i], dc), d = fabs(li.skill - lw.skill);
            if (isnan(p) || p > li.ping_limit || d > li.gap || d > lw.gap)
                continue;
            c[m++] = (cand){li.skill, li.gap, (uint32_t)t[i].players_len};
            players += (uint32_t)t[i].players_len;
        }
        *budget -= (long)(to - from);
        if (players < o->players)
            continue;
        qsort(c, m, sizeof *c, by_x);
        if (any_range(o, c, m, lw.skill, lw.gap, in, out)) {
            verdict = GF_REF_GROUP;
            break;
        }
        if (*budget < 0)
            break;
    }
    if (verdict == GF_REF_NO_GROUP && *budget < 0)
        verdict = GF_REF_UNDECIDED;
done:
    free(o);
    free(c);
    free(in);
    free(out);
    return verdict;
}

/* ---- the pool at each turn, and the audit of a tick ------------------------------------- */

typedef struct keyed {
    double skill;
    uint32_t i;
} keyed;

static int by_skill(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    return (a->skill > b->skill) - (a->skill < b->skill);
}

int gf_ref_pool_make(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                     const gf_match_result *res, gf_ref_pool *out)
{
    memset(out, 0, sizeof *out);
    out->order = malloc((n + 1) * sizeof *out->order);
    out->skill = malloc((n + 1) * sizeof *out->skill);
    out->gone = malloc((n + 1) * sizeof *out->gone);
    if (!out->order || !out->skill || !out->gone) {
        gf_ref_pool_free(out);
        return -1;
    }
    out->n = n;
    for (size_t i = 0; i < n; i++)
        out->gone[i] = UINT32_MAX;
    for (size_t k = 0; k < res->unmatched_len; k++) {
        const gf_match_unmatched *u = &res->unmatched[k];
        if (u->why == GF_MATCH_WHY_INVALID || u->why == GF_MATCH_WHY_EXPIRED)
            out->gone[u->ticket] = 0;
    }
    for (size_t m = 0; m < res->matches_len; m++) {
        for (uint32_t j = 0; j < res->matches[m].members_len; j++)
            out->gone[res->matches[m].members[j].ticket] = (uint32_t)m + 1;
    }
    keyed *k = malloc((n + 1) * sizeof *k);
    if (!k) {
        gf_ref_pool_free(out);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        /* An invalid ticket is never in the pool (its queue or skill may be anything). */
        out->skill[i] = out->gone[i] ? gf_ref_limits(cfg, &t[i], now).skill : 0;
        k[i] = (keyed){out->skill[i], (uint32_t)i};
    }
    qsort(k, n, sizeof *k, by_skill);
    for (size_t i = 0; i < n; i++)
        out->order[i] = k[i].i;
    free(k);
    return 0;
}

void gf_ref_pool_free(gf_ref_pool *p)
{
    free(p->order);
    free(p->skill);
    free(p->gone);
    memset(p, 0, sizeof *p);
}

/* The `w` tickets of the pool at turn `turn` nearest to ticket `who` (by skill, or by
 * queue time where its queue is ping_first, as the engine's walk goes), sorted by skill
 * into out[]. Returns how many. */
static uint32_t nearest(const gf_match_config *cfg, const gf_match_ticket *t,
                        const gf_ref_pool *pool, const uint32_t *by_time, uint32_t who,
                        uint32_t turn, uint32_t w, uint32_t *out)
{
    bool fifo = cfg->queues[t[who].queue].mode == GF_MATCH_PING_FIRST;
    const uint32_t *order = fifo ? by_time : pool->order;
    size_t at = 0;
    while (order[at] != who)
        at++;
    size_t l = at, r = at + 1;
    uint32_t k = 0;
    while (k < w && (l > 0 || r < pool->n)) {
        /* The nearer side; the walk sends ties left. */
        double dl = INFINITY, dr = INFINITY;
        if (l > 0)
            dl = fifo ? (double)(t[who].queued_ms - t[order[l - 1]].queued_ms)
                      : pool->skill[who] - pool->skill[order[l - 1]];
        if (r < pool->n)
            dr = fifo ? (double)(t[order[r]].queued_ms - t[who].queued_ms)
                      : pool->skill[order[r]] - pool->skill[who];
        uint32_t i = dl <= dr ? order[--l] : order[r++];
        if (pool->gone[i] > turn)
            out[k++] = i;
    }
    /* By skill, for the oracle. */
    for (uint32_t a = 1; a < k; a++) {
        uint32_t v = out[a], b = a;
        for (; b > 0 && pool->skill[out[b - 1]] > pool->skill[v]; b--)
            out[b] = out[b - 1];
        out[b] = v;
    }
    return k;
}

void gf_ref_check_turns(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                        const gf_match_result *res, gf_ref_turns *out)
{
    gf_ref_pool pool, win;
    memset(out, 0, sizeof *out);
    if (gf_ref_pool_make(cfg, t, n, now, res, &pool) != 0)
        return;
    /* The engine's walk window: 4 x search_window tickets, the window at least twice a
     * match's players (tick.c). */
    const gf_match_queue *q = &cfg->queues[0];
    uint32_t w = (uint32_t)cfg->search_window, players = (uint32_t)(q->teams * q->team_size);
    w = 4 * (w > 2 * players ? w : 2 * players);
    keyed *kt = malloc((n + 1) * sizeof *kt);
    uint32_t *by_time = malloc((n + 1) * sizeof *by_time), *near = malloc((w + 1) * sizeof *near);
    if (!kt || !by_time || !near)
        goto out;
    for (size_t i = 0; i < n; i++)
        kt[i] = (keyed){(double)t[i].queued_ms, (uint32_t)i};
    qsort(kt, n, sizeof *kt, by_skill);
    for (size_t i = 0; i < n; i++)
        by_time[i] = kt[i].i;
    win = pool;
    win.order = near;
    for (size_t k = 0; k < res->unmatched_len; k++) {
        const gf_match_unmatched *u = &res->unmatched[k];
        if (u->turn == GF_MATCH_NONE)
            continue;
        long budget = 2000000; /* steps per ticket */
        int v = gf_ref_group_exists(cfg, t, now, u->ticket, &pool, u->turn, NULL, &budget);
        if (gf_ref_settled(cfg, &t[u->ticket], now)) {
            out->capped++;
            out->capped_group += v == GF_REF_GROUP;
            out->capped_undecided += v == GF_REF_UNDECIDED;
            continue;
        }
        out->below++;
        out->below_group += v == GF_REF_GROUP;
        out->below_undecided += v == GF_REF_UNDECIDED;
        if (v != GF_REF_GROUP)
            continue;
        /* Was the group within what the walk looks at? */
        win.n = nearest(cfg, t, &pool, by_time, u->ticket, u->turn, w, near);
        budget = 2000000;
        out->below_in_window += gf_ref_group_exists(cfg, t, now, u->ticket, &win, u->turn, NULL,
                                                    &budget) == GF_REF_GROUP;
    }
out:
    free(kt);
    free(by_time);
    free(near);
    gf_ref_pool_free(&pool);
}
