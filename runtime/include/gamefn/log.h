/*
 * gamefn/log.h — logfmt lines on stderr, one per event:
 *
 *   ts=2026-11-29T15:32:16.123Z level=warn fn=matcher msg="claim lost" ticket=t-42
 *
 * The sink (stderr, level, function name) is the one piece of global state the
 * runtime keeps. Writing a line is thread-safe (one fputs of a prepared line).
 * `fields` is a printf format for the key=value part; values that may contain
 * spaces or quotes go through %s with gf_log_quote() or are written as key="%s"
 * by the caller when they are known to be clean. Never log secrets or payloads.
 */
#ifndef GAMEFN_LOG_H
#define GAMEFN_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum gf_log_level {
    GF_LOG_DEBUG = 0,
    GF_LOG_INFO,
    GF_LOG_WARN,
    GF_LOG_ERROR,
    GF_LOG_OFF,
} gf_log_level;

/* Name and level of the process's log sink. `fn` is copied. */
void gf_log_init(const char *fn, gf_log_level level);
void gf_log_set_level(gf_log_level level);
gf_log_level gf_log_get_level(void);

/* "debug", "info", "warn", "error", "off" -> level. Returns 0 on success, -1 if unknown. */
int gf_log_level_parse(const char *name, gf_log_level *out);
const char *gf_log_level_name(gf_log_level level);

/* Writes one line if `level` is enabled. `fields` may be NULL. */
void gf_log(gf_log_level level, const char *msg, const char *fields, ...)
    __attribute__((format(printf, 3, 4)));

/* Rate-bounds a repeated warning: true at most once per `every_ms` for one
 * `*last_mono_ms` (monotonic ms of the last true, 0 = never, updated here), whichever
 * thread asks. */
bool gf_log_due(_Atomic int64_t *last_mono_ms, int64_t every_ms);

/* Writes `s` into buf as a logfmt-quoted value ("..." with \" and \\ escaped,
 * control characters as \n, \t or \xNN). Truncates to fit; always NUL-terminates.
 * Returns buf, so it can be used as a printf argument. */
char *gf_log_quote(char *buf, size_t size, const char *s);

#define gf_log_debug(msg, ...) gf_log(GF_LOG_DEBUG, msg, __VA_ARGS__)
#define gf_log_info(msg, ...)  gf_log(GF_LOG_INFO, msg, __VA_ARGS__)
#define gf_log_warn(msg, ...)  gf_log(GF_LOG_WARN, msg, __VA_ARGS__)
#define gf_log_error(msg, ...) gf_log(GF_LOG_ERROR, msg, __VA_ARGS__)

#endif
