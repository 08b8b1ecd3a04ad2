/*
 * fleet_table.c — the fleet mirror's table (see fleet_table.h).
 *
 * Design notes: a sorted array of entry pointers. Lookups and the datacenter range
 * are binary searches; inserting a new key moves pointers (servers register rarely
 * compared with how often they heartbeat, which only replaces an entry in place).
 * Broken keys are a short unsorted array beside it: a healthy fleet has none.
 */
#include "fleet_table.h"

#include <stdlib.h>
#include <string.h>

#include "gamefn/partition.h"
#include "gamefn/util.h"

/* The most recently freed SPREAD candidates are shared out among concurrent allocator
 * workers (an offset from the match id): tens of workers of several replicas pick at
 * once, and all starting from the same server only makes them lose races to each other. */
enum { SPREAD = 16 };

struct fleet_table {
    fleet_entry **v;
    size_t n, cap;
    fleet_broken *broken;
    size_t n_broken, cap_broken;
    fleet_id_entry *ids; /* sorted by key */
    size_t n_ids, cap_ids;
    const fleet_config *dcs; /* borrowed; NULL = any datacenter */
    uint64_t generation;
    uint64_t version;
};

gf_err fleet_table_new(fleet_table **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? GF_OK : GF_ERR_NOMEM;
}

static void entry_free(fleet_entry *e)
{
    if (!e)
        return;
    gamefn__v1__server_record__free_unpacked(e->rec, NULL);
    free(e->data);
    free(e);
}

void fleet_table_free(fleet_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        entry_free(t->v[i]);
    free(t->v);
    free(t->broken);
    free(t->ids);
    free(t);
}

void fleet_table_set_datacenters(fleet_table *t, const fleet_config *cfg)
{
    t->dcs = cfg;
}

static fleet_broken *find_broken(const fleet_table *t, const char *key)
{
    for (size_t i = 0; i < t->n_broken; i++)
        if (strcmp(t->broken[i].key, key) == 0)
            return &t->broken[i];
    return NULL;
}

static void drop_broken(fleet_table *t, fleet_broken *b)
{
    *b = t->broken[--t->n_broken];
}

/* Holds `key` at `rev` as broken for `why`; its clock starts when a revision is new. */
static gf_err hold_broken(fleet_table *t, const char *key, uint64_t rev, const char *why,
                          int64_t now)
{
    fleet_broken *b = find_broken(t, key);
    if (!b) {
        fleet_broken *v = gf_grow(t->broken, &t->cap_broken, t->n_broken + 1, sizeof *v);
        if (!v)
            return GF_ERR_NOMEM;
        t->broken = v;
        b = &v[t->n_broken++];
        memset(b, 0, sizeof *b);
        snprintf(b->key, sizeof b->key, "%s", key);
    }
    if (b->revision != rev) {
        b->revision = rev;
        b->since_unix_ms = now;
        snprintf(b->why, sizeof b->why, "%s", why);
    }
    b->generation = t->generation;
    return GF_OK;
}

/* Why the value `rec` (NULL: did not decode) is no usable record under `key`; false
 * when it is one. */
static bool unusable(const fleet_table *t, const char *key, const Gamefn__V1__ServerRecord *rec,
                     char *why, size_t why_size)
{
    char own_key[FLEET_KEY_MAX];
    fleet_problem p;
    if (!rec)
        snprintf(why, why_size, "not a ServerRecord (does not decode)");
    else if (fleet_check_record(rec, &p) != GF_OK)
        snprintf(why, why_size, "invalid ServerRecord: %.200s", p.text);
    else if (!fleet_key(rec->datacenter, rec->server_id, own_key) || strcmp(own_key, key) != 0)
        snprintf(why, why_size, "the record of %s.%s stored under another key", rec->datacenter,
                 rec->server_id);
    else if (t->dcs && !fleet_config_dc(t->dcs, rec->datacenter))
        snprintf(why, why_size, "datacenter %s is not configured", rec->datacenter);
    else
        return false;
    return true;
}

/* ---- the server-id index ---------------------------------------------------------- */

static const char *id_key_at(const fleet_table *t, size_t i)
{
    return t->ids[i].key;
}

static const char *entry_key_at(const fleet_table *t, size_t i)
{
    return t->v[i]->key;
}

/* Index of the first of the n keys (key_at: sorted) that is >= key. */
static size_t lower_bound(const fleet_table *t, size_t n,
                          const char *(*key_at)(const fleet_table *t, size_t i), const char *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(key_at(t, mid), key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static fleet_id_entry *find_id(const fleet_table *t, const char *key, size_t *at)
{
    size_t i = lower_bound(t, t->n_ids, id_key_at, key);
    if (at)
        *at = i;
    return i < t->n_ids && strcmp(t->ids[i].key, key) == 0 ? &t->ids[i] : NULL;
}

static void drop_id(fleet_table *t, size_t at)
{
    memmove(t->ids + at, t->ids + at + 1, (t->n_ids - at - 1) * sizeof *t->ids);
    t->n_ids--;
}

static gf_err put_id(fleet_table *t, const char *key, uint64_t rev, const uint8_t *data, size_t len)
{
    size_t at = 0;
    fleet_id_entry *old = find_id(t, key, &at);
    if (old && old->revision > rev) {
        old->generation = t->generation; /* a replay behind our own newer write */
        return GF_OK;
    }
    fleet_id_entry e = {.revision = rev, .generation = t->generation};
    if (strlen(key) >= sizeof e.key ||
        !fleet_id_parse(data, len, e.datacenter, &e.claimed_unix_ms)) {
        if (old) /* not an index value: not ours to judge, held no more */
            drop_id(t, at);
        return GF_OK;
    }
    snprintf(e.key, sizeof e.key, "%s", key);
    if (old) {
        *old = e;
        return GF_OK;
    }
    fleet_id_entry *v = gf_grow(t->ids, &t->cap_ids, t->n_ids + 1, sizeof *v);
    if (!v)
        return GF_ERR_NOMEM;
    t->ids = v;
    memmove(t->ids + at + 1, t->ids + at, (t->n_ids - at) * sizeof *t->ids);
    t->ids[at] = e;
    t->n_ids++;
    return GF_OK;
}

size_t fleet_table_id_count(const fleet_table *t)
{
    return t->n_ids;
}

/* ---- records ------------------------------------------------------------------------ */

static fleet_entry *find(const fleet_table *t, const char *key, size_t *at)
{
    size_t i = lower_bound(t, t->n, entry_key_at, key);
    if (at)
        *at = i;
    return i < t->n && strcmp(t->v[i]->key, key) == 0 ? t->v[i] : NULL;
}

gf_err fleet_table_put(fleet_table *t, const char *key, uint64_t rev, const uint8_t *data,
                       size_t len, int64_t now_unix_ms)
{
    size_t at = 0;
    char why[GF_WIRE_TEXT_MAX];
    if (fleet_is_id_key(key))
        return put_id(t, key, rev, data, len); /* the server-id index: no server */
    fleet_entry *old = find(t, key, &at);
    fleet_broken *was_broken = find_broken(t, key);
    if ((old && old->revision > rev) || (was_broken && was_broken->revision > rev)) {
        /* a replay behind our own newer write: keep what is held */
        if (old)
            old->generation = t->generation;
        else
            was_broken->generation = t->generation;
        return GF_OK;
    }
    Gamefn__V1__ServerRecord *rec = gamefn__v1__server_record__unpack(NULL, len, data);
    if (unusable(t, key, rec, why, sizeof why)) {
        gamefn__v1__server_record__free_unpacked(rec, NULL);
        if (old) /* what the key holds now is unusable: forget the old value too */
            fleet_table_delete(t, key, rev);
        gf_err err = hold_broken(t, key, rev, why, now_unix_ms);
        return err == GF_OK ? GF_ERR_INVALID : err;
    }
    if (was_broken)
        drop_broken(t, was_broken);
    fleet_entry *e = calloc(1, sizeof *e);
    uint8_t *copy = malloc(len ? len : 1);
    if (!e || !copy) {
        free(e);
        free(copy);
        gamefn__v1__server_record__free_unpacked(rec, NULL);
        return GF_ERR_NOMEM;
    }
    memcpy(copy, data, len);
    snprintf(e->key, sizeof e->key, "%s", key);
    e->revision = rev;
    e->rec = rec;
    e->data = copy;
    e->len = len;
    e->generation = t->generation;
    /* A server that becomes FREE (new, freed, or back from another state) is what a
     * waiting allocator waits for; a heartbeat that keeps a FREE server FREE is not. */
    bool freed = rec->state == GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE &&
                 (!old || old->rec->state != GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    if (old) {
        entry_free(old);
        t->v[at] = e;
    } else {
        fleet_entry **v = gf_grow(t->v, &t->cap, t->n + 1, sizeof *v);
        if (!v) {
            entry_free(e);
            return GF_ERR_NOMEM;
        }
        t->v = v;
        memmove(t->v + at + 1, t->v + at, (t->n - at) * sizeof *t->v);
        t->v[at] = e;
        t->n++;
    }
    if (freed)
        t->version++;
    return GF_OK;
}

void fleet_table_delete(fleet_table *t, const char *key, uint64_t rev)
{
    size_t at = 0;
    if (fleet_is_id_key(key)) {
        fleet_id_entry *id = find_id(t, key, &at);
        if (id && id->revision <= rev)
            drop_id(t, at);
        return;
    }
    fleet_broken *b = find_broken(t, key);
    if (b && b->revision <= rev)
        drop_broken(t, b);
    fleet_entry *old = find(t, key, &at);
    if (!old || old->revision > rev)
        return;
    entry_free(old);
    memmove(t->v + at, t->v + at + 1, (t->n - at - 1) * sizeof *t->v);
    t->n--;
}

void fleet_table_superseded(fleet_table *t, const char *key, uint64_t rev)
{
    fleet_entry *e = find(t, key, NULL);
    if (e && e->revision == rev)
        e->superseded = true;
}

void fleet_table_resync_begin(fleet_table *t)
{
    t->generation++;
}

size_t fleet_table_resync_end(fleet_table *t)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i]->generation == t->generation) {
            t->v[kept++] = t->v[i];
        } else {
            entry_free(t->v[i]);
            dropped++;
        }
    }
    t->n = kept;
    for (size_t i = 0; i < t->n_broken;) {
        if (t->broken[i].generation == t->generation) {
            i++;
        } else {
            drop_broken(t, &t->broken[i]);
            dropped++;
        }
    }
    kept = 0;
    for (size_t i = 0; i < t->n_ids; i++) {
        if (t->ids[i].generation == t->generation)
            t->ids[kept++] = t->ids[i];
        else
            dropped++;
    }
    t->n_ids = kept;
    return dropped;
}

size_t fleet_table_count(const fleet_table *t)
{
    return t->n;
}

size_t fleet_table_broken_count(const fleet_table *t)
{
    return t->n_broken;
}

const fleet_broken *fleet_table_broken_get(const fleet_table *t, const char *key)
{
    return find_broken(t, key);
}

void fleet_table_broken_each(const fleet_table *t, void (*fn)(const fleet_broken *b, void *arg),
                             void *arg)
{
    for (size_t i = 0; i < t->n_broken; i++)
        fn(&t->broken[i], arg);
}

uint64_t fleet_table_version(const fleet_table *t)
{
    return t->version;
}

const fleet_entry *fleet_table_get(const fleet_table *t, const char *key)
{
    return find(t, key, NULL);
}

/* [*first, *end) is the run of `datacenter`'s keys (every key when NULL). */
static void dc_range(const fleet_table *t, const char *datacenter, size_t *first, size_t *end)
{
    if (!datacenter) {
        *first = 0;
        *end = t->n;
        return;
    }
    char prefix[FLEET_KEY_MAX];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "%s.", datacenter);
    size_t i = lower_bound(t, t->n, entry_key_at, prefix);
    *first = i;
    while (i < t->n && strncmp(t->v[i]->key, prefix, plen) == 0)
        i++;
    *end = i;
}

void fleet_table_each(const fleet_table *t, const char *datacenter,
                      void (*fn)(const fleet_entry *e, void *arg), void *arg)
{
    size_t first, end;
    dc_range(t, datacenter, &first, &end);
    for (size_t i = first; i < end; i++)
        fn(t->v[i], arg);
}

static bool copy_out(const fleet_entry *e, fleet_candidate *c)
{
    c->rec = gamefn__v1__server_record__unpack(NULL, e->len, e->data);
    if (!c->rec)
        return false;
    memcpy(c->key, e->key, sizeof c->key);
    c->revision = e->revision;
    return true;
}

size_t fleet_table_candidates(const fleet_table *t, const char *datacenter, size_t players,
                              int64_t now_unix_ms, const char *match_id, fleet_candidate *out,
                              size_t max)
{
    size_t first, end, n = 0;
    /* The spread is taken over the SPREAD most recently freed whatever `max` is, then the
     * first `max` of that order are copied. */
    const fleet_entry *best[SPREAD * 2];
    size_t want = max > SPREAD ? (max < SPREAD * 2 ? max : SPREAD * 2) : SPREAD;
    if (!datacenter || max == 0)
        return 0;
    dc_range(t, datacenter, &first, &end);
    /* Keep the `want` most recently freed, by insertion into a short sorted list. */
    for (size_t i = first; i < end; i++) {
        const fleet_entry *e = t->v[i];
        if (e->superseded || !fleet_allocatable(e->rec, players, now_unix_ms))
            continue;
        size_t at = n < want ? n : want;
        while (at > 0 && best[at - 1]->rec->free_since_unix_ms < e->rec->free_since_unix_ms)
            at--;
        if (at >= want)
            continue;
        size_t last = n < want ? n : want - 1;
        memmove(best + at + 1, best + at, (last - at) * sizeof best[0]);
        best[at] = e;
        if (n < want)
            n++;
    }
    size_t spread = n < SPREAD ? n : SPREAD;
    size_t offset =
        spread > 1 && match_id ? gf_partition_fnv1a32(match_id, strlen(match_id)) % spread : 0;
    size_t copied = 0;
    for (size_t k = 0; k < n && copied < max; k++) {
        /* Rotate the first `spread` by the offset; the rest stay in order. */
        size_t i = k < spread ? (k + offset) % spread : k;
        if (copy_out(best[i], &out[copied]))
            copied++;
    }
    return copied;
}

bool fleet_table_find_match(const fleet_table *t, const char *match_id, fleet_candidate *out)
{
    for (size_t i = 0; match_id && match_id[0] && i < t->n; i++) {
        const Gamefn__V1__ServerRecord *r = t->v[i]->rec;
        if (r->allocated_match_id && strcmp(r->allocated_match_id, match_id) == 0)
            return copy_out(t->v[i], out);
    }
    return false;
}

void fleet_candidates_free(fleet_candidate *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++) {
        gamefn__v1__server_record__free_unpacked(c[i].rec, NULL);
        c[i].rec = NULL;
    }
}

void fleet_table_orphan_ids(const fleet_table *t, int64_t now_unix_ms, int64_t older_than_ms,
                            void (*fn)(const fleet_id_entry *id, void *arg), void *arg)
{
    char rec_key[FLEET_KEY_MAX];
    for (size_t i = 0; i < t->n_ids; i++) {
        const fleet_id_entry *id = &t->ids[i];
        if (now_unix_ms - id->claimed_unix_ms < older_than_ms)
            continue;
        if (fleet_key(id->datacenter, id->key + sizeof FLEET_ID_PREFIX - 1, rec_key) &&
            (find(t, rec_key, NULL) || find_broken(t, rec_key)))
            continue; /* its record is there (valid or not) */
        fn(id, arg);
    }
}
