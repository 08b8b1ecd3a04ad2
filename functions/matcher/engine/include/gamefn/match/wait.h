/*
 * gamefn/match/wait.h — estimated wait per (queue, region, skill band), for status
 * messages ("about 40 s").
 *
 * Learned from recent matches: every matched ticket adds its wait (now - queue time) to
 * the cell of its queue, region and skill band. A cell keeps an exponentially decayed
 * mean whose weight halves every `half_life_ms`, so old matches fade out. A cell with
 * too little weight borrows from its neighbouring bands, then from the whole
 * (queue, region), then from the queue.
 *
 * Ownership: gf_match_wait_create() allocates; gf_match_wait_free() releases. The
 * estimator keeps no pointer to the config or to a result. Not thread-safe: one owner
 * (the matcher's tick loop) updates and reads it. The state is a cache: a new replica
 * starts empty and learns within a few ticks.
 */
#ifndef GAMEFN_MATCH_WAIT_H
#define GAMEFN_MATCH_WAIT_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/match/config.h"
#include "gamefn/match/tick.h"

typedef struct gf_match_wait_params {
    double band_width;    /* skill per band, > 0 (default 200) */
    double band_origin;   /* skill where band 0 starts (default 0) */
    uint32_t bands;       /* 1..256 (default 20: 0..4000); outside skills clamp */
    int64_t half_life_ms; /* > 0 (default 10 min) */
    double min_weight;    /* weight a cell needs to answer alone (default 3) */
} gf_match_wait_params;

typedef struct gf_match_wait gf_match_wait;

typedef struct gf_match_wait_estimate {
    int64_t wait_ms; /* expected total wait in queue; -1 = no data at all */
    double weight;   /* decayed number of matches behind the figure */
    int level;       /* 0 = own band, 1 = neighbouring bands, 2 = region, 3 = queue, -1 */
} gf_match_wait_estimate;

void gf_match_wait_params_default(gf_match_wait_params *p);

/* params may be NULL (defaults). GF_ERR_INVALID on bad params or config. */
gf_err gf_match_wait_create(const gf_match_config *cfg, const gf_match_wait_params *params,
                            gf_match_wait **out);
void gf_match_wait_free(gf_match_wait *w);

/* One observation: a ticket of `queue` in `region` with aggregated `skill` waited wait_ms,
 * matched at now_ms. Out-of-range queue/region or non-finite values are ignored
 * (GF_ERR_INVALID). Observations must come in non-decreasing now_ms; an older one is
 * treated as happening at the latest time seen. */
gf_err gf_match_wait_observe(gf_match_wait *w, uint32_t queue, uint32_t region, double skill,
                             int64_t wait_ms, int64_t now_ms);

/* Observes every member of every match of a tick's result. */
void gf_match_wait_learn(gf_match_wait *w, const gf_match_ticket *tickets, size_t n,
                         const gf_match_result *res, int64_t now_ms);

/* Estimate for a ticket. GF_ERR_INVALID for an out-of-range queue/region or non-finite
 * skill (out is then -1/level -1). */
gf_err gf_match_wait_get(const gf_match_wait *w, uint32_t queue, uint32_t region, double skill,
                         int64_t now_ms, gf_match_wait_estimate *out);

#endif
