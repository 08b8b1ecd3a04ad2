/*
 * analytics_config.c — the table of the `functions.analytics` section.
 */
#include "analytics.h"
#include "effects_config.h"

static const gf_cfg_field fields[] = {
    {.key = "bucket",
     .type = GF_CFG_STRING,
     .offset = offsetof(an_config, bucket),
     .def = "analytics",
     .help = "KV bucket of the per-partition minute records (in jetstream.buckets)"},
    {.key = "max_keys",
     .type = GF_CFG_INT,
     .offset = offsetof(an_config, max_keys),
     .def = "256",
     .min = 1,
     .max = GF_ROLLUP_KEYS_MAX,
     .help = "names kept per dimension (types, datacenters, queues) in one partition's minute; "
             "beyond, events count under other"},
    {.key = "max_range",
     .type = GF_CFG_DURATION,
     .offset = offsetof(an_config, max_range_ms),
     .def = "1d",
     .min = 60000,
     .max = 31 * 86400000.0,
     .help = "the longest range a query may ask for"},
    GF_EFFECTS_EVENTS_FIELD(an_config),
};

static bool validate(const void *obj, gf_cfg_problem *p)
{
    return gf_cfg_bucket_ok(((const an_config *)obj)->bucket, "bucket", p);
}

const gf_cfg_table analytics_config_table = {
    .name = "analytics",
    .size = sizeof(an_config),
    .fields = fields,
    .nfields = sizeof fields / sizeof fields[0],
    .validate = validate,
};
