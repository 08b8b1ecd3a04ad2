/*
 * alloc_config.h — functions.allocator in config: the signing key, token lifetime and
 * the allocation deadline.
 *
 * Pure (gamefn_core). The loaded struct is immutable and borrowed from the config.
 */
#ifndef GAMEFN_ALLOC_CONFIG_H
#define GAMEFN_ALLOC_CONFIG_H

#include <stdint.h>

#include "gamefn/config.h"

typedef struct alloc_config {
    const char *signing_key;   /* secret key file (gamefn keygen), mode 0600 */
    const char *key_id;        /* its id, as listed first in functions.fleet.join_keys */
    int64_t token_lifetime_ms; /* JoinTokenClaims.expires = issued + this */
    int64_t deadline_ms;       /* from Match.created_unix_ms: no server by then -> NO_SERVER */
    int64_t wait_slice_ms;     /* while no server is free: re-look at least this often */
} alloc_config;

extern const gf_cfg_table alloc_config_table;

#endif
