/*
 * intake.c — the intake's config, state, ticket.get, the discovery answer and the reply
 * helpers shared by create.c and cancel.c.
 */
#include "intake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/log.h"
#include "gamefn/tickets/record.h"
#include "gamefn/tickets/request.h"
#include "gamefn/tickets/status.h"
#include "gamefn/util.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamefn/v1/queue.pb-c.h"

/* ---- replies -------------------------------------------------------------------- */

gf_err intake_fail(gf_reply *reply, gf_err err, const gf_tickets_problem *p)
{
    reply->code = p->code;
    snprintf(reply->field, sizeof reply->field, "%s", p->field);
    snprintf(reply->error, sizeof reply->error, "%s", p->message);
    return err;
}

gf_err intake_fail_store(gf_reply *reply, gf_err err, const char *what)
{
    reply->code = err == GF_ERR_TIMEOUT ? GAMEFN__V1__ERROR_CODE__ERROR_CODE_TIMEOUT
                                        : GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNAVAILABLE;
    reply->retry_after_ms = 250;
    snprintf(reply->error, sizeof reply->error,
             "%s: %s (outcome unknown: retry with the same request)", what, gf_err_str(err));
    return err == GF_ERR_TIMEOUT ? GF_ERR_TIMEOUT : GF_ERR_UNAVAILABLE;
}

enum { FULL_LOG_MS = 10000, FULL_RETRY_MS = 1000 };

static const char *const bucket_names[GF_MM__BUCKETS] = {"tickets", "players", "matches"};

gf_err intake_fail_write(intake_state *in, gf_reply *reply, const gf_mm_op *op, const char *what)
{
    if (!op->full)
        return intake_fail_store(reply, op->err, what);
    const char *bucket = op->bucket < GF_MM__BUCKETS ? bucket_names[op->bucket] : "?";
    if (gf_log_due(&in->full_logged_ms, FULL_LOG_MS))
        gf_log_warn("bucket full: ticket.create refused", "bucket=%s js_code=%d step=\"%s\"",
                    bucket, op->js_code, what);
    reply->code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_RESOURCE_EXHAUSTED;
    reply->retry_after_ms = FULL_RETRY_MS;
    reply->field[0] = '\0';
    snprintf(reply->error, sizeof reply->error,
             "%s: the %s bucket is full (JetStream %d); nothing was stored: retry later", what,
             bucket, op->js_code);
    return GF_ERR_UNAVAILABLE;
}

gf_err intake_read_ticket(intake_state *in, const char *id, Gamefn__V1__TicketRecord **rec,
                          uint64_t *rev, gf_reply *reply)
{
    uint8_t *val = NULL;
    size_t len = 0;
    gf_tickets_problem p;
    *rec = NULL;
    gf_err err = gf_mmstore_get(in->store, GF_MM_TICKETS, id, &val, &len, rev);
    if (err == GF_ERR_NOT_FOUND)
        return err;
    if (err != GF_OK)
        return intake_fail_store(reply, err, "reading the ticket");
    err = gf_ticket_decode(val, len, id, rec, &p);
    free(val);
    return err == GF_OK ? GF_OK : intake_fail(reply, GF_ERR_IO, &p);
}

gf_err intake_reply_status(gf_reply *reply, int wrap, const Gamefn__V1__TicketRecord *rec,
                           uint64_t rev, bool replayed, const char *note)
{
    gf_ticket_status st;
    gf_ticket_status_of(rec, rev, note, &st);
    Gamefn__V1__CreateTicketReply cr = GAMEFN__V1__CREATE_TICKET_REPLY__INIT;
    Gamefn__V1__CancelTicketReply xr = GAMEFN__V1__CANCEL_TICKET_REPLY__INIT;
    Gamefn__V1__GetTicketReply gr = GAMEFN__V1__GET_TICKET_REPLY__INIT;
    cr.ticket_id = rec->ticket_id;
    cr.replayed = replayed;
    cr.status = xr.status = gr.status = &st.st;
    const ProtobufCMessage *m = wrap == 0 ? &cr.base : wrap == 1 ? &xr.base : &gr.base;
    uint8_t *buf = NULL;
    gf_err err = gf_pack(m, &buf, &reply->len);
    reply->data = buf;
    return err;
}

/* ---- ticket.get ------------------------------------------------------------------- */

gf_err intake_get(intake_state *in, const gf_msg *msg, gf_reply *reply)
{
    ProtobufCMessage *m = NULL;
    Gamefn__V1__TicketRecord *rec = NULL;
    gf_tickets_problem p;
    uint64_t rev = 0;
    gf_err err =
        gf_tickets_decode(&gamefn__v1__get_ticket_request__descriptor, msg->data, msg->len, &m, &p);
    const Gamefn__V1__GetTicketRequest *req = (const Gamefn__V1__GetTicketRequest *)m;
    if (err == GF_OK)
        err = gf_tickets_id_check(req->ticket_id, &p);
    if (err != GF_OK) {
        err = intake_fail(reply, err, &p);
        goto out;
    }
    err = intake_read_ticket(in, req->ticket_id, &rec, &rev, reply);
    if (err == GF_ERR_NOT_FOUND) {
        snprintf(reply->field, sizeof reply->field, "ticket_id");
        snprintf(reply->error, sizeof reply->error, "ticket_id: no ticket %s", req->ticket_id);
        reply->code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND;
    }
    if (err == GF_OK)
        err = intake_reply_status(reply, 2, rec, rev, false, NULL);
out:
    gf_ticket_free(rec);
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
    return err;
}

/* ---- discovery ---------------------------------------------------------------------- */

static const int mode_map[] = {
    [GF_MATCH_SBMM] = GAMEFN__V1__QUEUE_MODE__QUEUE_MODE_SBMM,
    [GF_MATCH_PING_FIRST] = GAMEFN__V1__QUEUE_MODE__QUEUE_MODE_PING_FIRST,
    [GF_MATCH_HYBRID] = GAMEFN__V1__QUEUE_MODE__QUEUE_MODE_HYBRID,
};

/* The answer for every queue (only == NULL) or one. Packed into a malloc'd buffer. */
static gf_err build_queues(const gf_mm_tables *t, const char *only, uint8_t **buf, size_t *len)
{
    const gf_match_config *c = &t->cfg;
    Gamefn__V1__QueueInfo qi[GF_MATCH_MAX_QUEUES];
    Gamefn__V1__QueueInfo *qp[GF_MATCH_MAX_QUEUES];
    Gamefn__V1__QueueRules rules[GF_MATCH_MAX_QUEUES];
    Gamefn__V1__DatacenterInfo di[GF_MATCH_MAX_DCS];
    Gamefn__V1__DatacenterInfo *dp[GF_MATCH_MAX_DCS];
    char *regions[GF_MATCH_MAX_DCS];
    char shapes[GF_MATCH_MAX_QUEUES][24];
    Gamefn__V1__ListQueuesReply r = GAMEFN__V1__LIST_QUEUES_REPLY__INIT;
    size_t nq = 0;
    for (size_t i = 0; i < c->queues_len; i++) {
        const gf_match_queue *q = &c->queues[i];
        if (only && strcmp(only, q->name) != 0)
            continue;
        Gamefn__V1__QueueInfo *o = &qi[nq];
        *o = (Gamefn__V1__QueueInfo)GAMEFN__V1__QUEUE_INFO__INIT;
        rules[nq] = (Gamefn__V1__QueueRules)GAMEFN__V1__QUEUE_RULES__INIT;
        o->name = (char *)(uintptr_t)q->name;
        o->mode = mode_map[q->mode];
        if (q->shape)
            snprintf(shapes[nq], sizeof shapes[nq], "%s", q->shape);
        else
            snprintf(shapes[nq], sizeof shapes[nq], "%lldx%lld", (long long)q->teams,
                     (long long)q->team_size);
        o->shape = shapes[nq];
        o->teams = (uint32_t)q->teams;
        o->team_size = (uint32_t)q->team_size;
        o->playlist = (char *)(uintptr_t)(q->playlist ? q->playlist : "");
        o->ticket_ttl_ms = (uint32_t)q->ttl_ms;
        o->n_match_attributes = q->match_attributes_len;
        o->match_attributes = (char **)(uintptr_t)q->match_attributes;
        o->population_floor = (uint32_t)q->population_floor;
        o->tick_group = (char *)(uintptr_t)t->groups[t->queue_group[i]].name;
        Gamefn__V1__QueueRules *ru = &rules[nq];
        ru->skill_base = q->curve.skill_base;
        ru->skill_alpha = q->curve.skill_alpha;
        ru->skill_gamma = q->curve.skill_gamma;
        ru->skill_cap = q->curve.skill_cap;
        ru->sigma_widen = q->curve.sigma_widen;
        ru->ping_base_ms = (uint32_t)q->curve.ping_base_ms;
        ru->ping_beta_ms = (uint32_t)q->curve.ping_beta_ms;
        ru->ping_step_ms = (uint32_t)q->curve.ping_step_ms;
        ru->ping_cap_ms = (uint32_t)q->curve.ping_cap_ms;
        o->rules = ru;
        qp[nq] = o;
        nq++;
    }
    if (only && nq == 0)
        return GF_ERR_NOT_FOUND;
    size_t nr = 0;
    for (size_t d = 0; d < c->datacenters_len; d++) {
        di[d] = (Gamefn__V1__DatacenterInfo)GAMEFN__V1__DATACENTER_INFO__INIT;
        di[d].name = (char *)(uintptr_t)c->datacenters[d].name;
        di[d].region = (char *)(uintptr_t)c->datacenters[d].region;
        dp[d] = &di[d];
        if ((size_t)gf_match_config_dc_region(c, d) == nr)
            regions[nr++] = (char *)(uintptr_t)c->datacenters[d].region;
    }
    r.n_queues = nq;
    r.queues = qp;
    r.n_datacenters = c->datacenters_len;
    r.datacenters = dp;
    r.n_regions = nr;
    r.regions = regions;
    r.max_party = GF_WIRE_PARTY_MAX;
    return gf_pack(&r.base, buf, len);
}

gf_err intake_queues(intake_state *in, const gf_msg *msg, gf_reply *reply)
{
    ProtobufCMessage *m = NULL;
    gf_tickets_problem p;
    gf_err err = gf_tickets_decode(&gamefn__v1__list_queues_request__descriptor, msg->data,
                                   msg->len, &m, &p);
    if (err != GF_OK)
        return intake_fail(reply, err, &p);
    const char *only = ((const Gamefn__V1__ListQueuesRequest *)m)->queue;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (only && only[0]) {
        err = build_queues(in->tables, only, &buf, &len);
        if (err == GF_ERR_NOT_FOUND) {
            reply->code = GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND;
            snprintf(reply->field, sizeof reply->field, "queue");
            snprintf(reply->error, sizeof reply->error, "queue: no queue named '%.64s'", only);
        }
    } else if ((buf = malloc(in->queues_reply_len ? in->queues_reply_len : 1)) != NULL) {
        memcpy(buf, in->queues_reply, in->queues_reply_len);
        len = in->queues_reply_len;
    } else {
        err = GF_ERR_NOMEM;
    }
    protobuf_c_message_free_unpacked(m, NULL);
    reply->data = buf;
    reply->len = len;
    return err;
}

/* ---- state ----------------------------------------------------------------------- */

gf_err intake_state_init(intake_state *in, const gf_config *cfg, const intake_config *own,
                         natsConnection *nc, jsCtx *js, const char *instance_id, char *why,
                         size_t why_size)
{
    gf_config_error cerr;
    memset(in, 0, sizeof *in);
    in->cfg = own;
    in->instance_id = instance_id;
    in->policy.pending_grace_ms = own->pending_grace_ms;
    in->policy.max_match_ms = own->max_match_ms;
    gf_err err = gf_mm_config_load(cfg->path, &in->mm_config, &cerr);
    if (err != GF_OK) {
        snprintf(why, why_size, "%s", cerr.message);
        return err;
    }
    if ((err = intake_pending_new(&in->pending)) != GF_OK)
        return err;
    const gf_mm_config *mm = gf_config_function(in->mm_config);
    in->tables = calloc(1, sizeof *in->tables);
    if (!in->tables)
        return GF_ERR_NOMEM;
    if ((err = gf_mm_tables_build(&mm->matchmaking, in->tables, why, why_size)) != GF_OK ||
        (err = build_queues(in->tables, NULL, &in->queues_reply, &in->queues_reply_len)) != GF_OK)
        return err;
    err = gf_mmstore_open(nc, js, &in->store);
    if (err != GF_OK)
        snprintf(why, why_size, "binding the tickets, players and matches buckets: %s",
                 gf_err_str(err));
    return err;
}

void intake_state_free(intake_state *in)
{
    gf_mmstore_close(in->store);
    intake_pending_free(in->pending);
    free(in->queues_reply);
    free(in->tables);
    gf_config_free(in->mm_config);
    memset(in, 0, sizeof *in);
}
