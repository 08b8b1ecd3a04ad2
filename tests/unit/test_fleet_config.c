/* test_fleet_config.c — the functions.fleet table: defaults, bounds and cross-field rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_config.h"

static gf_err parse(const char *yaml, fleet_config *cfg, struct gf_config_arena **arena,
                    gf_config_error *err)
{
    return gf_config_parse_table("f.yaml", yaml, strlen(yaml), &fleet_config_table, cfg, arena,
                                 err);
}

static void table_is_well_formed(void **state)
{
    (void)state;
    gf_config_error err;
    if (gf_config_table_check(&fleet_config_table, &err) != GF_OK)
        fail_msg("%s", err.message);
}

static void good_section_with_defaults(void **state)
{
    (void)state;
    fleet_config cfg;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    const char *yaml = "datacenters:\n"
                       "  - {name: eu-west, floor: 2, ceiling: 20}\n"
                       "  - {name: us-east}\n"
                       "join_keys:\n"
                       "  - {key_id: k1, public_key: /tmp/k1.pub}\n";
    if (parse(yaml, &cfg, &arena, &err) != GF_OK)
        fail_msg("%s", err.message);
    assert_int_equal(cfg.heartbeat_interval_ms, 2000);
    assert_int_equal(cfg.heartbeat_timeout_ms, 10000);
    assert_int_equal(cfg.warmup_ms, 30000);
    assert_int_equal(cfg.datacenters_len, 2);
    assert_int_equal(cfg.datacenters[1].floor, 1);
    assert_int_equal(cfg.datacenters[1].ceiling, 50);
    assert_non_null(fleet_config_dc(&cfg, "us-east"));
    assert_null(fleet_config_dc(&cfg, "us"));
    assert_null(fleet_config_dc(&cfg, NULL));
    assert_int_equal(cfg.join_keys[0].not_after_unix_ms, 0);
    gf_config_arena_free(arena);
}

static void bad_sections(void **state)
{
    (void)state;
    const struct {
        const char *yaml, *key;
    } cases[] = {
        {"datacenters: [{name: a, floor: 5, ceiling: 4}]\njoin_keys: [{key_id: k, public_key: "
         "p}]\n",
         "floor"},
        {"datacenters: [{name: a}, {name: a}]\njoin_keys: [{key_id: k, public_key: p}]\n",
         "datacenters"},
        {"datacenters: [{name: a.b}]\njoin_keys: [{key_id: k, public_key: p}]\n", "name"},
        {"datacenters: [{name: a}]\njoin_keys: [{key_id: 'k 1', public_key: p}]\n", "key_id"},
        {"datacenters: [{name: a}]\njoin_keys: [{key_id: k, public_key: p}, {key_id: k, "
         "public_key: q}]\n",
         "join_keys"},
        {"datacenters: [{name: a}]\n", "join_keys"},
        {"join_keys: [{key_id: k, public_key: p}]\n", "datacenters"},
        {"heartbeat_interval: 5s\nheartbeat_timeout: 9s\ndatacenters: [{name: a}]\n"
         "join_keys: [{key_id: k, public_key: p}]\n",
         "heartbeat_timeout"},
        {"forecast_window: 30s\nforecast_short: 1m\ndatacenters: [{name: a}]\n"
         "join_keys: [{key_id: k, public_key: p}]\n",
         "forecast_short"},
        {"safety: 11\ndatacenters: [{name: a}]\njoin_keys: [{key_id: k, public_key: p}]\n",
         "safety"},
        {"datacenters: [{name: a}]\njoin_keys: [{key_id: k, public_key: p}]\nsweep: 1s\n", "sweep"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fleet_config cfg;
        struct gf_config_arena *arena = NULL;
        gf_config_error err;
        if (parse(cases[i].yaml, &cfg, &arena, &err) == GF_OK)
            fail_msg("case %zu accepted", i);
        if (!strstr(err.key, cases[i].key))
            fail_msg("case %zu: key '%s' (want %s): %s", i, err.key, cases[i].key, err.message);
        assert_null(arena);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_is_well_formed),
        cmocka_unit_test(good_section_with_defaults),
        cmocka_unit_test(bad_sections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
