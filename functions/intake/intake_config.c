/*
 * intake_config.c — the table of the `functions.intake` section.
 */
#include "intake_config.h"

#include <stddef.h>

static const gf_cfg_field intake_fields[] = {
    {.key = "concurrency",
     .type = GF_CFG_INT,
     .offset = offsetof(intake_config, concurrency),
     .def = "32",
     .min = 1,
     .max = 64,
     .help = "ticket.create requests handled at once per instance (each waits on its KV "
             "writes)"},
    {.key = "pending_grace",
     .type = GF_CFG_DURATION,
     .offset = offsetof(intake_config, pending_grace_ms),
     .def = "5s",
     .min = 100,
     .max = 60000,
     .help = "a players record whose ticket does not exist yet is a create in progress for "
             "this long (CONFLICT, retry), then stale; counted by the record's creation time "
             "and by intake's own monotonic clock from its first sight of the record (not "
             "the first when an hour old)"},
    {.key = "max_match_duration",
     .type = GF_CFG_DURATION,
     .offset = offsetof(intake_config, max_match_ms),
     .def = "2h",
     .min = 60000,
     .max = 86400000,
     .help = "an ASSIGNED ticket keeps its players from a new ticket at most this long, in "
             "case the end of its match was never reported"},
};

const gf_cfg_table intake_config_table = {
    .name = "intake",
    .size = sizeof(intake_config),
    .fields = intake_fields,
    .nfields = sizeof intake_fields / sizeof intake_fields[0],
};
