/*
 * mirror.h — the matcher's copy of the live tickets (QUEUED and CLAIMED) of the `tickets`
 * bucket, kept by a KV watcher.
 *
 * At start the watcher delivers every key's current value (the initial values end with
 * a NULL entry) and the mirror becomes ready; after that it applies each change. nats.c
 * 3.4.1 watchers do not survive a reconnect (after a nats-server restart their ephemeral
 * consumer is gone and they just go quiet), so the watcher thread watches the
 * connection's reconnect count and, when it changes, re-creates the watcher and
 * re-syncs: entries the new initial values do not mention are dropped. Ticks are skipped
 * while the mirror is not ready.
 *
 * A ticket seen by a tick is a reference-counted snapshot of one revision (mm_ref): the
 * watcher may replace the entry meanwhile, the tick keeps reading the revision it
 * decided on, and every write it makes is a compare-and-set on that revision, so a
 * stale view costs a conflict, never a wrong write.
 *
 * Per entry the mirror also keeps what a matcher instance remembers between ticks: the
 * revision it last wrote from (`busy`: not offered again until the watcher delivers a
 * newer revision) and when it last pushed a QUEUED status (rate limit).
 *
 * Threads: the watcher thread writes; tick threads read and set the per-entry notes;
 * everything under one mutex, held only to copy references out or notes in.
 * Ownership: mm_mirror_start allocates, mm_mirror_stop frees; refs are released with
 * mm_ref_release (the last release frees the record).
 */
#ifndef GAMEFN_MATCHER_MIRROR_H
#define GAMEFN_MATCHER_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/match/ticket.h"
#include "gamefn/tickets/config.h"
#include "gamefn/v1/ticket.pb-c.h"

/* One revision of one ticket, with its engine view (borrowing the record's strings). */
typedef struct mm_ref {
    int refs; /* under the mirror's mutex */
    uint64_t rev;
    Gamefn__V1__TicketRecord *rec;
    gf_match_ticket et;
    gf_err engine; /* GF_OK, or GF_ERR_NOT_FOUND: its queue left the config */
    int32_t group; /* tick group index, -1 when its queue is unknown */
    /* storage of et's arrays follows */
} mm_ref;

typedef struct mm_mirror mm_mirror;

/* Starts the watcher thread on `tickets` (a bound kvStore, borrowed). */
gf_err mm_mirror_start(natsConnection *nc, kvStore *tickets, const gf_mm_tables *tables,
                       mm_mirror **out);
void mm_mirror_stop(mm_mirror *m); /* NULL is fine */

bool mm_mirror_ready(mm_mirror *m);

/* References to every live ticket of `group` (QUEUED or CLAIMED) that this instance is
 * not waiting on (see `busy`). *out is malloc'd (caller frees, after releasing each). */
size_t mm_mirror_snapshot(mm_mirror *m, int group, mm_ref ***out);
void mm_ref_release(mm_mirror *m, mm_ref **refs, size_t n);

/* This instance wrote a change based on `rev` of ticket `id`: do not offer that revision
 * again for for_ms (the watcher delivers the next one long before; the bound keeps a
 * write whose answer was lost from parking the ticket). */
void mm_mirror_busy(mm_mirror *m, const char *id, uint64_t rev, int64_t for_ms);

/* QUEUED push rate limit: true (and records now/reason) when a push for ticket `id` is
 * due — never pushed, its reason changed, or interval_ms passed since the last push. */
bool mm_mirror_push_due(mm_mirror *m, const char *id, int reason, int64_t now_ms,
                        int64_t interval_ms);

typedef struct mm_mirror_stats {
    size_t live;         /* tickets in the mirror */
    long long resyncs;   /* watchers created (1 + one per reconnect or error) */
    long long updates;   /* entries applied */
    long long malformed; /* values that did not decode (ignored) */
} mm_mirror_stats;
void mm_mirror_stats_get(mm_mirror *m, mm_mirror_stats *out);

#endif
