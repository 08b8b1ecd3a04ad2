/*
 * raw_js.c — `gamefn-bench raw` JetStream phases: async publish with a unique
 * Msg-Id per message, then durable pull fetch + per-message ack of that stream.
 *
 * Design notes:
 * - Publish: js_PublishAsync with PublishAsync.MaxPending bounded (an unbounded
 *   window is slower and grows memory: docs/NATS-FACTS.md §9). A publish that stalls on the window
 *   returns NATS_TIMEOUT without sending, so it is retried; a stray re-send would
 *   come back as a Duplicate ack and fail the verification. The rate counts from
 *   the first publish until js_PublishAsyncComplete saw the last ack.
 * - Verification of publish: every message acked, none duplicate, none failed, and
 *   the stream holds exactly that many messages. The ack counters live on the heap
 *   and are only freed once no ack can arrive any more.
 * - Fetch: a durable created with js_AddConsumer (never implicitly:
 *   unsubscribing would delete it, docs/NATS-FACTS.md §4)
 *   with MaxAckPending raised above the default 1000, bound with so.Stream +
 *   so.Consumer. natsSubscription_Fetch returns early with partial batches (NATS-FACTS §3).
 *   Each message carries its publish index in its first 8 bytes, so the fetch
 *   checks order and completeness as it goes; the clock stops after a Flush, once
 *   the server has read every ack; then the consumer must show ack floor = count,
 *   nothing pending ack and nothing redelivered.
 */
#include "raw.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pub_state {
    atomic_llong ok;
    atomic_llong dup;
    atomic_llong failed;
    atomic_int first_code; /* jsErrCode of the first failure, -1 = none yet */
    atomic_int first_status;
} pub_state;

/* nats.c thread: one call per published message; owns and destroys msg. */
static void pub_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    pub_state *st = closure;
    if (pa && !pae) {
        if (pa->Duplicate)
            atomic_fetch_add(&st->dup, 1);
        else
            atomic_fetch_add(&st->ok, 1);
    } else {
        atomic_fetch_add(&st->failed, 1);
        int none = -1;
        if (pae && atomic_compare_exchange_strong(&st->first_code, &none, (int)pae->ErrCode))
            atomic_store(&st->first_status, (int)pae->Err);
    }
    natsMsg_Destroy(msg);
}

static uint64_t payload_index(const char *data)
{
    uint64_t index;
    memcpy(&index, data, sizeof index);
    return index;
}

int gf_raw_create_stream(jsCtx *js, const char *name, const char *subject)
{
    jsStreamConfig cfg;
    jsErrCode jerr = 0;
    jsStreamConfig_Init(&cfg);
    cfg.Name = name;
    cfg.Subjects = &subject;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = 1;
    natsStatus s = js_AddStream(NULL, js, &cfg, NULL, &jerr);
    if (s != NATS_OK) {
        fprintf(stderr, "raw: create stream %s: %s (jsErrCode %d)\n", name, nats_GetLastError(NULL),
                (int)jerr);
        return -1;
    }
    return 0;
}

static int create_stream(jsCtx *js, const gf_raw_opts *o, gf_raw_results *r)
{
    snprintf(r->stream, sizeof r->stream, "BENCH_%s", o->run_id);
    snprintf(r->subject, sizeof r->subject, "bench.%s.>", o->run_id);
    if (gf_raw_create_stream(js, r->stream, r->subject) != 0) {
        r->stream[0] = '\0';
        return -1;
    }
    return 0;
}

int gf_raw_publish(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r)
{
    int rc = -1;
    jsCtx *js = NULL;
    char *payload = NULL;
    jsStreamInfo *si = NULL;
    bool quiet = true; /* false while acks may still arrive into *st */
    pub_state *st = calloc(1, sizeof *st);
    char subj[96];
    snprintf(subj, sizeof subj, "bench.%s.pub", o->run_id);

    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 10000;
    jo.PublishAsync.MaxPending = o->max_pending;
    jo.PublishAsync.StallWait = 1000;
    jo.PublishAsync.AckHandler = pub_ack;
    jo.PublishAsync.AckHandlerClosure = st;
    if (!st) {
        fprintf(stderr, "raw: out of memory\n");
        goto out;
    }
    atomic_init(&st->first_code, -1);
    if (natsConnection_JetStream(&js, nc, &jo) != NATS_OK) {
        fprintf(stderr, "raw: JetStream context: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    if (create_stream(js, o, r) != 0)
        goto out;
    payload = malloc((size_t)o->payload);
    if (!payload) {
        fprintf(stderr, "raw: out of memory\n");
        goto out;
    }

    fprintf(stderr, "raw: [publish] async, unique Msg-Id, MaxPending %d, %d-byte payloads\n",
            o->max_pending, o->payload);
    long long sent = 0;
    double t0 = gf_raw_now(), last = t0;
    quiet = false;
    while (!gf_raw_done(o, t0, sent)) {
        char id[48];
        snprintf(id, sizeof id, "%s-%lld", o->run_id, sent);
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MsgId = id;
        gf_raw_fill_payload(payload, o->payload, (uint64_t)sent);
        natsStatus s;
        while ((s = js_PublishAsync(js, subj, payload, o->payload, &po)) == NATS_TIMEOUT)
            r->publish_stalls++;
        if (s != NATS_OK) {
            fprintf(stderr, "raw: publish %lld: %s\n", sent, nats_GetLastError(NULL));
            goto out;
        }
        sent++;
        if ((sent & 1023) == 0)
            gf_raw_progress("publish", t0, sent, &last);
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 30000;
    if (js_PublishAsyncComplete(js, &po) != NATS_OK) {
        fprintf(stderr, "raw: publish: acks still missing after 30 s: %s\n",
                nats_GetLastError(NULL));
        goto out;
    }
    r->publish.secs = gf_raw_now() - t0;
    r->publish.count = sent;
    quiet = true;

    long long ok = atomic_load(&st->ok), dup = atomic_load(&st->dup);
    long long bad = atomic_load(&st->failed);
    if (ok != sent || dup != 0 || bad != 0) {
        fprintf(stderr,
                "raw: publish: sent %lld but acked %lld, duplicate %lld, failed %lld "
                "(first failure: %s, jsErrCode %d)\n",
                sent, ok, dup, bad, natsStatus_GetText((natsStatus)atomic_load(&st->first_status)),
                atomic_load(&st->first_code));
        goto out;
    }
    if (js_GetStreamInfo(&si, js, r->stream, NULL, NULL) != NATS_OK) {
        fprintf(stderr, "raw: stream info: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    if (si->State.Msgs != (uint64_t)sent || si->State.FirstSeq != 1 ||
        si->State.LastSeq != (uint64_t)sent) {
        fprintf(stderr,
                "raw: publish: stream holds %llu messages (seq %llu..%llu), expected %lld\n",
                (unsigned long long)si->State.Msgs, (unsigned long long)si->State.FirstSeq,
                (unsigned long long)si->State.LastSeq, sent);
        goto out;
    }
    rc = 0;
out:
    jsStreamInfo_Destroy(si);
    free(payload);
    jsCtx_Destroy(js);
    if (quiet) /* otherwise a late ack could still write to it: leak, we are exiting */
        free(st);
    return rc;
}

/* Waits (bounded) until the server has applied every ack we sent. */
static int check_consumer(jsCtx *js, const gf_raw_results *r, const char *name, long long got)
{
    jsConsumerInfo *ci = NULL;
    for (int tries = 0; tries < 100; tries++) {
        jsConsumerInfo_Destroy(ci);
        ci = NULL;
        if (js_GetConsumerInfo(&ci, js, r->stream, name, NULL, NULL) != NATS_OK) {
            fprintf(stderr, "raw: consumer info: %s\n", nats_GetLastError(NULL));
            return -1;
        }
        if (ci->NumAckPending == 0 && ci->AckFloor.Stream == (uint64_t)got)
            break;
        nats_Sleep(20);
    }
    int rc = 0;
    if (ci->NumAckPending != 0 || ci->AckFloor.Stream != (uint64_t)got || ci->NumRedelivered != 0 ||
        ci->NumPending != (uint64_t)(r->publish.count - got)) {
        fprintf(stderr,
                "raw: fetch: consumer shows ack floor %llu, ack pending %lld, redelivered %lld, "
                "pending %llu after acking %lld of %lld\n",
                (unsigned long long)ci->AckFloor.Stream, (long long)ci->NumAckPending,
                (long long)ci->NumRedelivered, (unsigned long long)ci->NumPending, got,
                r->publish.count);
        rc = -1;
    }
    jsConsumerInfo_Destroy(ci);
    return rc;
}

int gf_raw_fetch(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r)
{
    int rc = -1;
    jsCtx *js = NULL;
    natsSubscription *sub = NULL;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    const char *durable = "bench_fetch";

    if (natsConnection_JetStream(&js, nc, NULL) != NATS_OK) {
        fprintf(stderr, "raw: JetStream context: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = durable;
    cc.AckPolicy = js_AckExplicit;
    cc.DeliverPolicy = js_DeliverAll;
    cc.MaxAckPending = 20000; /* default 1000 would throttle batches of 500 */
    if (js_AddConsumer(&ci, js, r->stream, &cc, NULL, &jerr) != NATS_OK) {
        fprintf(stderr, "raw: add consumer: %s (jsErrCode %d)\n", nats_GetLastError(NULL),
                (int)jerr);
        goto out;
    }
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = r->stream;
    so.Consumer = durable;
    if (js_PullSubscribe(&sub, js, r->subject, durable, NULL, &so, &jerr) != NATS_OK) {
        fprintf(stderr, "raw: pull subscribe: %s (jsErrCode %d)\n", nats_GetLastError(NULL),
                (int)jerr);
        goto out;
    }

    fprintf(stderr, "raw: [fetch] durable pull, batch %d, per-message ack, %lld messages\n",
            o->batch, r->publish.count);
    long long got = 0;
    int empty = 0;
    double t0 = gf_raw_now(), last = t0;
    while (got < r->publish.count && !gf_raw_done(o, t0, got)) {
        natsMsgList list = {0};
        natsStatus s = natsSubscription_Fetch(&list, sub, o->batch, 2000, &jerr);
        if (s == NATS_TIMEOUT) {
            if (++empty >= 3) {
                fprintf(stderr, "raw: fetch: nothing delivered for 6 s after %lld of %lld\n", got,
                        r->publish.count);
                goto out;
            }
            continue;
        }
        if (s != NATS_OK) {
            fprintf(stderr, "raw: fetch: %s (jsErrCode %d)\n", nats_GetLastError(NULL), (int)jerr);
            goto out;
        }
        empty = 0;
        bool bad = false;
        for (int i = 0; i < list.Count && !bad; i++) {
            natsMsg *m = list.Msgs[i];
            if (natsMsg_GetDataLength(m) != o->payload ||
                payload_index(natsMsg_GetData(m)) != (uint64_t)got) {
                fprintf(stderr, "raw: fetch: message %lld out of order or malformed\n", got);
                bad = true;
            } else if (natsMsg_Ack(m, NULL) != NATS_OK) {
                fprintf(stderr, "raw: ack: %s\n", nats_GetLastError(NULL));
                bad = true;
            } else {
                got++;
            }
        }
        natsMsgList_Destroy(&list);
        if (bad)
            goto out;
        gf_raw_progress("fetch", t0, got, &last);
    }
    if (natsConnection_Flush(nc) != NATS_OK) { /* the server has read every ack */
        fprintf(stderr, "raw: flush: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    r->fetch.secs = gf_raw_now() - t0;
    r->fetch.count = got;
    if (got == 0) {
        fprintf(stderr, "raw: fetch: no message fetched\n");
        goto out;
    }
    if (check_consumer(js, r, durable, got) != 0)
        goto out;
    rc = 0;
out:
    jsConsumerInfo_Destroy(ci);
    natsSubscription_Destroy(sub); /* bound: destroying never deletes the durable */
    jsCtx_Destroy(js);
    return rc;
}

void gf_raw_js_cleanup(natsConnection *nc, const gf_raw_results *r)
{
    jsCtx *js = NULL;
    if (!r->stream[0] || natsConnection_JetStream(&js, nc, NULL) != NATS_OK)
        return;
    if (js_DeleteStream(js, r->stream, NULL, NULL) != NATS_OK)
        fprintf(stderr, "raw: could not delete stream %s: %s\n", r->stream,
                nats_GetLastError(NULL));
    jsCtx_Destroy(js);
}
