/*
 * request.c — ticket ids, request validation and the "same request" rule.
 *
 * Design notes: the wire checks run field by field in the request's order and stop
 * at the first problem, so the field a client is told about is stable (docs/PROTOCOL.md
 * "Errors" gives the precedence). The engine's gf_match_ticket_check() then runs on the
 * converted ticket as the last word: every rule the engine has is at least as strict
 * here, so it only refuses if the two drift apart, and then the request is refused too
 * (intake must never store a ticket the matcher would refuse).
 */
#include "gamefn/tickets/request.h"

#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "gamefn/names.h"
#include "gamefn/utf8.h"
#include "internal.h"

bool gf_tk_token_ok(const char *s, size_t max)
{
    return gf_name_id_ok(s, max, NULL, 0);
}

const char *gf_tk_region_name(const gf_match_config *cfg, int r)
{
    for (size_t d = 0; r >= 0 && d < cfg->datacenters_len; d++) {
        if (gf_match_config_dc_region(cfg, d) == r)
            return cfg->datacenters[d].region;
    }
    return NULL;
}

gf_err gf_tickets_id(const char *idempotency_key, char out[GF_TICKETS_ID_LEN + 1])
{
    unsigned char h[GF_TICKETS_ID_LEN / 2];
    out[0] = '\0';
    if (!gf_tk_token_ok(idempotency_key, GF_WIRE_ID_MAX) || sodium_init() < 0)
        return GF_ERR_INVALID;
    crypto_generichash(h, sizeof h, (const unsigned char *)idempotency_key, strlen(idempotency_key),
                       NULL, 0);
    sodium_bin2hex(out, GF_TICKETS_ID_LEN + 1, h, sizeof h);
    return GF_OK;
}

/* "is empty", "is longer than 64 bytes", ... for a token field. */
static gf_err token_problem(gf_tickets_problem *p, const char *field, const char *s, size_t max)
{
    char why[GF_NAME_WHY_MAX];
    if (gf_name_id_ok(s, max, why, sizeof why))
        return GF_OK;
    return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field, "%s", why);
}

gf_err gf_tickets_id_check(const char *ticket_id, gf_tickets_problem *p)
{
    return token_problem(p, "ticket_id", ticket_id, GF_WIRE_ID_MAX);
}

gf_err gf_tickets_decode(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                         ProtobufCMessage **out, gf_tickets_problem *p)
{
    *out = NULL;
    if (len > GF_WIRE_REQUEST_MAX)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, NULL,
                                 "request body of %zu bytes is over the limit of %d", len,
                                 GF_WIRE_REQUEST_MAX);
    *out = protobuf_c_message_unpack(desc, NULL, len, buf);
    if (!*out)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, NULL,
                                 "request body is not a valid %s encoding", desc->name);
    return GF_OK;
}

gf_err gf_tk_engine_parts(const gf_match_config *cfg, const gf_tk_parts *parts, bool keep_unknown,
                          gf_match_player *players, gf_match_ping *pings, gf_match_ticket *out)
{
    int q = gf_match_config_queue_index(cfg, parts->queue);
    memset(out, 0, sizeof *out);
    out->queue = q < 0 ? UINT32_MAX : (uint32_t)q;
    out->region = GF_MATCH_REGION_AUTO;
    if (parts->region && parts->region[0]) {
        int r = gf_match_config_region_index(cfg, parts->region);
        if (r >= 0)
            out->region = (uint32_t)r;
        else if (keep_unknown)
            out->region = UINT32_MAX - 1;
    }
    out->queued_ms = parts->queued_ms;
    for (size_t i = 0; i < parts->n_members; i++) {
        const Gamefn__V1__PartyMember *m = parts->members[i];
        players[i] = (gf_match_player){.id = m->player_id, .skill = m->rating, .sigma = m->sigma};
    }
    out->players = players;
    out->players_len = parts->n_members;
    size_t n = 0;
    for (size_t i = 0; i < parts->n_pings; i++) {
        const Gamefn__V1__DatacenterPing *pg = parts->pings[i];
        int dc = gf_match_config_dc_index(cfg, pg->datacenter);
        if (dc < 0 && !keep_unknown)
            continue;
        pings[n++] = (gf_match_ping){.dc = dc < 0 ? UINT32_MAX : (uint32_t)dc, .ms = pg->ping_ms};
    }
    out->pings = pings;
    out->pings_len = n;
    return q < 0 || n == 0 ? GF_ERR_NOT_FOUND : GF_OK;
}

gf_tk_parts gf_tk_request_parts(const Gamefn__V1__CreateTicketRequest *req, int64_t now_ms)
{
    return (gf_tk_parts){
        .queue = req->queue,
        .region = req->region,
        .queued_ms = now_ms,
        .n_members = req->n_members,
        .members = req->members,
        .n_pings = req->n_pings,
        .pings = req->pings,
    };
}

int gf_tickets_default_region(const gf_match_config *cfg, Gamefn__V1__DatacenterPing *const *pings,
                              size_t n)
{
    int best_dc = -1;
    uint32_t best = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        int dc = gf_match_config_dc_index(cfg, pings[i]->datacenter);
        if (dc < 0)
            continue;
        if (pings[i]->ping_ms < best || (pings[i]->ping_ms == best && dc < best_dc)) {
            best = pings[i]->ping_ms;
            best_dc = dc;
        }
    }
    return best_dc < 0 ? -1 : gf_match_config_dc_region(cfg, (size_t)best_dc);
}

/* ---- the checks, in precedence order ----------------------------------------- */

static gf_err check_queue(const gf_match_config *cfg, const char *queue, gf_tickets_problem *p)
{
    if (token_problem(p, "queue", queue, GF_WIRE_NAME_MAX) != GF_OK)
        return GF_ERR_INVALID;
    if (gf_match_config_queue_index(cfg, queue) < 0)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "queue", "unknown queue '%s'",
                                 queue);
    return GF_OK;
}

static gf_err check_members(const gf_match_queue *q, const Gamefn__V1__CreateTicketRequest *req,
                            gf_tickets_problem *p)
{
    char field[64];
    size_t n = req->n_members;
    if (n == 0)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "members", "no members");
    if (n > GF_WIRE_PARTY_MAX)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "members",
                                 "party too large (%zu players, at most %d)", n, GF_WIRE_PARTY_MAX);
    if (n > (size_t)q->team_size)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "members",
                                 "party too large for queue %s (%zu players, team size %lld)",
                                 q->name, n, (long long)q->team_size);
    for (size_t i = 0; i < n; i++) {
        const Gamefn__V1__PartyMember *m = req->members[i];
        snprintf(field, sizeof field, "members[%zu].player_id", i);
        if (token_problem(p, field, m->player_id, GF_WIRE_ID_MAX) != GF_OK)
            return GF_ERR_INVALID;
        if (!(fabs(m->rating) <= GF_WIRE_RATING_ABS_MAX)) { /* false for NaN */
            snprintf(field, sizeof field, "members[%zu].rating", i);
            return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field,
                                     "must be finite, within -1e6..1e6");
        }
        if (!(m->sigma >= 0 && m->sigma <= GF_WIRE_RATING_ABS_MAX)) {
            snprintf(field, sizeof field, "members[%zu].sigma", i);
            return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field,
                                     "must be finite, within 0..1e6");
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(req->members[j]->player_id, m->player_id) == 0) {
                snprintf(field, sizeof field, "members[%zu].player_id", i);
                return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field,
                                         "repeats members[%zu]", j);
            }
        }
    }
    return GF_OK;
}

static gf_err check_pings(const gf_match_config *cfg, const Gamefn__V1__CreateTicketRequest *req,
                          gf_tickets_problem *p)
{
    char field[64];
    size_t n = req->n_pings;
    if (n == 0)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "pings", "no datacenter pings");
    if (n > GF_WIRE_PINGS_MAX)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "pings",
                                 "too many datacenters (%zu, at most %d)", n, GF_WIRE_PINGS_MAX);
    for (size_t i = 0; i < n; i++) {
        const Gamefn__V1__DatacenterPing *pg = req->pings[i];
        snprintf(field, sizeof field, "pings[%zu].datacenter", i);
        if (token_problem(p, field, pg->datacenter, GF_WIRE_NAME_MAX) != GF_OK)
            return GF_ERR_INVALID;
        if (gf_match_config_dc_index(cfg, pg->datacenter) < 0)
            return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field, "unknown datacenter '%s'",
                                     pg->datacenter);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(req->pings[j]->datacenter, pg->datacenter) == 0)
                return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field, "repeats pings[%zu]",
                                         j);
        }
        if (pg->ping_ms > GF_WIRE_PING_MS_MAX) {
            snprintf(field, sizeof field, "pings[%zu].ping_ms", i);
            return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field,
                                     "%u ms is over the limit of %d", pg->ping_ms,
                                     GF_WIRE_PING_MS_MAX);
        }
    }
    return GF_OK;
}

static bool text_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n > max || !gf_utf8_valid(s, n))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return false;
    }
    return true;
}

static gf_err check_attributes(const Gamefn__V1__CreateTicketRequest *req, gf_tickets_problem *p)
{
    char field[64];
    size_t n = req->n_attributes;
    if (n > GF_WIRE_ATTRS_MAX)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "attributes",
                                 "too many entries (%zu, at most %d)", n, GF_WIRE_ATTRS_MAX);
    for (size_t i = 0; i < n; i++) {
        const Gamefn__V1__CreateTicketRequest__AttributesEntry *a = req->attributes[i];
        if (!gf_tk_token_ok(a->key, GF_WIRE_NAME_MAX))
            return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "attributes",
                                     "key of entry %zu is not a name token of 1..%d bytes", i,
                                     GF_WIRE_NAME_MAX);
        snprintf(field, sizeof field, "attributes[%s]", a->key);
        if (!text_ok(a->value ? a->value : "", GF_WIRE_ATTR_VALUE_MAX))
            return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field,
                                     "value must be UTF-8 of at most %d bytes without control "
                                     "characters",
                                     GF_WIRE_ATTR_VALUE_MAX);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(req->attributes[j]->key, a->key) == 0)
                return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, field, "key repeated");
        }
    }
    return GF_OK;
}

static gf_err check_region(const gf_match_config *cfg, const char *region, gf_tickets_problem *p)
{
    if (!region || !region[0])
        return GF_OK;
    if (token_problem(p, "region", region, GF_WIRE_NAME_MAX) != GF_OK)
        return GF_ERR_INVALID;
    if (gf_match_config_region_index(cfg, region) < 0)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "region", "unknown region '%s'",
                                 region);
    return GF_OK;
}

/* The field a refusal of the engine concerns (only reached if it and the wire checks
 * drifted apart). */
static const char *engine_field(gf_match_bad bad)
{
    switch (bad) {
    case GF_MATCH_BAD_QUEUE:
        return "queue";
    case GF_MATCH_BAD_REGION:
        return "region";
    case GF_MATCH_BAD_NO_DC:
    case GF_MATCH_BAD_UNKNOWN_DC:
    case GF_MATCH_BAD_DUP_DC:
    case GF_MATCH_BAD_PING:
        return "pings";
    case GF_MATCH_BAD_ATTR:
        return "attributes";
    case GF_MATCH_BAD_NO_PLAYERS:
    case GF_MATCH_BAD_PARTY_SIZE:
    case GF_MATCH_BAD_PLAYER_ID:
    case GF_MATCH_BAD_SKILL:
    case GF_MATCH_BAD_SIGMA:
    case GF_MATCH_BAD_DUP_PLAYER:
        return "members";
    default:
        return NULL;
    }
}

static gf_err check_engine(const gf_match_config *cfg, const Gamefn__V1__CreateTicketRequest *req,
                           int64_t now_ms, gf_tickets_problem *p)
{
    gf_match_player players[GF_WIRE_PARTY_MAX];
    gf_match_ping pings[GF_WIRE_PINGS_MAX];
    gf_match_attr attrs[GF_WIRE_ATTRS_MAX];
    gf_match_ticket t;
    const gf_tk_parts parts = gf_tk_request_parts(req, now_ms);
    gf_tk_engine_parts(cfg, &parts, true, players, pings, &t);
    for (size_t i = 0; i < req->n_attributes; i++)
        attrs[i] = (gf_match_attr){req->attributes[i]->key, req->attributes[i]->value};
    t.attrs = attrs;
    t.attrs_len = req->n_attributes;
    t.id = "check";
    gf_match_bad bad = gf_match_ticket_check(cfg, &t, now_ms);
    if (bad == GF_MATCH_BAD_NONE)
        return GF_OK;
    return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, engine_field(bad),
                             "refused by the matching engine: %s", gf_match_bad_text(bad));
}

gf_err gf_tickets_request_check(const gf_match_config *cfg,
                                const Gamefn__V1__CreateTicketRequest *req, int64_t now_ms,
                                gf_tickets_problem *p)
{
    gf_tickets_problem_clear(p);
    if (token_problem(p, "idempotency_key", req->idempotency_key, GF_WIRE_ID_MAX) != GF_OK ||
        check_queue(cfg, req->queue, p) != GF_OK)
        return GF_ERR_INVALID;
    const gf_match_queue *q = &cfg->queues[gf_match_config_queue_index(cfg, req->queue)];
    if (check_members(q, req, p) != GF_OK || check_pings(cfg, req, p) != GF_OK ||
        check_attributes(req, p) != GF_OK || check_region(cfg, req->region, p) != GF_OK)
        return GF_ERR_INVALID;
    return check_engine(cfg, req, now_ms, p);
}

/* ---- the same request? ------------------------------------------------------- */

static gf_err differs(gf_tickets_problem *p, const char *field)
{
    return gf_tickets_refuse(p, GF_ERR_CONFLICT, C_PRECONDITION, field,
                             "differs from the request that created this ticket under the same "
                             "idempotency key");
}

static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static gf_err same_members(const Gamefn__V1__CreateTicketRequest *req,
                           const Gamefn__V1__TicketRecord *rec, gf_tickets_problem *p)
{
    char field[64];
    if (req->n_members != rec->n_members)
        return differs(p, "members");
    for (size_t i = 0; i < req->n_members; i++) {
        const Gamefn__V1__PartyMember *a = req->members[i], *b = rec->members[i];
        const char *what = !gf_tk_streq(a->player_id, b->player_id) ? "player_id"
                           : !same_double(a->rating, b->rating)     ? "rating"
                           : !same_double(a->sigma, b->sigma)       ? "sigma"
                                                                    : NULL;
        if (what) {
            snprintf(field, sizeof field, "members[%zu].%s", i, what);
            return differs(p, field);
        }
    }
    return GF_OK;
}

static gf_err same_pings(const Gamefn__V1__CreateTicketRequest *req,
                         const Gamefn__V1__TicketRecord *rec, gf_tickets_problem *p)
{
    char field[64];
    if (req->n_pings != rec->n_pings)
        return differs(p, "pings");
    for (size_t i = 0; i < req->n_pings; i++) {
        bool found = false;
        for (size_t j = 0; j < rec->n_pings && !found; j++)
            found = gf_tk_streq(req->pings[i]->datacenter, rec->pings[j]->datacenter) &&
                    req->pings[i]->ping_ms == rec->pings[j]->ping_ms;
        if (!found) {
            snprintf(field, sizeof field, "pings[%zu]", i);
            return differs(p, field);
        }
    }
    return GF_OK;
}

static gf_err same_attributes(const Gamefn__V1__CreateTicketRequest *req,
                              const Gamefn__V1__TicketRecord *rec, gf_tickets_problem *p)
{
    char field[64];
    if (req->n_attributes != rec->n_attributes)
        return differs(p, "attributes");
    for (size_t i = 0; i < req->n_attributes; i++) {
        bool found = false;
        for (size_t j = 0; j < rec->n_attributes && !found; j++)
            found = gf_tk_streq(req->attributes[i]->key, rec->attributes[j]->key) &&
                    gf_tk_streq(req->attributes[i]->value, rec->attributes[j]->value);
        if (!found) {
            snprintf(field, sizeof field, "attributes[%s]", req->attributes[i]->key);
            return differs(p, field);
        }
    }
    return GF_OK;
}

gf_err gf_tickets_request_same(const Gamefn__V1__CreateTicketRequest *req,
                               const Gamefn__V1__TicketRecord *rec, gf_tickets_problem *p)
{
    gf_tickets_problem_clear(p);
    if (!gf_tk_streq(req->queue, rec->queue))
        return differs(p, "queue");
    if (same_members(req, rec, p) != GF_OK || same_pings(req, rec, p) != GF_OK ||
        same_attributes(req, rec, p) != GF_OK)
        return GF_ERR_CONFLICT;
    if (!gf_tk_streq(req->region, rec->requested_region))
        return differs(p, "region");
    return GF_OK;
}
