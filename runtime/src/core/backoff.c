/* backoff.c — capped exponential backoff with jitter (see gamefn/backoff.h). */
#include "gamefn/backoff.h"

#include <sys/random.h>

/* Uniform in [0, max], without modulo bias. */
static int64_t jitter_sample(int64_t max)
{
    uint64_t range = (uint64_t)max + 1, limit = UINT64_MAX - UINT64_MAX % range, r = 0;
    do {
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            return 0; /* no randomness: no jitter rather than a stall */
    } while (r >= limit);
    return (int64_t)(r % range);
}

int64_t gf_backoff_ms(int attempt, int64_t base_ms, int64_t cap_ms, int64_t jitter_ms)
{
    int64_t delay = base_ms;
    for (int i = 1; i < attempt && delay < cap_ms && delay <= INT64_MAX / 2; i++)
        delay *= 2;
    if (delay > cap_ms)
        delay = cap_ms;
    return jitter_ms > 0 ? delay + jitter_sample(jitter_ms) : delay;
}
