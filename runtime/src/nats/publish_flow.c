/*
 * publish_flow.c — what happens to a published message after its first send (see
 * gamefn/publish.h; the design notes are in publish.c): answers from the reply
 * subscription, the retry thread (attempt timeouts, give-ups, resends after a
 * backoff, CAS lookups), and the end of every message: its result, its callback, its
 * slot back to the free list.
 *
 * Threads: gf__pub_on_reply runs on nats.c's delivery thread of the reply
 * subscription, gf__pub_worker_main is the retry thread; everything they share with
 * the senders is under p->mu (publish_state.h). Callbacks run without it.
 */
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gamefn/clock.h"
#include "gamefn/names.h"
#include "nats_err.h"
#include "publish_state.h"

static _Thread_local int tl_callbacks; /* > 0 inside a publisher callback */

bool gf__pub_in_callback(void)
{
    return tl_callbacks > 0;
}

/* ---- lists -------------------------------------------------------------- */

static pub_link *lk(pub_slot *s, bool adm)
{
    return adm ? &s->adm : &s->tm;
}

static void list_push(pub_list *l, pub_slot *s, bool adm)
{
    pub_link *k = lk(s, adm);
    k->next = NULL;
    k->prev = l->tail;
    if (l->tail)
        lk(l->tail, adm)->next = s;
    else
        l->head = s;
    l->tail = s;
}

static void list_remove(pub_list *l, pub_slot *s, bool adm)
{
    pub_link *k = lk(s, adm);
    if (k->prev)
        lk(k->prev, adm)->next = k->next;
    else
        l->head = k->next;
    if (k->next)
        lk(k->next, adm)->prev = k->prev;
    else
        l->tail = k->prev;
    k->prev = k->next = NULL;
}

/* The awaiting and backoff lists share the tm link: a slot is in at most one. */
static void tm_enter(pub_list *l, pub_slot *s)
{
    list_push(l, s, false);
    s->on = l;
}

static void tm_leave(pub_slot *s)
{
    if (s->on)
        list_remove(s->on, s, false);
    s->on = NULL;
}

/* ---- time --------------------------------------------------------------- */

void gf__pub_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t until_ms)
{
    if (until_ms == INT64_MAX) {
        pthread_cond_wait(c, mu);
        return;
    }
    struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000L};
    pthread_cond_timedwait(c, mu, &ts);
}

/* ---- slot lifecycle (lock held unless said) ----------------------------- */

pub_slot *gf__pub_slot_take(gf_publish *p)
{
    pub_slot *s = p->free;
    if (s) {
        p->free = s->next_batch;
    } else {
        if (p->nslots == p->cap) {
            uint32_t cap = p->cap * 2;
            pub_slot **grown = realloc(p->slots, cap * sizeof *grown);
            if (!grown)
                return NULL;
            p->slots = grown;
            p->cap = cap;
        }
        s = calloc(1, sizeof *s);
        if (!s)
            return NULL;
        s->idx = p->nslots;
        p->slots[p->nslots++] = s;
    }
    uint32_t idx = s->idx;
    memset(s, 0, sizeof *s);
    s->idx = idx;
    s->state = SLOT_NEW;
    s->serial = ++p->next_serial;
    s->attempt = 1;
    s->admitted_ms = gf_clock_mono_ms();
    list_push(&p->admitted, s, true);
    p->in_flight++;
    return s;
}

/* Back to the free list: the callback has returned (or there was none). */
void gf__pub_slot_release(gf_publish *p, pub_slot *s)
{
    list_remove(&p->admitted, s, true);
    s->state = SLOT_FREE;
    s->msg = NULL;
    s->next_batch = p->free;
    p->free = s;
    p->in_flight--;
    /* Waking a waiting sender per freed slot costs a context switch per message;
     * waking it once room_batch slots are free lets it send them in one go. */
    if (p->room_waiters > 0 && p->in_flight <= p->o.max_in_flight - p->room_batch)
        pthread_cond_broadcast(&p->room);
    if (p->flushers > 0 || p->closing)
        pthread_cond_broadcast(&p->drained);
}

static void wake_worker(gf_publish *p, int64_t due_ms)
{
    if (due_ms < p->worker_due)
        pthread_cond_signal(&p->wake);
}

/* Decides the slot's result and queues it on *batch for its callback. */
void gf__pub_finish(gf_publish *p, pub_slot *s, gf_err err, pub_slot **batch)
{
    tm_leave(s);
    s->state = SLOT_DONE;
    s->res.err = err;
    s->res.attempts = (int)s->attempt;
    if (err != GF_OK) {
        s->res.seq = 0;
        s->res.duplicate = false;
    }
    if (err != GF_ERR_CONFLICT && err != GF_ERR_NATS)
        s->res.js_code = 0;
    gf_publish_stats *st = &p->stats;
    switch (err) {
    case GF_OK:
        st->ok++;
        st->duplicates += s->res.duplicate;
        break;
    case GF_ERR_CONFLICT:
        st->conflicts++;
        break;
    case GF_ERR_TIMEOUT:
        st->gave_up++;
        break;
    case GF_ERR_UNAVAILABLE:
        st->closed++;
        break;
    default:
        st->failed++;
        break;
    }
    s->next_batch = *batch;
    *batch = s;
}

/* Runs the callbacks of a batch, then releases its slots. Lock NOT held. */
void gf__pub_run_batch(gf_publish *p, pub_slot *batch)
{
    if (!batch)
        return;
    for (pub_slot *s = batch; s; s = s->next_batch) {
        if (s->done) {
            tl_callbacks++;
            s->done(&s->res, s->closure);
            tl_callbacks--;
        }
        natsMsg_Destroy(s->msg);
        s->msg = NULL;
    }
    pthread_mutex_lock(&p->mu);
    for (pub_slot *s = batch, *next; s; s = next) {
        next = s->next_batch;
        gf__pub_slot_release(p, s);
    }
    pthread_mutex_unlock(&p->mu);
}

/* Waits for the next step after a failed attempt (or lookup), no later than the
 * give-up deadline, where the retry thread ends it. */
void gf__pub_backoff(gf_publish *p, pub_slot *s, int64_t now, bool lookup)
{
    int64_t delay = gf__publish_backoff_ms(p->o.backoff_min_ms, p->o.backoff_max_ms, s->failures,
                                           (int)randombytes_uniform(101));
    int64_t give_up = s->admitted_ms + p->o.give_up_ms;
    s->due_ms = now + delay < give_up ? now + delay : give_up;
    s->state = SLOT_BACKOFF;
    s->next_lookup = lookup;
    tm_enter(&p->backoff, s);
    wake_worker(p, s->due_ms);
}

/* A publish error: final ones end the message, the rest are retried. */
bool gf__pub_retryable(natsStatus st)
{
    return st == NATS_INSUFFICIENT_BUFFER || st == NATS_CONNECTION_DISCONNECTED ||
           st == NATS_STALE_CONNECTION || st == NATS_IO_ERROR || st == NATS_TIMEOUT;
}

/* Sends s->msg (lock held). On success the slot awaits its answer. */
natsStatus gf__pub_transmit(gf_publish *p, pub_slot *s, int64_t now)
{
    natsStatus st = natsConnection_PublishMsg(p->nc, s->msg);
    if (st == NATS_OK) {
        s->state = SLOT_AWAITING;
        s->sent_ms = now;
        tm_enter(&p->awaiting, s);
        wake_worker(p, now + p->o.attempt_timeout_ms);
    }
    return st;
}

/* ---- messages ----------------------------------------------------------- */

void gf__pub_reply_subject(const gf_publish *p, const pub_slot *s, char *buf, size_t size)
{
    snprintf(buf, size, "%s.%" PRIu32 ".%" PRIu64 ".%" PRIu32, p->reply_prefix, s->idx, s->serial,
             s->attempt);
}

natsStatus gf__pub_set_expected(natsMsg *m, uint64_t expected)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, expected);
    return natsMsgHeader_Set(m, HDR_EXPECTED, num);
}

/* The next attempt's message: same subject, payload and headers, a new reply. */
static natsMsg *msg_rebuild(natsMsg *old, const char *reply, const uint64_t *expected)
{
    natsMsg *m = NULL;
    const char **keys = NULL;
    int nkeys = 0;
    natsStatus st = natsMsg_Create(&m, natsMsg_GetSubject(old), reply, natsMsg_GetData(old),
                                   natsMsg_GetDataLength(old));
    if (st == NATS_OK)
        st = natsMsgHeader_Keys(old, &keys, &nkeys);
    for (int i = 0; st == NATS_OK && i < nkeys; i++) {
        const char **vals = NULL;
        int nvals = 0;
        st = natsMsgHeader_Values(old, keys[i], &vals, &nvals);
        for (int j = 0; st == NATS_OK && j < nvals; j++)
            st = natsMsgHeader_Add(m, keys[i], vals[j]);
        free((void *)vals);
    }
    free((void *)keys);
    if (st == NATS_OK && expected)
        st = gf__pub_set_expected(m, *expected);
    if (st != NATS_OK) {
        natsMsg_Destroy(m);
        m = NULL;
    }
    return m;
}

/* The retry thread's resend of s (lock held). */
static void resend(gf_publish *p, pub_slot *s, int64_t now, pub_slot **batch)
{
    char reply[REPLY_MAX];
    s->attempt++;
    gf__pub_reply_subject(p, s, reply, sizeof reply);
    natsMsg *m = msg_rebuild(s->msg, reply, s->cas ? &s->expected : NULL);
    if (!m) {
        gf__pub_finish(p, s, GF_ERR_NOMEM, batch);
        return;
    }
    natsMsg_Destroy(s->msg);
    s->msg = m;
    p->stats.resends++;
    natsStatus st = gf__pub_transmit(p, s, now);
    if (st == NATS_OK)
        return;
    if (!gf__pub_retryable(st)) {
        gf__pub_finish(
            p, s, gf_nats_err(st) == GF_ERR_UNAVAILABLE ? GF_ERR_UNAVAILABLE : GF_ERR_NATS, batch);
        return;
    }
    s->failures++;
    gf__pub_backoff(p, s, now, false);
}

/* ---- answers ------------------------------------------------------------ */

/* "<prefix>.<idx>.<serial>.<attempt>" -> numbers. */
static bool reply_token(const gf_publish *p, const char *subject, uint32_t *idx, uint64_t *serial,
                        uint32_t *attempt)
{
    if (!subject || strncmp(subject, p->reply_prefix, p->reply_prefix_len) != 0 ||
        subject[p->reply_prefix_len] != '.')
        return false;
    const char *s = subject + p->reply_prefix_len + 1;
    unsigned long long v[3];
    for (int i = 0; i < 3; i++) {
        char *end = NULL;
        if (*s < '0' || *s > '9')
            return false;
        v[i] = strtoull(s, &end, 10);
        if (*end != (i < 2 ? '.' : '\0'))
            return false;
        s = end + 1;
    }
    if (v[0] > UINT32_MAX || v[2] > UINT32_MAX)
        return false;
    *idx = (uint32_t)v[0];
    *serial = v[1];
    *attempt = (uint32_t)v[2];
    return true;
}

static void answer(gf_publish *p, pub_slot *s, uint32_t attempt, const gf__pub_reply *r,
                   int64_t now, pub_slot **batch)
{
    if (s->state != SLOT_AWAITING && s->state != SLOT_BACKOFF)
        return; /* WORKING: the lookup decides; DONE: decided */
    gf__pub_verdict v = gf__publish_verdict(r);
    if (v == GF__PUB_DONE) { /* from any attempt: stored is stored */
        s->res.seq = r->seq;
        s->res.duplicate = r->duplicate;
        gf__pub_finish(p, s, GF_OK, batch);
        return;
    }
    if (s->state != SLOT_AWAITING || attempt != s->attempt)
        return; /* an older attempt's error */
    tm_leave(s);
    s->res.js_code = r->err_code;
    switch (v) {
    case GF__PUB_RETRY:
        s->failures++;
        gf__pub_backoff(p, s, now, false);
        break;
    case GF__PUB_CONFLICT:
        /* Was this change stored after all (by an earlier attempt, or an earlier send
         * of the caller's), or is the key deleted (create)? */
        if (s->cas && (s->uncertain || s->caller_id || s->kind == GF_PUBLISH_CAS_CREATE)) {
            s->state = SLOT_BACKOFF;
            s->due_ms = now;
            s->next_lookup = true;
            tm_enter(&p->backoff, s);
            wake_worker(p, now);
        } else {
            gf__pub_finish(p, s, GF_ERR_CONFLICT, batch);
        }
        break;
    default:
        gf__pub_finish(p, s, GF_ERR_NATS, batch);
        break;
    }
}

/* nats.c's delivery thread of our reply subscription. */
void gf__pub_on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    gf_publish *p = closure;
    uint32_t idx = 0, attempt = 0;
    uint64_t serial = 0;
    if (!reply_token(p, natsMsg_GetSubject(msg), &idx, &serial, &attempt)) {
        natsMsg_Destroy(msg);
        return;
    }
    const char *status = NULL;
    int len = natsMsg_GetDataLength(msg);
    bool has_status = len == 0 && natsMsgHeader_Get(msg, "Status", &status) == NATS_OK;
    gf__pub_reply r;
    gf__publish_reply_parse(natsMsg_GetData(msg), (size_t)len, natsMsg_IsNoResponders(msg),
                            has_status, &r);
    natsMsg_Destroy(msg);

    pub_slot *batch = NULL;
    pthread_mutex_lock(&p->mu);
    if (idx < p->nslots && p->slots[idx]->serial == serial)
        answer(p, p->slots[idx], attempt, &r, gf_clock_mono_ms(), &batch);
    pthread_mutex_unlock(&p->mu);
    gf__pub_run_batch(p, batch);
}

void gf__pub_on_sub_done(void *closure)
{
    gf_publish *p = closure;
    pthread_mutex_lock(&p->mu);
    p->sub_done = true;
    pthread_cond_broadcast(&p->drained);
    pthread_mutex_unlock(&p->mu);
}

/* ---- CAS lookups (retry thread, unlocked; the slot is WORKING) ----------- */

typedef enum lookup_outcome {
    LOOKUP_STORED,   /* an earlier attempt is stored: GF_OK at *seq */
    LOOKUP_CONFLICT, /* the CAS lost */
    LOOKUP_RESEND,   /* create over a marker or an emptied key: resend expecting *expected */
    LOOKUP_LATER,    /* the leader did not answer: ask again after a backoff */
    LOOKUP_FAILED,   /* a malformed answer */
} lookup_outcome;

static lookup_outcome lookup_result(gf_err err)
{
    if (err == GF_ERR_RETRY || err == GF_ERR_TIMEOUT || err == GF_ERR_UNAVAILABLE)
        return LOOKUP_LATER;
    return LOOKUP_FAILED;
}

static lookup_outcome cas_lookup(const gf_publish *p, const pub_slot *s, int64_t timeout_ms,
                                 uint64_t *seq, uint64_t *expected, int *asked)
{
    const char *subject = natsMsg_GetSubject(s->msg), *id = NULL;
    char stream[GF_NAME_BUCKET_MAX + 4];
    /* "$KV.<bucket>.<key>", as gf_publish_cas_send built it -> "KV_<bucket>" */
    const char *bucket = subject + strlen("$KV.");
    const char *dot = strchr(bucket, '.');
    if (!dot)
        return LOOKUP_FAILED;
    snprintf(stream, sizeof stream, "KV_%.*s", (int)(dot - bucket), bucket);
    natsMsgHeader_Get(s->msg, HDR_MSG_ID, &id);

    gf__pub_stored st;
    gf_err err = GF_OK;
    if (s->uncertain || s->caller_id) {
        /* A stored CAS is the key's first message after the revision it expected. */
        uint64_t after = s->uncertain ? s->uncertain_expected : s->expected;
        (*asked)++;
        err = gf__publish_lookup(p->nc, p->api_prefix, stream, subject, true, after + 1, timeout_ms,
                                 &st);
        if (err != GF_OK)
            return lookup_result(err);
        if (st.found && st.has_msg_id && id && strcmp(st.msg_id, id) == 0) {
            *seq = st.seq;
            return LOOKUP_STORED;
        }
    }
    if (s->kind != GF_PUBLISH_CAS_CREATE)
        return LOOKUP_CONFLICT;
    (*asked)++;
    err = gf__publish_lookup(p->nc, p->api_prefix, stream, subject, false, 0, timeout_ms, &st);
    if (err != GF_OK)
        return lookup_result(err);
    if (!st.found) {
        *expected = 0;
        return LOOKUP_RESEND;
    }
    if (st.has_msg_id && id && strcmp(st.msg_id, id) == 0) {
        *seq = st.seq;
        return LOOKUP_STORED;
    }
    if (st.op == GF__PUB_KV_PUT)
        return LOOKUP_CONFLICT;
    *expected = st.seq;
    return LOOKUP_RESEND;
}

/* Lock held on entry and exit; released during the lookup. */
static void run_lookup(gf_publish *p, pub_slot *s, pub_slot **batch)
{
    s->state = SLOT_WORKING;
    s->lookups++;
    int64_t now = gf_clock_mono_ms();
    int64_t left = s->admitted_ms + p->o.give_up_ms - now;
    int64_t timeout = left < p->o.attempt_timeout_ms ? left : p->o.attempt_timeout_ms;
    uint64_t seq = 0, expected = s->expected;
    int asked = 0;
    pthread_mutex_unlock(&p->mu);
    lookup_outcome out = cas_lookup(p, s, timeout > 0 ? timeout : 1, &seq, &expected, &asked);
    pthread_mutex_lock(&p->mu);
    p->stats.lookups += asked;
    now = gf_clock_mono_ms();
    if (out == LOOKUP_RESEND && s->lookups >= MAX_LOOKUPS)
        out = LOOKUP_CONFLICT;
    switch (out) {
    case LOOKUP_STORED:
        s->res.seq = seq;
        s->res.duplicate = true;
        gf__pub_finish(p, s, GF_OK, batch);
        break;
    case LOOKUP_CONFLICT:
        s->res.js_code = JSStreamWrongLastSequenceErr;
        gf__pub_finish(p, s, GF_ERR_CONFLICT, batch);
        break;
    case LOOKUP_RESEND:
        s->expected = expected;
        resend(p, s, now, batch);
        break;
    case LOOKUP_LATER:
        s->failures++;
        gf__pub_backoff(p, s, now, true);
        break;
    case LOOKUP_FAILED:
        gf__pub_finish(p, s, GF_ERR_NATS, batch);
        break;
    }
}

/* ---- the retry thread --------------------------------------------------- */

static int64_t next_due(gf_publish *p)
{
    int64_t due = INT64_MAX;
    if (p->awaiting.head)
        due = p->awaiting.head->sent_ms + p->o.attempt_timeout_ms;
    for (pub_slot *s = p->admitted.head; s; s = s->adm.next) {
        if (s->state == SLOT_AWAITING || s->state == SLOT_BACKOFF) {
            int64_t give_up = s->admitted_ms + p->o.give_up_ms;
            due = give_up < due ? give_up : due;
            break;
        }
    }
    for (pub_slot *s = p->backoff.head; s; s = s->tm.next)
        due = s->due_ms < due ? s->due_ms : due;
    return due;
}

/* One pass over what is due. Returns a slot to look up (in no list), if any. */
static pub_slot *worker_pass(gf_publish *p, int64_t now, pub_slot **batch)
{
    pub_slot *s, *next;
    while ((s = p->awaiting.head) && s->sent_ms + p->o.attempt_timeout_ms <= now) {
        tm_leave(s);
        s->uncertain = true;
        s->uncertain_expected = s->expected;
        s->failures++;
        gf__pub_backoff(p, s, now, false);
    }
    for (s = p->admitted.head; s && s->admitted_ms + p->o.give_up_ms <= now; s = s->adm.next) {
        if (s->state == SLOT_AWAITING || s->state == SLOT_BACKOFF)
            gf__pub_finish(p, s, GF_ERR_TIMEOUT, batch);
    }
    /* A resend that fails again goes back to the tail, due later: seen, skipped. */
    for (s = p->backoff.head; s; s = next) {
        next = s->tm.next;
        if (s->due_ms > now)
            continue;
        tm_leave(s);
        if (s->next_lookup)
            return s;
        resend(p, s, now, batch);
    }
    return NULL;
}

void *gf__pub_worker_main(void *arg)
{
    gf_publish *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        pub_slot *batch = NULL;
        pub_slot *lookup = worker_pass(p, gf_clock_mono_ms(), &batch);
        if (lookup)
            run_lookup(p, lookup, &batch);
        if (batch) {
            pthread_mutex_unlock(&p->mu);
            gf__pub_run_batch(p, batch);
            pthread_mutex_lock(&p->mu);
        }
        if (lookup || batch)
            continue;
        p->worker_due = next_due(p);
        gf__pub_cond_wait_until(&p->wake, &p->mu, p->worker_due);
        p->worker_due = INT64_MIN;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}
