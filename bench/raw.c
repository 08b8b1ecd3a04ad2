/*
 * raw.c — `gamefn-bench raw`: the raw JetStream, KV and request/reply rates of a
 * nats-server, measured in one run. They are the baselines every gamefn figure is
 * compared against (docs/BENCHMARKS.md), so they must be honest: each
 * phase verifies what it measured (raw_js.c, raw_kv.c, raw_reqrep.c) and the run
 * fails, printing no figures, when any check does not hold.
 *
 * Design notes:
 * - By default the run starts its own single-node nats-server (JetStream, file
 *   storage, fresh temporary store) through support/natsd, and throws it away
 *   at the end. --url measures an existing server instead; then every stream,
 *   bucket and subject name carries a per-run id and is deleted at the end.
 * - Phases run in order on one connection: async publish, fetch+ack of what was
 *   published, KV CAS sync, KV CAS pipelined, request/reply. Each is bounded by
 *   --seconds and/or --count (the fetch also by what was published; the default
 *   options request/reply pass by 2 s / 2000 round trips).
 * - Text goes to stdout, progress to stderr, and with --json one JSON object is
 *   the very last line of stdout.
 */
#include "bench.h"
#include "gamefn/clock.h"
#include "natsd.h"
#include "raw.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Set by SIGINT/SIGTERM: phases stop at their next bound check, the run then
 * fails (no figures) but still stops its server and removes its directory. */
static volatile sig_atomic_t raw_interrupted;

static void on_signal(int sig)
{
    (void)sig;
    raw_interrupted = 1;
}

double gf_raw_now(void)
{
    return (double)gf_clock_mono_ns() / 1e9;
}

bool gf_raw_done(const gf_raw_opts *o, double t0, long long done)
{
    if (raw_interrupted)
        return true;
    if (o->count > 0 && done >= o->count)
        return true;
    return o->seconds > 0 && gf_raw_now() - t0 >= o->seconds;
}

void gf_raw_fill_payload(char *buf, int len, uint64_t index)
{
    memcpy(buf, &index, sizeof index);
    for (int i = (int)sizeof index; i < len; i++)
        buf[i] = (char)('a' + (i % 26));
}

void gf_raw_progress(const char *phase, double t0, long long done, double *last)
{
    double now = gf_raw_now();
    if (now - *last < 1.0)
        return;
    *last = now;
    fprintf(stderr, "raw: [%s] %.1f s: %lld done (%.0f/s)\n", phase, now - t0, done,
            (double)done / (now - t0));
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench raw [options]\n"
               "\n"
               "Measures, in one run, against its own fresh single-node nats-server (or --url):\n"
               "  async JetStream publish with a unique Msg-Id, durable pull fetch + ack,\n"
               "  KV compare-and-set (sync and pipelined), request/reply round trip; and the\n"
               "  publish and pipelined CAS again through the runtime's gamefn/publish.h.\n"
               "\n"
               "options:\n"
               "  --url URL          measure an existing server (default: start one)\n"
               "  --payload N        bytes per message, 8..1000000 (default 200)\n"
               "  --seconds S        time bound per phase, 0 = none (default 5)\n"
               "  --count N          operation bound per phase, 0 = none (default 0)\n"
               "  --max-pending N    async publish window, 1..1000000 (default 2048)\n"
               "  --batch N          fetch batch, 1..10000 (default 500)\n"
               "  --keys N           distinct keys of pipelined KV CAS, 1..100000 (default 1024)\n"
               "  --json             print one JSON object as the last line of stdout\n");
}

/* 0: run; 1: --help printed; -1: usage error (said why). */
static int parse_args(int argc, char **argv, gf_raw_opts *o)
{
    o->payload = 200;
    o->seconds = 5;
    o->count = 0;
    o->max_pending = 2048;
    o->batch = 500;
    o->keys = 1024;
    const gf_bench_opt opts[] = {
        GF_BENCH_OPT("url", &o->url, 0, 0),
        GF_BENCH_OPT("payload", &o->payload, 8, 1000000),
        GF_BENCH_OPT("seconds", &o->seconds, 0, 3600),
        GF_BENCH_OPT("count", &o->count, 0, 1000000000000LL),
        GF_BENCH_OPT("max-pending", &o->max_pending, 1, 1000000),
        GF_BENCH_OPT("batch", &o->batch, 1, 10000),
        GF_BENCH_OPT("keys", &o->keys, 1, 100000),
        GF_BENCH_FLAG_OPT("json", &o->json),
    };
    int rc = gf_bench_options("raw", argc, argv, opts, sizeof opts / sizeof opts[0], usage);
    if (rc != 0)
        return rc;
    const char *bad = o->url && strncmp(o->url, "nats://", 7) != 0
                          ? "--url needs a nats://host:port URL"
                      : o->seconds == 0 && o->count == 0 ? "--seconds 0 needs a --count bound"
                                                         : NULL;
    if (bad) {
        fprintf(stderr, "gamefn-bench raw: %s\n", bad);
        usage(stderr);
        return -1;
    }
    unsigned id = (unsigned)getpid() * 2654435761u ^ (unsigned)gf_clock_mono_ns();
    snprintf(o->run_id, sizeof o->run_id, "%08x", id);
    return 0;
}

static void async_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *closure)
{
    (void)nc;
    (void)sub;
    (void)closure;
    fprintf(stderr, "raw: asynchronous error: %s\n", natsStatus_GetText(err));
}

static natsConnection *connect_main(const char *url)
{
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    if (natsOptions_Create(&opts) != NATS_OK || natsOptions_SetURL(opts, url) != NATS_OK ||
        natsOptions_SetName(opts, "gamefn-bench-raw") != NATS_OK ||
        natsOptions_SetErrorHandler(opts, async_error, NULL) != NATS_OK ||
        natsConnection_Connect(&nc, opts) != NATS_OK) {
        fprintf(stderr, "raw: connect %s: %s\n", url, nats_GetLastError(NULL));
        nc = NULL;
    }
    natsOptions_Destroy(opts);
    return nc;
}

static double per_s(const gf_raw_rate *r)
{
    return r->secs > 0 ? (double)r->count / r->secs : 0;
}

static double ratio(const gf_raw_rate *ours, const gf_raw_rate *raw)
{
    return per_s(raw) > 0 ? per_s(ours) / per_s(raw) : 0;
}

static void print_text(const gf_raw_opts *o, const gf_raw_results *r)
{
    printf("gamefn-bench raw: nats-server %s (%s), file storage, R1, %d-byte payloads\n",
           r->server_version, o->url ? o->url : "own single node", o->payload);
    printf("  %-44s %10.0f msg/s  (%lld in %.2f s, %lld stalls)\n", "async publish, unique Msg-Id",
           per_s(&r->publish), r->publish.count, r->publish.secs, r->publish_stalls);
    printf("  %-44s %10.0f msg/s  (%lld in %.2f s, %.2f x raw)\n", "  same through gf_publish_send",
           per_s(&r->publish_reliable), r->publish_reliable.count, r->publish_reliable.secs,
           ratio(&r->publish_reliable, &r->publish));
    printf("  %-44s %10.0f msg/s  (%lld in %.2f s)\n", "pull fetch + per-message ack",
           per_s(&r->fetch), r->fetch.count, r->fetch.secs);
    printf("  %-44s %10.0f upd/s  (%lld in %.2f s)\n", "KV CAS sync, 1 in flight",
           per_s(&r->kv_sync), r->kv_sync.count, r->kv_sync.secs);
    printf("  %-44s %10.0f upd/s  (%lld in %.2f s, %lld conflicts)\n",
           "KV CAS pipelined, 1 in flight per key", per_s(&r->kv_pipe), r->kv_pipe.count,
           r->kv_pipe.secs, r->kv_pipe_conflicts);
    printf("  %-44s %10.0f upd/s  (%lld in %.2f s, %lld conflicts)\n",
           "  the same, each with a unique Msg-Id", per_s(&r->kv_pipe_msgid),
           r->kv_pipe_msgid.count, r->kv_pipe_msgid.secs, r->kv_pipe_msgid_conflicts);
    printf("  %-44s %10.0f upd/s  (%lld in %.2f s, %.2f x raw, %.2f x with Msg-Id)\n",
           "  same through gf_publish_cas_send", per_s(&r->kv_cas_async), r->kv_cas_async.count,
           r->kv_cas_async.secs, ratio(&r->kv_cas_async, &r->kv_pipe),
           ratio(&r->kv_cas_async, &r->kv_pipe_msgid));
    printf("  %-44s p50 %.0f us, p99 %.0f us, p99.9 %.0f us, max %.0f us  (%lld)\n",
           "request/reply RTT, SendAsap", r->reqrep.p50_us, r->reqrep.p99_us, r->reqrep.p999_us,
           r->reqrep.max_us, r->reqrep.count);
    printf("  %-44s p50 %.0f us, p99 %.0f us  (%lld)\n", "request/reply RTT, default options",
           r->reqrep_default.p50_us, r->reqrep_default.p99_us, r->reqrep_default.count);
    printf("  (MaxPending %d, fetch batch %d, %d KV keys, bound %.3g s / %lld ops per phase)\n",
           o->max_pending, o->batch, o->keys, o->seconds, o->count);
}

static int print_json(const gf_raw_opts *o, const gf_raw_results *r)
{
    json_t *j = json_object();
    if (!j)
        return -1;
    json_object_set_new(j, "bench", json_string("raw"));
    json_object_set_new(j, "server_version", json_string(r->server_version));
    json_object_set_new(j, "server", json_string(o->url ? "external" : "own-single-node"));
    json_object_set_new(j, "payload_bytes", json_integer(o->payload));
    json_object_set_new(j, "seconds_per_phase", json_real(o->seconds));
    json_object_set_new(j, "count_per_phase", json_integer(o->count));
    json_object_set_new(j, "async_publish_per_s", json_real(per_s(&r->publish)));
    json_object_set_new(j, "async_publish_count", json_integer(r->publish.count));
    json_object_set_new(j, "async_publish_max_pending", json_integer(o->max_pending));
    json_object_set_new(j, "fetch_ack_per_s", json_real(per_s(&r->fetch)));
    json_object_set_new(j, "fetch_ack_count", json_integer(r->fetch.count));
    json_object_set_new(j, "fetch_batch", json_integer(o->batch));
    json_object_set_new(j, "kv_cas_sync_per_s", json_real(per_s(&r->kv_sync)));
    json_object_set_new(j, "kv_cas_sync_count", json_integer(r->kv_sync.count));
    json_object_set_new(j, "kv_cas_pipelined_per_s", json_real(per_s(&r->kv_pipe)));
    json_object_set_new(j, "kv_cas_pipelined_count", json_integer(r->kv_pipe.count));
    json_object_set_new(j, "kv_cas_pipelined_keys", json_integer(o->keys));
    json_object_set_new(j, "kv_cas_pipelined_conflicts", json_integer(r->kv_pipe_conflicts));
    json_object_set_new(j, "publish_reliable_per_s", json_real(per_s(&r->publish_reliable)));
    json_object_set_new(j, "publish_reliable_ratio",
                        json_real(ratio(&r->publish_reliable, &r->publish)));
    json_object_set_new(j, "kv_cas_async_per_s", json_real(per_s(&r->kv_cas_async)));
    json_object_set_new(j, "kv_cas_async_ratio", json_real(ratio(&r->kv_cas_async, &r->kv_pipe)));
    json_object_set_new(j, "kv_cas_pipelined_msgid_per_s", json_real(per_s(&r->kv_pipe_msgid)));
    json_object_set_new(j, "kv_cas_async_ratio_msgid",
                        json_real(ratio(&r->kv_cas_async, &r->kv_pipe_msgid)));
    json_object_set_new(j, "reqrep_p50_us", json_real(r->reqrep.p50_us));
    json_object_set_new(j, "reqrep_p99_us", json_real(r->reqrep.p99_us));
    json_object_set_new(j, "reqrep_p999_us", json_real(r->reqrep.p999_us));
    json_object_set_new(j, "reqrep_count", json_integer(r->reqrep.count));
    json_object_set_new(j, "reqrep_default_p50_us", json_real(r->reqrep_default.p50_us));
    json_object_set_new(j, "reqrep_default_p99_us", json_real(r->reqrep_default.p99_us));
    json_object_set_new(j, "reqrep_default_count", json_integer(r->reqrep_default.count));
    return gf_bench_json_line(j, JSON_COMPACT | JSON_REAL_PRECISION(6)) ? 0 : -1;
}

int gf_bench_raw(int argc, char **argv)
{
    int rc = 1;
    gf_raw_opts o = {0};
    gf_raw_results r = {0};
    gf_natsd *srv = NULL;
    natsConnection *nc = NULL;

    int p = parse_args(argc, argv, &o);
    if (p != 0)
        return p > 0 ? 0 : 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    const char *url = o.url;
    if (!url) {
        fprintf(stderr, "raw: starting a single-node nats-server (JetStream, file storage)\n");
        if (gf_natsd_start(NULL, &srv) != 0)
            goto out;
        url = gf_natsd_url(srv);
    }
    if (gf_natsd_probe_version(url, r.server_version, sizeof r.server_version) != 0)
        snprintf(r.server_version, sizeof r.server_version, "unknown");
    fprintf(stderr, "raw: nats-server %s at %s, run id %s\n", r.server_version, url, o.run_id);
    nc = connect_main(url);
    if (!nc)
        goto out;
    double t0 = gf_raw_now();
    if (gf_raw_publish(nc, &o, &r) != 0 || gf_raw_publish_reliable(nc, &o, &r) != 0 ||
        gf_raw_fetch(nc, &o, &r) != 0 || gf_raw_kv_sync(nc, &o, &r) != 0 ||
        gf_raw_kv_pipelined(nc, &o, &r) != 0 || gf_raw_kv_pipelined_msgid(nc, &o, &r) != 0 ||
        gf_raw_kv_cas_async(nc, &o, &r) != 0 || gf_raw_reqrep(url, &o, &r) != 0 ||
        raw_interrupted) {
        fprintf(stderr, "raw: FAILED%s: no figures printed\n",
                raw_interrupted ? " (interrupted)" : "");
        goto out;
    }
    fprintf(stderr, "raw: all phases verified in %.1f s\n", gf_raw_now() - t0);
    print_text(&o, &r);
    if (o.json && print_json(&o, &r) != 0) {
        fprintf(stderr, "raw: cannot format JSON\n");
        goto out;
    }
    fflush(stdout);
    rc = 0;
out:
    if (nc && o.url) {
        gf_raw_js_cleanup(nc, &r);
        gf_raw_kv_cleanup(nc, &o);
        gf_raw_pub_cleanup(nc, &r);
    }
    natsConnection_Destroy(nc);
    if (srv)
        gf_natsd_free(srv);
    nats_CloseAndWait(2000);
    return rc;
}
