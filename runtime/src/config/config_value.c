/*
 * config_value.c — scalar conversions and bounds (see config_value.h).
 *
 * Design notes: YAML 1.1's loose scalars (yes/no/on/off, 0x1F, 1_000, .inf) are not
 * accepted: the table decides the type, and each type has one spelling, so a value
 * means the same to every reader. Integers are decimal int64; numbers are decimal
 * floats and must be finite; booleans are exactly true or false.
 */
#include "config_value.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_units.h"

static void why_set(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void why_set(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
}

static bool parse_int(const char *text, int64_t *out)
{
    const char *p = text;
    if (*p == '-' || *p == '+')
        p++;
    if (!*p)
        return false;
    for (const char *q = p; *q; q++) {
        if (*q < '0' || *q > '9')
            return false;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (errno == ERANGE || *end)
        return false;
    *out = v;
    return true;
}

/* NaN and infinity as YAML or C spell them: [+-][.](nan|inf|infinity), any case. */
static bool is_nonfinite_word(const char *text)
{
    static const char *const words[] = {"nan", "inf", "infinity"};
    const char *p = text;
    if (*p == '+' || *p == '-')
        p++;
    if (*p == '.')
        p++;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strcasecmp(p, words[i]) == 0)
            return true;
    }
    return false;
}

static bool parse_double(const char *text, double *out, char *why, size_t why_size)
{
    size_t n = strlen(text);
    if (is_nonfinite_word(text)) {
        why_set(why, why_size, "'%s' is not a finite number (NaN and infinity are refused)", text);
        return false;
    }
    /* Only the decimal grammar: strtod alone would also take hex, "nan" and "inf". */
    if (n == 0 || strspn(text, "0123456789+-.eE") != n || !strpbrk(text, "0123456789")) {
        why_set(why, why_size, "'%s' is not a number", text);
        return false;
    }
    char *end = NULL;
    double v = strtod(text, &end);
    if (*end) {
        why_set(why, why_size, "'%s' is not a number", text);
        return false;
    }
    if (!isfinite(v)) {
        why_set(why, why_size, "'%s' is not a finite number (too large)", text);
        return false;
    }
    *out = v;
    return true;
}

bool gf__cfg_value_in_bounds(const gf_cfg_field *f, double v)
{
    if (f->min == 0 && f->max == 0)
        return true;
    if (v < f->min)
        return false;
    return f->max >= GF_CFG_NO_MAX || v <= f->max;
}

static void bound_text(gf_cfg_type type, double v, char *buf, size_t size)
{
    if (type == GF_CFG_DURATION || type == GF_CFG_SIZE) {
        int64_t i = v >= 9.2e18 ? INT64_MAX : (int64_t)v;
        if (type == GF_CFG_DURATION)
            gf_config_format_duration(i, buf, size);
        else
            gf_config_format_size(i, buf, size);
    } else if (type == GF_CFG_DOUBLE) {
        snprintf(buf, size, "%g", v);
    } else {
        snprintf(buf, size, "%.0f", v);
    }
}

void gf__cfg_value_range_text(const gf_cfg_field *f, char *buf, size_t size)
{
    char lo[48], hi[48];
    bool list = gf__cfg_value_is_list(f->type);
    gf_cfg_type t = list ? GF_CFG_INT : f->type;
    const char *unit = list ? " entries" : "";

    buf[0] = '\0';
    if ((f->min == 0 && f->max == 0) || !(gf__cfg_value_is_scalar(f->type) || list) ||
        f->type == GF_CFG_BOOL || f->type == GF_CFG_ENUM || f->type == GF_CFG_STRING)
        return;
    bound_text(t, f->min, lo, sizeof(lo));
    bound_text(t, f->max, hi, sizeof(hi));
    if (f->max >= GF_CFG_NO_MAX)
        snprintf(buf, size, "at least %s%s", lo, list ? (f->min == 1 ? " entry" : " entries") : "");
    else
        snprintf(buf, size, "%s..%s%s", lo, hi, unit);
}

static void enum_names(const gf_cfg_enum_value *e, char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (; e && e->name && off + 1 < size; e++) {
        int n = snprintf(buf + off, size - off, "%s%s", off ? ", " : "", e->name);
        if (n < 0)
            break;
        off += (size_t)n;
    }
}

bool gf__cfg_value_parse(const gf_cfg_field *f, gf_cfg_type type, const char *text, cfg_scalar *out,
                         char *why, size_t why_size)
{
    char range[96];
    cfg_scalar v = {0};
    double as_double = 0;

    switch (type) {
    case GF_CFG_INT:
        if (!parse_int(text, &v.i)) {
            why_set(why, why_size, "'%s' is not an integer", text);
            return false;
        }
        as_double = (double)v.i;
        break;
    case GF_CFG_DOUBLE:
        if (!parse_double(text, &v.d, why, why_size))
            return false;
        as_double = v.d;
        break;
    case GF_CFG_BOOL:
        if (strcmp(text, "true") == 0) {
            v.b = true;
        } else if (strcmp(text, "false") != 0) {
            why_set(why, why_size, "'%s' is not a boolean (write true or false)", text);
            return false;
        }
        *out = v;
        return true;
    case GF_CFG_DURATION:
        if (!gf__cfg_units_duration(text, &v.i, why, why_size))
            return false;
        as_double = (double)v.i;
        break;
    case GF_CFG_SIZE:
        if (!gf__cfg_units_size(text, &v.i, why, why_size))
            return false;
        as_double = (double)v.i;
        break;
    case GF_CFG_ENUM: {
        for (const gf_cfg_enum_value *e = f->enums; e && e->name; e++) {
            if (strcmp(e->name, text) == 0) {
                v.e = e->value;
                *out = v;
                return true;
            }
        }
        char names[160];
        enum_names(f->enums, names, sizeof(names));
        why_set(why, why_size, "'%s' is not one of: %s", text, names);
        return false;
    }
    default:
        why_set(why, why_size, "internal: %s is not a scalar type", gf__cfg_value_type_name(type));
        return false;
    }
    /* Items of a duration list are bounded only by the duration grammar: the field's
     * bounds are about the list's length. */
    if (type == f->type && !gf__cfg_value_in_bounds(f, as_double)) {
        gf__cfg_value_range_text(f, range, sizeof(range));
        why_set(why, why_size, "'%s' is out of range (%s)", text, range);
        return false;
    }
    *out = v;
    return true;
}

void gf__cfg_value_store(const gf_cfg_field *f, void *base, const cfg_scalar *v)
{
    unsigned char *p = (unsigned char *)base + f->offset;
    switch (f->type) {
    case GF_CFG_INT:
    case GF_CFG_DURATION:
    case GF_CFG_SIZE:
        memcpy(p, &v->i, sizeof(v->i));
        break;
    case GF_CFG_DOUBLE:
        memcpy(p, &v->d, sizeof(v->d));
        break;
    case GF_CFG_BOOL:
        memcpy(p, &v->b, sizeof(v->b));
        break;
    case GF_CFG_ENUM:
        memcpy(p, &v->e, sizeof(v->e));
        break;
    default:
        break;
    }
}

const char *gf__cfg_value_type_name(gf_cfg_type type)
{
    switch (type) {
    case GF_CFG_STRING:
        return "string";
    case GF_CFG_INT:
        return "integer";
    case GF_CFG_DOUBLE:
        return "number";
    case GF_CFG_BOOL:
        return "boolean";
    case GF_CFG_DURATION:
        return "duration";
    case GF_CFG_SIZE:
        return "size";
    case GF_CFG_ENUM:
        return "enum";
    case GF_CFG_STRING_LIST:
        return "list of strings";
    case GF_CFG_DURATION_LIST:
        return "list of durations";
    case GF_CFG_OBJECT:
        return "mapping";
    case GF_CFG_OBJECT_LIST:
        return "list of mappings";
    }
    return "unknown";
}

bool gf__cfg_value_is_scalar(gf_cfg_type type)
{
    return type <= GF_CFG_ENUM;
}

bool gf__cfg_value_is_list(gf_cfg_type type)
{
    return type == GF_CFG_STRING_LIST || type == GF_CFG_DURATION_LIST || type == GF_CFG_OBJECT_LIST;
}
