/*
 * check.c — `gamefn-bench check [--tickets N] [--json]`: how fast the independent checker
 * reads and judges a deployment's history, against the raw rate at which the same server
 * streams the same mirror to an ordered consumer that only counts (measured in this run).
 *
 * Design notes: its own nats-server; buckets tickets, matches, players and their AUDIT_*
 * mirrors, as config/gamefn.yaml has them. The history is written with asynchronous
 * publishes straight to $KV.<bucket>.<key> (the bench measures reading, not writing): per
 * ticket QUEUED, CLAIMED and ASSIGNED, a players record, and per pair of tickets one
 * COMMITTED record: a clean history, so every count must come out 0 (printed, and the
 * exit code is 1 otherwise).
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "gamefn/check/check_read.h"
#include "gamefn/clock.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "natsd.h"
#include "simstack.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x

static int publish(jsCtx *js, const char *subject, const ProtobufCMessage *m)
{
    uint8_t buf[1024];
    size_t len = protobuf_c_message_pack(m, buf);
    return js_PublishAsync(js, subject, buf, (int)len, NULL) == NATS_OK ? 0 : -1;
}

static int ticket(jsCtx *js, size_t i, int state, int64_t now)
{
    char id[32], match[32], player[32], subject[64];
    snprintf(id, sizeof id, "t%zu", i);
    snprintf(match, sizeof match, "m%zu", i / 2);
    snprintf(player, sizeof player, "p%zu", i);
    gf_simstack_rec r = {.ticket_id = id,
                         .player_id = player,
                         .rating = 1500,
                         .state = state,
                         .match_id = match,
                         .queued_ms = now,
                         .now_ms = now,
                         .lease_ms = now + 3600000};
    uint8_t buf[4096];
    size_t len = gf_simstack_record(&r, buf);
    snprintf(subject, sizeof subject, "$KV.tickets.%s", id);
    return js_PublishAsync(js, subject, buf, (int)len, NULL) == NATS_OK ? 0 : -1;
}

static int commit(jsCtx *js, size_t pair, int64_t now)
{
    char match[32], t[2][32], subject[64];
    snprintf(match, sizeof match, "m%zu", pair);
    Gamefn__V1__Assignment a[2] = {GAMEFN__V1__ASSIGNMENT__INIT, GAMEFN__V1__ASSIGNMENT__INIT};
    Gamefn__V1__Assignment *ap[2] = {&a[0], &a[1]};
    for (int k = 0; k < 2; k++) {
        snprintf(t[k], sizeof t[k], "t%zu", 2 * pair + (size_t)k);
        a[k].match_id = match;
        a[k].ticket_id = t[k];
        a[k].datacenter = "eu";
    }
    Gamefn__V1__MatchOutcome o = GAMEFN__V1__MATCH_OUTCOME__INIT;
    o.match_id = match;
    o.state = GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED;
    o.n_assignments = 2;
    o.assignments = ap;
    o.decided_unix_ms = now;
    snprintf(subject, sizeof subject, "$KV.matches.%s", match);
    return publish(js, subject, &o.base);
}

static int player(jsCtx *js, size_t i, int64_t now)
{
    char id[32], p[32], subject[64];
    snprintf(id, sizeof id, "t%zu", i);
    snprintf(p, sizeof p, "p%zu", i);
    Gamefn__V1__PlayerMatchRecord r = GAMEFN__V1__PLAYER_MATCH_RECORD__INIT;
    r.player_id = p;
    r.ticket_id = id;
    r.created_unix_ms = now;
    snprintf(subject, sizeof subject, "$KV.players.%s", p);
    return publish(js, subject, &r.base);
}

static int setup(jsCtx *js)
{
    static const char *const buckets[] = {"tickets", "matches", "players"};
    static const char *const mirrors[] = {"AUDIT_TICKETS", "AUDIT_MATCHES", "AUDIT_PLAYERS"};
    for (int i = 0; i < 3; i++) {
        kvConfig kc;
        kvStore *kv = NULL;
        kvConfig_Init(&kc);
        kc.Bucket = buckets[i];
        kc.History = 5;
        kc.StorageType = js_FileStorage;
        if (js_CreateKeyValue(&kv, js, &kc) != NATS_OK)
            return -1;
        kvStore_Destroy(kv);
        char origin[32];
        snprintf(origin, sizeof origin, "KV_%s", buckets[i]);
        jsStreamConfig sc;
        jsStreamSource src;
        jsStreamConfig_Init(&sc);
        jsStreamSource_Init(&src);
        src.Name = origin;
        sc.Name = mirrors[i];
        sc.Mirror = &src;
        sc.Storage = js_FileStorage;
        if (js_AddStream(NULL, js, &sc, NULL, NULL) != NATS_OK)
            return -1;
    }
    return 0;
}

/* Messages of `stream` counted through an ordered consumer: the raw read rate. */
static double raw_read(jsCtx *js, const char *stream, uint64_t total)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    natsSubscription *sub = NULL;
    if (js_SubscribeSync(&sub, js, ">", NULL, &so, NULL) != NATS_OK)
        return 0;
    natsSubscription_SetPendingLimits(sub, 1000000, 1024 * 1024 * 1024);
    int64_t t0 = gf_clock_mono_ns();
    uint64_t n = 0;
    natsMsg *m = NULL;
    while (n < total && natsSubscription_NextMsg(&m, sub, 10000) == NATS_OK) {
        natsMsg_Destroy(m);
        n++;
    }
    double s = (double)(gf_clock_mono_ns() - t0) / 1e9;
    natsSubscription_Destroy(sub);
    return n == total && s > 0 ? (double)n / s : 0;
}

static uint64_t stream_msgs(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = NULL;
    uint64_t n = 0;
    if (js_GetStreamInfo(&si, js, stream, NULL, NULL) == NATS_OK)
        n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

int gf_bench_check(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"tickets", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {NULL, 0, NULL, 0},
    };
    size_t tickets = 100000;
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 't')
            tickets = (size_t)strtoull(optarg, NULL, 10) & ~(size_t)1;
        else if (c == 'j')
            json = true;
        else {
            fprintf(stderr, "usage: gamefn-bench check [--tickets N] [--json]\n");
            return 2;
        }
    }
    gf_natsd *srv = NULL;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 8192;
    jo.PublishAsync.StallWait = 10000;
    jo.Wait = 30000;
    int rc = 1;
    if (gf_natsd_start(NULL, &srv) != 0 ||
        natsConnection_ConnectTo(&nc, gf_natsd_url(srv)) != NATS_OK ||
        natsConnection_JetStream(&js, nc, &jo) != NATS_OK || setup(js) != 0) {
        fprintf(stderr, "check: cannot set up the server: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    int64_t now = gf_clock_unix_ms(), t0 = gf_clock_mono_ms();
    for (size_t i = 0; i < tickets; i++) {
        /* Pairs: both queued and claimed, then the commit, then both assigned. */
        bool second = i % 2 == 1;
        if (player(js, i, now) || ticket(js, i, ST(QUEUED), now) ||
            ticket(js, i, ST(CLAIMED), now) ||
            (second && (commit(js, i / 2, now) || ticket(js, i - 1, ST(ASSIGNED), now) ||
                        ticket(js, i, ST(ASSIGNED), now)))) {
            fprintf(stderr, "check: publish failed: %s\n", nats_GetLastError(NULL));
            goto out;
        }
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    if (js_PublishAsyncComplete(js, &po) != NATS_OK)
        goto out;
    uint64_t want = stream_msgs(js, "KV_tickets") + stream_msgs(js, "KV_matches") +
                    stream_msgs(js, "KV_players");
    while (gf_clock_mono_ms() - t0 < 120000 && stream_msgs(js, "AUDIT_TICKETS") +
                                                       stream_msgs(js, "AUDIT_MATCHES") +
                                                       stream_msgs(js, "AUDIT_PLAYERS") <
                                                   want)
        gf_clock_sleep_ms(100);
    printf("history: %zu tickets, %llu messages in the mirrors (written in %.1f s)\n", tickets,
           (unsigned long long)want, (double)(gf_clock_mono_ms() - t0) / 1000.0);

    double raw = raw_read(js, "AUDIT_TICKETS", stream_msgs(js, "AUDIT_TICKETS"));
    gf_match_dc dc = {"eu", "eu"};
    gf_match_queue q;
    gf_match_queue_defaults(&q, "duel", GF_MATCH_HYBRID, "1v1");
    gf_match_config cfg = {.datacenters = &dc, .datacenters_len = 1, .queues = &q, .queues_len = 1};
    char why[300];
    gf_check_params p;
    gf_check_params_default(&p);
    p.queues = &cfg;
    p.now_ms = gf_clock_unix_ms();
    gf_check *chk = NULL;
    const gf_check_report *r = NULL;
    gf_check_read_notes notes;
    gf_check_read_opts ro = {.no_events = true};
    if (gf_match_config_prepare(&cfg, why, sizeof why) != GF_OK || gf_check_new(&p, &chk) != GF_OK)
        goto out;
    int64_t r0 = gf_clock_mono_ns();
    gf_err err = gf_check_read(nc, js, chk, &ro, &notes, why, sizeof why);
    int64_t r1 = gf_clock_mono_ns();
    if (err == GF_OK)
        err = gf_check_finish(chk, &r);
    int64_t r2 = gf_clock_mono_ns();
    if (err != GF_OK) {
        fprintf(stderr, "check: %s (%s)\n", why, gf_err_str(err));
        gf_check_free(chk);
        goto out;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double read_s = (double)(r1 - r0) / 1e9, judge_s = (double)(r2 - r1) / 1e9;
    double rate = (double)want / (read_s + judge_s);
    uint64_t broken = gf_check_report_broken(r);
    printf("raw ordered-consumer read of AUDIT_TICKETS: %.0f msg/s\n", raw);
    printf("gamefn check: read %.2f s, judged %.2f s: %.0f msg/s (%.2f of raw), %.0f tickets/s; "
           "max RSS %ld MiB; broken %llu\n",
           read_s, judge_s, rate, raw > 0 ? rate / raw : 0, (double)tickets / (read_s + judge_s),
           ru.ru_maxrss / 1024, (unsigned long long)broken);
    if (json) {
        json_t *j = json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:I, s:I}", "tickets",
                              (json_int_t)tickets, "messages", (json_int_t)want, "read_s", read_s,
                              "judge_s", judge_s, "msgs_per_s", rate, "raw_read_per_s", raw,
                              "ratio", raw > 0 ? rate / raw : 0.0, "max_rss_kib",
                              (json_int_t)ru.ru_maxrss, "broken", (json_int_t)broken);
        gf_bench_json_line(j, JSON_COMPACT);
    }
    rc = broken == 0 ? 0 : 1;
    gf_check_free(chk);
out:
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
    return rc;
}
