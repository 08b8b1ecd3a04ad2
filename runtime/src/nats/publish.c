/*
 * publish.c — the reliable JetStream publisher (see gamefn/publish.h).
 *
 * Design notes:
 * - Own bookkeeping, not nats.c's async publish. nats.c 3.4.1 offers
 *   js_PublishMsgAsync with a per-message MaxWait timer and an ack handler, but it
 *   does not fit a publisher that must resend through a failover: (1) its stall on
 *   PublishAsync.MaxPending waits for acks that only the ack-handler thread
 *   delivers, so a resend from that handler (or from any callback that publishes)
 *   can stall on itself; (2) the ack handler gets back only the natsMsg, so finding
 *   our per-message state needs a second map next to nats.c's own reply map; (3)
 *   once a message timed out, nats.c drops its late ack, though a late success is
 *   exactly the answer that settles an uncertain message; (4) its PubAck parser
 *   drops the API error's "code", and 503 without an err_code is how nats-server
 *   2.9.10 reports a failed proposal (retryable); (5) js_PublishAsyncGetPendingList
 *   hands messages back without their reply state. So each message here is a core
 *   publish with a reply subject under a private inbox prefix,
 *   "<inbox>.<nuid>.<slot>.<serial>.<attempt>", one wildcard subscription reads the
 *   answers (parsed with jansson, publish_reply.c), and the slot index in the reply
 *   finds the message in O(1). Measured against nats.c's async publish in the same
 *   run by `gamefn-bench raw` (docs/BENCHMARKS.md).
 * - One mutex guards every slot and list. The first attempt is published under it
 *   (nats.c's publish only appends to its buffer, or writes with SendAsap), so an
 *   answer can never find a slot half-sent. Callbacks run without it.
 * - Slots: a slot lives from acceptance until its callback has returned, so the
 *   window counts callbacks too and a flush sees their effects. Three intrusive
 *   lists: `admitted` (every live slot, in acceptance order: flush and give-up
 *   deadlines), `awaiting` (an attempt is out, in send order: since the attempt
 *   timeout is one constant, the head is always the next to time out) and `backoff`
 *   (waiting for a resend or a CAS lookup; scanned, it holds at most the window).
 * - Answers: a success from any attempt of the message settles it (an earlier
 *   attempt's late ack means it is stored). An error counts only if it answers the
 *   attempt now out; an older attempt's error is stale and dropped.
 * - The retry thread times attempts out, gives messages up, resends after backoff
 *   and does CAS lookups (publish_lookup.c), sleeping until the earliest of these.
 * - A sender waiting for room is woken once a sixteenth of the window is free, not
 *   per answer: a wake per message costs a context switch per message (measured:
 *   0.6 of nats.c's async rate with it, about 1.0 without).
 * - A thread-local depth marks "inside a callback", so a send from a callback never
 *   waits for room (that would wait on itself) and flush/sync refuse there.
 * - Close unsubscribes, then flushes before it frees the reply subscription: nats.c
 *   3.4.1's read loop may still be inside an answer it matched to that subscription
 *   (docs/NATS-FACTS.md §4), and reads the flush's PONG only after it.
 * - Files: this one is the API (open, close, sends, flush); publish_flow.c what
 *   happens after a send (answers, the retry thread); publish_state.h their shared
 *   state; publish_reply.c and publish_lookup.c the pure parsing and the lookup.
 */
#include "gamefn/publish.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "nats_err.h"
#include "publish_state.h"

/* What a send asks for, before it has a slot. */
typedef struct outgoing {
    const char *subject;
    const void *data;
    size_t len;
    const char *msg_id; /* NULL: generated */
    const char *keys[GF_PUBLISH_HEADERS_MAX + 1], *values[GF_PUBLISH_HEADERS_MAX + 1];
    size_t n;
    bool cas;
    gf_publish_cas_kind kind;
    uint64_t expected;
    gf_publish_done_fn done;
    void *closure;
} outgoing;

static int64_t deadline_after(int64_t now, int64_t ms)
{
    return ms < 0 ? INT64_MAX : now + ms;
}

/* ---- open / close ------------------------------------------------------- */

static gf_err opts_resolve(const gf_publish_opts *in, gf_publish_opts *o)
{
    *o = in ? *in : (gf_publish_opts){0};
    if (o->max_in_flight == 0)
        o->max_in_flight = GF_PUBLISH_WINDOW_DEFAULT;
    if (o->give_up_ms == 0)
        o->give_up_ms = GF_PUBLISH_GIVE_UP_MS_DEFAULT;
    if (o->attempt_timeout_ms == 0)
        o->attempt_timeout_ms = GF_PUBLISH_ATTEMPT_MS_DEFAULT;
    if (o->backoff_min_ms == 0)
        o->backoff_min_ms = GF_PUBLISH_BACKOFF_MIN_MS_DEFAULT;
    if (o->backoff_max_ms == 0)
        o->backoff_max_ms = GF_PUBLISH_BACKOFF_MAX_MS_DEFAULT;
    if (o->send_wait_ms == 0)
        o->send_wait_ms = o->give_up_ms;
    if (!o->inbox_prefix)
        o->inbox_prefix = "_INBOX";
    if (!o->api_prefix)
        o->api_prefix = "$JS.API";
    const int64_t day = 86400000;
    if (o->max_in_flight < 0 || o->max_in_flight > MAX_WINDOW || o->give_up_ms < 0 ||
        o->give_up_ms > day || o->attempt_timeout_ms < 0 || o->attempt_timeout_ms > day ||
        o->backoff_min_ms < 0 || o->backoff_max_ms < o->backoff_min_ms || o->backoff_max_ms > day ||
        o->send_wait_ms > day || !gf_name_subject_ok(o->inbox_prefix, false, NULL, 0) ||
        !gf_name_subject_ok(o->api_prefix, false, NULL, 0) || strlen(o->inbox_prefix) > 48 ||
        strlen(o->api_prefix) > 48)
        return GF_ERR_INVALID;
    return GF_OK;
}

static void publish_free(gf_publish *p)
{
    for (uint32_t i = 0; i < p->nslots; i++) {
        natsMsg_Destroy(p->slots[i]->msg);
        free(p->slots[i]);
    }
    free(p->slots);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->room);
    pthread_cond_destroy(&p->drained);
    pthread_cond_destroy(&p->wake);
    free(p);
}

gf_err gf_publish_open(natsConnection *nc, const gf_publish_opts *opts, gf_publish **out)
{
    *out = NULL;
    gf_publish_opts o;
    if (!nc || opts_resolve(opts, &o) != GF_OK)
        return GF_ERR_INVALID;
    if (natsConnection_IsClosed(nc))
        return GF_ERR_UNAVAILABLE;
    if (sodium_init() < 0)
        return GF_ERR_NOMEM;
    gf_publish *p = calloc(1, sizeof *p);
    if (!p)
        return GF_ERR_NOMEM;
    p->nc = nc;
    p->o = o;
    p->worker_due = INT64_MIN;
    p->cap = (uint32_t)o.max_in_flight;
    p->room_batch = o.max_in_flight / 16 > 0 ? o.max_in_flight / 16 : 1;
    p->slots = calloc(p->cap, sizeof *p->slots);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->room, &ca);
    pthread_cond_init(&p->drained, &ca);
    pthread_cond_init(&p->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (!p->slots) {
        publish_free(p);
        return GF_ERR_NOMEM;
    }
    /* natsInbox_Create gives "_INBOX.<nuid>": the nuid makes our prefix private. */
    natsInbox *inbox = NULL;
    natsStatus st = natsInbox_Create(&inbox);
    if (st == NATS_OK) {
        const char *nuid = strrchr(inbox, '.');
        snprintf(p->nuid, sizeof p->nuid, "%s", nuid ? nuid + 1 : inbox);
        natsInbox_Destroy(inbox);
        snprintf(p->reply_prefix, sizeof p->reply_prefix, "%s.%s", o.inbox_prefix, p->nuid);
        p->reply_prefix_len = strlen(p->reply_prefix);
        snprintf(p->api_prefix, sizeof p->api_prefix, "%s", o.api_prefix);
        p->max_payload = natsConnection_GetMaxPayload(nc);
        char wildcard[128];
        snprintf(wildcard, sizeof wildcard, "%s.*.*.*", p->reply_prefix);
        st = natsConnection_Subscribe(&p->sub, nc, wildcard, gf__pub_on_reply, p);
    }
    if (st == NATS_OK) /* an answer dropped as "slow consumer" would cost a resend */
        st = natsSubscription_SetPendingLimits(p->sub, -1, -1);
    if (st == NATS_OK)
        st = natsSubscription_SetOnCompleteCB(p->sub, gf__pub_on_sub_done, p);
    if (st == NATS_OK && pthread_create(&p->worker, NULL, gf__pub_worker_main, p) != 0)
        st = NATS_NO_MEMORY;
    if (st != NATS_OK) {
        if (p->sub) {
            natsSubscription_Unsubscribe(p->sub);
            natsSubscription_Destroy(p->sub);
            /* No answer can be due yet; an unexpected message would find no slot. */
        }
        publish_free(p);
        return gf_nats_err(st);
    }
    *out = p;
    return GF_OK;
}

void gf_publish_close(gf_publish *p, int64_t timeout_ms)
{
    if (!p)
        return;
    if (gf__pub_in_callback()) {
        gf_log_error("gf_publish_close called from a publish callback", NULL);
        abort();
    }
    pthread_mutex_lock(&p->mu);
    p->closing = true;
    pthread_cond_broadcast(&p->room);
    int64_t deadline = deadline_after(gf_clock_mono_ms(), timeout_ms);
    while (p->in_flight > 0 && gf_clock_mono_ms() < deadline)
        gf__pub_cond_wait_until(&p->drained, &p->mu, deadline);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->worker, NULL);

    /* After the subscription's last callback has returned, no answer touches p. */
    natsSubscription_Unsubscribe(p->sub);
    bool sub_free_ok = gf_sub_unsubscribed_passed(p->nc, SUB_GONE_WAIT_MS);
    pthread_mutex_lock(&p->mu);
    int64_t gone_by = gf_clock_mono_ms() + SUB_GONE_WAIT_MS;
    while (!p->sub_done && gf_clock_mono_ms() < gone_by)
        gf__pub_cond_wait_until(&p->drained, &p->mu, gone_by);
    if (!p->sub_done) {
        pthread_mutex_unlock(&p->mu);
        gf_log_error("publisher: nats.c never finished its reply subscription; leaking it", NULL);
        return;
    }
    pub_slot *batch = NULL;
    int open = 0;
    for (pub_slot *s = p->admitted.head; s; s = s->adm.next) {
        if (s->state == SLOT_AWAITING || s->state == SLOT_BACKOFF) {
            gf__pub_finish(p, s, GF_ERR_UNAVAILABLE, &batch);
            open++;
        }
    }
    pthread_mutex_unlock(&p->mu);
    if (open > 0)
        gf_log_warn("publisher closed with messages unanswered", "open=%d outcome=unknown", open);
    gf__pub_run_batch(p, batch);

    pthread_mutex_lock(&p->mu); /* senders and flushers still inside return promptly */
    while (p->users > 0)
        pthread_cond_wait(&p->drained, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (sub_free_ok)
        natsSubscription_Destroy(p->sub);
    else
        gf_log_error("publisher: no flush answered after unsubscribing; leaking the reply "
                     "subscription nats.c's read loop may still use",
                     NULL);
    publish_free(p);
}

static natsMsg *msg_build(const outgoing *og, const char *reply, const char *msg_id)
{
    natsMsg *m = NULL;
    natsStatus st = natsMsg_Create(&m, og->subject, reply, og->data, (int)og->len);
    if (st == NATS_OK)
        st = natsMsgHeader_Set(m, HDR_MSG_ID, msg_id);
    for (size_t i = 0; st == NATS_OK && i < og->n; i++)
        st = natsMsgHeader_Add(m, og->keys[i], og->values[i]);
    if (st == NATS_OK && og->cas)
        st = gf__pub_set_expected(m, og->expected);
    if (st != NATS_OK) {
        natsMsg_Destroy(m);
        m = NULL;
    }
    return m;
}

/* ---- sending ------------------------------------------------------------ */

/* Unlocks an API call (lock held). */
static void user_leave(gf_publish *p)
{
    p->users--;
    if (p->closing)
        pthread_cond_broadcast(&p->drained);
    pthread_mutex_unlock(&p->mu);
}

/* Lock held: waits for room unless inside a callback. */
static gf_err wait_room(gf_publish *p)
{
    if (gf__pub_in_callback())
        return p->closing ? GF_ERR_UNAVAILABLE : GF_OK;
    int64_t deadline = deadline_after(gf_clock_mono_ms(), p->o.send_wait_ms);
    for (;;) {
        if (p->closing || (p->o.stop && atomic_load(p->o.stop)))
            return GF_ERR_UNAVAILABLE;
        if (p->in_flight < p->o.max_in_flight)
            return GF_OK;
        int64_t now = gf_clock_mono_ms();
        if (now >= deadline)
            return GF_ERR_TIMEOUT;
        /* Woken in batches (gf__pub_slot_release); the poll bounds the wait when answers are
         * slow, and notices *stop. */
        int64_t until = now + ROOM_POLL_MS;
        p->room_waiters++;
        gf__pub_cond_wait_until(&p->room, &p->mu, until < deadline ? until : deadline);
        p->room_waiters--;
    }
}

static gf_err admit(gf_publish *p, const outgoing *og)
{
    pthread_mutex_lock(&p->mu);
    p->users++;
    gf_err err = wait_room(p);
    pub_slot *s = err == GF_OK ? gf__pub_slot_take(p) : NULL;
    if (err == GF_OK && !s)
        err = GF_ERR_NOMEM;
    if (err != GF_OK) {
        user_leave(p);
        return err;
    }
    s->cas = og->cas;
    s->caller_id = og->cas && og->msg_id;
    s->kind = og->kind;
    s->expected = og->expected;
    s->done = og->done;
    s->closure = og->closure;
    pthread_mutex_unlock(&p->mu);

    /* Unlocked: nobody else touches a NEW slot. */
    char reply[REPLY_MAX], gen_id[64];
    gf__pub_reply_subject(p, s, reply, sizeof reply);
    const char *id = og->msg_id;
    if (!id) {
        snprintf(gen_id, sizeof gen_id, "%s-%" PRIu64, p->nuid, s->serial);
        id = gen_id;
    }
    natsMsg *m = msg_build(og, reply, id);

    pthread_mutex_lock(&p->mu);
    natsStatus st = NATS_NO_MEMORY;
    if (m && !p->stopping) {
        s->msg = m;
        st = gf__pub_transmit(p, s, gf_clock_mono_ms());
        if (st != NATS_OK && gf__pub_retryable(st)) {
            s->failures++;
            gf__pub_backoff(p, s, gf_clock_mono_ms(), false);
            st = NATS_OK;
        }
    } else if (m) {
        st = NATS_CONNECTION_CLOSED; /* closing: the retry thread is gone */
    }
    if (st == NATS_OK) {
        p->stats.sent++;
    } else {
        s->msg = NULL;
        natsMsg_Destroy(m);
        gf__pub_slot_release(p, s);
        /* Nothing was sent: the caller gets the error and no callback. */
        err = st == NATS_MAX_PAYLOAD ? GF_ERR_INVALID : gf_nats_err(st);
    }
    user_leave(p);
    return err;
}

static gf_err add_headers(outgoing *og, const gf_publish_header *h, size_t n,
                          const char *const *reserved)
{
    if (n > GF_PUBLISH_HEADERS_MAX || (n > 0 && !h))
        return GF_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        if (!gf__publish_header_ok(&h[i], reserved))
            return GF_ERR_INVALID;
        og->keys[og->n] = h[i].key;
        og->values[og->n++] = h[i].value;
    }
    return GF_OK;
}

/* Payload plus every header (ours included) must fit the server's max_payload. */
static bool fits(const gf_publish *p, const outgoing *og, const char *msg_id)
{
    const char *keys[GF_PUBLISH_HEADERS_MAX + 3], *values[GF_PUBLISH_HEADERS_MAX + 3];
    size_t n = 0;
    keys[n] = HDR_MSG_ID;
    values[n++] = msg_id;
    if (og->cas) {
        keys[n] = HDR_EXPECTED;
        values[n++] = "18446744073709551615";
    }
    for (size_t i = 0; i < og->n; i++) {
        keys[n] = og->keys[i];
        values[n++] = og->values[i];
    }
    size_t total = og->len + gf__publish_header_bytes(keys, values, n);
    return p->max_payload <= 0 || total <= (size_t)p->max_payload;
}

gf_err gf_publish_send(gf_publish *p, const gf_publish_msg *m)
{
    static const char *const reserved[] = {HDR_MSG_ID, NULL};
    if (!p || !m || !gf_name_subject_ok(m->subject, false, NULL, 0) ||
        !gf__publish_msg_id_ok(m->msg_id) || (m->len > 0 && !m->data))
        return GF_ERR_INVALID;
    outgoing og = {.subject = m->subject,
                   .data = m->data,
                   .len = m->len,
                   .msg_id = m->msg_id,
                   .done = m->done,
                   .closure = m->closure};
    if (add_headers(&og, m->headers, m->headers_len, reserved) != GF_OK || !fits(p, &og, m->msg_id))
        return GF_ERR_INVALID;
    return admit(p, &og);
}

gf_err gf_publish_cas_send(gf_publish *p, const gf_publish_cas *c)
{
    char subject[GF_NAME_BUCKET_MAX + GF_NAME_KV_KEY_MAX + 8];
    if (!p || !c || !gf_name_bucket_ok(c->bucket, NULL, 0) || !gf_name_kv_key_ok(c->key, NULL, 0) ||
        (c->msg_id && !gf__publish_msg_id_ok(c->msg_id)) || (c->len > 0 && !c->data))
        return GF_ERR_INVALID;
    outgoing og = {.subject = subject,
                   .data = c->data,
                   .len = c->len,
                   .msg_id = c->msg_id,
                   .cas = true,
                   .kind = c->kind,
                   .expected = c->revision,
                   .done = c->done,
                   .closure = c->closure};
    switch (c->kind) {
    case GF_PUBLISH_CAS_UPDATE:
        if (c->revision == 0)
            return GF_ERR_INVALID;
        break;
    case GF_PUBLISH_CAS_CREATE:
        og.expected = 0;
        break;
    case GF_PUBLISH_CAS_DELETE:
        if (c->revision == 0 || c->len > 0)
            return GF_ERR_INVALID;
        og.keys[og.n] = HDR_KV_OP;
        og.values[og.n++] = "DEL";
        break;
    default:
        return GF_ERR_INVALID;
    }
    snprintf(subject, sizeof subject, "$KV.%s.%s", c->bucket, c->key);
    if (!fits(p, &og, c->msg_id ? c->msg_id : "x-generated-id-of-at-most-64-bytes-x-x-x-x-x-x"))
        return GF_ERR_INVALID;
    return admit(p, &og);
}

gf_err gf_publish_flush(gf_publish *p, int64_t timeout_ms)
{
    if (!p || gf__pub_in_callback())
        return GF_ERR_INVALID;
    gf_err err = GF_OK;
    pthread_mutex_lock(&p->mu);
    p->users++;
    p->flushers++;
    uint64_t last = p->next_serial; /* accepted before this call: serial <= last */
    int64_t deadline = deadline_after(gf_clock_mono_ms(), timeout_ms);
    while (p->admitted.head && p->admitted.head->serial <= last) {
        if (gf_clock_mono_ms() >= deadline) {
            err = GF_ERR_TIMEOUT;
            break;
        }
        gf__pub_cond_wait_until(&p->drained, &p->mu, deadline);
    }
    p->flushers--;
    user_leave(p);
    return err;
}

typedef struct sync_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    gf_publish_result res;
} sync_wait;

static void sync_done(const gf_publish_result *res, void *closure)
{
    sync_wait *w = closure;
    pthread_mutex_lock(&w->mu);
    w->res = *res;
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Sends with sync_done (one of the two requests) and waits for the callback. */
static gf_err send_and_wait(gf_publish *p, const gf_publish_msg *m, const gf_publish_cas *c,
                            gf_publish_result *res)
{
    if (!p || gf__pub_in_callback())
        return GF_ERR_INVALID;
    sync_wait w = {.done = false};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    gf_err err;
    if (m) {
        gf_publish_msg copy = *m;
        copy.done = sync_done;
        copy.closure = &w;
        err = gf_publish_send(p, &copy);
    } else {
        gf_publish_cas copy = c ? *c : (gf_publish_cas){0};
        copy.done = sync_done;
        copy.closure = &w;
        err = c ? gf_publish_cas_send(p, &copy) : GF_ERR_INVALID;
    }
    if (err == GF_OK) { /* the callback is certain: give-up deadline or close */
        pthread_mutex_lock(&w.mu);
        while (!w.done)
            pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
        if (res)
            *res = w.res;
        err = w.res.err;
    }
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return err;
}

gf_err gf_publish_send_sync(gf_publish *p, const gf_publish_msg *m, gf_publish_result *res)
{
    return m ? send_and_wait(p, m, NULL, res) : GF_ERR_INVALID;
}

gf_err gf_publish_cas_sync(gf_publish *p, const gf_publish_cas *c, gf_publish_result *res)
{
    return send_and_wait(p, NULL, c, res);
}

int gf_publish_in_flight(gf_publish *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->in_flight;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void gf_publish_stats_get(gf_publish *p, gf_publish_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->stats;
    pthread_mutex_unlock(&p->mu);
}
