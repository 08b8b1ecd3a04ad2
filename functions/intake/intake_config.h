/*
 * intake_config.h — the `functions.intake` section (pure: no NATS), so the CLI's
 * check-config can check it without running the function.
 */
#ifndef GAMEFN_INTAKE_CONFIG_H
#define GAMEFN_INTAKE_CONFIG_H

#include <stdint.h>

#include "gamefn/config.h"

/* functions.intake */
typedef struct intake_config {
    int64_t concurrency;      /* request handlers at once per endpoint */
    int64_t pending_grace_ms; /* gf_players_policy.pending_grace_ms */
    int64_t max_match_ms;     /* gf_players_policy.max_match_ms */
} intake_config;

extern const gf_cfg_table intake_config_table;

#endif
