/*
 * warm.h — the warm pool: how many FREE servers a datacenter should keep, from the
 * recent match demand, and which idle servers to hibernate.
 *
 * Model: a server takes `warmup` to come up, so the FREE servers on hand must cover
 * the matches that arrive meanwhile. With a demand of λ matches/s that is a Poisson
 * count of mean m = λ·warmup, so
 *
 *     target = clamp(floor, ceiling, ceil(m + safety·√m))
 *
 * (safety = 2 keeps about 98 % of warmup windows covered). λ is the forecast: the
 * larger of the rate over the recent short window and the rate over the whole
 * window, so the pool grows as soon as demand rises and shrinks only once the whole
 * window has seen less. The rates count only time actually observed (a replica that
 * just started does not divide by minutes it did not see), with at least a tenth of
 * the span (and four buckets) assumed, so one early match does not look like a flood.
 *
 * Hibernation: FREE servers above the target, idle longest first, and only those idle
 * at least `hibernate_after` (a server freed a moment ago is likely the next one
 * allocated, and the allocator takes the most recently freed first).
 *
 * Pure: no NATS, no allocation. Threads: a warm_history is used under its owner's lock.
 */
#ifndef GAMEFN_WARM_H
#define GAMEFN_WARM_H

#include <stddef.h>
#include <stdint.h>

enum { WARM_BUCKETS = 128 };

/* Match counts of one datacenter in time buckets covering the window. */
typedef struct warm_history {
    int64_t window_ms;
    int64_t bucket_ms;
    int64_t since_ms;                 /* observed from (init time) */
    int64_t slot_index[WARM_BUCKETS]; /* absolute bucket number each slot holds */
    uint32_t counts[WARM_BUCKETS];
} warm_history;

/* window_ms > 0. Buckets are window/120 wide, at least 100 ms. */
void warm_history_init(warm_history *h, int64_t window_ms, int64_t now_ms);

/* Counts `n` matches at now_ms (times before the window are dropped). */
void warm_history_add(warm_history *h, int64_t now_ms, uint32_t n);

/* Matches per second over the last span_ms (capped to the window). */
double warm_rate(const warm_history *h, int64_t now_ms, int64_t span_ms);

/* max(rate over short_ms, rate over the window). */
double warm_forecast(const warm_history *h, int64_t now_ms, int64_t short_ms);

/* The formula above. floor <= ceiling. */
uint32_t warm_target(double matches_per_s, int64_t warmup_ms, double safety, int64_t floor,
                     int64_t ceiling);

/* A FREE server with a fresh heartbeat. */
typedef struct warm_server {
    const char *server_id; /* borrowed */
    int64_t free_since_ms;
} warm_server;

typedef struct warm_plan {
    uint32_t target;
    uint32_t free_now;
    uint32_t start;     /* target - free_now when positive */
    size_t n_hibernate; /* the first n_hibernate entries of the sorted array */
} warm_plan;

/* Sorts `free` idle-longest first (ties by server id, so replicas agree) and plans. */
void warm_plan_compute(warm_server *free, size_t n, uint32_t target, int64_t now_ms,
                       int64_t hibernate_after_ms, warm_plan *plan);

#endif
