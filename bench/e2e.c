/*
 * e2e.c — `gamefn-bench e2e`: the whole matchmaking service, from ticket.create to the
 * ASSIGNED push, on its own nats-server, with simulated game servers.
 *
 * What it runs: a fresh nats-server (support/natsd); the raw async JetStream publish rate
 * of that server first (bench/raw_js.c, the same run's physical baseline); then the
 * shipped queue table (functions.matcher of --config, default config/gamefn.yaml) in a
 * generated config with the fleet and allocator (support/gamesim/simstack.h), provisioned
 * by `gamefn provision`; --fleets fleet, --allocators allocator, --intakes intake,
 * --matchers matcher instances and one ticker from this build; --servers simulated game
 * servers (support/gamesim) over the 8 datacenters, each verifying every join token (or
 * those of one match in --verify-every) and "playing" its match for --play ms. The load
 * (bench/load.h) submits population tickets round-robin over the queues, as fast as
 * intake answers (or at --rate), for --seconds; then it waits up to --drain seconds for
 * the last tickets.
 *
 * What it prints (and with --json, one object as the last line):
 *  - tickets/s submitted and assigned during the run (submit = the create request's send,
 *    assigned = the first ASSIGNED push on gamefn.v1.ticket.status.>);
 *  - time to assignment p50/p95/p99 over every ticket submitted (one not assigned by the
 *    end of the drain counts as infinitely late; JSON: -1);
 *  - p99_alloc_ms: the last CLAIMED push (the match was published) to the ASSIGNED push,
 *    per ticket; and the parts before: the create's request-reply time, and the wait for
 *    a match (submit to the first CLAIMED push);
 *  - claim conflicts per match (the matchers' own counters, from their final log line:
 *    a refused compare-and-set leaves no trace in JetStream);
 *  - JetStream writes per assigned ticket: the growth of the service's streams (KV
 *    buckets, MATCHES) over the run and the drain, and the server's own in_msgs (every
 *    message it received: writes, requests, replies, pushes, heartbeats) per assigned
 *    ticket, from its monitoring endpoint, and split by connection (bench/conn_msgs.h:
 *    in and out per function, and the benchmark's own share);
 *  - raw_publish_per_s and limit_ratio = assigned/s x writes per ticket / raw rate;
 *  - the invariants, recomputed from the AUDIT_* mirrors by the independent checker
 *    (support/mmcheck: double claims, players in two matches, lost tickets, limit
 *    violations, half-assigned matches).
 *
 * Nothing is asserted; the exit code is 0 unless the run could not be set up (3 when a
 * checker count is not zero or a simulated server refused a join token, so scripts
 * notice).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <nats/nats.h>

#include "bench.h"
#include "conn_msgs.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/tickets/config.h"
#include "gamesim.h"
#include "load.h"
#include "mmcheck.h"
#include "natsd.h"
#include "proc.h"
#include "raw.h"
#include "simstack.h"
#include "stack.h"

enum { TABLE_BITS = 23, MAX_QUEUES = 32, NDC = 8 };

typedef struct e2e_opts {
    double seconds, rate, drain, raw_seconds;
    int intakes, matchers, allocators, fleets, servers, sim_workers, clients, in_flight;
    int max_in_flight; /* runtime.max_in_flight: the allocator's matches at once */
    int verify_every;  /* the simulated servers verify the tokens of one match in this many */
    int64_t play_ms;
    const char *queue, *config;
    const char *flush;             /* nats.flush of the functions */
    const char *heartbeat_timeout; /* functions.fleet.heartbeat_timeout (interval 5 s) */
    bool json, keep;
} e2e_opts;

/* The population's datacenters, and the share of the simulated servers each gets
 * (close to where the population's players are: NA 35 %, EU 35 %, Asia and OCE 19 %,
 * SA 8 %, ME 3 %). */
static const struct {
    const char *name;
    double share;
} dcs[NDC] = {{"us-east", 0.20},    {"us-west", 0.15},      {"eu-west", 0.20},
              {"eu-central", 0.15}, {"ap-northeast", 0.09}, {"ap-southeast", 0.10},
              {"sa-east", 0.08},    {"me-central", 0.03}};

/* ---- options ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(
        f, "usage: gamefn-bench e2e [options]\n"
           "\n"
           "The whole matchmaking service (intake, ticker, matcher, allocator, fleet) with\n"
           "simulated game servers on a fresh nats-server: tickets from submit to assignment.\n"
           "\n"
           "  --seconds S      how long tickets are submitted (default 10)\n"
           "  --rate R         tickets/s submitted; 0 = as fast as intake answers (default)\n"
           "  --drain S        then wait this long at most for the last assignments (10)\n"
           "  --intakes N      intake instances (1)      --matchers N    matchers (1)\n"
           "  --allocators N   allocators (1)            --fleets N      fleet instances (1)\n"
           "  --servers N      simulated game servers over 8 datacenters (1000)\n"
           "  --play MS        how long a simulated match lasts (100)\n"
           "  --sim-workers N  simulator threads (64; each server step is a blocking request)\n"
           "  --clients C      load connections (2)      --in-flight W   requests each (128)\n"
           "  --verify-every N the simulated servers verify every token of one match in N\n"
           "                   (1 = all; real game servers verify on their own machines)\n"
           "  --queue Q        one queue only (default: every queue of the config)\n"
           "  --config FILE    where the queue table comes from (config/gamefn.yaml)\n"
           "  --raw-seconds S  length of the raw publish baseline (3)\n"
           "  --max-in-flight N runtime.max_in_flight: matches an allocator works on at once (16)\n"
           "  --flush MODE     nats.flush of the functions: immediate (default) or batched\n"
           "  --heartbeat-timeout D  functions.fleet.heartbeat_timeout; the interval is 5s\n"
           "                   (25s: the shipped ratio, an unchanged record rewritten every\n"
           "                   10 s; 15s: every heartbeat writes, as before that refresh)\n"
           "  --keep           keep the run's directory (logs, config)\n"
           "  --json           one JSON object as the last line of stdout\n");
}

static int parse(int argc, char **argv, e2e_opts *o)
{
    *o = (e2e_opts){.seconds = 10,
                    .drain = 10,
                    .raw_seconds = 3,
                    .intakes = 1,
                    .matchers = 1,
                    .allocators = 1,
                    .fleets = 1,
                    .servers = 1000,
                    .sim_workers = 64,
                    .clients = 2,
                    .in_flight = 128,
                    .play_ms = 100,
                    .max_in_flight = 16,
                    .verify_every = 1,
                    .config = "config/gamefn.yaml",
                    .flush = "immediate",
                    .heartbeat_timeout = "25s"};
    const gf_bench_opt opts[] = {
        GF_BENCH_OPT("seconds", &o->seconds, 1e-3, 1e6),
        GF_BENCH_OPT("rate", &o->rate, 0, 1e9),
        GF_BENCH_OPT("drain", &o->drain, 0, 600),
        GF_BENCH_OPT("intakes", &o->intakes, 1, GF_BENCH_MAX_FNS),
        GF_BENCH_OPT("matchers", &o->matchers, 1, GF_BENCH_MAX_FNS),
        GF_BENCH_OPT("allocators", &o->allocators, 1, GF_BENCH_MAX_FNS),
        GF_BENCH_OPT("fleets", &o->fleets, 1, GF_BENCH_MAX_FNS),
        GF_BENCH_OPT("servers", &o->servers, NDC, 20000),
        GF_BENCH_OPT("play", &o->play_ms, 0, 1e9),
        GF_BENCH_OPT("sim-workers", &o->sim_workers, 1, 64),
        GF_BENCH_OPT("clients", &o->clients, 1, GF_LOAD_MAX_CLIENTS),
        GF_BENCH_OPT("in-flight", &o->in_flight, 1, GF_LOAD_MAX_WINDOW),
        GF_BENCH_OPT("queue", &o->queue, 0, 0),
        GF_BENCH_OPT("config", &o->config, 0, 0),
        GF_BENCH_OPT("raw-seconds", &o->raw_seconds, 1e-3, 1e6),
        GF_BENCH_OPT("max-in-flight", &o->max_in_flight, 1, 1024),
        GF_BENCH_OPT("verify-every", &o->verify_every, 1, 1 << 20),
        GF_BENCH_CHOICE_OPT("flush", &o->flush, gf_bench_flush_modes),
        GF_BENCH_OPT("heartbeat-timeout", &o->heartbeat_timeout, 0, 0),
        GF_BENCH_FLAG_OPT("keep", &o->keep),
        GF_BENCH_FLAG_OPT("json", &o->json),
    };
    int rc = gf_bench_options("e2e", argc, argv, opts, sizeof opts / sizeof opts[0], usage);
    /* one process per function instance, and the ticker */
    if (rc == 0 && o->intakes + o->matchers + o->allocators + o->fleets + 1 > GF_BENCH_MAX_FNS) {
        fprintf(stderr, "gamefn-bench e2e: at most %d function processes in all\n",
                GF_BENCH_MAX_FNS);
        usage(stderr);
        rc = -1;
    }
    return rc;
}

/* ---- the stack ------------------------------------------------------------------------- */

typedef struct stack {
    char dir[64], config[128], build[1024];
    gf_natsd *srv;
    natsConnection *nc;
    jsCtx *js;
    gf_bench_fns fns;
    gf_gamesim *sim;
    gf_config *mm_config;
    gf_mm_tables tables;
} stack;

/* The `matcher:` section of `path` (two-space indented, up to the next key at that
 * level), so the run uses the shipped queue table as it is. NULL if not found. */
static char *matcher_section(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap), line[1024];
    bool in = false;
    while (out && fgets(line, sizeof line, f)) {
        bool top2 =
            line[0] == ' ' && line[1] == ' ' && line[2] != ' ' && line[2] != '#' && line[2] != '\n';
        if (in && (top2 || (line[0] != ' ' && line[0] != '#' && line[0] != '\n')))
            break;
        if (!in && strncmp(line, "  matcher:", 10) == 0)
            in = true;
        if (in && len + strlen(line) + 1 < cap) {
            memcpy(out + len, line, strlen(line) + 1);
            len += strlen(line);
        }
    }
    fclose(f);
    if (out && len == 0) {
        free(out);
        out = NULL;
    }
    return out;
}

/* One instance of function `name` at log level `level`, up once it answers $SRV.PING. */
static int spawn(stack *s, const char *name, int i, const char *level)
{
    char inst[48], lvl[48];
    snprintf(inst, sizeof inst, "%s-%d", name, i);
    snprintf(lvl, sizeof lvl, "GAMEFN_LOG_LEVEL=%s", level);
    char *env[] = {lvl, NULL};
    int first = s->fns.n;
    if (gf_bench_fns_spawn(&s->fns, NULL, name, inst, s->config, env) != GF_OK ||
        gf_bench_fns_ready(&s->fns, s->nc, first, 30000) != GF_OK)
        return -1;
    return 0;
}

static int stack_up(stack *s, const e2e_opts *o)
{
    char fleet_dcs[1024] = "", *section = matcher_section(o->config), log[128], why[256];
    char extra[1 << 16];
    gf_config_error cerr;
    if (!section) {
        fprintf(stderr, "e2e: no functions.matcher section in %s\n", o->config);
        return -1;
    }
    int initial[NDC], left = o->servers;
    for (int d = 0; d < NDC; d++) {
        int n = d == NDC - 1 ? left : (int)lround(dcs[d].share * o->servers);
        n = n < 1 ? 1 : n > left - (NDC - 1 - d) ? left - (NDC - 1 - d) : n;
        left -= n;
        initial[d] = n;
        size_t len = strlen(fleet_dcs);
        /* The warm pool keeps at least the initial servers FREE and grows each datacenter
         * to its demand (the simulated adapter starts what the fleet asks for). */
        snprintf(fleet_dcs + len, sizeof fleet_dcs - len, "%s{name: %s, floor: %d, ceiling: %d}",
                 d ? ", " : "", dcs[d].name, n, 4 * n + 50);
    }
    snprintf(extra, sizeof extra,
             "  intake:\n    concurrency: 32\n  ticker:\n    interval: 250ms\n%s", section);
    free(section);
    snprintf(s->config, sizeof s->config, "%s/gamefn.yaml", s->dir);
    gf_simstack_opts so = {.url = gf_natsd_url(s->srv),
                           .dir = s->dir,
                           .datacenters = fleet_dcs,
                           .log_level = "warn",
                           .backoff = "[5s, 15s, 30s]",
                           .deadline = "1500ms",
                           .heartbeat = "5s", /* 1000 servers: 200 heartbeats/s */
                           /* Five intervals, as config/gamefn.yaml: a heartbeat that
                            * changes nothing writes every 10 s (fleet_config_refresh_ms) */
                           .heartbeat_timeout = o->heartbeat_timeout,
                           .functions_extra = extra,
                           .fleet_extra = "    warmup: 2s\n    forecast_short: 5s\n"
                                          "    hibernate_after: 10m\n",
                           .max_in_flight = o->max_in_flight,
                           .flush = o->flush};
    snprintf(log, sizeof log, "%s/provision.log", s->dir);
    if (gf_simstack_write(&so, s->config, NULL) != 0 ||
        gf_simstack_provision(s->build, s->config, log) != 0)
        return -1;
    if (gf_mm_config_load(s->config, &s->mm_config, &cerr) != GF_OK) {
        fprintf(stderr, "e2e: %s\n", cerr.message);
        return -1;
    }
    const gf_mm_config *mm = gf_config_function(s->mm_config);
    if (gf_mm_tables_build(&mm->matchmaking, &s->tables, why, sizeof why) != GF_OK) {
        fprintf(stderr, "e2e: queue table: %s\n", why);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < o->fleets && rc == 0; i++)
        rc = spawn(s, "fleet", i, "warn");
    for (int i = 0; i < o->allocators && rc == 0; i++)
        rc = spawn(s, "allocator", i, "info");
    for (int i = 0; i < o->intakes && rc == 0; i++)
        rc = spawn(s, "intake", i, "warn");
    for (int i = 0; i < o->matchers && rc == 0; i++)
        rc = spawn(s, "matcher", i, "info"); /* its final counters line */
    if (rc == 0)
        rc = spawn(s, "ticker", 0, "warn");
    if (rc != 0)
        return -1;

    gf_gamesim_dc sd[NDC];
    for (int d = 0; d < NDC; d++)
        sd[d] =
            (gf_gamesim_dc){.name = dcs[d].name, .initial = initial[d], .max = 4 * initial[d] + 50};
    gf_gamesim_opts go = {.dcs = sd,
                          .n_dcs = NDC,
                          .capacity = 16,
                          .play_ms = o->play_ms,
                          .start_delay_ms = 500,
                          .adapter = true,
                          .workers = o->sim_workers,
                          .verify_every = (uint32_t)o->verify_every};
    if (gf_gamesim_start(s->nc, &go, &s->sim) != GF_OK)
        return -1;
    gf_gamesim_stats st;
    gf_bench_await_servers(s->sim, (uint32_t)o->servers, 60000, &st);
    if (st.free < (uint32_t)o->servers) {
        fprintf(stderr, "e2e: only %u of %d servers registered\n", st.free, o->servers);
        return -1;
    }
    gf_clock_sleep_ms(1500); /* the allocators' fleet mirrors see every server */
    return 0;
}

static void stack_down(stack *s, bool keep)
{
    gf_gamesim_stop(s->sim);
    gf_bench_fns_free(&s->fns);
    gf_config_free(s->mm_config);
    jsCtx_Destroy(s->js);
    if (s->nc) {
        natsConnection_Close(s->nc);
        natsConnection_Destroy(s->nc);
    }
    gf_natsd_free(s->srv);
    if (!keep)
        gf_bench_rundir_remove("e2e", s->dir);
}

/* ---- what the server counted ------------------------------------------------------------ */

typedef struct server_counts {
    long long in_msgs;
    long long writes;       /* the service's streams' last sequences: every stored write */
    long long fleet_writes; /* KV_fleet's alone: heartbeats, allocations, game overs */
    long long mirrored;
    long long matches;
    gf_bench_conn_msgs conns; /* whose messages they were */
} server_counts;

static void count_server(stack *s, server_counts *c)
{
    static const char *const streams[] = {"KV_tickets", "KV_players", "KV_matches",
                                          "KV_fleet",   "KV_leases",  "MATCHES"};
    static const char *const mirrors[] = {"AUDIT_TICKETS", "AUDIT_MATCHES", "AUDIT_PLAYERS"};
    json_t *v = NULL;
    memset(c, 0, sizeof *c);
    if (gf_natsd_monitor_json(s->srv, "/varz", &v) == 0) {
        c->in_msgs = json_integer_value(json_object_get(v, "in_msgs"));
        json_decref(v);
    }
    gf_bench_conn_msgs_read(s->srv, &c->conns);
    static const char *const matches[] = {"MATCHES"}, *const fleet[] = {"KV_fleet"};
    c->writes = gf_bench_last_seq(s->js, streams, sizeof streams / sizeof streams[0]);
    c->fleet_writes = gf_bench_last_seq(s->js, fleet, 1);
    c->mirrored = gf_bench_last_seq(s->js, mirrors, sizeof mirrors / sizeof mirrors[0]);
    c->matches = gf_bench_last_seq(s->js, matches, 1);
}

/* "key=<n>" summed over the last line of each matcher log that holds `marker`. */
static long long matcher_counter(stack *s, const char *marker, const char *key)
{
    long long total = 0;
    char path[160], line[2048], last[2048], pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    for (int i = 0; i < s->fns.n; i++) {
        if (strcmp(s->fns.fn[i], "matcher") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s.log", s->dir, s->fns.instance[i]);
        FILE *f = fopen(path, "r");
        last[0] = '\0';
        while (f && fgets(line, sizeof line, f))
            if (strstr(line, marker))
                snprintf(last, sizeof last, "%s", line);
        if (f)
            fclose(f);
        const char *at = strstr(last, pat);
        if (at)
            total += atoll(at + strlen(pat));
    }
    return total;
}

/* ---- where the CPU went ------------------------------------------------------------------ */

typedef struct cpu_use {
    double server, bench; /* nats-server; this program (load + simulated servers) */
    double fn[GF_BENCH_MAX_FNS];
} cpu_use;

static void cpu_sample(const stack *s, cpu_use *c)
{
    c->server = gf_bench_cpu_seconds(gf_natsd_pid(s->srv));
    c->bench = gf_bench_cpu_seconds(getpid());
    for (int i = 0; i < s->fns.n; i++)
        c->fn[i] = gf_bench_cpu_seconds(s->fns.procs[i].pid);
}

/* CPU per function (summed over its instances) between two samples: cores busy on
 * average over `secs`, and CPU microseconds per assigned ticket (a figure the other
 * load on a shared machine does not change much). To stderr, and into *j as
 * "cpu_us_per_ticket": {"nats-server": us, ...}. */
static void cpu_report(const stack *s, const cpu_use *a, const cpu_use *b, double secs,
                       long long tickets, json_t **j)
{
    static const char *const fns[] = {"intake", "matcher", "allocator", "fleet", "ticker"};
    double per = tickets > 0 ? 1e6 / (double)tickets : 0, total = 0;
    json_t *cpu = json_object();
    char line[512];
    int n = snprintf(line, sizeof line, "nats-server %.2f (%.0f us/ticket), bench %.2f (%.0f)",
                     (b->server - a->server) / secs, (b->server - a->server) * per,
                     (b->bench - a->bench) / secs, (b->bench - a->bench) * per);
    json_object_set_new(cpu, "nats-server", json_real((b->server - a->server) * per));
    json_object_set_new(cpu, "bench", json_real((b->bench - a->bench) * per));
    total += (b->server - a->server) * per;
    for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
        double used = 0;
        for (int i = 0; i < s->fns.n; i++)
            if (strcmp(s->fns.fn[i], fns[k]) == 0 && a->fn[i] >= 0 && b->fn[i] >= 0)
                used += b->fn[i] - a->fn[i];
        if (n > 0 && (size_t)n < sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, ", %s %.2f (%.0f)", fns[k],
                          used / secs, used * per);
        json_object_set_new(cpu, fns[k], json_real(used * per));
        total += used * per;
    }
    fprintf(stderr, "e2e: CPU, cores busy on average (us per assigned ticket): %s\n", line);
    fprintf(stderr,
            "e2e: CPU of the service (nats-server and functions): %.0f us per assigned "
            "ticket\n",
            total);
    json_object_set_new(cpu, "service", json_real(total));
    *j = cpu;
}

/* Every instance's $SRV STATS: requests and average processing time per endpoint, to
 * stderr (where the functions spent their time). */
static void srv_stats(stack *s)
{
    natsSubscription *sub = NULL;
    char inbox[64];
    snprintf(inbox, sizeof inbox, "_INBOX.e2e-stats");
    if (natsConnection_SubscribeSync(&sub, s->nc, inbox) != NATS_OK)
        return;
    natsConnection_PublishRequest(s->nc, "$SRV.STATS", inbox, NULL, 0);
    natsMsg *m = NULL;
    while (natsSubscription_NextMsg(&m, sub, 500) == NATS_OK) {
        json_t *j = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, NULL);
        json_t *eps = json_object_get(j, "endpoints");
        size_t i;
        json_t *ep;
        json_array_foreach(eps, i, ep)
        {
            long long n = json_integer_value(json_object_get(ep, "num_requests"));
            if (n == 0)
                continue;
            fprintf(stderr, "e2e: $SRV %s/%s %s: %lld requests, %lld errors, average %.2f ms\n",
                    json_string_value(json_object_get(j, "name")),
                    json_string_value(json_object_get(j, "id")),
                    json_string_value(json_object_get(ep, "name")), n,
                    (long long)json_integer_value(json_object_get(ep, "num_errors")),
                    (double)json_integer_value(json_object_get(ep, "average_processing_time")) /
                        1e6);
        }
        json_decref(j);
        natsMsg_Destroy(m);
    }
    natsSubscription_Destroy(sub);
}

/* ---- the run ----------------------------------------------------------------------------- */

static double raw_baseline(stack *s, const e2e_opts *o)
{
    gf_raw_opts ro = {.payload = 256, .seconds = o->raw_seconds, .max_pending = 4096};
    gf_raw_results rr;
    memset(&rr, 0, sizeof rr);
    snprintf(ro.run_id, sizeof ro.run_id, "e2e%d", (int)getpid());
    if (gf_raw_publish(s->nc, &ro, &rr) != 0)
        return 0;
    gf_raw_js_cleanup(s->nc, &rr);
    return rr.publish.secs > 0 ? (double)rr.publish.count / rr.publish.secs : 0;
}

/* Waits until every submitted ticket is assigned, nothing was assigned for 3 s, or
 * `drain` seconds passed. */
static void drain(gf_load_table *t, double drain_s, long long submitted)
{
    double end = gf_load_now() + drain_s, last_change = gf_load_now();
    long long before = -1;
    while (gf_load_now() < end) {
        pthread_mutex_lock(&t->mu);
        long long n = t->assigned_pushes;
        pthread_mutex_unlock(&t->mu);
        if (n >= submitted)
            break;
        if (n != before) {
            before = n;
            last_change = gf_load_now();
        } else if (gf_load_now() - last_change > 3.0) {
            break;
        }
        gf_clock_sleep_ms(100);
    }
}

typedef struct figures {
    long long submitted, created, assigned, assigned_in_run, errors;
    double secs, submitted_per_s, tickets_per_s;
    double p50, p95, p99, p50_alloc, p99_alloc;
    double p50_match, p99_match;   /* submit -> CLAIMED push: the wait for a match */
    double p50_create, p99_create; /* ticket.create request -> reply */
    double writes_per_ticket, mirrored_per_ticket, in_msgs_per_ticket;
    double fleet_writes_per_ticket, fleet_writes_per_s; /* KV_fleet; per s of run and drain */
    double heartbeats_per_s; /* the simulated servers' heartbeats (game overs included) */
    long long matches, conflicts;
    double conflicts_per_match;
    double raw, limit_ratio;
    unsigned long long tokens_ok, tokens_bad, tokens_unchecked; /* the simulated servers' */
} figures;

/* Time to assignment over every submitted ticket (unassigned: infinitely late), and the
 * allocation time (CLAIMED push to ASSIGNED push) over the assigned ones. */
static void timings(gf_load_table *t, double t0, double secs, figures *f)
{
    size_t cap = (size_t)(f->submitted > 0 ? f->submitted : 1);
    double *tta = malloc(cap * sizeof *tta), *alloc = malloc(cap * sizeof *alloc);
    double *ttm = malloc(cap * sizeof *ttm);
    size_t n = 0, na = 0, nm = 0;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i <= t->mask && tta && alloc && ttm; i++) {
        const gf_load_entry *e = &t->s[i];
        if (e->submitted <= 0 || n >= cap)
            continue;
        tta[n++] = e->assigned > 0 ? (e->assigned - e->submitted) * 1000 : INFINITY;
        ttm[nm++] = e->claimed > 0 ? fmax(0, e->claimed - e->submitted) * 1000 : INFINITY;
        f->created += e->created > 0;
        if (e->assigned > 0) {
            f->assigned++;
            f->assigned_in_run += e->assigned <= t0 + secs;
            if (e->claimed_last > 0 && na < cap)
                alloc[na++] = fmax(0, e->assigned - e->claimed_last) * 1000;
        }
    }
    pthread_mutex_unlock(&t->mu);
    if (tta)
        qsort(tta, n, sizeof *tta, gf_load_cmp_double);
    if (alloc)
        qsort(alloc, na, sizeof *alloc, gf_load_cmp_double);
    if (ttm)
        qsort(ttm, nm, sizeof *ttm, gf_load_cmp_double);
    f->p50_match = gf_load_pct(ttm, nm, 0.5);
    f->p99_match = gf_load_pct(ttm, nm, 0.99);
    free(ttm);
    f->p50 = gf_load_pct(tta, n, 0.5);
    f->p95 = gf_load_pct(tta, n, 0.95);
    f->p99 = gf_load_pct(tta, n, 0.99);
    f->p50_alloc = gf_load_pct(alloc, na, 0.5);
    f->p99_alloc = gf_load_pct(alloc, na, 0.99);
    free(tta);
    free(alloc);
}

static double finite_or(double v)
{
    return isinf(v) ? -1 : v;
}

static void report(const e2e_opts *o, const figures *f, const gf_mmcheck *chk, json_t *cpu,
                   json_t *by_conn)
{
    uint64_t dc = gf_mmcheck_count(chk, "double_claims"),
             two = gf_mmcheck_count(chk, "players_in_two_matches"),
             lost = gf_mmcheck_count(chk, "tickets_lost"),
             viol = gf_mmcheck_count(chk, "limit_violations"),
             half = gf_mmcheck_count(chk, "half_assigned_matches");
    printf("e2e: %d intake, %d matcher, %d allocator, %d fleet; %d servers (play %lld ms, "
           "tokens of 1 match in %d verified); queue %s; rate %s; nats.flush %s; %.1f s\n",
           o->intakes, o->matchers, o->allocators, o->fleets, o->servers, (long long)o->play_ms,
           o->verify_every, o->queue ? o->queue : "all", o->rate > 0 ? "paced" : "open", o->flush,
           f->secs);
    printf("  submitted            %lld (%.0f/s), created %lld, errors %lld\n", f->submitted,
           f->submitted_per_s, f->created, f->errors);
    printf("  assigned             %lld in the run (%.0f tickets/s), %lld after the drain\n",
           f->assigned_in_run, f->tickets_per_s, f->assigned);
    printf("  time to assignment   p50 %.0f ms, p95 %.0f ms, p99 %.0f ms (submit to ASSIGNED "
           "push; inf = not assigned)\n",
           f->p50, f->p95, f->p99);
    printf(
        "  of which             create p50 %.1f ms, p99 %.1f ms (request to reply); waiting for a "
        "match (submit to CLAIMED push) p50 %.0f ms, p99 %.0f ms\n",
        f->p50_create, f->p99_create, f->p50_match, f->p99_match);
    printf("  allocation           p50 %.1f ms, p99 %.1f ms (CLAIMED push to ASSIGNED push)\n",
           f->p50_alloc, f->p99_alloc);
    printf("  matches              %lld, claim conflicts %lld (%.3f per match)\n", f->matches,
           f->conflicts, f->conflicts_per_match);
    printf("  JetStream writes     %.2f per assigned ticket (+ %.2f mirrored to the audit); "
           "server in_msgs %.2f per ticket\n",
           f->writes_per_ticket, f->mirrored_per_ticket, f->in_msgs_per_ticket);
    printf("  fleet bucket         %.2f writes per ticket, %.1f/s for %.1f heartbeats/s "
           "(--heartbeat-timeout %s)\n",
           f->fleet_writes_per_ticket, f->fleet_writes_per_s, f->heartbeats_per_s,
           o->heartbeat_timeout);
    printf("  raw async publish    %.0f msg/s (same server, same run); limit_ratio %.3f\n", f->raw,
           f->limit_ratio);
    printf("  join tokens          %llu verified by the servers, %llu refused, %llu admitted "
           "unchecked (--verify-every %d)\n",
           f->tokens_ok, f->tokens_bad, f->tokens_unchecked, o->verify_every);
    printf("  invariants (audit)   double_claims %llu, players_in_two_matches %llu, "
           "lost_tickets %llu, violations %llu, half_assigned %llu\n",
           (unsigned long long)dc, (unsigned long long)two, (unsigned long long)lost,
           (unsigned long long)viol, (unsigned long long)half);
    if (!o->json) {
        json_decref(cpu);
        json_decref(by_conn);
        return;
    }
    json_t *j = json_object();
    json_object_set_new(j, "cpu_us_per_ticket", cpu);
    json_object_set_new(j, "msgs_per_ticket_by_connection", by_conn);
    json_object_set_new(j, "seconds", json_real(f->secs));
    json_object_set_new(j, "flush", json_string(o->flush));
    json_object_set_new(j, "verify_every", json_integer(o->verify_every));
    json_object_set_new(j, "heartbeat_timeout", json_string(o->heartbeat_timeout));
    json_object_set_new(j, "submitted", json_integer(f->submitted));
    json_object_set_new(j, "submitted_per_s", json_real(f->submitted_per_s));
    json_object_set_new(j, "assigned", json_integer(f->assigned));
    json_object_set_new(j, "tickets_per_s", json_real(f->tickets_per_s));
    json_object_set_new(j, "p50_assign_ms", json_real(finite_or(f->p50)));
    json_object_set_new(j, "p95_assign_ms", json_real(finite_or(f->p95)));
    json_object_set_new(j, "p99_assign_ms", json_real(finite_or(f->p99)));
    json_object_set_new(j, "p50_create_ms", json_real(f->p50_create));
    json_object_set_new(j, "p99_create_ms", json_real(f->p99_create));
    json_object_set_new(j, "p50_match_ms", json_real(finite_or(f->p50_match)));
    json_object_set_new(j, "p99_match_ms", json_real(finite_or(f->p99_match)));
    json_object_set_new(j, "p50_alloc_ms", json_real(f->p50_alloc));
    json_object_set_new(j, "p99_alloc_ms", json_real(f->p99_alloc));
    json_object_set_new(j, "matches", json_integer(f->matches));
    json_object_set_new(j, "claim_conflicts", json_integer(f->conflicts));
    json_object_set_new(j, "claim_conflicts_per_match", json_real(f->conflicts_per_match));
    json_object_set_new(j, "writes_per_ticket", json_real(f->writes_per_ticket));
    json_object_set_new(j, "fleet_writes_per_ticket", json_real(f->fleet_writes_per_ticket));
    json_object_set_new(j, "fleet_writes_per_s", json_real(f->fleet_writes_per_s));
    json_object_set_new(j, "heartbeats_per_s", json_real(f->heartbeats_per_s));
    json_object_set_new(j, "mirrored_per_ticket", json_real(f->mirrored_per_ticket));
    json_object_set_new(j, "in_msgs_per_ticket", json_real(f->in_msgs_per_ticket));
    json_object_set_new(j, "raw_publish_per_s", json_real(f->raw));
    json_object_set_new(j, "limit_ratio", json_real(f->limit_ratio));
    json_object_set_new(j, "double_claims", json_integer((json_int_t)dc));
    json_object_set_new(j, "players_in_two_matches", json_integer((json_int_t)two));
    json_object_set_new(j, "lost_tickets", json_integer((json_int_t)lost));
    json_object_set_new(j, "violations", json_integer((json_int_t)viol));
    json_object_set_new(j, "half_assigned", json_integer((json_int_t)half));
    json_object_set_new(j, "errors", json_integer(f->errors));
    json_object_set_new(j, "tokens_ok", json_integer((json_int_t)f->tokens_ok));
    json_object_set_new(j, "tokens_bad", json_integer((json_int_t)f->tokens_bad));
    json_object_set_new(j, "tokens_unchecked", json_integer((json_int_t)f->tokens_unchecked));
    gf_bench_json_line(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
}

/* The queues tickets go to, with their team sizes (their largest party). */
static size_t pick_queues(const e2e_opts *o, const gf_mm_tables *t, const char **names,
                          uint32_t *team)
{
    size_t n = 0;
    for (size_t q = 0; q < t->cfg.queues_len && n < MAX_QUEUES; q++) {
        if (o->queue && strcmp(o->queue, t->cfg.queues[q].name) != 0)
            continue;
        names[n] = t->cfg.queues[q].name;
        team[n++] = t->cfg.queues[q].team_size;
    }
    return n;
}

int gf_bench_e2e(int argc, char **argv)
{
    e2e_opts o;
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    gf_log_init("bench-e2e", GF_LOG_WARN);
    stack s = {0};
    gf_load_table t = {0};
    gf_mmcheck *chk = NULL;
    natsConnection *snc = NULL;
    natsSubscription *status = NULL;
    figures f = {0};
    rc = 1;
    gf_bench_build_dir(s.build, sizeof s.build);
    snprintf(s.dir, sizeof s.dir, "/tmp/gamefn-bench-e2e-XXXXXX");
    s.fns = (gf_bench_fns){.bench = "e2e", .build = s.build, .log_dir = s.dir};
    if (!gf_bench_rundir_make("e2e", s.dir) || gf_load_table_init(&t, TABLE_BITS) != 0 ||
        gf_natsd_start(NULL, &s.srv) != 0)
        goto out;
    if (gf_bench_connect_asap(gf_natsd_url(s.srv), &s.nc) != GF_OK ||
        natsConnection_JetStream(&s.js, s.nc, NULL) != NATS_OK)
        goto out;
    fprintf(stderr, "e2e: raw async publish baseline, %.0f s\n", o.raw_seconds);
    f.raw = raw_baseline(&s, &o);
    fprintf(stderr, "e2e: starting the service (%d servers)\n", o.servers);
    if (stack_up(&s, &o) != 0)
        goto out;
    const char *queues[MAX_QUEUES];
    uint32_t team[MAX_QUEUES];
    size_t nq = pick_queues(&o, &s.tables, queues, team);
    if (nq == 0) {
        fprintf(stderr, "e2e: no queue %s in %s\n", o.queue ? o.queue : "at all", o.config);
        goto out;
    }
    gf_load_watch_status(gf_natsd_url(s.srv), &t, &snc, &status);

    server_counts c0, c1;
    cpu_use u0, u1;
    gf_gamesim_stats ss0, ss;
    count_server(&s, &c0);
    cpu_sample(&s, &u0);
    gf_gamesim_stats_get(s.sim, &ss0);
    gf_load_opts lo = {.url = gf_natsd_url(s.srv),
                       .seconds = o.seconds,
                       .rate = o.rate,
                       .clients = o.clients,
                       .in_flight = o.in_flight,
                       .queues = queues,
                       .team_size = team,
                       .nqueues = nq};
    gf_load_result lr;
    fprintf(stderr, "e2e: submitting for %.0f s\n", o.seconds);
    double t0 = gf_load_now();
    if (gf_load_run(&lo, &t, &lr) != 0)
        goto out;
    f.secs = o.seconds;
    f.submitted = lr.sent;
    f.errors = lr.errors + lr.timeouts;
    fprintf(stderr, "e2e: draining (at most %.0f s)\n", o.drain);
    gf_gamesim_stats_get(s.sim, &ss);
    fprintf(stderr, "e2e: at the end of the load: servers free %u, busy %u\n", ss.free, ss.busy);
    drain(&t, o.drain, lr.sent);
    cpu_sample(&s, &u1);
    double busy_secs = gf_load_now() - t0;
    count_server(&s, &c1);
    gf_gamesim_stats_get(s.sim, &ss);
    fprintf(stderr,
            "e2e: simulated servers: %llu allocations, %llu games, tokens ok %llu bad %llu "
            "unchecked %llu, %llu withdrawn, heartbeats %llu (%llu failed)\n",
            (unsigned long long)ss.allocations, (unsigned long long)ss.games_finished,
            (unsigned long long)ss.tokens_ok, (unsigned long long)ss.tokens_bad,
            (unsigned long long)ss.tokens_unchecked, (unsigned long long)ss.allocations_gone,
            (unsigned long long)ss.heartbeats, (unsigned long long)ss.heartbeat_failures);
    gf_sub_close(status, 2000); /* its callback writes to t: done with it before reading */
    status = NULL;
    f.tokens_ok = ss.tokens_ok;
    f.tokens_bad = ss.tokens_bad;
    f.tokens_unchecked = ss.tokens_unchecked;
    timings(&t, t0, o.seconds, &f);
    f.submitted_per_s = (double)f.submitted / o.seconds;
    f.tickets_per_s = (double)f.assigned_in_run / o.seconds;
    double per = f.assigned > 0 ? (double)f.assigned : 1;
    f.writes_per_ticket = (double)(c1.writes - c0.writes) / per;
    f.mirrored_per_ticket = (double)(c1.mirrored - c0.mirrored) / per;
    f.in_msgs_per_ticket = (double)(c1.in_msgs - c0.in_msgs) / per;
    f.fleet_writes_per_ticket = (double)(c1.fleet_writes - c0.fleet_writes) / per;
    f.fleet_writes_per_s = (double)(c1.fleet_writes - c0.fleet_writes) / busy_secs;
    f.heartbeats_per_s = (double)(ss.heartbeats - ss0.heartbeats) / busy_secs;
    f.limit_ratio = f.raw > 0 ? f.tickets_per_s * f.writes_per_ticket / f.raw : 0;
    f.p50_create = gf_load_pct(lr.lat_us, (size_t)lr.nlat, 0.5) / 1000;
    f.p99_create = gf_load_pct(lr.lat_us, (size_t)lr.nlat, 0.99) / 1000;
    free(lr.lat_us);

    /* The audit, judged while the service still runs: a claim whose lease expires now
     * (a backlog of matches after an overload) is a matcher's to release, as it would be
     * in production; judged after the matchers stopped it would look lost. Then the
     * matchers' counters (their last log line). */
    fprintf(stderr, "e2e: checking the audit\n");
    gf_mmcheck_opts co = {.queues = &s.tables.cfg, .catch_up_ms = 60000};
    if (gf_mmcheck_run(s.nc, s.js, &co, &chk) != GF_OK)
        goto out;
    gf_mmcheck_print(chk);
    gf_bench_fns_stop(&s.fns, "ticker");
    gf_bench_fns_stop(&s.fns, "matcher");
    f.matches = c1.matches;
    f.conflicts = matcher_counter(&s, "matcher stopped", "claim_conflicts");
    long long m = matcher_counter(&s, "matcher stopped", "matches");
    if (m > 0)
        f.matches = m;
    f.conflicts_per_match = f.matches > 0 ? (double)f.conflicts / (double)f.matches : 0;
    json_t *cpu = NULL;
    cpu_report(&s, &u0, &u1, busy_secs, f.assigned, &cpu);
    json_t *by_conn = gf_bench_conn_msgs_report(&c0.conns, &c1.conns, f.assigned);
    srv_stats(&s);
    report(&o, &f, chk, cpu, by_conn);
    rc = gf_check_report_broken(chk->report) == 0 && f.tokens_bad == 0 ? 0 : 3;
out:
    if (rc == 1)
        fprintf(stderr, "gamefn-bench e2e: failed (logs in %s)\n", s.dir);
    gf_mmcheck_free(chk);
    natsSubscription_Destroy(status);
    natsConnection_Destroy(snc);
    stack_down(&s, o.keep || rc == 1);
    gf_load_table_fini(&t);
    return rc;
}
