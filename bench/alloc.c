/*
 * alloc.c — `gamefn-bench alloc`: how fast the allocator turns Matches into ASSIGNED
 * tickets, on its own nats-server with the fleet function and simulated game servers.
 *
 * Design notes:
 * - The run starts a fresh nats-server (support/natsd), writes the stack's config and
 *   keys (support/gamesim/simstack.h), provisions it, spawns gamefn-fleet and
 *   `--allocators` gamefn-allocator from this build, and runs the simulated servers
 *   in-process (they verify every token and play each match for --play ms).
 * - Every match's tickets are written CLAIMED first (as the matcher would), then the
 *   Matches are published at --rate per second (open loop, each with its Nats-Msg-Id).
 * - A match's allocation time is from its publish to the ASSIGNED status push of its
 *   last ticket, seen by a subscription on gamefn.v1.ticket.status.>; a QUEUED push is a
 *   NO_SERVER return. JetStream writes are the growth of the stack's streams' last
 *   sequences during the run, per match (heartbeats and game-over writes included).
 * - Text to stdout, progress to stderr, --json: one JSON object as the last line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "gamesim.h"
#include "natsd.h"
#include "proc.h"
#include "simstack.h"
#include "stack.h"

enum { TICKETS_PER_MATCH = 2, MAX_ALLOCATORS = 8 };

typedef struct run {
    long matches, rate, servers, play_ms, allocators, max_in_flight;
    bool json;
    pthread_mutex_t lock;
    int64_t *published_ns; /* per match, mono */
    int64_t *done_ns;      /* per match: last ticket ASSIGNED, 0 = not yet */
    uint8_t *assigned;     /* per match: tickets assigned */
    long finished, no_server;
} run;

static long match_of(const char *ticket_id)
{
    /* "t-<match>-<k>" */
    return ticket_id && ticket_id[0] == 't' && ticket_id[1] == '-' ? strtol(ticket_id + 2, NULL, 10)
                                                                   : -1;
}

static void on_status(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    run *r = closure;
    int64_t now = gf_clock_mono_ns();
    Gamefn__V1__TicketStatus *s = gamefn__v1__ticket_status__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    long i = s ? match_of(s->ticket_id) : -1;
    if (i >= 0 && i < r->matches) {
        pthread_mutex_lock(&r->lock);
        if (s->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED &&
            ++r->assigned[i] == TICKETS_PER_MATCH) {
            r->done_ns[i] = now;
            r->finished++;
        } else if (s->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED &&
                   s->reason == GAMEFN__V1__TICKET_REASON__TICKET_REASON_NO_SERVER &&
                   r->assigned[i] <= TICKETS_PER_MATCH) {
            r->no_server++;
            r->finished++;
            r->assigned[i] = TICKETS_PER_MATCH + 1; /* the other ticket's push is ignored */
        }
        pthread_mutex_unlock(&r->lock);
    }
    gamefn__v1__ticket_status__free_unpacked(s, NULL);
    natsMsg_Destroy(m);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static double pct(const long long *v, size_t n, double p)
{
    return n ? (double)v[(size_t)((double)(n - 1) * p)] / 1e6 : 0;
}

/* JetStream writes so far: the sum of the stack's streams' last sequences (KV buckets
 * are streams too), so overwritten KV revisions count. -1 if a stream does not answer. */
static long long js_writes(natsConnection *nc)
{
    static const char *const streams[] = {"MATCHES",    "KV_tickets", "KV_fleet",
                                          "KV_players", "KV_matches", "KV_leases"};
    jsCtx *js = NULL;
    long long n = natsConnection_JetStream(&js, nc, NULL) == NATS_OK
                      ? gf_bench_last_seq(js, streams, sizeof streams / sizeof streams[0])
                      : -1;
    jsCtx_Destroy(js);
    return n;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench alloc [options]\n"
               "\n"
               "Allocation time (Match published -> every ticket ASSIGNED) through the fleet\n"
               "function, gamefn-allocator and simulated game servers, on a fresh nats-server.\n"
               "\n"
               "options:\n"
               "  --matches N      matches to allocate, 2 tickets each (default 2000)\n"
               "  --rate R         matches published per second (default 200)\n"
               "  --servers S      simulated game servers in one datacenter (default 100)\n"
               "  --play MS        how long each simulated match lasts (default 200)\n"
               "  --allocators A   allocator instances, 1..8 (default 1)\n"
               "  --max-in-flight N matches each allocator works on at once (default 16)\n"
               "  --json           print one JSON object as the last line of stdout\n");
}

static int parse(int argc, char **argv, run *r)
{
    *r = (run){.matches = 2000,
               .rate = 200,
               .servers = 100,
               .play_ms = 200,
               .allocators = 1,
               .max_in_flight = 16};
    const gf_bench_opt opts[] = {
        GF_BENCH_OPT("matches", &r->matches, 1, 1000000),
        GF_BENCH_OPT("rate", &r->rate, 1, 1e9),
        GF_BENCH_OPT("servers", &r->servers, 1, 10000),
        GF_BENCH_OPT("play", &r->play_ms, 0, 1e9),
        GF_BENCH_OPT("allocators", &r->allocators, 1, MAX_ALLOCATORS),
        GF_BENCH_OPT("max-in-flight", &r->max_in_flight, 1, 1024),
        GF_BENCH_FLAG_OPT("json", &r->json),
    };
    return gf_bench_options("alloc", argc, argv, opts, sizeof opts / sizeof opts[0], usage);
}

/* Writes the tickets of every match, CLAIMED by it (what the matcher would do). */
static int write_tickets(const run *r, natsConnection *nc)
{
    jsCtx *js = NULL;
    kvStore *kv = NULL;
    int rc = natsConnection_JetStream(&js, nc, NULL) == NATS_OK &&
                     js_KeyValue(&kv, js, "tickets") == NATS_OK
                 ? 0
                 : -1;
    int64_t now = gf_clock_unix_ms();
    for (long i = 0; rc == 0 && i < r->matches; i++)
        for (int k = 0; rc == 0 && k < TICKETS_PER_MATCH; k++) {
            char id[32], match[32];
            uint8_t buf[4096];
            snprintf(id, sizeof id, "t-%ld-%d", i, k);
            snprintf(match, sizeof match, "m-%ld", i);
            size_t len = gf_simstack_ticket(id, match, now, now, buf);
            if (kvStore_Create(NULL, kv, id, buf, (int)len) != NATS_OK)
                rc = -1;
        }
    kvStore_Destroy(kv);
    jsCtx_Destroy(js);
    return rc;
}

static int publish_all(run *r, natsConnection *nc)
{
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 1024;
    if (natsConnection_JetStream(&js, nc, &jo) != NATS_OK)
        return -1;
    int64_t t0 = gf_clock_mono_ns(), last_log = t0;
    for (long i = 0; i < r->matches; i++) {
        int64_t due = t0 + (int64_t)((double)i * 1e9 / (double)r->rate);
        while (gf_clock_mono_ns() < due)
            gf_clock_sleep_ms(1);
        char match[32], t0s[32], t1s[32];
        char *tickets[] = {t0s, t1s};
        uint8_t buf[8192];
        snprintf(match, sizeof match, "m-%ld", i);
        snprintf(t0s, sizeof t0s, "t-%ld-0", i);
        snprintf(t1s, sizeof t1s, "t-%ld-1", i);
        size_t len = gf_simstack_match(match, tickets, 2, "eu", gf_clock_unix_ms(), buf);
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MsgId = match;
        pthread_mutex_lock(&r->lock);
        r->published_ns[i] = gf_clock_mono_ns();
        pthread_mutex_unlock(&r->lock);
        if (js_PublishAsync(js, GF_WIRE_SUBJ_MATCH_FOUND ".duel", buf, (int)len, &po) != NATS_OK) {
            jsCtx_Destroy(js);
            return -1;
        }
        if (gf_clock_mono_ns() - last_log > 1000000000LL) {
            last_log = gf_clock_mono_ns();
            fprintf(stderr, "alloc: published %ld, finished %ld\n", i + 1, r->finished);
        }
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 10000;
    natsStatus s = js_PublishAsyncComplete(js, &po);
    jsCtx_Destroy(js);
    return s == NATS_OK ? 0 : -1;
}

static void report(const run *r, double seconds, long long writes, const gf_gamesim_stats *st)
{
    long long *lat = calloc((size_t)r->matches, sizeof *lat);
    size_t n = 0;
    for (long i = 0; lat && i < r->matches; i++)
        if (r->done_ns[i])
            lat[n++] = r->done_ns[i] - r->published_ns[i];
    qsort(lat, n, sizeof *lat, cmp_ll);
    double per_s = seconds > 0 ? (double)n / seconds : 0;
    double wpm = writes >= 0 ? (double)writes / (double)r->matches : -1;
    printf("alloc: %ld matches at %ld/s offered, %ld servers, %ld allocator(s)\n", r->matches,
           r->rate, r->servers, r->allocators);
    printf("  assigned %zu (%.0f/s), no server %ld, unfinished %ld\n", n, per_s, r->no_server,
           r->matches - r->finished);
    printf("  allocation ms: p50 %.2f  p95 %.2f  p99 %.2f  max %.2f\n", pct(lat, n, 0.5),
           pct(lat, n, 0.95), pct(lat, n, 0.99), pct(lat, n, 1.0));
    printf("  JetStream writes per match: %.1f (Match, commit record, server, tickets)\n", wpm);
    printf("  simulated servers: tokens ok %llu, bad %llu, games %llu\n",
           (unsigned long long)st->tokens_ok, (unsigned long long)st->tokens_bad,
           (unsigned long long)st->games_finished);
    if (r->json)
        printf("{\"matches\":%ld,\"rate\":%ld,\"servers\":%ld,\"allocators\":%ld,\"assigned\":%zu,"
               "\"assigned_per_s\":%.1f,\"no_server\":%ld,\"p50_alloc_ms\":%.3f,"
               "\"p95_alloc_ms\":%.3f,\"p99_alloc_ms\":%.3f,\"max_alloc_ms\":%.3f,"
               "\"js_writes_per_match\":%.2f,\"tokens_ok\":%llu,\"tokens_bad\":%llu}\n",
               r->matches, r->rate, r->servers, r->allocators, n, per_s, r->no_server,
               pct(lat, n, 0.5), pct(lat, n, 0.95), pct(lat, n, 0.99), pct(lat, n, 1.0), wpm,
               (unsigned long long)st->tokens_ok, (unsigned long long)st->tokens_bad);
    free(lat);
}

int gf_bench_alloc(int argc, char **argv)
{
    run r;
    int rc = parse(argc, argv, &r);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    gf_log_init("bench-alloc", GF_LOG_WARN);
    pthread_mutex_init(&r.lock, NULL);
    r.published_ns = calloc((size_t)r.matches, sizeof *r.published_ns);
    r.done_ns = calloc((size_t)r.matches, sizeof *r.done_ns);
    r.assigned = calloc((size_t)r.matches, 1);
    char dir[] = "/tmp/gamefn-bench-alloc-XXXXXX", config[600], log[700], build[1024];
    gf_natsd *d = NULL;
    natsConnection *nc = NULL;
    natsSubscription *sub = NULL;
    gf_gamesim *sim = NULL;
    gf_bench_fns fns = {.bench = "alloc", .build = build, .log_dir = dir, .grace_ms = 10000};
    rc = 1;
    gf_bench_build_dir(build, sizeof build);
    if (!r.published_ns || !r.done_ns || !r.assigned || !gf_bench_rundir_make("alloc", dir) ||
        gf_natsd_start(NULL, &d) != 0)
        goto out;
    snprintf(config, sizeof config, "%s/gamefn.yaml", dir);
    snprintf(log, sizeof log, "%s/provision.log", dir);
    gf_simstack_opts so = {.url = gf_natsd_url(d),
                           .dir = dir,
                           .datacenters = "{name: eu}",
                           .log_level = "warn",
                           .backoff = "[5s, 15s, 30s]",
                           .deadline = "1500ms",
                           .heartbeat = "5s", /* thousands of servers: 200 heartbeats/s per 1,000 */
                           .max_in_flight = (int)r.max_in_flight};
    if (gf_simstack_write(&so, config, NULL) != 0 || gf_simstack_provision(build, config, log) != 0)
        goto out;
    for (long i = 0; i <= r.allocators; i++) {
        char inst[32];
        snprintf(inst, sizeof inst, i == 0 ? "fleet" : "alloc-%ld", i);
        if (gf_bench_fns_spawn(&fns, NULL, i == 0 ? "fleet" : "allocator", inst, config, NULL) !=
            GF_OK)
            goto out;
    }
    if (gf_bench_connect_asap(gf_natsd_url(d), &nc) != GF_OK || write_tickets(&r, nc) != 0)
        goto out;
    if (natsConnection_Subscribe(&sub, nc, GF_WIRE_SUBJ_TICKET_STATUS ".>", on_status, &r) !=
        NATS_OK)
        goto out;
    natsSubscription_SetPendingLimits(sub, -1, -1);
    gf_gamesim_dc dcs[] = {{.name = "eu", .initial = (int)r.servers, .max = (int)r.servers}};
    gf_gamesim_opts go = {
        .dcs = dcs, .n_dcs = 1, .play_ms = r.play_ms, .capacity = 2, .workers = 8};
    if (gf_gamesim_start(nc, &go, &sim) != GF_OK)
        goto out;
    gf_gamesim_stats st;
    gf_bench_await_servers(sim, (uint32_t)r.servers, 30000, &st);
    gf_clock_sleep_ms(1500); /* the allocators' mirrors see every server */
    fprintf(stderr, "alloc: %u servers registered; publishing\n", st.free);
    long long in0 = js_writes(nc);
    int64_t t0 = gf_clock_mono_ns();
    if (publish_all(&r, nc) != 0)
        goto out;
    int64_t end = gf_clock_mono_ns() + 30000000000LL;
    while (gf_clock_mono_ns() < end) {
        pthread_mutex_lock(&r.lock);
        bool all = r.finished >= r.matches;
        pthread_mutex_unlock(&r.lock);
        if (all)
            break;
        gf_clock_sleep_ms(20);
    }
    double seconds = (double)(gf_clock_mono_ns() - t0) / 1e9;
    long long in1 = js_writes(nc);
    gf_gamesim_stats_get(sim, &st);
    gf_sub_close(sub, 2000); /* its callback writes to r: done with it before reading */
    sub = NULL;
    pthread_mutex_lock(&r.lock);
    report(&r, seconds, in0 >= 0 && in1 >= 0 ? in1 - in0 : -1, &st);
    pthread_mutex_unlock(&r.lock);
    rc = r.finished == r.matches && st.tokens_bad == 0 ? 0 : 1; /* a refused token is a bug */
out:
    if (rc != 0)
        fprintf(stderr, "gamefn-bench alloc: failed (logs in %s)\n", dir);
    gf_gamesim_stop(sim);
    natsSubscription_Destroy(sub);
    gf_bench_fns_free(&fns);
    if (nc) {
        natsConnection_Close(nc);
        natsConnection_Destroy(nc);
    }
    gf_natsd_free(d);
    if (rc == 0)
        gf_bench_rundir_remove("gamefn-bench alloc", dir);
    free(r.published_ns);
    free(r.done_ns);
    free(r.assigned);
    pthread_mutex_destroy(&r.lock);
    return rc;
}
