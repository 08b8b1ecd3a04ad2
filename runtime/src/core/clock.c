/* clock.c — monotonic and wall-clock time, sleeping, RFC 3339 (see gamefn/clock.h). */
#include "gamefn/clock.h"

#include <stdio.h>
#include <time.h>

static int64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t gf_clock_mono_ns(void)
{
    return now_ns(CLOCK_MONOTONIC);
}

int64_t gf_clock_mono_ms(void)
{
    return now_ns(CLOCK_MONOTONIC) / 1000000LL;
}

int64_t gf_clock_unix_ns(void)
{
    return now_ns(CLOCK_REALTIME);
}

int64_t gf_clock_unix_ms(void)
{
    return now_ns(CLOCK_REALTIME) / 1000000LL;
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

char *gf_clock_rfc3339(int64_t unix_ns, int digits, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    if (digits < 0)
        digits = 0;
    if (digits > 9)
        digits = 9;
    int64_t sec = unix_ns / 1000000000LL, frac = unix_ns % 1000000000LL;
    if (frac < 0) { /* before 1970: floor, so the fraction counts forward */
        sec--;
        frac += 1000000000LL;
    }
    for (int i = digits; i < 9; i++)
        frac /= 10;
    time_t t = (time_t)sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        buf[0] = '\0';
        return buf;
    }
    int n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (n > 0 && (size_t)n < size && digits > 0)
        n += snprintf(buf + n, size - (size_t)n, ".%0*lld", digits, (long long)frac);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "Z");
    return buf;
}
