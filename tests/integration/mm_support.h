/*
 * mm_support.h — helpers for the matchmaking integration tests (intake, ticker,
 * matcher): a config with the service's buckets and a small queue table, typed ticket
 * requests, status collection and bucket snapshots.
 *
 * Test config (written over gf_fnenv's): buckets tickets, players, matches, leases;
 * stream MATCHES (work queue) and the AUDIT_* mirrors; queue table: datacenters eu-west
 * (eu), us-east (na); queues duel (hybrid 1v1), short (hybrid 1v1, ticket_ttl 2s),
 * pair (hybrid 2v2). `matcher_opts` are extra lines for functions.matcher (indented 4,
 * e.g. "    claim_lease: 2s\n"), may be NULL.
 *
 * Ownership: replies are decoded protobuf messages owned by the caller
 * (protobuf_c_message_free_unpacked). Single-threaded test code.
 */
#ifndef GAMEFN_TEST_MM_SUPPORT_H
#define GAMEFN_TEST_MM_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fn_support.h"
#include "gamefn/wire_error.h"
#include "gamefn/v1/queue.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

int mm_env_start(gf_fnenv *env, const char *matcher_opts);

/* The same with more of the config; NULL keeps the default. */
typedef struct mm_env_opts {
    const char *matcher; /* matcher_opts above */
    const char *intake;  /* the functions.intake body, indented 4 (default "pending_grace: 2s") */
    const char *queues;  /* more queues ("        - {name: trio, ...}\n"), after the three */
    const char *tickets_ttl; /* the tickets bucket's ttl (default "1h") */
} mm_env_opts;
int mm_env_start_opts(gf_fnenv *env, const mm_env_opts *o);

/* Spawns build/functions/<name>/gamefn-<name> as `instance` and waits for $SRV.PING. */
bool mm_spawn(gf_fnenv *env, gf_proc *p, const char *name, const char *instance);

/* A ticket request: key, queue, n players "<prefix>-<i>" with `rating`, pings
 * "eu-west:20,us-east:90". */
typedef struct mm_ticket {
    const char *key;
    const char *queue;
    const char *players[4];
    size_t nplayers;
    double rating;
    const char *pings;
} mm_ticket;

/* Sends `body` to `subject`; returns the error code of the reply (0 = success) and, on
 * success, the body decoded as `desc` in *out. -1 when no reply arrived. `field` (may be
 * NULL) receives Error.field of an error. */
int mm_call(gf_fnenv *env, const char *subject, const void *body, size_t len,
            const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out, char *field,
            size_t field_size);

int mm_create(gf_fnenv *env, const mm_ticket *t, Gamefn__V1__CreateTicketReply **out, char *field,
              size_t field_size);

/* A request for `player` alone in queue duel (rating 1500, eu-west 20 ms). */
mm_ticket mm_solo(const char *key, const char *player);

/* mm_create that must succeed with a new ticket (else the test fails); its id into id. */
void mm_create_new(gf_fnenv *env, const mm_ticket *t, char *id, size_t size);

/* mm_create waiting timeout_ms for the reply, with the whole error (code, field,
 * retry_after_ms) in *e; returns e->code, -1 when no reply arrived. */
int mm_create_err(gf_fnenv *env, const mm_ticket *t, int timeout_ms,
                  Gamefn__V1__CreateTicketReply **out, gf_wire_error *e);
int mm_cancel(gf_fnenv *env, const char *ticket_id, Gamefn__V1__TicketStatus **out);
int mm_get(gf_fnenv *env, const char *ticket_id, Gamefn__V1__TicketStatus **out);

/* State of ticket `id` as ticket.get reports it (0 if unknown). */
int mm_state(gf_fnenv *env, const char *id);

/* The KV_<bucket> stream's last sequence (a bucket that did not change keeps it). */
uint64_t mm_bucket_seq(gf_fnenv *env, const char *bucket);

/* Collects status pushes (subscription on gamefn.v1.ticket.status.>). */
typedef struct mm_pushes mm_pushes;
/* One push as received: its state, reason and (QUEUED diagnostics) limits and estimate. */
typedef struct mm_push {
    char id[72];
    int state, reason;
    bool has_limits, skill_ignored;
    double skill_gap;
    uint32_t ping_ms;
    uint32_t estimated_wait_ms;
} mm_push;
mm_pushes *mm_pushes_start(gf_fnenv *env);
/* Waits up to timeout_ms for a push for `id` with `state` (and `reason` unless 0). */
bool mm_pushes_wait(mm_pushes *p, const char *id, int state, int reason, int timeout_ms);
size_t mm_pushes_count(mm_pushes *p, const char *id);
/* The latest push received for `id`; false when none. */
bool mm_pushes_last(mm_pushes *p, const char *id, mm_push *out);
void mm_pushes_free(mm_pushes *p);

/* A fake allocator for tests without the allocator function: a durable pull consumer on
 * MATCHES; each Match is fenced (every ticket still CLAIMED by it), committed
 * (matches/<id> = COMMITTED, server "gs-test") and its tickets written ASSIGNED; a match
 * that fails the fence is aborted (TICKET_LOST) and its other tickets released. */
typedef struct mm_alloc mm_alloc;
mm_alloc *mm_alloc_start(gf_fnenv *env);
/* Handles what arrives within wait_ms; returns the matches committed. */
int mm_alloc_step(mm_alloc *a, int wait_ms);
long long mm_alloc_committed(const mm_alloc *a);
long long mm_alloc_aborted(const mm_alloc *a);
void mm_alloc_free(mm_alloc *a);

/* The invariants, recomputed from the AUDIT_* mirrors (waits until they caught up with
 * the buckets): every revision of every ticket, every match outcome. */
typedef struct mm_audit {
    size_t tickets, revisions;
    size_t double_claims;   /* CLAIMED by a second match without a return in between */
    size_t returns_dropped; /* CLAIMED -> QUEUED, MATCH_DROPPED (rollbacks, aborted matches) */
    size_t returns_expired; /* CLAIMED -> QUEUED, CLAIM_EXPIRED */
    size_t assigned;        /* tickets whose last state is ASSIGNED */
    size_t assigned_twice;  /* ASSIGNED by two different matches */
    size_t committed, aborted_expired, aborted_cancelled, aborted_other;
    size_t half_assigned; /* a committed match's ticket that did not end ASSIGNED by it */
    size_t live_players;  /* players records that name a ticket */
} mm_audit;
void mm_audit_run(gf_fnenv *env, mm_audit *out);
void mm_audit_print(const mm_audit *a);

/* The independent checker (gamefn/check/check.h, through support/mmcheck) over the
 * AUDIT_* mirrors, with the test config's queue table: fails the test unless every
 * matchmaking count is 0 (double claims, players in two matches or two live tickets,
 * lost tickets, limit violations, half-assigned matches, assignments without a commit,
 * changed terminal states, rewritten commit records, undecodable records). grace_ms: 0
 * = the checker's 5 s (how long past its deadline a ticket may still be live). */
void mm_check_clean(gf_fnenv *env, int64_t grace_ms);
/* The same, with exactly `bad_records` undecodable records expected (written on purpose). */
void mm_check_clean_but(gf_fnenv *env, int64_t grace_ms, uint64_t bad_records);
/* The checker's run itself (gf_mmcheck_run with the test config's queue table): GF_OK and
 * *out (gf_mmcheck_free), or its error (GF_ERR_TIMEOUT: the report would be incomplete). */
struct gf_mmcheck;
gf_err mm_check_run(gf_fnenv *env, int64_t grace_ms, struct gf_mmcheck **out);

#endif
