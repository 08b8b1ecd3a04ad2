/* warm.c — warm-pool forecast, target and hibernation choice (see warm.h). */
#include "warm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void warm_history_init(warm_history *h, int64_t window_ms, int64_t now_ms)
{
    memset(h, 0, sizeof *h);
    h->window_ms = window_ms > 0 ? window_ms : 1;
    h->bucket_ms = h->window_ms / 120 > 100 ? h->window_ms / 120 : 100;
    h->since_ms = now_ms;
    for (size_t i = 0; i < WARM_BUCKETS; i++)
        h->slot_index[i] = -1;
}

void warm_history_add(warm_history *h, int64_t now_ms, uint32_t n)
{
    if (now_ms < 0)
        return;
    int64_t b = now_ms / h->bucket_ms;
    size_t slot = (size_t)(b % WARM_BUCKETS);
    if (h->slot_index[slot] != b) {
        h->slot_index[slot] = b;
        h->counts[slot] = 0;
    }
    h->counts[slot] += n;
}

double warm_rate(const warm_history *h, int64_t now_ms, int64_t span_ms)
{
    if (span_ms > h->window_ms)
        span_ms = h->window_ms;
    if (span_ms <= 0 || now_ms < 0)
        return 0;
    int64_t newest = now_ms / h->bucket_ms;
    int64_t buckets = (span_ms + h->bucket_ms - 1) / h->bucket_ms;
    if (buckets > WARM_BUCKETS)
        buckets = WARM_BUCKETS;
    uint64_t sum = 0;
    for (size_t i = 0; i < WARM_BUCKETS; i++)
        if (h->slot_index[i] > newest - buckets && h->slot_index[i] <= newest)
            sum += h->counts[i];
    /* The time those buckets cover (the newest one only up to now), and of it only
     * the time observed, but at least a tenth of it (and four buckets). */
    int64_t observed = now_ms - h->since_ms;
    int64_t span = now_ms - (newest - buckets + 1) * h->bucket_ms;
    int64_t least = span / 10 > 4 * h->bucket_ms ? span / 10 : 4 * h->bucket_ms;
    if (observed < least)
        observed = least;
    if (observed > span)
        observed = span;
    return observed > 0 ? (double)sum * 1000.0 / (double)observed : 0;
}

double warm_forecast(const warm_history *h, int64_t now_ms, int64_t short_ms)
{
    double s = warm_rate(h, now_ms, short_ms), l = warm_rate(h, now_ms, h->window_ms);
    return s > l ? s : l;
}

uint32_t warm_target(double matches_per_s, int64_t warmup_ms, double safety, int64_t floor,
                     int64_t ceiling)
{
    double m =
        matches_per_s > 0 && isfinite(matches_per_s) ? matches_per_s * warmup_ms / 1000.0 : 0;
    double want = m > 0 ? ceil(m + safety * sqrt(m)) : 0;
    if (want < (double)floor)
        want = (double)floor;
    if (want > (double)ceiling)
        want = (double)ceiling;
    return (uint32_t)want;
}

static int idle_longest_first(const void *a, const void *b)
{
    const warm_server *x = a, *y = b;
    if (x->free_since_ms != y->free_since_ms)
        return x->free_since_ms < y->free_since_ms ? -1 : 1;
    return strcmp(x->server_id, y->server_id);
}

void warm_plan_compute(warm_server *free, size_t n, uint32_t target, int64_t now_ms,
                       int64_t hibernate_after_ms, warm_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->target = target;
    plan->free_now = (uint32_t)n;
    if (n > 1)
        qsort(free, n, sizeof *free, idle_longest_first);
    if (target > n) {
        plan->start = target - (uint32_t)n;
        return;
    }
    size_t excess = n - target;
    while (plan->n_hibernate < excess &&
           now_ms - free[plan->n_hibernate].free_since_ms >= hibernate_after_ms)
        plan->n_hibernate++;
}
