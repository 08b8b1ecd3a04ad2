/*
 * raw_reqrep.c — `gamefn-bench raw` request/reply round trip.
 *
 * Design notes:
 * - A responder on its own connection echoes each request; a requester on a
 *   second connection times natsConnection_Request one at a time. Two passes: both
 *   connections with natsOptions_SetSendAsap(true) (what gamefn responders use,
 *   docs/NATS-FACTS.md §1), then both with default options, where nats.c's 1 ms flusher
 *   delay dominates; the second pass is shorter (at most 2 s / 2000 requests)
 *   because it only shows that difference.
 * - The first 100 round trips are warm-up (the first one creates nats.c's reply
 *   subscription) and are not measured. Every reply must echo the request's bytes,
 *   which carry the request's index, so a stale or crossed reply fails the phase.
 * - Percentiles are nearest-rank over all measured samples.
 */
#include "gamefn/clock.h"
#include "raw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WARMUP = 100, DEFAULT_PASS_MAX = 2000 };

/* nats.c thread: echo the request back; owns and destroys msg. */
static void echo(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)sub;
    (void)closure;
    const char *reply = natsMsg_GetReply(msg);
    if (reply)
        natsConnection_Publish(nc, reply, natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
    natsMsg_Destroy(msg);
}

static natsConnection *open_conn(const char *url, bool asap, const char *name)
{
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    if (natsOptions_Create(&opts) != NATS_OK || natsOptions_SetURL(opts, url) != NATS_OK ||
        natsOptions_SetName(opts, name) != NATS_OK ||
        natsOptions_SetSendAsap(opts, asap) != NATS_OK ||
        natsConnection_Connect(&nc, opts) != NATS_OK) {
        fprintf(stderr, "raw: connect %s: %s\n", url, nats_GetLastError(NULL));
        nc = NULL;
    }
    natsOptions_Destroy(opts);
    return nc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, long long n, double q)
{
    long long idx = (long long)ceil(q * (double)n) - 1;
    if (idx < 0)
        idx = 0;
    if (idx >= n)
        idx = n - 1;
    return sorted[idx];
}

/* One timed request; 0 ok, -1 on error or a reply that is not our echo. */
static int round_trip(natsConnection *q, const char *subj, char *payload, int len, long long i,
                      double *us)
{
    natsMsg *reply = NULL;
    gf_raw_fill_payload(payload, len, (uint64_t)i);
    int64_t t0 = gf_clock_mono_ns();
    natsStatus s = natsConnection_Request(&reply, q, subj, payload, len, 2000);
    int64_t t1 = gf_clock_mono_ns();
    if (s != NATS_OK) {
        fprintf(stderr, "raw: request %lld: %s\n", i, nats_GetLastError(NULL));
        return -1;
    }
    int rc = 0;
    if (natsMsg_GetDataLength(reply) != len ||
        memcmp(natsMsg_GetData(reply), payload, (size_t)len)) {
        fprintf(stderr, "raw: request %lld: the reply is not its echo (%d bytes)\n", i,
                natsMsg_GetDataLength(reply));
        rc = -1;
    }
    natsMsg_Destroy(reply);
    *us = (double)(t1 - t0) / 1000.0;
    return rc;
}

static int measure(const char *url, bool asap, const gf_raw_opts *o, gf_raw_latency *out)
{
    int rc = -1;
    const char *label = asap ? "reqrep-asap" : "reqrep-default";
    natsConnection *resp = NULL, *q = NULL;
    natsSubscription *sub = NULL;
    char *payload = NULL;
    double *samples = NULL;
    long long n = 0, cap = 65536;
    char subj[96];
    /* Outside the stream's bench.<run>.> subjects, or JetStream would answer too. */
    snprintf(subj, sizeof subj, "benchrr.%s.%s", o->run_id, asap ? "asap" : "default");

    gf_raw_opts bound = *o;
    if (!asap) { /* at most 2 s and DEFAULT_PASS_MAX round trips */
        if (bound.seconds > 2.0)
            bound.seconds = 2.0;
        if (bound.count == 0 || bound.count > DEFAULT_PASS_MAX)
            bound.count = DEFAULT_PASS_MAX;
    }
    resp = open_conn(url, asap, "gamefn-bench-responder");
    q = open_conn(url, asap, "gamefn-bench-requester");
    payload = malloc((size_t)o->payload);
    samples = malloc((size_t)cap * sizeof *samples);
    if (!resp || !q || !payload || !samples)
        goto out;
    if (natsConnection_Subscribe(&sub, resp, subj, echo, NULL) != NATS_OK ||
        natsConnection_Flush(resp) != NATS_OK) {
        fprintf(stderr, "raw: responder: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    fprintf(stderr, "raw: [%s] request/reply round trips, SendAsap %s on both connections\n", label,
            asap ? "true" : "false");
    double us = 0;
    for (int i = 0; i < WARMUP; i++) {
        if (round_trip(q, subj, payload, o->payload, -1 - i, &us) != 0)
            goto out;
    }
    double t0 = gf_raw_now(), last = t0;
    while (!gf_raw_done(&bound, t0, n)) {
        if (round_trip(q, subj, payload, o->payload, n, &us) != 0)
            goto out;
        if (n == cap) {
            double *bigger = realloc(samples, (size_t)cap * 2 * sizeof *samples);
            if (!bigger) {
                fprintf(stderr, "raw: out of memory\n");
                goto out;
            }
            samples = bigger;
            cap *= 2;
        }
        samples[n++] = us;
        if ((n & 255) == 0)
            gf_raw_progress(label, t0, n, &last);
    }
    if (n == 0) {
        fprintf(stderr, "raw: %s: no round trip measured\n", label);
        goto out;
    }
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    out->count = n;
    out->p50_us = percentile(samples, n, 0.50);
    out->p99_us = percentile(samples, n, 0.99);
    out->p999_us = percentile(samples, n, 0.999);
    out->max_us = samples[n - 1];
    rc = 0;
out:
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(q);
    natsConnection_Destroy(resp);
    free(samples);
    free(payload);
    return rc;
}

int gf_raw_reqrep(const char *url, const gf_raw_opts *o, gf_raw_results *r)
{
    if (measure(url, true, o, &r->reqrep) != 0)
        return -1;
    return measure(url, false, o, &r->reqrep_default);
}
