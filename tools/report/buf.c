/*
 * buf.c — growable buffer with HTML escaping (buf.h).
 */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(gf_buf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void gf_buf_put(gf_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void gf_buf_puts(gf_buf *b, const char *s)
{
    gf_buf_put(b, s, strlen(s));
}

void gf_buf_printf(gf_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        gf_buf_put(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void gf_buf_html_n(gf_buf *b, const char *s, size_t n)
{
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        switch (c) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&#39;";
            break;
        default:
            if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
                rep = "\xef\xbf\xbd"; /* U+FFFD */
        }
        if (!rep) {
            run++;
            continue;
        }
        gf_buf_put(b, s + i - run, run);
        run = 0;
        gf_buf_puts(b, rep);
    }
    gf_buf_put(b, s + n - run, run);
}

void gf_buf_html(gf_buf *b, const char *s)
{
    if (s)
        gf_buf_html_n(b, s, strlen(s));
}

void gf_buf_free(gf_buf *b)
{
    if (!b)
        return;
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}
