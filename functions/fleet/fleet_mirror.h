/*
 * fleet_mirror.h — a live copy of the `fleet` KV bucket (fleet_table.h) kept by a KV
 * watch on its own thread (gamefn/kv_watch.h). The allocator picks servers from it; the
 * fleet function sweeps and plans the warm pool from it.
 *
 * The watch is re-created after every reconnect (nats.c 3.4.1 watchers do not survive
 * one), after a failure, and every `resync_ms` as a safety net; each re-creation
 * replays every key, and keys the replay does not mention are dropped (fleet_table
 * resync). Until the first replay finished, fleet_mirror_ready() is false.
 *
 * Keys whose value is not a usable record are held apart as broken (fleet_table.h):
 * never a candidate, listed for the fleet's sweep, and logged as the watcher delivers them.
 *
 * The mirror may lag the bucket by a few milliseconds: it only suggests; every write
 * is a compare-and-set on the revision it read, so a stale suggestion costs a lost
 * race, never a wrong allocation. Writers feed their own successful writes back with
 * fleet_mirror_note() so they do not pick the same record twice.
 *
 * Threads: one watcher thread owns the watcher; every other call may come from any
 * thread (one mutex around the table; a condition variable signals a server come free).
 * Ownership: start allocates, stop joins the thread and frees everything. The
 * natsConnection and jsCtx are borrowed and must outlive the mirror.
 */
#ifndef GAMEFN_FLEET_MIRROR_H
#define GAMEFN_FLEET_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "fleet_table.h"
#include "gamefn/err.h"

typedef struct fleet_mirror fleet_mirror;

/* Binds bucket `bucket` and starts the watcher thread. resync_ms: periodic full
 * re-read (0 = only after reconnects and failures). */
gf_err fleet_mirror_start(natsConnection *nc, jsCtx *js, const char *bucket, int64_t resync_ms,
                          fleet_mirror **out);
/* The same, holding records of datacenters `datacenters` does not list as broken
 * (fleet_table_set_datacenters; borrowed, must outlive the mirror; NULL = any). */
gf_err fleet_mirror_start_in(natsConnection *nc, jsCtx *js, const char *bucket, int64_t resync_ms,
                             const fleet_config *datacenters, fleet_mirror **out);
void fleet_mirror_stop(fleet_mirror *m); /* NULL is fine */

bool fleet_mirror_ready(fleet_mirror *m);
/* Waits until the first replay is done; false after timeout_ms. */
bool fleet_mirror_wait_ready(fleet_mirror *m, int64_t timeout_ms);

/* Applies a write this process made (CAS succeeded at `rev`); data NULL = deleted. A
 * delete's own revision is not returned by the KV API: pass the revision it replaced
 * + 1, which orders it after that write and before anything written later (the
 * watcher then delivers the real delete marker, a no-op). */
void fleet_mirror_note(fleet_mirror *m, const char *key, uint64_t rev, const uint8_t *data,
                       size_t len);

/* A compare-and-set on `key` at `rev` lost: skip that record until its newer revision
 * arrives (fleet_table_superseded). */
void fleet_mirror_superseded(fleet_mirror *m, const char *key, uint64_t rev);

/* A copy of the packed record the mirror holds for `key` (malloc'd into *data, its
 * revision in *rev): false when it holds none, or only one a lost compare-and-set showed
 * to be superseded. */
bool fleet_mirror_copy(fleet_mirror *m, const char *key, uint64_t *rev, uint8_t **data,
                       size_t *len);

/* Waits until a server became FREE after *version (fleet_table_version), or timeout_ms
 * passed; updates *version. Returns true if one did. *version = 0 gets the current
 * version. Only such changes wake the waiters: heartbeats of servers that stay FREE,
 * allocations and deletes do not (many allocator workers wait at once under load). */
bool fleet_mirror_wait_change(fleet_mirror *m, uint64_t *version, int64_t timeout_ms);

/* fleet_table calls, under the mirror's lock. `fn` must not call back into the mirror. */
size_t fleet_mirror_candidates(fleet_mirror *m, const char *datacenter, size_t players,
                               int64_t now_unix_ms, const char *match_id, fleet_candidate *out,
                               size_t max);
bool fleet_mirror_find_match(fleet_mirror *m, const char *match_id, fleet_candidate *out);
void fleet_mirror_each(fleet_mirror *m, const char *datacenter,
                       void (*fn)(const fleet_entry *e, void *arg), void *arg);
size_t fleet_mirror_count(fleet_mirror *m);
/* The keys held as broken (fleet_table.h), under the lock like fleet_mirror_each. */
void fleet_mirror_each_broken(fleet_mirror *m, void (*fn)(const fleet_broken *b, void *arg),
                              void *arg);
size_t fleet_mirror_broken_count(fleet_mirror *m);
/* The index keys that look orphaned (fleet_table_orphan_ids), under the lock. */
void fleet_mirror_orphan_ids(fleet_mirror *m, int64_t now_unix_ms, int64_t older_than_ms,
                             void (*fn)(const fleet_id_entry *id, void *arg), void *arg);

/* Times the watcher was (re-)created; the first is 1. For tests and logs. */
uint64_t fleet_mirror_syncs(fleet_mirror *m);

#endif
