/* config_error.c — one formatter for every configuration error (see config_error.h). */
#include "config_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { QUOTE_MAX = 40 };

/* Copies src, cut to fit, with every byte outside printable ASCII replaced by '?':
 * keys and values quoted in messages come from untrusted files and environments. */
static void copy_str(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    dst[n] = '\0';
}

void gf__cfg_error_clear(gf_config_error *err)
{
    if (err)
        memset(err, 0, sizeof(*err));
}

void gf__cfg_error_set(gf_config_error *err, const char *file, int line, int column,
                       const char *key, const char *fmt, ...)
{
    if (!err)
        return;
    memset(err, 0, sizeof(*err));
    copy_str(err->file, sizeof(err->file), file ? file : "<config>");
    err->line = line;
    err->column = column;
    copy_str(err->key, sizeof(err->key), key ? key : "");

    char text[sizeof(err->text)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    copy_str(err->text, sizeof(err->text), text);

    /* Built piecewise: each part is bounded by its own field, and the message buffer
     * is larger than their sum, so nothing is cut. */
    size_t off = 0;
    size_t cap = sizeof(err->message);
    int n = snprintf(err->message, cap, "%s", err->file);
    off = (size_t)n;
    if (line > 0)
        off += (size_t)snprintf(err->message + off, cap - off, ":%d:%d", line, column);
    if (err->key[0])
        off += (size_t)snprintf(err->message + off, cap - off, ": key '%s'", err->key);
    snprintf(err->message + off, cap - off, ": %s", err->text);
}

char *gf__cfg_error_quote(char *buf, size_t size, const char *s, size_t len)
{
    size_t o = 0;
    size_t i = 0;
    if (size == 0)
        return buf;
    for (; i < len && i < QUOTE_MAX && o + 1 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (i < len && o + 4 < size) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}
