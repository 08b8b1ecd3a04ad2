/*
 * tickets.c — the ticket clients: create, follow, cancel, resubmit (see playsim.h).
 *
 * Design notes:
 * - Requests are published with a reply subject of our own, _INBOX.ps<nonce>.<kind>.<i>
 *   (kind c create, r resubmit, x cancel, g get; i the ticket's index), all answered on
 *   one subscription: no thread or inbox per ticket.
 * - A ticket's id is known before it is created: BLAKE2b-128 of the idempotency key
 *   (PROTOCOL.md §6), so a status push that overtakes the create reply is not lost.
 *   The reply's id is compared with it (id_mismatch counts differences).
 * - Statuses are kept by revision: only a higher revision changes a ticket (§6 "Status
 *   pushes"). A create that gets no answer in 2 s is sent again, unchanged, with the
 *   same key; CONFLICT is retried after its retry_after_ms; UNAVAILABLE and TIMEOUT
 *   after 1 s. Any other refusal ends the ticket FAILED and is shown.
 */
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/subjects.h"
#include "gamefn/util.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "gamefn/wire_error.h"
#include "playsim.h"

enum {
    MAX_IN_FLIGHT = 256, /* creates outstanding at once */
    ANSWER_MS = 2000,    /* a request unanswered this long is sent again */
    SILENCE_MS = 10000,  /* a ticket.get after this long without a status */
    RETRY_MS = 1000,
};

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x

static int64_t mono(void)
{
    return gf_clock_mono_ms();
}

static bool terminal(uint8_t s)
{
    return s >= PT_ASSIGNED;
}

static void ticket_id_of(const char *key, char out[33])
{
    unsigned char h[16];
    crypto_generichash(h, sizeof h, (const unsigned char *)key, strlen(key), NULL, 0);
    sodium_bin2hex(out, 33, h, sizeof h);
}

static void player_id(const gf_play *p, const play_ticket *t, uint32_t k, char *buf, size_t size)
{
    snprintf(buf, size, "%sp%llu-%u%s", p->nonce, (unsigned long long)t->serial, k,
             t->twin ? "x" : "");
}

/* ---- sending ------------------------------------------------------------------------ */

static void publish(gf_play *p, const char *subject, char kind, size_t index,
                    const ProtobufCMessage *req)
{
    uint8_t buf[4096];
    size_t len = protobuf_c_message_get_packed_size(req);
    if (len > sizeof buf)
        return;
    protobuf_c_message_pack(req, buf);
    char reply[96];
    snprintf(reply, sizeof reply, "_INBOX.ps%s.%c.%zu", p->nonce, kind, index);
    natsConnection_PublishRequest(p->nc, subject, reply, buf, (int)len);
}

/* The create request of ticket i (kind c), or its resubmit (kind r: another key, the
 * same players: a double-tapped "find match"). Under mu. */
static void send_create(gf_play *p, size_t i, char kind, int64_t now)
{
    play_ticket *t = &p->t[i];
    Gamefn__V1__PartyMember m[PLAY_MAX_PARTY], *mp[PLAY_MAX_PARTY];
    Gamefn__V1__DatacenterPing g[PLAY_MAX_DCS], *gp[PLAY_MAX_DCS];
    char ids[PLAY_MAX_PARTY][PLAY_ID], key[48];
    for (uint32_t k = 0; k < t->players; k++) {
        m[k] = (Gamefn__V1__PartyMember)GAMEFN__V1__PARTY_MEMBER__INIT;
        player_id(p, t, k, ids[k], sizeof ids[k]);
        m[k].player_id = ids[k];
        m[k].rating = t->skill[k];
        m[k].sigma = t->sigma[k];
        mp[k] = &m[k];
    }
    size_t n = 0;
    for (size_t d = 0; d < p->n_dcs; d++) {
        if (t->ping[d] == 0xffff)
            continue;
        g[n] = (Gamefn__V1__DatacenterPing)GAMEFN__V1__DATACENTER_PING__INIT;
        g[n].datacenter = p->dcs[d];
        g[n].ping_ms = t->ping[d];
        gp[n] = &g[n];
        n++;
    }
    snprintf(key, sizeof key, "%s%s", t->key, kind == 'r' ? "r" : "");
    Gamefn__V1__CreateTicketRequest r = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    r.idempotency_key = key;
    r.queue = p->queues[t->queue].name;
    r.n_members = t->players;
    r.members = mp;
    r.n_pings = n;
    r.pings = gp;
    publish(p, GF_WIRE_SUBJ_TICKET_CREATE, kind, i, &r.base);
    if (kind == 'r')
        return;
    if (t->state == PT_NEW) {
        t->state = PT_SENT;
        t->submit_ms = now;
        t->heard_ms = now;
        p->in_flight++;
    } else {
        p->resends++;
    }
    t->resend_ms = now + ANSWER_MS;
}

static void send_simple(gf_play *p, size_t i, char kind)
{
    if (kind == 'x') {
        Gamefn__V1__CancelTicketRequest r = GAMEFN__V1__CANCEL_TICKET_REQUEST__INIT;
        r.ticket_id = p->t[i].id;
        publish(p, GF_WIRE_SUBJ_TICKET_CANCEL, kind, i, &r.base);
    } else {
        Gamefn__V1__GetTicketRequest r = GAMEFN__V1__GET_TICKET_REQUEST__INIT;
        r.ticket_id = p->t[i].id;
        publish(p, GF_WIRE_SUBJ_TICKET_GET, kind, i, &r.base);
        p->gets++;
    }
}

/* ---- arrivals ----------------------------------------------------------------------- */

/* The matchmaking region of the best measured datacenter (ties: the first listed). */
static int8_t region_of(const gf_play *p, const play_ticket *t)
{
    int best = -1;
    for (size_t d = 0; d < p->n_dcs; d++)
        if (t->ping[d] != 0xffff && (best < 0 || t->ping[d] < t->ping[best]))
            best = (int)d;
    return (int8_t)(best < 0 ? -1 : p->dc_region[best]);
}

static play_ticket *add(gf_play *p, const gf_arrival *a, size_t queue, bool twin, int64_t now)
{
    play_ticket *v = gf_grow(p->t, &p->cap_t, p->n_t + 1, sizeof *v);
    if (!v)
        return NULL;
    p->t = v;
    play_ticket *t = &p->t[p->n_t];
    memset(t, 0, sizeof *t);
    t->serial = a->serial;
    t->queue = (uint16_t)queue;
    t->twin = twin;
    t->dc = -1;
    snprintf(t->key, sizeof t->key, "%s-%llu%s", p->nonce, (unsigned long long)a->serial,
             twin ? "x" : "");
    ticket_id_of(t->key, t->id);
    t->players = (uint8_t)(a->t->players_len < PLAY_MAX_PARTY ? a->t->players_len : PLAY_MAX_PARTY);
    for (uint32_t k = 0; k < t->players; k++) {
        t->skill[k] = (float)a->t->players[k].skill;
        t->sigma[k] = (float)a->t->players[k].sigma;
    }
    size_t n_pop = 0;
    const gf_match_dc *pop = gf_pop_datacenters(&n_pop);
    memset(t->ping, 0xff, sizeof t->ping);
    t->best_ping = 0xffff;
    for (size_t i = 0; i < a->t->pings_len; i++) {
        const char *name = a->t->pings[i].dc < n_pop ? pop[a->t->pings[i].dc].name : "";
        for (size_t d = 0; d < p->n_dcs; d++)
            if (strcmp(p->dcs[d], name) == 0) {
                double ms = ceil(a->t->pings[i].ms);
                t->ping[d] = (uint16_t)(ms < 0 ? 0 : ms > 5000 ? 5000 : ms);
                if (t->ping[d] < t->best_ping)
                    t->best_ping = t->ping[d];
            }
    }
    t->region = region_of(p, t);
    t->patience_at = now + a->info->patience_ms;
    t->resubmit_at = a->info->resubmit_ms >= 0 && !twin ? now + a->info->resubmit_ms : 0;
    if (t->best_ping == 0xffff ||
        gf_play_index_put(&p->t_index, gf_play_key(t->id), (uint32_t)(p->n_t + 1)) != GF_OK)
        return NULL;
    p->n_t++;
    return t;
}

void gf_play_tickets_arrive(gf_play *p, const gf_arrival *a)
{
    int64_t now = mono();
    size_t q = p->arr_to_queue[a->queue];
    pthread_mutex_lock(&p->mu);
    play_ticket *t = add(p, a, q, false, now);
    /* The low-population region's players play twice: the twin queue never merges. */
    if (t && t->region == p->low_region && p->queues[q].twin >= 0)
        add(p, a, (size_t)p->queues[q].twin, true, now);
    pthread_mutex_unlock(&p->mu);
}

/* ---- statuses ----------------------------------------------------------------------- */

static uint8_t state_of(int s)
{
    switch (s) {
    case ST(QUEUED):
        return PT_QUEUED;
    case ST(CLAIMED):
        return PT_CLAIMED;
    case ST(ASSIGNED):
        return PT_ASSIGNED;
    case ST(CANCELLED):
        return PT_CANCELLED;
    case ST(TIMED_OUT):
        return PT_TIMED_OUT;
    default:
        return PT_NEW;
    }
}

static int dc_index(const gf_play *p, const char *name)
{
    for (size_t d = 0; name && d < p->n_dcs; d++)
        if (strcmp(p->dcs[d], name) == 0)
            return (int)d;
    return -1;
}

/* A status from a push or a reply. Under mu. */
static void apply_status(gf_play *p, play_ticket *t, const Gamefn__V1__TicketStatus *st,
                         int64_t now)
{
    uint8_t s = state_of(st->state);
    if (s == PT_NEW || (t->revision && st->revision <= t->revision) || terminal(t->state))
        return;
    if (t->state == PT_SENT && p->in_flight > 0)
        p->in_flight--; /* the push overtook the reply: the create is answered */
    t->revision = st->revision;
    t->heard_ms = now;
    uint32_t match = st->match_id && st->match_id[0] ? gf_play_match_ref(p, st->match_id) : 0;
    if (t->match && t->match != match && (s == PT_QUEUED || s == PT_CLAIMED))
        gf_play_match_dropped(p, t->match); /* back in the pool: that match is off */
    if (match && t->match != match && (s == PT_CLAIMED || s == PT_ASSIGNED)) {
        play_match *m = &p->m[match - 1];
        if (m->n_tix < sizeof m->tix / sizeof m->tix[0])
            m->tix[m->n_tix++] = (uint32_t)(t - p->t);
    }
    t->match = s == PT_QUEUED ? 0 : match;
    t->state = s;
    if (!terminal(s))
        return;
    t->end_ms = now;
    if (s == PT_ASSIGNED && st->assignment) {
        t->dc = (int8_t)dc_index(p, st->assignment->datacenter);
        if (match)
            gf_play_match_assigned(p, match, st->assignment->assigned_unix_ms, t->dc);
    }
    gf_play_ticket_record(p, t, now);
}

static play_ticket *find(gf_play *p, const char *id)
{
    uint32_t i = id ? gf_play_index_get(&p->t_index, gf_play_key(id)) : 0;
    return i && i <= p->n_t && strcmp(p->t[i - 1].id, id) == 0 ? &p->t[i - 1] : NULL;
}

static void on_status(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    gf_play *p = closure;
    Gamefn__V1__TicketStatus *st = gamefn__v1__ticket_status__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    int64_t now = mono();
    pthread_mutex_lock(&p->mu);
    p->status_msgs++;
    play_ticket *t = st ? find(p, st->ticket_id) : NULL;
    if (t)
        apply_status(p, t, st, now);
    else
        p->unknown_status++; /* another client's ticket (an earlier run's) */
    pthread_mutex_unlock(&p->mu);
    gamefn__v1__ticket_status__free_unpacked(st, NULL);
    natsMsg_Destroy(m);
}

/* ---- replies ------------------------------------------------------------------------ */

static void refused(gf_play *p, play_ticket *t, const gf_wire_error *e, int64_t now)
{
    t->state = PT_FAILED;
    t->end_ms = now;
    p->refused++;
    snprintf(p->last_refusal, sizeof p->last_refusal, "%s: %s", gf_wire_code_name(e->code),
             e->message);
    gf_play_ticket_record(p, t, now);
}

static void on_create(gf_play *p, play_ticket *t, gf_err err, const gf_wire_error *e, natsMsg *m,
                      int64_t now)
{
    if (t->state != PT_SENT)
        return; /* a late duplicate answer, or the push came first */
    if (err == GF_ERR_CONFLICT || err == GF_ERR_UNAVAILABLE || err == GF_ERR_TIMEOUT) {
        t->resend_ms = now + (e->retry_after_ms ? e->retry_after_ms : RETRY_MS);
        return;
    }
    if (p->in_flight > 0)
        p->in_flight--;
    if (err != GF_OK) {
        refused(p, t, e, now);
        return;
    }
    Gamefn__V1__CreateTicketReply *r = gamefn__v1__create_ticket_reply__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    if (!r || !r->status) {
        t->state = PT_QUEUED; /* undecodable: follow it by its statuses */
    } else {
        p->created++;
        p->replayed += r->replayed;
        p->id_mismatch += strcmp(r->ticket_id, t->id) != 0;
        t->state = PT_QUEUED;
        apply_status(p, t, r->status, now);
    }
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

static void on_resubmit(gf_play *p, play_ticket *t, gf_err err, natsMsg *m)
{
    if (err == GF_ERR_CONFLICT || err == GF_ERR_UNAVAILABLE || err == GF_ERR_TIMEOUT) {
        t->resubmitted = false; /* try again on a later tick */
        t->resubmit_at = mono() + RETRY_MS;
        return;
    }
    Gamefn__V1__CreateTicketReply *r =
        err == GF_OK
            ? gamefn__v1__create_ticket_reply__unpack(NULL, (size_t)natsMsg_GetDataLength(m),
                                                      (const uint8_t *)natsMsg_GetData(m))
            : NULL;
    /* One active ticket per player: the second submit must name the first ticket. */
    if (r && strcmp(r->ticket_id, t->id) == 0) {
        p->resubmit_same++;
    } else if (r) {
        /* The first ticket ended (matched) before the second tap arrived, so this one is
         * new: the player closes it at once (the reply to this cancel is ignored). */
        p->resubmit_other++;
        Gamefn__V1__CancelTicketRequest c = GAMEFN__V1__CANCEL_TICKET_REQUEST__INIT;
        c.ticket_id = r->ticket_id;
        publish(p, GF_WIRE_SUBJ_TICKET_CANCEL, 'y', (size_t)(t - p->t), &c.base);
    }
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

static void on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    gf_play *p = closure;
    const char *subject = natsMsg_GetSubject(m), *dot = strrchr(subject, '.');
    char kind = dot && dot - subject >= 2 ? dot[-1] : 0;
    size_t i = dot ? strtoull(dot + 1, NULL, 10) : SIZE_MAX;
    const char *code = NULL, *text = NULL;
    natsMsgHeader_Get(m, GF_WIRE_HDR_ERROR_CODE, &code);
    natsMsgHeader_Get(m, GF_WIRE_HDR_ERROR, &text);
    gf_wire_error e;
    gf_err err = natsMsg_IsNoResponders(m)
                     ? GF_ERR_UNAVAILABLE
                     : gf_wire_reply_check(code, text, (const uint8_t *)natsMsg_GetData(m),
                                           (size_t)natsMsg_GetDataLength(m), &e);
    if (natsMsg_IsNoResponders(m))
        memset(&e, 0, sizeof e);
    int64_t now = mono();
    pthread_mutex_lock(&p->mu);
    play_ticket *t = i < p->n_t ? &p->t[i] : NULL;
    if (t && kind == 'c') {
        on_create(p, t, err, &e, m, now);
    } else if (t && kind == 'r') {
        on_resubmit(p, t, err, m);
    } else if (t && (kind == 'x' || kind == 'g') && err == GF_OK) {
        Gamefn__V1__GetTicketReply *r = gamefn__v1__get_ticket_reply__unpack(
            NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
        /* Cancel and get replies both carry field 1 = TicketStatus. */
        if (r && r->status)
            apply_status(p, t, r->status, now);
        gamefn__v1__get_ticket_reply__free_unpacked(r, NULL);
    } else if (t && kind == 'x' && err == GF_ERR_PERMANENT) {
        send_simple(p, i, 'g'); /* FAILED_PRECONDITION: ASSIGNED or TIMED_OUT; read it */
    }
    pthread_mutex_unlock(&p->mu);
    natsMsg_Destroy(m);
}

gf_err gf_play_tickets_start(gf_play *p)
{
    char inbox[64];
    snprintf(inbox, sizeof inbox, "_INBOX.ps%s.>", p->nonce);
    if (natsConnection_Subscribe(&p->replies, p->nc, inbox, on_reply, p) != NATS_OK ||
        natsConnection_Subscribe(&p->statuses, p->nc, GF_WIRE_SUBJ_TICKET_STATUS ".>", on_status,
                                 p) != NATS_OK)
        return GF_ERR_NATS;
    natsSubscription_SetPendingLimits(p->replies, -1, -1);
    natsSubscription_SetPendingLimits(p->statuses, -1, -1);
    return natsConnection_Flush(p->nc) == NATS_OK ? GF_OK : GF_ERR_UNAVAILABLE;
}

/* ---- timers ------------------------------------------------------------------------- */

void gf_play_tickets_tick(gf_play *p, int64_t now, bool arrivals_over)
{
    (void)arrivals_over;
    pthread_mutex_lock(&p->mu);
    while (p->next_send < p->n_t && p->in_flight < MAX_IN_FLIGHT)
        send_create(p, p->next_send++, 'c', now);
    while (p->live_from < p->n_t && terminal(p->t[p->live_from].state))
        p->live_from++;
    for (size_t i = p->live_from; i < p->next_send; i++) {
        play_ticket *t = &p->t[i];
        if (terminal(t->state))
            continue;
        if (t->state == PT_SENT && now >= t->resend_ms) {
            send_create(p, i, 'c', now);
        } else if (t->resubmit_at && !t->resubmitted && now >= t->resubmit_at) {
            t->resubmitted = true;
            p->resubmits++;
            send_create(p, i, 'r', now);
        } else if (!t->cancel_sent && now >= t->patience_at && t->state != PT_SENT) {
            t->cancel_sent = true; /* the player gave up waiting */
            t->resend_ms = now + ANSWER_MS;
            send_simple(p, i, 'x');
        } else if (t->cancel_sent && now >= t->resend_ms) {
            t->resend_ms = now + ANSWER_MS;
            send_simple(p, i, 'x');
        } else if (now - t->heard_ms >= SILENCE_MS && t->state != PT_SENT) {
            t->heard_ms = now; /* asked: at most one get per silence period */
            send_simple(p, i, 'g');
        }
    }
    pthread_mutex_unlock(&p->mu);
}

size_t gf_play_tickets_live(gf_play *p)
{
    size_t n = 0;
    pthread_mutex_lock(&p->mu);
    for (size_t i = p->live_from; i < p->n_t; i++)
        n += !terminal(p->t[i].state);
    pthread_mutex_unlock(&p->mu);
    return n;
}

void gf_play_tickets_cancel_all(gf_play *p, int64_t now)
{
    pthread_mutex_lock(&p->mu);
    p->n_t = p->next_send; /* arrivals never sent: these players never asked */
    for (size_t i = p->live_from; i < p->n_t; i++) {
        play_ticket *t = &p->t[i];
        if (terminal(t->state) || t->cancel_sent)
            continue;
        t->patience_at = now; /* the tick sends the cancel (and repeats it if unanswered) */
    }
    pthread_mutex_unlock(&p->mu);
}
