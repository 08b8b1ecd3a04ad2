/*
 * bench/match_check.c — the independent checker of `gamefn-bench match`.
 *
 * Design notes: nothing here calls the engine's rule, datacenter or team code. Limits are
 * recomputed from the formulas with the raw (unrounded) pings, so a rounding or
 * aggregation slip in the engine shows up as a violation. Violations are counted per
 * match (a match breaking several rules counts once) plus one per reused ticket or
 * player.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match_ref.h"

gf_ref_lim gf_ref_limits(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now)
{
    const gf_match_queue *q = &cfg->queues[t->queue];
    const gf_match_curve *c = &q->curve;
    double sum = 0, top = -INFINITY, var = 0;
    for (size_t i = 0; i < t->players_len; i++) {
        sum += t->players[i].skill;
        top = fmax(top, t->players[i].skill);
        var += t->players[i].sigma * t->players[i].sigma;
    }
    size_t n = t->players_len;
    gf_ref_lim l;
    l.skill = (q->party_skill == GF_MATCH_PARTY_MAX ? top : sum / n) + q->premade_bonus * (n - 1);
    double age_ms = now > t->queued_ms ? (double)(now - t->queued_ms) : 0;
    double gap = c->skill_base + c->skill_alpha * pow(age_ms / 1000.0, c->skill_gamma) +
                 c->sigma_widen * sqrt(var / n);
    l.gap = q->mode == GF_MATCH_PING_FIRST ? INFINITY : fmin(gap, c->skill_cap);
    double steps = floor(age_ms / (double)c->ping_step_ms);
    double ping = fmin((double)c->ping_cap_ms, c->ping_base_ms + c->ping_beta_ms * steps);
    l.ping_limit = q->mode == GF_MATCH_SBMM ? (double)c->ping_cap_ms : ping;
    return l;
}

bool gf_ref_settled(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now)
{
    const gf_match_queue *q = &cfg->queues[t->queue];
    gf_ref_lim l = gf_ref_limits(cfg, t, now);
    bool skill =
        q->mode == GF_MATCH_PING_FIRST || l.gap >= q->curve.skill_cap || q->curve.skill_alpha == 0;
    bool ping = q->mode == GF_MATCH_SBMM || l.ping_limit >= (double)q->curve.ping_cap_ms ||
                q->curve.ping_beta_ms == 0;
    return skill && ping;
}

static double ping_to(const gf_match_ticket *t, uint32_t dc)
{
    for (size_t i = 0; i < t->pings_len; i++) {
        if (t->pings[i].dc == dc)
            return t->pings[i].ms;
    }
    return NAN;
}

static double best_ping(const gf_match_ticket *t)
{
    double b = INFINITY;
    for (size_t i = 0; i < t->pings_len; i++)
        b = fmin(b, t->pings[i].ms);
    return b;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static double p95(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t at = (size_t)ceil(0.95 * (double)n) - 1;
    return v[at < n ? at : n - 1];
}

static void report(size_t *shown, size_t match, const char *what)
{
    if ((*shown)++ < 5)
        fprintf(stderr, "violation: match %zu: %s\n", match, what);
}

int gf_ref_from_result(const gf_match_result *res, gf_ref_matches *out)
{
    size_t members = 0, dcs = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < res->matches_len; i++) {
        members += res->matches[i].members_len;
        dcs += res->matches[i].dcs_len;
    }
    out->m = malloc((res->matches_len + 1) * sizeof *out->m);
    out->member = malloc((members + 1) * sizeof *out->member);
    out->team = malloc((members + 1) * sizeof *out->team);
    out->dcs = malloc((dcs + 1) * sizeof *out->dcs);
    if (!out->m || !out->member || !out->team || !out->dcs) {
        gf_ref_matches_free(out);
        return -1;
    }
    for (size_t i = 0; i < res->matches_len; i++) {
        const gf_match *m = &res->matches[i];
        gf_ref_match *r = &out->m[out->n++];
        r->first = (uint32_t)out->members;
        r->len = m->members_len;
        r->dc_first = (uint32_t)out->ndcs;
        r->dc_len = m->dcs_len;
        r->starved = m->starved;
        for (uint32_t j = 0; j < m->members_len; j++) {
            out->member[out->members] = m->members[j].ticket;
            out->team[out->members++] = m->members[j].team;
        }
        for (uint32_t j = 0; j < m->dcs_len; j++)
            out->dcs[out->ndcs++] = m->dcs[j].dc;
    }
    return 0;
}

void gf_ref_matches_free(gf_ref_matches *m)
{
    free(m->m);
    free(m->member);
    free(m->team);
    free(m->dcs);
    memset(m, 0, sizeof *m);
}

/* Checks one match; returns true if it breaks a rule. Adds its quality figures. */
/* Quality figures gathered over the matches. */
typedef struct figures {
    double *spread;       /* [matches] */
    double *spread_plain; /* [matches], of those not formed by the starvation fallback */
    bool *starved;        /* [matches]: formed by the engine's starvation fallback */
    bool *below;          /* [matches]: no member's limits are both at their caps */
    double *dping;        /* [members] */
    size_t ndping;
    double *dping_plain; /* [members], of matches not formed by the fallback */
    size_t ndping_plain;
    double team_diff;
} figures;

static bool check_one(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                      const gf_ref_matches *ms, size_t mi, uint8_t *used, figures *f, size_t *shown)
{
    const gf_ref_match *m = &ms->m[mi];
    bool bad = false;
    double lo = INFINITY, hi = -INFINITY;
    gf_ref_lim l[GF_MATCH_MAX_PLAYERS];
    uint32_t players = 0;

    if (m->len == 0 || m->len > GF_MATCH_MAX_PLAYERS || m->dc_len == 0) {
        report(shown, mi, "empty match or no datacenter");
        return true;
    }
    const gf_match_queue *q = NULL;
    for (uint32_t j = 0; j < m->len; j++) {
        uint32_t ti = ms->member[m->first + j];
        if (ti >= n) {
            report(shown, mi, "ticket index out of range");
            return true;
        }
        if (used[ti]++) {
            report(shown, mi, "ticket already in another match");
            bad = true;
        }
        l[j] = gf_ref_limits(cfg, &t[ti], now);
        lo = fmin(lo, l[j].skill);
        hi = fmax(hi, l[j].skill);
        players += (uint32_t)t[ti].players_len;
        if (!q)
            q = &cfg->queues[t[ti].queue];
    }
    /* Shape: exact player count, every team exactly full, parties whole by construction. */
    uint32_t team_players[GF_MATCH_MAX_TEAMS] = {0};
    double team_total[GF_MATCH_MAX_TEAMS] = {0};
    if (players != (uint32_t)(q->teams * q->team_size)) {
        report(shown, mi, "player count differs from the shape");
        bad = true;
    }
    for (uint32_t j = 0; j < m->len; j++) {
        uint16_t team = ms->team[m->first + j];
        uint32_t ti = ms->member[m->first + j];
        if (team >= q->teams) {
            report(shown, mi, "team index out of range");
            bad = true;
            continue;
        }
        team_players[team] += (uint32_t)t[ti].players_len;
        team_total[team] += l[j].skill * (double)t[ti].players_len;
    }
    double tmin = INFINITY, tmax = -INFINITY;
    for (int64_t k = 0; k < q->teams; k++) {
        if (team_players[k] != (uint32_t)q->team_size) {
            report(shown, mi, "a team is not exactly full");
            bad = true;
        }
        tmin = fmin(tmin, team_total[k]);
        tmax = fmax(tmax, team_total[k]);
    }
    f->team_diff += tmax - tmin;
    /* Each member's own skill limit against every other member. */
    for (uint32_t j = 0; j < m->len; j++) {
        if (fmax(hi - l[j].skill, l[j].skill - lo) > l[j].gap) {
            report(shown, mi, "a member's own skill limit is broken");
            bad = true;
            break;
        }
    }
    /* Each member's own ping limit, for the chosen and every fallback datacenter. Totals
     * count every player: a ticket's (exact) ping times its players. */
    double total_chosen = 0;
    for (uint32_t k = 0; k < m->dc_len; k++) {
        uint32_t dc = ms->dcs[m->dc_first + k];
        double total = 0;
        for (uint32_t j = 0; j < m->len; j++) {
            const gf_match_ticket *tk = &t[ms->member[m->first + j]];
            double p = ping_to(tk, dc);
            if (isnan(p) || p > l[j].ping_limit) {
                report(shown, mi,
                       k ? "a fallback datacenter breaks a member's ping limit"
                         : "the chosen datacenter breaks a member's ping limit");
                bad = true;
                break;
            }
            total += p * (double)tk->players_len;
        }
        if (k == 0)
            total_chosen = total;
    }
    /* The chosen datacenter has the lowest total ping of all acceptable ones. */
    for (uint32_t dc = 0; dc < cfg->datacenters_len; dc++) {
        double total = 0;
        bool ok = true;
        for (uint32_t j = 0; j < m->len && ok; j++) {
            const gf_match_ticket *tk = &t[ms->member[m->first + j]];
            double p = ping_to(tk, dc);
            ok = !isnan(p) && p <= l[j].ping_limit;
            total += p * (double)tk->players_len;
        }
        /* Sums of doubles in another order may differ in the last bits. */
        if (ok && total < total_chosen - 1e-9 * (1 + total_chosen)) {
            report(shown, mi, "a datacenter with a lower total ping was acceptable");
            bad = true;
            break;
        }
    }
    f->spread[mi] = hi - lo;
    f->starved[mi] = m->starved;
    f->below[mi] = true;
    for (uint32_t j = 0; j < m->len; j++)
        f->below[mi] &= !gf_ref_settled(cfg, &t[ms->member[m->first + j]], now);
    uint32_t chosen = ms->dcs[m->dc_first];
    for (uint32_t j = 0; j < m->len; j++) {
        const gf_match_ticket *tk = &t[ms->member[m->first + j]];
        double p = ping_to(tk, chosen);
        if (isnan(p))
            continue;
        f->dping[f->ndping++] = p - best_ping(tk);
        if (!f->starved[mi])
            f->dping_plain[f->ndping_plain++] = p - best_ping(tk);
    }
    return bad;
}

void gf_ref_check(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                  const gf_ref_matches *m, gf_ref_quality *q)
{
    uint8_t *used = calloc(n + 1, 1);
    figures f = {.spread = malloc((m->n + 1) * sizeof *f.spread),
                 .spread_plain = malloc((m->n + 1) * sizeof *f.spread_plain),
                 .starved = malloc((m->n + 1) * sizeof *f.starved),
                 .below = malloc((m->n + 1) * sizeof *f.below),
                 .dping = malloc((m->members + 1) * sizeof *f.dping),
                 .dping_plain = malloc((m->members + 1) * sizeof *f.dping_plain)};
    const char **ids = NULL;
    size_t shown = 0, nids = 0;

    memset(q, 0, sizeof *q);
    if (!used || !f.spread || !f.spread_plain || !f.starved || !f.below || !f.dping ||
        !f.dping_plain)
        goto out;
    q->matches = m->n;
    for (size_t i = 0; i < m->n; i++) {
        if (check_one(cfg, t, n, now, m, i, used, &f, &shown))
            q->violations++;
    }
    for (size_t i = 0; i < n; i++) {
        if (used[i]) {
            q->tickets++;
            q->players += t[i].players_len;
        }
    }
    /* No player in two matches. */
    ids = malloc((q->players + 1) * sizeof *ids);
    if (!ids)
        goto out;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; used[i] && k < t[i].players_len; k++)
            ids[nids++] = t[i].players[k].id;
    }
    qsort(ids, nids, sizeof *ids, cmp_str);
    for (size_t i = 1; i < nids; i++) {
        if (strcmp(ids[i], ids[i - 1]) == 0) {
            report(&shown, 0, "a player is in two matches");
            q->violations++;
        }
    }
    double s = 0, s_plain = 0;
    for (size_t i = 0; i < m->n; i++) {
        s += f.spread[i];
        q->below_matches += f.below[i];
        if (!f.starved[i]) {
            s_plain += f.spread[i];
            f.spread_plain[q->plain_matches++] = f.spread[i];
        }
    }
    q->spread_mean = m->n ? s / (double)m->n : 0;
    q->spread_p95 = p95(f.spread, m->n);
    q->plain_spread_mean = q->plain_matches ? s_plain / (double)q->plain_matches : 0;
    q->plain_spread_p95 = p95(f.spread_plain, q->plain_matches);
    s = 0;
    for (size_t i = 0; i < f.ndping; i++)
        s += f.dping[i];
    q->dping_mean = f.ndping ? s / (double)f.ndping : 0;
    q->dping_p95 = p95(f.dping, f.ndping);
    q->plain_dping_p95 = p95(f.dping_plain, f.ndping_plain);
    q->team_diff_mean = m->n ? f.team_diff / (double)m->n : 0;
out:
    free(ids);
    free(used);
    free(f.spread);
    free(f.spread_plain);
    free(f.starved);
    free(f.below);
    free(f.dping);
    free(f.dping_plain);
}
