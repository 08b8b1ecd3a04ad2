/*
 * gamefn/kv_watch.h — a KV watcher that survives reconnects: the one loop behind every
 * in-memory copy of a bucket (the fleet mirror, simulated game servers).
 *
 * nats.c 3.4.1 watchers do not survive a reconnect (docs/NATS-FACTS.md §8), so a thread runs the
 * watcher and re-creates it when the connection's reconnect count changes, when the
 * watcher fails, and every `resync_ms` (0 = never) as a safety net. Each (re)creation
 * replays the current value of every key and then follows updates:
 *
 *   begin(arg)         a replay starts: every current key follows (a copy may mark
 *                      what it holds, and drop what the replay did not mention);
 *   entry(e, arg)      one put, delete or purge, in stream order (e is borrowed);
 *   replayed(arg)      the current values are all delivered; live updates follow.
 *
 * A watcher is an ordered consumer on the bucket's stream: it sees stored values only.
 * (A plain subscription on $KV.<bucket>.<key> also receives writes the bucket refused,
 * e.g. every compare-and-set that lost its race.)
 *
 * Threads: the callbacks run on the watch thread, one at a time. Ownership: start
 * allocates; stop joins the thread and frees. The connection and kvStore are borrowed
 * and must outlive the watch.
 */
#ifndef GAMEFN_KV_WATCH_H
#define GAMEFN_KV_WATCH_H

#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

typedef struct gf_kv_watch gf_kv_watch;

typedef struct gf_kv_watch_ops {
    void (*begin)(void *arg);             /* may be NULL */
    void (*entry)(kvEntry *e, void *arg); /* required */
    void (*replayed)(void *arg);          /* may be NULL */
} gf_kv_watch_ops;

/* Watches every key of `kv` (`keys` = NULL) or the keys matching `keys` (wildcards as
 * in kvStore_Watch). `name` labels the log lines. */
gf_err gf_kv_watch_start(natsConnection *nc, kvStore *kv, const char *keys, const char *name,
                         int64_t resync_ms, const gf_kv_watch_ops *ops, void *arg,
                         gf_kv_watch **out);
void gf_kv_watch_stop(gf_kv_watch *w); /* NULL is fine */

/* Times the watcher was (re-)created; the first is 1. */
uint64_t gf_kv_watch_syncs(gf_kv_watch *w);

#endif
