/*
 * producer.c — `gamefn-bench producer` and gf_bench_producer_measure (see
 * producer.h): the event producer library against the raw async publish of the same
 * events, same server, same run.
 *
 * Design notes:
 * - The raw phase publishes exactly the bytes and subjects the producer publishes
 *   (a GameEvent with the same fields, a generic payload padded to --payload), with a
 *   unique Msg-Id each and MaxPending = W, on a connection with nats.c's default
 *   options. The producer phase uses its own connection as a game server would
 *   (gamefn/conn.h: SendAsap on); the "borrowed" phase runs the producer on the raw
 *   phase's connection instead, which separates the library's cost from SendAsap's.
 * - A phase counts only if the stream then holds exactly `count` messages and the
 *   producer's counters agree (acknowledged == count, nothing dropped or spooled).
 * - Each emit call is timed (gf_clock_mono_ns before and after): the figure a game
 *   loop cares about. Percentiles are nearest-rank.
 */
#include "producer.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/producer.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/event.pb-c.h"
#include "natsd.h"

#define BENCH_SOURCE "bench-src"

/* The benchmark's event, as protobuf-c packs it: a generic payload of data_len bytes. */
static void bench_event(Gamefn__V1__GameEvent *ev, Gamefn__V1__GenericEvent *g, const uint8_t *data,
                        size_t data_len)
{
    *ev = (Gamefn__V1__GameEvent)GAMEFN__V1__GAME_EVENT__INIT;
    *g = (Gamefn__V1__GenericEvent)GAMEFN__V1__GENERIC_EVENT__INIT;
    ev->event_id = BENCH_SOURCE "-1000000";
    ev->source_id = BENCH_SOURCE;
    ev->source_seq = 1000000;
    ev->player_id = "p1000";
    ev->event_type = "bench";
    ev->occurred_unix_ms = gf_clock_unix_ms();
    g->data.data = (uint8_t *)(uintptr_t)data;
    g->data.len = data_len;
    ev->payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC;
    ev->generic = g;
}

/* The padding that makes an encoded event about `payload` bytes. */
static size_t data_len_for(int payload)
{
    Gamefn__V1__GameEvent ev;
    Gamefn__V1__GenericEvent g;
    bench_event(&ev, &g, NULL, 0);
    size_t base = gamefn__v1__game_event__get_packed_size(&ev) + 3; /* + data's tag, length */
    return (size_t)payload > base ? (size_t)payload - base : 0;
}

/* The raw phase's bytes: the same event, packed by protobuf-c. */
static uint8_t *raw_event(const uint8_t *data, size_t data_len, size_t *len)
{
    Gamefn__V1__GameEvent ev;
    Gamefn__V1__GenericEvent g;
    bench_event(&ev, &g, data, data_len);
    *len = gamefn__v1__game_event__get_packed_size(&ev);
    uint8_t *buf = malloc(*len);
    if (buf)
        gamefn__v1__game_event__pack(&ev, buf);
    return buf;
}

static int stream_msgs(jsCtx *js, const char *stream, uint64_t *msgs)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, js, stream, NULL, NULL) != NATS_OK)
        return -1;
    *msgs = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return 0;
}

static int check_stream(jsCtx *js, const char *stream, long long count, const char *phase)
{
    uint64_t msgs = 0;
    if (stream_msgs(js, stream, &msgs) != 0 || msgs != (uint64_t)count) {
        fprintf(stderr, "producer: [%s] the stream holds %" PRIu64 " messages, want %lld\n", phase,
                msgs, count);
        return -1;
    }
    return js_PurgeStream(js, stream, NULL, NULL) == NATS_OK ? 0 : -1;
}

/* One raw async publish of the event: bare (Msg-Id only), or as a natsMsg with the
 * producer's two headers too. */
static natsStatus raw_publish(jsCtx *pjs, const char *subject, const uint8_t *event, size_t len,
                              long long i, bool headers)
{
    char id[48], seq[24];
    snprintf(id, sizeof id, "raw-%lld-%d", i, (int)headers);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id;
    if (!headers)
        return js_PublishAsync(pjs, subject, event, (int)len, &po);
    natsMsg *m = NULL;
    snprintf(seq, sizeof seq, "%lld", i + 1);
    natsStatus s = natsMsg_Create(&m, subject, NULL, (const char *)event, (int)len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, GF_WIRE_HDR_SOURCE, BENCH_SOURCE "-0badcafe");
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, GF_WIRE_HDR_SOURCE_SEQ, seq);
    if (s == NATS_OK)
        s = js_PublishMsgAsync(pjs, &m, &po);
    natsMsg_Destroy(m); /* a no-op once the publish took it */
    return s;
}

static int raw_phase(natsConnection *nc, jsCtx *js, const char *stream,
                     const gf_bench_producer_opts *o, const uint8_t *data, size_t data_len,
                     bool headers, gf_bench_producer_result *r)
{
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = (int64_t)o->window;
    jsCtx *pjs = NULL;
    size_t len = 0;
    uint8_t *event = raw_event(data, data_len, &len);
    if (!event || natsConnection_JetStream(&pjs, nc, &jo) != NATS_OK) {
        free(event);
        return -1;
    }
    r->event_bytes = (int)len;
    int64_t t0 = gf_clock_mono_ns();
    int rc = 0;
    for (long long i = 0; i < o->count && rc == 0; i++) {
        char subject[64];
        snprintf(subject, sizeof subject, "gamefn.v1.event.p%lld.bench", i % o->players);
        natsStatus s;
        while ((s = raw_publish(pjs, subject, event, len, i, headers)) == NATS_TIMEOUT)
            r->raw_stalls++;
        if (s != NATS_OK) {
            fprintf(stderr, "producer: [raw] publish: %s\n", nats_GetLastError(NULL));
            rc = -1;
        }
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    if (rc == 0 && js_PublishAsyncComplete(pjs, &po) != NATS_OK) {
        fprintf(stderr, "producer: [raw] acks did not all arrive\n");
        rc = -1;
    }
    double secs = (double)(gf_clock_mono_ns() - t0) / 1e9;
    *(headers ? &r->raw_headers_per_s : &r->raw_per_s) = (double)o->count / secs;
    jsCtx_Destroy(pjs);
    free(event);
    return rc == 0 ? check_stream(js, stream, o->count, headers ? "raw-headers" : "raw") : -1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(const int64_t *sorted, long long n, double q)
{
    long long i = (long long)(q * (double)n + 0.999999) - 1;
    return (double)sorted[i < 0 ? 0 : i >= n ? n - 1 : i] / 1000.0;
}

typedef struct phase_out {
    double per_s, p50, p99, p999, max;
} phase_out;

/* count events through a producer; nc NULL = its own connection to url. */
static int producer_phase(const char *url, natsConnection *nc, jsCtx *js, const char *stream,
                          const gf_bench_producer_opts *o, long long count, gf_producer_fsync fsync,
                          const uint8_t *data, size_t data_len, const char *phase, phase_out *out)
{
    char spool[512];
    snprintf(spool, sizeof spool, "%s/gamefn-bench-spool-%d-%s", o->tmpdir, (int)getpid(), phase);
    gf_producer_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.source_id = BENCH_SOURCE;
    cfg.spool_dir = spool;
    cfg.url = url;
    cfg.nc = nc;
    cfg.fsync = fsync;
    cfg.window = o->window;
    int64_t *lat = malloc((size_t)count * sizeof *lat);
    gf_producer *p = NULL;
    if (lat == NULL || gf_producer_open(&cfg, &p) != GF_OK) {
        free(lat);
        return -1;
    }
    /* Connected before the clock starts (an owned connection connects in the
     * background): one event, flushed, then purged. */
    gf_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = "bench";
    ev.generic.data = data;
    ev.generic.data_len = data_len;
    int rc = gf_producer_emit(p, &ev, NULL) == GF_OK && gf_producer_flush(p, 30000) == GF_OK &&
                     js_PurgeStream(js, stream, NULL, NULL) == NATS_OK
                 ? 0
                 : -1;
    int64_t t0 = gf_clock_mono_ns();
    for (long long i = 0; i < count && rc == 0; i++) {
        char player[24];
        snprintf(player, sizeof player, "p%lld", i % o->players);
        ev.player_id = player;
        int64_t a = gf_clock_mono_ns();
        gf_producer_receipt rec;
        if (gf_producer_emit(p, &ev, &rec) != GF_OK) {
            fprintf(stderr, "producer: [%s] emit: %s\n", phase, rec.why);
            rc = -1;
        }
        lat[i] = gf_clock_mono_ns() - a;
    }
    if (rc == 0 && gf_producer_flush(p, 120000) != GF_OK) {
        fprintf(stderr, "producer: [%s] not every event acknowledged\n", phase);
        rc = -1;
    }
    double secs = (double)(gf_clock_mono_ns() - t0) / 1e9;
    gf_producer_stats st;
    gf_producer_stats_get(p, &st);
    gf_producer_close(p, 1000);
    if (rc == 0 && (st.acknowledged != (uint64_t)count + 1 || st.dropped || st.spooled)) {
        fprintf(stderr, "producer: [%s] acknowledged %" PRIu64 " of %lld\n", phase, st.acknowledged,
                count + 1);
        rc = -1;
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", spool);
    if (system(cmd) != 0)
        fprintf(stderr, "producer: cannot remove %s\n", spool);
    if (rc == 0) {
        qsort(lat, (size_t)count, sizeof *lat, cmp_i64);
        *out = (phase_out){(double)count / secs, pct_us(lat, count, 0.5), pct_us(lat, count, 0.99),
                           pct_us(lat, count, 0.999), (double)lat[count - 1] / 1000.0};
        rc = check_stream(js, stream, count, phase);
    }
    free(lat);
    return rc;
}

int gf_bench_producer_measure(const char *url, const char *stream, const gf_bench_producer_opts *o,
                              gf_bench_producer_result *r)
{
    memset(r, 0, sizeof *r);
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    size_t data_len = data_len_for(o->payload);
    uint8_t *data = calloc(1, data_len + 1);
    int rc = -1;
    if (!data || natsConnection_ConnectTo(&nc, url) != NATS_OK ||
        natsConnection_JetStream(&js, nc, NULL) != NATS_OK ||
        js_PurgeStream(js, stream, NULL, NULL) != NATS_OK) {
        fprintf(stderr, "producer: cannot use %s stream %s: %s\n", url, stream,
                nats_GetLastError(NULL));
        goto out;
    }
    memset(data, 'x', data_len);
    fprintf(stderr, "producer: [raw] js_PublishAsync, unique Msg-Id, window %u\n", o->window);
    if (raw_phase(nc, js, stream, o, data, data_len, false, r) != 0)
        goto out;
    fprintf(stderr, "producer: [raw-headers] the same with Gamefn-Source, Gamefn-Source-Seq\n");
    if (raw_phase(nc, js, stream, o, data, data_len, true, r) != 0)
        goto out;
    phase_out own, always = {0};
    fprintf(stderr, "producer: [producer] gf_producer_emit, fsync interval, own connection\n");
    if (producer_phase(url, NULL, js, stream, o, o->count, GF_PRODUCER_FSYNC_INTERVAL, data,
                       data_len, "producer", &own) != 0)
        goto out;
    r->producer_per_s = own.per_s;
    r->ratio = own.per_s / r->raw_per_s;
    r->emit_p50_us = own.p50;
    r->emit_p99_us = own.p99;
    r->emit_p999_us = own.p999;
    r->emit_max_us = own.max;
    phase_out borrowed;
    fprintf(stderr, "producer: [borrowed] gf_producer_emit, fsync interval, default options\n");
    if (producer_phase(url, nc, js, stream, o, o->count, GF_PRODUCER_FSYNC_INTERVAL, data, data_len,
                       "borrowed", &borrowed) != 0)
        goto out;
    r->borrowed_per_s = borrowed.per_s;
    r->borrowed_ratio = borrowed.per_s / r->raw_per_s;
    if (o->always_count > 0) {
        fprintf(stderr, "producer: [always] gf_producer_emit, fsync always\n");
        if (producer_phase(url, NULL, js, stream, o, o->always_count, GF_PRODUCER_FSYNC_ALWAYS,
                           data, data_len, "always", &always) != 0)
            goto out;
        r->always_per_s = always.per_s;
        r->always_emit_p50_us = always.p50;
        r->always_emit_p99_us = always.p99;
    }
    rc = 0;
out:
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    free(data);
    return rc;
}

/* ---- the subcommand ---------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench producer [options]\n"
               "\n"
               "Events per second through the event producer library (fsync interval) against\n"
               "the raw async publish with Msg-Id of the same events, on a fresh single-node\n"
               "nats-server with the event subject mapping and stream EVENTS.\n"
               "\n"
               "options:\n"
               "  --count N    events per phase, 1000..10000000 (default 200000)\n"
               "  --payload N  bytes per encoded event, 64..60000 (default 200)\n"
               "  --window W   the producer's window and the raw MaxPending (default 1024)\n"
               "  --players N  distinct players, 1..1000000 (default 10000)\n"
               "  --always N   also N events with fsync always (default 0: not measured)\n"
               "  --json       print one JSON object as the last line of stdout\n");
}

static int parse(int argc, char **argv, gf_bench_producer_opts *o, bool *json)
{
    *o =
        (gf_bench_producer_opts){.count = 200000, .payload = 200, .window = 1024, .players = 10000};
    const gf_bench_opt opts[] = {
        GF_BENCH_OPT("count", &o->count, 1000, 10000000),
        GF_BENCH_OPT("payload", &o->payload, 64, 60000),
        GF_BENCH_OPT("window", &o->window, 1, 1048576),
        GF_BENCH_OPT("players", &o->players, 1, 1000000),
        GF_BENCH_OPT("always", &o->always_count, 0, 10000000),
        GF_BENCH_FLAG_OPT("json", json),
    };
    return gf_bench_options("producer", argc, argv, opts, sizeof opts / sizeof opts[0], usage);
}

int gf_bench_producer(int argc, char **argv)
{
    gf_bench_producer_opts o;
    bool json = false;
    int rc = parse(argc, argv, &o, &json);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    const char *tmp = getenv("TMPDIR");
    o.tmpdir = tmp && *tmp ? tmp : "/tmp";
    gf_log_init("gamefn-bench", GF_LOG_WARN);
    gf_natsd *srv = NULL;
    gf_natsd_opts so = {.extra_config = GF_NATSD_EVENT_MAPPING};
    if (gf_natsd_start(&so, &srv) != 0)
        return 1;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    static const char *subjects[] = {"gamefn.v1.evp.>"};
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "EVENTS";
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Duplicates = INT64_C(600000000000);
    gf_bench_producer_result r;
    rc = 1;
    if (natsConnection_ConnectTo(&nc, gf_natsd_url(srv)) == NATS_OK &&
        natsConnection_JetStream(&js, nc, NULL) == NATS_OK &&
        js_AddStream(NULL, js, &sc, NULL, NULL) == NATS_OK &&
        gf_bench_producer_measure(gf_natsd_url(srv), "EVENTS", &o, &r) == 0)
        rc = 0;
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
    if (rc != 0)
        return 1;
    printf("events: %lld per phase, %d bytes each, %d players, window %u\n", o.count, r.event_bytes,
           o.players, o.window);
    printf("raw async publish, Msg-Id:      %10.0f events/s (%lld stalls)\n", r.raw_per_s,
           r.raw_stalls);
    printf("raw, with the two Gamefn headers: %8.0f events/s\n", r.raw_headers_per_s);
    printf("producer, fsync interval:       %10.0f events/s  ratio %.2f\n", r.producer_per_s,
           r.ratio);
    printf("  emit call: p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us\n", r.emit_p50_us,
           r.emit_p99_us, r.emit_p999_us, r.emit_max_us);
    printf("producer, raw phase's connection: %8.0f events/s  ratio %.2f\n", r.borrowed_per_s,
           r.borrowed_ratio);
    if (o.always_count)
        printf("producer, fsync always:         %10.0f events/s  (emit p50 %.1f us, p99 %.1f us;"
               " %lld events)\n",
               r.always_per_s, r.always_emit_p50_us, r.always_emit_p99_us, o.always_count);
    if (json) {
        json_t *j = json_pack(
            "{s:s, s:I, s:i, s:i, s:i, s:f, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:f, "
            "s:f, s:f, s:f, s:f}",
            "bench", "producer", "count", (json_int_t)o.count, "event_bytes", r.event_bytes,
            "window", (int)o.window, "players", o.players, "raw_publish_per_s", r.raw_per_s,
            "raw_stalls", (json_int_t)r.raw_stalls, "producer_per_s", r.producer_per_s, "ratio",
            r.ratio, "emit_p50_us", r.emit_p50_us, "emit_p99_us", r.emit_p99_us, "emit_p999_us",
            r.emit_p999_us, "emit_max_us", r.emit_max_us, "always_per_s", r.always_per_s,
            "always_count", (json_int_t)o.always_count, "always_emit_p50_us", r.always_emit_p50_us,
            "always_emit_p99_us", r.always_emit_p99_us, "borrowed_per_s", r.borrowed_per_s,
            "borrowed_ratio", r.borrowed_ratio, "raw_headers_per_s", r.raw_headers_per_s);
        gf_bench_json_line(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
    }
    return 0;
}
