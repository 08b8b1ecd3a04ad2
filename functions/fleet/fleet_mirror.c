/*
 * fleet_mirror.c — the fleet bucket's copy (see fleet_mirror.h), kept by a runtime KV
 * watch (gamefn/kv_watch.h: re-created after reconnects and failures).
 *
 * Design notes: the table is touched only under `lock`; entries are applied one at a
 * time, so readers never wait behind a whole replay. A replay marks what it mentions
 * (fleet_table resync) and drops the rest when it is complete.
 */
#include "fleet_mirror.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gamefn/clock.h"
#include "gamefn/kv_watch.h"
#include "gamefn/log.h"

struct fleet_mirror {
    kvStore *kv;
    gf_kv_watch *watch;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    fleet_table *table; /* under lock */
    bool ready;         /* under lock */
};

static void on_begin(void *arg)
{
    fleet_mirror *m = arg;
    pthread_mutex_lock(&m->lock);
    fleet_table_resync_begin(m->table);
    pthread_mutex_unlock(&m->lock);
}

static void on_entry(kvEntry *e, void *arg)
{
    fleet_mirror *m = arg;
    const char *key = kvEntry_Key(e);
    uint64_t rev = kvEntry_Revision(e);
    pthread_mutex_lock(&m->lock);
    uint64_t before = fleet_table_version(m->table);
    if (kvEntry_Operation(e) == kvOp_Put) {
        if (fleet_table_put(m->table, key, rev, kvEntry_Value(e), (size_t)kvEntry_ValueLen(e),
                            gf_clock_unix_ms()) == GF_ERR_INVALID) {
            const fleet_broken *b = fleet_table_broken_get(m->table, key);
            gf_log_warn("fleet key ignored: not a usable ServerRecord",
                        "key=%s revision=%llu why=\"%s\"", key, (unsigned long long)rev,
                        b ? b->why : "");
        }
    } else {
        fleet_table_delete(m->table, key, rev);
    }
    if (fleet_table_version(m->table) != before) /* a server came free: wake the waiters */
        pthread_cond_broadcast(&m->changed);
    pthread_mutex_unlock(&m->lock);
}

static void on_replayed(void *arg)
{
    fleet_mirror *m = arg;
    pthread_mutex_lock(&m->lock);
    size_t dropped = fleet_table_resync_end(m->table);
    m->ready = true;
    pthread_cond_broadcast(&m->changed);
    size_t n = fleet_table_count(m->table);
    pthread_mutex_unlock(&m->lock);
    gf_log_debug("fleet mirror in sync", "servers=%zu dropped=%zu", n, dropped);
}

gf_err fleet_mirror_start(natsConnection *nc, jsCtx *js, const char *bucket, int64_t resync_ms,
                          fleet_mirror **out)
{
    return fleet_mirror_start_in(nc, js, bucket, resync_ms, NULL, out);
}

gf_err fleet_mirror_start_in(natsConnection *nc, jsCtx *js, const char *bucket, int64_t resync_ms,
                             const fleet_config *datacenters, fleet_mirror **out)
{
    static const gf_kv_watch_ops ops = {
        .begin = on_begin, .entry = on_entry, .replayed = on_replayed};
    *out = NULL;
    fleet_mirror *m = calloc(1, sizeof *m);
    if (!m)
        return GF_ERR_NOMEM;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* timeouts never jump with the wall clock */
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->changed, &ca);
    pthread_condattr_destroy(&ca);
    gf_err err = fleet_table_new(&m->table);
    if (err == GF_OK)
        fleet_table_set_datacenters(m->table, datacenters);
    if (err == GF_OK && js_KeyValue(&m->kv, js, bucket) != NATS_OK)
        err = GF_ERR_NOT_FOUND;
    if (err == GF_OK)
        err = gf_kv_watch_start(nc, m->kv, NULL, bucket, resync_ms, &ops, m, &m->watch);
    if (err != GF_OK) {
        fleet_mirror_stop(m);
        return err;
    }
    *out = m;
    return GF_OK;
}

void fleet_mirror_stop(fleet_mirror *m)
{
    if (!m)
        return;
    gf_kv_watch_stop(m->watch);
    kvStore_Destroy(m->kv);
    fleet_table_free(m->table);
    pthread_cond_destroy(&m->changed);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

bool fleet_mirror_ready(fleet_mirror *m)
{
    pthread_mutex_lock(&m->lock);
    bool ready = m->ready;
    pthread_mutex_unlock(&m->lock);
    return ready;
}

static void deadline_in(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

bool fleet_mirror_wait_ready(fleet_mirror *m, int64_t timeout_ms)
{
    struct timespec ts;
    deadline_in(&ts, timeout_ms);
    pthread_mutex_lock(&m->lock);
    while (!m->ready && pthread_cond_timedwait(&m->changed, &m->lock, &ts) == 0)
        ;
    bool ready = m->ready;
    pthread_mutex_unlock(&m->lock);
    return ready;
}

void fleet_mirror_note(fleet_mirror *m, const char *key, uint64_t rev, const uint8_t *data,
                       size_t len)
{
    pthread_mutex_lock(&m->lock);
    uint64_t before = fleet_table_version(m->table);
    if (data)
        fleet_table_put(m->table, key, rev, data, len, gf_clock_unix_ms());
    else
        fleet_table_delete(m->table, key, rev);
    if (fleet_table_version(m->table) != before)
        pthread_cond_broadcast(&m->changed);
    pthread_mutex_unlock(&m->lock);
}

bool fleet_mirror_copy(fleet_mirror *m, const char *key, uint64_t *rev, uint8_t **data, size_t *len)
{
    bool got = false;
    *data = NULL;
    pthread_mutex_lock(&m->lock);
    const fleet_entry *e = fleet_table_get(m->table, key);
    if (e && !e->superseded && (*data = malloc(e->len ? e->len : 1)) != NULL) {
        memcpy(*data, e->data, e->len);
        *len = e->len;
        *rev = e->revision;
        got = true;
    }
    pthread_mutex_unlock(&m->lock);
    return got;
}

void fleet_mirror_superseded(fleet_mirror *m, const char *key, uint64_t rev)
{
    pthread_mutex_lock(&m->lock);
    fleet_table_superseded(m->table, key, rev);
    pthread_mutex_unlock(&m->lock);
}

bool fleet_mirror_wait_change(fleet_mirror *m, uint64_t *version, int64_t timeout_ms)
{
    struct timespec ts;
    deadline_in(&ts, timeout_ms);
    pthread_mutex_lock(&m->lock);
    if (*version == 0)
        *version = fleet_table_version(m->table);
    uint64_t from = *version;
    while (fleet_table_version(m->table) == from &&
           pthread_cond_timedwait(&m->changed, &m->lock, &ts) == 0)
        ;
    *version = fleet_table_version(m->table);
    pthread_mutex_unlock(&m->lock);
    return *version != from;
}

size_t fleet_mirror_candidates(fleet_mirror *m, const char *datacenter, size_t players,
                               int64_t now_unix_ms, const char *match_id, fleet_candidate *out,
                               size_t max)
{
    pthread_mutex_lock(&m->lock);
    size_t n =
        fleet_table_candidates(m->table, datacenter, players, now_unix_ms, match_id, out, max);
    pthread_mutex_unlock(&m->lock);
    return n;
}

bool fleet_mirror_find_match(fleet_mirror *m, const char *match_id, fleet_candidate *out)
{
    pthread_mutex_lock(&m->lock);
    bool found = fleet_table_find_match(m->table, match_id, out);
    pthread_mutex_unlock(&m->lock);
    return found;
}

void fleet_mirror_each(fleet_mirror *m, const char *datacenter,
                       void (*fn)(const fleet_entry *e, void *arg), void *arg)
{
    pthread_mutex_lock(&m->lock);
    fleet_table_each(m->table, datacenter, fn, arg);
    pthread_mutex_unlock(&m->lock);
}

void fleet_mirror_each_broken(fleet_mirror *m, void (*fn)(const fleet_broken *b, void *arg),
                              void *arg)
{
    pthread_mutex_lock(&m->lock);
    fleet_table_broken_each(m->table, fn, arg);
    pthread_mutex_unlock(&m->lock);
}

size_t fleet_mirror_broken_count(fleet_mirror *m)
{
    pthread_mutex_lock(&m->lock);
    size_t n = fleet_table_broken_count(m->table);
    pthread_mutex_unlock(&m->lock);
    return n;
}

void fleet_mirror_orphan_ids(fleet_mirror *m, int64_t now_unix_ms, int64_t older_than_ms,
                             void (*fn)(const fleet_id_entry *id, void *arg), void *arg)
{
    pthread_mutex_lock(&m->lock);
    fleet_table_orphan_ids(m->table, now_unix_ms, older_than_ms, fn, arg);
    pthread_mutex_unlock(&m->lock);
}

size_t fleet_mirror_count(fleet_mirror *m)
{
    pthread_mutex_lock(&m->lock);
    size_t n = fleet_table_count(m->table);
    pthread_mutex_unlock(&m->lock);
    return n;
}

uint64_t fleet_mirror_syncs(fleet_mirror *m)
{
    return gf_kv_watch_syncs(m->watch);
}
