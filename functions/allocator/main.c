/*
 * allocator — takes each Match from the MATCHES work queue, gives it a game server and
 * signed join tokens, and assigns its tickets (docs/PROTOCOL.md §7,
 * docs/MATCHMAKING.md "Allocation").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "alloc_fn.h"
#include "gamefn/function.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "join_sign.h"

/* The MATCHES consumer's ack wait must outlast an allocation (the deadline) with room
 * for the commit and ticket writes; on 2.9.10 a backoff list replaces ack_wait with its
 * first entry. */
static gf_err check_ack_wait(gf_fn *fn, const alloc_state *st)
{
    const gf_consumer_config *cc = gf_config_consumer(gf_fn_config(fn), "MATCHES", "allocator");
    if (!cc)
        return GF_ERR_CONFIG;
    int64_t wait = cc->backoff_ms_len ? cc->backoff_ms[0] : cc->ack_wait_ms;
    if (wait < st->cfg->deadline_ms + 1000) {
        gf_log_error("MATCHES/allocator ack wait too short for the allocation deadline",
                     "ack_wait_ms=%lld deadline_ms=%lld need_ms=%lld", (long long)wait,
                     (long long)st->cfg->deadline_ms, (long long)(st->cfg->deadline_ms + 1000));
        return GF_ERR_CONFIG;
    }
    return GF_OK;
}

static void alloc_fini(gf_fn *fn)
{
    alloc_state *st = gf_fn_state(fn);
    if (!st)
        return;
    fleet_mirror_stop(st->mirror);
    gf_mmstore_close(st->store);
    kvStore_Destroy(st->fleet);
    sodium_memzero(st->sk, sizeof st->sk);
    free(st);
    gf_fn_set_state(fn, NULL);
}

/* The signing key file must load: found by --check-config, and before connecting. */
static gf_err alloc_check(const gf_config *cfg, const void *section, char *why, size_t why_size)
{
    (void)cfg;
    const alloc_config *c = section;
    uint8_t sk[GF_WIRE_JOIN_SK_LEN];
    char reason[400];
    gf_err err = gf_join_secret_load(c->signing_key, sk, NULL, reason, sizeof reason);
    sodium_memzero(sk, sizeof sk);
    if (err != GF_OK)
        snprintf(why, why_size, "signing key not loaded: %s", reason);
    return err == GF_OK ? GF_OK : GF_ERR_CONFIG;
}

static gf_err alloc_init(gf_fn *fn)
{
    alloc_state *st = calloc(1, sizeof *st);
    if (!st)
        return GF_ERR_NOMEM;
    gf_fn_set_state(fn, st);
    st->cfg = gf_fn_section(fn);
    st->instance_id = gf_fn_instance_id(fn);
    st->nc = gf_fn_nats(fn);
    gf_test_pause_arm(&st->pause, "GAMEFN_TEST_ALLOCATOR_PAUSE");
    char why[512];
    gf_err err = gf_join_secret_load(st->cfg->signing_key, st->sk, NULL, why, sizeof why);
    if (err != GF_OK) {
        gf_log_error("signing key not loaded", "why=\"%s\"", why);
        err = GF_ERR_CONFIG;
    }
    st->signer = (alloc_signer){
        .sk = st->sk, .key_id = st->cfg->key_id, .lifetime_ms = st->cfg->token_lifetime_ms};
    if (err == GF_OK)
        err = check_ack_wait(fn, st);
    jsCtx *js = gf_fn_js(fn);
    st->js = js;
    if (err == GF_OK)
        err = gf_mmstore_open(st->nc, js, &st->store);
    if (err == GF_OK)
        err = gf_kv_open(js, "fleet", &st->fleet);
    if (err == GF_OK)
        err = fleet_mirror_start(st->nc, js, "fleet", 5 * 60 * 1000, &st->mirror);
    if (err == GF_OK && !fleet_mirror_wait_ready(st->mirror, 10000))
        gf_log_warn("fleet mirror not in sync yet", NULL);
    if (err != GF_OK)
        alloc_fini(fn);
    return err;
}

static const gf_endpoint endpoints[] = {
    {.name = "allocate",
     .kind = GF_ENDPOINT_PULL,
     .pull = {.stream = "MATCHES", .consumer = "allocator", .on_message = alloc_on_match}},
};

static const char *const buckets[] = {"tickets", "players", "matches", "fleet", NULL};

static const gf_function allocator_function = {
    .name = "allocator",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Gives each match a game server and signed join tokens, then assigns its "
                   "tickets.",
    .config = &alloc_config_table,
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
    .buckets = buckets,
    .check = alloc_check,
    .init = alloc_init,
    .fini = alloc_fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&allocator_function, argc, argv);
}
