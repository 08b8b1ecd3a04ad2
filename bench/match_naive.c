/*
 * bench/match_naive.c — the naive reference matcher: what one would write first.
 *
 * Design notes: oldest ticket first; for each seed, every other waiting ticket is looked
 * at (all pairs, O(N) per seed, O(N^2) per tick), the compatible ones are sorted by skill
 * distance (by queue time for ping_first, which ignores skill and is first-in-first-out)
 * and added greedily while the group stays valid for every member (skill range inside
 * each member's own gap, a datacenter every member accepts, parties packable).
 * The datacenter is the acceptable one with the lowest total ping of all players. It
 * shares no code with the engine, so the benchmark compares two independent
 * implementations of the same rules: quality should be comparable, speed should not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gamefn/clock.h"
#include "match_ref.h"

typedef struct nt {
    double skill, gap, plimit;
    int64_t queued;
    uint32_t mask; /* datacenters accepted */
    uint32_t size;
    uint32_t index;
} nt;

typedef struct cand {
    double dist;
    uint32_t j;
} cand;

static int by_dist(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

typedef struct aged {
    int64_t queued;
    uint32_t index;
} aged;

static int by_age(const void *a, const void *b)
{
    const aged *x = a, *y = b;
    if (x->queued != y->queued)
        return x->queued < y->queued ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static double ping_of(const gf_match_ticket *t, uint32_t dc)
{
    for (size_t i = 0; i < t->pings_len; i++) {
        if (t->pings[i].dc == dc)
            return t->pings[i].ms;
    }
    return NAN;
}

static void prepare(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now, nt *o,
                    uint32_t index)
{
    const gf_match_queue *q = &cfg->queues[t->queue];
    double sum = 0, top = -INFINITY, var = 0;
    for (size_t i = 0; i < t->players_len; i++) {
        sum += t->players[i].skill;
        top = fmax(top, t->players[i].skill);
        var += t->players[i].sigma * t->players[i].sigma;
    }
    double n = (double)t->players_len;
    double age = now > t->queued_ms ? (double)(now - t->queued_ms) / 1000.0 : 0;
    o->skill = (q->party_skill == GF_MATCH_PARTY_MAX ? top : sum / n) + q->premade_bonus * (n - 1);
    o->gap = fmin(q->curve.skill_cap, q->curve.skill_base +
                                          q->curve.skill_alpha * pow(age, q->curve.skill_gamma) +
                                          q->curve.sigma_widen * sqrt(var / n));
    double steps = floor(age * 1000.0 / (double)q->curve.ping_step_ms);
    o->plimit = fmin((double)q->curve.ping_cap_ms,
                     (double)q->curve.ping_base_ms + (double)q->curve.ping_beta_ms * steps);
    if (q->mode == GF_MATCH_PING_FIRST)
        o->gap = INFINITY;
    if (q->mode == GF_MATCH_SBMM)
        o->plimit = (double)q->curve.ping_cap_ms;
    o->queued = t->queued_ms;
    o->size = (uint32_t)t->players_len;
    o->index = index;
    o->mask = 0;
    for (size_t i = 0; i < t->pings_len; i++) {
        if (t->pings[i].ms <= o->plimit)
            o->mask |= 1u << t->pings[i].dc;
    }
}

/* Can parties of these sizes be placed into `teams` teams of `size` (not necessarily
 * full)? Plain backtracking; assigns team[] when it succeeds. */
static bool pack(const uint32_t *sizes, uint32_t k, uint32_t i, uint32_t *room, uint32_t teams,
                 uint16_t *team)
{
    if (i == k)
        return true;
    for (uint32_t b = 0; b < teams; b++) {
        if (room[b] < sizes[i])
            continue;
        room[b] -= sizes[i];
        team[i] = (uint16_t)b;
        bool ok = pack(sizes, k, i + 1, room, teams, team);
        room[b] += sizes[i];
        if (ok)
            return true;
    }
    return false;
}

static bool packs(const uint32_t *sizes, uint32_t k, uint32_t teams, uint32_t size, uint16_t *team)
{
    uint32_t room[GF_MATCH_MAX_TEAMS];
    uint32_t sorted[GF_MATCH_MAX_PLAYERS] = {0};
    uint32_t idx[GF_MATCH_MAX_PLAYERS];
    uint16_t t2[GF_MATCH_MAX_PLAYERS];
    for (uint32_t b = 0; b < teams; b++)
        room[b] = size;
    /* Largest first makes the backtracking quick. */
    for (uint32_t i = 0; i < k; i++) {
        uint32_t j = i;
        while (j > 0 && sizes[idx[j - 1]] < sizes[i]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    for (uint32_t i = 0; i < k; i++)
        sorted[i] = sizes[idx[i]];
    if (!pack(sorted, k, 0, room, teams, t2))
        return false;
    for (uint32_t i = 0; i < k && team; i++)
        team[idx[i]] = t2[i];
    return true;
}

int gf_ref_naive(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                 gf_ref_matches *out, void (*progress)(size_t done, size_t total))
{
    nt *v = calloc(n + 1, sizeof *v);
    aged *order = calloc(n + 1, sizeof *order);
    uint8_t *matched = calloc(n + 1, 1);
    cand *c = calloc(n + 1, sizeof *c);
    int rc = -1;
    double last = ((double)gf_clock_mono_ns() / 1e9);

    memset(out, 0, sizeof *out);
    out->m = calloc(n + 1, sizeof *out->m);
    out->member = calloc(n + 1, sizeof *out->member);
    out->team = calloc(n + 1, sizeof *out->team);
    out->dcs = calloc((n + 1) * cfg->datacenters_len, sizeof *out->dcs);
    if (!v || !order || !matched || !c || !out->m || !out->member || !out->team || !out->dcs)
        goto out;
    for (size_t i = 0; i < n; i++) {
        prepare(cfg, &t[i], now, &v[i], (uint32_t)i);
        order[i] = (aged){t[i].queued_ms, (uint32_t)i};
    }
    qsort(order, n, sizeof *order, by_age);

    for (size_t si = 0; si < n; si++) {
        if (progress && (si & 63) == 0 && ((double)gf_clock_mono_ns() / 1e9) - last >= 2.0) {
            progress(si, n);
            last = ((double)gf_clock_mono_ns() / 1e9);
        }
        uint32_t s = order[si].index;
        if (matched[s] || v[s].mask == 0)
            continue;
        const gf_match_queue *q = &cfg->queues[t[s].queue];
        uint32_t need = (uint32_t)(q->teams * q->team_size);
        /* Each mode's own order: nearest skill first, or oldest first for ping_first
         * (it ignores skill and is first-in-first-out). */
        bool fifo = q->mode == GF_MATCH_PING_FIRST;
        size_t nc = 0;
        for (uint32_t j = 0; j < n; j++) { /* all pairs */
            if (j == s || matched[j] || t[j].queue != t[s].queue || !(v[s].mask & v[j].mask))
                continue;
            double d = fabs(v[j].skill - v[s].skill);
            if (d <= v[s].gap && d <= v[j].gap)
                c[nc++] = (cand){fifo ? (double)v[j].queued : d, j};
        }
        qsort(c, nc, sizeof *c, by_dist);
        uint32_t grp[GF_MATCH_MAX_PLAYERS], sizes[GF_MATCH_MAX_PLAYERS];
        uint32_t k = 1, players = v[s].size, common = v[s].mask;
        double lo = v[s].skill, hi = v[s].skill;
        grp[0] = s;
        sizes[0] = v[s].size;
        for (size_t i = 0; i < nc && players < need; i++) {
            const nt *x = &v[c[i].j];
            if (players + x->size > need || !(common & x->mask))
                continue;
            double nlo = fmin(lo, x->skill), nhi = fmax(hi, x->skill);
            bool ok = nhi - nlo <= x->gap;
            for (uint32_t g = 0; g < k && ok; g++) {
                const nt *y = &v[grp[g]];
                ok = fmax(nhi - y->skill, y->skill - nlo) <= y->gap &&
                     fmax(nhi - x->skill, x->skill - nlo) <= x->gap;
            }
            sizes[k] = x->size;
            if (!ok || (x->size > 1 &&
                        !packs(sizes, k + 1, (uint32_t)q->teams, (uint32_t)q->team_size, NULL)))
                continue;
            grp[k++] = c[i].j;
            players += x->size;
            common &= x->mask;
            lo = nlo;
            hi = nhi;
        }
        if (players != need)
            continue;
        /* Datacenters every member accepts, lowest total ping over all players first. */
        uint32_t dcs[GF_MATCH_MAX_DCS];
        double tot[GF_MATCH_MAX_DCS];
        uint32_t nd = 0;
        for (uint32_t d = 0; d < cfg->datacenters_len; d++) {
            if (!(common & (1u << d)))
                continue;
            double sum = 0;
            for (uint32_t g = 0; g < k; g++)
                sum += ping_of(&t[grp[g]], d) * (double)v[grp[g]].size;
            uint32_t j = nd++;
            while (j > 0 && tot[j - 1] > sum) {
                dcs[j] = dcs[j - 1];
                tot[j] = tot[j - 1];
                j--;
            }
            dcs[j] = d;
            tot[j] = sum;
        }
        uint16_t team[GF_MATCH_MAX_PLAYERS];
        if (!packs(sizes, k, (uint32_t)q->teams, (uint32_t)q->team_size, team))
            continue;
        gf_ref_match *m = &out->m[out->n++];
        m->first = (uint32_t)out->members;
        m->len = k;
        m->dc_first = (uint32_t)out->ndcs;
        m->dc_len = nd;
        m->starved = false; /* no starvation fallback here */
        for (uint32_t g = 0; g < k; g++) {
            matched[grp[g]] = 1;
            out->member[out->members] = grp[g];
            out->team[out->members++] = team[g];
        }
        for (uint32_t j = 0; j < nd; j++)
            out->dcs[out->ndcs++] = dcs[j];
    }
    rc = 0;
out:
    if (rc != 0)
        gf_ref_matches_free(out);
    free(v);
    free(order);
    free(matched);
    free(c);
    return rc;
}
