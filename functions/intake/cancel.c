/*
 * cancel.c — ticket.cancel.
 *
 * Design notes: a cancel racing a claim has exactly one outcome, decided by the match's
 * commit record. A QUEUED ticket is cancelled by compare-and-set; if a matcher claims it
 * first, the write conflicts and the loop reads the CLAIMED ticket. A CLAIMED ticket's
 * match gets matches/<match_id> = ABORTED (create-if-absent) before the ticket is
 * touched: if that finds COMMITTED, the allocator won, the ticket is (helped to be)
 * ASSIGNED and the cancel is refused; otherwise no allocator can commit the match any
 * more, and the ticket is cancelled. The other tickets of an aborted match return to
 * the pool (MATCH_DROPPED) when the allocator or an expired-claim sweep settles them.
 * A COMMITTED record that does not list the ticket (committed from a forged Match
 * naming part of the match) does not hold it: the ticket is cancelled all the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/record.h"
#include "gamefn/tickets/request.h"
#include "gamefn/v1/error.pb-c.h"
#include "intake.h"

enum { CANCEL_ATTEMPTS = 5 };

static gf_err precondition(gf_reply *reply, const Gamefn__V1__TicketRecord *rec, const char *why)
{
    reply->code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION;
    snprintf(reply->error, sizeof reply->error, "ticket %s is %s: %s", rec->ticket_id,
             gf_ticket_state_name(rec->state), why);
    return GF_ERR_CONFLICT;
}

/* Writes `next` over revision `rev`; the new revision in *out_rev. */
static gf_err write_next(intake_state *in, const gf_ticket_next *next, uint64_t rev,
                         uint64_t *out_rev)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_err err = gf_ticket_pack(&next->rec, &buf, &len);
    if (err != GF_OK)
        return err;
    gf_mm_op op = {.kind = GF_MM_UPDATE,
                   .bucket = GF_MM_TICKETS,
                   .key = next->rec.ticket_id,
                   .last = rev,
                   .data = buf,
                   .len = len};
    err = gf_mmstore_write(in->store, &op);
    free(buf);
    *out_rev = op.rev;
    return err;
}

/* A CLAIMED ticket whose match turned out COMMITTED: write it ASSIGNED from the commit
 * record (helping a slow or dead allocator along) and refuse the cancel. */
static gf_err help_assign(intake_state *in, const Gamefn__V1__MatchOutcome *o,
                          const Gamefn__V1__TicketRecord *rec, uint64_t rev, gf_reply *reply)
{
    gf_ticket_next next;
    gf_tickets_problem p;
    uint64_t nrev = 0;
    if (gf_outcome_settle(o, rec, gf_clock_unix_ms(), &next, &p) == GF_OK && !next.unchanged &&
        write_next(in, &next, rev, &nrev) == GF_OK)
        gf_mmstore_push_record(in->store, &next.rec, nrev, NULL);
    reply->code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION;
    snprintf(reply->error, sizeof reply->error,
             "ticket %s is ASSIGNED: its match %s was committed first (ticket.get has the "
             "assignment)",
             rec->ticket_id, o->match_id);
    return GF_ERR_CONFLICT;
}

gf_err intake_cancel(intake_state *in, const gf_msg *msg, gf_reply *reply)
{
    ProtobufCMessage *m = NULL;
    Gamefn__V1__TicketRecord *rec = NULL;
    Gamefn__V1__MatchOutcome *o = NULL;
    gf_tickets_problem p;
    uint64_t rev = 0, nrev = 0;
    gf_ticket_next next;
    gf_err err = gf_tickets_decode(&gamefn__v1__cancel_ticket_request__descriptor, msg->data,
                                   msg->len, &m, &p);
    const Gamefn__V1__CancelTicketRequest *req = (const Gamefn__V1__CancelTicketRequest *)m;
    if (err == GF_OK)
        err = gf_tickets_id_check(req->ticket_id, &p);
    if (err != GF_OK) {
        err = intake_fail(reply, err, &p);
        goto out;
    }
    for (int attempt = 0; attempt < CANCEL_ATTEMPTS; attempt++) {
        gf_ticket_free(rec);
        gf_outcome_free(o);
        rec = NULL;
        o = NULL;
        err = intake_read_ticket(in, req->ticket_id, &rec, &rev, reply);
        if (err == GF_ERR_NOT_FOUND) {
            reply->code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND;
            snprintf(reply->field, sizeof reply->field, "ticket_id");
            snprintf(reply->error, sizeof reply->error, "ticket_id: no ticket %s", req->ticket_id);
        }
        if (err != GF_OK)
            goto out;
        if (rec->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_CANCELLED) {
            err = intake_reply_status(reply, 1, rec, rev, false, NULL);
            goto out;
        }
        if (rec->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED) {
            err = gf_mmstore_abort_match(
                in->store, rec->claim->match_id,
                GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_TICKET_CANCELLED, rec->ticket_id,
                in->instance_id, gf_clock_unix_ms(), &o);
            if (err != GF_OK) {
                err = intake_fail_store(reply, err, "aborting the ticket's match");
                goto out;
            }
            /* COMMITTED without this ticket (a Match naming part of the match's tickets
             * was allocated): the match will never hold it, so the cancel goes on. */
            if (o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED &&
                gf_outcome_assignment(o, rec->ticket_id)) {
                err = help_assign(in, o, rec, rev, reply);
                goto out;
            }
        }
        err = gf_ticket_cancel(rec, gf_clock_unix_ms(), &next, &p);
        if (err == GF_ERR_CONFLICT) {
            err = precondition(reply, rec, "only a QUEUED or CLAIMED ticket can be cancelled");
            goto out;
        }
        if (err != GF_OK) {
            err = intake_fail(reply, err, &p);
            goto out;
        }
        err = write_next(in, &next, rev, &nrev);
        if (err == GF_OK)
            break;
        if (err != GF_ERR_CONFLICT) {
            err = intake_fail_store(reply, err, "writing the cancellation");
            goto out;
        }
    }
    if (err != GF_OK) {
        reply->code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_CONFLICT;
        reply->retry_after_ms = 100;
        snprintf(reply->error, sizeof reply->error,
                 "ticket %s kept changing while being cancelled; retry", req->ticket_id);
        goto out;
    }
    gf_mmstore_clear_players(in->store, &next.rec);
    gf_mmstore_push_record(in->store, &next.rec, nrev, NULL);
    err = intake_reply_status(reply, 1, &next.rec, nrev, false, NULL);
out:
    gf_outcome_free(o);
    gf_ticket_free(rec);
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
    return err;
}
