/* alloc_config.c — the functions.allocator table (see alloc_config.h). */
#include "alloc_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "gamefn/limits.h"
#include "gamefn/names.h"

static bool alloc_validate(const void *obj, gf_cfg_problem *p)
{
    const alloc_config *c = obj;
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_id_ok(c->key_id, GF_WIRE_NAME_MAX, why, sizeof why)) {
        p->key = "key_id";
        snprintf(p->text, sizeof p->text, "key id %s", why);
        return false;
    }
    return true;
}

static const gf_cfg_field alloc_fields[] = {
    {.key = "signing_key",
     .type = GF_CFG_STRING,
     .offset = offsetof(alloc_config, signing_key),
     .required = true,
     .help = "secret key file that signs join tokens (gamefn keygen; mode 0600)"},
    {.key = "key_id",
     .type = GF_CFG_STRING,
     .offset = offsetof(alloc_config, key_id),
     .required = true,
     .help = "id of the signing key; list its public key first in functions.fleet.join_keys"},
    {.key = "token_lifetime",
     .type = GF_CFG_DURATION,
     .offset = offsetof(alloc_config, token_lifetime_ms),
     .def = "60s",
     .min = 1000,
     .max = 3600000,
     .help = "a join token is accepted until issued + this (plus the 5 s clock skew)"},
    {.key = "deadline",
     .type = GF_CFG_DURATION,
     .offset = offsetof(alloc_config, deadline_ms),
     .def = "1500ms",
     .min = 0,
     .max = 600000,
     .help = "no free server this long after the match was formed: its tickets go back "
             "to the pool with reason NO_SERVER"},
    {.key = "wait_slice",
     .type = GF_CFG_DURATION,
     .offset = offsetof(alloc_config, wait_slice_ms),
     .def = "100ms",
     .min = 1,
     .max = 10000,
     .help = "while waiting for a free server, look again at least this often"},
};

const gf_cfg_table alloc_config_table = {
    .name = "allocator",
    .size = sizeof(alloc_config),
    .fields = alloc_fields,
    .nfields = sizeof alloc_fields / sizeof alloc_fields[0],
    .validate = alloc_validate,
};
