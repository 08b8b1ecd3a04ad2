/*
 * gamefn/tickets/outcome.h — the match commit record: `matches/<match_id>` holds one
 * MatchOutcome, COMMITTED (with every ticket's Assignment) or ABORTED (with a reason),
 * written once, only by create-if-absent. It is the single point where a match
 * happens or does not, so no ticket is ever half assigned:
 *
 *   allocator   took a server, signed the tokens -> create COMMITTED, then write each
 *               ticket ASSIGNED (gf_outcome_settle). If the create finds ABORTED: give
 *               the server back, release the still-claimed tickets.
 *   anyone else taking a CLAIMED ticket from its match (cancel, expired claim, failed
 *               allocation, unknown publish) -> create ABORTED first. If that finds
 *               COMMITTED, the match happened: write the ticket ASSIGNED from the record
 *               instead (gf_outcome_settle), and a cancel answers FAILED_PRECONDITION —
 *               unless the record does not list the ticket (then it is free to go).
 *
 * gf_outcome_settle() is the one rule for "what becomes of this claimed ticket, now
 * that its match's outcome is known", used by intake, matcher and allocator alike.
 *
 * Ownership: the _pack functions return malloc'd buffers (caller frees); decoded
 * outcomes are freed with gf_outcome_free(). Assignments passed in are borrowed.
 * Pure and reentrant.
 */
#ifndef GAMEFN_TICKETS_OUTCOME_H
#define GAMEFN_TICKETS_OUTCOME_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/tickets/problem.h"
#include "gamefn/tickets/record.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

enum { GF_OUTCOME_MAX_ASSIGNMENTS = 128 }; /* tickets per match (GF_MATCH_MAX_PLAYERS) */

/* COMMITTED with `n` assignments (1..128, each for a distinct ticket of this match).
 * GF_ERR_INVALID on a bad argument (the problem names it), GF_ERR_NOMEM. */
gf_err gf_outcome_commit_pack(const char *match_id, Gamefn__V1__Assignment *const *assignments,
                              size_t n, const char *decided_by, int64_t now_ms, uint8_t **buf,
                              size_t *len, gf_tickets_problem *p);

/* ABORTED for `reason` (not UNSPECIFIED). ticket_id: the ticket that caused it (NULL or
 * "" = none); detail: free text (NULL = a sentence for the reason). */
gf_err gf_outcome_abort_pack(const char *match_id, Gamefn__V1__MatchAbortReason reason,
                             const char *ticket_id, const char *detail, const char *decided_by,
                             int64_t now_ms, uint8_t **buf, size_t *len, gf_tickets_problem *p);

/* Decodes and checks a stored outcome (match_id equal to `key` unless key is NULL; a
 * known state; assignments iff COMMITTED, each for this match; a reason iff ABORTED).
 * GF_ERR_INVALID otherwise. */
gf_err gf_outcome_decode(const uint8_t *buf, size_t len, const char *key,
                         Gamefn__V1__MatchOutcome **out, gf_tickets_problem *p);
void gf_outcome_free(Gamefn__V1__MatchOutcome *o); /* NULL is fine */

/* The assignment of `ticket_id` in a COMMITTED outcome, or NULL. */
const Gamefn__V1__Assignment *gf_outcome_assignment(const Gamefn__V1__MatchOutcome *o,
                                                    const char *ticket_id);

/* The reason a ticket returns to the pool with after this abort: NO_SERVER,
 * CLAIM_EXPIRED, or MATCH_DROPPED for the others. */
Gamefn__V1__TicketReason gf_outcome_return_reason(Gamefn__V1__MatchAbortReason reason);

/* What becomes of `cur` now that the outcome `o` of match o->match_id is known:
 *   COMMITTED -> gf_ticket_assign() with the ticket's assignment; a ticket the record
 *                does not list (committed from a Match naming only part of its tickets,
 *                i.e. forged) will never be in the match: gf_ticket_release() fenced on
 *                the match, MATCH_DROPPED;
 *   ABORTED   -> gf_ticket_release() fenced on the match, with gf_outcome_return_reason().
 * A ticket no longer claimed by this match gives GF_ERR_CONFLICT (someone already
 * released it, it was cancelled, or another match claims it now: nothing to do); a
 * ticket already ASSIGNED by this COMMITTED match is `unchanged`. */
gf_err gf_outcome_settle(const Gamefn__V1__MatchOutcome *o, const Gamefn__V1__TicketRecord *cur,
                         int64_t now_ms, gf_ticket_next *out, gf_tickets_problem *p);

const char *gf_outcome_abort_name(int reason); /* "TICKET_CANCELLED", ...; "UNKNOWN" */

#endif
