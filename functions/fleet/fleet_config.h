/*
 * fleet_config.h — functions.fleet in config: heartbeats, the sweep, the warm pool per
 * datacenter, and the join-token public keys the fleet hands out.
 *
 * Pure (gamefn_core only). The table is parsed by the runtime like every section;
 * fleet_config_table's validate hooks hold the cross-field rules. The loaded struct
 * is immutable and borrowed from the config for the life of the process.
 */
#ifndef GAMEFN_FLEET_CONFIG_H
#define GAMEFN_FLEET_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"

/* functions.fleet.datacenters[]: the datacenters servers may register in, and the
 * bounds of each one's warm pool. */
typedef struct fleet_dc_config {
    const char *name;
    int64_t floor;   /* FREE servers kept at least, whatever the forecast */
    int64_t ceiling; /* FREE servers kept at most */
} fleet_dc_config;

/* functions.fleet.join_keys[]: public keys that verify join tokens, current first. */
typedef struct fleet_key_config {
    const char *key_id;
    const char *public_key;    /* path of a public key file (gamefn keygen) */
    int64_t not_after_unix_ms; /* retired from this instant; 0 = no end */
} fleet_key_config;

typedef struct fleet_config {
    int64_t heartbeat_interval_ms; /* told to servers */
    int64_t heartbeat_timeout_ms;  /* a record without heartbeat this long is stale */
    int64_t scale_interval_ms;     /* how often scale requests are published */
    int64_t allocation_grace_ms;   /* an allocation with no commit this long is aborted */
    int64_t forecast_window_ms;    /* demand history the forecast averages over */
    int64_t forecast_short_ms;     /* recent window that lets the forecast rise fast */
    int64_t warmup_ms;             /* time to bring a new server up (the lead time) */
    double safety;                 /* standard deviations of demand kept on top */
    int64_t hibernate_after_ms;    /* a FREE server idle less than this is never hibernated */
    fleet_dc_config *datacenters;
    size_t datacenters_len;
    fleet_key_config *join_keys;
    size_t join_keys_len;
} fleet_config;

extern const gf_cfg_table fleet_config_table;

/* The datacenter named `name`, or NULL when it is not configured. */
const fleet_dc_config *fleet_config_dc(const fleet_config *cfg, const char *name);

/* The heartbeat refresh period: a heartbeat that would change nothing in a record but its
 * two liveness stamps leaves it as it is while it was stamped less than this long ago
 * (fleet_heartbeat_skips, docs/PROTOCOL.md §8 "Heartbeat"): heartbeat_timeout / 2 -
 * heartbeat_interval (fleet_config.c says why), or 0 when the timeout is shorter than four
 * intervals: then every heartbeat rewrites its record. 3 s with the defaults (2 s, 10 s). */
int64_t fleet_config_refresh_ms(const fleet_config *cfg);

#endif
