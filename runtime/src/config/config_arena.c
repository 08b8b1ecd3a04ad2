/*
 * config_arena.c — chunked bump allocator for config memory.
 *
 * Design notes: a config is built once and freed once, so there is no per-object
 * free. Chunks are 4 KiB (or one larger block for a big request) kept in a singly
 * linked list; alignment is that of max_align_t so any struct from a table fits.
 */
#include "config_arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/config.h"

enum { CHUNK_MIN = 4096 };

typedef struct arena_chunk {
    struct arena_chunk *next;
    size_t cap, used;
    max_align_t data[];
} arena_chunk;

struct gf_config_arena {
    arena_chunk *chunks; /* newest first; only the newest has room to bump */
};

struct gf_config_arena *gf__cfg_arena_new(void)
{
    return calloc(1, sizeof(struct gf_config_arena));
}

void gf_config_arena_free(struct gf_config_arena *a)
{
    if (!a)
        return;
    arena_chunk *c = a->chunks;
    while (c) {
        arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    free(a);
}

void *gf__cfg_arena_calloc(struct gf_config_arena *a, size_t n, size_t size)
{
    const size_t align = alignof(max_align_t);
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    size_t want = n * size;
    if (want == 0)
        want = 1;
    if (want > SIZE_MAX - align - sizeof(arena_chunk) - CHUNK_MIN)
        return NULL;
    want = (want + align - 1) / align * align;

    arena_chunk *c = a->chunks;
    if (!c || c->cap - c->used < want) {
        size_t cap = want > CHUNK_MIN ? want : CHUNK_MIN;
        c = malloc(sizeof(arena_chunk) + cap);
        if (!c)
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = a->chunks;
        a->chunks = c;
    }
    unsigned char *p = (unsigned char *)c->data + c->used;
    c->used += want;
    memset(p, 0, want);
    return p;
}

char *gf__cfg_arena_strndup(struct gf_config_arena *a, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        return NULL;
    char *p = gf__cfg_arena_calloc(a, len + 1, 1);
    if (p && len)
        memcpy(p, s, len);
    return p;
}

char *gf__cfg_arena_strdup(struct gf_config_arena *a, const char *s)
{
    return gf__cfg_arena_strndup(a, s, strlen(s));
}
