/*
 * tsv.c — the run directory's TSV files (tsv.h).
 *
 * Design notes: the text is parsed in one pass after counting its '\n's, which bounds the
 * rows, so each column's array is allocated once. Fields are never copied except a
 * number's (at most 63 bytes, into a stack buffer for strtod), and every access is
 * bounded by the line's end, so input cut anywhere cannot make the parser read past it.
 */
#include "tsv.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    const char *p;
    size_t n;
} span;

static gf_err fail(gf_tsv_error *err, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static gf_err fail(gf_tsv_error *err, size_t line, const char *fmt, ...)
{
    err->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return GF_ERR_INVALID;
}

bool gf_tsv_token_ok(const char *s, size_t len)
{
    if (len == 0 || len > GF_TSV_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == ':' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

/* Splits line into at most max fields; returns the count, or max + 1 if there are more. */
static size_t split(span line, span *fields, size_t max)
{
    size_t n = 0;
    const char *p = line.p, *end = line.p + line.n;
    for (;;) {
        const char *tab = memchr(p, '\t', (size_t)(end - p));
        const char *stop = tab ? tab : end;
        if (n == max)
            return max + 1;
        fields[n].p = p;
        fields[n].n = (size_t)(stop - p);
        n++;
        if (!tab)
            return n;
        p = tab + 1;
    }
}

/* A field quoted in a message: at most 40 bytes, non-printing bytes as '?'. */
static void quote(span f, char *buf, size_t size)
{
    size_t n = f.n < 40 ? f.n : 40;
    if (n >= size)
        n = size - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)f.p[i];
        buf[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    buf[n] = '\0';
    if (f.n > n && n >= 3)
        memcpy(buf + n - 3, "...", 3);
}

static bool number_chars_ok(span f)
{
    for (size_t i = 0; i < f.n; i++) {
        char c = f.p[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
            return false;
    }
    return f.n > 0;
}

static gf_err parse_num(span f, const gf_tsv_col *spec, const char *col, double *out,
                        gf_tsv_error *err, size_t line)
{
    char q[48];
    if (f.n == 0 || (f.n == 1 && f.p[0] == '-')) {
        if (!spec->blank_ok)
            return fail(err, line, "column '%s': a value is required", col);
        *out = NAN;
        return GF_OK;
    }
    char buf[64];
    if (f.n >= sizeof buf || !number_chars_ok(f)) {
        quote(f, q, sizeof q);
        return fail(err, line, "column '%s': '%s' is not a number", col, q);
    }
    memcpy(buf, f.p, f.n);
    buf[f.n] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + f.n || !isfinite(v) || errno == ERANGE) {
        quote(f, q, sizeof q);
        return fail(err, line, "column '%s': '%s' is not a number", col, q);
    }
    if (v < spec->min || v > spec->max) {
        quote(f, q, sizeof q);
        return fail(err, line, "column '%s': %s is out of range [%g, %g]", col, q, spec->min,
                    spec->max);
    }
    *out = v;
    return GF_OK;
}

int gf_tsv_key_index(const gf_tsv_column *c, const char *value)
{
    for (size_t i = 0; i < c->nkeys; i++)
        if (strcmp(c->keys[i], value) == 0)
            return (int)i;
    return -1;
}

static gf_err parse_key(span f, const gf_tsv_col *spec, gf_tsv_column *c, uint8_t *out,
                        gf_tsv_error *err, size_t line)
{
    char q[48];
    if (!gf_tsv_token_ok(f.p, f.n)) {
        quote(f, q, sizeof q);
        return fail(err, line, "column '%s': '%s' is not a name (1-64 of letters, digits, _ . : -)",
                    c->name, q);
    }
    char v[GF_TSV_NAME_MAX + 1];
    memcpy(v, f.p, f.n);
    v[f.n] = '\0';
    if (spec->values) {
        bool allowed = false;
        for (const char *const *a = spec->values; *a; a++)
            allowed = allowed || strcmp(*a, v) == 0;
        if (!allowed)
            return fail(err, line, "column '%s': '%s' is not one of the allowed values", c->name,
                        v);
    }
    int i = gf_tsv_key_index(c, v);
    if (i < 0) {
        if (c->nkeys == GF_TSV_MAX_KEYS)
            return fail(err, line, "column '%s': more than %d distinct values", c->name,
                        GF_TSV_MAX_KEYS);
        memcpy(c->keys[c->nkeys], v, f.n + 1);
        i = (int)c->nkeys++;
    }
    *out = (uint8_t)i;
    return GF_OK;
}

void gf_tsv_free(gf_tsv_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ncols; i++) {
        free(t->cols[i].num);
        free(t->cols[i].key);
    }
    free(t->cols);
    free(t);
}

const gf_tsv_column *gf_tsv_find(const gf_tsv_table *t, const char *name)
{
    for (size_t i = 0; t && i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return &t->cols[i];
    return NULL;
}

/* The next line of text from *pos: its span without "\n" / "\r\n"; *terminated false for
 * a last line without '\n'. false at the end of the text. */
static bool next_line(const char *text, size_t len, size_t *pos, span *line, bool *terminated)
{
    if (*pos >= len)
        return false;
    const char *p = text + *pos;
    const char *nl = memchr(p, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - p) : len - *pos;
    *terminated = nl != NULL;
    *pos += n + (nl ? 1 : 0);
    if (n > 0 && p[n - 1] == '\r')
        n--;
    line->p = p;
    line->n = n;
    return true;
}

typedef struct header {
    size_t nfields;
    int map[GF_TSV_MAX_COLS]; /* header field -> table column, -1: ignored */
    const gf_tsv_col *spec[GF_TSV_MAX_COLS];
} header;

static gf_err read_header(span line, size_t lineno, const gf_tsv_col *spec, size_t nspec,
                          const gf_tsv_col *rest, gf_tsv_table *t, header *h, gf_tsv_error *err)
{
    span f[GF_TSV_MAX_COLS];
    size_t n = split(line, f, GF_TSV_MAX_COLS);
    if (n > GF_TSV_MAX_COLS)
        return fail(err, lineno, "header: more than %d columns", GF_TSV_MAX_COLS);
    h->nfields = n;
    for (size_t i = 0; i < n; i++) {
        char q[48];
        if (!gf_tsv_token_ok(f[i].p, f[i].n)) {
            quote(f[i], q, sizeof q);
            return fail(err, lineno, "header: '%s' is not a column name", q);
        }
        for (size_t j = 0; j < i; j++)
            if (f[j].n == f[i].n && memcmp(f[j].p, f[i].p, f[i].n) == 0) {
                quote(f[i], q, sizeof q);
                return fail(err, lineno, "header: column '%s' appears twice", q);
            }
        h->map[i] = -1;
    }
    t->ncols = nspec;
    for (size_t s = 0; s < nspec; s++) {
        gf_tsv_column *c = &t->cols[s];
        snprintf(c->name, sizeof c->name, "%s", spec[s].name);
        c->kind = spec[s].kind;
        for (size_t i = 0; i < n; i++)
            if (f[i].n == strlen(spec[s].name) && memcmp(f[i].p, spec[s].name, f[i].n) == 0) {
                h->map[i] = (int)s;
                h->spec[i] = &spec[s];
                c->present = true;
            }
        if (!c->present && !spec[s].optional)
            return fail(err, lineno, "header: no column '%s'", spec[s].name);
    }
    for (size_t i = 0; rest && i < n; i++) {
        if (h->map[i] >= 0)
            continue;
        if (t->ncols == GF_TSV_MAX_COLS)
            return fail(err, lineno, "header: more than %d columns", GF_TSV_MAX_COLS);
        gf_tsv_column *c = &t->cols[t->ncols];
        memcpy(c->name, f[i].p, f[i].n);
        c->name[f[i].n] = '\0';
        c->kind = rest->kind;
        c->present = true;
        h->map[i] = (int)t->ncols++;
        h->spec[i] = rest;
    }
    return GF_OK;
}

static gf_err alloc_columns(gf_tsv_table *t, size_t cap)
{
    for (size_t i = 0; i < t->ncols; i++) {
        gf_tsv_column *c = &t->cols[i];
        if (c->kind == GF_TSV_NUM) {
            c->num = malloc(sizeof *c->num * (cap ? cap : 1));
            if (!c->num)
                return GF_ERR_NOMEM;
        } else {
            c->key = calloc(cap ? cap : 1, 1);
            if (!c->key)
                return GF_ERR_NOMEM;
        }
    }
    return GF_OK;
}

static gf_err read_row(span line, size_t lineno, gf_tsv_table *t, const header *h,
                       gf_tsv_error *err)
{
    span f[GF_TSV_MAX_COLS];
    size_t n = split(line, f, h->nfields);
    if (n != h->nfields)
        return fail(err, lineno, "%s%zu fields, the header has %zu",
                    n > h->nfields ? "more than " : "", n > h->nfields ? h->nfields : n,
                    h->nfields);
    size_t r = t->nrows;
    for (size_t i = 0; i < n; i++) {
        if (h->map[i] < 0)
            continue;
        gf_tsv_column *c = &t->cols[h->map[i]];
        gf_err e = c->kind == GF_TSV_NUM
                       ? parse_num(f[i], h->spec[i], c->name, &c->num[r], err, lineno)
                       : parse_key(f[i], h->spec[i], c, &c->key[r], err, lineno);
        if (e != GF_OK)
            return e;
    }
    /* An optional column absent from the header reads as not measured / key 0 (none). */
    for (size_t i = 0; i < t->ncols; i++)
        if (!t->cols[i].present && t->cols[i].kind == GF_TSV_NUM)
            t->cols[i].num[r] = NAN;
    t->nrows++;
    return GF_OK;
}

gf_err gf_tsv_parse(const char *text, size_t len, const char *name, const gf_tsv_col *spec,
                    size_t nspec, const gf_tsv_col *rest, gf_tsv_table **out, gf_tsv_error *err)
{
    gf_tsv_error scratch;
    if (!err)
        err = &scratch;
    err->line = 0;
    err->message[0] = '\0';
    *out = NULL;
    if ((!text && len) || nspec > GF_TSV_MAX_COLS || (nspec && !spec))
        return fail(err, 0, "bad arguments");
    size_t cap = 0;
    for (const char *p = text; p && (p = memchr(p, '\n', len - (size_t)(p - text))); p++)
        cap++;
    gf_err e = GF_OK;
    gf_tsv_table *t = calloc(1, sizeof *t);
    if (!t || !(t->cols = calloc(GF_TSV_MAX_COLS, sizeof *t->cols))) {
        free(t);
        return GF_ERR_NOMEM;
    }
    header h = {0};
    bool have_header = false;
    size_t pos = 0, lineno = 0;
    span line;
    bool terminated;
    while (next_line(text, len, &pos, &line, &terminated)) {
        lineno++;
        if (!terminated) {
            t->partial_last = line.n > 0;
            break;
        }
        if (line.n > GF_TSV_LINE_MAX) {
            e = fail(err, lineno, "line longer than %d bytes", GF_TSV_LINE_MAX);
            goto out;
        }
        if (line.n == 0 || line.p[0] == '#')
            continue;
        if (!have_header) {
            e = read_header(line, lineno, spec, nspec, rest, t, &h, err);
            if (e == GF_OK)
                e = alloc_columns(t, cap);
            if (e != GF_OK)
                goto out;
            have_header = true;
            continue;
        }
        if (t->nrows == GF_TSV_ROWS_MAX) {
            e = fail(err, lineno, "more than %d rows", GF_TSV_ROWS_MAX);
            goto out;
        }
        e = read_row(line, lineno, t, &h, err);
        if (e != GF_OK)
            goto out;
    }
    if (!have_header)
        e = fail(err, 0, "no header line");
out:
    if (e != GF_OK) {
        char msg[sizeof err->message];
        memcpy(msg, err->message, sizeof msg);
        if (e == GF_ERR_NOMEM)
            snprintf(msg, sizeof msg, "out of memory");
        if (err->line)
            snprintf(err->message, sizeof err->message, "%s:%zu: %s", name, err->line, msg);
        else
            snprintf(err->message, sizeof err->message, "%s: %s", name, msg);
        gf_tsv_free(t);
        return e;
    }
    *out = t;
    return GF_OK;
}
