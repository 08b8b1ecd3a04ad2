/* fleet_config.c — the functions.fleet table (see fleet_config.h). */
#include "fleet_config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gamefn/limits.h"
#include "gamefn/names.h"

#define F(member) offsetof(fleet_config, member)

static bool dc_validate(const void *obj, gf_cfg_problem *p)
{
    const fleet_dc_config *dc = obj;
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_id_ok(dc->name, GF_WIRE_NAME_MAX, why, sizeof why)) {
        p->key = "name";
        snprintf(p->text, sizeof p->text, "datacenter name %s", why);
        return false;
    }
    if (dc->floor > dc->ceiling) {
        p->key = "floor";
        snprintf(p->text, sizeof p->text, "floor %lld is above ceiling %lld", (long long)dc->floor,
                 (long long)dc->ceiling);
        return false;
    }
    return true;
}

static const gf_cfg_field dc_fields[] = {
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = offsetof(fleet_dc_config, name),
     .required = true,
     .help = "datacenter name ([A-Za-z0-9_-], up to 32), as in Match.datacenters"},
    {.key = "floor",
     .type = GF_CFG_INT,
     .offset = offsetof(fleet_dc_config, floor),
     .def = "1",
     .min = 0,
     .max = 100000,
     .help = "FREE servers kept warm at least, whatever the forecast"},
    {.key = "ceiling",
     .type = GF_CFG_INT,
     .offset = offsetof(fleet_dc_config, ceiling),
     .def = "50",
     .min = 0,
     .max = 100000,
     .help = "FREE servers kept warm at most"},
};

static const gf_cfg_table dc_table = {
    .name = "datacenter",
    .size = sizeof(fleet_dc_config),
    .fields = dc_fields,
    .nfields = sizeof dc_fields / sizeof dc_fields[0],
    .validate = dc_validate,
};

static bool key_validate(const void *obj, gf_cfg_problem *p)
{
    const fleet_key_config *k = obj;
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_id_ok(k->key_id, GF_WIRE_NAME_MAX, why, sizeof why)) {
        p->key = "key_id";
        snprintf(p->text, sizeof p->text, "key id %s", why);
        return false;
    }
    return true;
}

static const gf_cfg_field key_fields[] = {
    {.key = "key_id",
     .type = GF_CFG_STRING,
     .offset = offsetof(fleet_key_config, key_id),
     .required = true,
     .help = "key id ([A-Za-z0-9_-], up to 32), as the allocator's functions.allocator.key_id"},
    {.key = "public_key",
     .type = GF_CFG_STRING,
     .offset = offsetof(fleet_key_config, public_key),
     .required = true,
     .help = "public key file written by `gamefn keygen`"},
    {.key = "not_after",
     .type = GF_CFG_INT,
     .offset = offsetof(fleet_key_config, not_after_unix_ms),
     .def = "0",
     .min = 0,
     .max = 9e15,
     .help = "Unix ms from which the key is retired and its tokens refused (0 = never)"},
};

static const gf_cfg_table key_table = {
    .name = "join key",
    .size = sizeof(fleet_key_config),
    .fields = key_fields,
    .nfields = sizeof key_fields / sizeof key_fields[0],
    .validate = key_validate,
};

static bool fleet_validate(const void *obj, gf_cfg_problem *p)
{
    const fleet_config *c = obj;
    if (c->heartbeat_timeout_ms < 2 * c->heartbeat_interval_ms) {
        p->key = "heartbeat_timeout";
        snprintf(p->text, sizeof p->text,
                 "must be at least twice heartbeat_interval, so one lost heartbeat is not a death");
        return false;
    }
    if (c->forecast_short_ms > c->forecast_window_ms) {
        p->key = "forecast_short";
        snprintf(p->text, sizeof p->text, "must not be longer than forecast_window");
        return false;
    }
    for (size_t i = 0; i < c->datacenters_len; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->datacenters[i].name, c->datacenters[j].name) == 0) {
                p->key = "datacenters";
                snprintf(p->text, sizeof p->text, "datacenter %s is listed twice",
                         c->datacenters[i].name);
                return false;
            }
    for (size_t i = 0; i < c->join_keys_len; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->join_keys[i].key_id, c->join_keys[j].key_id) == 0) {
                p->key = "join_keys";
                snprintf(p->text, sizeof p->text, "key id %s is listed twice",
                         c->join_keys[i].key_id);
                return false;
            }
    return true;
}

static const gf_cfg_field fleet_fields[] = {
    {.key = "heartbeat_interval",
     .type = GF_CFG_DURATION,
     .offset = F(heartbeat_interval_ms),
     .def = "2s",
     .min = 100,
     .max = 600000,
     .help = "servers heartbeat at this interval (told in the register reply)"},
    {.key = "heartbeat_timeout",
     .type = GF_CFG_DURATION,
     .offset = F(heartbeat_timeout_ms),
     .def = "10s",
     .min = 200,
     .max = 3600000,
     .help = "a server silent this long is never allocated and is removed (>= 2 intervals); from 4 "
             "intervals on, an unchanged record is rewritten only every timeout/2 - interval"},
    {.key = "scale_interval",
     .type = GF_CFG_DURATION,
     .offset = F(scale_interval_ms),
     .def = "5s",
     .min = 50,
     .max = 600000,
     .help = "how often a FleetScaleRequest is published per datacenter"},
    {.key = "allocation_grace",
     .type = GF_CFG_DURATION,
     .offset = F(allocation_grace_ms),
     .def = "2m",
     .min = 1000,
     .max = 86400000,
     .help = "an ALLOCATED server whose match has no commit record this long is aborted and freed"},
    {.key = "forecast_window",
     .type = GF_CFG_DURATION,
     .offset = F(forecast_window_ms),
     .def = "5m",
     .min = 1000,
     .max = 3600000,
     .help = "demand history the warm-pool forecast averages over"},
    {.key = "forecast_short",
     .type = GF_CFG_DURATION,
     .offset = F(forecast_short_ms),
     .def = "1m",
     .min = 1000,
     .max = 3600000,
     .help = "recent window whose rate lifts the forecast at once when demand rises"},
    {.key = "warmup",
     .type = GF_CFG_DURATION,
     .offset = F(warmup_ms),
     .def = "30s",
     .min = 0,
     .max = 3600000,
     .help = "time to bring a new server up: the warm pool covers the demand of this long"},
    {.key = "safety",
     .type = GF_CFG_DOUBLE,
     .offset = F(safety),
     .def = "2",
     .min = 0,
     .max = 10,
     .help = "extra servers in standard deviations of the demand over warmup (Poisson)"},
    {.key = "hibernate_after",
     .type = GF_CFG_DURATION,
     .offset = F(hibernate_after_ms),
     .def = "2m",
     .min = 0,
     .max = 86400000,
     .help = "a FREE server idle for less than this is never asked to hibernate"},
    {.key = "datacenters",
     .type = GF_CFG_OBJECT_LIST,
     .offset = F(datacenters),
     .count_offset = F(datacenters_len),
     .required = true,
     .min = 1,
     .max = 256,
     .sub = &dc_table,
     .help = "datacenters servers may register in, with their warm-pool floor and ceiling"},
    {.key = "join_keys",
     .type = GF_CFG_OBJECT_LIST,
     .offset = F(join_keys),
     .count_offset = F(join_keys_len),
     .required = true,
     .min = 1,
     .max = 8,
     .sub = &key_table,
     .help = "public keys that verify join tokens, the allocator's current key first"},
};

const gf_cfg_table fleet_config_table = {
    .name = "fleet",
    .size = sizeof(fleet_config),
    .fields = fleet_fields,
    .nfields = sizeof fleet_fields / sizeof fleet_fields[0],
    .validate = fleet_validate,
};

const fleet_dc_config *fleet_config_dc(const fleet_config *cfg, const char *name)
{
    for (size_t i = 0; name && i < cfg->datacenters_len; i++)
        if (strcmp(cfg->datacenters[i].name, name) == 0)
            return &cfg->datacenters[i];
    return NULL;
}

/* A heartbeat is skipped only while the stored stamp is younger than R, the refresh period
 * (as the deciding replica's clock counts), so a server heartbeating every interval I has its
 * record rewritten by the first heartbeat at or after R. When its next heartbeat is due, its
 * record was stamped at most R + I ago; R = T/2 - I (T the timeout) makes that half the
 * timeout, and leaves the other half for what a live server must survive: lost heartbeats
 * (one costs I: T/2 - I >= I is left, as T >= 4I, so one lost heartbeat is still not a
 * death, the rule fleet_validate keeps without skipping), heartbeats delayed on their way or
 * in the fleet's queue, and the clocks of the fleet replicas (which stamp and judge) and of
 * the allocators and the sweep (which compare stale_unix_ms with their own) disagreeing
 * (docs/OPERATIONS.md "Clocks" tolerates 2 s). It scales with T: an operator who raises the
 * timeout to ride out longer silences keeps half of it for them. Defaults (2 s, 10 s):
 * R = 3 s, a live record rewritten every second heartbeat (4 s) instead of every one, at
 * least 5 s before its stale instant when the next heartbeat is due (3 s with one lost, 1 s
 * with two). Below T = 4I a skip could only help heartbeats faster than the interval and
 * would eat into the margin: R = 0, every heartbeat writes, as before. */
int64_t fleet_config_refresh_ms(const fleet_config *cfg)
{
    if (cfg->heartbeat_timeout_ms < 4 * cfg->heartbeat_interval_ms)
        return 0;
    return cfg->heartbeat_timeout_ms / 2 - cfg->heartbeat_interval_ms;
}
