/*
 * lag_config.h — the `functions.lag` section (pure: no NATS), so `gamefn check-config`
 * and `gamefn provision` check it (and the retention it implies) without running the
 * lag monitor. docs/CONFIG.md, "The lag monitor", has one row per key.
 */
#ifndef GAMEFN_LAG_CONFIG_H
#define GAMEFN_LAG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"

/* functions.lag.gaps: the gap observer over one stream (EVENTS). */
typedef struct lag_gap_config {
    bool enabled;
    const char *stream;
    int64_t grace_ms;        /* a hole still open this long is a suspected gap */
    int64_t window;          /* the producers' sequence window W (0 = grace only) */
    int64_t max_holes;       /* per source */
    int64_t lookback_ms;     /* a new leader starts reading this far back */
    int64_t forget_after_ms; /* sources idle this long are forgotten */
    int64_t max_listed;      /* open suspected gaps listed in the report */
} lag_gap_config;

/* functions.lag */
typedef struct lag_config {
    int64_t interval_ms; /* poll period */
    int64_t warning;     /* lag >= warning: WARNING */
    int64_t critical;    /* lag > critical: CRITICAL */
    int64_t clear_after_ms;
    const char **streams; /* monitored streams; empty = every stream */
    size_t streams_len;
    const char *lease_bucket;
    int64_t lease_ttl_ms;
    const char *alert_stream;  /* captures gamefn.v1.alert.> */
    const char *report_bucket; /* key "report" */
    lag_gap_config gaps;
    /* the provisioning check: can retention_stream hold an outage at the peak rate? */
    const char *retention_stream;
    int64_t peak_events_per_s;
    int64_t outage_ms;
    int64_t avg_event_size;
} lag_config;

extern const gf_cfg_table lag_config_table;

#endif
