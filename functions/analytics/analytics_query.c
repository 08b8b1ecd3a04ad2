/*
 * analytics_query.c — validating a query and adding records up (see analytics.h).
 *
 * Design notes: an accumulator is a name -> count array kept sorted by name (binary
 * search; a reply holds at most a few thousand names), plus total, other and, for
 * datacenter and queue, the events without the dimension (total minus the rest). Per
 * minute rows live in an array indexed by minute within the range, made on first use.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analytics.h"
#include "gamefn/util.h"
#include "gamefn/v1/analytics.pb-c.h"

typedef struct acc_kv {
    char name[GF_ROLLUP_NAME_MAX + 1];
    uint64_t count;
} acc_kv;

typedef struct acc {
    acc_kv *kv;
    size_t n, cap;
    uint64_t total, other;
} acc;

struct an_query {
    an_request req;
    acc all;
    acc **minutes; /* (to - from) / 60000 slots */
    size_t nminutes;
    uint32_t records;
};

gf_err an_request_parse(const uint8_t *data, size_t len, int64_t max_range_ms, an_request *out,
                        char *field, size_t field_size, char *why, size_t why_size)
{
    field[0] = '\0';
    Gamefn__V1__AnalyticsQueryRequest *q =
        gamefn__v1__analytics_query_request__unpack(NULL, len, data);
    if (!q) {
        snprintf(why, why_size, "not an AnalyticsQueryRequest");
        return GF_ERR_INVALID;
    }
    const char *bad = NULL;
    char text[160] = "";
    int64_t from = q->from_unix_ms, to = q->to_unix_ms;
    if (from < 0 || from % GF_ROLLUP_MINUTE_MS != 0) {
        bad = "from_unix_ms";
        snprintf(text, sizeof text, "must be the start of a minute (>= 0, a multiple of 60000)");
    } else if (to % GF_ROLLUP_MINUTE_MS != 0 || to <= from) {
        bad = "to_unix_ms";
        snprintf(text, sizeof text, "must be the start of a minute after from_unix_ms");
    } else if (to - from > max_range_ms) {
        bad = "to_unix_ms";
        snprintf(text, sizeof text, "range of %lld minutes exceeds the maximum of %lld",
                 (long long)((to - from) / GF_ROLLUP_MINUTE_MS),
                 (long long)(max_range_ms / GF_ROLLUP_MINUTE_MS));
    } else if ((unsigned)q->group_by >= GF_ROLLUP_DIMS) {
        bad = "group_by";
        snprintf(text, sizeof text, "unknown value %d", (int)q->group_by);
    }
    if (!bad)
        *out = (an_request){
            .from = from, .to = to, .group_by = (int)q->group_by, .per_minute = q->per_minute};
    gamefn__v1__analytics_query_request__free_unpacked(q, NULL);
    if (!bad)
        return GF_OK;
    snprintf(field, field_size, "%s", bad);
    snprintf(why, why_size, "%s", text);
    return GF_ERR_INVALID;
}

static gf_err acc_add(acc *a, const char *name, uint64_t count)
{
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(a->kv[mid].name, name);
        if (c == 0) {
            a->kv[mid].count += count;
            return GF_OK;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    acc_kv *grown = gf_grow(a->kv, &a->cap, a->n + 1, sizeof *a->kv);
    if (!grown)
        return GF_ERR_NOMEM;
    a->kv = grown;
    memmove(&a->kv[lo + 1], &a->kv[lo], (a->n - lo) * sizeof *a->kv);
    snprintf(a->kv[lo].name, sizeof a->kv[lo].name, "%s", name);
    a->kv[lo].count = count;
    a->n++;
    return GF_OK;
}

static gf_err acc_add_rollup(acc *a, const gf_rollup *r, gf_rollup_dim dim)
{
    a->total += gf_rollup_total(r);
    a->other += gf_rollup_other(r, dim);
    gf_err err = GF_OK;
    for (size_t i = 0; i < gf_rollup_keys(r, dim) && err == GF_OK; i++) {
        const char *name = NULL;
        uint64_t count = 0;
        err = gf_rollup_key(r, dim, i, &name, &count);
        if (err == GF_OK)
            err = acc_add(a, name, count);
    }
    return err;
}

static void acc_free(acc *a)
{
    if (a)
        free(a->kv);
}

gf_err an_query_alloc(const an_request *req, an_query **out)
{
    *out = NULL;
    an_query *q = calloc(1, sizeof *q);
    if (!q)
        return GF_ERR_NOMEM;
    q->req = *req;
    if (req->per_minute) {
        q->nminutes = (size_t)((req->to - req->from) / GF_ROLLUP_MINUTE_MS);
        q->minutes = calloc(q->nminutes, sizeof *q->minutes);
        if (!q->minutes) {
            free(q);
            return GF_ERR_NOMEM;
        }
    }
    *out = q;
    return GF_OK;
}

void an_query_free(an_query *q)
{
    if (!q)
        return;
    acc_free(&q->all);
    for (size_t i = 0; i < q->nminutes; i++) {
        acc_free(q->minutes[i]);
        free(q->minutes[i]);
    }
    free(q->minutes);
    free(q);
}

gf_err an_query_add(an_query *q, const gf_rollup *r)
{
    int64_t minute = gf_rollup_minute(r);
    if (minute < q->req.from || minute >= q->req.to)
        return GF_OK;
    gf_rollup_dim dim = (gf_rollup_dim)q->req.group_by;
    q->records++;
    gf_err err = acc_add_rollup(&q->all, r, dim);
    if (err != GF_OK || !q->req.per_minute)
        return err;
    size_t slot = (size_t)((minute - q->req.from) / GF_ROLLUP_MINUTE_MS);
    if (!q->minutes[slot] && !(q->minutes[slot] = calloc(1, sizeof(acc))))
        return GF_ERR_NOMEM;
    return acc_add_rollup(q->minutes[slot], r, dim);
}

static int by_count(const void *a, const void *b)
{
    const acc_kv *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Fills counts (largest first, at most AN_REPLY_NAMES_MAX) from a; the rest go to *other.
 * The protobuf strings point into a's (re-sorted) entries. */
static gf_err counts_of(acc *a, Gamefn__V1__AnalyticsCount ***out, size_t *n, uint64_t *other)
{
    if (a->n > 1)
        qsort(a->kv, a->n, sizeof *a->kv, by_count);
    size_t listed = a->n < AN_REPLY_NAMES_MAX ? a->n : AN_REPLY_NAMES_MAX;
    *other = a->other;
    for (size_t i = listed; i < a->n; i++)
        *other += a->kv[i].count;
    *n = listed;
    *out = NULL;
    if (listed == 0)
        return GF_OK;
    Gamefn__V1__AnalyticsCount **ptrs = calloc(listed, sizeof *ptrs);
    Gamefn__V1__AnalyticsCount *items = calloc(listed, sizeof *items);
    if (!ptrs || !items) {
        free(ptrs);
        free(items);
        return GF_ERR_NOMEM;
    }
    for (size_t i = 0; i < listed; i++) {
        gamefn__v1__analytics_count__init(&items[i]);
        items[i].name = a->kv[i].name;
        items[i].count = a->kv[i].count;
        ptrs[i] = &items[i];
    }
    *out = ptrs;
    return GF_OK;
}

static void counts_free(Gamefn__V1__AnalyticsCount **c, size_t n)
{
    if (c && n)
        free(c[0]);
    free(c);
}

static uint64_t unattributed(const acc *a, int group_by, size_t listed,
                             Gamefn__V1__AnalyticsCount **counts, uint64_t other)
{
    if (group_by == GF_ROLLUP_TYPE)
        return 0;
    uint64_t named = other;
    for (size_t i = 0; i < listed; i++)
        named += counts[i]->count;
    return a->total > named ? a->total - named : 0;
}

gf_err an_query_reply(an_query *q, uint8_t **out, size_t *len)
{
    Gamefn__V1__AnalyticsQueryReply r = GAMEFN__V1__ANALYTICS_QUERY_REPLY__INIT;
    r.from_unix_ms = q->req.from;
    r.to_unix_ms = q->req.to;
    r.group_by = (Gamefn__V1__AnalyticsGroupBy)q->req.group_by;
    r.total = q->all.total;
    r.records = q->records;
    gf_err err = counts_of(&q->all, &r.counts, &r.n_counts, &r.other);
    if (err == GF_OK)
        r.unattributed = unattributed(&q->all, q->req.group_by, r.n_counts, r.counts, r.other);
    size_t rows = 0;
    for (size_t i = 0; i < q->nminutes; i++)
        rows += q->minutes[i] != NULL;
    Gamefn__V1__AnalyticsMinute *mins = rows ? calloc(rows, sizeof *mins) : NULL;
    Gamefn__V1__AnalyticsMinute **ptrs = rows ? calloc(rows, sizeof *ptrs) : NULL;
    if (rows && (!mins || !ptrs))
        err = GF_ERR_NOMEM;
    for (size_t i = 0, k = 0; err == GF_OK && i < q->nminutes; i++) {
        acc *a = q->minutes[i];
        if (!a)
            continue;
        Gamefn__V1__AnalyticsMinute *m = &mins[k];
        gamefn__v1__analytics_minute__init(m);
        m->minute_unix_ms = q->req.from + (int64_t)i * GF_ROLLUP_MINUTE_MS;
        m->total = a->total;
        err = counts_of(a, &m->counts, &m->n_counts, &m->other);
        if (err == GF_OK)
            m->unattributed = unattributed(a, q->req.group_by, m->n_counts, m->counts, m->other);
        ptrs[k++] = m;
        r.n_minutes = k;
    }
    r.minutes = ptrs;
    if (err == GF_OK)
        err = gf_pack(&r.base, out, len);
    for (size_t k = 0; k < r.n_minutes; k++)
        counts_free(mins[k].counts, mins[k].n_counts);
    free(mins);
    free(ptrs);
    counts_free(r.counts, r.n_counts);
    return err;
}
