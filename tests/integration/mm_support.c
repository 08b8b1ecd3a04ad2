/* mm_support.c — see mm_support.h. */
#include "gamefn/clock.h"
#include "mm_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/subjects.h"
#include "gamefn/wire_error.h"

static const char config_template[] =
    "nats:\n"
    "  servers: [\"%s\"]\n"
    "  reconnect_wait: 100ms\n"
    "  reconnect_jitter: 50ms\n"
    "  reconnect_max_wait: 500ms\n"
    "log:\n"
    "  level: info\n"
    "runtime:\n"
    "  drain_timeout: 5s\n"
    "jetstream:\n"
    "  streams:\n"
    "    - {name: MATCHES, subjects: [\"gamefn.v1.match.found.>\"], retention: workqueue,\n"
    "       discard: new}\n"
    "    - {name: AUDIT_TICKETS, mirror: KV_tickets, allow_direct: true}\n"
    "    - {name: AUDIT_MATCHES, mirror: KV_matches}\n"
    "    - {name: AUDIT_PLAYERS, mirror: KV_players}\n"
    "  buckets:\n"
    "    - {name: tickets, history: 64, ttl: %s}\n"
    "    - {name: players, history: 64}\n"
    "    - {name: matches, history: 1, ttl: 1d}\n"
    "    - {name: leases, history: 1}\n"
    "functions:\n"
    "  intake:\n"
    "%s"
    "  ticker:\n"
    "    interval: 100ms\n"
    "  matcher:\n"
    "%s"
    "    matchmaking:\n"
    "      datacenters:\n"
    "        - {name: eu-west, region: eu}\n"
    "        - {name: us-east, region: na}\n"
    "      queues:\n"
    "        - {name: duel, mode: hybrid, shape: 1v1}\n"
    "        - {name: short, mode: hybrid, shape: 1v1, ticket_ttl: 2s}\n"
    "        - {name: pair, mode: hybrid, shape: 2v2}\n"
    "%s";

int mm_env_start_opts(gf_fnenv *env, const mm_env_opts *o)
{
    if (gf_fnenv_start(env, NULL) != 0)
        return -1;
    FILE *f = fopen(env->config_path, "w");
    if (!f)
        return -1;
    fprintf(f, config_template, gf_natsd_url(env->natsd), o->tickets_ttl ? o->tickets_ttl : "1h",
            o->intake ? o->intake : "    pending_grace: 2s\n", o->matcher ? o->matcher : "",
            o->queues ? o->queues : "");
    fclose(f);
    return 0;
}

mm_ticket mm_solo(const char *key, const char *player)
{
    return (mm_ticket){.key = key,
                       .queue = "duel",
                       .players = {player},
                       .nplayers = 1,
                       .rating = 1500,
                       .pings = "eu-west:20"};
}

void mm_create_new(gf_fnenv *env, const mm_ticket *t, char *id, size_t size)
{
    Gamefn__V1__CreateTicketReply *r = NULL;
    char field[160] = "";
    int code = mm_create(env, t, &r, field, sizeof field);
    if (code != 0)
        fail_msg("create %s: error code %d, field %s", t->key, code, field);
    assert_false(r->replayed);
    snprintf(id, size, "%s", r->ticket_id);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

int mm_env_start(gf_fnenv *env, const char *matcher_opts)
{
    const mm_env_opts o = {.matcher = matcher_opts};
    return mm_env_start_opts(env, &o);
}

bool mm_spawn(gf_fnenv *env, gf_proc *p, const char *name, const char *instance)
{
    char rel[128];
    snprintf(rel, sizeof rel, "functions/%s/gamefn-%s", name, name);
    if (gf_fnenv_spawn(env, p, rel, instance, NULL) != 0)
        return false;
    bool up = gf_fnenv_wait_ping(env, name, instance, 15000);
    if (!up)
        gf_proc_dump_log(p, 30);
    return up;
}

/* mm_call with a timeout, the whole error in *e (code -1: no reply). */
static int call(gf_fnenv *env, const char *subject, const void *body, size_t len, int timeout_ms,
                const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out, gf_wire_error *e)
{
    natsMsg *reply = NULL;
    if (out)
        *out = NULL;
    memset(e, 0, sizeof *e);
    e->code = -1;
    if (natsConnection_Request(&reply, env->nc, subject, body, (int)len, timeout_ms) != NATS_OK)
        return -1;
    const char *code = NULL, *text = NULL;
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR_CODE, &code);
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR, &text);
    gf_wire_reply_check(code, text, (const uint8_t *)natsMsg_GetData(reply),
                        (size_t)natsMsg_GetDataLength(reply), e);
    if (e->code == 0 && out && desc) {
        *out = protobuf_c_message_unpack(desc, NULL, (size_t)natsMsg_GetDataLength(reply),
                                         (const uint8_t *)natsMsg_GetData(reply));
        assert_non_null(*out);
    }
    natsMsg_Destroy(reply);
    return e->code;
}

int mm_call(gf_fnenv *env, const char *subject, const void *body, size_t len,
            const ProtobufCMessageDescriptor *desc, ProtobufCMessage **out, char *field,
            size_t field_size)
{
    gf_wire_error e;
    int code = call(env, subject, body, len, 5000, desc, out, &e);
    if (field && field_size)
        snprintf(field, field_size, "%s", code > 0 ? e.field : "");
    return code;
}

int mm_create(gf_fnenv *env, const mm_ticket *t, Gamefn__V1__CreateTicketReply **out, char *field,
              size_t field_size)
{
    gf_wire_error e;
    int code = mm_create_err(env, t, 5000, out, &e);
    if (field && field_size)
        snprintf(field, field_size, "%s", code > 0 ? e.field : "");
    return code;
}

int mm_create_err(gf_fnenv *env, const mm_ticket *t, int timeout_ms,
                  Gamefn__V1__CreateTicketReply **out, gf_wire_error *e)
{
    Gamefn__V1__CreateTicketRequest r = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    Gamefn__V1__PartyMember m[4], *mp[4];
    Gamefn__V1__DatacenterPing pg[8], *pp[8];
    char dcs[8][40];
    r.idempotency_key = (char *)(uintptr_t)t->key;
    r.queue = (char *)(uintptr_t)t->queue;
    for (size_t i = 0; i < t->nplayers; i++) {
        m[i] = (Gamefn__V1__PartyMember)GAMEFN__V1__PARTY_MEMBER__INIT;
        m[i].player_id = (char *)(uintptr_t)t->players[i];
        m[i].rating = t->rating;
        mp[i] = &m[i];
    }
    r.n_members = t->nplayers;
    r.members = mp;
    char list[256];
    snprintf(list, sizeof list, "%s", t->pings ? t->pings : "eu-west:20");
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && n < 8;
         tok = strtok_r(NULL, ",", &save)) {
        unsigned ms = 0;
        pg[n] = (Gamefn__V1__DatacenterPing)GAMEFN__V1__DATACENTER_PING__INIT;
        sscanf(tok, "%39[^:]:%u", dcs[n], &ms);
        pg[n].datacenter = dcs[n];
        pg[n].ping_ms = ms;
        pp[n] = &pg[n];
        n++;
    }
    r.n_pings = n;
    r.pings = pp;
    uint8_t buf[4096];
    size_t len = gamefn__v1__create_ticket_request__pack(&r, buf);
    return call(env, GF_WIRE_SUBJ_TICKET_CREATE, buf, len, timeout_ms,
                &gamefn__v1__create_ticket_reply__descriptor, (ProtobufCMessage **)out, e);
}

/* cancel and get: a request with only ticket_id; the reply's status. */
static int id_call(gf_fnenv *env, const char *subject, const char *id,
                   Gamefn__V1__TicketStatus **out)
{
    Gamefn__V1__GetTicketRequest r = GAMEFN__V1__GET_TICKET_REQUEST__INIT; /* same layout */
    r.ticket_id = (char *)(uintptr_t)id;
    uint8_t buf[256];
    size_t len = gamefn__v1__get_ticket_request__pack(&r, buf);
    ProtobufCMessage *m = NULL;
    int code =
        mm_call(env, subject, buf, len, &gamefn__v1__get_ticket_reply__descriptor, &m, NULL, 0);
    *out = NULL;
    if (m) { /* CancelTicketReply and GetTicketReply are both {status = 1} */
        Gamefn__V1__GetTicketReply *g = (Gamefn__V1__GetTicketReply *)m;
        *out = g->status;
        g->status = NULL;
        protobuf_c_message_free_unpacked(m, NULL);
    }
    return code;
}

int mm_cancel(gf_fnenv *env, const char *ticket_id, Gamefn__V1__TicketStatus **out)
{
    return id_call(env, GF_WIRE_SUBJ_TICKET_CANCEL, ticket_id, out);
}

int mm_get(gf_fnenv *env, const char *ticket_id, Gamefn__V1__TicketStatus **out)
{
    return id_call(env, GF_WIRE_SUBJ_TICKET_GET, ticket_id, out);
}

int mm_state(gf_fnenv *env, const char *id)
{
    int state = 0;
    for (int attempt = 0; attempt < 3 && state == 0; attempt++) { /* a reply lost under load */
        Gamefn__V1__TicketStatus *st = NULL;
        int code = mm_get(env, id, &st);
        if (code == 0 && st)
            state = st->state;
        if (st)
            gamefn__v1__ticket_status__free_unpacked(st, NULL);
        if (code >= 0)
            break;
    }
    return state;
}

uint64_t mm_bucket_seq(gf_fnenv *env, const char *bucket)
{
    char name[128];
    jsStreamInfo *si = NULL;
    snprintf(name, sizeof name, "KV_%s", bucket);
    assert_int_equal(js_GetStreamInfo(&si, env->js, name, NULL, NULL), NATS_OK);
    uint64_t seq = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return seq;
}

/* ---- pushes ------------------------------------------------------------------------ */

struct mm_pushes {
    natsSubscription *sub;
    mm_push *items;
    size_t n, cap;
};

mm_pushes *mm_pushes_start(gf_fnenv *env)
{
    mm_pushes *p = calloc(1, sizeof *p);
    assert_non_null(p);
    assert_int_equal(natsConnection_SubscribeSync(&p->sub, env->nc, "gamefn.v1.ticket.status.>"),
                     NATS_OK);
    natsSubscription_SetPendingLimits(p->sub, -1, -1);
    assert_int_equal(natsConnection_Flush(env->nc), NATS_OK);
    return p;
}

static void drain(mm_pushes *p, int timeout_ms)
{
    natsMsg *m = NULL;
    while (natsSubscription_NextMsg(&m, p->sub, timeout_ms) == NATS_OK) {
        Gamefn__V1__TicketStatus *st = gamefn__v1__ticket_status__unpack(
            NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
        if (st) {
            if (p->n == p->cap) {
                p->cap = p->cap ? p->cap * 2 : 256;
                p->items = realloc(p->items, p->cap * sizeof *p->items);
                assert_non_null(p->items);
            }
            mm_push *it = &p->items[p->n++];
            snprintf(it->id, sizeof it->id, "%s", st->ticket_id);
            it->state = st->state;
            it->reason = st->reason;
            it->has_limits = st->limits != NULL;
            it->skill_gap = st->limits ? st->limits->skill_gap : 0;
            it->ping_ms = st->limits ? st->limits->ping_ms : 0;
            it->skill_ignored = st->limits && st->limits->skill_ignored;
            it->estimated_wait_ms = st->estimated_wait_ms;
            gamefn__v1__ticket_status__free_unpacked(st, NULL);
        }
        natsMsg_Destroy(m);
        timeout_ms = 0;
    }
}

bool mm_pushes_wait(mm_pushes *p, const char *id, int state, int reason, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        drain(p, 50);
        for (size_t i = 0; i < p->n; i++) {
            if (strcmp(p->items[i].id, id) == 0 && p->items[i].state == state &&
                (reason == 0 || p->items[i].reason == reason))
                return true;
        }
    }
    return false;
}

bool mm_pushes_last(mm_pushes *p, const char *id, mm_push *out)
{
    drain(p, 0);
    for (size_t i = p->n; i-- > 0;) {
        if (strcmp(p->items[i].id, id) == 0) {
            *out = p->items[i];
            return true;
        }
    }
    return false;
}

size_t mm_pushes_count(mm_pushes *p, const char *id)
{
    size_t n = 0;
    drain(p, 0);
    for (size_t i = 0; i < p->n; i++)
        n += strcmp(p->items[i].id, id) == 0;
    return n;
}

void mm_pushes_free(mm_pushes *p)
{
    if (!p)
        return;
    natsSubscription_Destroy(p->sub);
    free(p->items);
    free(p);
}
