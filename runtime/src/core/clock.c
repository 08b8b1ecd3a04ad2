/* clock.c — monotonic and wall-clock time, sleeping, RFC 3339 (see gamefn/clock.h). */
#include "gamefn/clock.h"

#include <ctype.h>
#include <stdbool.h>
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

/* n decimal digits at *p (advanced past them); -1 if any is not a digit. */
static int digits_at(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return -1;
        v = v * 10 + (**p - '0');
    }
    return v;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
 * days_from_civil), so no time zone or libc table is involved. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

gf_err gf_clock_parse_rfc3339(const char *text, int64_t *unix_ns)
{
    if (!text || !unix_ns)
        return GF_ERR_INVALID;
    const char *p = text;
    int y = digits_at(&p, 4);
    if (y < 1970 || *p++ != '-')
        return GF_ERR_INVALID;
    int mo = digits_at(&p, 2);
    if (mo < 1 || mo > 12 || *p++ != '-')
        return GF_ERR_INVALID;
    int d = digits_at(&p, 2);
    if (d < 1 || d > days_in_month(y, mo) || (*p != 'T' && *p != 't' && *p != ' '))
        return GF_ERR_INVALID;
    p++;
    int h = digits_at(&p, 2);
    if (h < 0 || h > 23 || *p++ != ':')
        return GF_ERR_INVALID;
    int mi = digits_at(&p, 2);
    if (mi < 0 || mi > 59 || *p++ != ':')
        return GF_ERR_INVALID;
    int s = digits_at(&p, 2);
    if (s < 0 || s > 60) /* a leap second counts as the next second's start */
        return GF_ERR_INVALID;
    int64_t frac = 0;
    if (*p == '.') {
        p++;
        int n = 0;
        for (; isdigit((unsigned char)*p) && n < 9; p++, n++)
            frac = frac * 10 + (*p - '0');
        if (n == 0 || isdigit((unsigned char)*p))
            return GF_ERR_INVALID;
        for (; n < 9; n++)
            frac *= 10;
    }
    int64_t offset_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1;
        int oh = digits_at(&p, 2);
        if (oh < 0 || oh > 23 || *p++ != ':')
            return GF_ERR_INVALID;
        int om = digits_at(&p, 2);
        if (om < 0 || om > 59)
            return GF_ERR_INVALID;
        offset_s = sign * (oh * 3600 + om * 60);
    } else {
        return GF_ERR_INVALID;
    }
    if (*p != '\0')
        return GF_ERR_INVALID;
    int64_t sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_s;
    if (sec < 0)
        return GF_ERR_INVALID;
    *unix_ns = sec * 1000000000LL + frac;
    return GF_OK;
}
