/*
 * check_limits.c — every member's own limits in every committed match, recomputed.
 *
 * Design notes: nothing of the engine is called; only the queue table (parsed config) is
 * shared. For a COMMITTED match, each ticket's claim by that match gives its queue time
 * and the instant the match was formed (claimed_unix_ms: the matcher claims with the
 * tick's time, which is also Match.created_unix_ms; a Match still in MATCHES gives it
 * directly). The chosen datacenter is the one of the ticket's assignment. With t the
 * ticket's age in seconds at that instant (negative counts as 0), from its own queue:
 *   allowed_skill_gap = min(skill_cap, skill_base + skill_alpha * t^skill_gamma
 *                                      + sigma_widen * sigma)   (+inf in ping_first)
 *   allowed_ping      = min(ping_cap, ping_base + ping_beta * floor(t_ms / ping_step_ms))
 *                                                               (ping_cap in sbmm)
 * A party is one member of the match (docs/MATCHMAKING.md, "Model"): its skill is the
 * average (max with party_skill: max) of its players plus premade_bonus per player
 * beyond the first, its sigma the root mean square of theirs, its ping the one its
 * ticket gives; each of its players is held to its limits. A member breaks its limits
 * when its skill differs from another member's by more than its gap (1e-9 relative slack
 * for floating point), or its ping to the chosen datacenter is above its ping limit or
 * missing. A match counts once however many members break their limits.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_int.h"
#include "gamefn/v1/match.pb-c.h"

#define OC(x) GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_##x

typedef struct member {
    uint32_t ticket;
    const gf_match_queue *q;
    int64_t age_ms;
    double skill, gap;
    int64_t ping_limit;
    int64_t ping; /* to the assignment's datacenter; -1 = not measured */
    uint32_t dc;
} member;

static const gf_match_queue *queue_of(const gf_check *c, uint32_t name)
{
    const gf_match_config *cfg = c->p.queues;
    for (size_t i = 0; cfg && i < cfg->queues_len; i++) {
        if (strcmp(cfg->queues[i].name, c->queue_names.str[name]) == 0)
            return &cfg->queues[i];
    }
    return NULL;
}

/* Skill, gap and ping limit of ticket t at age_ms in queue q. */
static void limits(const gf_check *c, const ck_ticket *tk, const gf_match_queue *q, member *m)
{
    double sum = 0, top = -INFINITY, var = 0;
    for (uint32_t i = 0; i < tk->nmembers; i++) {
        const ck_member *p = &c->members[tk->first_member + i];
        sum += p->rating;
        top = fmax(top, p->rating);
        var += p->sigma * p->sigma;
    }
    double n = (double)tk->nmembers;
    m->skill = (q->party_skill == GF_MATCH_PARTY_MAX ? top : sum / n) + q->premade_bonus * (n - 1);
    const gf_match_curve *k = &q->curve;
    double t = (double)m->age_ms / 1000.0;
    double gap =
        k->skill_base + k->skill_alpha * pow(t, k->skill_gamma) + k->sigma_widen * sqrt(var / n);
    m->gap = q->mode == GF_MATCH_PING_FIRST ? INFINITY : fmin(k->skill_cap, gap);
    int64_t steps = k->ping_step_ms > 0 ? m->age_ms / k->ping_step_ms : 0;
    int64_t ping = k->ping_base_ms + k->ping_beta_ms * steps;
    m->ping_limit =
        q->mode == GF_MATCH_SBMM ? k->ping_cap_ms : (ping < k->ping_cap_ms ? ping : k->ping_cap_ms);
}

static int64_t ping_to(const gf_check *c, const ck_ticket *tk, uint32_t dc)
{
    for (uint32_t i = 0; i < tk->npings; i++) {
        if (c->pings[tk->first_ping + i].dc == dc)
            return c->pings[tk->first_ping + i].ms;
    }
    return -1;
}

/* Fills the members of committed match m; false when it cannot be checked. */
static bool members_of(gf_check *c, uint32_t m, member *mb, int64_t *formed)
{
    const ck_outcome *o = &c->oc[m];
    int64_t created = o->created_ms;
    const ck_rev *claims[GF_MATCH_MAX_PLAYERS];
    for (uint32_t i = 0; i < o->nasg; i++) {
        uint32_t t = c->asgs[o->first_asg + i].ticket;
        claims[i] = c->tk[t].known ? ck_claim_of(c, t, m) : NULL;
        if (!claims[i])
            return false;
        if (!o->created_ms && (!created || claims[i]->claimed_ms < created))
            created = claims[i]->claimed_ms;
    }
    for (uint32_t i = 0; i < o->nasg; i++) {
        const ck_asg *a = &c->asgs[o->first_asg + i];
        const ck_ticket *tk = &c->tk[a->ticket];
        member *x = &mb[i];
        x->ticket = a->ticket;
        x->q = queue_of(c, tk->queue);
        if (!x->q)
            return false;
        x->age_ms = created > claims[i]->queued_ms ? created - claims[i]->queued_ms : 0;
        limits(c, tk, x->q, x);
        x->dc = a->dc;
        x->ping = ping_to(c, tk, a->dc);
    }
    *formed = created;
    return true;
}

/* The first broken limit of match m, described in `why`; false when none. */
static bool broken(const gf_check *c, const member *mb, uint32_t n, char *why, size_t size)
{
    for (uint32_t i = 0; i < n; i++) {
        const member *x = &mb[i];
        const char *id = c->tickets.str[x->ticket], *dc = c->dcs.str[x->dc];
        if (x->dc != mb[0].dc) {
            snprintf(why, size, "tickets %s and %s are assigned to %s and %s",
                     c->tickets.str[mb[0].ticket], id, c->dcs.str[mb[0].dc], dc);
            return true;
        }
        if (x->ping < 0) {
            snprintf(why, size, "ticket %s (%s, %.1f s in queue) has no ping to %s", id, x->q->name,
                     (double)x->age_ms / 1000.0, dc);
            return true;
        }
        if (x->ping > x->ping_limit) {
            snprintf(why, size,
                     "ticket %s (%s, %.1f s in queue) ping %lld ms to %s > its limit %lld ms", id,
                     x->q->name, (double)x->age_ms / 1000.0, (long long)x->ping, dc,
                     (long long)x->ping_limit);
            return true;
        }
        for (uint32_t j = 0; j < n && !isinf(x->gap); j++) {
            double d = fabs(x->skill - mb[j].skill);
            if (d > x->gap + 1e-9 * (1.0 + x->gap)) {
                snprintf(why, size,
                         "ticket %s (%s, %.1f s in queue, skill %.2f) is %.2f from ticket %s "
                         "(skill %.2f) > its gap %.2f",
                         id, x->q->name, (double)x->age_ms / 1000.0, x->skill, d,
                         c->tickets.str[mb[j].ticket], mb[j].skill, x->gap);
                return true;
            }
        }
    }
    return false;
}

void ck_limits_analyse(gf_check *c)
{
    gf_check_count *n = &c->counts[CK_LIMIT_VIOLATIONS];
    if (!c->p.queues) {
        n->checked = false;
        snprintf(n->detail, sizeof n->detail, "no queue table (functions.matcher.matchmaking)");
        return;
    }
    uint64_t matches = 0;
    member *mb = malloc(GF_MATCH_MAX_PLAYERS * sizeof *mb);
    if (!mb) {
        c->nomem = true;
        return;
    }
    for (uint32_t m = 0; m < c->matches.n; m++) {
        const ck_outcome *o = &c->oc[m];
        if (o->state != OC(COMMITTED))
            continue;
        bool skipped = false;
        for (uint32_t i = 0; i < o->nasg; i++)
            skipped |= c->tk[c->asgs[o->first_asg + i].ticket].skipped;
        if (skipped)
            continue;
        matches++;
        int64_t formed = 0;
        char why[400];
        if (o->nasg > GF_MATCH_MAX_PLAYERS || !members_of(c, m, mb, &formed)) {
            c->report.totals.limits_unchecked++;
            continue;
        }
        if (broken(c, mb, o->nasg, why, sizeof why)) {
            char at[40];
            n->count++;
            ck_example(c, CK_LIMIT_VIOLATIONS, "match %s (formed %s): %s", c->matches.str[m],
                       ck_time(formed * 1000000, at, sizeof at), why);
        }
    }
    free(mb);
    snprintf(n->detail, sizeof n->detail, "%llu of %llu committed matches (%llu not checkable)",
             (unsigned long long)n->count, (unsigned long long)matches,
             (unsigned long long)c->report.totals.limits_unchecked);
}
