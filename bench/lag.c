/*
 * lag.c — `gamefn-bench lag`: what the lag monitor costs on nats-server 2.9.10.
 *
 * Design notes:
 * - Its own single-node nats-server (support/natsd) with the event mapping of
 *   deploy/local/nats.conf.in; stream EVENTS; --events events with the producer's source
 *   headers, spread over 16 partitions; two groups of 16 partition durables: `behind`
 *   (nothing consumed: every event pending) and `idle` (created after the events with
 *   deliver new: nothing pending).
 * - Consumer info: the mean time of one js_GetConsumerInfo of a `behind` durable against
 *   one of an `idle` durable (the baseline), each over the 16 partitions, median of
 *   --rounds. nats-server computes num_pending of a filtered consumer by scanning, so the
 *   first grows with what is pending.
 * - The oldest-unacked read of a partition durable (MSG.GET next_by_subj from seq 1).
 * - A whole poll (functions/lag/poll.c: stream info, consumer list, one oldest-unacked
 *   read per lagging consumer) of the 32 durables, median of --rounds: what the monitor's
 *   leader costs the server every interval.
 * - The gap observer's read rate: the headers-only ordered consumer feeding the gap
 *   tracker (functions/lag/gaps.c) over the whole stream, against a plain ordered
 *   consumer delivering the events with their payload (the baseline), median of --rounds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nats/nats.h>

#include "bench.h"
#include "gamefn/clock.h"
#include "gaps.h"
#include "natsd.h"
#include "poll.h"

enum { PARTITIONS = 16, ROUNDS_MAX = 15 };

typedef struct lopts {
    long long events;
    int rounds, payload;
    bool json;
} lopts;

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench lag [options]\n\n"
               "What the lag monitor costs a fresh single-node nats-server: consumer info of a\n"
               "partition durable with every event pending against one with none, a whole poll\n"
               "of 32 durables, and the gap observer's headers-only read rate against an\n"
               "ordered consumer with payloads.\n\n"
               "options:\n"
               "  --events N   events, 1000..5000000 (default 320000)\n"
               "  --payload N  bytes per event body, 1..10000 (default 200)\n"
               "  --rounds N   rounds, median taken, 1..15 (default 3)\n"
               "  --json       one JSON object as the last line of stdout\n");
}

static int parse(int argc, char **argv, lopts *o)
{
    *o = (lopts){.events = 320000, .rounds = 3, .payload = 200};
    const gf_bench_opt opts[] = {
        GF_BENCH_OPT("events", &o->events, 1000, 5000000),
        GF_BENCH_OPT("payload", &o->payload, 1, 10000),
        GF_BENCH_OPT("rounds", &o->rounds, 1, ROUNDS_MAX),
        GF_BENCH_FLAG_OPT("json", &o->json),
    };
    return gf_bench_options("lag", argc, argv, opts, sizeof opts / sizeof opts[0], usage);
}

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[n / 2];
}

static int setup(jsCtx *js, const lopts *o)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = {"gamefn.v1.evp.>"};
    sc.Name = "EVENTS";
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    if (js_AddStream(NULL, js, &sc, NULL, NULL) != NATS_OK)
        return -1;
    for (int p = 0; p < PARTITIONS; p++) {
        char name[32], filter[64];
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        snprintf(name, sizeof name, "behind-p%02d", p);
        snprintf(filter, sizeof filter, "gamefn.v1.evp.%d.>", p);
        cc.Durable = name;
        cc.FilterSubject = filter;
        cc.AckPolicy = js_AckExplicit;
        if (js_AddConsumer(NULL, js, "EVENTS", &cc, NULL, NULL) != NATS_OK)
            return -1;
    }
    char *data = malloc((size_t)o->payload);
    if (!data)
        return -1;
    memset(data, 'e', (size_t)o->payload);
    for (long long i = 0; i < o->events; i++) {
        char subject[64], seq[24];
        snprintf(subject, sizeof subject, "gamefn.v1.event.p%lld.ping", i % 10000);
        snprintf(seq, sizeof seq, "%lld", i / 4 + 1);
        natsMsg *m = NULL;
        natsStatus s = natsMsg_Create(&m, subject, NULL, data, o->payload);
        char source[16];
        snprintf(source, sizeof source, "gs-%lld", i % 4);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(m, "Gamefn-Source", source);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(m, "Gamefn-Source-Seq", seq);
        if (s == NATS_OK)
            s = js_PublishMsgAsync(js, &m, NULL);
        natsMsg_Destroy(m);
        if (s != NATS_OK) {
            free(data);
            return -1;
        }
    }
    free(data);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 120000;
    if (js_PublishAsyncComplete(js, &po) != NATS_OK)
        return -1;
    for (int p = 0; p < PARTITIONS; p++) { /* after the events: nothing pending */
        char name[32], filter[64];
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        snprintf(name, sizeof name, "idle-p%02d", p);
        snprintf(filter, sizeof filter, "gamefn.v1.evp.%d.>", p);
        cc.Durable = name;
        cc.FilterSubject = filter;
        cc.AckPolicy = js_AckExplicit;
        cc.DeliverPolicy = js_DeliverNew;
        if (js_AddConsumer(NULL, js, "EVENTS", &cc, NULL, NULL) != NATS_OK)
            return -1;
    }
    return 0;
}

/* Mean ms of one consumer info of group's 16 durables. */
static double info_ms(jsCtx *js, const char *group)
{
    int64_t t0 = gf_clock_mono_ns();
    for (int p = 0; p < PARTITIONS; p++) {
        char name[32];
        snprintf(name, sizeof name, "%s-p%02d", group, p);
        jsConsumerInfo *ci = NULL;
        if (js_GetConsumerInfo(&ci, js, "EVENTS", name, NULL, NULL) != NATS_OK)
            return -1;
        jsConsumerInfo_Destroy(ci);
    }
    return (double)(gf_clock_mono_ns() - t0) / 1e6 / PARTITIONS;
}

/* Events/s reading the whole stream: the gap observer, or an ordered consumer with payload. */
static double read_rate(natsConnection *nc, jsCtx *js, bool observer, long long events)
{
    int64_t t0 = gf_clock_mono_ns();
    long long seen = 0;
    if (observer) {
        lag_gap_config cfg = {.enabled = true,
                              .stream = "EVENTS",
                              .grace_ms = 60000,
                              .window = 1024,
                              .max_holes = 4096,
                              .forget_after_ms = 86400000,
                              .max_listed = 100};
        lag_gaps *g = NULL;
        char why[256];
        if (lag_gaps_start(nc, js, &cfg, 0, &g, why, sizeof why) != GF_OK)
            return -1;
        Gamefn__V1__GapSummary sum = GAMEFN__V1__GAP_SUMMARY__INIT;
        Gamefn__V1__LagReport rep = GAMEFN__V1__LAG_REPORT__INIT;
        rep.gaps = &sum;
        while ((long long)sum.last_stream_seq < events &&
               gf_clock_mono_ns() - t0 < 120 * 1000000000LL) {
            lag_gaps_pump(g, 50);
            lag_gaps_report(g, &rep);
        }
        seen = (long long)sum.last_stream_seq;
        if (sum.suspected != 0)
            fprintf(stderr, "lag: the observer reported %" PRIu64 " gaps in a gapless stream\n",
                    sum.suspected);
        lag_gaps_stop(g);
    } else {
        jsSubOptions so;
        jsSubOptions_Init(&so);
        so.Stream = "EVENTS";
        so.Ordered = true;
        natsSubscription *sub = NULL;
        if (js_SubscribeSync(&sub, js, "gamefn.v1.evp.>", NULL, &so, NULL) != NATS_OK)
            return -1;
        natsSubscription_SetPendingLimits(sub, 1000000, 256 * 1024 * 1024);
        natsMsg *m = NULL;
        while (seen < events && natsSubscription_NextMsg(&m, sub, 5000) == NATS_OK) {
            seen++;
            natsMsg_Destroy(m);
        }
        natsSubscription_Unsubscribe(sub);
        natsSubscription_Destroy(sub);
    }
    if (seen < events)
        return -1;
    return (double)events / ((double)(gf_clock_mono_ns() - t0) / 1e9);
}

int gf_bench_lag(int argc, char **argv)
{
    lopts o;
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 2 : 0;
    gf_natsd *srv = NULL;
    gf_natsd_opts so = {.extra_config = "mappings {\n  \"gamefn.v1.event.*.*\": "
                                        "\"gamefn.v1.evp.{{partition(16,1)}}.{{wildcard(1)}}."
                                        "{{wildcard(2)}}\"\n}\n"};
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 30000;
    jo.PublishAsync.MaxPending = 4096;
    int code = 1;
    if (gf_natsd_start(&so, &srv) != 0 ||
        natsConnection_ConnectTo(&nc, gf_natsd_url(srv)) != NATS_OK ||
        natsConnection_JetStream(&js, nc, &jo) != NATS_OK || setup(js, &o) != 0) {
        fprintf(stderr, "gamefn-bench lag: setup failed: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    double behind[ROUNDS_MAX], idle[ROUNDS_MAX], poll[ROUNDS_MAX], obs[ROUNDS_MAX], raw[ROUNDS_MAX];
    double oldest[ROUNDS_MAX];
    int consumers = 0;
    for (int r = 0; r < o.rounds; r++) {
        behind[r] = info_ms(js, "behind");
        idle[r] = info_ms(js, "idle");
        const char *streams[] = {"EVENTS"};
        lag_poll_result res;
        char why[256];
        int64_t t0 = gf_clock_mono_ns();
        if (behind[r] < 0 || idle[r] < 0 ||
            lag_poll(nc, js, streams, 1, &res, why, sizeof why) != GF_OK) {
            fprintf(stderr, "gamefn-bench lag: consumer info failed\n");
            goto out;
        }
        poll[r] = (double)(gf_clock_mono_ns() - t0) / 1e6;
        consumers = (int)res.len;
        lag_poll_free(&res);
        t0 = gf_clock_mono_ns();
        for (int p = 0; p < PARTITIONS; p++) {
            char filter[64];
            uint64_t seq = 0;
            int64_t at = 0;
            snprintf(filter, sizeof filter, "gamefn.v1.evp.%d.>", p);
            if (lag_poll_next_stored(nc, "EVENTS", filter, 1, &seq, &at) != GF_OK) {
                fprintf(stderr, "gamefn-bench lag: oldest read failed\n");
                goto out;
            }
        }
        oldest[r] = (double)(gf_clock_mono_ns() - t0) / 1e6 / PARTITIONS;
        obs[r] = read_rate(nc, js, true, o.events);
        raw[r] = read_rate(nc, js, false, o.events);
        if (obs[r] < 0 || raw[r] < 0) {
            fprintf(stderr, "gamefn-bench lag: reading the stream failed\n");
            goto out;
        }
    }
    double b = median(behind, o.rounds), i = median(idle, o.rounds), p = median(poll, o.rounds);
    double ob = median(obs, o.rounds), ra = median(raw, o.rounds), ol = median(oldest, o.rounds);
    long long per_partition = o.events / PARTITIONS;
    printf("events %lld (%lld pending per partition durable), medians of %d rounds\n", o.events,
           per_partition, o.rounds);
    printf("consumer info, every event pending: %.2f ms (baseline, nothing pending: %.2f ms; "
           "ratio %.1f)\n",
           b, i, i > 0 ? b / i : 0);
    printf("oldest unacked read (MSG.GET next_by_subj) of a partition: %.2f ms\n", ol);
    printf("whole poll of %d durables (16 behind): %.1f ms\n", consumers, p);
    printf("gap observer (headers only + tracker): %.0f events/s; ordered consumer with payload: "
           "%.0f events/s (ratio %.2f)\n",
           ob, ra, ra > 0 ? ob / ra : 0);
    if (o.json) {
        json_t *j =
            json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:i, s:f, s:f, s:f, s:f}", "events",
                      (json_int_t)o.events, "pending_per_durable", (json_int_t)per_partition,
                      "info_behind_ms", b, "info_idle_ms", i, "info_ratio", i > 0 ? b / i : 0,
                      "oldest_read_ms", ol, "poll_consumers", consumers, "poll_ms", p,
                      "observer_events_per_s", ob, "ordered_events_per_s", ra, "observer_ratio",
                      ra > 0 ? ob / ra : 0);
        if (j) {
            json_dumpf(j, stdout, JSON_COMPACT);
            putchar('\n');
            json_decref(j);
        }
    }
    code = 0;
out:
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
    return code;
}
