/*
 * log.c — the logfmt sink.
 *
 * Design: each call formats the whole line into a stack buffer and writes it
 * with one fputs() under stdio's own stream lock, so lines from nats.c callback
 * threads never interleave. Lines longer than the buffer are truncated with "…"
 * rather than split. The level is an atomic (relaxed): it may be changed while
 * other threads log (a library's threads, a test silencing expected errors).
 */
#include "gamefn/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gamefn/clock.h"

static char log_fn[64] = "gamefn";
static atomic_int log_level = GF_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

void gf_log_init(const char *fn, gf_log_level level)
{
    snprintf(log_fn, sizeof log_fn, "%s", fn ? fn : "gamefn");
    atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

void gf_log_set_level(gf_log_level level)
{
    atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

bool gf_log_due(_Atomic int64_t *last_mono_ms, int64_t every_ms)
{
    int64_t now = gf_clock_mono_ms(), last = atomic_load(last_mono_ms);
    return (last == 0 || now - last >= every_ms) &&
           atomic_compare_exchange_strong(last_mono_ms, &last, now);
}

gf_log_level gf_log_get_level(void)
{
    return (gf_log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

int gf_log_level_parse(const char *name, gf_log_level *out)
{
    for (int i = GF_LOG_DEBUG; i <= GF_LOG_OFF; i++) {
        if (name && strcmp(name, level_names[i]) == 0) {
            *out = (gf_log_level)i;
            return 0;
        }
    }
    return -1;
}

const char *gf_log_level_name(gf_log_level level)
{
    if (level < GF_LOG_DEBUG || level > GF_LOG_OFF)
        return "unknown";
    return level_names[level];
}

char *gf_log_quote(char *buf, size_t size, const char *s)
{
    size_t n = 0;
    if (size < 3) {
        if (size)
            buf[0] = '\0';
        return buf;
    }
    buf[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        char esc[5];
        size_t len;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            len = 2;
        } else if (*p == '\n') {
            memcpy(esc, "\\n", 2);
            len = 2;
        } else if (*p == '\t') {
            memcpy(esc, "\\t", 2);
            len = 2;
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", *p);
            len = 4;
        } else {
            esc[0] = (char)*p;
            len = 1;
        }
        if (n + len + 2 > size)
            break;
        memcpy(buf + n, esc, len);
        n += len;
    }
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

void gf_log(gf_log_level level, const char *msg, const char *fields, ...)
{
    if ((int)level < atomic_load_explicit(&log_level, memory_order_relaxed) || level >= GF_LOG_OFF)
        return;

    char line[2048];
    char quoted[512];
    char ts[GF_CLOCK_RFC3339_MAX];

    int n = snprintf(line, sizeof line, "ts=%s level=%s fn=%s msg=%s",
                     gf_clock_rfc3339(gf_clock_unix_ns(), 3, ts, sizeof ts), level_names[level],
                     log_fn, gf_log_quote(quoted, sizeof quoted, msg));
    if (n < 0)
        return;
    if ((size_t)n < sizeof line - 2 && fields && fields[0]) {
        line[n++] = ' ';
        va_list ap;
        va_start(ap, fields);
        int m = vsnprintf(line + n, sizeof line - (size_t)n, fields, ap);
        va_end(ap);
        if (m > 0)
            n += m;
    }
    if ((size_t)n >= sizeof line - 1) {
        n = (int)sizeof line - 5;
        memcpy(line + n, "\xe2\x80\xa6", 3); /* "…" marks truncation */
        n += 3;
    }
    line[n++] = '\n';
    line[n] = '\0';
    fputs(line, stderr);
}
