/*
 * gap_list.c — open suspected gaps, oldest first (see gap_list.h).
 */
#include "gap_list.h"

#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"

static void remove_at(lag_gap_list *l, size_t i)
{
    memmove(&l->items[i], &l->items[i + 1], (l->len - i - 1) * sizeof *l->items);
    l->len--;
}

gf_err lag_gap_list_add(lag_gap_list *l, const lag_gap *g, size_t max)
{
    if (strnlen(g->source_id, sizeof g->source_id) >= sizeof g->source_id || max == 0)
        return GF_ERR_INVALID;
    while (l->len >= max) {
        remove_at(l, 0);
        l->unlisted++;
    }
    lag_gap *grown = gf_grow(l->items, &l->cap, l->len + 1, sizeof *l->items);
    if (!grown)
        return GF_ERR_NOMEM;
    l->items = grown;
    l->items[l->len++] = *g;
    return GF_OK;
}

bool lag_gap_list_close(lag_gap_list *l, const char *source_id, uint64_t first, uint64_t last)
{
    for (size_t i = 0; i < l->len; i++) {
        const lag_gap *g = &l->items[i];
        if (g->first == first && g->last == last && strcmp(g->source_id, source_id) == 0) {
            remove_at(l, i);
            return true;
        }
    }
    if (l->unlisted > 0)
        l->unlisted--;
    return false;
}

size_t lag_gap_list_expire(lag_gap_list *l, int64_t cutoff_unix_ms)
{
    size_t n = 0;
    while (n < l->len && l->items[n].reported_unix_ms < cutoff_unix_ms)
        n++;
    /* reports arrive in clock order, so the expired ones are a prefix */
    if (n > 0)
        memmove(l->items, l->items + n, (l->len - n) * sizeof *l->items);
    l->len -= n;
    l->unlisted += n;
    return n;
}

void lag_gap_list_free(lag_gap_list *l)
{
    free(l->items);
    memset(l, 0, sizeof *l);
}
