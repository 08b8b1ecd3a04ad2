/*
 * ticker_config.h — the `functions.ticker` section (pure: no NATS), so the CLI's
 * check-config can check it without running the function.
 */
#ifndef GAMEFN_TICKER_CONFIG_H
#define GAMEFN_TICKER_CONFIG_H

#include <stdint.h>

#include "gamefn/config.h"

typedef struct ticker_config {
    int64_t interval_ms;
} ticker_config;

extern const gf_cfg_table ticker_config_table;

#endif
