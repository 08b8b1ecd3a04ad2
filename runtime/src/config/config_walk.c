/*
 * config_walk.c — the table walker (see config_walk.h).
 *
 * Design notes: recursion depth is bounded by the tables (a table cannot nest more
 * often than its own definition), not by the input: the walker only descends where a
 * row says OBJECT or OBJECT_LIST, and the tree itself was depth-limited by
 * config_yaml.c. Per-mapping bookkeeping (which rows were seen, for duplicates and
 * defaults) lives in the scratch arena, so a walk allocates nothing it must free.
 */
#include "config_walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config_arena.h"
#include "config_error.h"
#include "config_value.h"

enum { SUGGEST_MAX = 64 };

void gf__cfg_walk_init(cfg_walk *w, const char *file, struct gf_config_arena *arena,
                       gf_config_error *err)
{
    memset(w, 0, sizeof(*w));
    w->file = file;
    w->arena = arena;
    w->err = err;
}

void gf__cfg_walk_fini(cfg_walk *w)
{
    gf_config_arena_free(w->scratch);
    w->scratch = NULL;
}

static void path_append(cfg_walk *w, const char *s)
{
    size_t n = strlen(s);
    if (w->path_len + n >= sizeof(w->path))
        n = sizeof(w->path) - 1 - w->path_len;
    memcpy(w->path + w->path_len, s, n);
    w->path_len += n;
    w->path[w->path_len] = '\0';
}

size_t gf__cfg_walk_push_key(cfg_walk *w, const char *key)
{
    size_t old = w->path_len;
    if (w->path_len)
        path_append(w, ".");
    path_append(w, key);
    return old;
}

size_t gf__cfg_walk_push_index(cfg_walk *w, size_t index)
{
    char buf[32];
    size_t old = w->path_len;
    snprintf(buf, sizeof(buf), "[%zu]", index);
    path_append(w, buf);
    return old;
}

void gf__cfg_walk_pop(cfg_walk *w, size_t len)
{
    w->path_len = len;
    w->path[len] = '\0';
}

gf_err gf__cfg_walk_fail(cfg_walk *w, int line, int col, const char *fmt, ...)
{
    char text[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (w->in_default)
        gf__cfg_error_set(w->err, w->file, w->def_line, w->def_col, w->path,
                          "invalid default in the table: %s", text);
    else
        gf__cfg_error_set(w->err, w->file, line, col, w->path, "%s", text);
    return GF_ERR_CONFIG;
}

static gf_err nomem(cfg_walk *w)
{
    gf__cfg_error_set(w->err, w->file, 0, 0, w->path, "out of memory");
    return GF_ERR_NOMEM;
}

static struct gf_config_arena *scratch(cfg_walk *w)
{
    if (!w->scratch)
        w->scratch = gf__cfg_arena_new();
    return w->scratch;
}

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

/* Levenshtein distance, case-insensitive; SUGGEST_MAX + 1 when either is too long. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t row[SUGGEST_MAX + 1];
    if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
        return SUGGEST_MAX + 1;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (lower(a[i - 1]) != lower(b[j - 1]));
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *gf__cfg_walk_suggest(const gf_cfg_table *t, const char *key, const char *extra)
{
    size_t len = strlen(key);
    size_t limit = len <= 4 ? 1 : len <= 7 ? 2 : 3;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (size_t i = 0; i <= t->nfields; i++) {
        const char *cand = i < t->nfields ? t->fields[i].key : extra;
        if (!cand)
            continue;
        size_t d = distance(key, cand);
        if (d < best_d) {
            best_d = d;
            best = cand;
        }
    }
    return best;
}

static gf_err scalar_text(cfg_walk *w, gf_cfg_type type, const cfg_node *v, const char **text)
{
    if (v->kind != CFG_NODE_SCALAR)
        return gf__cfg_walk_fail(w, v->line, v->column, "wrong type: expected %s, got %s",
                                 gf__cfg_value_type_name(type), gf__cfg_node_kind_name(v));
    if (strlen(v->text) != v->len)
        return gf__cfg_walk_fail(w, v->line, v->column, "value contains a NUL byte");
    *text = v->text;
    return GF_OK;
}

static gf_err read_scalar(cfg_walk *w, const gf_cfg_field *f, gf_cfg_type type, const cfg_node *v,
                          cfg_scalar *out)
{
    const char *text = NULL;
    char why[200];
    gf_err rc = scalar_text(w, type, v, &text);
    if (rc != GF_OK)
        return rc;
    if (!gf__cfg_value_parse(f, type, text, out, why, sizeof(why)))
        return gf__cfg_walk_fail(w, v->line, v->column, "%s", why);
    return GF_OK;
}

static gf_err list_header(cfg_walk *w, const gf_cfg_field *f, const cfg_node *v)
{
    char range[96];
    if (v->kind != CFG_NODE_SEQUENCE)
        return gf__cfg_walk_fail(w, v->line, v->column, "wrong type: expected %s, got %s",
                                 gf__cfg_value_type_name(f->type), gf__cfg_node_kind_name(v));
    if (!gf__cfg_value_in_bounds(f, (double)v->count)) {
        gf__cfg_value_range_text(f, range, sizeof(range));
        return gf__cfg_walk_fail(w, v->line, v->column, "list has %zu entries; allowed: %s",
                                 v->count, range);
    }
    return GF_OK;
}

/* A list field's array pointer and its count, into the struct. */
static void store_list(const gf_cfg_field *f, void *base, void *items, size_t count)
{
    memcpy((unsigned char *)base + f->offset, &items, sizeof(items));
    memcpy((unsigned char *)base + f->count_offset, &count, sizeof(count));
}

static gf_err read_scalar_list(cfg_walk *w, const gf_cfg_field *f, const cfg_node *v, void *base)
{
    gf_err rc = list_header(w, f, v);
    bool strings = f->type == GF_CFG_STRING_LIST;
    void *items = NULL;
    size_t i = 0;
    if (rc != GF_OK)
        return rc;
    if (v->count > 0) {
        items =
            gf__cfg_arena_calloc(w->arena, v->count, strings ? sizeof(char *) : sizeof(int64_t));
        if (!items)
            return nomem(w);
    }
    for (const cfg_node *it = v->child; it; it = it->next, i++) {
        size_t saved = gf__cfg_walk_push_index(w, i);
        const char *text = NULL;
        cfg_scalar s = {0};
        if (gf__cfg_node_is_null(it))
            rc = gf__cfg_walk_fail(w, it->line, it->column, "list entry is empty");
        else if (strings && (rc = scalar_text(w, GF_CFG_STRING, it, &text)) == GF_OK) {
            char *copy = gf__cfg_arena_strndup(w->arena, text, it->len);
            if (!copy)
                rc = nomem(w);
            else
                ((const char **)items)[i] = copy;
        } else if (!strings && (rc = read_scalar(w, f, GF_CFG_DURATION, it, &s)) == GF_OK) {
            ((int64_t *)items)[i] = s.i;
        }
        gf__cfg_walk_pop(w, saved);
        if (rc != GF_OK)
            return rc;
    }
    store_list(f, base, items, v->count);
    return GF_OK;
}

static gf_err read_object_list(cfg_walk *w, const gf_cfg_field *f, const cfg_node *v, void *base)
{
    gf_err rc = list_header(w, f, v);
    unsigned char *items = NULL;
    size_t i = 0;
    if (rc != GF_OK)
        return rc;
    if (v->count > 0) {
        items = gf__cfg_arena_calloc(w->arena, v->count, f->sub->size);
        if (!items)
            return nomem(w);
    }
    for (const cfg_node *it = v->child; it; it = it->next, i++) {
        size_t saved = gf__cfg_walk_push_index(w, i);
        if (!gf__cfg_node_is_null(it) && it->kind != CFG_NODE_MAPPING)
            rc = gf__cfg_walk_fail(w, it->line, it->column, "wrong type: expected mapping, got %s",
                                   gf__cfg_node_kind_name(it));
        else
            rc = gf__cfg_walk_table(w, f->sub, it, it->line, it->column, items + i * f->sub->size,
                                    NULL);
        gf__cfg_walk_pop(w, saved);
        if (rc != GF_OK)
            return rc;
    }
    store_list(f, base, items, v->count);
    return GF_OK;
}

gf_err gf__cfg_walk_value(cfg_walk *w, const gf_cfg_field *f, const cfg_node *v, void *base)
{
    gf_err rc = GF_OK;
    switch (f->type) {
    case GF_CFG_STRING: {
        const char *text = NULL;
        if ((rc = scalar_text(w, f->type, v, &text)) != GF_OK)
            return rc;
        char *copy = gf__cfg_arena_strndup(w->arena, text, v->len);
        if (!copy)
            return nomem(w);
        memcpy((unsigned char *)base + f->offset, &copy, sizeof(copy));
        return GF_OK;
    }
    case GF_CFG_STRING_LIST:
    case GF_CFG_DURATION_LIST:
        return read_scalar_list(w, f, v, base);
    case GF_CFG_OBJECT:
        if (v->kind != CFG_NODE_MAPPING)
            return gf__cfg_walk_fail(w, v->line, v->column, "wrong type: expected mapping, got %s",
                                     gf__cfg_node_kind_name(v));
        return gf__cfg_walk_table(w, f->sub, v, v->line, v->column,
                                  (unsigned char *)base + f->offset, NULL);
    case GF_CFG_OBJECT_LIST:
        return read_object_list(w, f, v, base);
    default: {
        cfg_scalar s = {0};
        if ((rc = read_scalar(w, f, f->type, v, &s)) != GF_OK)
            return rc;
        gf__cfg_value_store(f, base, &s);
        return GF_OK;
    }
    }
}

gf_err gf__cfg_walk_default(cfg_walk *w, const gf_cfg_field *f, int line, int col, void *base)
{
    cfg_node *root = NULL;
    gf_err rc = GF_OK;

    if (f->type == GF_CFG_OBJECT)
        return gf__cfg_walk_table(w, f->sub, NULL, line, col, (unsigned char *)base + f->offset,
                                  NULL);
    if (!f->def)
        return GF_OK;
    if (!scratch(w))
        return nomem(w);
    rc = gf__cfg_yaml_parse("default", f->def, strlen(f->def), w->scratch, &root, w->err);
    if (rc == GF_ERR_NOMEM)
        return nomem(w);
    if (rc != GF_OK)
        return gf__cfg_walk_fail(w, line, col,
                                 "invalid default in the table: '%s' is not valid YAML", f->def);
    if (gf__cfg_node_is_null(root))
        return GF_OK;
    bool was = w->in_default;
    if (!was) {
        /* Errors inside a default point at the mapping that lacks the key. */
        w->def_line = line;
        w->def_col = col;
    }
    w->in_default = true;
    rc = gf__cfg_walk_value(w, f, root, base);
    w->in_default = was;
    return rc;
}

/* The key is absent (or null): its default, or the required-key error at line:col. */
static gf_err absent(cfg_walk *w, const gf_cfg_field *f, int line, int col, void *base)
{
    if (f->required)
        return gf__cfg_walk_fail(w, line, col, "required key is missing");
    return gf__cfg_walk_default(w, f, line, col, base);
}

static gf_err run_validate(cfg_walk *w, const gf_cfg_table *t, const cfg_node *node, int line,
                           int col, const void *base)
{
    gf_cfg_problem p;
    memset(&p, 0, sizeof(p));
    if (!t->validate || t->validate(base, &p))
        return GF_OK;
    size_t saved = w->path_len;
    if (p.key) {
        const cfg_node *v = gf__cfg_node_get(node, p.key);
        if (v && !gf__cfg_node_is_null(v)) {
            line = v->line;
            col = v->column;
        }
        gf__cfg_walk_push_key(w, p.key);
    }
    p.text[sizeof(p.text) - 1] = '\0';
    gf_err rc = gf__cfg_walk_fail(w, line, col, "%s", p.text[0] ? p.text : "invalid value");
    gf__cfg_walk_pop(w, saved);
    return rc;
}

gf_err gf__cfg_walk_table(cfg_walk *w, const gf_cfg_table *t, const cfg_node *node, int line,
                          int col, void *base, const char *skip_key)
{
    const cfg_node **seen = NULL;
    const cfg_node *skip_seen = NULL;
    gf_err rc = GF_OK;

    if (gf__cfg_node_is_null(node)) {
        node = NULL;
    } else if (node->kind != CFG_NODE_MAPPING) {
        return gf__cfg_walk_fail(w, node->line, node->column,
                                 "wrong type: expected mapping, got %s",
                                 gf__cfg_node_kind_name(node));
    } else {
        line = node->line;
        col = node->column;
    }
    if (!scratch(w) || !(seen = gf__cfg_arena_calloc(w->scratch, t->nfields + 1, sizeof(*seen))))
        return nomem(w);

    for (const cfg_node *k = node ? node->child : NULL; k && k->next; k = k->next->next) {
        const cfg_node *v = k->next;
        size_t idx = t->nfields;
        if (k->kind != CFG_NODE_SCALAR)
            return gf__cfg_walk_fail(w, k->line, k->column, "a key must be a scalar, got %s",
                                     gf__cfg_node_kind_name(k));
        bool clean = strlen(k->text) == k->len;
        for (size_t i = 0; clean && i < t->nfields; i++) {
            if (strcmp(t->fields[i].key, k->text) == 0) {
                idx = i;
                break;
            }
        }
        size_t saved = gf__cfg_walk_push_key(w, k->text);
        if (idx == t->nfields && clean && skip_key && strcmp(k->text, skip_key) == 0) {
            if (skip_seen)
                rc = gf__cfg_walk_fail(w, k->line, k->column, "duplicate key (first at line %d)",
                                       skip_seen->line);
            skip_seen = k;
        } else if (idx == t->nfields) {
            const char *hint = gf__cfg_walk_suggest(t, k->text, skip_key);
            char quoted[64];
            gf__cfg_error_quote(quoted, sizeof(quoted), k->text, k->len);
            if (hint)
                rc = gf__cfg_walk_fail(w, k->line, k->column,
                                       "unknown key '%s' (did you mean '%s'?)", quoted, hint);
            else
                rc = gf__cfg_walk_fail(w, k->line, k->column, "unknown key '%s' in %s", quoted,
                                       t->name ? t->name : "this section");
        } else if (seen[idx]) {
            rc = gf__cfg_walk_fail(w, k->line, k->column, "duplicate key (first at line %d)",
                                   seen[idx]->line);
        } else {
            seen[idx] = k;
            if (gf__cfg_node_is_null(v))
                rc = absent(w, &t->fields[idx], k->line, k->column, base);
            else
                rc = gf__cfg_walk_value(w, &t->fields[idx], v, base);
        }
        gf__cfg_walk_pop(w, saved);
        if (rc != GF_OK)
            return rc;
    }
    for (size_t i = 0; i < t->nfields; i++) {
        if (seen[i])
            continue;
        size_t saved = gf__cfg_walk_push_key(w, t->fields[i].key);
        rc = absent(w, &t->fields[i], line, col, base);
        gf__cfg_walk_pop(w, saved);
        if (rc != GF_OK)
            return rc;
    }
    return run_validate(w, t, node, line, col, base);
}
