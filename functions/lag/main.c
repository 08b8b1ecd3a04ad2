/*
 * lag — the lag monitor (docs/EVENTS.md, "Lag" and "Gaps").
 *
 *  - One leader among the replicas (lease lag.monitor) polls every durable consumer of
 *    the monitored streams every `interval`, publishes a LagAlert on
 *    gamefn.v1.alert.lag.<stream>.<consumer> (stream ALERTS) when a consumer's level
 *    changes, reads EVENTS headers-only to detect lost events (gaps in a source's
 *    sequence), and stores its report in KV (monitor.h).
 *  - "query", request/reply on gamefn.v1.lag.query (queue lag), answered by any replica
 *    from the stored report: LagQueryRequest -> LagReport. `gamefn lag` shows it. A
 *    `fresh` query first asks the leader for a poll (gamefn.v1.lag.poll) and waits for
 *    its report, up to FRESH_WAIT_MS: the state now, in about one poll's time.
 *  - At start the monitor checks that the retention stream (EVENTS) can hold the
 *    configured outage at the peak rate, and warns (log and report) if not.
 *
 * Threads: the monitor's thread (monitor.c) and the query handler share nothing but the
 * KV bucket.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/function.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "gamefn/provision.h"
#include "gamefn/v1/lag.pb-c.h"
#include "lag_config.h"
#include "monitor.h"

enum { FRESH_WAIT_MS = 3000, FRESH_STEP_MS = 20 };

typedef struct lag_state {
    lag_monitor *monitor;
    kvStore *report_kv;
} lag_state;

/* A report with only the consumers of `stream`. */
static gf_err filter_report(const uint8_t *data, size_t len, const char *stream, gf_reply *reply)
{
    Gamefn__V1__LagReport *r = gamefn__v1__lag_report__unpack(NULL, len, data);
    if (!r) {
        snprintf(reply->error, sizeof reply->error, "the stored lag report is unreadable");
        return GF_ERR_NATS;
    }
    size_t kept = 0;
    for (size_t i = 0; i < r->n_consumers; i++) {
        if (strcmp(r->consumers[i]->stream, stream) == 0) {
            Gamefn__V1__ConsumerLag *c = r->consumers[kept];
            r->consumers[kept++] = r->consumers[i];
            r->consumers[i] = c;
        }
    }
    size_t all = r->n_consumers;
    r->n_consumers = kept;
    size_t size = gamefn__v1__lag_report__get_packed_size(r);
    reply->data = malloc(size ? size : 1);
    if (reply->data)
        reply->len = gamefn__v1__lag_report__pack(r, reply->data);
    r->n_consumers = all; /* so free_unpacked frees every entry */
    gamefn__v1__lag_report__free_unpacked(r, NULL);
    return reply->data ? GF_OK : GF_ERR_NOMEM;
}

/* When the stored report was made (0: unreadable). */
static int64_t report_as_of(kvEntry *e)
{
    Gamefn__V1__LagReport *r = gamefn__v1__lag_report__unpack(NULL, (size_t)kvEntry_ValueLen(e),
                                                              (const uint8_t *)kvEntry_Value(e));
    int64_t as_of = r ? r->as_of_unix_ms : 0;
    if (r)
        gamefn__v1__lag_report__free_unpacked(r, NULL);
    return as_of;
}

/* A `fresh` query: asks the leader (whichever replica it is) for a poll now and waits
 * up to FRESH_WAIT_MS for a report made after this moment; then the newest report,
 * fresh or not (its as_of says which). Wall clocks: the leader's against ours. */
static gf_err fresh_report(gf_fn *fn, lag_state *st, kvEntry **out)
{
    int64_t asked = gf_clock_unix_ms(), until = gf_clock_mono_ms() + FRESH_WAIT_MS;
    natsConnection_Publish(gf_fn_nats(fn), LAG_POLL_SUBJECT, NULL, 0);
    for (;;) {
        gf_err err = gf_kv_get(st->report_kv, LAG_REPORT_KEY, out);
        if ((err == GF_OK && report_as_of(*out) >= asked) || gf_clock_mono_ms() >= until ||
            gf_fn_stopping(fn))
            return err;
        kvEntry_Destroy(*out);
        *out = NULL;
        gf_clock_sleep_ms(FRESH_STEP_MS);
    }
}

static gf_err on_query(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    lag_state *st = gf_fn_state(fn);
    Gamefn__V1__LagQueryRequest *q =
        gamefn__v1__lag_query_request__unpack(NULL, req->len, req->data);
    if (!q) {
        snprintf(reply->error, sizeof reply->error, "not a LagQueryRequest");
        return GF_ERR_INVALID;
    }
    char stream[256] = "", why[GF_NAME_WHY_MAX];
    gf_err err = GF_OK;
    if (q->stream[0] && !gf_name_asset_ok(q->stream, why, sizeof why)) {
        snprintf(reply->error, sizeof reply->error, "stream: name %s", why);
        snprintf(reply->field, sizeof reply->field, "stream");
        err = GF_ERR_INVALID;
    } else {
        snprintf(stream, sizeof stream, "%s", q->stream);
    }
    bool fresh = q->fresh;
    gamefn__v1__lag_query_request__free_unpacked(q, NULL);
    if (err != GF_OK)
        return err;

    kvEntry *e = NULL;
    err = fresh ? fresh_report(fn, st, &e) : gf_kv_get(st->report_kv, LAG_REPORT_KEY, &e);
    if (err == GF_ERR_NOT_FOUND) {
        snprintf(reply->error, sizeof reply->error,
                 "no lag report yet: no monitor leader has polled (wait one interval)");
        return GF_ERR_UNAVAILABLE;
    }
    if (err != GF_OK) {
        snprintf(reply->error, sizeof reply->error, "cannot read the lag report: %s",
                 gf_err_str(err));
        return err == GF_ERR_TIMEOUT ? GF_ERR_TIMEOUT : GF_ERR_UNAVAILABLE;
    }
    const uint8_t *data = (const uint8_t *)kvEntry_Value(e);
    size_t len = (size_t)kvEntry_ValueLen(e);
    if (stream[0]) {
        err = filter_report(data, len, stream, reply);
    } else {
        reply->data = malloc(len ? len : 1);
        if (reply->data) {
            memcpy(reply->data, data, len);
            reply->len = len;
        }
        err = reply->data ? GF_OK : GF_ERR_NOMEM;
    }
    kvEntry_Destroy(e);
    return err;
}

/* The configured alert stream and buckets (their names are config, not constants). */
static gf_err provision(gf_fn *fn, const lag_config *cfg)
{
    gf_provision_result res = {0};
    jsCtx *js = gf_fn_js(fn);
    const gf_config *all = gf_fn_config(fn);
    gf_err err = gf_provision_stream_named(js, all, cfg->alert_stream, &res);
    if (err == GF_OK)
        err = gf_provision_bucket_named(js, all, cfg->report_bucket, &res);
    if (err == GF_OK)
        err = gf_provision_bucket_named(js, all, cfg->lease_bucket, &res);
    if (err != GF_OK)
        gf_log_error("cannot provision", "err=%s why=\"%s\"", gf_err_str(err), res.message);
    return err;
}

static gf_err init(gf_fn *fn)
{
    const lag_config *cfg = gf_fn_section(fn);
    lag_state *st = calloc(1, sizeof *st);
    if (!st)
        return GF_ERR_NOMEM;
    gf_fn_set_state(fn, st);
    gf_err err = provision(fn, cfg);
    if (err == GF_OK)
        err = gf_kv_open(gf_fn_js(fn), cfg->report_bucket, &st->report_kv);
    if (err == GF_OK)
        err = lag_monitor_start(cfg, gf_fn_nats(fn), gf_fn_js(fn), gf_fn_instance_id(fn),
                                &st->monitor);
    return err;
}

static void fini(gf_fn *fn)
{
    lag_state *st = gf_fn_state(fn);
    if (!st)
        return;
    lag_monitor_stop(st->monitor);
    kvStore_Destroy(st->report_kv);
    free(st);
}

static const gf_endpoint endpoints[] = {
    {.name = "query",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = LAG_QUERY_SUBJECT, .queue_group = "lag", .on_request = on_query}},
};

static const gf_function lag_function = {
    .name = "lag",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Consumer lag and lost-event (gap) monitor: alerts on gamefn.v1.alert.lag.>, "
                   "answers gamefn.v1.lag.query.",
    .config = &lag_config_table,
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&lag_function, argc, argv);
}
