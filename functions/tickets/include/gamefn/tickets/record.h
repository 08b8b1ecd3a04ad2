/*
 * gamefn/tickets/record.h — a ticket's life as pure functions on its TicketRecord.
 *
 * Every change of a ticket is one of these transitions, computed here and written by
 * the caller with a compare-and-set on the revision it read:
 *
 *   gf_ticket_new       (request)  -> QUEUED     reason SEARCHING
 *   gf_ticket_claim     QUEUED     -> CLAIMED    reason MATCHED, with a Claim; never past the TTL
 *   gf_ticket_release   CLAIMED    -> QUEUED     reason NO_SERVER / CLAIM_EXPIRED / MATCH_DROPPED;
 *                                               queued_unix_ms kept, returns + 1
 *   gf_ticket_assign    CLAIMED    -> ASSIGNED   reason MATCHED, only for its claim's match
 *   gf_ticket_cancel    QUEUED, CLAIMED -> CANCELLED  reason CANCELLED_BY_CLIENT
 *   gf_ticket_time_out  QUEUED     -> TIMED_OUT  reason TTL_EXPIRED (at or past expires) or
 *                                               QUEUE_CLOSED (its queue left the config)
 *
 * A CLAIMED ticket is taken away from its match (release, cancel) only after the match's
 * commit record says ABORTED (gamefn/tickets/outcome.h); that rule is the callers', as
 * this library sees one record at a time.
 *
 * Results. GF_OK: out->rec is the record to write, unless out->unchanged, which means
 * the record already is what the transition asked for (a repeated cancel, an assignment
 * already written by the same match): write nothing, answer as if written.
 * GF_ERR_CONFLICT: the record's state forbids the transition (a claim of a CLAIMED
 * ticket, an assignment for another match, a cancel of an ASSIGNED ticket);
 * the problem is FAILED_PRECONDITION and says why. GF_ERR_INVALID: a bad argument
 * (the problem names it).
 *
 * Ownership: a gf_ticket_next is a SHALLOW copy. Its strings and arrays are borrowed
 * from the input record and from the transition's arguments: keep them alive and
 * unchanged while out->rec is used (packed, turned into a status). It owns nothing and
 * needs no freeing. Records decoded by gf_ticket_decode() are freed with
 * gf_ticket_free(). Pure and reentrant.
 */
#ifndef GAMEFN_TICKETS_RECORD_H
#define GAMEFN_TICKETS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/limits.h"
#include "gamefn/match/config.h"
#include "gamefn/match/ticket.h"
#include "gamefn/tickets/claim_digest.h"
#include "gamefn/tickets/problem.h"
#include "gamefn/v1/ticket.pb-c.h"

typedef struct gf_ticket_next {
    Gamefn__V1__TicketRecord rec;
    bool unchanged; /* GF_OK and nothing to write */
    /* storage the shallow record may point into */
    Gamefn__V1__Claim claim;
    Gamefn__V1__TicketLimits limits;
    Gamefn__V1__TicketRecord__AttributesEntry attr[GF_WIRE_ATTRS_MAX];
    Gamefn__V1__TicketRecord__AttributesEntry *attr_ptr[GF_WIRE_ATTRS_MAX];
} gf_ticket_next;

/* A new QUEUED ticket from a request that passed gf_tickets_request_check() (at the same
 * cfg). created = queued = updated = now_ms; expires = now_ms + the queue's ticket_ttl;
 * region = the request's, else the default region of its pings; limits at age 0.
 * `ticket_id` must be gf_tickets_id() of the request's idempotency key. */
gf_err gf_ticket_new(const gf_match_config *cfg, const Gamefn__V1__CreateTicketRequest *req,
                     const char *ticket_id, int64_t now_ms, gf_ticket_next *out,
                     gf_tickets_problem *p);

typedef struct gf_ticket_claim_args {
    const char *matcher_id;        /* token 1..64 */
    const char *match_id;          /* token 1..64 */
    int64_t lease_expires_unix_ms; /* > now_ms */
    /* gf_claim_digest_of() the Match to be published (borrowed), GF_CLAIM_DIGEST_LEN
     * bytes; NULL writes a claim without one (as matchers older than the field did). */
    const uint8_t *match_digest;
} gf_ticket_claim_args;

gf_err gf_ticket_claim(const Gamefn__V1__TicketRecord *cur, const gf_ticket_claim_args *a,
                       int64_t now_ms, gf_ticket_next *out, gf_tickets_problem *p);

/* Back to the pool. `match_id` fences it: only a ticket claimed by that match is
 * released (NULL = whatever claims it). `reason` is NO_SERVER, CLAIM_EXPIRED or
 * MATCH_DROPPED. A QUEUED ticket is `unchanged` when match_id is NULL, a conflict
 * otherwise (it no longer belongs to that match). */
gf_err gf_ticket_release(const Gamefn__V1__TicketRecord *cur, const char *match_id,
                         Gamefn__V1__TicketReason reason, int64_t now_ms, gf_ticket_next *out,
                         gf_tickets_problem *p);

/* ASSIGNED with `a` (borrowed; a->ticket_id must be this ticket). The ticket must be
 * CLAIMED by a->match_id; ASSIGNED by the same match already is `unchanged`. */
gf_err gf_ticket_assign(const Gamefn__V1__TicketRecord *cur, const Gamefn__V1__Assignment *a,
                        int64_t now_ms, gf_ticket_next *out, gf_tickets_problem *p);

/* CANCELLED. CANCELLED already is `unchanged`; ASSIGNED and TIMED_OUT are conflicts. */
gf_err gf_ticket_cancel(const Gamefn__V1__TicketRecord *cur, int64_t now_ms, gf_ticket_next *out,
                        gf_tickets_problem *p);

/* TIMED_OUT with reason TTL_EXPIRED (needs now_ms >= expires) or QUEUE_CLOSED (any
 * time). Only from QUEUED: a CLAIMED ticket times out once it is back in the pool.
 * TIMED_OUT already is `unchanged`. */
gf_err gf_ticket_time_out(const Gamefn__V1__TicketRecord *cur, Gamefn__V1__TicketReason reason,
                          int64_t now_ms, gf_ticket_next *out, gf_tickets_problem *p);

/* ---- storage ---------------------------------------------------------------- */

/* Decodes a stored value and checks it is a record this library wrote: ticket_id a
 * token (equal to `key` when key is not NULL), a known state, 1..16 members, 1..32
 * pings, a claim iff CLAIMED, an assignment iff ASSIGNED. GF_ERR_INVALID otherwise
 * (*out NULL). */
gf_err gf_ticket_decode(const uint8_t *buf, size_t len, const char *key,
                        Gamefn__V1__TicketRecord **out, gf_tickets_problem *p);
void gf_ticket_free(Gamefn__V1__TicketRecord *rec); /* NULL is fine */

/* Packs into a malloc'd buffer (caller frees). GF_ERR_NOMEM. */
gf_err gf_ticket_pack(const Gamefn__V1__TicketRecord *rec, uint8_t **buf, size_t *len);

/* ---- the engine's view ------------------------------------------------------- */

/* The engine ticket of a stored record, for the matcher: queue and region by index,
 * queued_ms = queued_unix_ms, datacenters by index (pings naming a datacenter no
 * longer configured are left out). The arrays must hold rec->n_members, rec->n_pings
 * and rec->n_attributes entries; out and the arrays borrow rec's strings.
 * GF_ERR_NOT_FOUND when the queue or every datacenter is no longer configured (the
 * ticket should end TIMED_OUT, QUEUE_CLOSED); the region is then left AUTO if unknown. */
gf_err gf_ticket_engine(const gf_match_config *cfg, const Gamefn__V1__TicketRecord *rec,
                        gf_match_player *players, gf_match_ping *pings, gf_match_attr *attrs,
                        gf_match_ticket *out);

const char *gf_ticket_state_name(int state);   /* "QUEUED", ...; "UNKNOWN" */
const char *gf_ticket_reason_name(int reason); /* "SEARCHING", ...; "UNKNOWN" */
bool gf_ticket_terminal(int state);            /* ASSIGNED, CANCELLED, TIMED_OUT */

#endif
