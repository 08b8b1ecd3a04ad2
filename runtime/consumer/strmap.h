/*
 * strmap.h — a string-keyed hash map (open addressing, linear probing, backward-shift
 * deletion) for the consumer framework: a partition's cache and a batch's keys.
 *
 * Keys are borrowed: the value must own (or outlive) the string its slot points to.
 * Ownership: gf__strmap_fini frees the table, never keys or values. One thread.
 */
#ifndef GAMEFN_CONSUMER_STRMAP_H
#define GAMEFN_CONSUMER_STRMAP_H

#include <stddef.h>

#include "gamefn/err.h"

typedef struct gf__strmap_slot {
    const char *key; /* NULL: empty */
    void *value;
} gf__strmap_slot;

typedef struct gf__strmap {
    gf__strmap_slot *slots;
    size_t cap; /* a power of two, or 0 */
    size_t n;
} gf__strmap;

void *gf__strmap_get(const gf__strmap *m, const char *key);
/* Inserts or replaces. GF_ERR_NOMEM. */
gf_err gf__strmap_put(gf__strmap *m, const char *key, void *value);
/* Removes and returns the value (NULL if absent). */
void *gf__strmap_del(gf__strmap *m, const char *key);
void gf__strmap_clear(gf__strmap *m); /* keeps the table */
void gf__strmap_fini(gf__strmap *m);

#endif
