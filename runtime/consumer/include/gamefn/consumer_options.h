/*
 * gamefn/consumer_options.h — the settings every event consumer built on
 * gamefn/consumer.h shares, as one config sub-table a function embeds in its own
 * section (e.g. functions.leaderboard.events):
 *
 *   functions:
 *     leaderboard:
 *       events:
 *         window: 1024          # W, the producers' sequence window (must equal theirs)
 *         dedup_horizon: 8d     # forget a source idle this long on a key
 *         dead_horizon: 30d     # keep a dead mark this long (the DLQ's retention)
 *         cache_keys: 100000    # effect records kept in memory per partition
 *         reasons_bucket: dlq_reasons
 *
 * Pure (no NATS): the CLI's check-config links it. The struct is immutable once the
 * config is loaded.
 */
#ifndef GAMEFN_CONSUMER_OPTIONS_H
#define GAMEFN_CONSUMER_OPTIONS_H

#include <stdint.h>

#include "gamefn/config.h"

typedef struct gf_consumer_options {
    int64_t window;           /* W: 1..1048576 */
    int64_t dedup_horizon_ms; /* window sources idle this long are pruned */
    int64_t dead_horizon_ms;  /* dead marks older than this are pruned */
    int64_t cache_keys;       /* per partition; 0 = read every key every batch */
    int64_t max_rounds;       /* compare-and-set rounds per batch before it is retried */
    const char *reasons_bucket;
} gf_consumer_options;

/* The sub-table (GF_CFG_OBJECT `sub`); every key has a default. */
extern const gf_cfg_table gf_consumer_options_table;

/* The defaults, for a function without a section. */
void gf_consumer_options_default(gf_consumer_options *o);

#endif
