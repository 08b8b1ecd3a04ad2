/*
 * kv_watch.c — a KV watcher re-created after reconnects and failures (see
 * gamefn/kv_watch.h).
 *
 * Design notes: the thread waits on kvWatcher_Next in short slices, so it notices a
 * stop, a reconnect (the connection's statistics count them) or the resync timer
 * within a slice. A failed creation or a failing watcher backs off briefly before the
 * next one, so a server that is away costs a few attempts a second, not a busy loop.
 */
#include "gamefn/kv_watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"

enum { SLICE_MS = 200, BACKOFF_MS = 500, SETTLE_MS = 2000 };

struct gf_kv_watch {
    natsConnection *nc;
    kvStore *kv;
    char *keys; /* NULL = all */
    char name[64];
    int64_t resync_ms;
    gf_kv_watch_ops ops;
    void *arg;
    pthread_t thread;
    atomic_int stop;
    atomic_ullong syncs;
};

static uint64_t reconnects(natsConnection *nc)
{
    natsStatistics *st = NULL;
    uint64_t in_msgs, in_bytes, out_msgs, out_bytes, n = 0;
    if (natsStatistics_Create(&st) == NATS_OK && natsConnection_GetStats(nc, st) == NATS_OK)
        natsStatistics_GetCounts(st, &in_msgs, &in_bytes, &out_msgs, &out_bytes, &n);
    natsStatistics_Destroy(st);
    return n;
}

/* One watcher's life: until stop, a failure, a reconnect or the resync timer. */
static void watch_once(gf_kv_watch *w)
{
    kvWatcher *kw = NULL;
    uint64_t seen = reconnects(w->nc);
    natsStatus s =
        w->keys ? kvStore_Watch(&kw, w->kv, w->keys, NULL) : kvStore_WatchAll(&kw, w->kv, NULL);
    if (s != NATS_OK) {
        gf_log_warn("KV watcher not created; retrying", "watch=%s status=%s", w->name,
                    natsStatus_GetText(s));
        gf_clock_sleep_until(gf_clock_mono_ms() + BACKOFF_MS, &w->stop);
        return;
    }
    atomic_fetch_add(&w->syncs, 1);
    if (w->ops.begin)
        w->ops.begin(w->arg);
    int64_t until = w->resync_ms > 0 ? gf_clock_mono_ms() + w->resync_ms : INT64_MAX;
    while (!atomic_load(&w->stop) && gf_clock_mono_ms() < until) {
        kvEntry *e = NULL;
        s = kvWatcher_Next(&e, kw, SLICE_MS);
        if (s == NATS_OK && e)
            w->ops.entry(e, w->arg);
        else if (s == NATS_OK && w->ops.replayed)
            w->ops.replayed(w->arg);
        kvEntry_Destroy(e);
        if (s != NATS_OK && s != NATS_TIMEOUT) {
            gf_log_warn("KV watcher failed; re-creating it", "watch=%s status=%s", w->name,
                        natsStatus_GetText(s));
            gf_clock_sleep_until(gf_clock_mono_ms() + BACKOFF_MS, &w->stop);
            break;
        }
        if (reconnects(w->nc) != seen) {
            gf_log_info("reconnected: re-reading the bucket", "watch=%s", w->name);
            /* nats.c 3.4.1 resets an ordered consumer after a reconnect on its own
             * thread, freeing the consumer name that kvWatcher_Stop's delete is using
             * (jsSub_deleteConsumer reads it after dropping the lock: a use after
             * free, docs/NATS-FACTS.md). Letting the reset happen first narrows that
             * window to a reset that comes later still. */
            gf_clock_sleep_until(gf_clock_mono_ms() + SETTLE_MS, &w->stop);
            break;
        }
    }
    /* An update may be arriving: docs/NATS-FACTS.md §4. */
    gf_kv_watcher_forget(w->nc, kw, GF_SUB_FORGET_WAIT_MS);
}

static void *watch_thread(void *arg)
{
    gf_kv_watch *w = arg;
    while (!atomic_load(&w->stop))
        watch_once(w);
    return NULL;
}

gf_err gf_kv_watch_start(natsConnection *nc, kvStore *kv, const char *keys, const char *name,
                         int64_t resync_ms, const gf_kv_watch_ops *ops, void *arg,
                         gf_kv_watch **out)
{
    *out = NULL;
    if (!nc || !kv || !ops || !ops->entry)
        return GF_ERR_INVALID;
    gf_kv_watch *w = calloc(1, sizeof *w);
    if (!w)
        return GF_ERR_NOMEM;
    w->nc = nc;
    w->kv = kv;
    w->keys = keys ? strdup(keys) : NULL;
    snprintf(w->name, sizeof w->name, "%s", name ? name : kvStore_Bucket(kv));
    w->resync_ms = resync_ms;
    w->ops = *ops;
    w->arg = arg;
    if ((keys && !w->keys) || pthread_create(&w->thread, NULL, watch_thread, w) != 0) {
        free(w->keys);
        free(w);
        return GF_ERR_NOMEM;
    }
    *out = w;
    return GF_OK;
}

void gf_kv_watch_stop(gf_kv_watch *w)
{
    if (!w)
        return;
    atomic_store(&w->stop, 1);
    pthread_join(w->thread, NULL);
    free(w->keys);
    free(w);
}

uint64_t gf_kv_watch_syncs(gf_kv_watch *w)
{
    return atomic_load(&w->syncs);
}
