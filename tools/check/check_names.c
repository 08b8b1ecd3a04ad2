/*
 * check_names.c — interned strings: every id the checker meets becomes a dense index.
 *
 * Design notes: open addressing with linear probing on a power-of-two table kept at
 * most half full; strings live in 64 KiB arena chunks (one allocation per ~1,000 ids,
 * not one per id). Single-threaded.
 */
#include <stdlib.h>
#include <string.h>

#include "check_int.h"

enum { CHUNK = 64 * 1024 };

void ck_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

bool ck_grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size)
            return false;
        n *= 2;
    }
    void *p = realloc(*items, n * size);
    if (!p)
        return false;
    *items = p;
    *cap = n;
    return true;
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static char *arena_copy(ck_names *t, const char *s)
{
    size_t len = strlen(s) + 1;
    if (t->nchunks == 0 || t->chunk_used + len > t->chunk_cap) {
        size_t cap = len > CHUNK ? len : CHUNK;
        size_t ncap = t->nchunks; /* chunks array grows one by one: few chunks */
        char **chunks = realloc(t->chunks, (ncap + 1) * sizeof *chunks);
        if (!chunks)
            return NULL;
        t->chunks = chunks;
        t->chunks[t->nchunks] = malloc(cap);
        if (!t->chunks[t->nchunks])
            return NULL;
        t->nchunks++;
        t->chunk_used = 0;
        t->chunk_cap = cap;
    }
    char *p = t->chunks[t->nchunks - 1] + t->chunk_used;
    memcpy(p, s, len);
    t->chunk_used += len;
    return p;
}

static bool rehash(ck_names *t)
{
    size_t n = t->nslot ? t->nslot * 2 : 1024;
    uint32_t *slot = calloc(n, sizeof *slot);
    if (!slot)
        return false;
    for (size_t i = 0; i < t->n; i++) {
        size_t at = (size_t)hash(t->str[i]) & (n - 1);
        while (slot[at])
            at = (at + 1) & (n - 1);
        slot[at] = (uint32_t)i + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->nslot = n;
    return true;
}

uint32_t ck_lookup(const ck_names *t, const char *s)
{
    if (!t->nslot)
        return CK_NONE;
    size_t at = (size_t)hash(s) & (t->nslot - 1);
    while (t->slot[at]) {
        uint32_t i = t->slot[at] - 1;
        if (strcmp(t->str[i], s) == 0)
            return i;
        at = (at + 1) & (t->nslot - 1);
    }
    return CK_NONE;
}

uint32_t ck_intern(ck_names *t, const char *s, bool *added)
{
    if (added)
        *added = false;
    uint32_t found = ck_lookup(t, s);
    if (found != CK_NONE)
        return found;
    if (t->n >= UINT32_MAX - 1)
        return CK_NONE;
    if ((t->n + 1) * 2 > t->nslot && !rehash(t))
        return CK_NONE;
    if (!ck_grow((void **)&t->str, &t->cap, t->n + 1, sizeof *t->str))
        return CK_NONE;
    char *copy = arena_copy(t, s);
    if (!copy)
        return CK_NONE;
    size_t at = (size_t)hash(s) & (t->nslot - 1);
    while (t->slot[at])
        at = (at + 1) & (t->nslot - 1);
    t->str[t->n] = copy;
    t->slot[at] = (uint32_t)t->n + 1;
    if (added)
        *added = true;
    return (uint32_t)t->n++;
}

void ck_names_free(ck_names *t)
{
    for (size_t i = 0; i < t->nchunks; i++)
        free(t->chunks[i]);
    free(t->chunks);
    free(t->str);
    free(t->slot);
    memset(t, 0, sizeof *t);
}
