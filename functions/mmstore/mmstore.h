/*
 * mmstore.h — the matchmaking functions' one door to JetStream: the tickets, players and
 * matches buckets (read, compare-and-set in batches), the Match publish, and status
 * pushes.
 *
 * It is a seam. Every write the service makes is a compare-and-set (create-if-absent,
 * update on a revision, delete on a revision) with one of three results: GF_OK (the new
 * revision), GF_ERR_CONFLICT (the expectation no longer holds: re-read), anything else
 * (the outcome is unknown: re-read before deciding). gf_mmstore_batch() runs a set of
 * independent writes and fills each one's result; the callers never depend on how (it is
 * the runtime's pipelined compare-and-set, gamefn/publish.h: a batch costs about one
 * round trip).
 *
 * Ownership: gf_mmstore_open allocates, gf_mmstore_close frees; the connection and
 * JetStream context are borrowed from the function. Values returned by get are
 * malloc'd (caller frees). Threads: every call may be made from any thread.
 */
#ifndef GAMEFN_MMSTORE_H
#define GAMEFN_MMSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

typedef enum gf_mm_bucket {
    GF_MM_TICKETS = 0,
    GF_MM_PLAYERS,
    GF_MM_MATCHES,
    GF_MM__BUCKETS
} gf_mm_bucket;

typedef enum gf_mm_op_kind {
    GF_MM_CREATE = 1, /* write only if the key has no value (absent or deleted) */
    GF_MM_UPDATE,     /* write only if the key's latest revision is `last` */
    GF_MM_DELETE,     /* delete marker only if the key's latest revision is `last` */
    GF_MM_PUBLISH,    /* a JetStream publish: `key` is the subject, `msg_id` its Nats-Msg-Id */
} gf_mm_op_kind;

typedef struct gf_mm_op {
    gf_mm_op_kind kind;
    gf_mm_bucket bucket;
    const char *key;
    uint64_t last; /* UPDATE, DELETE */
    const void *data;
    size_t len;
    const char *msg_id; /* PUBLISH: required; a resend of the same id is stored once */
    /* results */
    gf_err err;   /* GF_OK, GF_ERR_CONFLICT, GF_ERR_NATS (refused: not stored), or unknown */
    uint64_t rev; /* GF_OK: the new revision */
    int js_code;  /* GF_ERR_NATS: JetStream's err_code */
    bool full;    /* refused for want of room, nothing stored (gamefn/publish.h gf_publish_full) */
} gf_mm_op;

typedef struct gf_mmstore gf_mmstore;

/* Binds the three buckets (which must exist: provisioned from config). */
gf_err gf_mmstore_open(natsConnection *nc, jsCtx *js, gf_mmstore **out);
void gf_mmstore_close(gf_mmstore *s); /* NULL is fine */

/* The key's current value and revision. GF_ERR_NOT_FOUND if absent or deleted. */
gf_err gf_mmstore_get(gf_mmstore *s, gf_mm_bucket b, const char *key, uint8_t **val, size_t *len,
                      uint64_t *rev);

/* Several reads at once (one round trip, not one per key): each key's current value
 * (malloc'd into vals[i], caller frees) and revision, or errs[i] = GF_ERR_NOT_FOUND
 * (absent or deleted) or an error (unknown: not answered in time, NATS away). Returns
 * GF_OK when every key got a definite answer, else the first other error. */
gf_err gf_mmstore_get_batch(gf_mmstore *s, gf_mm_bucket b, const char *const *keys, size_t n,
                            uint8_t **vals, size_t *lens, uint64_t *revs, gf_err *errs);

/* Whether tickets/<ticket_id> existed once and the bucket has since forgotten it (the
 * bucket's TTL): the audit mirror AUDIT_TICKETS still holds a revision of the key while
 * KV_tickets holds none (tickets are never deleted). A create of that key would be
 * refused by the mirror (it checks the create's "no revision yet" against its own
 * history of the key: a single server's mirror then stops for good, a cluster's drops
 * the write and stores every later one a sequence lower; docs/NATS-FACTS.md §6), and
 * would bring an ended ticket back. *forgotten = false when there is no audit mirror.
 * Two reads at most: one of the mirror (absent keys are found absent in O(1)), and a
 * direct get of the bucket only when the mirror has the key (a retry, a replay). */
gf_err gf_mmstore_ticket_forgotten(gf_mmstore *s, const char *ticket_id, bool *forgotten);

/* One write; returns op->err. */
gf_err gf_mmstore_write(gf_mmstore *s, gf_mm_op *op);

/* Independent writes (and publishes), all at once; each op gets its own result.
 * Returns GF_OK when every op got a definite answer (OK or CONFLICT), else the first
 * other error. For a PUBLISH, GF_OK includes "already stored" (a duplicate Msg-Id). */
gf_err gf_mmstore_batch(gf_mmstore *s, gf_mm_op *ops, size_t n);

/* A JetStream publish with Nats-Msg-Id (retried inside the duplicate window with the
 * same id it is stored once). GF_OK once stored (or already stored). */
gf_err gf_mmstore_publish(gf_mmstore *s, const char *subject, const char *msg_id, const void *data,
                          size_t len);

/* A core publish of a TicketStatus on gamefn.v1.ticket.status.<ticket_id> (at most
 * once: pushes are hints, ticket.get is the truth). */
void gf_mmstore_push(gf_mmstore *s, const char *ticket_id, const void *data, size_t len);

/* Pushes the status of `rec` as stored at `revision` (note: NULL or a detail
 * replacing the reason's sentence). */
void gf_mmstore_push_record(gf_mmstore *s, const Gamefn__V1__TicketRecord *rec, uint64_t revision,
                            const char *note);

/* Decides match `match_id`: creates matches/<match_id> from `buf` (a packed MatchOutcome)
 * unless an outcome exists, and returns in *out the outcome that holds afterwards (ours,
 * or the one written first); *created (may be NULL) says which. *full (may be NULL) is
 * set when the bucket refused the record for want of room (gf_publish_full). Caller
 * frees *out. */
gf_err gf_mmstore_decide(gf_mmstore *s, const char *match_id, const uint8_t *buf, size_t len,
                         Gamefn__V1__MatchOutcome **out, bool *created, bool *full);

/* Ends the claim of match `match_id` on one of its tickets: creates matches/<match_id> =
 * ABORTED (reason, the ticket that caused it: may be NULL) unless an outcome exists, and
 * returns in *out whatever outcome the match now has (ABORTED, this one or an earlier
 * one; or COMMITTED: the match happened). Caller frees *out (gf_outcome_free).
 * Errors: the outcome could not be learned (store error). */
gf_err gf_mmstore_abort_match(gf_mmstore *s, const char *match_id, int abort_reason,
                              const char *ticket_id, const char *decided_by, int64_t now_ms,
                              Gamefn__V1__MatchOutcome **out);

/* gf_mmstore_abort_match() for n matches at once (no ticket named): the creates go out in
 * one batch, the outcomes that existed already are read in one batch. outs[i] gets
 * match i's outcome, or NULL with errs[i] set when it could not be learned. Caller frees
 * every outs[i]. Returns GF_OK when every match got its outcome, else the first error. */
gf_err gf_mmstore_abort_matches(gf_mmstore *s, const char *const *match_ids, size_t n,
                                int abort_reason, const char *decided_by, int64_t now_ms,
                                Gamefn__V1__MatchOutcome **outs, gf_err *errs);

/* Deletes players/<p> of every member of `rec` whose record still names rec's ticket
 * (compare-and-set on the revision read; a record naming another ticket is left). */
void gf_mmstore_clear_players(gf_mmstore *s, const Gamefn__V1__TicketRecord *rec);

/* The same for players[0..n) and any of tickets[0..nt): reads in one batch, deletes in
 * one batch, a lost race read again (3 rounds). Returns how many records that named
 * one of the tickets could not be deleted. */
size_t gf_mmstore_release_players(gf_mmstore *s, const char *const *players, size_t n,
                                  const char *const *tickets, size_t nt);

/* Counters since open, for $SRV-style logs and benchmarks. */
typedef struct gf_mmstore_stats {
    long long reads, writes, conflicts, unknown, pushes, publishes;
} gf_mmstore_stats;
void gf_mmstore_stats_get(gf_mmstore *s, gf_mmstore_stats *out);

#endif
