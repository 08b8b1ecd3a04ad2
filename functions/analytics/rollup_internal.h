/*
 * rollup_internal.h — a rollup's tables, shared by rollup.c and rollup_codec.c.
 * Private to gamefn_analytics.
 */
#ifndef GAMEFN_ROLLUP_INTERNAL_H
#define GAMEFN_ROLLUP_INTERNAL_H

#include <stdint.h>

#include "rollup.h"

typedef struct gf_rollup_kv {
    char name[GF_ROLLUP_NAME_MAX + 1];
    uint64_t count; /* >= 1 */
} gf_rollup_kv;

/* One dimension: named counts sorted by name (byte order), at most max_keys. */
typedef struct gf_rollup_table {
    gf_rollup_kv *kv;
    size_t n, cap;
    uint64_t other;
} gf_rollup_table;

struct gf_rollup {
    int64_t minute;
    uint32_t max_keys;
    uint64_t total;
    gf_rollup_table dims[GF_ROLLUP_DIMS];
};

/* Length of a name token (1..32 of [A-Za-z0-9_-]), or 0. */
size_t gf_rollup_name_len(const char *s);

/* Appends a key known to sort after every key of t (decoding); GF_ERR_NOMEM. */
gf_err gf_rollup_table_push(gf_rollup_table *t, const char *name, uint64_t count);

#endif
