/*
 * effects_config.h — the config keys every effect-reading consumer's section shares
 * (functions.analytics, functions.crashes): `bucket`, the KV bucket of its effect
 * records, and `events`, the consumer framework's settings (gamefn/consumer_options.h).
 *
 * Pure (no NATS): the functions' pure libraries (and so check-config) link it as
 * gamefn_effects_core.
 */
#ifndef GAMEFN_EFFECTS_CONFIG_H
#define GAMEFN_EFFECTS_CONFIG_H

#include <stdbool.h>
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

/* A section's validate: true when `bucket` is a valid bucket name, else fills *p (key
 * "bucket"). */
bool gf_effects_bucket_valid(const char *bucket, gf_cfg_problem *p);

#endif
