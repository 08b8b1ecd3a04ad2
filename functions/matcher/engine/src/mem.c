/*
 * mem.c — the tick's counting allocator and the reusable workspace.
 *
 * Design notes: the benchmark reports engine bytes per ticket, so every allocation of a
 * tick is counted here: live bytes, their peak, and the sum of everything allocated
 * (requested sizes: what the engine needs, not what malloc rounds up to). Sizes are passed
 * back on free (the caller always knows them), so no header is added.
 *
 * A workspace caches freed blocks (best fit on the next request) and remembers the
 * capacity of every block it hands out. A tick makes a few dozen allocations, so linear
 * scans of small tables are the right tool. Blocks beyond the cache's size are released,
 * smallest first. A result's arrays come from the workspace too and go back to it when
 * the result is freed, so a steady-state tick touches no fresh pages; each live result
 * holds a reference, so the workspace outlives the owner's gf_match_workspace_free()
 * until its last result is freed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define WS_CACHED 48 /* free blocks kept */
#define WS_HELD   64 /* blocks lent out at once */

typedef struct block {
    void *p;
    size_t cap;
} block;

struct gf_match_workspace {
    block cached[WS_CACHED];
    size_t ncached;
    block held[WS_HELD];
    size_t nheld;
    size_t refs; /* the owner + every result not yet freed */
};

gf_err gf_match_workspace_create(gf_match_workspace **out)
{
    if (!out)
        return GF_ERR_INVALID;
    *out = calloc(1, sizeof **out);
    if (!*out)
        return GF_ERR_NOMEM;
    (*out)->refs = 1;
    return GF_OK;
}

void gf_mt_ws_ref(gf_match_workspace *ws)
{
    ws->refs++;
}

void gf_mt_ws_unref(gf_match_workspace *ws)
{
    if (!ws || --ws->refs > 0)
        return;
    for (size_t i = 0; i < ws->ncached; i++)
        free(ws->cached[i].p);
    for (size_t i = 0; i < ws->nheld; i++)
        free(ws->held[i].p);
    free(ws);
}

void gf_match_workspace_free(gf_match_workspace *ws)
{
    gf_mt_ws_unref(ws);
}

size_t gf_match_workspace_bytes(const gf_match_workspace *ws)
{
    size_t n = 0;
    for (size_t i = 0; ws && i < ws->ncached; i++)
        n += ws->cached[i].cap;
    return n;
}

static bool size_ok(size_t count, size_t size, size_t *bytes)
{
    if (size && count > SIZE_MAX / size)
        return false;
    *bytes = count * size;
    return true;
}

static void count(gf_mt_mem *m, size_t bytes)
{
    m->live += bytes;
    m->total += bytes;
    if (m->live > m->peak)
        m->peak = m->live;
}

/* A block of at least `bytes` from the workspace (cached or new), recorded as held. */
static void *ws_take(gf_match_workspace *ws, size_t bytes)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < ws->ncached; i++) {
        if (ws->cached[i].cap >= bytes &&
            (best == SIZE_MAX || ws->cached[i].cap < ws->cached[best].cap))
            best = i;
    }
    block b = {NULL, 0};
    if (best != SIZE_MAX) {
        b = ws->cached[best];
        ws->cached[best] = ws->cached[--ws->ncached];
    } else {
        b.cap = bytes ? bytes : 1;
        b.p = malloc(b.cap);
        if (!b.p)
            return NULL;
    }
    if (ws->nheld == WS_HELD)
        return b.p; /* untracked: released by free() when it comes back */
    ws->held[ws->nheld++] = b;
    return b.p;
}

void gf_mt_ws_give(gf_match_workspace *ws, void *p)
{
    block b = {p, 0};
    size_t i = 0;
    for (; i < ws->nheld; i++) {
        if (ws->held[i].p == p)
            break;
    }
    if (i == ws->nheld) {
        free(p);
        return;
    }
    b = ws->held[i];
    ws->held[i] = ws->held[--ws->nheld];
    if (ws->ncached == WS_CACHED) {
        size_t small = 0;
        for (size_t j = 1; j < ws->ncached; j++) {
            if (ws->cached[j].cap < ws->cached[small].cap)
                small = j;
        }
        if (ws->cached[small].cap >= b.cap) {
            free(b.p);
            return;
        }
        free(ws->cached[small].p);
        ws->cached[small] = b;
        return;
    }
    ws->cached[ws->ncached++] = b;
}

void *gf_mt_alloc(gf_mt_mem *m, size_t count_, size_t size)
{
    size_t bytes = 0;
    if (!size_ok(count_, size, &bytes))
        return NULL;
    void *p = m->ws ? ws_take(m->ws, bytes) : malloc(bytes ? bytes : 1);
    if (p)
        count(m, bytes);
    return p;
}

void *gf_mt_zalloc(gf_mt_mem *m, size_t count_, size_t size)
{
    void *p = gf_mt_alloc(m, count_, size);
    if (p)
        memset(p, 0, count_ * size);
    return p;
}

void gf_mt_free(gf_mt_mem *m, void *p, size_t count_, size_t size)
{
    if (!p)
        return;
    m->live -= count_ * size;
    if (m->ws)
        gf_mt_ws_give(m->ws, p);
    else
        free(p);
}

void *gf_mt_alloc_result(gf_mt_mem *m, size_t count_, size_t size)
{
    size_t bytes = 0;
    if (!size_ok(count_, size, &bytes))
        return NULL;
    void *p = m->ws ? ws_take(m->ws, bytes) : malloc(bytes ? bytes : 1);
    if (p)
        count(m, bytes);
    return p;
}
