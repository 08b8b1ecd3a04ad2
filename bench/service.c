/*
 * service.c — `gamefn-bench intake` and `gamefn-bench service`: the matchmaking
 * functions under load, against their own nats-server.
 *
 *   intake   R intake replicas; ticket.create as fast as they answer (or at --rate).
 *            Figures: tickets created per second, request latency, KV writes per
 *            ticket, and the same run's synchronous KV create rate as the baseline.
 *   service  intake, one ticker and M matchers with the shipped configuration
 *            (config/gamefn.yaml, NATS URL overridden): tickets from the population
 *            model (support/population) into one queue or spread over all of them.
 *            Figures: tickets created and claimed per second, time from create to the
 *            CLAIMED push (p50/p95/p99: the time to match), matches, KV writes per
 *            claimed ticket. No allocator runs: claims expire after claim_lease
 *            (10 s), so runs stay shorter than that.
 *
 * Design notes:
 * - Load: --clients threads, each on its own connection, keeps --in-flight requests
 *   outstanding (its own reply subjects on a sync subscription). With --rate the
 *   threads pace their sends to that total; without, they send as fast as replies come.
 * - Ticket ids come back in the create reply; the CLAIMED pushes are collected on
 *   gamefn.v1.ticket.status.> by a subscription of their own; both times go into one
 *   table keyed by the ticket id, under a mutex.
 * - Every figure is measured in the run that prints it; nothing is asserted.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nats/nats.h>

#include "bench.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "natsd.h"
#include "load.h"
#include "proc.h"
#include "stack.h"

enum { TABLE_BITS = 22 };

typedef struct svc_opts {
    bool service; /* else intake only */
    double seconds, rate;
    int intakes, matchers, clients, in_flight;
    const char *queue; /* NULL: every queue of the config */
    const char *config;
    double drain;    /* service: seconds to wait for claims after the load stops */
    int concurrency; /* intake: functions.intake.concurrency of the generated config */
    bool json;
} svc_opts;

/* ---- the stack --------------------------------------------------------------------------- */

static const char intake_config[] =
    "nats:\n  servers: [\"%s\"]\nlog:\n  level: warn\n"
    "jetstream:\n  streams:\n"
    "    - {name: AUDIT_TICKETS, mirror: KV_tickets, allow_direct: true}\n"
    "    - {name: AUDIT_MATCHES, mirror: KV_matches}\n"
    "    - {name: AUDIT_PLAYERS, mirror: KV_players}\n"
    "  buckets:\n"
    "    - {name: tickets, history: 64, ttl: 1h}\n"
    "    - {name: players, history: 64}\n"
    "    - {name: matches, history: 1, ttl: 1d}\n"
    "functions:\n  intake:\n    concurrency: %d\n"
    "  matcher:\n    matchmaking:\n"
    "      datacenters:\n"
    "        - {name: us-east, region: na}\n"
    "        - {name: us-west, region: na}\n"
    "        - {name: eu-west, region: eu}\n"
    "        - {name: eu-central, region: eu}\n"
    "        - {name: ap-northeast, region: asia}\n"
    "        - {name: ap-southeast, region: asia}\n"
    "        - {name: sa-east, region: sa}\n"
    "        - {name: me-central, region: me}\n"
    "      queues:\n        - {name: duel, shape: 1v1}\n";

typedef struct stack {
    gf_natsd *srv;
    char config[512], build[1024];
    gf_bench_fns fns;
    natsConnection *nc;
    jsCtx *js;
} stack;

/* One instance of function `name` from $GAMEFN_BUILD_DIR (else this build), up once it
 * answers $SRV.PING. */
static int spawn(stack *s, const char *name, int i)
{
    char inst[48], url[160];
    snprintf(inst, sizeof inst, "%s-%d", name, i);
    snprintf(url, sizeof url, "GAMEFN_NATS_URL=%s", gf_natsd_url(s->srv));
    char *env[] = {url, "GAMEFN_LOG_LEVEL=warn", NULL};
    int first = s->fns.n;
    if (gf_bench_fns_spawn(&s->fns, NULL, name, inst, s->config, env) != GF_OK ||
        gf_bench_fns_ready(&s->fns, s->nc, first, 30000) != GF_OK)
        return -1;
    return 0;
}

static void stack_free(stack *s)
{
    gf_bench_fns_free(&s->fns);
    jsCtx_Destroy(s->js);
    natsConnection_Destroy(s->nc);
    gf_natsd_free(s->srv);
}

static uint64_t last_seq(jsCtx *js, const char *stream)
{
    long long n = gf_bench_last_seq(js, &stream, 1);
    return n > 0 ? (uint64_t)n : 0;
}

/* Synchronous KV creates on one thread for `secs`: the baseline rate. */
static double kv_sync_rate(jsCtx *js, double secs)
{
    kvStore *kv = NULL;
    kvConfig kc;
    char key[32];
    long long n = 0;
    kvConfig_Init(&kc);
    kc.Bucket = "bench_baseline";
    if (js_CreateKeyValue(&kv, js, &kc) != NATS_OK)
        return 0;
    double t0 = gf_load_now(), t = t0;
    for (; t - t0 < secs; t = gf_load_now()) {
        snprintf(key, sizeof key, "k%lld", n);
        if (kvStore_Create(NULL, kv, key, "x", 1) == NATS_OK)
            n++;
    }
    kvStore_Destroy(kv);
    return (double)n / (t - t0);
}

/* JSON has no infinity: -1 stands for "not claimed". */
static double finite_or(double v)
{
    return isinf(v) ? -1 : v;
}

/* ---- runs --------------------------------------------------------------------------------- */

static void usage_intake(FILE *f)
{
    fprintf(f, "usage: gamefn-bench intake [--seconds S] [--rate R] [--intakes N] [--clients C] "
               "[--in-flight W] [--concurrency K] [--json]\n");
}

static void usage_service(FILE *f)
{
    fprintf(f, "usage: gamefn-bench service [--seconds S] [--rate R] [--intakes N] [--matchers M] "
               "[--clients C] [--in-flight W] [--queue Q] [--config FILE] [--drain S] [--json]\n");
}

static int parse(int argc, char **argv, bool service, svc_opts *o)
{
    *o = (svc_opts){.service = service,
                    .seconds = 5,
                    .intakes = 1,
                    .matchers = 1,
                    .clients = 2,
                    .in_flight = 32,
                    .config = "config/gamefn.yaml",
                    .drain = 2,
                    .concurrency = 8};
    const char *bench = service ? "service" : "intake";
    const gf_bench_opt opts[] = {
        GF_BENCH_OPT("seconds", &o->seconds, 1e-3, 1e6),
        GF_BENCH_OPT("rate", &o->rate, 0, 1e9),
        GF_BENCH_OPT("intakes", &o->intakes, 1, 30),
        GF_BENCH_OPT("matchers", &o->matchers, 0, 30),
        GF_BENCH_OPT("clients", &o->clients, 1, GF_LOAD_MAX_CLIENTS),
        GF_BENCH_OPT("in-flight", &o->in_flight, 1, GF_LOAD_MAX_WINDOW),
        GF_BENCH_OPT("queue", &o->queue, 0, 0),
        GF_BENCH_OPT("config", &o->config, 0, 0),
        GF_BENCH_FLAG_OPT("json", &o->json),
        GF_BENCH_OPT("drain", &o->drain, 0, 60),
        GF_BENCH_OPT("concurrency", &o->concurrency, 1, 64),
    };
    int rc = gf_bench_options(bench, argc, argv, opts, sizeof opts / sizeof opts[0],
                              service ? usage_service : usage_intake);
    if (rc == 0 && o->intakes + o->matchers > 30) {
        fprintf(stderr, "gamefn-bench %s: at most 30 intakes and matchers in all\n", bench);
        rc = -1;
    }
    return rc;
}

/* The queues tickets go to: --queue, every queue of the config (service), or "duel". */
static size_t pick_queues(const svc_opts *o, const char **names, uint32_t *team_size)
{
    if (!o->service) {
        names[0] = "duel";
        team_size[0] = 1;
        return 1;
    }
    static const struct {
        const char *name;
        uint32_t team;
    } shipped[] = {{"1v1-sbmm", 1},     {"1v1-ping", 1},   {"1v1-hybrid", 1}, {"5v5-sbmm", 5},
                   {"5v5-ping", 5},     {"5v5-hybrid", 5}, {"4v4v4-sbmm", 4}, {"4v4v4-ping", 4},
                   {"4v4v4-hybrid", 4}, {"ffa16-sbmm", 1}, {"ffa16-ping", 1}, {"ffa16-hybrid", 1}};
    size_t n = 0;
    for (size_t i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        if (o->queue && strcmp(o->queue, shipped[i].name) != 0)
            continue;
        names[n] = shipped[i].name;
        team_size[n++] = shipped[i].team;
    }
    return n;
}

static int run(const svc_opts *o)
{
    stack st = {0};
    gf_load_table t;
    const char *queues[16];
    uint32_t team_size[16];
    size_t nq = pick_queues(o, queues, team_size);
    if (nq == 0) {
        fprintf(stderr, "service: unknown queue %s\n", o->queue);
        return 2;
    }
    if (gf_load_table_init(&t, TABLE_BITS) != 0 || gf_natsd_start(NULL, &st.srv) != 0)
        return 1;
    const char *build = getenv("GAMEFN_BUILD_DIR");
    if (build && build[0])
        snprintf(st.build, sizeof st.build, "%s", build);
    else
        gf_bench_build_dir(st.build, sizeof st.build);
    st.fns = (gf_bench_fns){.bench = o->service ? "service" : "intake",
                            .build = st.build,
                            .log_dir = gf_natsd_dir(st.srv),
                            .grace_ms = 10000};
    if (o->service) {
        snprintf(st.config, sizeof st.config, "%s", o->config);
    } else {
        snprintf(st.config, sizeof st.config, "%s/bench.yaml", gf_natsd_dir(st.srv));
        FILE *f = fopen(st.config, "w");
        if (!f)
            return 1;
        fprintf(f, intake_config, gf_natsd_url(st.srv), o->concurrency);
        fclose(f);
    }
    natsConnection_ConnectTo(&st.nc, gf_natsd_url(st.srv));
    natsConnection_JetStream(&st.js, st.nc, NULL);
    int rc = 0;
    for (int i = 0; i < o->intakes && rc == 0; i++)
        rc = spawn(&st, "intake", i);
    for (int i = 0; o->service && i < o->matchers && rc == 0; i++)
        rc = spawn(&st, "matcher", i);
    if (o->service && rc == 0)
        rc = spawn(&st, "ticker", 0);
    if (rc != 0) {
        stack_free(&st);
        return 1;
    }
    double baseline = kv_sync_rate(st.js, 2.0);
    natsSubscription *status = NULL;
    natsConnection *snc = NULL;
    gf_load_watch_status(gf_natsd_url(st.srv), &t, &snc, &status);

    uint64_t w0 = last_seq(st.js, "KV_tickets") + last_seq(st.js, "KV_players") +
                  last_seq(st.js, "KV_matches");
    gf_load_opts lo = {.url = gf_natsd_url(st.srv),
                       .seconds = o->seconds,
                       .rate = o->rate,
                       .clients = o->clients,
                       .in_flight = o->in_flight,
                       .queues = queues,
                       .team_size = team_size,
                       .nqueues = nq};
    gf_load_result lr;
    double t0 = gf_load_now();
    gf_load_run(&lo, &t, &lr);
    long long ok = lr.ok, errors = lr.errors, timeouts = lr.timeouts;
    double secs = lr.seconds;
    if (o->service)
        gf_clock_sleep_ms((int64_t)(o->drain * 1000)); /* the last tickets' ticks */
    const double *lat = lr.lat_us;
    size_t nlat = (size_t)lr.nlat;
    gf_sub_close(status, 2000); /* its callback writes to t: done with it before reading */
    status = NULL;
    pthread_mutex_lock(&t.mu);
    double *ttm = malloc((size_t)(ok ? ok : 1) * sizeof *ttm);
    size_t nttm = 0, claimed_in_run = 0;
    /* Over every ticket created: one never claimed counts as waiting forever, so the
     * percentiles are not censored to the lucky ones. */
    size_t nclaimed = 0;
    for (size_t i = 0; i <= t.mask && ttm; i++) {
        if (t.s[i].created > 0 && nttm < (size_t)ok) {
            bool c = t.s[i].claimed > 0;
            ttm[nttm++] = c ? fmax(0, t.s[i].claimed - t.s[i].created) * 1000 : INFINITY;
            nclaimed += c;
            claimed_in_run += c && t.s[i].claimed <= t0 + secs;
        }
    }
    long long pushes = t.pushes;
    pthread_mutex_unlock(&t.mu);
    qsort(ttm, nttm, sizeof *ttm, gf_load_cmp_double);
    uint64_t w1 = last_seq(st.js, "KV_tickets") + last_seq(st.js, "KV_players") +
                  last_seq(st.js, "KV_matches");
    uint64_t matches = last_seq(st.js, "MATCHES");
    double rate = (double)ok / secs;

    printf("%s: %d intake(s)", o->service ? "service" : "intake", o->intakes);
    if (!o->service)
        printf(" x concurrency %d", o->concurrency);
    if (o->service)
        printf(", %d matcher(s), queue %s", o->matchers, o->queue ? o->queue : "all");
    printf(", %d client(s) x %d in flight, rate %s, %.1f s\n", o->clients, o->in_flight,
           o->rate > 0 ? "paced" : "open", secs);
    printf("  tickets created      %lld (%.0f/s), errors %lld, timeouts %lld\n", ok, rate, errors,
           timeouts);
    printf("  create latency       p50 %.2f ms, p99 %.2f ms\n", gf_load_pct(lat, nlat, 0.5) / 1000,
           gf_load_pct(lat, nlat, 0.99) / 1000);
    if (o->service) {
        printf("  claimed              %zu of %lld (%.0f/s during the run), matches %llu, "
               "pushes %lld\n",
               nclaimed, ok, (double)claimed_in_run / secs, (unsigned long long)matches, pushes);
        printf("  time to match        p50 %.0f ms, p90 %.0f ms, p99 %.0f ms (create reply to "
               "CLAIMED push; inf = not claimed within the run + %.0f s)\n",
               gf_load_pct(ttm, nttm, 0.5), gf_load_pct(ttm, nttm, 0.9),
               gf_load_pct(ttm, nttm, 0.99), o->drain);
    }
    printf("  KV writes per ticket %.2f\n", ok ? (double)(w1 - w0) / (double)ok : 0);
    printf("  baseline             %.0f synchronous KV creates/s (one thread), ratio %.2f\n",
           baseline, baseline > 0 ? rate / baseline : 0);
    if (o->json) {
        json_t *j = json_pack(
            "{s:f,s:i,s:i,s:I,s:I,s:f,s:f,s:f,s:I,s:f,s:f,s:f,s:f,s:f,s:f}", "seconds", secs,
            "intakes", o->intakes, "matchers", o->service ? o->matchers : 0, "tickets",
            (json_int_t)ok, "errors", (json_int_t)(errors + timeouts), "tickets_per_s", rate,
            "p50_create_ms", gf_load_pct(lat, nlat, 0.5) / 1000, "p99_create_ms",
            gf_load_pct(lat, nlat, 0.99) / 1000, "claimed", (json_int_t)nclaimed, "claimed_per_s",
            (double)claimed_in_run / secs, "p50_match_ms", finite_or(gf_load_pct(ttm, nttm, 0.5)),
            "p99_match_ms", finite_or(gf_load_pct(ttm, nttm, 0.99)), "writes_per_ticket",
            ok ? (double)(w1 - w0) / (double)ok : 0, "kv_sync_per_s", baseline, "ratio_to_sync_kv",
            baseline > 0 ? rate / baseline : 0);
        gf_bench_json_line(j, JSON_COMPACT);
    }
    free(lr.lat_us);
    free(ttm);
    natsSubscription_Destroy(status);
    natsConnection_Destroy(snc);
    stack_free(&st);
    gf_load_table_fini(&t);
    return errors + timeouts > 0 ? 3 : 0;
}

int gf_bench_intake(int argc, char **argv)
{
    svc_opts o;
    int rc = parse(argc, argv, false, &o);
    return rc != 0 ? (rc > 0 ? 0 : 2) : run(&o);
}

int gf_bench_service(int argc, char **argv)
{
    svc_opts o;
    int rc = parse(argc, argv, true, &o);
    return rc != 0 ? (rc > 0 ? 0 : 2) : run(&o);
}
