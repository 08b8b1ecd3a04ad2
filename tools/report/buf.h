/*
 * buf.h — a growable byte buffer for building the report and gnuplot's scripts.
 *
 * Appending never fails on the spot: an allocation failure sets `oom`, later appends do
 * nothing, and the owner checks `oom` once at the end (one check instead of one per
 * line of HTML). The text is always NUL-terminated when p is not NULL.
 *
 * gf_buf_html escapes for HTML text and attribute values (& < > " '), and writes C0
 * control bytes other than tab and newline as U+FFFD: every string that comes from the
 * run's data goes through it. Ownership: the buffer owns p; gf_buf_free releases it.
 */
#ifndef GAMEFN_REPORT_BUF_H
#define GAMEFN_REPORT_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gf_buf {
    char *p;
    size_t len, cap;
    bool oom;
} gf_buf;

void gf_buf_put(gf_buf *b, const char *s, size_t n);
void gf_buf_puts(gf_buf *b, const char *s);
void gf_buf_printf(gf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gf_buf_html(gf_buf *b, const char *s);
void gf_buf_html_n(gf_buf *b, const char *s, size_t n);
void gf_buf_free(gf_buf *b);

#endif
