/* source_index.c — sorted per-source records (see source_index.h). */
#include "source_index.h"

#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"

size_t gf_src_id_len(const char *id)
{
    return gf_token_len(id, GF_SRC_ID_MAX);
}

void gf_src_head_set(gf_src_head *h, const char *id, size_t len)
{
    memcpy(h->id, id, len);
    h->id[len] = '\0';
    h->len = (uint8_t)len;
}

int gf_src_head_cmp(const gf_src_head *a, const char *id, size_t len)
{
    size_t m = a->len < len ? a->len : len;
    int c = memcmp(a->id, id, m);
    if (c != 0)
        return c;
    return a->len < len ? -1 : a->len > len;
}

bool gf_src_index_find(const gf_src_index *ix, const char *id, size_t len, size_t *pos)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = gf_src_head_cmp(ix->items[mid], id, len);
        if (c == 0) {
            *pos = mid;
            return true;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *pos = lo;
    return false;
}

gf_err gf_src_index_insert(gf_src_index *ix, size_t pos, void *item)
{
    void **p = gf_grow(ix->items, &ix->cap, ix->n + 1, sizeof *p);
    if (p == NULL)
        return GF_ERR_NOMEM;
    ix->items = p;
    memmove(ix->items + pos + 1, ix->items + pos, (ix->n - pos) * sizeof *ix->items);
    ix->items[pos] = item;
    ix->n++;
    return GF_OK;
}

void *gf_src_index_remove(gf_src_index *ix, size_t pos)
{
    void *item = ix->items[pos];
    memmove(ix->items + pos, ix->items + pos + 1, (ix->n - pos - 1) * sizeof *ix->items);
    ix->n--;
    return item;
}

size_t gf_src_index_prune(gf_src_index *ix, int64_t cutoff_ms, void (*free_item)(void *))
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < ix->n; i++) {
        gf_src_head *h = ix->items[i];
        if (h->last_ms < cutoff_ms) {
            free_item(h);
            dropped++;
        } else {
            ix->items[kept++] = h;
        }
    }
    ix->n = kept;
    return dropped;
}

void gf_src_index_fini(gf_src_index *ix)
{
    free(ix->items);
    *ix = (gf_src_index){0};
}
