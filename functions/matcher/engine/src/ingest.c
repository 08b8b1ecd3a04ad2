/*
 * ingest.c — the one pass over the caller's tickets: validation, expiry, and everything
 * the later steps need, in compact form.
 *
 * Design notes: the caller's tickets are scattered over memory (ids, players, pings in
 * separate arrays), and at 100k tickets reading them is a large share of a tick. So they
 * are read once, in input order: each valid ticket becomes a gf_mt_tk record (aggregated
 * skill, limits at `now`, accepted-datacenter mask, best ping, region) plus a row of
 * pings rounded up to whole milliseconds, and the hashes of its ticket and player ids are
 * taken while their lengths are checked. Nothing after this step reads the input again,
 * except the duplicate check's string comparisons on hash matches and attribute values.
 *
 * Rounding pings up is exact against integer limits: ceil(p) <= L iff p <= L.
 */
#include <math.h>
#include <string.h>

#include "internal.h"

/* From which age (ms) a queue's skill gap is surely its cap, so pow() can be skipped:
 * base + alpha * t^gamma >= cap for t >= ((cap - base) / alpha)^(1 / gamma). A
 * millisecond of margin is far above pow's rounding error (the curve rises by more than
 * 1e-3 per ms there), so the shortcut never changes a limit. */
static int64_t gap_capped_from(const gf_match_queue *q)
{
    const gf_match_curve *cv = &q->curve;
    if (q->mode == GF_MATCH_PING_FIRST || cv->skill_alpha <= 0)
        return INT64_MAX;
    if (cv->skill_base >= cv->skill_cap)
        return 0;
    double t = pow((cv->skill_cap - cv->skill_base) / cv->skill_alpha, 1.0 / cv->skill_gamma);
    double ms = ceil(t * 1000.0) + 1;
    return ms < (double)GF_MATCH_MAX_AGE_MS ? (int64_t)ms : INT64_MAX;
}

/* Derives the record and ping row of a valid ticket. */
static void derive(gf_mt_ctx *c, size_t i, gf_mt_tk *k, uint16_t *row)
{
    const gf_match_ticket *t = &c->in[i];
    const gf_match_queue *q = &c->cfg->queues[t->queue];
    double skill = 0, sigma = 0;
    gf_match_limits lim;

    gf_match_ticket_skill(q, t, &skill, &sigma);
    int64_t age = gf_match_ticket_age(t, c->now);
    if (age >= c->gap_capped_ms[t->queue]) {
        lim.skill_gap = q->curve.skill_cap;
        lim.ping_ms =
            q->mode == GF_MATCH_SBMM ? q->curve.ping_cap_ms : gf_match_rules_ping(&q->curve, age);
    } else {
        gf_match_rules_limits(q, age, sigma, &lim);
    }
    k->skill = skill;
    k->gap = lim.skill_gap;
    k->queued = t->queued_ms < c->now ? t->queued_ms : c->now;
    k->in = (uint32_t)i;
    k->part = 0;
    k->plimit = (uint16_t)lim.ping_ms;
    k->size = (uint8_t)t->players_len;
    k->queue = (uint8_t)t->queue;
    k->dcmask = 0;
    k->best = GF_MATCH_PING_NONE;
    k->bestdc = 0;
    for (uint32_t d = 0; d < c->ndc; d++)
        row[d] = GF_MATCH_PING_NONE;
    for (size_t j = 0; j < t->pings_len; j++) {
        uint32_t d = t->pings[j].dc;
        /* Validated: finite, 0..5000. An exact ceiling without a libm call (ceil() is one
         * on baseline x86-64). */
        double raw = t->pings[j].ms;
        uint16_t ms = (uint16_t)raw;
        ms += (double)ms < raw;
        row[d] = ms;
        if (ms <= k->plimit)
            k->dcmask |= 1u << d;
        if (ms < k->best || (ms == k->best && d < k->bestdc)) {
            k->best = ms;
            k->bestdc = (uint8_t)d;
        }
    }
    k->region = t->region != GF_MATCH_REGION_AUTO ? (uint8_t)t->region : c->dc_region[k->bestdc];
}

/* The caller's tickets point to ids, players and pings elsewhere in memory; fetch them a
 * few tickets ahead so the checks do not wait on each first touch. */
static void prefetch_ticket(const gf_match_ticket *in, size_t n, size_t i)
{
    if (i + 8 < n) {
        const gf_match_ticket *t = &in[i + 8];
        __builtin_prefetch(t->id);
        __builtin_prefetch(t->players);
        __builtin_prefetch(t->pings);
        __builtin_prefetch((const char *)t->pings + 64);
    }
    if (i + 4 < n) {
        const gf_match_ticket *t = &in[i + 4];
        for (size_t j = 0; t->players && j < t->players_len && j < 4; j++)
            __builtin_prefetch(t->players[j].id);
    }
}

gf_err gf_mt_ingest(gf_mt_ctx *c)
{
    /* Player hashes at a fixed stride (the largest team size): a ticket with more players
     * is refused anyway, and no prefix sums or extra pass over the input are needed. */
    uint32_t stride = 1;
    for (uint32_t q = 0; q < c->nq; q++) {
        if ((uint32_t)c->cfg->queues[q].team_size > stride)
            stride = (uint32_t)c->cfg->queues[q].team_size;
        c->gap_capped_ms[q] = gap_capped_from(&c->cfg->queues[q]);
    }
    c->hash_stride = stride;
    c->minq = INT64_MAX;
    c->np = gf_mt_alloc(&c->mem, c->n, sizeof *c->np);
    c->rec = gf_mt_alloc(&c->mem, c->n, sizeof *c->rec);
    c->rec_ping = gf_mt_alloc(&c->mem, c->n * c->ndc, sizeof *c->rec_ping);
    c->hash_ticket = gf_mt_alloc(&c->mem, c->n, sizeof *c->hash_ticket);
    c->hash_player = gf_mt_alloc(&c->mem, c->n * stride, sizeof *c->hash_player);
    if (!c->np || !c->rec || !c->rec_ping || !c->hash_ticket || !c->hash_player)
        return GF_ERR_NOMEM;

    uint32_t hashes[1 + GF_MATCH_MAX_TEAM_SIZE];
    for (size_t i = 0; i < c->n; i++) {
        const gf_match_ticket *t = &c->in[i];
        prefetch_ticket(c->in, c->n, i);
        gf_match_bad bad = gf_mt_ticket_check(c->cfg, t, c->now, c->nreg, hashes);
        c->np[i] = 0;
        if (bad != GF_MATCH_BAD_NONE) {
            c->bad[i] = (uint8_t)bad;
            continue;
        }
        /* Valid: players_len <= team_size <= stride. */
        c->np[i] = (uint8_t)t->players_len;
        c->hash_ticket[i] = hashes[0];
        memcpy(&c->hash_player[i * stride], &hashes[1], t->players_len * sizeof hashes[0]);
        if (gf_match_ticket_age(t, c->now) > c->cfg->queues[t->queue].ttl_ms) {
            c->bad[i] = GF_MT_EXPIRED;
            c->res->stats.expired++;
            continue;
        }
        c->bad[i] = GF_MATCH_BAD_NONE;
        derive(c, i, &c->rec[i], &c->rec_ping[i * c->ndc]);
        if (c->rec[i].queued < c->minq)
            c->minq = c->rec[i].queued;
    }
    return GF_OK;
}
