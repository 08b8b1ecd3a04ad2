/*
 * crashes_config.c — the table of the `functions.crashes` section.
 */
#include "crashes.h"
#include "effects_config.h"

static const gf_cfg_field fields[] = {
    {.key = "bucket",
     .type = GF_CFG_STRING,
     .offset = offsetof(cr_config, bucket),
     .def = "crashes",
     .help = "KV bucket of the per-partition fingerprint groups (in jetstream.buckets)"},
    {.key = "max_frames",
     .type = GF_CFG_INT,
     .offset = offsetof(cr_config, max_frames),
     .def = "8",
     .min = 1,
     .max = GF_FINGERPRINT_FRAMES_MAX,
     .help = "top frames of the crashing thread hashed into a fingerprint (changing it "
             "changes every fingerprint)"},
    GF_EFFECTS_EVENTS_FIELD(cr_config),
};

static bool validate(const void *obj, gf_cfg_problem *p)
{
    return gf_cfg_bucket_ok(((const cr_config *)obj)->bucket, "bucket", p);
}

const gf_cfg_table crashes_config_table = {
    .name = "crashes",
    .size = sizeof(cr_config),
    .fields = fields,
    .nfields = sizeof fields / sizeof fields[0],
    .validate = validate,
};
