/*
 * ingest.c — the one pass over the caller's tickets: validation, expiry, and everything
 * the later steps need, in compact form.
 *
 * Design notes: the caller's tickets are scattered over memory (ids, players, pings in
 * separate arrays), and at 100k tickets reading them is a large share of a tick. So they
 * are read once, in input order, by gf_mt_ticket_read(), which checks a ticket and in
 * the same walk hashes its ids, aggregates its skill and rounds its pings into the
 * ticket's row. Each valid ticket then becomes a gf_mt_tk record (limits at `now`,
 * accepted-datacenter mask, best ping, region), counted in its (queue, region)
 * population, and its id hashes are stored for the duplicate check (dup.c). Nothing
 * after this step reads the input again, except the duplicate check's string
 * comparisons on hash matches and attribute values.
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

/* The record of a valid ticket from what reading it gave: only the skill gap is left to
 * compute. */
static void derive(gf_mt_ctx *c, size_t i, const gf_mt_read *rd, gf_mt_tk *k)
{
    const gf_match_ticket *t = &c->in[i];
    const gf_match_queue *q = &c->cfg->queues[t->queue];

    if (rd->age >= c->gap_capped_ms[t->queue])
        k->gap = q->curve.skill_cap;
    else if (q->mode == GF_MATCH_PING_FIRST)
        k->gap = INFINITY;
    else
        k->gap = gf_match_rules_skill_gap(&q->curve, rd->age, rd->sigma);
    k->skill = rd->skill;
    k->queued = t->queued_ms < c->now ? t->queued_ms : c->now;
    k->twin = GF_MT_NONE;
    k->part = 0;
    k->plimit = rd->plimit;
    k->size = (uint8_t)t->players_len;
    k->queue = (uint8_t)t->queue;
    k->best = rd->best;
    k->bestdc = rd->bestdc;
    k->frac = rd->frac;
    k->dcmask = rd->dcmask;
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
        __builtin_prefetch(t->attrs);
    }
    if (i + 4 < n && in[i + 4].players_len > 0 && in[i + 4].players)
        __builtin_prefetch(in[i + 4].players[0].id);
}

/* Room for `more` ids: the array doubles (copied; the old one is freed). */
static gf_err grow_ids(gf_mt_ctx *c, size_t more)
{
    size_t cap = c->ids_cap;
    while (cap < c->nids + more)
        cap *= 2;
    uint64_t *ids = gf_mt_alloc(&c->mem, cap, sizeof *ids);
    if (!ids)
        return GF_ERR_NOMEM;
    memcpy(ids, c->ids, c->nids * sizeof *ids);
    gf_mt_free(&c->mem, c->ids, c->ids_cap, sizeof *c->ids);
    c->ids = ids;
    c->ids_cap = cap;
    return GF_OK;
}

gf_err gf_mt_ingest(gf_mt_ctx *c)
{
    gf_err err = GF_OK;
    for (uint32_t q = 0; q < c->nq; q++)
        c->gap_capped_ms[q] = gap_capped_from(&c->cfg->queues[q]);
    c->minq = INT64_MAX;
    /* Room for three ids a ticket to start with (a solo player has two; the benchmark's
     * population averages 2.6 in 5v5); grown by doubling when parties need more. */
    c->ids_cap = 3 * c->n + 64;
    c->rec = gf_mt_alloc(&c->mem, c->n, sizeof *c->rec);
    c->rec_ping = gf_mt_alloc(&c->mem, c->n * c->ndc, sizeof *c->rec_ping);
    c->ids = gf_mt_alloc(&c->mem, c->ids_cap, sizeof *c->ids);
    if (!c->rec || !c->rec_ping || !c->ids)
        return GF_ERR_NOMEM;

    gf_mt_read rd;
    for (size_t i = 0; i < c->n; i++) {
        const gf_match_ticket *t = &c->in[i];
        uint16_t *row = &c->rec_ping[i * c->ndc];
        prefetch_ticket(c->in, c->n, i);
        gf_match_bad bad = gf_mt_ticket_read(c->cfg, t, c->now, c->nreg, &rd, row);
        if (bad != GF_MATCH_BAD_NONE) {
            c->bad[i] = (uint8_t)bad;
            c->res->stats.invalid++;
            continue;
        }
        if (rd.age > c->cfg->queues[t->queue].ttl_ms) {
            /* Expired tickets hold no ids: the duplicate check does not see them. */
            c->bad[i] = GF_MT_EXPIRED;
            c->res->stats.expired++;
            continue;
        }
        uint32_t np = (uint32_t)t->players_len; /* valid: at most the team size */
        c->bad[i] = GF_MATCH_BAD_NONE;
        c->nv++;
        if (c->nids + 1 + np > c->ids_cap && (err = grow_ids(c, 1 + np)) != GF_OK)
            return err;
        for (uint32_t j = 0; j <= np; j++)
            c->ids[c->nids++] = (uint64_t)rd.hash[j] << 32 | (uint32_t)i << GF_MT_SLOT_BITS | j;
        derive(c, i, &rd, &c->rec[i]);
        if (c->rec[i].queued < c->minq)
            c->minq = c->rec[i].queued;
        /* Population per (queue, region), counted here rather than in a pass of its own;
         * a ticket the duplicate check refuses is taken off again (dup.c). */
        gf_match_pool_stat *ps =
            &c->res->pools[(size_t)c->rec[i].queue * c->nreg + c->rec[i].region];
        ps->tickets++;
        ps->players += np;
    }
    return GF_OK;
}
