/*
 * events_load.c — `gamefn-bench events`: the plan, the publisher, the effect observer and
 * the raw pipeline (events.h).
 *
 * Design notes:
 * - Publisher: one thread, js_PublishMsgAsync with PublishAsync.MaxPending bounded by
 *   the caller's context. Eight sources take turns, so no source has more than W = 1024
 *   events in flight (the consumers' window assumption) with a window of 4096. Pacing
 *   (a rate) publishes event i at t0 + i / rate.
 * - Observer: a plain subscription on the consumer's acks ($JS.ACK.EVENTS.>: a copy of
 *   every ack the consumer sends the server). The framework acks an event only after its
 *   effect is stored (an ack is "effect applied"), and the bench is the stream's only
 *   publisher, on one connection, so plan event i is stream sequence i + 1 and the ack's
 *   subject names it. With explicit acks that is one ack per event, and it marks that
 *   event alone. With ack_policy all the worker acks a batch once, by its last handled
 *   message: an ack of stream sequence S from durable <group>-p<NN> says every event of
 *   partition NN up to S is applied, so the observer keeps one cursor per partition over
 *   that partition's plan events (precomputed in the plan, stream order, the partition
 *   from gf_partition_of as the server's mapping computes it) and marks each up to S.
 *   Marks are compare-and-swap from 0, so an event is timed by the first ack that covers
 *   it; a +TERM marks its own event only, as an anomaly. The cursors belong to the
 *   subscription's one delivery thread (set before it subscribes): no lock; eff_ns and
 *   the counters are atomics, read by the thread that waits. An ack whose durable's
 *   partition is not its event's is counted (mismatched) and marks that event alone: the
 *   plan's partitions would then be wrong, and so the sweep. Costs the server one small
 *   core message per ack (per event or per batch), not a second reader of the bucket.
 *   Whether effects are right is not taken from acks: the final check reads the stored
 *   scores (events.c).
 * - Raw pipeline: the same event bytes, to a stream of their own on a second subject
 *   space, published with Msg-Ids by this thread while a second thread (own connection)
 *   fetches batches from one durable and acks every message; the clock runs from the
 *   first publish until the fetcher acked the last one.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/effect_record.h"
#include "gamefn/fetch.h"
#include "gamefn/partition.h"
#include "gamefn/util.h"
#include "gamefn/v1/event.pb-c.h"
#include "gamefn/v1/state.pb-c.h"

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

int ev_plan_init(ev_plan *p, size_t events, size_t players, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->events = events;
    p->players = players;
    p->player = calloc(events, sizeof *p->player);
    p->delta = calloc(events, sizeof *p->delta);
    p->pub_ns = calloc(events, sizeof *p->pub_ns);
    p->eff_ns = calloc(events, sizeof *p->eff_ns);
    p->idx = calloc(players, sizeof *p->idx);
    p->cum = calloc(players, sizeof *p->cum);
    p->n = calloc(players, sizeof *p->n);
    p->player_part = calloc(players, sizeof *p->player_part);
    if (!p->player || !p->delta || !p->pub_ns || !p->eff_ns || !p->idx || !p->cum || !p->n ||
        !p->player_part)
        return -1;
    for (size_t q = 0; q < players; q++) {
        char id[32];
        snprintf(id, sizeof id, "pl%zu", q); /* the player id pack() writes */
        p->player_part[q] = (uint8_t)gf_partition_of(id, EV_PARTITIONS);
    }
    for (size_t i = 0; i < events; i++) {
        uint64_t h = mix(seed + i);
        p->player[i] = (uint32_t)(h % players);
        p->delta[i] = ((int64_t)1 << EV_COUNT_SHIFT) + (int64_t)((h >> 32) % 1000) + 1;
        p->n[p->player[i]]++;
        p->part_n[p->player_part[p->player[i]]]++;
    }
    for (int k = 0; k < EV_PARTITIONS; k++) {
        p->part_idx[k] = calloc(p->part_n[k] ? p->part_n[k] : 1, sizeof *p->part_idx[k]);
        if (!p->part_idx[k])
            return -1;
        p->part_n[k] = 0;
    }
    for (size_t q = 0; q < players; q++) {
        p->idx[q] = calloc(p->n[q] ? p->n[q] : 1, sizeof **p->idx);
        p->cum[q] = calloc(p->n[q] ? p->n[q] : 1, sizeof **p->cum);
        if (!p->idx[q] || !p->cum[q])
            return -1;
        p->n[q] = 0;
    }
    for (size_t i = 0; i < events; i++) {
        uint32_t q = p->player[i];
        size_t k = p->n[q]++;
        p->idx[q][k] = i;
        p->cum[q][k] = (k ? p->cum[q][k - 1] : 0) + p->delta[i];
        uint8_t part = p->player_part[q];
        p->part_idx[part][p->part_n[part]++] = i;
    }
    return 0;
}

void ev_plan_fini(ev_plan *p)
{
    for (size_t q = 0; p->idx && q < p->players; q++) {
        free(p->idx[q]);
        free(p->cum[q]);
    }
    free(p->player);
    free(p->delta);
    free((void *)(uintptr_t)p->pub_ns);
    free((void *)(uintptr_t)p->eff_ns);
    free(p->idx);
    free(p->cum);
    free(p->n);
    free(p->player_part);
    for (int k = 0; k < EV_PARTITIONS; k++)
        free(p->part_idx[k]);
    memset(p, 0, sizeof *p);
}

/* ---- publishing ------------------------------------------------------------------------- */

static _Atomic long long failed_acks;

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    (void)closure;
    if (!pa || pae)
        atomic_fetch_add(&failed_acks, 1);
    natsMsg_Destroy(msg);
}

/* The GameEvent of plan event i: source i % 8, seq i / 8 + 1 (a source's seqs in order). */
static int pack(const ev_plan *p, size_t i, uint8_t *buf, size_t size, size_t *len, char *source,
                uint64_t *seq, char *player)
{
    char event_id[96];
    *seq = i / EV_SOURCES + 1;
    snprintf(source, 32, "bench-s%zu", i % EV_SOURCES);
    snprintf(player, 32, "pl%" PRIu32, p->player[i]);
    snprintf(event_id, sizeof event_id, "%s-%" PRIu64, source, *seq);
    Gamefn__V1__ScoreEvent sc = GAMEFN__V1__SCORE_EVENT__INIT;
    sc.delta = p->delta[i];
    Gamefn__V1__GameEvent ev = GAMEFN__V1__GAME_EVENT__INIT;
    char type[] = "score";
    ev.event_id = event_id;
    ev.source_id = source;
    ev.source_seq = *seq;
    ev.player_id = player;
    ev.event_type = type;
    ev.occurred_unix_ms = 1764547200000 + (int64_t)i;
    ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE;
    ev.score = &sc;
    *len = gamefn__v1__game_event__get_packed_size(&ev);
    if (*len > size)
        return -1;
    gamefn__v1__game_event__pack(&ev, buf);
    return 0;
}

int ev_publish(jsCtx *js, ev_plan *p, size_t from, size_t to, double rate,
               const char *subject_prefix, ev_give_up give_up, void *arg)
{
    int64_t t0 = gf_clock_mono_ns(), next_check = t0;
    for (size_t i = from; i < to; i++) {
        if (give_up && gf_clock_mono_ns() >= next_check) {
            if (give_up(arg))
                return -1;
            next_check = gf_clock_mono_ns() + 100000000;
        }
        if (rate > 0) {
            int64_t due = t0 + (int64_t)((double)(i - from) * 1e9 / rate);
            for (int64_t now = gf_clock_mono_ns(); now < due; now = gf_clock_mono_ns()) {
                struct timespec ts = {0, due - now > 200000 ? 100000 : 20000};
                nanosleep(&ts, NULL);
            }
        }
        uint8_t buf[256];
        size_t len = 0;
        char source[32], player[32], subject[96], seqtext[24], id[64];
        uint64_t seq = 0;
        if (pack(p, i, buf, sizeof buf, &len, source, &seq, player) != 0)
            return -1;
        if (subject_prefix)
            snprintf(subject, sizeof subject, "%s.%s", subject_prefix, player);
        else
            snprintf(subject, sizeof subject, "gamefn.v1.event.%s.score", player);
        snprintf(seqtext, sizeof seqtext, "%" PRIu64, seq);
        snprintf(id, sizeof id, "%s-%" PRIu64, source, seq);
        natsMsg *m = NULL;
        natsStatus s = natsMsg_Create(&m, subject, NULL, (const char *)buf, (int)len);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(m, "Nats-Msg-Id", id);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(m, "Gamefn-Source", source);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(m, "Gamefn-Source-Seq", seqtext);
        atomic_store(&p->pub_ns[i], gf_clock_mono_ns());
        while (s == NATS_OK && (s = js_PublishMsgAsync(js, &m, NULL)) == NATS_TIMEOUT)
            s = NATS_OK; /* the window is full: wait for room */
        natsMsg_Destroy(m);
        if (s != NATS_OK) {
            fprintf(stderr, "events: publish: %s\n", natsStatus_GetText(s));
            return -1;
        }
    }
    return 0;
}

jsCtx *ev_js(natsConnection *nc)
{
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 4096;
    jo.PublishAsync.StallWait = 10000;
    jo.PublishAsync.AckHandler = on_ack;
    jsCtx *js = NULL;
    return natsConnection_JetStream(&js, nc, &jo) == NATS_OK ? js : NULL;
}

long long ev_publish_wait(jsCtx *js)
{
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 120000;
    js_PublishAsyncComplete(js, &po);
    return atomic_load(&failed_acks);
}

/* ---- the observer: the consumer's acks ------------------------------------------------ */

/* $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending> (the
 * nats-server 2.9 form): the stream sequence (6th token; 0 when there is none) and into
 * *partition NN of a consumer "<group>-p<NN>" (4th token), -1 when it is not one or NN is
 * not below EV_PARTITIONS. */
static uint64_t ack_parse(const char *subject, int *partition)
{
    const char *tok[6] = {subject};
    int n = 0;
    for (const char *p = subject; *p && n < 5; p++) {
        if (*p == '.')
            tok[++n] = p + 1;
    }
    *partition = -1;
    if (n < 5)
        return 0;
    const char *dash = NULL, *end = tok[4] - 1; /* the consumer is [tok[3], end) */
    for (const char *p = tok[3]; p < end; p++) {
        if (*p == '-')
            dash = p;
    }
    if (dash && dash[1] == 'p' && dash + 2 < end) {
        int nn = 0;
        const char *p = dash + 2;
        for (; p < end && *p >= '0' && *p <= '9' && nn < EV_PARTITIONS; p++)
            nn = nn * 10 + (*p - '0');
        if (p == end && nn < EV_PARTITIONS)
            *partition = nn;
    }
    return strtoull(tok[5], NULL, 10);
}

/* Plan event i's effect seen now, unless an earlier ack or term saw it. */
static void observer_mark(ev_observer *o, size_t i, bool term)
{
    int64_t zero = 0;
    if (atomic_compare_exchange_strong(&o->plan->eff_ns[i], &zero, gf_clock_mono_ns()))
        atomic_fetch_add(term ? &o->anomalies : &o->total, 1);
}

static void on_consumer_ack(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    ev_observer *o = closure;
    const ev_plan *p = o->plan;
    const char *body = natsMsg_GetData(m);
    int len = natsMsg_GetDataLength(m), part = -1;
    bool ack = len == 0 || (len >= 4 && strncmp(body, "+ACK", 4) == 0);
    bool term = len >= 5 && strncmp(body, "+TERM", 5) == 0;
    uint64_t seq = ack || term ? ack_parse(natsMsg_GetSubject(m), &part) : 0;
    if (seq >= 1 && seq <= p->events) {
        size_t i = (size_t)(seq - 1);
        if (term || !o->ack_all) {
            observer_mark(o, i, term);
        } else if (part < 0 || part != p->player_part[p->player[i]]) {
            atomic_fetch_add(&o->mismatched, 1);
            observer_mark(o, i, false);
        } else { /* cumulative: the durable's events up to i, in stream order */
            const size_t *idx = p->part_idx[part];
            size_t *c = &o->cursor[part];
            for (; *c < p->part_n[part] && idx[*c] <= i; (*c)++)
                observer_mark(o, idx[*c], false);
        }
    }
    natsMsg_Destroy(m);
}

int ev_observer_start(ev_observer *o, ev_plan *p, const char *url, bool ack_all, size_t from)
{
    memset(o, 0, sizeof *o);
    o->plan = p;
    o->ack_all = ack_all;
    for (int k = 0; k < EV_PARTITIONS; k++) { /* set before the callback can run */
        while (o->cursor[k] < p->part_n[k] && p->part_idx[k][o->cursor[k]] < from)
            o->cursor[k]++;
    }
    if (natsConnection_ConnectTo(&o->nc, url) != NATS_OK ||
        natsConnection_Subscribe(&o->sub, o->nc, "$JS.ACK.EVENTS.>", on_consumer_ack, o) !=
            NATS_OK ||
        natsSubscription_SetPendingLimits(o->sub, -1, -1) != NATS_OK ||
        natsConnection_Flush(o->nc) != NATS_OK)
        return -1;
    return 0;
}

void ev_observer_stop(ev_observer *o)
{
    gf_sub_close(o->sub, 2000); /* its callback uses o */
    natsConnection_Destroy(o->nc);
    memset(o, 0, sizeof *o);
}

int64_t ev_observer_wait(ev_observer *o, long long count, size_t from, size_t to,
                         int64_t timeout_ms, ev_give_up give_up, void *arg)
{
    int64_t deadline = gf_clock_mono_ms() + timeout_ms;
    /* A terminated (dead-lettered) event has no effect to wait for: it counts as seen,
     * and the results report it as an anomaly. */
    for (unsigned naps = 0; atomic_load(&o->total) + atomic_load(&o->anomalies) < count; naps++) {
        if (gf_clock_mono_ms() > deadline || (give_up && naps % 50 == 0 && give_up(arg)))
            return -1;
        gf_clock_sleep_ms(2);
    }
    int64_t last = 0;
    for (size_t i = from; i < to; i++) {
        int64_t e = atomic_load(&o->plan->eff_ns[i]);
        last = e > last ? e : last;
    }
    return last;
}

int64_t ev_drained_wait(jsCtx *js, const char *group, int partitions, int64_t timeout_ms,
                        ev_give_up give_up, void *arg)
{
    int64_t deadline = gf_clock_mono_ms() + timeout_ms;
    for (unsigned polls = 0; gf_clock_mono_ms() <= deadline; polls++) {
        bool drained = true;
        for (int p = 0; p < partitions && drained; p++) {
            char durable[64];
            jsConsumerInfo *ci = NULL;
            snprintf(durable, sizeof durable, "%s-p%02d", group, p);
            drained = js_GetConsumerInfo(&ci, js, "EVENTS", durable, NULL, NULL) == NATS_OK &&
                      ci->NumPending == 0 && ci->NumAckPending == 0;
            jsConsumerInfo_Destroy(ci);
        }
        if (drained) /* the end of the poll that saw it: never earlier than the drain */
            return gf_clock_mono_ns();
        if (give_up && polls % 5 == 4 && give_up(arg))
            return -1;
        gf_clock_sleep_ms(20);
    }
    return -1;
}

/* ---- the raw pipeline -------------------------------------------------------------------- */

typedef struct raw_fetch {
    natsConnection *nc;
    natsSubscription *sub;
    size_t want;
    int batch;
    int64_t done_ns;
    size_t got;
} raw_fetch;

static void *raw_fetch_main(void *arg)
{
    raw_fetch *f = arg;
    int idle = 0;
    while (f->got < f->want && idle < 100) {
        natsMsgList list = {0};
        if (gf_pull_fetch(f->sub, &list, f->batch, 100) != NATS_OK) {
            idle++;
            continue;
        }
        idle = 0;
        for (int i = 0; i < list.Count; i++)
            natsMsg_Ack(list.Msgs[i], NULL);
        f->got += (size_t)list.Count;
        natsMsgList_Destroy(&list);
    }
    natsConnection_Flush(f->nc); /* the server has read every ack */
    f->done_ns = gf_clock_mono_ns();
    return NULL;
}

double ev_raw_pipeline(natsConnection *pub_nc, natsConnection *sub_nc, ev_plan *p, size_t n,
                       int batch)
{
    jsCtx *pub = ev_js(pub_nc), *sub = NULL;
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = {"rawbench.>"};
    sc.Name = "RAW_BENCH";
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "raw";
    cc.AckPolicy = js_AckExplicit;
    cc.MaxAckPending = 20000;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "RAW_BENCH";
    so.Consumer = "raw";
    raw_fetch f = {.nc = sub_nc, .want = n, .batch = batch};
    pthread_t t;
    if (!pub || natsConnection_JetStream(&sub, sub_nc, NULL) != NATS_OK ||
        js_AddStream(NULL, pub, &sc, NULL, NULL) != NATS_OK ||
        js_AddConsumer(NULL, pub, "RAW_BENCH", &cc, NULL, NULL) != NATS_OK ||
        js_PullSubscribe(&f.sub, sub, "rawbench.>", "raw", NULL, &so, NULL) != NATS_OK) {
        fprintf(stderr, "events: raw pipeline setup: %s\n", nats_GetLastError(NULL));
        return 0;
    }
    jsCtx_Destroy(sub);
    int64_t t0 = gf_clock_mono_ns();
    pthread_create(&t, NULL, raw_fetch_main, &f);
    int rc = ev_publish(pub, p, 0, n, 0, "rawbench", NULL, NULL);
    long long failed = ev_publish_wait(pub);
    pthread_join(t, NULL);
    natsSubscription_Destroy(f.sub);
    jsCtx_Destroy(pub);
    if (rc != 0 || failed != 0 || f.got != n) {
        fprintf(stderr, "events: raw pipeline: %zu of %zu fetched, %lld failed publishes\n", f.got,
                n, failed);
        return 0;
    }
    return (double)n / ((double)(f.done_ns - t0) / 1e9);
}
