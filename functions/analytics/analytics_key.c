/*
 * analytics_key.c — record keys "<YYYYMMDD>.<HH>.<MM>.p<NN>" (see analytics.h).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "analytics.h"

static bool utc(int64_t unix_ms, struct tm *tm)
{
    time_t t = (time_t)(unix_ms / 1000);
    return unix_ms >= 0 && gmtime_r(&t, tm) != NULL && tm->tm_year + 1900 <= 9999;
}

gf_err an_key_format(int64_t minute_unix_ms, unsigned partition, char *buf, size_t size)
{
    struct tm tm;
    if (minute_unix_ms % GF_ROLLUP_MINUTE_MS != 0 || partition > 99 || !utc(minute_unix_ms, &tm))
        return GF_ERR_INVALID;
    int n = snprintf(buf, size, "%04d%02d%02d.%02d.%02d.p%02u", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, partition);
    return n > 0 && (size_t)n < size ? GF_OK : GF_ERR_INVALID;
}

gf_err an_hour_filter(int64_t unix_ms, char *buf, size_t size)
{
    struct tm tm;
    if (!utc(unix_ms, &tm))
        return GF_ERR_INVALID;
    int n = snprintf(buf, size, "%04d%02d%02d.%02d.>", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour);
    return n > 0 && (size_t)n < size ? GF_OK : GF_ERR_INVALID;
}

gf_err an_key_parse(const char *key, int64_t *minute_unix_ms, unsigned *partition)
{
    int y, mo, d, h, mi, p, end = 0;
    if (!key || strlen(key) != 18 ||
        sscanf(key, "%4d%2d%2d.%2d.%2d.p%2d%n", &y, &mo, &d, &h, &mi, &p, &end) != 6 || end != 18)
        return GF_ERR_INVALID;
    struct tm tm = {
        .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi};
    time_t t = timegm(&tm);
    char back[AN_KEY_MAX];
    /* the round trip refuses what sscanf lets through: signs, spaces, impossible dates */
    if (t < 0 || an_key_format((int64_t)t * 1000, (unsigned)p, back, sizeof back) != GF_OK ||
        strcmp(back, key) != 0)
        return GF_ERR_INVALID;
    *minute_unix_ms = (int64_t)t * 1000;
    *partition = (unsigned)p;
    return GF_OK;
}
