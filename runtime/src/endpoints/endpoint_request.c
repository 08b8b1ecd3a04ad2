/*
 * endpoint_request.c — request/reply endpoints on a queue group.
 *
 * Design notes:
 * - One subscription per endpoint feeds `concurrency` handler threads through a small
 *   hand-off queue (capacity = concurrency). nats.c's delivery thread only checks the
 *   reply subject and hands the message over, so whichever handler is idle takes the
 *   next request: no request waits behind a slow one while another handler is free.
 *   When every handler is busy and the queue is full, the delivery thread waits, and
 *   requests pile up in nats.c's pending buffer, bounded by runtime.max_queued_requests;
 *   beyond it nats.c drops them (a slow consumer). Drops are read from the subscription
 *   (natsSubscription_GetDropped) before each $SRV answer and at stop, and counted in
 *   STATS num_dropped.
 * - A reply goes only to an allowed inbox (core/reply.h). A request naming any other
 *   reply subject is refused before its handler runs: counted (num_refused) and logged
 *   at a bounded rate. A request without a reply subject is handled (fire and forget).
 * - Each handler thread publishes when it starts a request (busy_since); `check` finds a
 *   handler running past runtime.request_deadline and reports the endpoint stuck, which
 *   makes the instance unhealthy in $SRV (no PING answer) until the handler returns.
 *   The late reply is still sent: a caller with a longer timeout may still want it.
 * - Error replies follow the NATS services protocol: headers Nats-Service-Error-Code
 *   and Nats-Service-Error, plus a gamefn.v1.Error body so protobuf clients get a
 *   typed code without parsing headers.
 * - Shutdown drains the subscription (the server stops routing new requests here and
 *   the pending ones reach the queue), closes the queue, and waits for every handler
 *   to finish the requests it holds, all bounded by the drain deadline.
 *
 * Threads: the delivery thread (on_request) and the handler threads share the queue
 * under st->mu; busy_since is atomic (read by `check` on a $SRV thread); dropped_seen
 * is touched by `check` and stop only, which the lifecycle never runs concurrently.
 * Ownership: queued messages belong to the queue until a handler takes them; the
 * handler destroys each one. run->state is freed by a clean stop.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reply.h"
#include "endpoints/endpoint.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/wire_error.h"
#include "nats/nats_err.h"

enum { REQUEST_CONCURRENCY_MAX = 256 };

typedef struct request_handler {
    struct request_state *st;
    pthread_t thread;
    bool started;
    atomic_llong busy_since_ns; /* monotonic start of the request in hand; 0 when idle */
} request_handler;

typedef struct request_state {
    gf__endpoint_run *run;
    gf__reply_guard guard;
    char where[96];

    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    natsMsg **queue; /* ring of `cap` */
    size_t cap, head, len;
    bool closed; /* no more messages: handlers leave once the queue is empty */

    request_handler *handlers;
    size_t nhandlers;
    atomic_size_t handlers_done;
    int64_t dropped_seen; /* nats.c's drop count already recorded in $SRV */
} request_state;

/* The handler's own wire code when it set a valid one, else the gf_err's; the message
 * in the one format of PROTOCOL.md §3 ("<field>: <what is wrong>", or the what alone). */
static gf_err build_error(gf_wire_error *e, gf_err err, const gf_reply *reply)
{
    const char *field = reply->field[0] ? reply->field : NULL;
    if (reply->code != 0 && gf_wire_error_text(e, reply->code, field, reply->retry_after_ms,
                                               reply->error, gf_err_str(err)) == GF_OK)
        return GF_OK;
    return gf_wire_error_text(e, gf_wire_code_from_err(err), field, reply->retry_after_ms,
                              reply->error, gf_err_str(err));
}

static natsStatus send_error(natsConnection *nc, const char *reply_to, gf_err err,
                             const gf_reply *reply)
{
    gf_wire_error e;
    natsMsg *m = NULL;
    natsStatus s = NATS_NO_MEMORY;
    if (build_error(&e, err, reply) == GF_OK)
        s = natsMsg_Create(&m, reply_to, NULL, (const char *)e.body, (int)e.body_len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, GF_WIRE_HDR_ERROR_CODE, e.code_header);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, GF_WIRE_HDR_ERROR, e.message);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(nc, m);
    natsMsg_Destroy(m);
    gf_wire_error_fini(&e);
    return s;
}

/* Runs the handler on one request and answers it; destroys m. */
static void handle(gf__endpoint_run *run, natsMsg *m)
{
    int64_t start = gf_clock_mono_ns();
    gf_msg req = {
        .subject = natsMsg_GetSubject(m),
        .data = (const uint8_t *)natsMsg_GetData(m),
        .len = (size_t)natsMsg_GetDataLength(m),
        .nats = m,
    };
    gf_reply reply = {0};
    gf_err err = run->ep->request.on_request(run->host->fn, &req, &reply);

    const char *reply_to = natsMsg_GetReply(m);
    if (reply_to && reply_to[0]) {
        natsConnection *nc = run->host->nc;
        natsStatus s = err == GF_OK
                           ? natsConnection_Publish(nc, reply_to, reply.data, (int)reply.len)
                           : send_error(nc, reply_to, err, &reply);
        if (s != NATS_OK)
            gf_log_warn("reply not sent", "endpoint=%s status=%d", run->ep->name, (int)s);
    }
    gf__endpoint_record(run, start, err, reply.error);
    free(reply.data);
    natsMsg_Destroy(m);
}

/* nats.c's delivery thread: refuse a reply subject that is not an inbox, else hand the
 * request to the handlers (waiting while they are all busy and the queue is full). */
static void on_request(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    request_state *st = closure;
    const char *reply_to = natsMsg_GetReply(m);
    if (reply_to && reply_to[0] && !gf__reply_guard_check(&st->guard, reply_to)) {
        gf_srv_record_unhandled(st->run->host->srv, st->run->index, GF_SRV_REFUSED, 1,
                                "refused:reply subject is not an allowed inbox "
                                "(runtime.reply_prefixes)");
        natsMsg_Destroy(m);
        return;
    }
    pthread_mutex_lock(&st->mu);
    while (st->len == st->cap && !st->closed)
        pthread_cond_wait(&st->not_full, &st->mu);
    if (st->closed) { /* cannot happen: the queue closes after the drain completed */
        pthread_mutex_unlock(&st->mu);
        natsMsg_Destroy(m);
        return;
    }
    st->queue[(st->head + st->len) % st->cap] = m;
    st->len++;
    pthread_cond_signal(&st->not_empty);
    pthread_mutex_unlock(&st->mu);
}

static void *handler_thread(void *arg)
{
    request_handler *h = arg;
    request_state *st = h->st;
    for (;;) {
        pthread_mutex_lock(&st->mu);
        while (st->len == 0 && !st->closed)
            pthread_cond_wait(&st->not_empty, &st->mu);
        if (st->len == 0) { /* closed and empty */
            pthread_mutex_unlock(&st->mu);
            break;
        }
        natsMsg *m = st->queue[st->head];
        st->head = (st->head + 1) % st->cap;
        st->len--;
        pthread_cond_signal(&st->not_full);
        pthread_mutex_unlock(&st->mu);

        atomic_store(&h->busy_since_ns, gf_clock_mono_ns());
        handle(st->run, m);
        atomic_store(&h->busy_since_ns, 0);
    }
    atomic_fetch_add(&st->handlers_done, 1);
    return NULL;
}

/* Requests nats.c dropped since the last look, into $SRV. */
static void record_drops(gf__endpoint_run *run, request_state *st)
{
    int64_t dropped = 0;
    if (!run->sub || natsSubscription_GetDropped(run->sub, &dropped) != NATS_OK ||
        dropped <= st->dropped_seen)
        return;
    int64_t n = dropped - st->dropped_seen;
    st->dropped_seen = dropped;
    gf_log_warn("requests dropped: more were waiting than runtime.max_queued_requests",
                "endpoint=%s dropped=%" PRId64 " total=%" PRId64, run->ep->name, n, dropped);
    gf_srv_record_unhandled(run->host->srv, run->index, GF_SRV_DROPPED, n,
                            "dropped:overloaded (runtime.max_queued_requests reached)");
}

/* Closes the queue and waits (until deadline_ms) for every handler thread to leave. */
static bool close_and_join(request_state *st, int64_t deadline_ms)
{
    pthread_mutex_lock(&st->mu);
    st->closed = true;
    pthread_cond_broadcast(&st->not_empty);
    pthread_cond_broadcast(&st->not_full);
    pthread_mutex_unlock(&st->mu);

    size_t started = 0;
    for (size_t i = 0; i < st->nhandlers; i++)
        started += st->handlers[i].started;
    while (atomic_load(&st->handlers_done) < started && gf_clock_mono_ms() < deadline_ms)
        gf_clock_sleep_ms(5);
    if (atomic_load(&st->handlers_done) < started)
        return false;
    for (size_t i = 0; i < st->nhandlers; i++) {
        if (st->handlers[i].started)
            pthread_join(st->handlers[i].thread, NULL);
        st->handlers[i].started = false;
    }
    return true;
}

static void state_free(request_state *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->len; i++)
        natsMsg_Destroy(st->queue[(st->head + i) % st->cap]);
    pthread_cond_destroy(&st->not_empty);
    pthread_cond_destroy(&st->not_full);
    pthread_mutex_destroy(&st->mu);
    free(st->queue);
    free(st->handlers);
    free(st);
}

static gf_err state_new(gf__endpoint_run *run, size_t n, request_state **out)
{
    const gf_runtime_config *rc = &run->host->cfg->runtime;
    request_state *st = calloc(1, sizeof *st);
    if (!st)
        return GF_ERR_NOMEM;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->not_empty, NULL);
    pthread_cond_init(&st->not_full, NULL);
    st->run = run;
    st->cap = n;
    st->nhandlers = n;
    st->queue = calloc(n, sizeof *st->queue);
    st->handlers = calloc(n, sizeof *st->handlers);
    if (!st->queue || !st->handlers) {
        state_free(st);
        return GF_ERR_NOMEM;
    }
    snprintf(st->where, sizeof st->where, "endpoint %s", run->ep->name);
    gf__reply_guard_init(&st->guard, rc->reply_prefixes, rc->reply_prefixes_len, st->where);
    *out = st;
    return GF_OK;
}

static gf_err request_start(gf__endpoint_run *run)
{
    const gf_request_endpoint *rq = &run->ep->request;
    natsConnection *nc = run->host->nc;
    request_state *st = NULL;
    int concurrency = rq->concurrency;
    if (rq->concurrency_of && rq->concurrency_of(run->host->fn) > 0)
        concurrency = rq->concurrency_of(run->host->fn);
    if (!rq->subject || !rq->on_request || concurrency < 0 || concurrency > REQUEST_CONCURRENCY_MAX)
        return GF_ERR_INVALID;
    gf_err err = state_new(run, concurrency > 0 ? (size_t)concurrency : 1, &st);
    if (err != GF_OK)
        return err;
    run->state = st;
    for (size_t i = 0; i < st->nhandlers; i++) {
        request_handler *h = &st->handlers[i];
        h->st = st;
        if (pthread_create(&h->thread, NULL, handler_thread, h) != 0)
            return GF_ERR_NOMEM; /* stop joins the ones that started */
        h->started = true;
    }
    natsStatus s = rq->queue_group
                       ? natsConnection_QueueSubscribe(&run->sub, nc, rq->subject, rq->queue_group,
                                                       on_request, st)
                       : natsConnection_Subscribe(&run->sub, nc, rq->subject, on_request, st);
    int msgs = 0, bytes = 0;
    if (s == NATS_OK)
        s = natsSubscription_GetPendingLimits(run->sub, &msgs, &bytes);
    if (s == NATS_OK)
        s = natsSubscription_SetPendingLimits(
            run->sub, (int)run->host->cfg->runtime.max_queued_requests, bytes);
    if (s == NATS_OK) /* make sure the server knows the subscription before we say "started" */
        s = natsConnection_Flush(nc);
    return gf_nats_err(s);
}

static bool request_stop(gf__endpoint_run *run, int64_t deadline_ms)
{
    request_state *st = run->state;
    bool clean = true;
    if (run->sub) {
        int64_t left = deadline_ms - gf_clock_mono_ms();
        if (left < 1)
            left = 1;
        /* Drain: the server stops routing here; what is pending reaches the queue. */
        if (natsSubscription_DrainTimeout(run->sub, left) == NATS_OK)
            clean = natsSubscription_WaitForDrainCompletion(run->sub, left) == NATS_OK;
        if (!clean)
            return false; /* the delivery thread may still wait on the queue */
        if (st)
            record_drops(run, st);
        natsSubscription_Destroy(run->sub);
        run->sub = NULL;
    }
    if (st && !close_and_join(st, deadline_ms))
        return false; /* a handler still runs and uses st */
    state_free(st);
    run->state = NULL;
    return true;
}

static bool request_check(gf__endpoint_run *run, char *why, size_t why_size)
{
    request_state *st = run->state;
    int64_t deadline_ms = run->host->cfg->runtime.request_deadline_ms;
    if (!st)
        return true;
    record_drops(run, st);
    if (deadline_ms <= 0)
        return true;
    int64_t now = gf_clock_mono_ns(), longest = 0;
    size_t stuck = 0;
    for (size_t i = 0; i < st->nhandlers; i++) {
        int64_t since = atomic_load(&st->handlers[i].busy_since_ns);
        int64_t ran_ms = since ? (now - since) / 1000000 : 0;
        if (ran_ms > deadline_ms) {
            stuck++;
            longest = ran_ms > longest ? ran_ms : longest;
        }
    }
    if (stuck == 0)
        return true;
    snprintf(why, why_size,
             "endpoint %s: %zu of %zu handlers running past runtime.request_deadline "
             "(%" PRId64 " ms > %" PRId64 " ms)",
             run->ep->name, stuck, st->nhandlers, longest, deadline_ms);
    return false;
}

static void request_describe(const gf__endpoint_run *run, gf_srv_endpoint *out)
{
    out->subject = run->ep->request.subject;
    out->queue_group = run->ep->request.queue_group;
}

const gf__endpoint_ops gf__endpoint_request_ops = {
    .name = "request",
    .abandoned = "requests in flight are not answered (requests are never redelivered: "
                 "callers time out and retry)",
    .provision = NULL, /* core NATS: nothing to provision */
    .describe = request_describe,
    .start = request_start,
    .stop = request_stop,
    .check = request_check,
};
