/* strmap.c — string-keyed open-addressing hash map (strmap.h). */
#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a 64 */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)(h ^ (h >> 29));
}

static size_t find(const gf__strmap *m, const char *key)
{
    size_t mask = m->cap - 1;
    size_t i = hash(key) & mask;
    while (m->slots[i].key && strcmp(m->slots[i].key, key) != 0)
        i = (i + 1) & mask;
    return i;
}

void *gf__strmap_get(const gf__strmap *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t i = find(m, key);
    return m->slots[i].key ? m->slots[i].value : NULL;
}

static gf_err grow(gf__strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    gf__strmap_slot *old = m->slots;
    size_t oldcap = m->cap;
    gf__strmap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return GF_ERR_NOMEM;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].key)
            m->slots[find(m, old[i].key)] = old[i];
    }
    free(old);
    return GF_OK;
}

gf_err gf__strmap_put(gf__strmap *m, const char *key, void *value)
{
    if ((m->n + 1) * 4 > m->cap * 3) { /* load factor <= 3/4 */
        gf_err err = grow(m);
        if (err != GF_OK)
            return err;
    }
    size_t i = find(m, key);
    if (!m->slots[i].key)
        m->n++;
    m->slots[i].key = key;
    m->slots[i].value = value;
    return GF_OK;
}

void *gf__strmap_del(gf__strmap *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = find(m, key);
    if (!m->slots[i].key)
        return NULL;
    void *value = m->slots[i].value;
    /* Backward shift: pull later members of the probe run into the hole. */
    size_t j = i;
    for (;;) {
        m->slots[i].key = NULL;
        for (;;) {
            j = (j + 1) & mask;
            if (!m->slots[j].key) {
                m->n--;
                return value;
            }
            size_t home = hash(m->slots[j].key) & mask;
            /* j's entry may move to i unless its home lies cyclically in (i, j]. */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        m->slots[i] = m->slots[j];
        i = j;
    }
}

void gf__strmap_clear(gf__strmap *m)
{
    if (m->slots)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->n = 0;
}

void gf__strmap_fini(gf__strmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}
