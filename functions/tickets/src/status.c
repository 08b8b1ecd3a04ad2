/* status.c — TicketStatus from a record and its revision (see gamefn/tickets/status.h). */
#include "gamefn/tickets/status.h"

#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static const char *const details[] = {
    [RS(UNSPECIFIED)] = "",
    [RS(SEARCHING)] = "waiting for the first matching tick",
    [RS(SKILL)] = "candidates exist, but outside someone's skill limit; limits widen with time",
    [RS(PING)] = "a common datacenter exists, but over someone's ping limit; limits widen with "
                 "time",
    [RS(NO_COMMON_DATACENTER)] = "no datacenter that enough candidates measured",
    [RS(SHAPE)] = "the party does not fit the team slots left by the other candidates",
    [RS(POPULATION)] = "too few players in the pool to fill a match",
    [RS(NO_SERVER)] = "matched, but no free server in an acceptable datacenter; back in the pool "
                      "with its queue time",
    [RS(CLAIM_EXPIRED)] = "its match was not allocated in time; back in the pool with its queue "
                          "time",
    [RS(MATCH_DROPPED)] = "another ticket of its match left it; back in the pool with its queue "
                          "time",
    [RS(CANCELLED_BY_CLIENT)] = "cancelled",
    [RS(TTL_EXPIRED)] = "not matched within the queue's ticket TTL",
    [RS(QUEUE_CLOSED)] = "its queue is no longer configured",
    [RS(MATCHED)] = "in a match",
};

const char *gf_ticket_reason_detail(int reason)
{
    size_t n = sizeof details / sizeof details[0];
    return reason >= 0 && (size_t)reason < n && details[reason] ? details[reason] : "";
}

void gf_ticket_status_of(const Gamefn__V1__TicketRecord *rec, uint64_t revision, const char *note,
                         gf_ticket_status *out)
{
    Gamefn__V1__TicketStatus *s = &out->st;
    *s = (Gamefn__V1__TicketStatus)GAMEFN__V1__TICKET_STATUS__INIT;
    snprintf(out->detail, sizeof out->detail, "%s",
             note && note[0] ? note : gf_ticket_reason_detail(rec->reason));
    s->ticket_id = rec->ticket_id;
    s->state = rec->state;
    s->reason = rec->reason;
    s->detail = out->detail;
    s->queued_unix_ms = rec->queued_unix_ms;
    s->updated_unix_ms = rec->updated_unix_ms;
    s->expires_unix_ms = rec->expires_unix_ms;
    s->revision = revision;
    s->queue = rec->queue;
    if (rec->state == ST(QUEUED)) {
        s->estimated_wait_ms = rec->estimated_wait_ms;
        if (rec->limits) {
            out->limits = *rec->limits;
            s->limits = &out->limits;
        }
    }
    if (rec->state == ST(CLAIMED) && rec->claim)
        s->match_id = rec->claim->match_id;
    if (rec->state == ST(ASSIGNED) && rec->assignment) {
        s->assignment = rec->assignment;
        s->match_id = rec->assignment->match_id;
    }
}

void gf_ticket_status_queued(const Gamefn__V1__TicketRecord *rec, uint64_t revision,
                             Gamefn__V1__TicketReason reason,
                             const Gamefn__V1__TicketLimits *limits, uint32_t estimated_wait_ms,
                             int64_t now_ms, gf_ticket_status *out)
{
    gf_ticket_status_of(rec, revision, NULL, out);
    out->st.reason = reason;
    snprintf(out->detail, sizeof out->detail, "%s", gf_ticket_reason_detail(reason));
    out->st.estimated_wait_ms = estimated_wait_ms;
    out->st.updated_unix_ms = now_ms;
    if (limits) {
        out->limits = *limits;
        out->st.limits = &out->limits;
    }
}

gf_err gf_ticket_status_pack(const gf_ticket_status *s, uint8_t **buf, size_t *len)
{
    return gf_pack(&s->st.base, buf, len);
}
