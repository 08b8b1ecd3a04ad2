/* consumer_options.c — the shared settings of event consumers (gamefn/consumer_options.h). */
#include "gamefn/consumer_options.h"

#include <stddef.h>

static const gf_cfg_field fields[] = {
    {.key = "window",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_consumer_options, window),
     .def = "1024",
     .min = 1,
     .max = 1048576,
     .help = "W, the producers' sequence window: must equal the producers' setting"},
    {.key = "dedup_horizon",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_consumer_options, dedup_horizon_ms),
     .def = "8d",
     .min = 60000,
     .max = 366 * 86400000.0,
     .help = "a source idle this long on an effect key is forgotten (longer than a spool "
             "can hold an event: outage + EVENTS' retention)"},
    {.key = "dead_horizon",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_consumer_options, dead_horizon_ms),
     .def = "30d",
     .min = 60000,
     .max = 366 * 86400000.0,
     .help = "a dead mark (an event dead-lettered unapplied) is kept this long: at least "
             "the DLQ's retention, so a re-drive is applied exactly once"},
    {.key = "cache_keys",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_consumer_options, cache_keys),
     .def = "100000",
     .min = 0,
     .max = 100000000,
     .help = "effect records kept in memory per owned partition (0 = read every key of "
             "every batch)"},
    {.key = "max_rounds",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_consumer_options, max_rounds),
     .def = "8",
     .min = 1,
     .max = 1000,
     .help = "compare-and-set rounds (re-read and re-apply a key that lost) per batch "
             "before the batch is retried"},
    {.key = "reasons_bucket",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_consumer_options, reasons_bucket),
     .def = "dlq_reasons",
     .help = "KV bucket where a dead-lettered message's reason is written for the DLQ mover"},
};

const gf_cfg_table gf_consumer_options_table = {
    .name = "events",
    .size = sizeof(gf_consumer_options),
    .fields = fields,
    .nfields = sizeof fields / sizeof fields[0],
};

void gf_consumer_options_default(gf_consumer_options *o)
{
    *o = (gf_consumer_options){
        .window = 1024,
        .dedup_horizon_ms = 8 * 86400000LL,
        .dead_horizon_ms = 30 * 86400000LL,
        .cache_keys = 100000,
        .max_rounds = 8,
        .reasons_bucket = "dlq_reasons",
    };
}
