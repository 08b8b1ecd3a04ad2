/*
 * index.c — a growing open-addressing map from an id's 64-bit hash to a table index
 * (tickets and matches by id). Callers compare the id of the entry they get: a hash
 * collision then reads as "unknown", which is all a simulator's bookkeeping needs.
 */
#include <stdlib.h>

#include "playsim.h"

uint64_t gf_play_key(const char *id)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
    for (const unsigned char *s = (const unsigned char *)id; *s; s++)
        h = (h ^ *s) * 0x100000001b3ull;
    return h ? h : 1; /* 0 marks an empty slot */
}

static void put(uint64_t *keys, uint32_t *vals, size_t mask, uint64_t key, uint32_t val)
{
    size_t i = (size_t)key & mask;
    while (keys[i] && keys[i] != key)
        i = (i + 1) & mask;
    keys[i] = key;
    vals[i] = val;
}

gf_err gf_play_index_put(play_index *x, uint64_t key, uint32_t val)
{
    if (!x->keys || (x->used + 1) * 2 > x->mask + 1) {
        size_t size = x->keys ? (x->mask + 1) * 2 : 4096;
        uint64_t *keys = calloc(size, sizeof *keys);
        uint32_t *vals = calloc(size, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return GF_ERR_NOMEM;
        }
        for (size_t i = 0; x->keys && i <= x->mask; i++)
            if (x->keys[i])
                put(keys, vals, size - 1, x->keys[i], x->vals[i]);
        free(x->keys);
        free(x->vals);
        x->keys = keys;
        x->vals = vals;
        x->mask = size - 1;
    }
    size_t before = x->used;
    size_t i = (size_t)key & x->mask;
    while (x->keys[i] && x->keys[i] != key)
        i = (i + 1) & x->mask;
    if (!x->keys[i])
        x->used = before + 1;
    x->keys[i] = key;
    x->vals[i] = val;
    return GF_OK;
}

uint32_t gf_play_index_get(const play_index *x, uint64_t key)
{
    if (!x->keys)
        return 0;
    for (size_t i = (size_t)key & x->mask; x->keys[i]; i = (i + 1) & x->mask)
        if (x->keys[i] == key)
            return x->vals[i];
    return 0;
}

void gf_play_index_free(play_index *x)
{
    free(x->keys);
    free(x->vals);
    x->keys = NULL;
    x->vals = NULL;
    x->mask = x->used = 0;
}
