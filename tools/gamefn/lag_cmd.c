/*
 * lag_cmd.c — `gamefn lag`: every durable consumer's lag and the gap observer's findings,
 * as the lag monitor last saw them (gamefn.v1.lag.query); with --direct, or when no
 * monitor runs, a poll of its own with the configured thresholds (no debouncing, no
 * gaps: those need the monitor). Also the retention check shared by check-config and
 * provision.
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/names.h"
#include "lag_config.h"
#include "monitor.h"
#include "poll.h"
#include "render.h"
#include "retention.h"

const char gf_cli_lag_help[] =
    "usage: gamefn lag [--stream NAME] [--json] [--fresh | --direct] [--timeout D]\n\n"
    "Shows, for every durable consumer: pending, in flight (ack pending), redelivered,\n"
    "lag (pending + in flight), the age of the oldest unacked event against the\n"
    "stream's retention, and its level (ok, warning, critical, emergency), as the\n"
    "lag monitor (gamefn-lag) last polled them, with the gap observer's findings.\n\n"
    "  --stream NAME  only the consumers of this stream (exit 4 if it does not exist)\n"
    "  --json         one JSON object instead of the table\n"
    "  --fresh        the state now: the monitor polls at once and answers with that\n"
    "                 poll (within about a second; default timeout then 5s)\n"
    "  --direct       poll the consumers now, without the monitor (no gaps, no\n"
    "                 debouncing); also what happens when no monitor answers\n"
    "  --timeout D    how long to wait for the monitor's answer (default 2s)\n"
    "Thresholds and streams come from functions.lag in the config file.\n\n"
    "exit: 0 shown, 2 usage, 3 NATS unreachable, 4 unknown stream, 5 timeout (the\n"
    "      monitor or the JetStream API did not answer), 7 refused (the monitor or\n"
    "      JetStream: permissions), 8 other failure\n";

/* The functions.lag section of the file cfg came from (defaults if absent); NULL after
 * saying why. */
static gf_config *lag_section(const gf_config *cfg, const char *cmd)
{
    gf_config_section section = {"lag", &lag_config_table};
    gf_config *out = NULL;
    gf_config_error err;
    if (gf_config_load(cfg->path, &section, &out, &err) != GF_OK) {
        fprintf(stderr, "gamefn%s%s: %s\n", cmd[0] ? " " : "", cmd, err.message);
        return NULL;
    }
    return out;
}

static void print_warning(void *ctx, const char *text)
{
    fprintf(stderr, "gamefn: warning: %s (functions.lag: peak_events_per_s, outage)\n", text);
    if (ctx)
        json_array_append_new(ctx, json_string(text));
}

size_t gf_cli_retention_warnings(const gf_config *cfg, json_t *texts)
{
    gf_config *full = lag_section(cfg, "");
    if (!full)
        return 0;
    const lag_config *lc = gf_config_function(full);
    const gf_stream_config *sc = gf_config_stream(full, lc->retention_stream);
    size_t n = 0;
    if (sc) {
        lag_retention_input in = {.stream = sc->name,
                                  .max_msgs = sc->max_msgs,
                                  .max_bytes = sc->max_bytes,
                                  .max_age_ms = sc->max_age_ms,
                                  .discard_new = sc->discard == GF_DISCARD_NEW,
                                  .peak_events_per_s = lc->peak_events_per_s,
                                  .outage_ms = lc->outage_ms,
                                  .avg_event_size = lc->avg_event_size};
        n = lag_retention_check(&in, print_warning, texts);
    }
    gf_config_free(full);
    return n;
}

static int print_report(const Gamefn__V1__LagReport *rep, bool json)
{
    if (!json) {
        lag_render_text(stdout, rep, gf_clock_unix_ms());
        return GF_CLI_OK;
    }
    if (lag_render_json(stdout, rep) == GF_OK)
        return GF_CLI_OK;
    fprintf(stderr, "gamefn lag: cannot write JSON\n");
    return GF_CLI_FAILED;
}

/* A report from a poll of our own: computed levels, no gaps. An exit code. */
static int direct(natsConnection *nc, jsCtx *js, const lag_config *lc, const char *stream,
                  bool json)
{
    const char *one[1] = {stream};
    lag_poll_result r;
    char why[256] = "";
    gf_err err = stream ? lag_poll(nc, js, one, 1, &r, why, sizeof why)
                        : lag_poll(nc, js, lc->streams, lc->streams_len, &r, why, sizeof why);
    if (err != GF_OK) {
        fprintf(stderr, "gamefn lag: %s\n", why);
        return err == GF_ERR_TIMEOUT       ? GF_CLI_TIMEOUT
               : err == GF_ERR_UNAVAILABLE ? GF_CLI_REFUSED
                                           : GF_CLI_FAILED;
    }
    lag_thresholds th = {(uint64_t)lc->warning, (uint64_t)lc->critical};
    Gamefn__V1__ConsumerLag *lags = calloc(r.len + 1, sizeof *lags);
    Gamefn__V1__ConsumerLag **ptrs = calloc(r.len + 1, sizeof *ptrs);
    lag_verdict *v = calloc(r.len + 1, sizeof *v);
    char *errors[LAG_POLL_ERRORS_MAX];
    int code = GF_CLI_FAILED;
    if (!lags || !ptrs || !v) {
        fprintf(stderr, "gamefn lag: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < r.len; i++) {
        lag_classify(&th, &r.samples[i].in, &v[i]);
        lag_sample_fill(&lags[i], &r.samples[i], &v[i]);
        ptrs[i] = &lags[i];
    }
    for (size_t i = 0; i < r.errors_len; i++)
        errors[i] = r.errors[i];
    Gamefn__V1__LagReport rep = GAMEFN__V1__LAG_REPORT__INIT;
    rep.as_of_unix_ms = gf_clock_unix_ms();
    rep.monitor_id = "";
    rep.poll_ms = r.took_ms;
    rep.warning = th.warning;
    rep.critical = th.critical;
    rep.consumers = ptrs;
    rep.n_consumers = r.len;
    rep.errors = errors;
    rep.n_errors = r.errors_len;
    code = print_report(&rep, json);
out:
    free(lags);
    free(ptrs);
    free(v);
    lag_poll_free(&r);
    return code;
}

/* The monitor's report; GF_CLI_NO_SERVICE (said by gf_cli_request) when no monitor runs. */
static int from_monitor(natsConnection *nc, const char *stream, bool json, bool fresh,
                        int64_t timeout_ms)
{
    Gamefn__V1__LagQueryRequest q = GAMEFN__V1__LAG_QUERY_REQUEST__INIT;
    q.stream = (char *)(uintptr_t)(stream ? stream : "");
    q.fresh = fresh;
    Gamefn__V1__LagReport *r = NULL;
    int code =
        gf_cli_request(nc, "lag", LAG_QUERY_SUBJECT, &q.base, &gamefn__v1__lag_report__descriptor,
                       timeout_ms, (ProtobufCMessage **)&r, NULL, NULL, 0);
    if (code != GF_CLI_OK)
        return code;
    code = print_report(r, json);
    gamefn__v1__lag_report__free_unpacked(r, NULL);
    return code;
}

int gf_cli_lag(gf_cli *cli, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"stream", required_argument, NULL, 's'},  {"json", no_argument, NULL, 'j'},
        {"direct", no_argument, NULL, 'd'},        {"fresh", no_argument, NULL, 'f'},
        {"timeout", required_argument, NULL, 't'}, {NULL, 0, NULL, 0},
    };
    const char *stream = NULL;
    bool json = false, force_direct = false, fresh = false;
    int64_t timeout_ms = -1;
    char why[GF_NAME_WHY_MAX];
    int c;
    optind = 0; /* a fresh scan: argv is the command's */
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (!gf_name_asset_ok(optarg, why, sizeof why))
                return gf_cli_usage_error("lag", "--stream: stream name %s", why);
            stream = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'd':
            force_direct = true;
            break;
        case 'f':
            fresh = true;
            break;
        case 't':
            if (!gf_cli_duration("lag", "--timeout", optarg, 1, 60000, &timeout_ms))
                return GF_CLI_USAGE;
            break;
        default:
            return gf_cli_usage_error("lag", "unknown option");
        }
    }
    if (optind < argc)
        return gf_cli_usage_error("lag", "unexpected argument '%s'", argv[optind]);
    if (fresh && force_direct)
        return gf_cli_usage_error("lag", "--fresh asks the monitor; --direct does without it");
    if (timeout_ms < 0)
        timeout_ms = fresh ? 5000 : 2000;
    gf_config *full = lag_section(cli->cfg, "lag");
    if (!full)
        return GF_CLI_USAGE;
    gf_conn *conn = NULL;
    int code = gf_cli_connect(cli, "lag", &conn);
    if (code != GF_CLI_OK)
        goto out;
    if (stream) {
        jsStreamInfo *si = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_GetStreamInfo(&si, gf_conn_js(conn), stream, NULL, &jerr);
        jsStreamInfo_Destroy(si);
        char what[300];
        snprintf(what, sizeof what, "stream %s", stream);
        if (s != NATS_OK) {
            code = gf_cli_js_error("lag", what, s, jerr);
            goto out;
        }
    }
    code = force_direct ? GF_CLI_NO_SERVICE
                        : from_monitor(gf_conn_nats(conn), stream, json, fresh, timeout_ms);
    if (code == GF_CLI_NO_SERVICE) {
        if (!force_direct)
            fprintf(stderr, "gamefn lag: polling the consumers directly instead (no alerts, "
                            "no gap detection)\n");
        code = direct(gf_conn_nats(conn), gf_conn_js(conn), gf_config_function(full), stream, json);
    }
out:
    gf_conn_close(conn, 1000);
    gf_config_free(full);
    return code;
}
