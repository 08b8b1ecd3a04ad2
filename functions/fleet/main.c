/*
 * fleet — game servers register, heartbeat and leave; stale servers are removed; the
 * warm pool is published for orchestrator adapters (docs/PROTOCOL.md §8,
 * docs/MATCHMAKING.md "Fleet").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_fn.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/function.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/tickets/config.h"

static gf_err load_keys(fleet_state *st)
{
    const fleet_config *cfg = st->cfg;
    if (cfg->join_keys_len > FLEET_KEYS_MAX)
        return GF_ERR_CONFIG;
    for (size_t i = 0; i < cfg->join_keys_len; i++) {
        char why[256];
        gf_join_key *k = &st->keys[i];
        gf_err err = gf_join_key_read(cfg->join_keys[i].public_key, false, k->pk, why, sizeof why);
        if (err != GF_OK) {
            gf_log_error("join key not loaded", "key_id=%s why=\"%s\"", cfg->join_keys[i].key_id,
                         why);
            return GF_ERR_CONFIG;
        }
        snprintf(k->key_id, sizeof k->key_id, "%s", cfg->join_keys[i].key_id);
        k->not_after_unix_ms = cfg->join_keys[i].not_after_unix_ms;
        Gamefn__V1__JoinKey w = GAMEFN__V1__JOIN_KEY__INIT;
        w.key_id = k->key_id;
        w.public_key.data = k->pk;
        w.public_key.len = sizeof k->pk;
        w.not_after_unix_ms = k->not_after_unix_ms;
        st->wire_keys[i] = w;
    }
    st->n_keys = cfg->join_keys_len;
    return GF_OK;
}

/* Every datacenter the matcher may choose must be one servers can register in, or its
 * matches would always find no server (checked when the file has a matcher section: a
 * fleet-only deployment has none); and every join key file must load. Found by
 * --check-config, and before connecting. */
static gf_err fleet_check(const gf_config *file, const void *section, char *why, size_t why_size)
{
    const fleet_config *cfg = section;
    gf_config *mm = NULL;
    gf_config_error cerr;
    gf_err err = GF_OK;
    if (gf_mm_config_load(file->path, &mm, &cerr) == GF_OK) {
        const gf_mm_config *m = gf_config_function(mm);
        for (size_t i = 0; err == GF_OK && i < m->matchmaking.datacenters_len; i++) {
            const char *name = m->matchmaking.datacenters[i].name;
            if (!fleet_config_dc(cfg, name)) {
                snprintf(why, why_size,
                         "matcher datacenter %s is not in functions.fleet.datacenters", name);
                err = GF_ERR_CONFIG;
            }
        }
        gf_config_free(mm);
    }
    for (size_t i = 0; err == GF_OK && i < cfg->join_keys_len; i++) {
        uint8_t pk[GF_WIRE_JOIN_PK_LEN];
        char reason[400];
        if (gf_join_key_read(cfg->join_keys[i].public_key, false, pk, reason, sizeof reason) !=
            GF_OK) {
            snprintf(why, why_size, "join key not loaded (key_id %s): %s", cfg->join_keys[i].key_id,
                     reason);
            err = GF_ERR_CONFIG;
        }
    }
    return err;
}

static void fleet_fini(gf_fn *fn)
{
    fleet_state *st = gf_fn_state(fn);
    if (!st)
        return;
    gf_sub_close(st->demand_sub, 2000); /* its callback uses st */
    fleet_mirror_stop(st->mirror);
    kvStore_Destroy(st->fleet_kv);
    gf_mmstore_close(st->store);
    for (size_t i = 0; i < st->n_committed; i++)
        free(st->committed[i]);
    free(st->committed);
    free(st->demand);
    pthread_mutex_destroy(&st->lock);
    free(st);
    gf_fn_set_state(fn, NULL);
}

static gf_err fleet_init(gf_fn *fn)
{
    fleet_state *st = calloc(1, sizeof *st);
    if (!st)
        return GF_ERR_NOMEM;
    pthread_mutex_init(&st->lock, NULL);
    gf_fn_set_state(fn, st);
    st->cfg = gf_fn_section(fn);
    st->instance_id = gf_fn_instance_id(fn);
    st->nc = gf_fn_nats(fn);
    st->js = gf_fn_js(fn);
    gf_test_pause_arm(&st->pause, "GAMEFN_TEST_FLEET_PAUSE");
    gf_err err = load_keys(st); /* checked before connecting; read again for the bytes */
    if (err == GF_OK)
        err = gf_kv_open(st->js, "fleet", &st->fleet_kv);
    if (err == GF_OK)
        err = gf_mmstore_open(st->nc, st->js, &st->store);
    st->demand = calloc(st->cfg->datacenters_len, sizeof *st->demand);
    if (err == GF_OK && !st->demand)
        err = GF_ERR_NOMEM;
    int64_t now = gf_clock_unix_ms();
    for (size_t i = 0; err == GF_OK && i < st->cfg->datacenters_len; i++)
        warm_history_init(&st->demand[i], st->cfg->forecast_window_ms, now);
    if (err == GF_OK)
        err = fleet_mirror_start_in(st->nc, st->js, "fleet", 5 * 60 * 1000, st->cfg, &st->mirror);
    if (err == GF_OK)
        err = fleet_demand_start(st);
    if (err == GF_OK && !fleet_mirror_wait_ready(st->mirror, 10000))
        gf_log_warn("fleet mirror not in sync yet; the sweep waits for it", NULL);
    int64_t refresh_ms = fleet_config_refresh_ms(st->cfg);
    if (err == GF_OK && refresh_ms == 0)
        gf_log_info("every heartbeat rewrites its record: heartbeat_timeout is shorter than four "
                    "heartbeat_intervals",
                    "heartbeat_interval_ms=%lld heartbeat_timeout_ms=%lld",
                    (long long)st->cfg->heartbeat_interval_ms,
                    (long long)st->cfg->heartbeat_timeout_ms);
    else if (err == GF_OK)
        gf_log_info(
            "heartbeats that change nothing rewrite a record only once it is refresh_ms old",
            "refresh_ms=%lld heartbeat_interval_ms=%lld heartbeat_timeout_ms=%lld",
            (long long)refresh_ms, (long long)st->cfg->heartbeat_interval_ms,
            (long long)st->cfg->heartbeat_timeout_ms);
    if (err != GF_OK)
        fleet_fini(fn);
    return err;
}

static const gf_endpoint endpoints[] = {
    {.name = "register",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = GF_WIRE_SUBJ_FLEET_REGISTER,
                 .queue_group = GF_WIRE_QUEUE_FLEET,
                 .on_request = fleet_on_register,
                 .concurrency = 16}},
    {.name = "heartbeat",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = GF_WIRE_SUBJ_FLEET_HEARTBEAT,
                 .queue_group = GF_WIRE_QUEUE_FLEET,
                 .on_request = fleet_on_heartbeat,
                 .concurrency = 16}}, /* every server, every interval, and each game over
                                         (its players released): handlers wait on KV */
    {.name = "deregister",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = GF_WIRE_SUBJ_FLEET_DEREGISTER,
                 .queue_group = GF_WIRE_QUEUE_FLEET,
                 .on_request = fleet_on_deregister}},
    {.name = "keys",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = GF_WIRE_SUBJ_FLEET_KEYS,
                 .queue_group = GF_WIRE_QUEUE_FLEET,
                 .on_request = fleet_on_keys}},
    {.name = "sweep",
     .kind = GF_ENDPOINT_TICK,
     .tick = {.subject = GF_WIRE_SUBJ_TICK_FLEET,
              .queue_group = GF_WIRE_QUEUE_FLEET,
              .period_ms = FLEET_TICK_MS,
              .lease_bucket = "leases",
              .on_tick = fleet_on_tick}},
};

static const char *const buckets[] = {"fleet", "tickets", "players", "matches", NULL};

static const gf_function fleet_function = {
    .name = "fleet",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Game-server registry: register, heartbeat, deregister, join keys, stale "
                   "sweep and warm-pool scale requests.",
    .config = &fleet_config_table,
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
    .buckets = buckets,
    .check = fleet_check,
    .init = fleet_init,
    .fini = fleet_fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&fleet_function, argc, argv);
}
