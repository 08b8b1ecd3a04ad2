/*
 * config_units.c — duration and size literals (see config_units.h).
 *
 * Design notes: hand-written because these are tiny unit grammars, not a standard
 * format. Integers only, so every value maps to exactly one int64 and formatting
 * round-trips (gf_config_format_* pick the largest exact unit). Overflow is checked
 * before every multiply and add.
 */
#include "config_units.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gamefn/config.h"

typedef struct unit {
    const char *name;
    int64_t factor;
} unit;

/* Longest names first where one is a prefix of another ("ms" before "m"). */
static const unit duration_units[] = {
    {"d", 86400000}, {"h", 3600000}, {"ms", 1}, {"m", 60000}, {"s", 1000},
};
static const char *const duration_help = "use ms, s, m, h or d, e.g. '250ms', '5s', '1h30m'";

static const unit size_units[] = {
    {"B", 1},           {"KB", 1000},          {"MB", 1000000},
    {"GB", 1000000000}, {"TB", 1000000000000}, {"KiB", 1024},
    {"MiB", 1048576},   {"GiB", 1073741824},   {"TiB", 1099511627776},
};
static const char *const size_help = "use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB, e.g. '64KiB'";

static void why_set(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void why_set(char *why, size_t size, const char *fmt, ...)
{
    if (!why || !size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

/* Reads a run of digits at *p into *v. false on overflow or no digit. */
static bool read_digits(const char **p, int64_t *v, bool *overflow)
{
    const char *s = *p;
    int64_t x = 0;
    *overflow = false;
    if (*s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        int d = *s - '0';
        if (x > (INT64_MAX - d) / 10) {
            *overflow = true;
            return false;
        }
        x = x * 10 + d;
    }
    *p = s;
    *v = x;
    return true;
}

static bool mul_add(int64_t *acc, int64_t v, int64_t factor)
{
    if (v > INT64_MAX / factor)
        return false;
    v *= factor;
    if (*acc > INT64_MAX - v)
        return false;
    *acc += v;
    return true;
}

bool gf__cfg_units_duration(const char *text, int64_t *out, char *why, size_t why_size)
{
    const char *p = text;
    int64_t total = 0;
    int64_t last_factor = INT64_MAX;

    if (!text || !*text) {
        why_set(why, why_size, "empty duration (%s)", duration_help);
        return false;
    }
    if (*p == '-') {
        why_set(why, why_size, "negative duration '%s' is not allowed", text);
        return false;
    }
    if (strcmp(text, "0") == 0) {
        *out = 0;
        return true;
    }
    while (*p) {
        int64_t v = 0;
        bool overflow = false;
        if (!read_digits(&p, &v, &overflow)) {
            if (overflow)
                why_set(why, why_size, "duration '%s' is too large", text);
            else
                why_set(why, why_size, "'%s' is not a duration (%s)", text, duration_help);
            return false;
        }
        if (*p == '.') {
            why_set(why, why_size,
                    "duration '%s' has a fraction: use a smaller unit (e.g. '1500ms')", text);
            return false;
        }
        const unit *u = NULL;
        for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
            size_t n = strlen(duration_units[i].name);
            if (strncmp(p, duration_units[i].name, n) == 0 && !(p[n] >= 'a' && p[n] <= 'z') &&
                !(p[n] >= 'A' && p[n] <= 'Z')) {
                u = &duration_units[i];
                p += n;
                break;
            }
        }
        if (!u && !*p) {
            why_set(why, why_size, "duration '%s' has no unit (%s)", text, duration_help);
            return false;
        }
        if (!u) {
            why_set(why, why_size, "unknown unit in duration '%s' (%s)", text, duration_help);
            return false;
        }
        if (u->factor >= last_factor) {
            why_set(why, why_size,
                    "duration '%s' must list its units from largest to smallest, each once", text);
            return false;
        }
        last_factor = u->factor;
        if (!mul_add(&total, v, u->factor)) {
            why_set(why, why_size, "duration '%s' is too large", text);
            return false;
        }
    }
    *out = total;
    return true;
}

bool gf__cfg_units_size(const char *text, int64_t *out, char *why, size_t why_size)
{
    const char *p = text;
    int64_t v = 0;
    bool overflow = false;

    if (!text || !*text) {
        why_set(why, why_size, "empty size (%s)", size_help);
        return false;
    }
    if (*p == '-') {
        why_set(why, why_size, "negative size '%s' is not allowed", text);
        return false;
    }
    if (!read_digits(&p, &v, &overflow)) {
        if (overflow)
            why_set(why, why_size, "size '%s' is too large", text);
        else
            why_set(why, why_size, "'%s' is not a size (%s)", text, size_help);
        return false;
    }
    if (*p == '.') {
        why_set(why, why_size, "size '%s' has a fraction: use a smaller unit (e.g. '1536KiB')",
                text);
        return false;
    }
    int64_t factor = 1;
    if (*p) {
        const unit *u = NULL;
        for (size_t i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++) {
            if (strcasecmp(p, size_units[i].name) == 0) {
                u = &size_units[i];
                break;
            }
        }
        if (!u) {
            why_set(why, why_size, "unknown unit in size '%s' (%s)", text, size_help);
            return false;
        }
        factor = u->factor;
    }
    int64_t total = 0;
    if (!mul_add(&total, v, factor)) {
        why_set(why, why_size, "size '%s' is too large", text);
        return false;
    }
    *out = total;
    return true;
}

gf_err gf_config_parse_duration_ms(const char *text, int64_t *out)
{
    int64_t v = 0;
    if (!out || !gf__cfg_units_duration(text, &v, NULL, 0))
        return GF_ERR_INVALID;
    *out = v;
    return GF_OK;
}

gf_err gf_config_parse_size(const char *text, int64_t *out)
{
    int64_t v = 0;
    if (!out || !gf__cfg_units_size(text, &v, NULL, 0))
        return GF_ERR_INVALID;
    *out = v;
    return GF_OK;
}

/* Largest unit of `units` (in the given preference order) that divides v exactly. */
static char *format_units(int64_t v, const unit *units, size_t n, char *buf, size_t size)
{
    if (!buf || size == 0)
        return buf;
    if (v > 0) {
        for (size_t i = 0; i < n; i++) {
            if (v % units[i].factor == 0 && v >= units[i].factor && units[i].factor > 1) {
                snprintf(buf, size, "%lld%s", (long long)(v / units[i].factor), units[i].name);
                return buf;
            }
        }
    }
    snprintf(buf, size, "%lld", (long long)v);
    return buf;
}

char *gf_config_format_duration(int64_t ms, char *buf, size_t size)
{
    static const unit order[] = {
        {"d", 86400000},
        {"h", 3600000},
        {"m", 60000},
        {"s", 1000},
    };
    if (ms > 0 && buf && size && ms % 1000 != 0) {
        snprintf(buf, size, "%lldms", (long long)ms);
        return buf;
    }
    return format_units(ms, order, sizeof(order) / sizeof(order[0]), buf, size);
}

char *gf_config_format_size(int64_t bytes, char *buf, size_t size)
{
    static const unit order[] = {
        {"TiB", 1099511627776}, {"GiB", 1073741824}, {"MiB", 1048576}, {"KiB", 1024},
        {"TB", 1000000000000},  {"GB", 1000000000},  {"MB", 1000000},  {"KB", 1000},
    };
    return format_units(bytes, order, sizeof(order) / sizeof(order[0]), buf, size);
}
