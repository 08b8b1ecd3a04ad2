/*
 * rollup.c — counting and merging one minute (contract: rollup.h).
 *
 * Design notes: each dimension is a sorted array of (name, count) with binary search,
 * since a minute holds at most a few hundred names per dimension and the encoding
 * wants them sorted anyway. Invariants: sum(type counts) + type other == total;
 * for datacenter and queue, sum + other <= total; every count >= 1; at most
 * max_keys names per dimension. Merging never leaves a half-updated rollup: the
 * merged tables are built aside and swapped in only when all three succeeded.
 */
#include "rollup_internal.h"

#include "gamefn/util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

size_t gf_rollup_name_len(const char *s)
{
    return gf_token_len(s, GF_ROLLUP_NAME_MAX);
}

gf_err gf_rollup_alloc(int64_t minute_unix_ms, uint32_t max_keys, gf_rollup **out)
{
    *out = NULL;
    if (max_keys == 0)
        max_keys = GF_ROLLUP_KEYS_DEFAULT;
    if (minute_unix_ms < 0 || minute_unix_ms % GF_ROLLUP_MINUTE_MS != 0 ||
        max_keys > GF_ROLLUP_KEYS_MAX)
        return GF_ERR_INVALID;
    gf_rollup *r = calloc(1, sizeof *r);
    if (r == NULL)
        return GF_ERR_NOMEM;
    r->minute = minute_unix_ms;
    r->max_keys = max_keys;
    *out = r;
    return GF_OK;
}

void gf_rollup_free(gf_rollup *r)
{
    if (r == NULL)
        return;
    for (int d = 0; d < GF_ROLLUP_DIMS; d++)
        free(r->dims[d].kv);
    free(r);
}

int64_t gf_rollup_minute_of(int64_t unix_ms)
{
    return unix_ms - unix_ms % GF_ROLLUP_MINUTE_MS;
}

int64_t gf_rollup_minute(const gf_rollup *r)
{
    return r->minute;
}

uint64_t gf_rollup_total(const gf_rollup *r)
{
    return r->total;
}

/* Index of name in t, or where it would go (*found = false). */
static size_t find(const gf_rollup_table *t, const char *name, bool *found)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->kv[mid].name, name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

static gf_err reserve(gf_rollup_table *t, size_t need)
{
    gf_rollup_kv *p = need > 0 ? gf_grow(t->kv, &t->cap, need, sizeof *p) : t->kv;
    if (need > 0 && p == NULL)
        return GF_ERR_NOMEM;
    t->kv = p;
    return GF_OK;
}

gf_err gf_rollup_table_push(gf_rollup_table *t, const char *name, uint64_t count)
{
    gf_err err = reserve(t, t->n + 1);
    if (err != GF_OK)
        return err;
    gf_rollup_kv *kv = &t->kv[t->n++];
    memcpy(kv->name, name, strlen(name) + 1);
    kv->count = count;
    return GF_OK;
}

/* Counts under name, or under other when the table is full. The caller has
 * reserved room for one more key. */
static void table_add(gf_rollup_table *t, uint32_t max_keys, const char *name, uint64_t count)
{
    bool found;
    size_t i = find(t, name, &found);
    if (found) {
        t->kv[i].count += count;
    } else if (t->n >= max_keys) {
        t->other += count;
    } else {
        memmove(t->kv + i + 1, t->kv + i, (t->n - i) * sizeof *t->kv);
        memcpy(t->kv[i].name, name, strlen(name) + 1);
        t->kv[i].count = count;
        t->n++;
    }
}

/* NULL and "" are absent (true); otherwise the name must be a token. */
static bool optional_name(const char *s)
{
    return s == NULL || s[0] == '\0' || gf_rollup_name_len(s) > 0;
}

gf_err gf_rollup_add(gf_rollup *r, const char *event_type, const char *datacenter,
                     const char *queue, uint64_t count)
{
    if (count == 0 || count > UINT64_MAX - r->total || gf_rollup_name_len(event_type) == 0 ||
        !optional_name(datacenter) || !optional_name(queue))
        return GF_ERR_INVALID;
    /* Each table grows by at most one slot: reserve all first, so no error can leave
     * one dimension counted and another not. */
    for (int d = 0; d < GF_ROLLUP_DIMS; d++)
        if (reserve(&r->dims[d], r->dims[d].n + 1) != GF_OK)
            return GF_ERR_NOMEM;
    const char *names[GF_ROLLUP_DIMS] = {event_type, datacenter, queue};
    for (int d = 0; d < GF_ROLLUP_DIMS; d++)
        if (names[d] != NULL && names[d][0] != '\0')
            table_add(&r->dims[d], r->max_keys, names[d], count);
    r->total += count;
    return GF_OK;
}

/* A GenericEvent attribute's value when it is a name token, else NULL. */
static const char *attribute(const Gamefn__V1__GameEvent *ev, const char *key)
{
    if (ev->payload_case != GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC || ev->generic == NULL)
        return NULL;
    for (size_t i = 0; i < ev->generic->n_attributes; i++) {
        const Gamefn__V1__GenericEvent__AttributesEntry *a = ev->generic->attributes[i];
        if (a->key != NULL && strcmp(a->key, key) == 0)
            return gf_rollup_name_len(a->value) > 0 ? a->value : NULL;
    }
    return NULL;
}

gf_err gf_rollup_add_event(gf_rollup *r, const Gamefn__V1__GameEvent *ev)
{
    if (ev->occurred_unix_ms <= 0 || gf_rollup_minute_of(ev->occurred_unix_ms) != r->minute)
        return GF_ERR_INVALID;
    return gf_rollup_add(r, ev->event_type, attribute(ev, "datacenter"), attribute(ev, "queue"), 1);
}

uint64_t gf_rollup_count(const gf_rollup *r, gf_rollup_dim dim, const char *name)
{
    bool found = false;
    if ((unsigned)dim >= GF_ROLLUP_DIMS || gf_rollup_name_len(name) == 0)
        return 0;
    size_t i = find(&r->dims[dim], name, &found);
    return found ? r->dims[dim].kv[i].count : 0;
}

uint64_t gf_rollup_other(const gf_rollup *r, gf_rollup_dim dim)
{
    return (unsigned)dim < GF_ROLLUP_DIMS ? r->dims[dim].other : 0;
}

size_t gf_rollup_keys(const gf_rollup *r, gf_rollup_dim dim)
{
    return (unsigned)dim < GF_ROLLUP_DIMS ? r->dims[dim].n : 0;
}

gf_err gf_rollup_key(const gf_rollup *r, gf_rollup_dim dim, size_t i, const char **name,
                     uint64_t *count)
{
    if ((unsigned)dim >= GF_ROLLUP_DIMS || i >= r->dims[dim].n)
        return GF_ERR_NOT_FOUND;
    *name = r->dims[dim].kv[i].name;
    *count = r->dims[dim].kv[i].count;
    return GF_OK;
}

/* ---- merge ------------------------------------------------------------------------ */

/* Larger count first, then the smaller name: who keeps a named slot. */
static int by_weight(const void *x, const void *y)
{
    const gf_rollup_kv *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int by_name(const void *x, const void *y)
{
    return strcmp(((const gf_rollup_kv *)x)->name, ((const gf_rollup_kv *)y)->name);
}

/* out = a + b (sorted union), then trimmed to max_keys. out is empty on entry. */
static gf_err merge_table(const gf_rollup_table *a, const gf_rollup_table *b, uint32_t max_keys,
                          gf_rollup_table *out)
{
    gf_err err = reserve(out, a->n + b->n);
    size_t i = 0, j = 0;
    while (err == GF_OK && (i < a->n || j < b->n)) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->kv[i].name, b->kv[j].name);
        gf_rollup_kv kv = c <= 0 ? a->kv[i] : b->kv[j];
        if (c == 0)
            kv.count += b->kv[j].count;
        i += c <= 0;
        j += c >= 0;
        out->kv[out->n++] = kv;
    }
    out->other = a->other + b->other;
    if (err != GF_OK || out->n <= max_keys)
        return err;
    qsort(out->kv, out->n, sizeof *out->kv, by_weight);
    for (size_t k = max_keys; k < out->n; k++)
        out->other += out->kv[k].count;
    out->n = max_keys;
    qsort(out->kv, out->n, sizeof *out->kv, by_name);
    return GF_OK;
}

gf_err gf_rollup_merge(gf_rollup *into, const gf_rollup *from)
{
    if (into->minute != from->minute || from->total > UINT64_MAX - into->total)
        return GF_ERR_INVALID;
    gf_rollup_table merged[GF_ROLLUP_DIMS] = {0};
    gf_err err = GF_OK;
    for (int d = 0; d < GF_ROLLUP_DIMS && err == GF_OK; d++)
        err = merge_table(&into->dims[d], &from->dims[d], into->max_keys, &merged[d]);
    for (int d = 0; d < GF_ROLLUP_DIMS; d++) {
        gf_rollup_table *drop = err == GF_OK ? &into->dims[d] : &merged[d];
        free(drop->kv);
        if (err == GF_OK)
            into->dims[d] = merged[d];
    }
    if (err == GF_OK)
        into->total += from->total;
    return err;
}
