/*
 * fleet_mirror.c — the fleet bucket's watcher thread (see fleet_mirror.h).
 *
 * Design notes: the thread waits on kvWatcher_Next in short slices so it notices a
 * stop, a reconnect (natsConnection_GetStats' reconnect count) or the resync timer
 * within a slice. A watcher that returns an error other than a timeout is dropped and
 * re-created after a short backoff. The table is touched only under `lock`; entries
 * are applied one at a time, so readers never wait behind a whole replay.
 */
#include "fleet_mirror.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"

enum { SLICE_MS = 200 };

struct fleet_mirror {
    natsConnection *nc;
    kvStore *kv;
    int64_t resync_ms;
    pthread_t thread;
    bool thread_started;
    atomic_int stop;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    fleet_table *table; /* under lock */
    bool ready;         /* under lock */
    uint64_t syncs;     /* under lock */
};

static uint64_t reconnects(natsConnection *nc)
{
    natsStatistics *st = NULL;
    uint64_t in_msgs, in_bytes, out_msgs, out_bytes, rc = 0;
    if (natsStatistics_Create(&st) == NATS_OK && natsConnection_GetStats(nc, st) == NATS_OK)
        natsStatistics_GetCounts(st, &in_msgs, &in_bytes, &out_msgs, &out_bytes, &rc);
    natsStatistics_Destroy(st);
    return rc;
}

static void apply(fleet_mirror *m, kvEntry *e)
{
    const char *key = kvEntry_Key(e);
    uint64_t rev = kvEntry_Revision(e);
    pthread_mutex_lock(&m->lock);
    if (kvEntry_Operation(e) == kvOp_Put) {
        if (fleet_table_put(m->table, key, rev, kvEntry_Value(e), (size_t)kvEntry_ValueLen(e)) ==
            GF_ERR_INVALID)
            gf_log_warn("fleet record ignored: not a valid ServerRecord", "key=%s revision=%llu",
                        key, (unsigned long long)rev);
    } else {
        fleet_table_delete(m->table, key, rev);
    }
    pthread_cond_broadcast(&m->changed);
    pthread_mutex_unlock(&m->lock);
}

/* One watcher's life: until stop, an error, a reconnect or the resync timer. */
static void watch_once(fleet_mirror *m)
{
    kvWatcher *w = NULL;
    uint64_t seen_reconnects = reconnects(m->nc);
    if (kvStore_WatchAll(&w, m->kv, NULL) != NATS_OK) {
        gf_log_warn("fleet watcher not created; retrying", "error=%s", nats_GetLastError(NULL));
        gf_clock_sleep_ms(500);
        return;
    }
    pthread_mutex_lock(&m->lock);
    fleet_table_resync_begin(m->table);
    m->syncs++;
    pthread_mutex_unlock(&m->lock);
    bool replaying = true;
    int64_t until = m->resync_ms > 0 ? gf_clock_mono_ms() + m->resync_ms : INT64_MAX;
    while (!atomic_load(&m->stop) && gf_clock_mono_ms() < until) {
        kvEntry *e = NULL;
        natsStatus s = kvWatcher_Next(&e, w, SLICE_MS);
        if (s == NATS_OK && e) {
            apply(m, e);
            kvEntry_Destroy(e);
        } else if (s == NATS_OK) { /* the replay of current values is complete */
            pthread_mutex_lock(&m->lock);
            size_t dropped = fleet_table_resync_end(m->table);
            m->ready = true;
            pthread_cond_broadcast(&m->changed);
            size_t n = fleet_table_count(m->table);
            pthread_mutex_unlock(&m->lock);
            replaying = false;
            gf_log_debug("fleet mirror in sync", "servers=%zu dropped=%zu", n, dropped);
        } else if (s != NATS_TIMEOUT) {
            gf_log_warn("fleet watcher failed; re-creating it", "status=%s", natsStatus_GetText(s));
            gf_clock_sleep_ms(200);
            break;
        }
        if (reconnects(m->nc) != seen_reconnects) {
            gf_log_info("reconnected: re-reading the fleet bucket", "replaying=%d", replaying);
            break;
        }
    }
    kvWatcher_Stop(w);
    kvWatcher_Destroy(w);
}

static void *mirror_thread(void *arg)
{
    fleet_mirror *m = arg;
    while (!atomic_load(&m->stop))
        watch_once(m);
    return NULL;
}

gf_err fleet_mirror_start(natsConnection *nc, jsCtx *js, const char *bucket, int64_t resync_ms,
                          fleet_mirror **out)
{
    *out = NULL;
    fleet_mirror *m = calloc(1, sizeof *m);
    if (!m)
        return GF_ERR_NOMEM;
    m->nc = nc;
    m->resync_ms = resync_ms;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* timeouts never jump with the wall clock */
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->changed, &ca);
    pthread_condattr_destroy(&ca);
    gf_err err = fleet_table_new(&m->table);
    if (err == GF_OK && js_KeyValue(&m->kv, js, bucket) != NATS_OK)
        err = GF_ERR_NOT_FOUND;
    if (err == GF_OK && pthread_create(&m->thread, NULL, mirror_thread, m) != 0)
        err = GF_ERR_NOMEM;
    if (err != GF_OK) {
        fleet_mirror_stop(m);
        return err;
    }
    m->thread_started = true;
    *out = m;
    return GF_OK;
}

void fleet_mirror_stop(fleet_mirror *m)
{
    if (!m)
        return;
    atomic_store(&m->stop, 1);
    if (m->thread_started)
        pthread_join(m->thread, NULL);
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
    if (data)
        fleet_table_put(m->table, key, rev, data, len);
    else
        fleet_table_delete(m->table, key, rev);
    pthread_cond_broadcast(&m->changed);
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

size_t fleet_mirror_count(fleet_mirror *m)
{
    pthread_mutex_lock(&m->lock);
    size_t n = fleet_table_count(m->table);
    pthread_mutex_unlock(&m->lock);
    return n;
}

uint64_t fleet_mirror_syncs(fleet_mirror *m)
{
    pthread_mutex_lock(&m->lock);
    uint64_t n = m->syncs;
    pthread_mutex_unlock(&m->lock);
    return n;
}
