/*
 * ticker_config.h — functions.ticker: the tick interval and the leader's lease. In a
 * library of its own (gamefn_ticker_config) so `gamefn check-config` can check the
 * section without linking the function.
 */
#ifndef GAMEFN_TICKER_CONFIG_H
#define GAMEFN_TICKER_CONFIG_H

#include <stdint.h>

#include "gamefn/config.h"

typedef struct ticker_config {
    int64_t interval_ms;
    int64_t lease_ttl_ms;
} ticker_config;

extern const gf_cfg_table ticker_config_table;

#endif
