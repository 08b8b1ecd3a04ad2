/*
 * tick.c — one tick of one tick group (the steps are in matcher.h), and the QUEUED
 * status pushes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/match/rules.h"
#include "gamefn/tickets/status.h"
#include "tick_int.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x

static int reason_of(uint8_t why)
{
    switch (why) {
    case GF_MATCH_WHY_POPULATION:
        return RS(POPULATION);
    case GF_MATCH_WHY_SKILL:
        return RS(SKILL);
    case GF_MATCH_WHY_PING:
        return RS(PING);
    case GF_MATCH_WHY_NO_COMMON_DC:
        return RS(NO_COMMON_DATACENTER);
    case GF_MATCH_WHY_SHAPE:
        return RS(SHAPE);
    default:
        return 0; /* invalid or expired: no QUEUED push */
    }
}

/* A QUEUED push for every unmatched ticket that is due one. */
static void push_unmatched(tick_ctx *c, const gf_match_result *res)
{
    matcher *m = c->m;
    const gf_match_config *cfg = &m->tables.cfg;
    for (size_t i = 0; i < res->unmatched_len; i++) {
        const gf_match_unmatched *u = &res->unmatched[i];
        const mm_ref *r = c->pool_refs[u->ticket];
        int reason = reason_of(u->why);
        if (!reason || !mm_mirror_push_due(m->mirror, r->rec->ticket_id, reason, c->now,
                                           m->cfg->status_interval_ms))
            continue;
        const gf_match_queue *q = &cfg->queues[r->et.queue];
        int64_t age = gf_match_ticket_age(&r->et, c->now);
        double skill = 0, sigma = 0;
        gf_match_limits l;
        gf_match_ticket_skill(q, &r->et, &skill, &sigma);
        gf_match_rules_limits(q, age, sigma, &l);
        Gamefn__V1__TicketLimits lim = GAMEFN__V1__TICKET_LIMITS__INIT;
        lim.skill_ignored = isinf(l.skill_gap);
        lim.skill_gap = lim.skill_ignored ? 0 : l.skill_gap;
        lim.ping_ms = (uint32_t)l.ping_ms;
        uint32_t wait = 0;
        gf_match_wait_estimate est;
        if (r->et.region != GF_MATCH_REGION_AUTO &&
            gf_match_wait_get(c->g->wait, r->et.queue, r->et.region, skill, c->now, &est) ==
                GF_OK &&
            est.wait_ms > age)
            wait = (uint32_t)(est.wait_ms - age);
        gf_ticket_status st;
        uint8_t *buf = NULL;
        size_t len = 0;
        gf_ticket_status_queued(r->rec, r->rev, reason, &lim, wait, c->now, &st);
        if (gf_ticket_status_pack(&st, &buf, &len) == GF_OK) {
            gf_mmstore_push(m->store, r->rec->ticket_id, buf, len);
            atomic_fetch_add(&m->n.pushes, 1);
        }
        free(buf);
    }
}

static void log_summary(matcher *m, mm_group *g, int64_t now, size_t live)
{
    if (now - g->last_log_ms < 10000)
        return;
    g->last_log_ms = now;
    gf_log_info("matcher",
                "group=%s live=%zu ticks=%lld matches=%lld claim_conflicts=%lld "
                "rollbacks=%lld released=%lld timed_out=%lld",
                m->tables.groups[g->index].name, live, (long long)atomic_load(&m->n.ticks),
                (long long)atomic_load(&m->n.matches),
                (long long)atomic_load(&m->n.claim_conflicts),
                (long long)atomic_load(&m->n.rollbacks), (long long)atomic_load(&m->n.released),
                (long long)atomic_load(&m->n.timed_out));
}

void matcher_tick(matcher *m, mm_group *g, int64_t tick_seq)
{
    if (!mm_mirror_ready(m->mirror))
        return;
    tick_ctx c = {.m = m, .g = g, .now = gf_clock_unix_ms(), .tick_seq = tick_seq};
    mm_ref **refs = NULL;
    size_t n = mm_mirror_snapshot(m->mirror, g->index, &refs);
    mm_ref **ending = malloc((n ? n : 1) * sizeof *ending);
    mm_ref **expired = malloc((n ? n : 1) * sizeof *expired);
    c.pool = malloc((n ? n : 1) * sizeof *c.pool);
    c.pool_refs = malloc((n ? n : 1) * sizeof *c.pool_refs);
    gf_match_result *res = NULL;
    if (!refs || !ending || !expired || !c.pool || !c.pool_refs)
        goto out;
    atomic_fetch_add(&m->n.ticks, 1);
    size_t nend = 0, nexp = 0;
    for (size_t i = 0; i < n; i++) {
        mm_ref *r = refs[i];
        if (r->rec->state == ST(CLAIMED)) {
            if (r->rec->claim && r->rec->claim->lease_expires_unix_ms <= c.now)
                expired[nexp++] = r;
        } else if (r->engine != GF_OK || c.now >= r->rec->expires_unix_ms) {
            ending[nend++] = r;
        } else {
            c.pool[c.npool] = r->et;
            c.pool_refs[c.npool++] = r;
        }
    }
    tick_end_tickets(&c, ending, nend);
    tick_release_expired(&c, expired, nexp);
    /* MATCHES is full: ending and releasing go on, matching waits (matcher.h). */
    if (gf_clock_mono_ms() < atomic_load(&m->matches_full_until_ms))
        goto out;
    gf_err err = gf_match_tick_ws(g->ws, &m->tables.cfg, c.pool, c.npool, c.now, &res);
    if (err != GF_OK) {
        gf_log_error("matching tick failed", "group=%s err=%s", m->tables.groups[g->index].name,
                     gf_err_str(err));
        goto out;
    }
    tick_claim(&c, res);
    push_unmatched(&c, res);
    gf_match_wait_learn(g->wait, c.pool, c.npool, res, c.now);
    log_summary(m, g, c.now, n);
out:
    gf_match_result_free(res);
    if (refs)
        mm_ref_release(m->mirror, refs, n);
    free(refs);
    free(ending);
    free(expired);
    free(c.pool);
    free(c.pool_refs);
}
