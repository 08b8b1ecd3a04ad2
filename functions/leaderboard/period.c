/*
 * period.c — UTC day and ISO week of an instant (see period.h).
 *
 * Design notes: days_from_civil / civil_from_days are Howard Hinnant's algorithms
 * ("chrono-compatible low-level date algorithms"): exact for the proleptic Gregorian
 * calendar with plain integer arithmetic, so nothing depends on the process's time
 * zone or on gmtime_r. The ISO week of day d: its Monday is d - weekday(d), its
 * Thursday three days later decides the week-year, and the week number counts
 * from that year's first Thursday.
 */
#include "period.h"

#include <stdio.h>

#define DAY_MS INT64_C(86400000)

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static void daily(int64_t day, gf_period *out)
{
    int64_t y;
    unsigned m, d;
    civil_from_days(day, &y, &m, &d);
    snprintf(out->id, sizeof out->id, "%04d-%02u-%02u", (int)y, m, d);
    out->start_unix_ms = day * DAY_MS;
    out->end_unix_ms = out->start_unix_ms + DAY_MS;
}

static void weekly(int64_t day, gf_period *out)
{
    int64_t monday = day - (day + 3) % 7; /* 1970-01-01 (day 0) was a Thursday */
    int64_t y;
    unsigned m, d;
    civil_from_days(monday + 3, &y, &m, &d);
    int64_t week = (monday + 3 - days_from_civil(y, 1, 1)) / 7 + 1;
    snprintf(out->id, sizeof out->id, "%04d-W%02d", (int)y, (int)week);
    out->start_unix_ms = monday * DAY_MS;
    out->end_unix_ms = out->start_unix_ms + 7 * DAY_MS;
}

gf_err gf_period_of(gf_period_kind kind, int64_t unix_ms, gf_period *out)
{
    if (unix_ms < 0 || unix_ms > GF_PERIOD_MAX_UNIX_MS)
        return GF_ERR_INVALID;
    int64_t day = unix_ms / DAY_MS;
    switch (kind) {
    case GF_PERIOD_NONE:
        *out = (gf_period){.id = "all", .start_unix_ms = 0, .end_unix_ms = INT64_MAX};
        return GF_OK;
    case GF_PERIOD_DAILY:
        daily(day, out);
        return GF_OK;
    case GF_PERIOD_WEEKLY:
        weekly(day, out);
        return GF_OK;
    }
    return GF_ERR_INVALID;
}
