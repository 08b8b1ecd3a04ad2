/*
 * pull_consumer.c — binding, position, fetching and metadata of one durable consumer (see
 * pull_consumer.h).
 *
 * Design notes:
 * - The consumer is bound (created by provisioning), never created by the subscribe call,
 *   so destroying the subscription can never delete the durable (nats.c 3.4.1:
 *   unsubscribing a durable that js_PullSubscribe created deletes it).
 * - A vanished consumer or stream is not an error a fetch reports: nats-server 2.9.10
 *   simply never answers a pull request to a consumer that does not exist (docs/
 *   NATS-FACTS.md §3), so the fetch times out exactly like an idle one. gf__pull_check
 *   therefore asks for the consumer's info when a fetch comes back empty (at most every few
 *   seconds).
 * - What is missing is provisioned again, because the function owns it: the stream from
 *   config (its messages are gone: logged), the consumer from the position last seen.
 *   Position: nats-server 2.9.10 keeps a consumer's ack floor *behind* a message that
 *   exhausted max_deliver forever (docs/NATS-FACTS.md §3), so the floor alone would replay
 *   every dead letter and all that followed. When nothing is pending (num_ack_pending 0),
 *   everything delivered is resolved and the position is the last delivered sequence;
 *   otherwise it is the ack floor. Both only grow, so the binding keeps the highest seen.
 *   Recreating from a stale position replays a bounded, logged window (at-least-once;
 *   handlers are idempotent); it never skips an unresolved message.
 * - Fetching is two-step because of nats.c 3.4.1 (docs/NATS-FACTS.md §3): a NoWait request
 *   takes whatever is ready; only when nothing is does a long poll (with an expiry, no idle
 *   heartbeat: see gf__pull_fetch) wait for one message, so latency stays low without busy polling.
 * A NoWait request without an expiry returns as soon as nothing is queued locally, so the server's
 *   answer can land after the fetch returned — a message delivered but never handled until
 *   its ack wait runs out. With an expiry, the fetch waits for the server's "404 no
 *   messages" that ends a NoWait request, so every message the request produced is in the
 *   returned list, and no request stays open at the server.
 */
#include "endpoints/pull_consumer.h"

#include "gamefn/fetch.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/backoff.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "nats/nats_err.h"
#include "provision/provision_consumer.h"

enum { UNHEALTHY_AFTER_FAILURES = 3, NOWAIT_MIN_MS = 500 };

gf_err gf__pull_provision(const gf__endpoint_run *run, const gf_consumer_config *cc,
                          gf_provision_result *res)
{
    jsCtx *js = run->host->js;
    gf_err err = gf_provision_stream_named(js, run->host->cfg, cc->stream, res);
    if (err == GF_OK)
        err = gf_provision_consumer(js, cc, false, res);
    if (err != GF_OK || res->outcome != GF_PROVISION_CREATED || cc->deliver != GF_DELIVER_ALL)
        return err;
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, js, cc->stream, NULL, NULL) == NATS_OK && si->State.Msgs > 0)
        gf_log_warn("consumer created with deliver=all on a stream that holds messages: every "
                    "one is delivered (was it deleted while no instance ran?)",
                    "endpoint=%s consumer=%s/%s stream_messages=%" PRIu64
                    " stream_first_seq=%" PRIu64 " stream_last_seq=%" PRIu64,
                    run->ep->name, cc->stream, cc->name, si->State.Msgs, si->State.FirstSeq,
                    si->State.LastSeq);
    jsStreamInfo_Destroy(si);
    return GF_OK;
}

void gf__pull_binding_init(gf__pull_binding *b, const gf__endpoint_run *run,
                           const gf_consumer_config *cc, const gf_stream_config *stream,
                           gf__health *health)
{
    memset(b, 0, sizeof *b);
    b->run = run;
    b->health = health;
    b->cc = cc;
    b->stream = stream;
}

static bool stream_missing(natsStatus s, jsErrCode jerr)
{
    return s != NATS_OK && jerr == JSStreamNotFoundErr;
}

static bool consumer_missing(natsStatus s, jsErrCode jerr)
{
    return s != NATS_OK && !stream_missing(s, jerr) &&
           (s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr);
}

/* bound: just bound, so the consumer's delivery count is where this reader starts. A
 * later look never moves it: a count beyond what the reader got is the very gap
 * gf__pull_in_turn finds with the reader's next delivery. */
static void observe(gf__pull_binding *b, const jsConsumerInfo *ci, bool bound)
{
    if (ci->Config && ci->Config->AckWait > 0) {
        int64_t lo = ci->Config->AckWait, hi = lo;
        for (int i = 0; i < ci->Config->BackOffLen; i++) {
            if (ci->Config->BackOff[i] > 0 && ci->Config->BackOff[i] < lo)
                lo = ci->Config->BackOff[i];
            if (ci->Config->BackOff[i] > hi)
                hi = ci->Config->BackOff[i];
        }
        b->ack_wait_ms = lo / 1000000;
        b->ack_wait_max_ms = hi / 1000000;
    }
    b->num_ack_pending = (uint64_t)ci->NumAckPending;
    if (bound) {
        b->delivered_seq = ci->Delivered.Consumer;
        b->delivered_elsewhere = false;
    }
    uint64_t at = ci->NumAckPending == 0 ? ci->Delivered.Stream : ci->AckFloor.Stream;
    if (!b->floor_known || at > b->floor)
        b->floor = at;
    b->floor_known = true;
}

/* Reads the stream's info; a stream created anew since we last looked restarts the
 * sequence space, so the old position means nothing. */
static natsStatus stream_info(gf__pull_binding *b, jsStreamInfo **si, jsErrCode *jerr)
{
    natsStatus s = js_GetStreamInfo(si, b->run->host->js, b->cc->stream, NULL, jerr);
    if (s == NATS_OK) {
        if (b->stream_created_ns != 0 && (*si)->Created != b->stream_created_ns)
            b->floor_known = false;
        b->stream_created_ns = (*si)->Created;
    }
    return s;
}

static void set_health(gf__pull_binding *b, const char *problem)
{
    gf__health_set(b->health, b->run, problem);
}

static gf_err recreate_stream(gf__pull_binding *b)
{
    gf_provision_result res;
    char problem[700], quoted[600];
    if (!b->stream) {
        snprintf(problem, sizeof problem, "stream %s is missing and is not in config",
                 b->cc->stream);
        set_health(b, problem);
        return GF_ERR_NOT_FOUND;
    }
    gf_err err = gf_provision_stream(b->run->host->js, b->stream, false, &res);
    if (err != GF_OK) {
        snprintf(problem, sizeof problem, "stream %s is missing and cannot be recreated: %s",
                 b->cc->stream, res.message);
        set_health(b, problem);
        return err;
    }
    gf_log_warn("stream was missing and has been recreated: its stored messages are lost",
                "endpoint=%s stream=%s detail=%s", b->run->ep->name, b->cc->stream,
                gf_log_quote(quoted, sizeof quoted, res.message));
    b->floor_known = false; /* a new sequence space */
    b->stream_created_ns = 0;
    return GF_OK;
}

/* The consumer is gone but its stream is there: create it again from where it was. */
static gf_err recreate_consumer(gf__pull_binding *b)
{
    const gf_consumer_config *cc = b->cc;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    uint64_t start = 0, first = 0, last = 0, msgs = 0;
    char problem[700];

    natsStatus s = stream_info(b, &si, &jerr);
    if (s != NATS_OK)
        return gf__nats_js_err(s, jerr);
    first = si->State.FirstSeq;
    last = si->State.LastSeq;
    msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    if (b->floor_known && b->floor <= last)
        start = b->floor + 1;

    gf_provision_result res;
    gf_err err = gf__provision_consumer_at(b->run->host->js, cc, start, &res);
    if (err != GF_OK) {
        snprintf(problem, sizeof problem, "consumer %s/%s is missing and cannot be recreated: %s",
                 cc->stream, cc->name, res.message);
        set_health(b, problem);
        return err;
    }
    if (res.outcome != GF_PROVISION_CREATED)
        return GF_OK; /* another instance recreated it first */
    if (start > 0)
        gf_log_warn("consumer was missing: recreated from the last known position, history "
                    "before it is not delivered again",
                    "endpoint=%s consumer=%s/%s deliver=by_start_sequence start_seq=%" PRIu64
                    " stream_first_seq=%" PRIu64 " stream_last_seq=%" PRIu64,
                    b->run->ep->name, cc->stream, cc->name, start, first, last);
    else
        gf_log_warn("consumer was missing: recreated with its configured deliver policy, no "
                    "position was known",
                    "endpoint=%s consumer=%s/%s deliver=%s stream_messages=%" PRIu64
                    " stream_first_seq=%" PRIu64 " stream_last_seq=%" PRIu64,
                    b->run->ep->name, cc->stream, cc->name,
                    cc->deliver == GF_DELIVER_ALL   ? "all (every stored message is delivered)"
                    : cc->deliver == GF_DELIVER_NEW ? "new"
                                                    : "last",
                    msgs, first, last);
    return GF_OK;
}

static natsStatus subscribe(gf__pull_binding *b, jsErrCode *jerr)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = b->cc->stream;
    so.Consumer = b->cc->name;
    *jerr = 0;
    return js_PullSubscribe(&b->sub, b->run->host->js, b->cc->filter_subject, b->cc->name, NULL,
                            &so, jerr);
}

gf_err gf__pull_bind(gf__pull_binding *b)
{
    jsErrCode jerr = 0;
    gf_err err = GF_OK;
    natsStatus s = subscribe(b, &jerr);
    if (stream_missing(s, jerr)) {
        if ((err = recreate_stream(b)) == GF_OK)
            s = subscribe(b, &jerr);
    }
    if (err == GF_OK && consumer_missing(s, jerr)) {
        if ((err = recreate_consumer(b)) == GF_OK)
            s = subscribe(b, &jerr);
    }
    if (err == GF_OK && s == NATS_OK) {
        jsStreamInfo *si = NULL;
        jsConsumerInfo *ci = NULL;
        if (stream_info(b, &si, NULL) == NATS_OK)
            jsStreamInfo_Destroy(si);
        /* Without it the unacked count and the delivery number would be the last bind's:
         * a bind is only complete with them. */
        s = js_GetConsumerInfo(&ci, b->run->host->js, b->cc->stream, b->cc->name, NULL, &jerr);
        if (s == NATS_OK)
            observe(b, ci, true);
        jsConsumerInfo_Destroy(ci);
        if (s != NATS_OK)
            gf__pull_unbind(b);
    }
    if (err == GF_OK && s == NATS_OK) {
        if (b->failures > 0)
            gf_log_info("consumer bound again", "endpoint=%s consumer=%s/%s attempts=%d",
                        b->run->ep->name, b->cc->stream, b->cc->name, b->failures + 1);
        b->failures = 0;
        b->checked_ms = gf_clock_mono_ms();
        set_health(b, NULL);
        return GF_OK;
    }
    if (err == GF_OK)
        err = gf__nats_js_err(s, jerr);
    b->failures++;
    if (b->failures == 1 || b->failures % 10 == 0)
        gf_log_warn("cannot bind consumer yet", "endpoint=%s consumer=%s/%s attempt=%d err=%s",
                    b->run->ep->name, b->cc->stream, b->cc->name, b->failures, gf_err_str(err));
    if (b->failures >= UNHEALTHY_AFTER_FAILURES) {
        char problem[600];
        snprintf(problem, sizeof problem, "cannot bind consumer %s/%s: %s", b->cc->stream,
                 b->cc->name, gf_err_str(err));
        /* Keep a more precise problem set by a failed recreation. */
        if (err != GF_ERR_CONFLICT && err != GF_ERR_INVALID)
            set_health(b, problem);
    }
    return err;
}

int64_t gf__pull_bind_delay_ms(const gf__pull_binding *b)
{
    return gf_backoff_ms(b->failures, 400, 5000, 0);
}

void gf__pull_acked(gf__pull_binding *b, uint64_t seq)
{
    if (!b->floor_known || seq > b->floor)
        b->floor = seq;
    b->floor_known = true;
}

gf_err gf__pull_check(gf__pull_binding *b, int64_t every_ms)
{
    int64_t now = gf_clock_mono_ms();
    if (now - b->checked_ms < every_ms)
        return GF_OK;
    b->checked_ms = now;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s =
        js_GetConsumerInfo(&ci, b->run->host->js, b->cc->stream, b->cc->name, NULL, &jerr);
    if (s == NATS_OK)
        observe(b, ci, false);
    jsConsumerInfo_Destroy(ci);
    if (stream_missing(s, jerr) || consumer_missing(s, jerr)) {
        gf_log_warn("consumer is gone; binding again", "endpoint=%s consumer=%s/%s missing=%s",
                    b->run->ep->name, b->cc->stream, b->cc->name,
                    stream_missing(s, jerr) ? "stream" : "consumer");
        return GF_ERR_NOT_FOUND;
    }
    return gf__nats_js_err(s, jerr);
}

bool gf__pull_in_turn(gf__pull_binding *b, uint64_t delivery_seq)
{
    if (b->delivered_elsewhere || delivery_seq != b->delivered_seq + 1) {
        b->delivered_elsewhere = true;
        return false;
    }
    b->delivered_seq = delivery_seq;
    return true;
}

void gf__pull_unbind(gf__pull_binding *b)
{
    /* A late answer to the last fetch (messages, a 408) may be arriving: the flush after
     * the unsubscribe first (docs/NATS-FACTS.md §4). Bound (so.Consumer), so the
     * unsubscribe never deletes the durable. */
    gf_sub_forget(b->run->host->nc, b->sub, GF_SUB_FORGET_WAIT_MS);
    b->sub = NULL;
}

/*
 * Messages already queued on the subscription (late deliveries for an earlier request
 * that had given up), taken one fetch of Batch 1 at a time. nats.c 3.4.1's fetch first
 * takes up to Batch queued messages (c of them), then asks the server for Batch - c and
 * collects until it holds exactly Batch - c: with c > Batch / 2 it never stops there and
 * writes past its array of Batch entries. The leaderboard's follower hit it under load
 * (1,049 messages in a list of 1,024: malloc aborts). A fetch of Batch 1 takes 0 or 1
 * queued message and cannot overflow. NATS_NOT_FOUND when nothing is queued. Not closed
 * completely: more than half a batch of late deliveries arriving between this check and
 * the full fetch would still hit it (newer nats.c fixes _fetch itself).
 */
static natsStatus fetch_queued(natsSubscription *sub, natsMsgList *list, int batch)
{
    int queued = 0;
    if (natsSubscription_GetPending(sub, &queued, NULL) != NATS_OK || queued <= 0)
        return NATS_NOT_FOUND;
    natsMsg **msgs = calloc((size_t)batch, sizeof *msgs);
    if (!msgs)
        return NATS_NO_MEMORY;
    int n = 0;
    while (n < batch && natsSubscription_GetPending(sub, &queued, NULL) == NATS_OK && queued > 0) {
        jsFetchRequest req;
        jsFetchRequest_Init(&req);
        req.Batch = 1;
        req.NoWait = true;
        req.Expires = 1000000000LL; /* a NoWait fetch still needs a wait for the 404 */
        natsMsgList one = {0};
        if (natsSubscription_FetchRequest(&one, sub, &req) != NATS_OK || one.Count != 1) {
            natsMsgList_Destroy(&one);
            break;
        }
        msgs[n++] = one.Msgs[0];
        one.Msgs[0] = NULL;
        natsMsgList_Destroy(&one);
    }
    if (n == 0) {
        free(msgs);
        return NATS_NOT_FOUND;
    }
    list->Msgs = msgs; /* natsMsgList_Destroy frees it with free() (nats.c's NATS_FREE) */
    list->Count = n;
    return NATS_OK;
}

/* How long a request sent now may stay open: the caller's poll, and with a deadline (0:
 * none) no longer than what is left of the poll begun at `end` - poll_ms and of the
 * deadline. */
static int64_t time_left(int64_t poll_ms, int64_t end, int64_t deadline_ms)
{
    if (deadline_ms == 0)
        return poll_ms;
    int64_t until = deadline_ms < end ? deadline_ms : end;
    return until - gf_clock_mono_ms();
}

natsStatus gf__pull_fetch_until(natsSubscription *sub, natsMsgList *list, int batch,
                                int64_t poll_ms, int64_t deadline_ms)
{
    memset(list, 0, sizeof *list);
    if (fetch_queued(sub, list, batch) == NATS_OK)
        return NATS_OK;
    int64_t end = gf_clock_mono_ms() + (poll_ms > 0 ? poll_ms : 0);
    jsFetchRequest req;
    natsStatus s = NATS_TIMEOUT;
    /* nats-server 2.9.10 holds a NoWait request with an expiry open for the whole expiry
     * when nothing is stored (NATS-FACTS.md §3): it is a long poll of its own, so it
     * waits no longer than the caller's poll (with a floor that leaves the server time
     * to answer). */
    int64_t left = time_left(poll_ms, end, deadline_ms);
    if (deadline_ms == 0 || left >= NOWAIT_MIN_MS) {
        jsFetchRequest_Init(&req);
        req.Batch = batch;
        req.NoWait = true;
        req.Expires = (left > NOWAIT_MIN_MS ? left : NOWAIT_MIN_MS) * 1000000LL;
        s = natsSubscription_FetchRequest(list, sub, &req);
        if (s == NATS_OK || (s != NATS_NOT_FOUND && s != NATS_TIMEOUT))
            return s;
        natsMsgList_Destroy(list);
    }
    /* Nothing ready: long-poll for one message (a full batch would wait the whole
     * expiry when fewer arrive), for what is left of the poll — and of the tenure. */
    left = time_left(poll_ms, end, deadline_ms);
    if (poll_ms <= 0 || left <= 0)
        return NATS_TIMEOUT;
    jsFetchRequest_Init(&req);
    req.Batch = 1;
    req.Expires = left * 1000000LL;
    s = natsSubscription_FetchRequest(list, sub, &req);
    return s == NATS_NOT_FOUND ? NATS_TIMEOUT : s;
}

natsStatus gf__pull_fetch(natsSubscription *sub, natsMsgList *list, int batch, int64_t poll_ms)
{
    return gf__pull_fetch_until(sub, list, batch, poll_ms, 0);
}

size_t gf__pull_hand_back(gf__pull_binding *b)
{
    size_t n = 0;
    natsMsgList list = {0};
    while (b->sub && fetch_queued(b->sub, &list, 1) == NATS_OK) {
        for (int i = 0; i < list.Count; i++, n++)
            natsMsg_Nak(list.Msgs[i], NULL);
        natsMsgList_Destroy(&list);
    }
    return n;
}

natsStatus gf_pull_fetch(natsSubscription *sub, natsMsgList *list, int batch, int64_t poll_ms)
{
    return gf__pull_fetch(sub, list, batch, poll_ms);
}

uint64_t gf__pull_msg(natsMsg *m, gf_msg *out)
{
    jsMsgMetaData *md = NULL;
    uint64_t delivery_seq = 0;
    memset(out, 0, sizeof *out);
    out->subject = natsMsg_GetSubject(m);
    out->data = (const uint8_t *)natsMsg_GetData(m);
    out->len = (size_t)natsMsg_GetDataLength(m);
    out->nats = m;
    if (natsMsg_GetMetaData(&md, m) == NATS_OK) {
        out->stream_seq = md->Sequence.Stream;
        out->num_delivered = md->NumDelivered;
        out->timestamp_ns = md->Timestamp;
        delivery_seq = md->Sequence.Consumer;
    }
    jsMsgMetaData_Destroy(md);
    return delivery_seq;
}

int64_t gf__pull_retry_delay_ms(const gf_consumer_config *cc, uint64_t delivered)
{
    size_t i = delivered > 0 ? (size_t)(delivered - 1) : 0;
    if (cc->backoff_ms_len > 0)
        return cc->backoff_ms[i < cc->backoff_ms_len ? i : cc->backoff_ms_len - 1];
    return gf_backoff_ms(delivered < 64 ? (int)delivered : 64, 1000, 30000, 0);
}
