/*
 * wait.c — estimated wait per (queue, region, skill band).
 *
 * Design notes: each cell holds an exponentially decayed mean of the waits of tickets
 * matched in it: on every observation the old weight decays by 2^(-dt / half_life) and
 * the new wait enters with weight 1. Decay is applied lazily (per cell, from its last
 * update), so an update costs O(1) and a read never writes. A cell with little weight
 * borrows from the neighbouring bands, then the whole (queue, region) row, then the
 * queue: a rare skill band still gets a figure, marked by `level` as less specific.
 */
#include "gamefn/match/wait.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cell {
    double mean;
    double weight;
    int64_t at; /* time of the last update */
} cell;

struct gf_match_wait {
    gf_match_wait_params p;
    uint32_t queues, regions;
    int64_t latest;
    cell *cells; /* [queues][regions][bands] */
};

void gf_match_wait_params_default(gf_match_wait_params *p)
{
    p->band_width = 200;
    p->band_origin = 0;
    p->bands = 20;
    p->half_life_ms = 10 * 60 * 1000;
    p->min_weight = 3;
}

gf_err gf_match_wait_create(const gf_match_config *cfg, const gf_match_wait_params *params,
                            gf_match_wait **out)
{
    gf_match_wait_params p;
    gf_match_wait *w = NULL;

    if (!out)
        return GF_ERR_INVALID;
    *out = NULL;
    if (gf_match_config_check(cfg, NULL, 0) != GF_OK)
        return GF_ERR_INVALID;
    if (params)
        p = *params;
    else
        gf_match_wait_params_default(&p);
    if (!isfinite(p.band_width) || p.band_width <= 0 || !isfinite(p.band_origin) || p.bands < 1 ||
        p.bands > 256 || p.half_life_ms <= 0 || !isfinite(p.min_weight) || p.min_weight < 0)
        return GF_ERR_INVALID;
    w = calloc(1, sizeof *w);
    if (!w)
        return GF_ERR_NOMEM;
    w->p = p;
    w->queues = (uint32_t)cfg->queues_len;
    w->regions = (uint32_t)gf_match_config_regions(cfg);
    w->latest = INT64_MIN;
    w->cells = calloc((size_t)w->queues * w->regions * p.bands, sizeof *w->cells);
    if (!w->cells) {
        free(w);
        return GF_ERR_NOMEM;
    }
    *out = w;
    return GF_OK;
}

void gf_match_wait_free(gf_match_wait *w)
{
    if (!w)
        return;
    free(w->cells);
    free(w);
}

static uint32_t band_of(const gf_match_wait *w, double skill)
{
    double b = floor((skill - w->p.band_origin) / w->p.band_width);
    if (b < 0)
        return 0;
    if (b >= w->p.bands)
        return w->p.bands - 1;
    return (uint32_t)b;
}

static cell *cell_at(const gf_match_wait *w, uint32_t q, uint32_t r, uint32_t b)
{
    return &w->cells[((size_t)q * w->regions + r) * w->p.bands + b];
}

/* Weight of c as seen at time `now`. */
static double decayed(const gf_match_wait *w, const cell *c, int64_t now)
{
    if (c->weight <= 0)
        return 0;
    double dt = (double)(now > c->at ? now - c->at : 0);
    return c->weight * exp2(-dt / (double)w->p.half_life_ms);
}

gf_err gf_match_wait_observe(gf_match_wait *w, uint32_t queue, uint32_t region, double skill,
                             int64_t wait_ms, int64_t now_ms)
{
    if (!w || queue >= w->queues || region >= w->regions || !isfinite(skill) || wait_ms < 0)
        return GF_ERR_INVALID;
    if (now_ms < w->latest)
        now_ms = w->latest;
    w->latest = now_ms;
    cell *c = cell_at(w, queue, region, band_of(w, skill));
    double old = decayed(w, c, now_ms);
    c->mean = (c->mean * old + (double)wait_ms) / (old + 1);
    c->weight = old + 1;
    c->at = now_ms;
    return GF_OK;
}

void gf_match_wait_learn(gf_match_wait *w, const gf_match_ticket *tickets, size_t n,
                         const gf_match_result *res, int64_t now_ms)
{
    if (!w || !tickets || !res)
        return;
    for (size_t i = 0; i < res->matches_len; i++) {
        const gf_match *m = &res->matches[i];
        for (uint32_t j = 0; j < m->members_len; j++) {
            const gf_match_member *mb = &m->members[j];
            if (mb->ticket >= n)
                continue;
            const gf_match_ticket *t = &tickets[mb->ticket];
            int64_t waited = now_ms > t->queued_ms ? now_ms - t->queued_ms : 0;
            (void)gf_match_wait_observe(w, t->queue, m->region, mb->skill, waited, now_ms);
        }
    }
}

/* Adds cell c's decayed (mean, weight) into the running sums. */
static void add(const gf_match_wait *w, const cell *c, int64_t now, double *sum, double *weight)
{
    double k = decayed(w, c, now);
    *sum += c->mean * k;
    *weight += k;
}

gf_err gf_match_wait_get(const gf_match_wait *w, uint32_t queue, uint32_t region, double skill,
                         int64_t now_ms, gf_match_wait_estimate *out)
{
    double sum = 0, weight = 0;
    if (!out)
        return GF_ERR_INVALID;
    out->wait_ms = -1;
    out->weight = 0;
    out->level = -1;
    if (!w || queue >= w->queues || region >= w->regions || !isfinite(skill))
        return GF_ERR_INVALID;
    uint32_t b = band_of(w, skill);
    for (int level = 0; level <= 3; level++) {
        sum = 0;
        weight = 0;
        if (level == 0) {
            add(w, cell_at(w, queue, region, b), now_ms, &sum, &weight);
        } else if (level == 1) {
            for (int d = -1; d <= 1; d++) {
                int64_t nb = (int64_t)b + d;
                if (nb >= 0 && nb < (int64_t)w->p.bands)
                    add(w, cell_at(w, queue, region, (uint32_t)nb), now_ms, &sum, &weight);
            }
        } else if (level == 2) {
            for (uint32_t i = 0; i < w->p.bands; i++)
                add(w, cell_at(w, queue, region, i), now_ms, &sum, &weight);
        } else {
            for (uint32_t r = 0; r < w->regions; r++) {
                for (uint32_t i = 0; i < w->p.bands; i++)
                    add(w, cell_at(w, queue, r, i), now_ms, &sum, &weight);
            }
        }
        if (weight > 0 && (weight >= w->p.min_weight || level == 3)) {
            out->wait_ms = (int64_t)llround(sum / weight);
            out->weight = weight;
            out->level = level;
            return GF_OK;
        }
    }
    return GF_OK;
}
