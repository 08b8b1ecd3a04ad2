/*
 * effects_config.h — the config keys every effect-reading consumer's section shares
 * (functions.analytics, functions.crashes): `bucket`, the KV bucket of its effect
 * records (each section's validate checks it with gf_cfg_bucket_ok, gamefn/config.h),
 * and `events`, the consumer framework's settings (gamefn/consumer_options.h).
 *
 * Pure (no NATS), header only: the functions' pure libraries (and so check-config) use
 * it as gamefn_effects_core.
 */
#ifndef GAMEFN_EFFECTS_CONFIG_H
#define GAMEFN_EFFECTS_CONFIG_H

#include <stddef.h>

#include "gamefn/config.h"
#include "gamefn/consumer_options.h"

/* The `events` field of a section struct `section` with a gf_consumer_options `events`. */
#define GF_EFFECTS_EVENTS_FIELD(section)                                                           \
    {                                                                                              \
        .key = "events", .type = GF_CFG_OBJECT, .offset = offsetof(section, events),               \
        .sub = &gf_consumer_options_table,                                                         \
        .help = "the consumer framework's settings (window W, horizons, cache)"                    \
    }

#endif
