/*
 * config_walk.h — private: fills structs from a cfg_node tree by walking
 * gf_cfg_table rows.
 *
 * Rules (the same for every table, runtime or function):
 *  - a key not in the table is an error, with the closest known key suggested;
 *  - a key given twice in one mapping is an error;
 *  - a null value ("key:" with nothing, "~", "null") counts as absent: the default
 *    applies, or "required key is missing";
 *  - defaults are YAML text parsed by the same code as the file, so a default can
 *    never hold a value the file could not;
 *  - after an object is filled, the table's validate hook runs.
 * The first error stops the walk; *err names file:line:column and the dotted path.
 *
 * Ownership: strings and arrays written into the structs come from w->arena;
 * w->scratch (defaults' trees, bookkeeping) is freed by gf__cfg_walk_fini().
 */
#ifndef GAMEFN_CONFIG_WALK_H
#define GAMEFN_CONFIG_WALK_H

#include <stddef.h>

#include "config_yaml.h"
#include "gamefn/config.h"

enum { CFG_PATH_MAX = 256 };

typedef struct cfg_walk {
    const char *file;              /* names the source in errors */
    struct gf_config_arena *arena; /* owns the results */
    struct gf_config_arena *scratch;
    gf_config_error *err;
    char path[CFG_PATH_MAX]; /* dotted path of the node being read */
    size_t path_len;
    bool in_default;       /* reading a table's default: errors say so, and point at */
    int def_line, def_col; /* the mapping that lacks the key */
} cfg_walk;

void gf__cfg_walk_init(cfg_walk *w, const char *file, struct gf_config_arena *arena,
                       gf_config_error *err);
void gf__cfg_walk_fini(cfg_walk *w);

/* Fills `base` (t->size bytes, zeroed by the caller) from mapping `node`; NULL or a
 * null node means "all absent". line/col is where to point for keys that are missing
 * (the node's own mark when it exists). `skip_key`, if not NULL, is a key accepted at
 * this level without being read (the caller reads it). */
gf_err gf__cfg_walk_table(cfg_walk *w, const gf_cfg_table *t, const cfg_node *node, int line,
                          int col, void *base, const char *skip_key);

/* Reads one value (any type) for field f into base. `value` must not be null. */
gf_err gf__cfg_walk_value(cfg_walk *w, const gf_cfg_field *f, const cfg_node *value, void *base);

/* Applies f's default (or zero/NULL when it has none; an OBJECT gets its sub-table's
 * defaults) to base, ignoring `required`. Errors point at line:col. */
gf_err gf__cfg_walk_default(cfg_walk *w, const gf_cfg_field *f, int line, int col, void *base);

/* Path editing: push returns the length to restore with pop. */
size_t gf__cfg_walk_push_key(cfg_walk *w, const char *key);
size_t gf__cfg_walk_push_index(cfg_walk *w, size_t index);
void gf__cfg_walk_pop(cfg_walk *w, size_t len);

/* Fails at (line, col) with the current path; returns GF_ERR_CONFIG. */
gf_err gf__cfg_walk_fail(cfg_walk *w, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The table key closest to `key` (edit distance, case-insensitive), or NULL if none is
 * close enough to be a likely typo. */
const char *gf__cfg_walk_suggest(const gf_cfg_table *t, const char *key, const char *extra);

#endif
