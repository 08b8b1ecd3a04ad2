/*
 * config.c — gf_config_load*, gf_config_parse_table, lookups (see gamefn/config.h).
 *
 * Design notes: a load is a pipeline over one arena: YAML text -> node tree (scratch
 * arena, dropped at the end) -> table walk into a gf_config that lives in the result
 * arena -> checks across jetstream objects -> environment overrides. Any error frees
 * the result arena whole, so a failed load leaves nothing behind and *out untouched
 * (NULL). The `functions:` key is the one place the walker does not descend by
 * itself: a function reads only its own entry, with its own table; `gamefn
 * check-config` (gf_config_load_all) reads every entry with the table of its name
 * and refuses names it does not know.
 *
 * Folder runtime/src/config/: the YAML configuration: parsing (config_yaml.c), the
 * table walker (config_walk.c, config_value.c, config_units.c), the runtime's own
 * tables (config_schema*.c), checks across keys (config_check.c), environment
 * overrides (config_env.c) and the reference printer. It may use core/ only: no NATS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_arena.h"
#include "config_check.h"
#include "config_env.h"
#include "config_error.h"
#include "config_walk.h"
#include "config_yaml.h"
#include "gamefn/config.h"

enum { CFG_FILE_MAX = 16 * 1024 * 1024 };

static gf_err nomem(gf_config_error *err, const char *name)
{
    gf__cfg_error_set(err, name, 0, 0, NULL, "out of memory");
    return GF_ERR_NOMEM;
}

/* The `functions:` mapping: every entry's name is a non-empty scalar and unique
 * (sorted once, O(n log n)). */
static gf_err check_function_names(cfg_walk *w, const cfg_node *fns)
{
    size_t n = 0, first = 0, dup = 0;
    gf_err rc = GF_OK;
    for (const cfg_node *k = fns->child; k && k->next; k = k->next->next) {
        if (k->kind != CFG_NODE_SCALAR || strlen(k->text) != k->len || k->len == 0)
            return gf__cfg_walk_fail(w, k->line, k->column,
                                     "a function name must be a non-empty scalar");
        n++;
    }
    cfg_key *keys = calloc(n + 1, sizeof *keys);
    const cfg_node **nodes = calloc(n + 1, sizeof *nodes);
    if (!keys || !nodes) {
        rc = nomem(w->err, w->file);
        goto out;
    }
    n = 0;
    for (const cfg_node *k = fns->child; k && k->next; k = k->next->next, n++) {
        keys[n] = (cfg_key){k->text, NULL, n};
        nodes[n] = k;
    }
    if (gf__cfg_find_duplicate(keys, n, &first, &dup)) {
        size_t saved = gf__cfg_walk_push_key(w, nodes[dup]->text);
        rc = gf__cfg_walk_fail(w, nodes[dup]->line, nodes[dup]->column,
                               "duplicate key (first at line %d)", nodes[first]->line);
        gf__cfg_walk_pop(w, saved);
    }
out:
    free(keys);
    free(nodes);
    return rc;
}

/* What a load reads under `functions:`: one function's own section (kept as
 * cfg->function), or with `every`, every entry with the table of its name (checked,
 * not kept), an entry of any other name being an error. */
typedef struct fn_sections {
    const gf_config_section *list;
    size_t n;
    bool every;
} fn_sections;

/* `functions.<name>` for a name no section has: the error, with the closest name, or
 * the names known. */
static gf_err unknown_function(cfg_walk *w, const cfg_node *k, const fn_sections *fs)
{
    char known[160] = "", quoted[64];
    gf_cfg_field *names = calloc(fs->n + 1, sizeof *names);
    if (!names)
        return nomem(w->err, w->file);
    for (size_t i = 0, used = 0; i < fs->n; i++) {
        names[i].key = fs->list[i].name;
        if (used < sizeof known)
            used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                     fs->list[i].name);
    }
    gf_cfg_table table = {.name = "functions", .fields = names, .nfields = fs->n};
    const char *hint = gf__cfg_walk_suggest(&table, k->text, NULL);
    gf__cfg_error_quote(quoted, sizeof quoted, k->text, k->len);
    size_t saved = gf__cfg_walk_push_key(w, k->text);
    gf_err rc = hint ? gf__cfg_walk_fail(w, k->line, k->column,
                                         "unknown function '%s' (did you mean '%s'?)", quoted, hint)
                     : gf__cfg_walk_fail(w, k->line, k->column, "unknown function '%s' (known: %s)",
                                         quoted, known);
    gf__cfg_walk_pop(w, saved);
    free(names);
    return rc;
}

/* Walks every entry of `fns` with the table of its name. */
static gf_err read_every_function(cfg_walk *w, const cfg_node *fns, const fn_sections *fs)
{
    for (const cfg_node *k = fns->child; k && k->next; k = k->next->next) {
        const gf_config_section *sec = NULL;
        for (size_t i = 0; i < fs->n && !sec; i++)
            sec = strcmp(fs->list[i].name, k->text) == 0 ? &fs->list[i] : NULL;
        if (!sec)
            return unknown_function(w, k, fs);
        void *mem = gf__cfg_arena_calloc(w->arena, 1, sec->table->size);
        if (!mem)
            return nomem(w->err, w->file);
        size_t saved = gf__cfg_walk_push_key(w, sec->name);
        gf_err rc = gf__cfg_walk_table(w, sec->table, k->next, k->line, k->column, mem, NULL);
        gf__cfg_walk_pop(w, saved);
        if (rc != GF_OK)
            return rc;
    }
    return GF_OK;
}

/* Reads the `functions:` mapping: every entry's name must be unique; then either the
 * one section asked for, or every entry (see fn_sections). */
static gf_err read_function(cfg_walk *w, const cfg_node *root, const fn_sections *fs,
                            gf_config *cfg)
{
    const cfg_node *key = gf__cfg_node_get_key(root, "functions");
    const cfg_node *fns = key ? key->next : NULL;
    gf_err rc = GF_OK;
    size_t saved = gf__cfg_walk_push_key(w, "functions");

    if (!gf__cfg_node_is_null(fns) && fns->kind != CFG_NODE_MAPPING) {
        rc = gf__cfg_walk_fail(w, fns->line, fns->column,
                               "expected a mapping of function names, got %s",
                               gf__cfg_node_kind_name(fns));
        goto out;
    }
    if (!gf__cfg_node_is_null(fns) && (rc = check_function_names(w, fns)) != GF_OK)
        goto out;
    if (fs->every) {
        if (!gf__cfg_node_is_null(fns))
            rc = read_every_function(w, fns, fs);
        goto out;
    }
    if (fs->n == 0)
        goto out;
    const gf_config_section *section = &fs->list[0];

    void *mem = gf__cfg_arena_calloc(w->arena, 1, section->table->size);
    if (!mem) {
        rc = nomem(w->err, w->file);
        goto out;
    }
    const cfg_node *mine = gf__cfg_node_is_null(fns) ? NULL : gf__cfg_node_get(fns, section->name);
    const cfg_node *at = mine ? mine : fns ? fns : key ? key : root;
    gf__cfg_walk_push_key(w, section->name);
    rc = gf__cfg_walk_table(w, section->table, mine, at->line, at->column, mem, NULL);
    if (rc == GF_OK)
        cfg->function = mem;
out:
    gf__cfg_walk_pop(w, saved);
    return rc;
}

/* What every parse starts with: an error to fill (the caller's or `local`), cleared; a
 * name for messages; a walker. Returns the error to fill. */
static gf_config_error *parse_begin(gf_config_error *err, gf_config_error *local, const char **name,
                                    cfg_walk *w)
{
    if (!err)
        err = local;
    gf__cfg_error_clear(err);
    if (!*name)
        *name = "<string>";
    gf__cfg_walk_init(w, *name, NULL, err);
    return err;
}

static gf_err load_string(const char *name, const char *yaml, size_t len, const fn_sections *fs,
                          gf_config **out, gf_config_error *err)
{
    gf_config_error local;
    struct gf_config_arena *arena = NULL;
    struct gf_config_arena *tree = NULL;
    cfg_node *root = NULL;
    gf_config *cfg = NULL;
    cfg_walk w;
    gf_err rc = GF_OK;

    err = parse_begin(err, &local, &name, &w);
    bool bad_section = fs->n > 0 && !fs->list;
    for (size_t i = 0; i < fs->n && !bad_section; i++)
        bad_section = !fs->list[i].name || !*fs->list[i].name || !fs->list[i].table;
    if (!out || (!yaml && len) || bad_section) {
        gf__cfg_error_set(err, name, 0, 0, NULL, "invalid arguments to gf_config_load");
        return GF_ERR_INVALID;
    }
    *out = NULL;
    if (!(arena = gf__cfg_arena_new()) || !(tree = gf__cfg_arena_new()) ||
        !(cfg = gf__cfg_arena_calloc(arena, 1, sizeof(*cfg))) ||
        !(cfg->path = gf__cfg_arena_strdup(arena, name))) {
        rc = nomem(err, name);
        goto out;
    }
    cfg->arena = arena;
    w.arena = arena;

    if ((rc = gf__cfg_yaml_parse(name, yaml ? yaml : "", len, tree, &root, err)) != GF_OK)
        goto out;
    if (gf__cfg_node_is_null(root)) {
        gf__cfg_error_set(err, name, root ? root->line : 0, root ? root->column : 0, NULL,
                          "the configuration is empty");
        rc = GF_ERR_CONFIG;
        goto out;
    }
    if (root->kind != CFG_NODE_MAPPING) {
        gf__cfg_error_set(err, name, root->line, root->column, NULL,
                          "expected a mapping of sections (nats, log, runtime, jetstream, "
                          "functions) at the top level, got %s",
                          gf__cfg_node_kind_name(root));
        rc = GF_ERR_CONFIG;
        goto out;
    }
    rc = gf__cfg_walk_table(&w, gf_config_schema(""), root, root->line, root->column, cfg,
                            "functions");
    if (rc == GF_OK)
        rc = read_function(&w, root, fs, cfg);
    if (rc == GF_OK) {
        size_t saved = gf__cfg_walk_push_key(&w, "jetstream");
        rc = gf__cfg_check_jetstream(&w, &cfg->jetstream, gf__cfg_node_get(root, "jetstream"));
        gf__cfg_walk_pop(&w, saved);
    }
    if (rc == GF_OK)
        rc = gf__cfg_env_apply(cfg, err);
    if (rc == GF_OK) {
        *out = cfg;
        arena = NULL;
    }
out:
    gf__cfg_walk_fini(&w);
    gf_config_arena_free(tree);
    gf_config_arena_free(arena);
    return rc;
}

gf_err gf_config_load_string(const char *name, const char *yaml, size_t len,
                             const gf_config_section *section, gf_config **out,
                             gf_config_error *err)
{
    fn_sections fs = {.list = section, .n = section ? 1 : 0};
    return load_string(name, yaml, len, &fs, out, err);
}

static gf_err load_file(const char *path, const fn_sections *fs, gf_config **out,
                        gf_config_error *err)
{
    gf_config_error local;
    FILE *f = NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    gf_err rc = GF_OK;

    if (!err)
        err = &local;
    gf__cfg_error_clear(err);
    if (out)
        *out = NULL;
    if (!path || !out) {
        gf__cfg_error_set(err, path, 0, 0, NULL, "invalid arguments to gf_config_load");
        return GF_ERR_INVALID;
    }
    if (!(f = fopen(path, "rb"))) {
        gf__cfg_error_set(err, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
        return GF_ERR_IO;
    }
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 8192;
            if (ncap > CFG_FILE_MAX + 1)
                ncap = CFG_FILE_MAX + 1;
            char *nbuf = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!nbuf) {
                if (ncap > cap) {
                    rc = nomem(err, path);
                } else {
                    gf__cfg_error_set(err, path, 0, 0, NULL, "file is larger than %d MiB",
                                      CFG_FILE_MAX / (1024 * 1024));
                    rc = GF_ERR_CONFIG;
                }
                goto out;
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                gf__cfg_error_set(err, path, 0, 0, NULL, "cannot read: %s", strerror(errno));
                rc = GF_ERR_IO;
                goto out;
            }
            break;
        }
    }
    rc = load_string(path, buf, len, fs, out, err);
out:
    if (f)
        fclose(f);
    free(buf);
    return rc;
}

gf_err gf_config_load(const char *path, const gf_config_section *section, gf_config **out,
                      gf_config_error *err)
{
    fn_sections fs = {.list = section, .n = section ? 1 : 0};
    return load_file(path, &fs, out, err);
}

gf_err gf_config_load_all(const char *path, const gf_config_section *sections, size_t n,
                          gf_config **out, gf_config_error *err)
{
    fn_sections fs = {.list = sections, .n = n, .every = true};
    return load_file(path, &fs, out, err);
}

void gf_config_free(gf_config *cfg)
{
    if (cfg)
        gf_config_arena_free(cfg->arena); /* cfg itself lives in its arena */
}

gf_err gf_config_parse_table(const char *name, const char *yaml, size_t len,
                             const gf_cfg_table *table, void *out,
                             struct gf_config_arena **arena_out, gf_config_error *err)
{
    gf_config_error local;
    struct gf_config_arena *arena = NULL;
    struct gf_config_arena *tree = NULL;
    cfg_node *root = NULL;
    void *tmp = NULL;
    cfg_walk w;
    gf_err rc = GF_OK;

    err = parse_begin(err, &local, &name, &w);
    if (!table || !out || !arena_out || (!yaml && len) || table->size == 0) {
        gf__cfg_error_set(err, name, 0, 0, NULL, "invalid arguments to gf_config_parse_table");
        return GF_ERR_INVALID;
    }
    *arena_out = NULL;
    if (!(arena = gf__cfg_arena_new()) || !(tree = gf__cfg_arena_new()) ||
        !(tmp = gf__cfg_arena_calloc(tree, 1, table->size))) {
        rc = nomem(err, name);
        goto out;
    }
    w.arena = arena;
    if ((rc = gf__cfg_yaml_parse(name, yaml ? yaml : "", len, tree, &root, err)) != GF_OK)
        goto out;
    /* An empty fragment is an absent section: every default applies. */
    rc = gf__cfg_walk_table(&w, table, root, root ? root->line : 1, root ? root->column : 1, tmp,
                            NULL);
    if (rc == GF_OK) {
        memcpy(out, tmp, table->size);
        *arena_out = arena;
        arena = NULL;
    }
out:
    gf__cfg_walk_fini(&w);
    gf_config_arena_free(tree);
    gf_config_arena_free(arena);
    return rc;
}

const gf_stream_config *gf_config_stream(const gf_config *cfg, const char *name)
{
    for (size_t i = 0; cfg && name && i < cfg->jetstream.streams_len; i++) {
        if (strcmp(cfg->jetstream.streams[i].name, name) == 0)
            return &cfg->jetstream.streams[i];
    }
    return NULL;
}

const gf_consumer_config *gf_config_consumer(const gf_config *cfg, const char *stream,
                                             const char *name)
{
    for (size_t i = 0; cfg && stream && name && i < cfg->jetstream.consumers_len; i++) {
        const gf_consumer_config *c = &cfg->jetstream.consumers[i];
        if (strcmp(c->stream, stream) == 0 && strcmp(c->name, name) == 0)
            return c;
    }
    return NULL;
}

gf_err gf_config_consumer_partition(const gf_consumer_config *group, unsigned partition,
                                    gf_consumer_config *out, gf_partition_names *names)
{
    if (!group || !out || !names || group->partitions <= 0 ||
        partition >= (unsigned)group->partitions || !group->filter_subject)
        return GF_ERR_INVALID;
    const char *mark = strstr(group->filter_subject, "{partition}");
    int n = snprintf(names->durable, sizeof names->durable, "%s-p%02u", group->name, partition);
    int m = mark ? snprintf(names->filter, sizeof names->filter, "%.*s%u%s",
                            (int)(mark - group->filter_subject), group->filter_subject, partition,
                            mark + strlen("{partition}"))
                 : -1;
    int k =
        snprintf(names->lease_key, sizeof names->lease_key, "part.%s.%02u", group->name, partition);
    if (n < 0 || (size_t)n >= sizeof names->durable || m < 0 || (size_t)m >= sizeof names->filter ||
        k < 0 || (size_t)k >= sizeof names->lease_key)
        return GF_ERR_INVALID;
    *out = *group;
    out->name = names->durable;
    out->filter_subject = names->filter;
    out->partitions = 0;
    return GF_OK;
}

const gf_bucket_config *gf_config_bucket(const gf_config *cfg, const char *name)
{
    for (size_t i = 0; cfg && name && i < cfg->jetstream.buckets_len; i++) {
        if (strcmp(cfg->jetstream.buckets[i].name, name) == 0)
            return &cfg->jetstream.buckets[i];
    }
    return NULL;
}

const void *gf_config_function(const gf_config *cfg)
{
    return cfg ? cfg->function : NULL;
}
