/*
 * endpoint_pull.c — durable pull consumer endpoints: one fetcher, a pool of workers.
 *
 * Design notes:
 * - runtime.max_in_flight workers run handlers concurrently; one fetcher thread asks
 *   the server for messages **only for idle workers** (min(idle, fetch_batch)), so
 *   every message this instance holds has a worker about to start it. Nothing waits in
 *   a local queue while its ack wait (or its delivery count) runs down: a message
 *   is never redelivered to another replica while it sits here, and a SIGKILL burns
 *   deliveries only of messages whose handler had started.
 * - While a handler runs, the keeper (pull_keeper.h) sends in-progress every 40% of
 *   the consumer's effective ack wait (backoff[0] when the consumer has a backoff), so
 *   a slow handler keeps its message too.
 * - A message is acked only after its handler returned GF_OK (at-least-once; handlers
 *   are idempotent); GF_ERR_PERMANENT / GF_ERR_INVALID term it; anything else naks it
 *   with the consumer's retry delay. Acks are fire-and-forget (natsMsg_Ack): a lost
 *   ack only means one more delivery to an idempotent handler.
 * - Binding, recreating a vanished stream or consumer, and noticing that one vanished
 *   live in pull_consumer.c. A subscription is destroyed only when no handler holds a
 *   message from it (nats.c keeps a raw pointer to it in every message).
 * - Health: what keeps the fetcher from binding (a stream that cannot be recreated, a
 *   consumer that cannot be bound) is kept in st->health until a bind succeeds; `check`
 *   reports it, so $SRV shows the instance unhealthy meanwhile.
 * - Shutdown: the fetcher stops asking, naks what it fetched but no worker started and
 *   any late delivery still queued on its subscription (so they are redelivered at once,
 *   not after an ack wait), and the workers finish and ack what they run. The fetcher
 *   sees the stop flag only between fetches, so a fetch waits at most STOP_POLL_MS
 *   (less when fetch_expiry is shorter): an idle fetch is two waits on nats-server
 *   2.9.10 (gf__pull_fetch), and with fetch_expiry's 5 s each a SIGTERM waited up to
 *   10 s for the fetcher alone. Idle, that costs two pull requests a second.
 *
 * Threads: the fetcher owns the binding; workers own the message they run; `mu` guards
 * the hand-over queue and the idle / busy counts. The keeper and the health record have
 * their own locks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints/endpoint.h"
#include "endpoints/pull_consumer.h"
#include "endpoints/pull_keeper.h"
#include "gamefn/backoff.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "nats/nats_err.h"

enum {
    REBIND_AFTER_ERRORS = 3,
    WAIT_STEP_MS = 100,
    POSITION_EVERY_MS = 30000,
    STOP_POLL_MS = 500, /* a fetch's longest wait: how soon a stop is seen */
};

typedef struct pull_state {
    gf__endpoint_run *run;
    const gf_consumer_config *cc; /* borrowed from the config */
    gf__pull_binding bind;        /* fetcher thread only */
    gf__health health;            /* set by the fetcher (through bind), read by check */
    gf__keeper *keeper;
    gf__threads threads; /* the fetcher and the workers */
    int nworkers;
    int batch;

    pthread_mutex_t mu;
    pthread_cond_t work;    /* workers: a message is queued, or stopping */
    pthread_cond_t changed; /* fetcher: a worker became idle or finished */
    natsMsg **queue;        /* ring of nworkers: fetched, promised to idle workers */
    size_t head, count;
    int idle; /* waiting workers not yet promised a message (waiting - count) */
    int busy; /* handlers running */
    bool stopping;
} pull_state;

static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + ms * 1000000LL;
    ts.tv_sec += ns / 1000000000LL;
    ts.tv_nsec = ns % 1000000000LL;
    pthread_cond_timedwait(cv, mu, &ts);
}

static void settle(gf__endpoint_run *run, const gf_consumer_config *cc, const gf_msg *msg,
                   gf_err err)
{
    if (err == GF_OK) {
        natsMsg_Ack(msg->nats, NULL);
    } else if (err == GF_ERR_PERMANENT || err == GF_ERR_INVALID) {
        gf_log_warn("message rejected for good", "endpoint=%s seq=%llu deliveries=%llu err=%s",
                    run->ep->name, (unsigned long long)msg->stream_seq,
                    (unsigned long long)msg->num_delivered, gf_err_str(err));
        natsMsg_Term(msg->nats, NULL);
    } else {
        int64_t delay = gf__pull_retry_delay_ms(cc, msg->num_delivered);
        gf_log_warn("message will be redelivered",
                    "endpoint=%s seq=%llu deliveries=%llu err=%s delay_ms=%lld", run->ep->name,
                    (unsigned long long)msg->stream_seq, (unsigned long long)msg->num_delivered,
                    gf_err_str(err), (long long)delay);
        natsMsg_NakWithDelay(msg->nats, delay, NULL);
    }
}

static void handle(pull_state *st, natsMsg *m)
{
    gf__endpoint_run *run = st->run;
    gf_msg msg;
    gf__keeper_hold hold;
    int64_t start = gf_clock_mono_ns();

    gf__pull_msg(m, &msg);
    gf__keeper_add(st->keeper, &hold, &m, 1, start / 1000000, NULL);
    gf_err err = run->ep->pull.on_message(run->host->fn, &msg);
    gf__keeper_remove(st->keeper, &hold);
    settle(run, st->cc, &msg, err);
    gf__endpoint_record(run, start, err, NULL);
    natsMsg_Destroy(m);
}

static void *worker_thread(void *arg)
{
    pull_state *st = arg;
    pthread_mutex_lock(&st->mu);
    for (;;) {
        st->idle++;
        pthread_cond_signal(&st->changed);
        while (st->count == 0 && !st->stopping)
            pthread_cond_wait(&st->work, &st->mu);
        if (st->count == 0) {
            st->idle--;
            break;
        }
        natsMsg *m = st->queue[st->head];
        st->head = (st->head + 1) % (size_t)st->nworkers;
        st->count--;
        st->busy++;
        pthread_mutex_unlock(&st->mu);
        handle(st, m);
        pthread_mutex_lock(&st->mu);
        st->busy--;
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* Blocks until at least one worker is idle (or stop); returns how many to fetch. */
static int wait_for_idle(pull_state *st)
{
    int want = 0;
    pthread_mutex_lock(&st->mu);
    while (st->idle == 0 && !atomic_load(st->run->host->stop))
        timed_wait(&st->changed, &st->mu, WAIT_STEP_MS);
    want = st->idle < st->batch ? st->idle : st->batch;
    pthread_mutex_unlock(&st->mu);
    return want;
}

/* Waits until no handler holds a message (so the subscription may go), or stop. */
static bool wait_until_quiet(pull_state *st)
{
    pthread_mutex_lock(&st->mu);
    while ((st->busy > 0 || st->count > 0) && !atomic_load(st->run->host->stop))
        timed_wait(&st->changed, &st->mu, WAIT_STEP_MS);
    bool quiet = st->busy == 0 && st->count == 0;
    pthread_mutex_unlock(&st->mu);
    return quiet;
}

/* Hands fetched messages to idle workers; on stop, naks them instead (never started). */
static void dispatch(pull_state *st, natsMsgList *list)
{
    pthread_mutex_lock(&st->mu);
    for (int i = 0; i < list->Count; i++) {
        if (atomic_load(st->run->host->stop)) {
            natsMsg_Nak(list->Msgs[i], NULL);
            continue;
        }
        st->queue[(st->head + st->count) % (size_t)st->nworkers] = list->Msgs[i];
        st->count++;
        st->idle--;
        list->Msgs[i] = NULL; /* the worker destroys it */
    }
    pthread_cond_broadcast(&st->work);
    pthread_mutex_unlock(&st->mu);
}

static void *fetcher_thread(void *arg)
{
    pull_state *st = arg;
    gf__endpoint_run *run = st->run;
    const gf_runtime_config *rc = &run->host->cfg->runtime;
    gf__pull_binding *b = &st->bind;
    int errors = 0;

    while (!atomic_load(run->host->stop)) {
        if (!b->sub) {
            if (gf__pull_bind(b) != GF_OK) {
                gf_clock_sleep_until(gf_clock_mono_ms() + gf__pull_bind_delay_ms(b),
                                     run->host->stop);
                continue;
            }
            gf__keeper_set_ack_wait(st->keeper, b->ack_wait_ms);
        }
        int want = wait_for_idle(st);
        if (want == 0)
            continue;
        natsMsgList list = {0};
        int64_t poll = rc->fetch_expiry_ms < STOP_POLL_MS ? rc->fetch_expiry_ms : STOP_POLL_MS;
        natsStatus s = gf__pull_fetch(b->sub, &list, want, poll);
        bool rebind = false;
        if (s == NATS_OK) {
            errors = 0;
            dispatch(st, &list);
            /* Busy: it exists; only keep the position fresh now and then. */
            rebind = gf__pull_check(b, POSITION_EVERY_MS) == GF_ERR_NOT_FOUND;
        } else if (s == NATS_TIMEOUT) {
            /* Idle, or the consumer is gone: look. */
            rebind = gf__pull_check(b, rc->fetch_expiry_ms) == GF_ERR_NOT_FOUND;
        } else {
            errors++;
            if (errors == 1 || errors % 10 == 0)
                gf_log_warn("fetch failed", "endpoint=%s status=%d errors=%d", run->ep->name,
                            (int)s, errors);
            rebind = errors >= REBIND_AFTER_ERRORS || s == NATS_INVALID_SUBSCRIPTION;
            gf_clock_sleep_until(gf_clock_mono_ms() + gf_backoff_ms(errors, 200, 2000, 0),
                                 run->host->stop);
        }
        natsMsgList_Destroy(&list);
        if (rebind && wait_until_quiet(st)) {
            gf__pull_unbind(b);
            errors = 0;
        }
    }
    /* Stop: workers finish what they run; nothing new is handed out. */
    pthread_mutex_lock(&st->mu);
    st->stopping = true;
    while (st->count > 0) { /* promised but not started: back to the server at once */
        natsMsg *m = st->queue[st->head];
        st->head = (st->head + 1) % (size_t)st->nworkers;
        st->count--;
        natsMsg_Nak(m, NULL);
        natsMsg_Destroy(m);
    }
    pthread_cond_broadcast(&st->work);
    while (st->busy > 0)
        timed_wait(&st->changed, &st->mu, WAIT_STEP_MS);
    pthread_mutex_unlock(&st->mu);
    size_t late = gf__pull_hand_back(b);
    if (late)
        gf_log_info("late deliveries handed back", "endpoint=%s messages=%zu", run->ep->name, late);
    gf__pull_unbind(b);
    return NULL;
}

static const gf_consumer_config *pull_consumer(const gf__endpoint_run *run)
{
    return gf_config_consumer(run->host->cfg, run->ep->pull.stream, run->ep->pull.consumer);
}

/* The endpoint's stream and durable consumer, from config. */
static gf_err pull_provision(gf__endpoint_run *run, gf_provision_result *res)
{
    const gf_pull_endpoint *p = &run->ep->pull;
    const gf_consumer_config *cc = pull_consumer(run);
    if (!cc || cc->partitions > 0) {
        snprintf(res->message, sizeof res->message,
                 "endpoint %s: consumer %s/%s is not in config (jetstream.consumers)%s",
                 run->ep->name, p->stream ? p->stream : "(null)",
                 p->consumer ? p->consumer : "(null)",
                 cc ? " as a plain consumer (it is a partitioned group)" : "");
        return GF_ERR_CONFIG;
    }
    return gf__pull_provision(run, cc, res);
}

/* $SRV shows what the consumer reads: its filter subject, else the stream. */
static void pull_describe(const gf__endpoint_run *run, gf_srv_endpoint *out)
{
    const gf_consumer_config *cc = pull_consumer(run);
    out->subject = cc && cc->filter_subject ? cc->filter_subject : run->ep->pull.stream;
    out->queue_group = NULL;
}

static void pull_free(pull_state *st)
{
    if (!st)
        return;
    gf__keeper_stop(st->keeper);
    gf__health_fini(&st->health);
    pthread_cond_destroy(&st->work);
    pthread_cond_destroy(&st->changed);
    pthread_mutex_destroy(&st->mu);
    free(st->queue);
    free(st);
}

static gf_err pull_start(gf__endpoint_run *run)
{
    const gf_runtime_config *rc = &run->host->cfg->runtime;
    const gf_consumer_config *cc = pull_consumer(run);
    if (!cc || cc->partitions > 0 || !run->ep->pull.on_message)
        return GF_ERR_INVALID;
    pull_state *st = calloc(1, sizeof *st);
    if (!st)
        return GF_ERR_NOMEM;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&st->mu, NULL);
    gf__health_init(&st->health);
    pthread_cond_init(&st->work, NULL);
    pthread_cond_init(&st->changed, &attr);
    pthread_condattr_destroy(&attr);
    st->run = run;
    st->cc = cc;
    st->nworkers = (int)(rc->max_in_flight > 0 ? rc->max_in_flight : 1);
    st->batch = (int)(rc->fetch_batch > 0 ? rc->fetch_batch : 1);
    st->queue = calloc((size_t)st->nworkers, sizeof *st->queue);
    gf__pull_binding_init(&st->bind, run, cc, gf_config_stream(run->host->cfg, cc->stream),
                          &st->health);
    run->state = st;
    gf_err err = st->queue ? gf__keeper_start(run->ep->name, &st->keeper) : GF_ERR_NOMEM;
    for (int i = 0; i < st->nworkers && err == GF_OK; i++)
        err = gf__threads_start(&st->threads, worker_thread, st);
    if (err == GF_OK)
        err = gf__threads_start(&st->threads, fetcher_thread, st);
    return err;
}

static bool pull_stop(gf__endpoint_run *run, int64_t deadline_ms)
{
    pull_state *st = run->state;
    if (!st)
        return true;
    /* The fetcher sees the stop flag; if start failed half-way it may not exist, so
     * tell the workers directly as well. */
    pthread_mutex_lock(&st->mu);
    if (st->threads.n < (size_t)st->nworkers + 1) {
        st->stopping = true;
        pthread_cond_broadcast(&st->work);
    }
    pthread_mutex_unlock(&st->mu);
    if (!gf__threads_join(&st->threads, deadline_ms))
        return false; /* a handler still runs and uses st */
    pull_free(st);
    run->state = NULL;
    return true;
}

static bool pull_check(gf__endpoint_run *run, char *why, size_t why_size)
{
    pull_state *st = run->state;
    return !st || gf__health_check(&st->health, run, NULL, why, why_size);
}

const gf__endpoint_ops gf__endpoint_pull_ops = {
    .name = "pull",
    .abandoned = "its un-acked messages are redelivered by JetStream after their ack wait",
    .provision = pull_provision,
    .describe = pull_describe,
    .start = pull_start,
    .stop = pull_stop,
    .check = pull_check,
};
