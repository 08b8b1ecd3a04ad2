/* source_index.c — sorted per-source records (see source_index.h). */
#include "source_index.h"

#include <stdlib.h>
#include <string.h>

size_t gf_src_token_len(const char *s, size_t len, size_t max)
{
    size_t n = 0;
    for (; s != NULL && n < len && s[n] != '\0'; n++) {
        unsigned char c = (unsigned char)s[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        if (!ok || n >= max)
            return 0;
    }
    return n;
}

bool gf_src_key_set(gf_src_key *k, const char *id, size_t len)
{
    size_t n = gf_src_token_len(id, len, GF_SRC_ID_MAX);
    if (n == 0)
        return false;
    memcpy(k->id, id, n);
    k->id[n] = '\0';
    k->len = (uint8_t)n;
    return true;
}

int gf_src_key_cmp(const gf_src_key *a, const char *id, size_t len)
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
        int c = gf_src_key_cmp(ix->items[mid], id, len);
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
    if (ix->n == ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 4;
        void **p = realloc(ix->items, cap * sizeof *p);
        if (p == NULL)
            return GF_ERR_NOMEM;
        ix->items = p;
        ix->cap = cap;
    }
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

void gf_src_index_fini(gf_src_index *ix)
{
    free(ix->items);
    *ix = (gf_src_index){0};
}
