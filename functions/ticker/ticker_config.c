/*
 * ticker_config.c — the table of the `functions.ticker` section.
 */
#include "ticker_config.h"

#include <stddef.h>

static const gf_cfg_field ticker_fields[] = {
    {.key = "interval",
     .type = GF_CFG_DURATION,
     .offset = offsetof(ticker_config, interval_ms),
     .def = "250ms",
     .min = 10,
     .max = 60000,
     .help =
         "time between two ticks of a tick group (the leader's lease lasts three, at least 1 s)"},
};

const gf_cfg_table ticker_config_table = {
    .name = "ticker",
    .size = sizeof(ticker_config),
    .fields = ticker_fields,
    .nfields = sizeof ticker_fields / sizeof ticker_fields[0],
};
