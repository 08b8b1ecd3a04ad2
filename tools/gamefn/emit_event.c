/*
 * emit_event.c — keys and lines of `gamefn emit` into gf_event (see emit_event.h).
 *
 * Design notes: the parser only splits and converts (numbers strictly: the whole
 * value, in range); every rule about the event itself is the producer's, checked by
 * gf_producer_check_event, so the CLI cannot accept an event emit would refuse or
 * refuse one it would take.
 */
#include "emit_event.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -1;
}

void gf_emit_event_init(gf_emit_event *e)
{
    memset(e, 0, sizeof *e);
    e->ev.generic.attributes = e->attrs;
}

static int parse_i64(const char *key, const char *v, int64_t *out, char *why, size_t size)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno == ERANGE)
        return fail(why, size, "%s: '%s' is not an integer", key, v);
    *out = x;
    return 0;
}

static int parse_float(const char *key, const char *v, float *out, char *why, size_t size)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || errno == ERANGE || !isfinite(x))
        return fail(why, size, "%s: '%s' is not a number", key, v);
    *out = (float)x;
    return 0;
}

static int parse_bool(const char *key, const char *v, bool *out, char *why, size_t size)
{
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = true;
    else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = false;
    else
        return fail(why, size, "%s: '%s' is not true or false", key, v);
    return 0;
}

int gf_emit_set(gf_emit_event *e, const char *key, char *value, char *why, size_t size)
{
    gf_event *ev = &e->ev;
    const struct {
        const char *key;
        const char **field;
    } strings[] = {
        {"player", &ev->player_id},
        {"type", &ev->type},
        {"match", &ev->match_id},
        {"victim", &ev->kill.victim_player_id},
        {"weapon", &ev->kill.weapon},
        {"board", &ev->score.board},
        {"reason", &ev->score.reason},
        {"from", &ev->zone_change.from_zone},
        {"to", &ev->zone_change.to_zone},
        {"signature", &ev->crash.signature},
        {"message", &ev->crash.message},
        {"stack", &ev->crash.stack},
        {"build", &ev->crash.build},
        {"platform", &ev->crash.platform},
        {"content-type", &ev->generic.content_type},
    };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if (strcmp(key, strings[i].key) == 0) {
            *strings[i].field = value;
            return 0;
        }
    if (strcmp(key, "occurred") == 0)
        return parse_i64(key, value, &ev->occurred_unix_ms, why, size);
    if (strcmp(key, "delta") == 0)
        return parse_i64(key, value, &ev->score.delta, why, size);
    if (strcmp(key, "distance") == 0)
        return parse_float(key, value, &ev->kill.distance_m, why, size);
    if (strcmp(key, "headshot") == 0)
        return parse_bool(key, value, &ev->kill.headshot, why, size);
    if (strcmp(key, "data") == 0) {
        ev->generic.data = value;
        ev->generic.data_len = strlen(value);
        return 0;
    }
    if (strcmp(key, "attr") == 0) {
        char *eq = strchr(value, '=');
        if (eq == NULL)
            return fail(why, size, "attr: '%s' is not KEY=VALUE", value);
        if (e->nattrs == GF_EMIT_ATTRS_MAX)
            return fail(why, size, "attr: more than %d attributes", GF_EMIT_ATTRS_MAX - 1);
        *eq = '\0';
        e->attrs[e->nattrs++] = (gf_event_attr){value, eq + 1};
        ev->generic.attributes_len = e->nattrs;
        return 0;
    }
    return fail(why, size, "unknown key '%s'", key);
}

/* Reads a value at *p (quoted or bare) and NUL-terminates it in place; advances *p. */
static int read_value(char **p, char **value, char *why, size_t size)
{
    char *s = *p;
    if (*s != '"') {
        *value = s;
        s += strcspn(s, " \t");
        if (*s)
            *s++ = '\0';
        *p = s;
        return 0;
    }
    char *out = ++s;
    *value = out;
    for (;;) {
        if (*s == '\0')
            return fail(why, size, "unterminated quoted value");
        if (*s == '"')
            break;
        if (*s == '\\') {
            s++;
            switch (*s) {
            case 'n':
                *out++ = '\n';
                break;
            case 't':
                *out++ = '\t';
                break;
            case '"':
            case '\\':
                *out++ = *s;
                break;
            default:
                return fail(why, size, "unknown escape '\\%c' (use \\\" \\\\ \\n \\t)",
                            *s ? *s : ' ');
            }
            s++;
            continue;
        }
        *out++ = *s++;
    }
    *out = '\0';
    s++;
    if (*s != '\0' && *s != ' ' && *s != '\t')
        return fail(why, size, "a quoted value must be followed by a space");
    *p = s;
    return 0;
}

int gf_emit_line(char *line, gf_emit_event *e, char *why, size_t size)
{
    gf_emit_event_init(e);
    line[strcspn(line, "\r\n")] = '\0';
    char *p = line;
    p += strspn(p, " \t");
    if (*p == '\0' || *p == '#')
        return 1;
    while (*p) {
        char *key = p;
        char *eq = strchr(p, '=');
        char *space = p + strcspn(p, " \t");
        if (eq == NULL || eq > space)
            return fail(why, size, "'%.*s' is not key=value", (int)(space - p), p);
        *eq = '\0';
        p = eq + 1;
        char *value = NULL;
        if (read_value(&p, &value, why, size) != 0 || gf_emit_set(e, key, value, why, size) != 0)
            return -1;
        p += strspn(p, " \t");
    }
    return 0;
}
