/*
 * record.c — the ticket transitions, the stored record's checks and the engine view.
 *
 * Design notes: a transition copies the record struct (shallow) and changes only the
 * fields it owns, so fields this build does not know (protobuf-c keeps them as unknown
 * fields) are written back unchanged: an older writer never erases a newer one's data.
 * Every transition sets updated_unix_ms; only gf_ticket_new sets queued_unix_ms, so a
 * ticket keeps its priority however often it returns to the pool.
 */
#include "gamefn/tickets/record.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/match/rules.h"
#include "gamefn/tickets/request.h"
#include "internal.h"

static const char *const state_names[] = {"UNSPECIFIED", "QUEUED",    "CLAIMED",
                                          "ASSIGNED",    "CANCELLED", "TIMED_OUT"};

static const char *const reason_names[] = {
    "UNSPECIFIED",
    "SEARCHING",
    "SKILL",
    "PING",
    "NO_COMMON_DATACENTER",
    "SHAPE",
    "POPULATION",
    "NO_SERVER",
    "CLAIM_EXPIRED",
    "MATCH_DROPPED",
    "CANCELLED_BY_CLIENT",
    "TTL_EXPIRED",
    "QUEUE_CLOSED",
    "MATCHED",
};

const char *gf_ticket_state_name(int state)
{
    size_t n = sizeof state_names / sizeof state_names[0];
    return state >= 0 && (size_t)state < n ? state_names[state] : "UNKNOWN";
}

const char *gf_ticket_reason_name(int reason)
{
    size_t n = sizeof reason_names / sizeof reason_names[0];
    return reason >= 0 && (size_t)reason < n ? reason_names[reason] : "UNKNOWN";
}

bool gf_ticket_terminal(int state)
{
    return state == ST(ASSIGNED) || state == ST(CANCELLED) || state == ST(TIMED_OUT);
}

static void next_from(const Gamefn__V1__TicketRecord *cur, int state, int reason, int64_t now_ms,
                      gf_ticket_next *out)
{
    memset(out, 0, sizeof *out);
    out->rec = *cur;
    out->rec.state = state;
    out->rec.reason = reason;
    out->rec.updated_unix_ms = now_ms;
    out->rec.claim = NULL;
    out->rec.assignment = NULL;
}

static gf_err unchanged(const Gamefn__V1__TicketRecord *cur, gf_ticket_next *out)
{
    memset(out, 0, sizeof *out);
    out->rec = *cur;
    out->unchanged = true;
    return GF_OK;
}

static gf_err wrong_state(gf_tickets_problem *p, const Gamefn__V1__TicketRecord *cur,
                          const char *what)
{
    return gf_tickets_refuse(p, GF_ERR_CONFLICT, C_PRECONDITION, NULL, "ticket %s is %s: %s",
                             cur->ticket_id, gf_ticket_state_name(cur->state), what);
}

/* The limits of a ticket at `age_ms` as the wire reports them. */
static void limits_of(const gf_match_queue *q, const gf_match_ticket *t, int64_t age_ms,
                      Gamefn__V1__TicketLimits *out)
{
    double skill = 0, sigma = 0;
    gf_match_limits l;
    gf_match_ticket_skill(q, t, &skill, &sigma);
    gf_match_rules_limits(q, age_ms, sigma, &l);
    *out = (Gamefn__V1__TicketLimits)GAMEFN__V1__TICKET_LIMITS__INIT;
    out->skill_ignored = isinf(l.skill_gap);
    out->skill_gap = out->skill_ignored ? 0 : l.skill_gap;
    out->ping_ms = (uint32_t)l.ping_ms;
}

gf_err gf_ticket_new(const gf_match_config *cfg, const Gamefn__V1__CreateTicketRequest *req,
                     const char *ticket_id, int64_t now_ms, gf_ticket_next *out,
                     gf_tickets_problem *p)
{
    gf_match_player players[GF_WIRE_PARTY_MAX];
    gf_match_ping pings[GF_WIRE_PINGS_MAX];
    gf_match_ticket t;
    memset(out, 0, sizeof *out);
    if (!gf_tk_token_ok(ticket_id, GF_WIRE_ID_MAX) || req->n_members > GF_WIRE_PARTY_MAX ||
        req->n_pings > GF_WIRE_PINGS_MAX || req->n_attributes > GF_WIRE_ATTRS_MAX)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, NULL,
                                 "request was not checked with gf_tickets_request_check");
    const gf_tk_parts parts = gf_tk_request_parts(req, now_ms);
    int region = req->region && req->region[0]
                     ? gf_match_config_region_index(cfg, req->region)
                     : gf_tickets_default_region(cfg, req->pings, req->n_pings);
    if (gf_tk_engine_parts(cfg, &parts, false, players, pings, &t) != GF_OK || region < 0)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "queue",
                                 "unknown queue, datacenters or region");
    const gf_match_queue *q = &cfg->queues[t.queue];

    Gamefn__V1__TicketRecord *r = &out->rec;
    *r = (Gamefn__V1__TicketRecord)GAMEFN__V1__TICKET_RECORD__INIT;
    r->ticket_id = gf_tk_unconst(ticket_id);
    r->idempotency_key = req->idempotency_key;
    r->queue = req->queue;
    r->n_members = req->n_members;
    r->members = req->members;
    r->n_pings = req->n_pings;
    r->pings = req->pings;
    for (size_t i = 0; i < req->n_attributes; i++) {
        out->attr[i] = (Gamefn__V1__TicketRecord__AttributesEntry)
            GAMEFN__V1__TICKET_RECORD__ATTRIBUTES_ENTRY__INIT;
        out->attr[i].key = req->attributes[i]->key;
        out->attr[i].value = req->attributes[i]->value;
        out->attr_ptr[i] = &out->attr[i];
    }
    r->n_attributes = req->n_attributes;
    r->attributes = r->n_attributes ? out->attr_ptr : NULL;
    r->region = gf_tk_unconst(gf_tk_region_name(cfg, region));
    r->requested_region = req->region ? req->region : gf_tk_unconst("");
    r->state = ST(QUEUED);
    r->reason = RS(SEARCHING);
    r->created_unix_ms = r->queued_unix_ms = r->updated_unix_ms = now_ms;
    r->expires_unix_ms = now_ms + q->ttl_ms;
    limits_of(q, &t, 0, &out->limits);
    r->limits = &out->limits;
    return GF_OK;
}

gf_err gf_ticket_claim(const Gamefn__V1__TicketRecord *cur, const gf_ticket_claim_args *a,
                       int64_t now_ms, gf_ticket_next *out, gf_tickets_problem *p)
{
    memset(out, 0, sizeof *out);
    if (!gf_tk_token_ok(a->matcher_id, GF_WIRE_ID_MAX) ||
        !gf_tk_token_ok(a->match_id, GF_WIRE_ID_MAX) || a->lease_expires_unix_ms <= now_ms)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, NULL,
                                 "claim needs matcher and match ids and a lease in the future");
    if (cur->state == ST(CLAIMED) && cur->claim)
        return gf_tickets_refuse(p, GF_ERR_CONFLICT, C_PRECONDITION, NULL,
                                 "ticket %s is already claimed by match %s", cur->ticket_id,
                                 cur->claim->match_id);
    if (cur->state != ST(QUEUED))
        return wrong_state(p, cur, "only a QUEUED ticket can be claimed");
    if (now_ms >= cur->expires_unix_ms)
        return gf_tickets_refuse(p, GF_ERR_CONFLICT, C_PRECONDITION, NULL,
                                 "ticket %s is past its TTL", cur->ticket_id);
    next_from(cur, ST(CLAIMED), RS(MATCHED), now_ms, out);
    out->claim = (Gamefn__V1__Claim)GAMEFN__V1__CLAIM__INIT;
    out->claim.matcher_id = gf_tk_unconst(a->matcher_id);
    out->claim.match_id = gf_tk_unconst(a->match_id);
    out->claim.lease_expires_unix_ms = a->lease_expires_unix_ms;
    out->claim.claimed_unix_ms = now_ms;
    if (a->match_digest) {
        out->claim.match_digest.data = (uint8_t *)(uintptr_t)a->match_digest;
        out->claim.match_digest.len = GF_CLAIM_DIGEST_LEN;
    }
    out->rec.claim = &out->claim;
    return GF_OK;
}

gf_err gf_ticket_release(const Gamefn__V1__TicketRecord *cur, const char *match_id,
                         Gamefn__V1__TicketReason reason, int64_t now_ms, gf_ticket_next *out,
                         gf_tickets_problem *p)
{
    memset(out, 0, sizeof *out);
    if (reason != RS(NO_SERVER) && reason != RS(CLAIM_EXPIRED) && reason != RS(MATCH_DROPPED))
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, NULL,
                                 "a ticket returns to the pool for NO_SERVER, CLAIM_EXPIRED or "
                                 "MATCH_DROPPED, not %s",
                                 gf_ticket_reason_name(reason));
    if (cur->state == ST(QUEUED) && !match_id)
        return unchanged(cur, out);
    if (cur->state != ST(CLAIMED) || !cur->claim)
        return wrong_state(p, cur, "not claimed by any match");
    if (match_id && !gf_tk_streq(cur->claim->match_id, match_id))
        return gf_tickets_refuse(p, GF_ERR_CONFLICT, C_PRECONDITION, NULL,
                                 "ticket %s is claimed by match %s, not %s", cur->ticket_id,
                                 cur->claim->match_id, match_id);
    next_from(cur, ST(QUEUED), reason, now_ms, out);
    out->rec.returns = cur->returns + 1;
    return GF_OK;
}

gf_err gf_ticket_assign(const Gamefn__V1__TicketRecord *cur, const Gamefn__V1__Assignment *a,
                        int64_t now_ms, gf_ticket_next *out, gf_tickets_problem *p)
{
    memset(out, 0, sizeof *out);
    if (!a || !gf_tk_streq(a->ticket_id, cur->ticket_id) ||
        !gf_tk_token_ok(a->match_id, GF_WIRE_ID_MAX))
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, NULL,
                                 "the assignment is not for ticket %s", cur->ticket_id);
    if (cur->state == ST(ASSIGNED) && cur->assignment &&
        gf_tk_streq(cur->assignment->match_id, a->match_id))
        return unchanged(cur, out);
    if (cur->state != ST(CLAIMED) || !cur->claim)
        return wrong_state(p, cur, "only a CLAIMED ticket can be assigned");
    if (!gf_tk_streq(cur->claim->match_id, a->match_id))
        return gf_tickets_refuse(p, GF_ERR_CONFLICT, C_PRECONDITION, NULL,
                                 "ticket %s is claimed by match %s, not %s", cur->ticket_id,
                                 cur->claim->match_id, a->match_id);
    next_from(cur, ST(ASSIGNED), RS(MATCHED), now_ms, out);
    out->rec.assignment = (Gamefn__V1__Assignment *)(uintptr_t)a;
    return GF_OK;
}

gf_err gf_ticket_cancel(const Gamefn__V1__TicketRecord *cur, int64_t now_ms, gf_ticket_next *out,
                        gf_tickets_problem *p)
{
    memset(out, 0, sizeof *out);
    if (cur->state == ST(CANCELLED))
        return unchanged(cur, out);
    if (cur->state != ST(QUEUED) && cur->state != ST(CLAIMED))
        return wrong_state(p, cur, "only a QUEUED or CLAIMED ticket can be cancelled");
    next_from(cur, ST(CANCELLED), RS(CANCELLED_BY_CLIENT), now_ms, out);
    return GF_OK;
}

gf_err gf_ticket_time_out(const Gamefn__V1__TicketRecord *cur, Gamefn__V1__TicketReason reason,
                          int64_t now_ms, gf_ticket_next *out, gf_tickets_problem *p)
{
    memset(out, 0, sizeof *out);
    if (reason != RS(TTL_EXPIRED) && reason != RS(QUEUE_CLOSED))
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, NULL,
                                 "a ticket times out for TTL_EXPIRED or QUEUE_CLOSED, not %s",
                                 gf_ticket_reason_name(reason));
    if (cur->state == ST(TIMED_OUT))
        return unchanged(cur, out);
    if (cur->state != ST(QUEUED))
        return wrong_state(p, cur, "only a QUEUED ticket times out");
    if (reason == RS(TTL_EXPIRED) && now_ms < cur->expires_unix_ms)
        return gf_tickets_refuse(p, GF_ERR_CONFLICT, C_PRECONDITION, NULL,
                                 "ticket %s is not past its TTL", cur->ticket_id);
    next_from(cur, ST(TIMED_OUT), reason, now_ms, out);
    return GF_OK;
}

/* ---- storage ------------------------------------------------------------------ */

static const char *record_problem(const ProtobufCMessage *m, const char *key)
{
    const Gamefn__V1__TicketRecord *r = (const Gamefn__V1__TicketRecord *)m;
    if (!gf_tk_token_ok(r->ticket_id, GF_WIRE_ID_MAX) || (key && strcmp(key, r->ticket_id) != 0))
        return "ticket_id is not a token equal to the key";
    if (r->state < ST(QUEUED) || r->state > ST(TIMED_OUT))
        return "unknown state";
    if (!gf_tk_token_ok(r->queue, GF_WIRE_NAME_MAX))
        return "queue is not a name token";
    if (r->n_members < 1 || r->n_members > GF_WIRE_PARTY_MAX)
        return "members count out of range";
    for (size_t i = 0; i < r->n_members; i++) {
        if (!gf_tk_token_ok(r->members[i]->player_id, GF_WIRE_ID_MAX))
            return "a player id is not a token";
    }
    if (r->n_pings < 1 || r->n_pings > GF_WIRE_PINGS_MAX)
        return "pings count out of range";
    if ((r->state == ST(CLAIMED)) != (r->claim != NULL) ||
        (r->claim && !gf_tk_token_ok(r->claim->match_id, GF_WIRE_ID_MAX)))
        return "a claim must be present iff CLAIMED";
    if ((r->state == ST(ASSIGNED)) != (r->assignment != NULL) ||
        (r->assignment && !gf_tk_token_ok(r->assignment->match_id, GF_WIRE_ID_MAX)))
        return "an assignment must be present iff ASSIGNED";
    return NULL;
}

gf_err gf_ticket_decode(const uint8_t *buf, size_t len, const char *key,
                        Gamefn__V1__TicketRecord **out, gf_tickets_problem *p)
{
    return gf_tk_decode_stored(&gamefn__v1__ticket_record__descriptor, record_problem, "ticket",
                               buf, len, key, (ProtobufCMessage **)out, p);
}

void gf_ticket_free(Gamefn__V1__TicketRecord *rec)
{
    if (rec)
        gamefn__v1__ticket_record__free_unpacked(rec, NULL);
}

gf_err gf_ticket_pack(const Gamefn__V1__TicketRecord *rec, uint8_t **buf, size_t *len)
{
    return gf_pack(&rec->base, buf, len);
}

/* ---- the engine's view ------------------------------------------------------------ */

gf_err gf_ticket_engine(const gf_match_config *cfg, const Gamefn__V1__TicketRecord *rec,
                        gf_match_player *players, gf_match_ping *pings, gf_match_attr *attrs,
                        gf_match_ticket *out)
{
    const gf_tk_parts parts = {
        .queue = rec->queue,
        .region = rec->region,
        .queued_ms = rec->queued_unix_ms,
        .n_members = rec->n_members,
        .members = rec->members,
        .n_pings = rec->n_pings,
        .pings = rec->pings,
    };
    gf_err err = gf_tk_engine_parts(cfg, &parts, false, players, pings, out);
    for (size_t i = 0; i < rec->n_attributes; i++)
        attrs[i] = (gf_match_attr){rec->attributes[i]->key, rec->attributes[i]->value};
    out->attrs = attrs;
    out->attrs_len = rec->n_attributes;
    out->id = rec->ticket_id;
    return err;
}
