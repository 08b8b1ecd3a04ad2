/*
 * arrivals.c — the arrival process (see arrivals.h).
 *
 * Design notes: three generators, so that no draw depends on another's history: the
 * candidates' inter-arrival times (one sequential stream), and per candidate serial its
 * queue and its keep-or-drop draw (each seeded from (seed, serial)); the ticket itself
 * is gf_pop_generate's, also a function of (seed, serial).
 */
#include "arrivals.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

enum { STREAM_TIMES = 0x7101, STREAM_QUEUE = 0x7102, STREAM_KEEP = 0x7103 };

static const double START_HOUR_UTC = 0.0;
static const double NIGHT_FLOOR = 0.1;
static const double PEAK_HOUR = 21.0;

struct gf_arrivals {
    uint64_t seed;
    double peak_per_ms;
    double day_ms;
    const gf_arr_queue *queues;
    double weight[GF_ARR_MAX_QUEUES], total;
    size_t n_queues;
    gf_pop_rng times;
    double next_ms; /* the next candidate's time */
    uint64_t serial;
    gf_pop_batch *batch; /* the last arrival's ticket */
};

double gf_arrivals_peak_rate(const char *population)
{
    if (!population)
        return 0;
    if (strcmp(population, "low") == 0)
        return 100;
    if (strcmp(population, "mid") == 0)
        return 400;
    if (strcmp(population, "high") == 0)
        return 1000;
    return 0;
}

int gf_arrivals_utc_offset(int region)
{
    static const int offset[GF_POP__REGIONS] = {
        [GF_POP_NA] = -5, [GF_POP_EU] = 1,   [GF_POP_ASIA] = 8,
        [GF_POP_SA] = -3, [GF_POP_OCE] = 10, [GF_POP_ME] = 4,
    };
    return region >= 0 && region < GF_POP__REGIONS ? offset[region] : 0;
}

double gf_arrivals_day(const gf_arrivals *a, int region, int64_t t_ms, double *hour)
{
    double h = START_HOUR_UTC + 24.0 * (double)t_ms / a->day_ms + gf_arrivals_utc_offset(region);
    h = fmod(h, 24.0);
    if (h < 0)
        h += 24.0;
    if (hour)
        *hour = h;
    return NIGHT_FLOOR + (1.0 - NIGHT_FLOOR) * (1.0 + cos(2.0 * PI * (h - PEAK_HOUR) / 24.0)) / 2.0;
}

static double shape_weight(const char *shape)
{
    static const struct {
        const char *shape;
        double w;
    } w[] = {{"1v1", 10}, {"5v5", 50}, {"4v4v4", 20}, {"ffa16", 20}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (strcmp(shape, w[i].shape) == 0)
            return w[i].w;
    return 5;
}

static double mode_weight(const char *mode)
{
    if (strcmp(mode, "hybrid") == 0)
        return 50;
    if (strcmp(mode, "sbmm") == 0 || strcmp(mode, "ping_first") == 0)
        return 25;
    return 10;
}

gf_err gf_arrivals_new(uint64_t seed, double peak, double day_s, const gf_arr_queue *queues,
                       size_t n_queues, gf_arrivals **out)
{
    *out = NULL;
    if (peak <= 0 || day_s <= 0 || !queues || n_queues == 0 || n_queues > GF_ARR_MAX_QUEUES)
        return GF_ERR_INVALID;
    gf_arrivals *a = calloc(1, sizeof *a);
    if (!a)
        return GF_ERR_NOMEM;
    a->seed = seed;
    a->peak_per_ms = peak / 1000.0;
    a->day_ms = day_s * 1000.0;
    a->queues = queues;
    a->n_queues = n_queues;
    for (size_t i = 0; i < n_queues; i++) {
        a->weight[i] = shape_weight(queues[i].shape) * mode_weight(queues[i].mode);
        a->total += a->weight[i];
    }
    gf_pop_rng_seed(&a->times, seed, STREAM_TIMES);
    a->next_ms = -log(1.0 - gf_pop_rng_uniform(&a->times)) / a->peak_per_ms;
    *out = a;
    return GF_OK;
}

void gf_arrivals_free(gf_arrivals *a)
{
    if (!a)
        return;
    gf_pop_batch_free(a->batch);
    free(a);
}

static size_t choose_queue(const gf_arrivals *a, uint64_t serial)
{
    gf_pop_rng r;
    gf_pop_rng_seed(&r, a->seed ^ STREAM_QUEUE, serial);
    double x = gf_pop_rng_uniform(&r) * a->total;
    for (size_t i = 0; i < a->n_queues; i++) {
        if (x < a->weight[i])
            return i;
        x -= a->weight[i];
    }
    return a->n_queues - 1;
}

bool gf_arrivals_next(gf_arrivals *a, int64_t until_ms, gf_arrival *out)
{
    size_t n_metros = 0;
    const gf_pop_metro *metros = gf_pop_metros(&n_metros);
    while (a->next_ms <= (double)until_ms) {
        int64_t at = (int64_t)a->next_ms;
        uint64_t serial = a->serial++;
        a->next_ms += -log(1.0 - gf_pop_rng_uniform(&a->times)) / a->peak_per_ms;
        size_t q = choose_queue(a, serial);
        uint32_t team = a->queues[q].team_size;
        gf_pop_params params = {.max_party =
                                    team < GF_POP_MAX_PARTY ? (team ? team : 1) : GF_POP_MAX_PARTY};
        gf_pop_batch_free(a->batch);
        a->batch = NULL;
        if (gf_pop_generate(a->seed, &params, (uint32_t)q, serial, &at, 1, &a->batch) != GF_OK)
            continue;
        int region = metros[a->batch->info[0].metro % n_metros].region;
        gf_pop_rng keep;
        gf_pop_rng_seed(&keep, a->seed ^ STREAM_KEEP, serial);
        if (gf_pop_rng_uniform(&keep) >= gf_arrivals_day(a, region, at, NULL))
            continue; /* thinned: this metro is asleep */
        *out = (gf_arrival){.serial = serial,
                            .at_ms = at,
                            .queue = q,
                            .region = region,
                            .t = &a->batch->tickets[0],
                            .info = &a->batch->info[0]};
        return true;
    }
    return false;
}
