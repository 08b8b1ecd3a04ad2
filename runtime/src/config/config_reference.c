/*
 * config_reference.c — a table as Markdown (gf_config_write_reference) and the
 * self-check of a table (gf_config_table_check).
 *
 * Design notes: docs/CONFIG.md is produced from the same rows the parser reads, so
 * the reference cannot drift from the code (tests/unit/test_config_reference.c fails
 * when it does). The table check reuses the walker to parse every default, so a
 * default that the parser would refuse is caught by a unit test, not at a deploy.
 */
#include <stdio.h>
#include <string.h>

#include "config_arena.h"
#include "config_error.h"
#include "config_value.h"
#include "config_walk.h"
#include "gamefn/config.h"

enum { NEST_MAX = 8 };

/* Help text is plain prose: characters Markdown would act on inside a table cell are
 * escaped so the rendered text is the text in the table. */
static void put_escaped(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '|':
        case '\\':
        case '*':
            fputc('\\', f);
            fputc(*s, f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '\n':
            fputc(' ', f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* Inside a code span only '|' needs escaping (GFM splits cells before code spans). */
static void put_code(FILE *f, const char *s)
{
    fputc('`', f);
    for (; s && *s; s++) {
        if (*s == '|')
            fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('`', f);
}

static void put_type(FILE *f, const gf_cfg_field *fd)
{
    fputs(gf__cfg_value_type_name(fd->type), f);
    if (fd->type != GF_CFG_ENUM)
        return;
    fputs(": ", f);
    for (const gf_cfg_enum_value *e = fd->enums; e && e->name; e++)
        fprintf(f, "%s`%s`", e == fd->enums ? "" : ", ", e->name);
}

static void put_default(FILE *f, const gf_cfg_field *fd)
{
    if (fd->required)
        fputs("**required**", f);
    else if (fd->def)
        put_code(f, fd->def);
    else if (fd->type == GF_CFG_STRING)
        fputs("unset", f);
    else if (gf__cfg_value_is_list(fd->type))
        fputs("`[]`", f);
}

static void write_rows(FILE *f, const gf_cfg_table *t, const char *prefix, int depth)
{
    char key[256];
    char range[96];
    if (depth > NEST_MAX)
        return;
    for (size_t i = 0; i < t->nfields; i++) {
        const gf_cfg_field *fd = &t->fields[i];
        snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", fd->key);
        gf__cfg_value_range_text(fd, range, sizeof(range));
        fprintf(f, "| `%s` | ", key);
        put_type(f, fd);
        fputs(" | ", f);
        put_default(f, fd);
        fputs(" | ", f);
        put_escaped(f, range);
        fputs(" | ", f);
        put_escaped(f, fd->help);
        fputs(" |\n", f);
        if (fd->type == GF_CFG_OBJECT && fd->sub) {
            write_rows(f, fd->sub, key, depth + 1);
        } else if (fd->type == GF_CFG_OBJECT_LIST && fd->sub) {
            char sub[260];
            snprintf(sub, sizeof(sub), "%s[]", key);
            write_rows(f, fd->sub, sub, depth + 1);
        }
    }
}

gf_err gf_config_write_reference(FILE *f, const gf_cfg_table *table, const char *prefix)
{
    if (!f || !table)
        return GF_ERR_INVALID;
    fputs("| key | type | default | range | description |\n", f);
    fputs("|---|---|---|---|---|\n", f);
    write_rows(f, table, prefix ? prefix : "", 0);
    return ferror(f) ? GF_ERR_IO : GF_OK;
}

static size_t member_size(gf_cfg_type type)
{
    switch (type) {
    case GF_CFG_STRING:
    case GF_CFG_STRING_LIST:
    case GF_CFG_DURATION_LIST:
    case GF_CFG_OBJECT_LIST:
        return sizeof(void *);
    case GF_CFG_INT:
    case GF_CFG_DURATION:
    case GF_CFG_SIZE:
        return sizeof(int64_t);
    case GF_CFG_DOUBLE:
        return sizeof(double);
    case GF_CFG_BOOL:
        return sizeof(bool);
    case GF_CFG_ENUM:
        return sizeof(int);
    case GF_CFG_OBJECT:
        return 0; /* checked against sub->size */
    }
    return 0;
}

static gf_err check_table(cfg_walk *w, const gf_cfg_table *t, void *buf, int depth);

static gf_err check_field(cfg_walk *w, const gf_cfg_table *t, const gf_cfg_field *f, void *buf,
                          int depth)
{
    size_t msize = f->type == GF_CFG_OBJECT && f->sub ? f->sub->size : member_size(f->type);
    if ((int)f->type < GF_CFG_STRING || f->type > GF_CFG_OBJECT_LIST)
        return gf__cfg_walk_fail(w, 0, 0, "unknown type %d", (int)f->type);
    if (f->offset > t->size || msize > t->size - f->offset)
        return gf__cfg_walk_fail(w, 0, 0, "offset %zu is outside the %zu-byte struct", f->offset,
                                 t->size);
    if (gf__cfg_value_is_list(f->type) &&
        (f->count_offset > t->size || sizeof(size_t) > t->size - f->count_offset ||
         f->count_offset == f->offset))
        return gf__cfg_walk_fail(w, 0, 0, "list has no valid count_offset");
    if (f->type == GF_CFG_ENUM && (!f->enums || !f->enums[0].name))
        return gf__cfg_walk_fail(w, 0, 0, "enum without values");
    if ((f->type == GF_CFG_OBJECT || f->type == GF_CFG_OBJECT_LIST) &&
        (!f->sub || f->sub->size == 0))
        return gf__cfg_walk_fail(w, 0, 0, "%s without a sub-table",
                                 gf__cfg_value_type_name(f->type));
    if (f->type == GF_CFG_OBJECT && f->def)
        return gf__cfg_walk_fail(w, 0, 0,
                                 "an object takes its defaults from its sub-table, not def");
    if (f->required && f->def)
        return gf__cfg_walk_fail(w, 0, 0, "required and has a default");
    if (!(f->min == 0 && f->max == 0) && f->max < f->min)
        return gf__cfg_walk_fail(w, 0, 0, "min is above max");
    if (f->type == GF_CFG_OBJECT || f->type == GF_CFG_OBJECT_LIST) {
        struct gf_config_arena *a = gf__cfg_arena_new();
        void *sub = a ? gf__cfg_arena_calloc(a, 1, f->sub->size) : NULL;
        gf_err rc = sub ? check_table(w, f->sub, sub, depth + 1) : GF_ERR_NOMEM;
        gf_config_arena_free(a);
        if (rc != GF_OK || f->type == GF_CFG_OBJECT)
            return rc;
    }
    return gf__cfg_walk_default(w, f, 0, 0, buf);
}

static gf_err check_table(cfg_walk *w, const gf_cfg_table *t, void *buf, int depth)
{
    if (depth > NEST_MAX)
        return gf__cfg_walk_fail(w, 0, 0, "tables nest deeper than %d (a cycle?)", NEST_MAX);
    if (!t->fields && t->nfields)
        return gf__cfg_walk_fail(w, 0, 0, "table %s has no rows", t->name ? t->name : "?");
    for (size_t i = 0; i < t->nfields; i++) {
        const char *key = t->fields[i].key;
        if (!key || !*key || strpbrk(key, ". []\t"))
            return gf__cfg_walk_fail(w, 0, 0, "row %zu has an empty or malformed key", i);
        size_t saved = gf__cfg_walk_push_key(w, key);
        gf_err rc = GF_OK;
        for (size_t j = 0; j < i && rc == GF_OK; j++) {
            if (strcmp(t->fields[j].key, key) == 0)
                rc = gf__cfg_walk_fail(w, 0, 0, "key appears twice in the table");
        }
        if (rc == GF_OK)
            rc = check_field(w, t, &t->fields[i], buf, depth);
        gf__cfg_walk_pop(w, saved);
        if (rc != GF_OK)
            return rc;
    }
    return GF_OK;
}

gf_err gf_config_table_check(const gf_cfg_table *table, gf_config_error *err)
{
    gf_config_error local;
    cfg_walk w;
    struct gf_config_arena *arena = NULL;
    void *buf = NULL;
    gf_err rc = GF_OK;

    if (!err)
        err = &local;
    gf__cfg_error_clear(err);
    if (!table || table->size == 0) {
        gf__cfg_error_set(err, "table", 0, 0, NULL, "no table, or a table of size 0");
        return GF_ERR_INVALID;
    }
    const char *name = table->name ? table->name : "table";
    if (!(arena = gf__cfg_arena_new()) || !(buf = gf__cfg_arena_calloc(arena, 1, table->size))) {
        gf_config_arena_free(arena);
        gf__cfg_error_set(err, name, 0, 0, NULL, "out of memory");
        return GF_ERR_NOMEM;
    }
    gf__cfg_walk_init(&w, name, arena, err);
    rc = check_table(&w, table, buf, 0);
    gf__cfg_walk_fini(&w);
    gf_config_arena_free(arena);
    return rc == GF_OK ? GF_OK : GF_ERR_INVALID;
}
