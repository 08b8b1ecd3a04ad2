/* clock.c — monotonic and wall-clock time, and sleeping (see gamefn/clock.h). */
#include "gamefn/clock.h"

#include <time.h>

int64_t gf_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t gf_clock_mono_ms(void)
{
    return gf_clock_mono_ns() / 1000000LL;
}

int64_t gf_clock_unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000LL;
}

void gf_clock_sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

void gf_clock_sleep_until(int64_t until_ms, const atomic_int *stop)
{
    for (;;) {
        int64_t left = until_ms - gf_clock_mono_ms();
        if (left <= 0 || (stop && atomic_load(stop)))
            return;
        gf_clock_sleep_ms(left < 50 ? left : 50);
    }
}
