/*
 * intake.h — the intake function: ticket.create, ticket.cancel, ticket.get and the queue
 * discovery request, over the tickets library (gamefn/tickets/) and the matchmaking
 * store (mmstore.h).
 *
 * Create, in order (docs/PROTOCOL.md §6 says what a client sees):
 *   1. decode and validate (typed errors naming the field; the engine's own check);
 *   2. ticket_id = BLAKE2b-128 of the idempotency key;
 *   3. players/<player_id> created (create-if-absent) for every member. A record naming
 *      this ticket id is this request's own (a retry). A record that names a live
 *      ticket makes the reply that ticket's status (replayed); one whose ticket is still
 *      being created is CONFLICT (retry after retry_after_ms); a stale one (pending.h:
 *      by its age and by this process's own count) is replaced by compare-and-set.
 *      Records this request created are removed again if it stops;
 *   4. tickets/<id> created QUEUED; the status is pushed and returned. If the create
 *      finds a ticket, this is a retry: the same request gets that ticket back
 *      (replayed), another request under the same key FAILED_PRECONDITION.
 * A write whose outcome is unknown (timeout, NATS away) answers UNAVAILABLE: the client
 * retries with the same key and every step above is idempotent (records naming this
 * ticket id count as this request's own).
 *
 * Cancel: QUEUED -> CANCELLED by compare-and-set. CLAIMED: the match's commit record is
 * created ABORTED first; if it already says COMMITTED the match happened, the ticket is
 * written ASSIGNED from it and the cancel answers FAILED_PRECONDITION. Then the players
 * records naming the ticket are deleted and the status is pushed.
 *
 * Threads: handlers may run concurrently (request concurrency); the state below is
 * read-only after init, the store and `pending` are thread-safe. Ownership: intake_state_init
 * allocates everything; intake_state_free releases it.
 */
#ifndef GAMEFN_INTAKE_H
#define GAMEFN_INTAKE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"
#include "gamefn/endpoint.h"
#include "gamefn/err.h"
#include "gamefn/test_pause.h"
#include "gamefn/tickets/config.h"
#include "gamefn/tickets/players.h"
#include "intake_config.h"
#include "mmstore.h"
#include "pending.h"

typedef struct intake_state {
    const intake_config *cfg;
    gf_players_policy policy;
    gf_config *mm_config; /* functions.matcher, read from the same file */
    gf_mm_tables *tables;
    gf_mmstore *store;
    intake_pending *pending; /* how long this process has seen young players records */
    const char *instance_id;
    uint8_t *queues_reply; /* the discovery answer, built once */
    size_t queues_reply_len;
    /* GAMEFN_TEST_INTAKE_PAUSE=<step> (gamefn/test_pause.h), steps of a create in order:
     * `holding` (the first member's players record held, the others not yet), `players`
     * (every member's record held, the ticket not written), `ticket` (the ticket
     * written, neither pushed nor answered). */
    gf_test_pause pause;
    /* Monotonic ms of the last "bucket full" warning (one per FULL_LOG_MS, any thread). */
    _Atomic int64_t full_logged_ms;
} intake_state;

gf_err intake_state_init(intake_state *in, const gf_config *cfg, const intake_config *own,
                         natsConnection *nc, jsCtx *js, const char *instance_id, char *why,
                         size_t why_size);
void intake_state_free(intake_state *in);

gf_err intake_create(intake_state *in, const gf_msg *req, gf_reply *reply);
gf_err intake_cancel(intake_state *in, const gf_msg *req, gf_reply *reply);
gf_err intake_get(intake_state *in, const gf_msg *req, gf_reply *reply);
gf_err intake_queues(intake_state *in, const gf_msg *req, gf_reply *reply);

/* ---- shared by the intake files -------------------------------------------------- */

/* Fills reply's code, field and text from p; returns err. */
gf_err intake_fail(gf_reply *reply, gf_err err, const gf_tickets_problem *p);
/* A store error (unknown outcome / NATS away) as UNAVAILABLE or TIMEOUT. */
gf_err intake_fail_store(gf_reply *reply, gf_err err, const char *what);
/* A failed write `op`: a bucket that refuses it for want of room (op->full: not
 * stored) is RESOURCE_EXHAUSTED, logged at most every 10 s; anything else as
 * intake_fail_store. */
gf_err intake_fail_write(intake_state *in, gf_reply *reply, const gf_mm_op *op, const char *what);
/* Reads and decodes tickets/<id>. GF_ERR_NOT_FOUND when absent. */
gf_err intake_read_ticket(intake_state *in, const char *id, Gamefn__V1__TicketRecord **rec,
                          uint64_t *rev, gf_reply *reply);
/* reply->data = a packed TicketStatus inside `wrap`: 0 = CreateTicketReply (with
 * replayed), 1 = CancelTicketReply, 2 = GetTicketReply. */
gf_err intake_reply_status(gf_reply *reply, int wrap, const Gamefn__V1__TicketRecord *rec,
                           uint64_t rev, bool replayed, const char *note);

#endif
