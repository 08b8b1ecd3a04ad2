/*
 * endpoint_pull.c — durable pull consumer endpoints.
 *
 * Design notes:
 * - One thread per endpoint runs fetch -> handle -> ack, so a message is acked only
 *   after its handler returned GF_OK (at-least-once; handlers are idempotent).
 * - Fetching is two-step because of nats.c 3.4.1 (docs/NATS-FACTS.md §3): a NoWait fetch
 *   takes whatever is ready, up to the batch; only when nothing is ready does a
 *   long poll wait (expiry + idle heartbeat) for the next message, so latency stays
 *   low without busy polling. Both carry an expiry, so no request is ever left open
 *   at the server when fetch() returns (see fetch()). The batch is
 *   min(fetch_batch, max_in_flight): that bounds how many messages this instance
 *   holds un-acked.
 * - Errors other than "no messages" (disconnect, missed heartbeat, leader change,
 *   consumer gone) back off and, when persistent, re-bind the subscription, so pulls
 *   resume by themselves after a reconnect or a JetStream leader change.
 * - The consumer is bound (created by provisioning), never created by the subscribe
 *   call, so destroying the subscription can never delete the durable (docs/NATS-FACTS.md §4).
 * - On shutdown the thread finishes the batch it holds, acks it, and exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints/endpoint.h"
#include "gamefn/backoff.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/provision.h"
#include "nats/nats_err.h"

enum { REBIND_AFTER_ERRORS = 3 };

typedef struct pull_state {
    const gf_consumer_config *consumer; /* borrowed from the config */
} pull_state;

static const gf_consumer_config *pull_consumer(const gf__endpoint_run *run)
{
    return gf_config_consumer(run->host->cfg, run->ep->pull.stream, run->ep->pull.consumer);
}

/* Binds to the durable consumer; if it was deleted under us, recreates it from config
 * first. On failure `why` says what went wrong (the caller logs it). */
static gf_err bind(gf__endpoint_run *run, const gf_consumer_config *cc, natsSubscription **sub,
                   char *why, size_t why_size)
{
    jsCtx *js = run->host->js;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = cc->stream;
    so.Consumer = cc->name;
    jsErrCode jerr = 0;
    natsStatus s = js_PullSubscribe(sub, js, cc->filter_subject, cc->name, NULL, &so, &jerr);
    if (s != NATS_OK && (s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr)) {
        gf_provision_result res;
        gf_err err = gf_provision_consumer(js, cc, false, &res);
        if (err != GF_OK) {
            snprintf(why, why_size, "%s", res.message);
            return err;
        }
        s = js_PullSubscribe(sub, js, cc->filter_subject, cc->name, NULL, &so, &jerr);
    }
    if (s != NATS_OK)
        snprintf(why, why_size, "%s", gf__nats_last_error(s));
    return gf__nats_err(s);
}

/* Returns NATS_OK with at least one message, NATS_TIMEOUT when none came within the
 * expiry, or an error.
 *
 * nats.c 3.4.1 details that matter here (js.c _fetch; docs/NATS-FACTS.md §3): a NoWait request
 * without Expires returns as soon as no message is *already* queued locally, so the server's answer
 * can land in the subscription after the fetch returned — a message delivered but never handled
 * until its ack wait runs out. With Expires set, the fetch waits for the server's "404 no messages"
 * that ends a NoWait request, so every message the request produced is in the returned list. */
static natsStatus fetch(natsSubscription *sub, natsMsgList *list, int batch,
                        const gf_runtime_config *rc)
{
    jsFetchRequest req;
    jsFetchRequest_Init(&req);
    req.Batch = batch;
    req.NoWait = true;
    req.Expires = rc->fetch_expiry_ms * 1000000LL;
    natsStatus s = natsSubscription_FetchRequest(list, sub, &req);
    if (s == NATS_OK || (s != NATS_NOT_FOUND && s != NATS_TIMEOUT))
        return s;
    natsMsgList_Destroy(list);

    /* Nothing ready: long-poll for one message (a full batch would wait the whole
     * expiry when fewer arrive), with idle heartbeats to notice a dead server. */
    jsFetchRequest_Init(&req);
    req.Batch = 1;
    req.Expires = rc->fetch_expiry_ms * 1000000LL;
    if (rc->heartbeat_ms > 0 && rc->heartbeat_ms * 2 <= rc->fetch_expiry_ms)
        req.Heartbeat = rc->heartbeat_ms * 1000000LL;
    s = natsSubscription_FetchRequest(list, sub, &req);
    return s == NATS_NOT_FOUND ? NATS_TIMEOUT : s;
}

/* Redelivery delay for attempt `delivered` (1-based): the consumer's own backoff list
 * when it has one, else 1 s doubling up to 30 s. */
static int64_t nak_delay_ms(const gf_consumer_config *cc, uint64_t delivered)
{
    size_t i = delivered > 0 ? (size_t)(delivered - 1) : 0;
    if (cc->backoff_ms_len > 0)
        return cc->backoff_ms[i < cc->backoff_ms_len ? i : cc->backoff_ms_len - 1];
    return gf_backoff_ms(delivered < 64 ? (int)delivered : 64, 1000, 30000, 0);
}

static void handle_one(gf__endpoint_run *run, const gf_consumer_config *cc, natsMsg *m)
{
    jsMsgMetaData *md = NULL;
    gf_msg msg = {
        .subject = natsMsg_GetSubject(m),
        .data = (const uint8_t *)natsMsg_GetData(m),
        .len = (size_t)natsMsg_GetDataLength(m),
        .nats = m,
    };
    if (natsMsg_GetMetaData(&md, m) == NATS_OK) {
        msg.stream_seq = md->Sequence.Stream;
        msg.num_delivered = md->NumDelivered;
        msg.timestamp_ns = md->Timestamp;
    }
    jsMsgMetaData_Destroy(md);

    int64_t start = gf_clock_mono_ns();
    gf_err err = run->ep->pull.on_message(run->host->fn, &msg);
    if (err == GF_OK) {
        natsMsg_Ack(m, NULL);
    } else if (err == GF_ERR_PERMANENT || err == GF_ERR_INVALID) {
        gf_log_warn("message rejected for good", "endpoint=%s seq=%llu deliveries=%llu err=%s",
                    run->ep->name, (unsigned long long)msg.stream_seq,
                    (unsigned long long)msg.num_delivered, gf_err_str(err));
        natsMsg_Term(m, NULL);
    } else {
        int64_t delay = nak_delay_ms(cc, msg.num_delivered);
        gf_log_warn("message will be redelivered",
                    "endpoint=%s seq=%llu deliveries=%llu err=%s delay_ms=%lld", run->ep->name,
                    (unsigned long long)msg.stream_seq, (unsigned long long)msg.num_delivered,
                    gf_err_str(err), (long long)delay);
        natsMsg_NakWithDelay(m, delay, NULL);
    }
    gf__endpoint_record(run, start, err, NULL);
}

static void *pull_thread(void *arg)
{
    gf__endpoint_run *run = arg;
    const pull_state *st = run->state;
    const gf_runtime_config *rc = &run->host->cfg->runtime;
    int batch = (int)(rc->fetch_batch < rc->max_in_flight ? rc->fetch_batch : rc->max_in_flight);
    natsSubscription *sub = NULL;
    int errors = 0;
    if (batch < 1)
        batch = 1;

    while (!atomic_load(run->host->stop)) {
        char why[512] = "";
        gf_err err = sub ? GF_OK : bind(run, st->consumer, &sub, why, sizeof why);
        if (err != GF_OK) {
            char quoted[600];
            errors++;
            gf_log_warn("cannot bind consumer yet",
                        "endpoint=%s consumer=%s attempt=%d err=%s detail=%s", run->ep->name,
                        st->consumer->name, errors, gf_err_str(err),
                        gf_log_quote(quoted, sizeof quoted, why));
            gf_clock_sleep_ms(gf_backoff_ms(errors, 400, 5000, 0));
            continue;
        }
        natsMsgList list = {0};
        natsStatus s = fetch(sub, &list, batch, rc);
        if (s == NATS_OK) {
            errors = 0;
            for (int i = 0; i < list.Count; i++)
                handle_one(run, st->consumer, list.Msgs[i]);
        } else if (s != NATS_TIMEOUT) {
            errors++;
            if (errors == 1 || errors % 10 == 0)
                gf_log_warn("fetch failed", "endpoint=%s status=%d errors=%d", run->ep->name,
                            (int)s, errors);
            if (errors >= REBIND_AFTER_ERRORS || s == NATS_INVALID_SUBSCRIPTION) {
                natsSubscription_Destroy(sub);
                sub = NULL;
            }
            gf_clock_sleep_ms(gf_backoff_ms(errors, 200, 2000, 0));
        }
        natsMsgList_Destroy(&list);
    }
    natsSubscription_Destroy(sub);
    atomic_store(&run->thread_done, 1);
    return NULL;
}

/* The endpoint's stream and durable consumer, from config. */
static gf_err pull_provision(gf__endpoint_run *run, gf_provision_result *res)
{
    const gf__endpoint_host *host = run->host;
    gf_err err = gf_provision_stream_named(host->js, host->cfg, run->ep->pull.stream, res);
    if (err == GF_OK)
        err = gf_provision_consumer_named(host->js, host->cfg, run->ep->pull.stream,
                                          run->ep->pull.consumer, res);
    return err;
}

/* $SRV shows what the consumer reads: its filter subject, else the stream. */
static void pull_describe(const gf__endpoint_run *run, gf_srv_endpoint *out)
{
    const gf_consumer_config *cc = pull_consumer(run);
    out->subject = cc && cc->filter_subject ? cc->filter_subject : run->ep->pull.stream;
    out->queue_group = NULL;
}

static gf_err pull_start(gf__endpoint_run *run)
{
    const gf_consumer_config *cc = pull_consumer(run);
    if (!cc || !run->ep->pull.on_message)
        return GF_ERR_INVALID;
    pull_state *st = calloc(1, sizeof *st);
    if (!st)
        return GF_ERR_NOMEM;
    st->consumer = cc;
    run->state = st;
    return gf__endpoint_thread_start(run, pull_thread);
}

static bool pull_stop(gf__endpoint_run *run, int64_t deadline_ms)
{
    if (!gf__endpoint_thread_join(run, deadline_ms))
        return false;
    free(run->state);
    run->state = NULL;
    return true;
}

const gf__endpoint_ops gf__endpoint_pull_ops = {
    .name = "pull",
    .abandoned = "its un-acked messages are redelivered by JetStream after their ack wait",
    .provision = pull_provision,
    .describe = pull_describe,
    .start = pull_start,
    .stop = pull_stop,
};
