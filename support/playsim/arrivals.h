/*
 * support/playsim/arrivals.h — who arrives when, into which queue: the population model
 * (support/population) driven in time, with a day/night swing compressed into the run.
 *
 *   rate      a Poisson stream of candidate tickets at the level's peak rate
 *             (low 100, mid 400, high 1000 tickets/s), thinned per ticket by its home
 *             metro's day curve: a candidate is kept with probability day(local hour),
 *             so each metro is its own Poisson stream at share x peak x day(hour)
 *   day       one whole day per run: hour = start_hour_utc + 24 * t / day_s + the
 *             metro region's UTC offset; day(h) = 0.1 + 0.9 * (1 + cos(2 pi (h - 21) / 24)) / 2
 *             (peak 21:00, trough 09:00 local), so every region passes its evening peak
 *             and its night trough in one run, and a small region (sa, me) drops below
 *             the population floor while it sleeps
 *   queue     shape 1v1 10 %, 5v5 50 %, 4v4v4 20 %, ffa16 20 %; mode hybrid 50 %, sbmm
 *             25 %, ping_first 25 %; a party never larger than its queue's team size
 *   ticket    gf_pop_generate(seed, serial): metro, pings, party, skills, patience
 *             (Weibull, median 90 s), a second submit within 1 s (2 %)
 *
 * Replayable: the candidates' times and each candidate's fate are functions of (seed,
 * serial) only, so the same seed gives the same trace whatever the system does.
 *
 * Pure (no NATS, no clock): the caller asks for the arrivals up to a time. Ownership:
 * gf_arrivals_new allocates, gf_arrivals_free frees; a gf_arrival's strings point into
 * the batch it came with and stay valid until the next gf_arrivals_next call.
 */
#ifndef GAMEFN_PLAYSIM_ARRIVALS_H
#define GAMEFN_PLAYSIM_ARRIVALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "population.h"

enum { GF_ARR_MAX_QUEUES = 64 };

typedef struct gf_arr_queue {
    const char *name; /* borrowed */
    const char *mode; /* "sbmm", "ping_first", "hybrid" */
    const char *shape;
    uint32_t team_size;
} gf_arr_queue;

typedef struct gf_arrival {
    uint64_t serial;
    int64_t at_ms;            /* since the start of the run */
    size_t queue;             /* index into the queue table */
    int region;               /* gf_pop_region of the home metro */
    const gf_match_ticket *t; /* players, skills, pings (the batch's) */
    const gf_pop_info *info;  /* patience, resubmit */
} gf_arrival;

typedef struct gf_arrivals gf_arrivals;

/* peak_rate: candidate tickets per second at the peak (gf_arrivals_peak_rate of a
 * level, or any rate > 0). day_s: the length of the compressed day (the run's length).
 * The queue table is borrowed. */
gf_err gf_arrivals_new(uint64_t seed, double peak_rate, double day_s, const gf_arr_queue *queues,
                       size_t n_queues, gf_arrivals **out);
void gf_arrivals_free(gf_arrivals *a);

/* The next arrival at or before until_ms: true and *out, or false (none yet). */
bool gf_arrivals_next(gf_arrivals *a, int64_t until_ms, gf_arrival *out);

/* Peak candidate rate of a level, tickets/s (0 if unknown). */
double gf_arrivals_peak_rate(const char *population);

/* The day curve's factor for a region at t_ms into the run (0.1..1), and its local
 * hour. */
double gf_arrivals_day(const gf_arrivals *a, int region, int64_t t_ms, double *hour);

/* UTC offset of a gf_pop_region, hours. */
int gf_arrivals_utc_offset(int region);

#endif
