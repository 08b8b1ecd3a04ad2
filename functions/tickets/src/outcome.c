/* outcome.c — the match commit record (see gamefn/tickets/outcome.h). */
#include "gamefn/tickets/outcome.h"

#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define OUTCOME(x) GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_##x
#define ABORT(x)   GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_##x

static const char *const abort_names[] = {
    "UNSPECIFIED", "TICKET_CANCELLED", "CLAIM_EXPIRED",
    "NO_SERVER",   "TICKET_LOST",      "PUBLISH_UNKNOWN",
};

static const char *const abort_details[] = {
    "",
    "a ticket of the match was cancelled",
    "the match was not committed before its claims' lease passed",
    "no free server in any acceptable datacenter within the allocation deadline",
    "a ticket of the match was no longer claimed by it",
    "the matcher could not learn whether the match was published",
};

const char *gf_outcome_abort_name(int reason)
{
    size_t n = sizeof abort_names / sizeof abort_names[0];
    return reason >= 0 && (size_t)reason < n ? abort_names[reason] : "UNKNOWN";
}

static gf_err pack(const Gamefn__V1__MatchOutcome *o, uint8_t **buf, size_t *len)
{
    return gf_pack(&o->base, buf, len);
}

static gf_err check_ids(const char *match_id, const char *decided_by, gf_tickets_problem *p)
{
    if (!gf_tk_token_ok(match_id, GF_WIRE_ID_MAX))
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "match_id", "not a token");
    if (!gf_tk_token_ok(decided_by, GF_WIRE_ID_MAX))
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "decided_by", "not a token");
    return GF_OK;
}

gf_err gf_outcome_commit_pack(const char *match_id, Gamefn__V1__Assignment *const *assignments,
                              size_t n, const char *decided_by, int64_t now_ms, uint8_t **buf,
                              size_t *len, gf_tickets_problem *p)
{
    *buf = NULL;
    if (check_ids(match_id, decided_by, p) != GF_OK)
        return GF_ERR_INVALID;
    if (n < 1 || n > GF_OUTCOME_MAX_ASSIGNMENTS)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "assignments",
                                 "%zu assignments, need 1..%d", n, GF_OUTCOME_MAX_ASSIGNMENTS);
    for (size_t i = 0; i < n; i++) {
        if (!gf_tk_streq(assignments[i]->match_id, match_id) ||
            !gf_tk_token_ok(assignments[i]->ticket_id, GF_WIRE_ID_MAX))
            return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "assignments",
                                     "assignment %zu is not for a ticket of match %s", i, match_id);
        for (size_t j = 0; j < i; j++) {
            if (gf_tk_streq(assignments[j]->ticket_id, assignments[i]->ticket_id))
                return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "assignments",
                                         "ticket %s assigned twice", assignments[i]->ticket_id);
        }
    }
    Gamefn__V1__MatchOutcome o = GAMEFN__V1__MATCH_OUTCOME__INIT;
    o.match_id = gf_tk_unconst(match_id);
    o.state = OUTCOME(COMMITTED);
    o.n_assignments = n;
    o.assignments = (Gamefn__V1__Assignment **)(uintptr_t)assignments;
    o.decided_by = gf_tk_unconst(decided_by);
    o.decided_unix_ms = now_ms;
    return pack(&o, buf, len);
}

gf_err gf_outcome_abort_pack(const char *match_id, Gamefn__V1__MatchAbortReason reason,
                             const char *ticket_id, const char *detail, const char *decided_by,
                             int64_t now_ms, uint8_t **buf, size_t *len, gf_tickets_problem *p)
{
    *buf = NULL;
    if (check_ids(match_id, decided_by, p) != GF_OK)
        return GF_ERR_INVALID;
    if (reason <= ABORT(UNSPECIFIED) || reason > ABORT(PUBLISH_UNKNOWN))
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "abort_reason", "unknown reason %d",
                                 (int)reason);
    if (ticket_id && ticket_id[0] && !gf_tk_token_ok(ticket_id, GF_WIRE_ID_MAX))
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "ticket_id", "not a token");
    char text[GF_WIRE_TEXT_MAX + 1];
    snprintf(text, sizeof text, "%s", detail ? detail : abort_details[reason]);
    Gamefn__V1__MatchOutcome o = GAMEFN__V1__MATCH_OUTCOME__INIT;
    o.match_id = gf_tk_unconst(match_id);
    o.state = OUTCOME(ABORTED);
    o.abort_reason = reason;
    o.ticket_id = gf_tk_unconst(ticket_id ? ticket_id : "");
    o.detail = text;
    o.decided_by = gf_tk_unconst(decided_by);
    o.decided_unix_ms = now_ms;
    return pack(&o, buf, len);
}

static const char *outcome_problem(const ProtobufCMessage *m, const char *key)
{
    const Gamefn__V1__MatchOutcome *o = (const Gamefn__V1__MatchOutcome *)m;
    if (!gf_tk_token_ok(o->match_id, GF_WIRE_ID_MAX) || (key && strcmp(key, o->match_id) != 0))
        return "match_id is not a token equal to the key";
    if (o->state == OUTCOME(COMMITTED)) {
        if (o->n_assignments < 1 || o->n_assignments > GF_OUTCOME_MAX_ASSIGNMENTS)
            return "a COMMITTED outcome needs 1..128 assignments";
        for (size_t i = 0; i < o->n_assignments; i++) {
            if (!gf_tk_streq(o->assignments[i]->match_id, o->match_id))
                return "an assignment is for another match";
        }
        return NULL;
    }
    if (o->state == OUTCOME(ABORTED))
        return o->abort_reason > ABORT(UNSPECIFIED) ? NULL : "an ABORTED outcome needs a reason";
    return "unknown state";
}

gf_err gf_outcome_decode(const uint8_t *buf, size_t len, const char *key,
                         Gamefn__V1__MatchOutcome **out, gf_tickets_problem *p)
{
    return gf_tk_decode_stored(&gamefn__v1__match_outcome__descriptor, outcome_problem, "outcome",
                               buf, len, key, (ProtobufCMessage **)out, p);
}

void gf_outcome_free(Gamefn__V1__MatchOutcome *o)
{
    if (o)
        gamefn__v1__match_outcome__free_unpacked(o, NULL);
}

const Gamefn__V1__Assignment *gf_outcome_assignment(const Gamefn__V1__MatchOutcome *o,
                                                    const char *ticket_id)
{
    if (o->state != OUTCOME(COMMITTED))
        return NULL;
    for (size_t i = 0; i < o->n_assignments; i++) {
        if (gf_tk_streq(o->assignments[i]->ticket_id, ticket_id))
            return o->assignments[i];
    }
    return NULL;
}

Gamefn__V1__TicketReason gf_outcome_return_reason(Gamefn__V1__MatchAbortReason reason)
{
    switch (reason) {
    case ABORT(NO_SERVER):
        return RS(NO_SERVER);
    case ABORT(CLAIM_EXPIRED):
        return RS(CLAIM_EXPIRED);
    default:
        return RS(MATCH_DROPPED);
    }
}

gf_err gf_outcome_settle(const Gamefn__V1__MatchOutcome *o, const Gamefn__V1__TicketRecord *cur,
                         int64_t now_ms, gf_ticket_next *out, gf_tickets_problem *p)
{
    if (o->state == OUTCOME(COMMITTED)) {
        const Gamefn__V1__Assignment *a = gf_outcome_assignment(o, cur->ticket_id);
        /* Claimed by a match that was committed without it (a Match naming part of the
         * match's tickets, e.g. forged, was allocated): the match will never hold it,
         * so it goes back to the pool like a ticket of an aborted match. */
        if (!a)
            return gf_ticket_release(cur, o->match_id, RS(MATCH_DROPPED), now_ms, out, p);
        return gf_ticket_assign(cur, a, now_ms, out, p);
    }
    return gf_ticket_release(cur, o->match_id, gf_outcome_return_reason(o->abort_reason), now_ms,
                             out, p);
}
