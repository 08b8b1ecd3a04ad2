/*
 * lag_config.c — the table of the `functions.lag` section.
 */
#include "lag_config.h"

#include <stdio.h>

static const gf_cfg_field gap_fields[] = {
    {.key = "enabled",
     .type = GF_CFG_BOOL,
     .offset = offsetof(lag_gap_config, enabled),
     .def = "true",
     .help = "run the gap observer (one reader of the whole stream, on the leader)"},
    {.key = "stream",
     .type = GF_CFG_STRING,
     .offset = offsetof(lag_gap_config, stream),
     .def = "EVENTS",
     .help = "the stream whose Gamefn-Source / Gamefn-Source-Seq headers are observed"},
    {.key = "grace",
     .type = GF_CFG_DURATION,
     .offset = offsetof(lag_gap_config, grace_ms),
     .def = "1m",
     .min = 1,
     .max = 86400000,
     .help = "a hole in a source's sequence still open this long (stored time) is reported as "
             "a suspected gap"},
    {.key = "window",
     .type = GF_CFG_INT,
     .offset = offsetof(lag_gap_config, window),
     .def = "1024",
     .min = 0,
     .max = 1048576,
     .help = "the producers' sequence window W: a hole W behind its source's newest event is "
             "reported at once (0 = grace only)"},
    {.key = "max_holes",
     .type = GF_CFG_INT,
     .offset = offsetof(lag_gap_config, max_holes),
     .def = "4096",
     .min = 1,
     .max = 1048576,
     .help = "open holes kept per source; beyond, the oldest is given up (counted)"},
    {.key = "lookback",
     .type = GF_CFG_DURATION,
     .offset = offsetof(lag_gap_config, lookback_ms),
     .def = "10m",
     .min = 0,
     .max = 604800000,
     .help = "a new leader starts reading the stream this far back (what it re-checks after a "
             "monitor failover)"},
    {.key = "forget_after",
     .type = GF_CFG_DURATION,
     .offset = offsetof(lag_gap_config, forget_after_ms),
     .def = "1d",
     .min = 60000,
     .max = 2592000000,
     .help = "sources with no event for this long are forgotten, with their open holes"},
    {.key = "max_listed",
     .type = GF_CFG_INT,
     .offset = offsetof(lag_gap_config, max_listed),
     .def = "100",
     .min = 0,
     .max = 10000,
     .help = "open suspected gaps listed in the report (gamefn lag); the rest are counted"},
};

static const gf_cfg_table gap_table = {
    .name = "gaps",
    .size = sizeof(lag_gap_config),
    .fields = gap_fields,
    .nfields = sizeof gap_fields / sizeof gap_fields[0],
};

static const gf_cfg_field lag_fields[] = {
    {.key = "interval",
     .type = GF_CFG_DURATION,
     .offset = offsetof(lag_config, interval_ms),
     .def = "10s",
     .min = 100,
     .max = 3600000,
     .help = "time between two polls of every consumer (nats-server 2.9.10 scans a filtered "
             "consumer's pending events for its info: about 1 ms per 1,000 pending, gamefn-bench "
             "lag)"},
    {.key = "warning",
     .type = GF_CFG_INT,
     .offset = offsetof(lag_config, warning),
     .def = "1000",
     .min = 1,
     .max = 1e15,
     .help = "lag (pending + in flight) from which a consumer is at WARNING"},
    {.key = "critical",
     .type = GF_CFG_INT,
     .offset = offsetof(lag_config, critical),
     .def = "10000",
     .min = 1,
     .max = 1e15,
     .help = "lag above which a consumer is CRITICAL (at least warning)"},
    {.key = "clear_after",
     .type = GF_CFG_DURATION,
     .offset = offsetof(lag_config, clear_after_ms),
     .def = "30s",
     .min = 0,
     .max = 3600000,
     .help = "a level is lowered only after the lag stayed below it this long (a raise is "
             "published at once)"},
    {.key = "streams",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(lag_config, streams),
     .count_offset = offsetof(lag_config, streams_len),
     .min = 0,
     .max = 256,
     .help = "streams whose durable consumers are monitored; empty = every stream"},
    {.key = "lease_bucket",
     .type = GF_CFG_STRING,
     .offset = offsetof(lag_config, lease_bucket),
     .def = "leases",
     .help = "KV bucket of the leader's lease lag.monitor"},
    {.key = "lease_ttl",
     .type = GF_CFG_DURATION,
     .offset = offsetof(lag_config, lease_ttl_ms),
     .def = "10s",
     .min = 1000,
     .max = 600000,
     .help = "a dead leader is replaced within this"},
    {.key = "alert_stream",
     .type = GF_CFG_STRING,
     .offset = offsetof(lag_config, alert_stream),
     .def = "ALERTS",
     .help = "the stream capturing gamefn.v1.alert.> (alerts are published into it)"},
    {.key = "report_bucket",
     .type = GF_CFG_STRING,
     .offset = offsetof(lag_config, report_bucket),
     .def = "lag",
     .help = "KV bucket holding the leader's last report (key report), read by "
             "gamefn.v1.lag.query"},
    {.key = "gaps",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(lag_config, gaps),
     .sub = &gap_table,
     .help = "the gap observer"},
    {.key = "retention_stream",
     .type = GF_CFG_STRING,
     .offset = offsetof(lag_config, retention_stream),
     .def = "EVENTS",
     .help = "the stream whose retention must hold an outage (checked by gamefn check-config, "
             "gamefn provision and the monitor)"},
    {.key = "peak_events_per_s",
     .type = GF_CFG_INT,
     .offset = offsetof(lag_config, peak_events_per_s),
     .def = "2400",
     .min = 1,
     .max = 10000000,
     .help = "the producers' peak rate"},
    {.key = "outage",
     .type = GF_CFG_DURATION,
     .offset = offsetof(lag_config, outage_ms),
     .def = "5m",
     .min = 1000,
     .max = 2592000000,
     .help = "the longest consumer outage the stream must absorb at the peak rate"},
    {.key = "avg_event_size",
     .type = GF_CFG_SIZE,
     .offset = offsetof(lag_config, avg_event_size),
     .def = "200",
     .min = 1,
     .max = 65536,
     .help = "average stored event (subject, headers, body), for max_bytes"},
};

static bool lag_validate(const void *obj, gf_cfg_problem *p)
{
    const lag_config *c = obj;
    if (c->critical < c->warning) {
        p->key = "critical";
        snprintf(p->text, sizeof p->text, "must be at least warning (%lld)", (long long)c->warning);
        return false;
    }
    for (size_t i = 0; i < c->streams_len; i++)
        if (!gf_cfg_stream_ok(c->streams[i], "streams", p))
            return false;
    return gf_cfg_bucket_ok(c->lease_bucket, "lease_bucket", p) &&
           gf_cfg_bucket_ok(c->report_bucket, "report_bucket", p) &&
           gf_cfg_stream_ok(c->alert_stream, "alert_stream", p) &&
           gf_cfg_stream_ok(c->retention_stream, "retention_stream", p) &&
           gf_cfg_stream_ok(c->gaps.stream, "gaps", p);
}

const gf_cfg_table lag_config_table = {
    .name = "lag",
    .size = sizeof(lag_config),
    .fields = lag_fields,
    .nfields = sizeof lag_fields / sizeof lag_fields[0],
    .validate = lag_validate,
};
