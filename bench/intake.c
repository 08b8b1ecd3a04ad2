/*
 * intake.c — `gamefn-bench intake`: how many ticket.create requests per second the
 * intake function takes, with R replicas, against a fresh nats-server.
 *
 * Design notes:
 * - The bench starts its own nats-server (support/natsd), writes a config (the service's
 *   buckets, intake's section with --concurrency, a one-queue table) and spawns
 *   build/functions/intake/gamefn-intake --replicas times.
 * - Load: --clients threads, each on its own connection, keeps --in-flight requests
 *   outstanding (its own reply subjects, a sync subscription), every request a new
 *   ticket (unique idempotency key and player). A request counts when its reply is a
 *   success; any error reply or a timeout (5 s) is counted and reported.
 * - Baseline, in the same run and on the same server: one thread doing synchronous
 *   kvStore_Create calls for 2 s (the "one synchronous KV write per request" rate the
 *   service must beat).
 * - Writes per ticket: the growth of KV_tickets + KV_players over the run, divided by
 *   the tickets created.
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <nats/nats.h>

#include "bench.h"
#include "gamefn/clock.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "natsd.h"
#include "proc.h"

enum { MAX_REPLICAS = 16, MAX_CLIENTS = 16, MAX_WINDOW = 1024, LAT_MAX = 2000000 };

typedef struct intake_opts {
    double seconds;
    int replicas, clients, in_flight, concurrency;
    bool json;
} intake_opts;

typedef struct load {
    const char *url;
    const intake_opts *o;
    int index;
    double t_end;
    long long ok, errors, timeouts;
    double *lat_us; /* successes' latencies */
    long long nlat;
} load;

static double now_s(void)
{
    return (double)gf_clock_mono_ns() / 1e9;
}

static size_t pack_create(int client, long long n, uint8_t *buf)
{
    char key[48], player[48];
    snprintf(key, sizeof key, "b%d-%lld", client, n);
    snprintf(player, sizeof player, "p%d-%lld", client, n);
    Gamefn__V1__PartyMember m = GAMEFN__V1__PARTY_MEMBER__INIT, *mp[1] = {&m};
    m.player_id = player;
    m.rating = 1000 + (double)(n % 1000);
    Gamefn__V1__DatacenterPing p1 = GAMEFN__V1__DATACENTER_PING__INIT,
                               p2 = GAMEFN__V1__DATACENTER_PING__INIT, *pp[2] = {&p1, &p2};
    p1.datacenter = "eu-west";
    p1.ping_ms = 20 + (uint32_t)(n % 40);
    p2.datacenter = "us-east";
    p2.ping_ms = 90;
    Gamefn__V1__CreateTicketRequest r = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    r.idempotency_key = key;
    r.queue = "duel";
    r.n_members = 1;
    r.members = mp;
    r.n_pings = 2;
    r.pings = pp;
    return gamefn__v1__create_ticket_request__pack(&r, buf);
}

static void *client(void *arg)
{
    load *l = arg;
    natsConnection *nc = NULL;
    natsOptions *opts = NULL;
    natsSubscription *sub = NULL;
    char prefix[64], subj[96];
    double sent_at[MAX_WINDOW];
    long long next = 0;
    uint8_t buf[512];
    natsOptions_Create(&opts);
    natsOptions_SetURL(opts, l->url);
    natsOptions_SetSendAsap(opts, true);
    if (natsConnection_Connect(&nc, opts) != NATS_OK) {
        natsOptions_Destroy(opts);
        return NULL;
    }
    natsOptions_Destroy(opts);
    snprintf(prefix, sizeof prefix, "_INBOX.bench%d", l->index);
    snprintf(subj, sizeof subj, "%s.*", prefix);
    natsConnection_SubscribeSync(&sub, nc, subj);
    natsSubscription_SetPendingLimits(sub, -1, -1);
    int window = l->o->in_flight;
    for (int s = 0; s < window; s++) {
        snprintf(subj, sizeof subj, "%s.%d", prefix, s);
        size_t len = pack_create(l->index, next++, buf);
        sent_at[s] = now_s();
        natsConnection_PublishRequest(nc, "gamefn.v1.ticket.create", subj, buf, (int)len);
    }
    int outstanding = window;
    while (outstanding > 0) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, 5000) != NATS_OK) {
            l->timeouts += outstanding;
            break;
        }
        const char *reply = natsMsg_GetSubject(m);
        int slot = atoi(strrchr(reply, '.') + 1);
        const char *code = NULL;
        double t = now_s();
        if (natsMsgHeader_Get(m, "Nats-Service-Error-Code", &code) == NATS_OK)
            l->errors++;
        else {
            l->ok++;
            if (l->nlat < LAT_MAX)
                l->lat_us[l->nlat++] = (t - sent_at[slot]) * 1e6;
        }
        natsMsg_Destroy(m);
        outstanding--;
        if (t < l->t_end && slot >= 0 && slot < window) {
            size_t len = pack_create(l->index, next++, buf);
            sent_at[slot] = now_s();
            natsConnection_PublishRequest(nc, "gamefn.v1.ticket.create", reply, buf, (int)len);
            outstanding++;
        }
    }
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return NULL;
}

static const char config_fmt[] = "nats:\n  servers: [\"%s\"]\nlog:\n  level: warn\n"
                                 "jetstream:\n  streams:\n"
                                 "    - {name: AUDIT_TICKETS, mirror: KV_tickets}\n"
                                 "    - {name: AUDIT_MATCHES, mirror: KV_matches}\n"
                                 "    - {name: AUDIT_PLAYERS, mirror: KV_players}\n"
                                 "  buckets:\n"
                                 "    - {name: tickets, history: 5, ttl: 1h}\n"
                                 "    - {name: players, history: 5}\n"
                                 "    - {name: matches, history: 1, ttl: 1d}\n"

                                 "functions:\n  intake:\n    concurrency: %d\n"
                                 "  matcher:\n    matchmaking:\n      datacenters:\n"
                                 "        - {name: eu-west, region: eu}\n"
                                 "        - {name: us-east, region: na}\n"
                                 "      queues:\n        - {name: duel, shape: 1v1}\n";

static uint64_t last_seq(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = NULL;
    uint64_t n = 0;
    if (js_GetStreamInfo(&si, js, stream, NULL, NULL) == NATS_OK)
        n = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return n;
}

/* Synchronous KV creates on one thread for `secs`: the baseline rate. */
static double kv_sync_rate(jsCtx *js, double secs)
{
    kvStore *kv = NULL;
    kvConfig kc;
    char key[32];
    long long n = 0;
    kvConfig_Init(&kc);
    kc.Bucket = "bench";
    if (js_CreateKeyValue(&kv, js, &kc) != NATS_OK)
        return 0;
    double t0 = now_s(), t = t0;
    for (; t - t0 < secs; t = now_s()) {
        snprintf(key, sizeof key, "k%lld", n);
        if (kvStore_Create(NULL, kv, key, "x", 1) == NATS_OK)
            n++;
    }
    kvStore_Destroy(kv);
    return (double)n / (t - t0);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *v, long long n, double q)
{
    if (n == 0)
        return 0;
    long long i = (long long)ceil(q * (double)n) - 1;
    return v[i < 0 ? 0 : (i >= n ? n - 1 : i)];
}

static const char *intake_binary(char *buf, size_t size)
{
    const char *dir = getenv("GAMEFN_BUILD_DIR");
    if (dir && dir[0]) {
        snprintf(buf, size, "%s/functions/intake/gamefn-intake", dir);
        return buf;
    }
    char self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(buf, size, "%s/../functions/intake/gamefn-intake", self);
    return buf;
}

static int parse(int argc, char **argv, intake_opts *o)
{
    static const struct option longopts[] = {
        {"seconds", required_argument, NULL, 's'},
        {"replicas", required_argument, NULL, 'r'},
        {"clients", required_argument, NULL, 'c'},
        {"in-flight", required_argument, NULL, 'w'},
        {"concurrency", required_argument, NULL, 'n'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o =
        (intake_opts){.seconds = 5, .replicas = 1, .clients = 2, .in_flight = 32, .concurrency = 8};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            o->seconds = atof(optarg);
            break;
        case 'r':
            o->replicas = atoi(optarg);
            break;
        case 'c':
            o->clients = atoi(optarg);
            break;
        case 'w':
            o->in_flight = atoi(optarg);
            break;
        case 'n':
            o->concurrency = atoi(optarg);
            break;
        case 'j':
            o->json = true;
            break;
        case 'h':
            printf("usage: gamefn-bench intake [--seconds S] [--replicas R] [--clients C] "
                   "[--in-flight N] [--concurrency K] [--json]\n");
            return 1;
        default:
            return -1;
        }
    }
    if (o->seconds <= 0 || o->replicas < 1 || o->replicas > MAX_REPLICAS || o->clients < 1 ||
        o->clients > MAX_CLIENTS || o->in_flight < 1 || o->in_flight > MAX_WINDOW ||
        o->concurrency < 1 || o->concurrency > 256) {
        fprintf(stderr, "intake: option out of range\n");
        return -1;
    }
    return 0;
}

int gf_bench_intake(int argc, char **argv)
{
    intake_opts o;
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    gf_natsd *srv = NULL;
    if (gf_natsd_start(NULL, &srv) != 0)
        return 1;
    char cfg_path[512], bin[640];
    snprintf(cfg_path, sizeof cfg_path, "%s/bench.yaml", gf_natsd_dir(srv));
    FILE *f = fopen(cfg_path, "w");
    if (!f)
        return 1;
    fprintf(f, config_fmt, gf_natsd_url(srv), o.concurrency);
    fclose(f);
    intake_binary(bin, sizeof bin);

    gf_proc procs[MAX_REPLICAS] = {0};
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    natsConnection_ConnectTo(&nc, gf_natsd_url(srv));
    natsConnection_JetStream(&js, nc, NULL);
    for (int i = 0; i < o.replicas; i++) {
        char inst[32];
        snprintf(inst, sizeof inst, "in-%d", i);
        char *args[] = {bin, "--config", cfg_path, "--instance", inst, NULL};
        if (gf_proc_spawn(&procs[i], args, NULL, NULL) != 0)
            return 1;
    }
    /* Ready when every replica answers $SRV.PING.intake.<id>. */
    for (int i = 0; i < o.replicas; i++) {
        char subj[64];
        natsMsg *m = NULL;
        snprintf(subj, sizeof subj, "$SRV.PING.intake.in-%d", i);
        for (int t = 0; t < 200 && natsConnection_Request(&m, nc, subj, NULL, 0, 100) != NATS_OK;
             t++)
            ;
        natsMsg_Destroy(m);
    }
    double baseline = kv_sync_rate(js, 2.0);

    uint64_t w0 = last_seq(js, "KV_tickets") + last_seq(js, "KV_players");
    load loads[MAX_CLIENTS];
    pthread_t th[MAX_CLIENTS];
    double t0 = now_s();
    for (int i = 0; i < o.clients; i++) {
        loads[i] = (load){.url = gf_natsd_url(srv), .o = &o, .index = i, .t_end = t0 + o.seconds};
        loads[i].lat_us = malloc(LAT_MAX * sizeof(double));
        pthread_create(&th[i], NULL, client, &loads[i]);
    }
    long long ok = 0, errors = 0, timeouts = 0, nlat = 0;
    for (int i = 0; i < o.clients; i++) {
        pthread_join(th[i], NULL);
        ok += loads[i].ok;
        errors += loads[i].errors;
        timeouts += loads[i].timeouts;
    }
    double secs = now_s() - t0;
    double *lat = malloc((size_t)(ok ? ok : 1) * sizeof *lat);
    for (int i = 0; i < o.clients; i++) {
        memcpy(lat + nlat, loads[i].lat_us, (size_t)loads[i].nlat * sizeof *lat);
        nlat += loads[i].nlat;
        free(loads[i].lat_us);
    }
    qsort(lat, (size_t)nlat, sizeof *lat, cmp_d);
    uint64_t w1 = last_seq(js, "KV_tickets") + last_seq(js, "KV_players");
    double rate = (double)ok / secs, writes = ok ? (double)(w1 - w0) / (double)ok : 0;

    printf("intake: %d replica(s), concurrency %d, %d client(s) x %d in flight, %.1f s\n",
           o.replicas, o.concurrency, o.clients, o.in_flight, secs);
    printf("  tickets created      %lld (%.0f/s), errors %lld, timeouts %lld\n", ok, rate, errors,
           timeouts);
    printf("  latency              p50 %.2f ms, p99 %.2f ms\n", pct(lat, nlat, 0.5) / 1000,
           pct(lat, nlat, 0.99) / 1000);
    printf("  KV writes per ticket %.2f\n", writes);
    printf("  baseline             %.0f synchronous KV creates/s (one thread), ratio %.2f\n",
           baseline, baseline > 0 ? rate / baseline : 0);
    if (o.json) {
        json_t *j =
            json_pack("{s:f,s:i,s:i,s:i,s:i,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f}", "seconds", secs,
                      "replicas", o.replicas, "concurrency", o.concurrency, "clients", o.clients,
                      "in_flight", o.in_flight, "tickets", (json_int_t)ok, "errors",
                      (json_int_t)errors, "timeouts", (json_int_t)timeouts, "tickets_per_s", rate,
                      "p50_ms", pct(lat, nlat, 0.5) / 1000, "p99_ms", pct(lat, nlat, 0.99) / 1000,
                      "writes_per_ticket", writes, "kv_sync_per_s", baseline);
        char *text = json_dumps(j, JSON_COMPACT);
        printf("%s\n", text);
        free(text);
        json_decref(j);
    }
    free(lat);
    for (int i = 0; i < o.replicas; i++) {
        gf_proc_signal(&procs[i], SIGTERM);
        gf_proc_wait(&procs[i], 10000);
        gf_proc_cleanup(&procs[i]);
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
    return errors + timeouts > 0 ? 3 : 0;
}
