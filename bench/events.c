/*
 * events.c — `gamefn-bench events`: game events from the producer to the applied
 * leaderboard effect, against the raw JetStream pipeline of the same server, in one run.
 *
 * Phases, on one fresh single-node nats-server with the event mapping (deploy/local):
 *  1. raw pipeline: --events events published (async, unique Msg-Id, window 4096) to a
 *     stream of their own while one durable fetches and acks them, at once, no gamefn
 *     logic (events_load.c);
 *  2. --replicas leaderboard processes (functions/leaderboard, the shipped binary) on
 *     EVENTS with board "global" (incr), its partitioned consumer configured with
 *     ack_policy --ack (all: one ack per batch), linger --linger and fetch_batch --batch;
 *  3. throughput: --events ScoreEvents published as fast as the window allows; events/s
 *     from the first publish until every partition's durable has nothing pending and
 *     nothing awaiting an ack (polled, 20 ms: an ack follows the stored effect);
 *  4. latency: --latency-seconds of events paced at half that rate, watched by the
 *     observer (a subscription on the consumer's acks: one extra message per ack for the
 *     server, so only this phase has it; with ack_policy all an ack covers the batch);
 *     p50/p99 of (effect observed - published) per event, and the events it saw
 *     terminated (dead_lettered). A linger adds up to about its length to an event's time;
 *  5. catch-up: --catchup events (720,000 = 5 min at the reference's 2,400/s) replayed
 *     at full speed into the running consumer, as a producer's spool does after an
 *     outage; seconds from the first replayed event to the last effect;
 *  6. lost / double_applied from the final stored scores: every delta is 2^20 + a small
 *     part, so a score counts its applications and the exact sum tells which.
 * Progress on stderr; figures on stdout; --json adds the JSON line last. A leaderboard
 * replica that exits (crash, OOM kill) ends the run at once, exit status 1 and no figures:
 * publishing and every wait poll the replicas (waitpid WNOHANG on their pids) instead of
 * running out a timeout (5 minutes for the effects).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bench.h"
#include "events.h"
#include "gamefn/clock.h"
#include "gamefn/effect_record.h"
#include "gamefn/v1/state.pb-c.h"
#include "natsd.h"
#include "proc.h"
#include "stack.h"

/* The server's mapping and the consumer below spell EV_PARTITIONS (events.h) as "16". */
enum { MAX_REPLICAS = 4, WAIT_MS = 300000 };

typedef struct eopts {
    long long events, catchup;
    long players, batch, replicas, latency_seconds, linger_ms;
    const char *flush; /* nats.flush of the leaderboard replicas */
    const char *ack;   /* ack_policy of the consumer: all or explicit */
    bool json, verbose;
} eopts;

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench events [options]\n"
               "\n"
               "Game events from the producer to the applied leaderboard effect, against the\n"
               "raw JetStream pipeline (publish + fetch/ack) of the same fresh nats-server.\n"
               "\n"
               "options:\n"
               "  --events N            throughput phase and raw baseline, 10000..5000000 "
               "(default 300000)\n"
               "  --players N           players, 1..1000000 (default 5000)\n"
               "  --batch N             fetch_batch of the consumer, 1..10000 (default 10000)\n"
               "  --ack MODE            ack_policy of the consumer: all (default, one ack per "
               "batch) or explicit\n"
               "  --linger MS           linger of the consumer, 0..10000 ms (default 1000)\n"
               "  --replicas N          leaderboard processes, 1..4 (default 1)\n"
               "  --latency-seconds S   paced phase length, 1..120 (default 10)\n"
               "  --catchup N           events replayed after the outage, 0..5000000 "
               "(default 720000)\n"
               "  --flush MODE          nats.flush of the replicas: immediate (default) or "
               "batched\n"
               "  --verbose             the consumer's log at info level, dumped at the end\n"
               "  --json                one JSON object as the last line of stdout\n");
}

static const char *const ack_modes[] = {"all", "explicit", NULL};

static int parse(int argc, char **argv, eopts *o)
{
    *o = (eopts){.events = 300000,
                 .catchup = 720000,
                 .players = 5000,
                 .batch = 10000,
                 .replicas = 1,
                 .latency_seconds = 10,
                 .linger_ms = 1000,
                 .flush = "immediate",
                 .ack = "all"};
    const gf_bench_opt opts[] = {
        GF_BENCH_OPT("events", &o->events, 10000, 5000000),
        GF_BENCH_OPT("players", &o->players, 1, 1000000),
        GF_BENCH_OPT("batch", &o->batch, 1, 10000),
        GF_BENCH_OPT("replicas", &o->replicas, 1, MAX_REPLICAS),
        GF_BENCH_OPT("latency-seconds", &o->latency_seconds, 1, 120),
        GF_BENCH_OPT("catchup", &o->catchup, 0, 5000000),
        GF_BENCH_CHOICE_OPT("flush", &o->flush, gf_bench_flush_modes),
        GF_BENCH_CHOICE_OPT("ack", &o->ack, ack_modes),
        GF_BENCH_OPT("linger", &o->linger_ms, 0, 10000),
        GF_BENCH_FLAG_OPT("json", &o->json),
        GF_BENCH_FLAG_OPT("verbose", &o->verbose),
    };
    return gf_bench_options("events", argc, argv, opts, sizeof opts / sizeof opts[0], usage);
}

static int write_config(const char *path, const char *url, const eopts *o)
{
    FILE *f = gf_bench_config_open("events", path, url, o->verbose, o->batch, o->flush);
    if (!f)
        return -1;
    fputs("jetstream:\n"
          "  streams:\n"
          "    - name: EVENTS\n      subjects: [\"gamefn.v1.evp.>\"]\n"
          "      max_age: 1h\n      duplicate_window: 10m\n"
          "    - name: LB_SNAPSHOTS\n      subjects: [\"gamefn.v1.lb.snapshot.>\"]\n"
          "  consumers:\n"
          "    - stream: EVENTS\n      name: leaderboard\n      partitions: 16\n"
          "      filter_subject: \"gamefn.v1.evp.{partition}.>\"\n"
          "      ack_wait: 30s\n      max_deliver: 5\n      max_ack_pending: 20000\n",
          f);
    /* the runtime takes a linger of at most half the lease: 10 s unless --linger needs more */
    fprintf(f,
            "      lease_ttl: %ldms\n      ack_policy: %s\n      linger: %ldms\n"
            "      fetch_batch: %ld\n",
            o->linger_ms * 2 > 10000 ? o->linger_ms * 2 : 10000, o->ack, o->linger_ms, o->batch);
    fputs("  buckets:\n    - name: leases\n    - name: leaderboard\n"
          "    - name: dlq_reasons\n      ttl: 7d\n"
          "functions:\n  leaderboard:\n    snapshot_interval: 1m\n"
          "    boards:\n      - {name: global, operator: incr}\n",
          f);
    return fclose(f) == 0 ? 0 : -1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Latencies (ms) of plan events [from, to): p50 and p99, nearest rank. */
static void latency(const ev_plan *p, size_t from, size_t to, double *p50, double *p99)
{
    size_t n = to - from;
    int64_t *l = malloc((n ? n : 1) * sizeof *l);
    for (size_t i = 0; l && i < n; i++)
        l[i] = atomic_load(&p->eff_ns[from + i]) - atomic_load(&p->pub_ns[from + i]);
    if (l && n) {
        qsort(l, n, sizeof *l, cmp_i64);
        *p50 = (double)l[(n - 1) / 2] / 1e6;
        *p99 = (double)l[(size_t)((double)(n - 1) * 0.99)] / 1e6;
    }
    free(l);
}

/* lost / double from the stored scores alone (kvStore_Get of every player's key). */
static int verify(jsCtx *js, const ev_plan *p, long long *lost, long long *doubled)
{
    kvStore *kv = NULL;
    *lost = *doubled = 0;
    if (js_KeyValue(&kv, js, "leaderboard") != NATS_OK)
        return -1;
    for (size_t q = 0; q < p->players; q++) {
        char key[64];
        kvEntry *e = NULL;
        int64_t score = 0;
        snprintf(key, sizeof key, "global.all.pl%zu", q);
        if (kvStore_Get(&e, kv, key) == NATS_OK) {
            uint8_t *effect = NULL;
            size_t elen = 0;
            if (gf_effect_record_peek((const uint8_t *)kvEntry_Value(e),
                                      (size_t)kvEntry_ValueLen(e), NULL, &effect, &elen) == GF_OK) {
                Gamefn__V1__LeaderboardScore *s =
                    gamefn__v1__leaderboard_score__unpack(NULL, elen, effect);
                score = s ? s->score : 0;
                if (s)
                    gamefn__v1__leaderboard_score__free_unpacked(s, NULL);
            }
            free(effect);
        }
        kvEntry_Destroy(e);
        long long count = (long long)(score >> EV_COUNT_SHIFT);
        long long want = (long long)p->n[q];
        int64_t want_sum = want ? p->cum[q][want - 1] : 0;
        if (count > want)
            *doubled += count - want;
        else if (count < want)
            *lost += want - count;
        else if (score != want_sum) /* as many as produced, but not the same ones */
            *lost += 1, *doubled += 1;
    }
    kvStore_Destroy(kv);
    return 0;
}

typedef struct results {
    double raw, rate, p50, p99, catchup_s, writes_per_event;
    /* CPU microseconds per event: the server and the bench in the raw pipeline; the
     * server, the bench and the leaderboard process(es) in the throughput phase */
    double raw_server_cpu_us, raw_client_cpu_us, server_cpu_us, client_cpu_us, consumer_cpu_us;
    long long lost, doubled, anomalies;
    size_t latency_events;
} results;

static void report(const eopts *o, const results *r, const char *version)
{
    printf("gamefn-bench events: nats-server %s single node, file storage, %ld players, "
           "batch %ld, ack_policy %s, linger %ld ms, %ld replica(s), nats.flush %s\n",
           version, o->players, o->batch, o->ack, o->linger_ms, o->replicas, o->flush);
    printf("  %-52s %10.0f events/s\n", "raw pipeline (async publish + fetch/ack, together)",
           r->raw);
    printf("  %-52s %10.0f events/s  (%.2f of raw)\n", "producer -> applied leaderboard effect",
           r->rate, r->raw > 0 ? r->rate / r->raw : 0);
    printf("  %-52s %10.1f ms p50, %.1f ms p99 (%zu events at %.0f/s)\n",
           "produce -> effect latency at half that rate", r->p50, r->p99, r->latency_events,
           r->rate / 2);
    printf("  %-52s %10.1f s for %lld events\n", "catch-up after a 5-minute outage", r->catchup_s,
           o->catchup);
    printf("  %-52s %lld lost, %lld double-applied (dead-lettered: %lld)\n",
           "stored scores vs what was produced", r->lost, r->doubled, r->anomalies);
    printf("  %-52s %10.3f\n", "KV writes per event (whole run)", r->writes_per_event);
    printf("  %-52s raw: server %.1f, bench %.1f; pipeline: server %.1f, bench %.1f, "
           "leaderboard %.1f\n",
           "CPU us per event", r->raw_server_cpu_us, r->raw_client_cpu_us, r->server_cpu_us,
           r->client_cpu_us, r->consumer_cpu_us);
    if (!o->json)
        return;
    json_t *j = json_pack(
        "{s:s, s:s, s:I, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I}", "bench",
        "events", "server_version", version, "events", (json_int_t)o->events, "players",
        (int)o->players, "batch", (int)o->batch, "replicas", (int)o->replicas, "events_per_s",
        r->rate, "raw_pipeline_per_s", r->raw, "ratio", r->raw > 0 ? r->rate / r->raw : 0,
        "p50_effect_ms", r->p50, "p99_effect_ms", r->p99, "catchup_s", r->catchup_s,
        "catchup_events", (json_int_t)o->catchup, "lost", (json_int_t)r->lost, "double_applied",
        (json_int_t)r->doubled, "dead_lettered", (json_int_t)r->anomalies);
    if (j) {
        json_object_set_new(j, "flush", json_string(o->flush));
        json_object_set_new(j, "ack_policy", json_string(o->ack));
        json_object_set_new(j, "linger_ms", json_integer(o->linger_ms));
        json_object_set_new(j, "kv_writes_per_event", json_real(r->writes_per_event));
        json_object_set_new(j, "raw_server_cpu_us", json_real(r->raw_server_cpu_us));
        json_object_set_new(j, "server_cpu_us", json_real(r->server_cpu_us));
        json_object_set_new(j, "consumer_cpu_us", json_real(r->consumer_cpu_us));
    }
    gf_bench_json_line(j, JSON_COMPACT);
}

/* Publishes [from, to) (paced at rate, 0 = full speed) and waits for every effect; the
 * seconds from the first publish to the last effect, or -1 (also as soon as a replica is
 * gone). With an observer (the latency phase) each event's effect time is recorded;
 * without one (the throughput phases) the wait polls the consumers' state instead, so
 * that watching costs the server nothing per event (the raw pipeline is not watched). */
static double run_phase(jsCtx *js, ev_plan *plan, ev_observer *obs, gf_bench_fns *reps, size_t from,
                        size_t to, double rate)
{
    int64_t t0 = gf_clock_mono_ns();
    if (ev_publish(js, plan, from, to, rate, NULL, gf_bench_fns_gone_cb, reps) != 0)
        return -1;
    fprintf(stderr, "events: published %zu in %.2f s\n", to - from,
            (double)(gf_clock_mono_ns() - t0) / 1e9);
    int64_t last;
    if (obs) {
        last = ev_observer_wait(obs, (long long)(to - from), from, to, WAIT_MS,
                                gf_bench_fns_gone_cb, reps);
        if (last < 0)
            fprintf(stderr, "events: only %lld of %zu effects seen\n", atomic_load(&obs->total),
                    to - from);
    } else {
        last = ev_publish_wait(js) == 0 ? ev_drained_wait(js, "leaderboard", EV_PARTITIONS, WAIT_MS,
                                                          gf_bench_fns_gone_cb, reps)
                                        : -1;
        if (last < 0)
            fprintf(stderr, "events: the consumer did not finish the %zu events\n", to - from);
    }
    return last < 0 ? -1 : (double)(last - t0) / 1e9;
}

int gf_bench_events(int argc, char **argv)
{
    eopts o;
    int rc = 1, p = parse(argc, argv, &o);
    if (p != 0)
        return p > 0 ? 0 : 2;
    gf_natsd_opts so = {
        .extra_config =
            "mappings {\n  \"gamefn.v1.event.*.*\": "
            "\"gamefn.v1.evp.{{partition(16,1)}}.{{wildcard(1)}}.{{wildcard(2)}}\"\n}\n"};
    gf_natsd *srv = NULL;
    natsConnection *nc = NULL, *nc2 = NULL;
    jsCtx *js = NULL;
    gf_bench_fns reps = {.bench = "events"};
    ev_plan plan = {0};
    ev_observer obs = {0};
    results r = {0};
    char version[32] = "?", config[600], bin[1100];
    /* the latency phase's length is only known after the throughput phase: plan for the
     * most it can be (the raw rate cannot be beaten by much) */
    size_t lat_max = (size_t)(o.latency_seconds * 200000);
    size_t total = (size_t)o.events + lat_max + (size_t)o.catchup;
    fprintf(stderr, "events: planning %zu events over %ld players\n", total, o.players);
    if (ev_plan_init(&plan, total, (size_t)o.players, 42) != 0 || gf_natsd_start(&so, &srv) != 0)
        goto out;
    gf_natsd_probe_version(gf_natsd_url(srv), version, sizeof version);
    if (natsConnection_ConnectTo(&nc, gf_natsd_url(srv)) != NATS_OK ||
        natsConnection_ConnectTo(&nc2, gf_natsd_url(srv)) != NATS_OK || !(js = ev_js(nc)))
        goto out;

    fprintf(stderr, "events: raw pipeline, %lld events\n", o.events);
    double cpu0 = gf_bench_cpu_seconds(gf_natsd_pid(srv)), self0 = gf_bench_cpu_seconds(getpid());
    if ((r.raw = ev_raw_pipeline(nc, nc2, &plan, (size_t)o.events, 500)) <= 0)
        goto out;
    r.raw_server_cpu_us = (gf_bench_cpu_seconds(gf_natsd_pid(srv)) - cpu0) * 1e6 / (double)o.events;
    r.raw_client_cpu_us = (gf_bench_cpu_seconds(getpid()) - self0) * 1e6 / (double)o.events;

    snprintf(config, sizeof config, "%s/bench.yaml", gf_natsd_dir(srv));
    gf_bench_near_me(bin, sizeof bin, "../functions/leaderboard/gamefn-leaderboard");
    if (write_config(config, gf_natsd_url(srv), &o) != 0)
        goto out;
    reps.log_dir = gf_natsd_dir(srv);
    if (gf_bench_fns_replicas(&reps, bin, "leaderboard", (int)o.replicas, config) != GF_OK)
        goto out;
    if (gf_bench_fns_ready(&reps, nc, 0, 30000) != GF_OK) {
        fprintf(stderr, "events: the leaderboard did not start\n");
        goto out;
    }

    fprintf(stderr, "events: throughput, %lld events at full speed\n", o.events);
    size_t a = 0, b = (size_t)o.events;
    cpu0 = gf_bench_cpu_seconds(gf_natsd_pid(srv));
    self0 = gf_bench_cpu_seconds(getpid());
    double fn0 = 0;
    for (int i = 0; i < reps.n; i++)
        fn0 += gf_bench_cpu_seconds(reps.procs[i].pid);
    double secs = run_phase(js, &plan, NULL, &reps, a, b, 0);
    if (secs <= 0)
        goto out;
    r.rate = (double)(b - a) / secs;
    double fn1 = 0;
    for (int i = 0; i < reps.n; i++)
        fn1 += gf_bench_cpu_seconds(reps.procs[i].pid);
    r.server_cpu_us = (gf_bench_cpu_seconds(gf_natsd_pid(srv)) - cpu0) * 1e6 / (double)(b - a);
    r.client_cpu_us = (gf_bench_cpu_seconds(getpid()) - self0) * 1e6 / (double)(b - a);
    r.consumer_cpu_us = (fn1 - fn0) * 1e6 / (double)(b - a);

    r.latency_events = (size_t)(r.rate / 2 * o.latency_seconds);
    if (r.latency_events > lat_max)
        r.latency_events = lat_max;
    fprintf(stderr, "events: latency, %zu events at %.0f/s\n", r.latency_events, r.rate / 2);
    a = b, b += r.latency_events;
    if (ev_observer_start(&obs, &plan, gf_natsd_url(srv), strcmp(o.ack, "all") == 0, a) != 0) {
        fprintf(stderr, "events: cannot watch the consumer's acks\n");
        goto out;
    }
    if (run_phase(js, &plan, &obs, &reps, a, b, r.rate / 2) < 0)
        goto out;
    r.anomalies = atomic_load(&obs.anomalies);
    if (atomic_load(&obs.mismatched) > 0) /* the plan's partitions are not the server's */
        fprintf(stderr,
                "events: %lld acks came from a durable of another partition than their "
                "event's: the latency figures are not exact\n",
                atomic_load(&obs.mismatched));
    ev_observer_stop(&obs);
    latency(&plan, a, b, &r.p50, &r.p99);

    fprintf(stderr, "events: catch-up, %lld events replayed at full speed\n", o.catchup);
    a = b, b += (size_t)o.catchup;
    if (o.catchup > 0 && (r.catchup_s = run_phase(js, &plan, NULL, &reps, a, b, 0)) < 0)
        goto out;

    if (ev_publish_wait(js) != 0) {
        fprintf(stderr, "events: some publishes failed\n");
        goto out;
    }
    /* The plan beyond b was never published: the expected counts end at b. */
    for (size_t q = 0; q < plan.players; q++) {
        while (plan.n[q] > 0 && plan.idx[q][plan.n[q] - 1] >= b)
            plan.n[q]--;
    }
    gf_clock_sleep_ms(500); /* anything late (a double) has landed */
    if (verify(js, &plan, &r.lost, &r.doubled) != 0)
        goto out;
    static const char *const board[] = {"KV_leaderboard"};
    long long writes = gf_bench_last_seq(js, board, 1);
    if (writes >= 0 && b > 0)
        r.writes_per_event = (double)writes / (double)b;
    if (gf_bench_fns_gone(&reps)) /* figures of a run that lost a replica are not the system's */
        goto out;
    report(&o, &r, version);
    rc = r.lost == 0 && r.doubled == 0 ? 0 : 1;
out:
    ev_observer_stop(&obs);
    gf_bench_fns_free(&reps);
    for (int i = 0; o.verbose && i < reps.n; i++)
        gf_proc_dump_log(&reps.procs[i], 60);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsConnection_Destroy(nc2);
    gf_natsd_free(srv);
    ev_plan_fini(&plan);
    return rc;
}
