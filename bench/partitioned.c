/*
 * partitioned.c — `gamefn-bench partitioned`: events per second through a partitioned
 * consumer (the runtime's GF_ENDPOINT_PARTITIONED), against the raw rate of pull fetch +
 * per-message ack measured on the same stream in the same run.
 *
 * Design notes:
 * - Its own single-node nats-server (support/natsd) with the event mapping
 *   bench.ev.<key> -> bench.evp.{{partition(16,1)}}.<key>; --events messages over --keys
 *   keys are published (async, acked) before anything is measured.
 * - Baseline: one plain durable over the whole stream, fetch --batch + natsMsg_Ack per
 *   message, one thread (what `gamefn-bench raw` calls fetch_ack_per_s).
 * - Then --replicas copies of gamefn-bench-consumer (bench/partitioned_fn.c, a handler
 *   that only counts) consume the 16 partitions with runtime.fetch_batch = --batch. Each
 *   batch reports its size on bench.consumer.progress; the rate is the messages reported
 *   after the first report divided by the time from the first to the last report, so
 *   process start, provisioning and lease acquisition are not counted.
 * - Verified before a figure is printed: every partition's consumer has nothing pending,
 *   nothing unacked and nothing redelivered, and the reports add up to --events.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <nats/nats.h>

#include "bench.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "natsd.h"
#include "proc.h"
#include "stack.h"

enum { PARTITIONS = 16, MAX_REPLICAS = 8 };

typedef struct popts {
    long long events;
    int keys, batch, replicas, payload;
    bool json, verbose;
} popts;

typedef struct progress {
    atomic_llong reported;
    _Atomic int64_t first_ns, last_ns;
    atomic_llong first_count;
    _Atomic int64_t part_first_ns[PARTITIONS], part_last_ns[PARTITIONS]; /* for --verbose */
} progress;

static void on_progress(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    progress *p = closure;
    char *end = NULL;
    long long n = strtoll(natsMsg_GetData(m), &end, 10);
    long part = strtol(end, NULL, 10);
    int64_t now = gf_clock_mono_ns();
    if (part >= 0 && part < PARTITIONS) {
        int64_t zero = 0;
        atomic_compare_exchange_strong(&p->part_first_ns[part], &zero, now);
        atomic_store(&p->part_last_ns[part], now);
    }
    int64_t zero = 0;
    if (atomic_compare_exchange_strong(&p->first_ns, &zero, now))
        atomic_store(&p->first_count, n);
    atomic_fetch_add(&p->reported, n);
    atomic_store(&p->last_ns, now);
    natsMsg_Destroy(m);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench partitioned [options]\n"
               "\n"
               "Events per second through a partitioned consumer (16 partitions) against the\n"
               "raw fetch + ack rate on the same stream, on a fresh single-node nats-server.\n"
               "\n"
               "options:\n"
               "  --events N     messages, 1000..10000000 (default 300000)\n"
               "  --keys N       distinct keys (players), 1..1000000 (default 10000)\n"
               "  --batch N      fetch batch, raw and runtime.fetch_batch, 1..10000 (default 256)\n"
               "  --replicas N   consumer processes, 1..8 (default 1)\n"
               "  --payload N    bytes per message, 1..100000 (default 200)\n"
               "  --verbose      per-partition times and the consumer's log (info level)\n"
               "  --json         print one JSON object as the last line of stdout\n");
}

static int parse(int argc, char **argv, popts *o)
{
    *o = (popts){.events = 300000, .keys = 10000, .batch = 256, .replicas = 1, .payload = 200};
    const gf_bench_opt opts[] = {
        GF_BENCH_OPT("events", &o->events, 1000, 10000000),
        GF_BENCH_OPT("keys", &o->keys, 1, 1000000),
        GF_BENCH_OPT("batch", &o->batch, 1, 10000),
        GF_BENCH_OPT("replicas", &o->replicas, 1, MAX_REPLICAS),
        GF_BENCH_OPT("payload", &o->payload, 1, 100000),
        GF_BENCH_FLAG_OPT("json", &o->json),
        GF_BENCH_FLAG_OPT("verbose", &o->verbose),
    };
    return gf_bench_options("partitioned", argc, argv, opts, sizeof opts / sizeof opts[0], usage);
}

static int publish_events(jsCtx *js, const popts *o)
{
    char *data = malloc((size_t)o->payload);
    if (!data)
        return -1;
    memset(data, 'e', (size_t)o->payload);
    for (long long i = 0; i < o->events; i++) {
        char subject[64];
        snprintf(subject, sizeof subject, "bench.ev.p%lld", i % o->keys);
        if (js_PublishAsync(js, subject, data, o->payload, NULL) != NATS_OK) {
            fprintf(stderr, "partitioned: publish: %s\n", nats_GetLastError(NULL));
            free(data);
            return -1;
        }
    }
    free(data);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    return js_PublishAsyncComplete(js, &po) == NATS_OK ? 0 : -1;
}

/* A plain durable on `filter`, created and bound; NULL on failure. */
static natsSubscription *raw_consumer(jsCtx *js, const char *name, const char *filter)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = name;
    cc.FilterSubject = filter;
    cc.AckPolicy = js_AckExplicit;
    cc.MaxAckPending = 20000;
    natsSubscription *sub = NULL;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "BENCH_EVENTS";
    so.Consumer = name;
    if (js_AddConsumer(NULL, js, "BENCH_EVENTS", &cc, NULL, NULL) != NATS_OK ||
        js_PullSubscribe(&sub, js, filter, name, NULL, &so, NULL) != NATS_OK)
        return NULL;
    return sub;
}

/* Fetch + per-message ack until `max` messages or a fetch of `wait_ms` finds none. */
static long long drain(natsSubscription *sub, int batch, int64_t wait_ms, long long max)
{
    long long got = 0;
    while (sub && got < max) {
        natsMsgList list = {0};
        if (natsSubscription_Fetch(&list, sub, batch, wait_ms, NULL) != NATS_OK)
            break;
        for (int i = 0; i < list.Count; i++)
            natsMsg_Ack(list.Msgs[i], NULL);
        got += list.Count;
        natsMsgList_Destroy(&list);
    }
    natsSubscription_Destroy(sub);
    return got;
}

/* Baseline: the whole stream through one plain durable, one thread. */
static double raw_rate(jsCtx *js, const popts *o)
{
    int64_t t0 = gf_clock_mono_ns();
    long long got = drain(raw_consumer(js, "raw", "bench.evp.>"), o->batch, 5000, o->events);
    double secs = (double)(gf_clock_mono_ns() - t0) / 1e9;
    return got == o->events ? (double)got / secs : 0;
}

/* The same work split like the runtime splits it: one plain filtered durable per
 * partition, each drained by its own thread. */
typedef struct raw_part {
    jsCtx *js;
    const popts *o;
    int partition;
    long long got;
} raw_part;

static void *raw_part_thread(void *arg)
{
    raw_part *rp = arg;
    char name[32], filter[64];
    snprintf(name, sizeof name, "rawp%02d", rp->partition);
    snprintf(filter, sizeof filter, "bench.evp.%d.>", rp->partition);
    rp->got = drain(raw_consumer(rp->js, name, filter), rp->o->batch, 1000, rp->o->events);
    return NULL;
}

static double raw_partitioned_rate(jsCtx *js, const popts *o)
{
    raw_part parts[PARTITIONS];
    pthread_t threads[PARTITIONS];
    int64_t t0 = gf_clock_mono_ns();
    long long got = 0;
    for (int p = 0; p < PARTITIONS; p++) {
        parts[p] = (raw_part){.js = js, .o = o, .partition = p};
        pthread_create(&threads[p], NULL, raw_part_thread, &parts[p]);
    }
    for (int p = 0; p < PARTITIONS; p++) {
        pthread_join(threads[p], NULL);
        got += parts[p].got;
    }
    /* Each thread ends after a 1 s fetch that found nothing. */
    double secs = (double)(gf_clock_mono_ns() - t0) / 1e9 - 1.0;
    return got == o->events && secs > 0 ? (double)got / secs : 0;
}

static int write_config(const char *path, const char *url, const popts *o)
{
    FILE *f = gf_bench_config_open("partitioned", path, url, o->verbose, o->batch, NULL);
    if (!f)
        return -1;
    fprintf(f,
            "jetstream:\n"
            "  streams:\n"
            "    - name: BENCH_EVENTS\n      subjects: [\"bench.evp.>\"]\n"
            "  consumers:\n"
            "    - stream: BENCH_EVENTS\n      name: bench\n      partitions: %d\n"
            "      filter_subject: \"bench.evp.{partition}.>\"\n      ack_wait: 30s\n"
            "      max_ack_pending: 20000\n"
            "  buckets:\n    - name: leases\n",
            PARTITIONS);
    return fclose(f) == 0 ? 0 : -1;
}

/* Every partition consumer has everything acked, nothing redelivered. */
static int verify(jsCtx *js, long long events)
{
    long long acked = 0;
    for (int p = 0; p < PARTITIONS; p++) {
        char name[32];
        jsConsumerInfo *ci = NULL;
        snprintf(name, sizeof name, "bench-p%02d", p);
        if (js_GetConsumerInfo(&ci, js, "BENCH_EVENTS", name, NULL, NULL) != NATS_OK)
            return -1;
        bool ok = ci->NumPending == 0 && ci->NumAckPending == 0 && ci->NumRedelivered == 0;
        acked += (long long)ci->AckFloor.Consumer;
        jsConsumerInfo_Destroy(ci);
        if (!ok) {
            fprintf(stderr, "partitioned: %s has pending, unacked or redelivered messages\n", name);
            return -1;
        }
    }
    if (acked != events) {
        fprintf(stderr, "partitioned: %lld acked of %lld\n", acked, events);
        return -1;
    }
    return 0;
}

int gf_bench_partitioned(int argc, char **argv)
{
    popts o;
    int rc = 1, p = parse(argc, argv, &o);
    if (p != 0)
        return p > 0 ? 0 : 2;
    gf_natsd_opts so = {.extra_config = "mappings {\n  \"bench.ev.*\": "
                                        "\"bench.evp.{{partition(16,1)}}.{{wildcard(1)}}\"\n}\n"};
    gf_natsd *srv = NULL;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    natsSubscription *sub = NULL;
    gf_bench_fns reps = {.bench = "partitioned"};
    progress prog = {0};
    char config[600], bin[1100];
    if (gf_natsd_start(&so, &srv) != 0)
        return 1;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 4096;
    jo.PublishAsync.StallWait = 10000;
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "BENCH_EVENTS";
    const char *subjects[] = {"bench.evp.>"};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    if (natsConnection_ConnectTo(&nc, gf_natsd_url(srv)) != NATS_OK ||
        natsConnection_JetStream(&js, nc, &jo) != NATS_OK ||
        js_AddStream(NULL, js, &sc, NULL, NULL) != NATS_OK) {
        fprintf(stderr, "partitioned: setup: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    fprintf(stderr, "partitioned: publishing %lld events over %d keys\n", o.events, o.keys);
    if (publish_events(js, &o) != 0)
        goto out;
    fprintf(stderr, "partitioned: raw fetch + ack baseline, batch %d\n", o.batch);
    double raw = raw_rate(js, &o);
    if (raw <= 0) {
        fprintf(stderr, "partitioned: the baseline did not get every message\n");
        goto out;
    }

    fprintf(stderr, "partitioned: raw baseline split in 16 filtered durables, a thread each\n");
    double raw16 = raw_partitioned_rate(js, &o);

    snprintf(config, sizeof config, "%s/bench.yaml", gf_natsd_dir(srv));
    gf_bench_near_me(bin, sizeof bin, "gamefn-bench-consumer");
    if (write_config(config, gf_natsd_url(srv), &o) != 0 ||
        natsConnection_Subscribe(&sub, nc, "bench.consumer.progress", on_progress, &prog) !=
            NATS_OK ||
        natsConnection_Flush(nc) != NATS_OK)
        goto out;
    reps.log_dir = gf_natsd_dir(srv);
    if (gf_bench_fns_replicas(&reps, bin, "bench-consumer", o.replicas, config) != GF_OK)
        goto out;
    int64_t deadline = gf_clock_mono_ms() + 120000;
    while (atomic_load(&prog.reported) < o.events && gf_clock_mono_ms() < deadline)
        gf_clock_sleep_ms(5);
    long long reported = atomic_load(&prog.reported);
    double secs = (double)(atomic_load(&prog.last_ns) - atomic_load(&prog.first_ns)) / 1e9;
    double rate = secs > 0 ? (double)(reported - atomic_load(&prog.first_count)) / secs : 0;
    gf_clock_sleep_ms(200); /* the last AckSync has returned to its worker */
    if (o.verbose) {
        for (int i = 0; i < PARTITIONS; i++)
            fprintf(stderr, "partitioned: partition %2d: %.3f s .. %.3f s\n", i,
                    (double)(atomic_load(&prog.part_first_ns[i]) - prog.first_ns) / 1e9,
                    (double)(atomic_load(&prog.part_last_ns[i]) - prog.first_ns) / 1e9);
        for (int i = 0; i < reps.n; i++)
            gf_proc_dump_log(&reps.procs[i], 200);
    }
    if (reported != o.events || verify(js, o.events) != 0) {
        fprintf(stderr, "partitioned: %lld of %lld events reported\n", reported, o.events);
        goto out;
    }
    printf("gamefn-bench partitioned: nats-server single node, file storage, %d-byte payloads, "
           "%lld events, %d keys, batch %d, %d replica(s)\n",
           o.payload, o.events, o.keys, o.batch, o.replicas);
    printf("  %-44s %10.0f msg/s\n", "raw pull fetch + per-message ack, 1 thread", raw);
    printf("  %-44s %10.0f msg/s\n", "raw, 16 filtered durables, a thread each", raw16);
    printf("  %-44s %10.0f msg/s  (%.2f of raw, %.2f of raw split)\n",
           "partitioned consumer, 16 partitions", rate, rate / raw, raw16 > 0 ? rate / raw16 : 0);
    if (o.json) {
        json_t *j =
            json_pack("{s:s, s:I, s:i, s:i, s:i, s:f, s:f, s:f, s:f}", "bench", "partitioned",
                      "events", (json_int_t)o.events, "keys", o.keys, "batch", o.batch, "replicas",
                      o.replicas, "raw_fetch_ack_per_s", raw, "raw_split_fetch_ack_per_s", raw16,
                      "partitioned_per_s", rate, "ratio", rate / raw);
        gf_bench_json_line(j, JSON_COMPACT);
    }
    rc = 0;
out:
    gf_bench_fns_free(&reps);
    gf_sub_close(sub, 2000); /* its callback writes to prog */
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
    return rc;
}
