/* test_fleet_config.c — the functions.fleet table: defaults, bounds and cross-field rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "alloc_config.h"
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
        {"heartbeat_interval: 5s\nheartbeat_timeout: 5s\ndatacenters: [{name: a}]\n"
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

/* The heartbeat refresh period: timeout/2 - interval, 0 (every heartbeat writes) below four
 * intervals; a live record is then never stamped more than half the timeout ago when its
 * next heartbeat is due. */
static void refresh_follows_interval_and_timeout(void **state)
{
    (void)state;
    const struct {
        int64_t interval, timeout, refresh;
    } cases[] = {
        {2000, 10000, 3000}, /* the defaults */
        {5000, 25000, 7500}, {2000, 8000, 2000},      {2000, 7999, 0},
        {2000, 6000, 0},     {2000, 4000, 0},         {500, 1500, 0},
        {100, 200, 0},       {100, 3600000, 1799900}, {600000, 3600000, 1200000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fleet_config cfg = {.heartbeat_interval_ms = cases[i].interval,
                            .heartbeat_timeout_ms = cases[i].timeout};
        int64_t r = fleet_config_refresh_ms(&cfg);
        if (r != cases[i].refresh)
            fail_msg("case %zu: %lld, want %lld", i, (long long)r, (long long)cases[i].refresh);
        assert_true(r == 0 ||
                    (r >= cases[i].interval && 2 * (r + cases[i].interval) <= cases[i].timeout));
    }
    fleet_config cfg;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    const char *yaml = "datacenters: [{name: a}]\njoin_keys: [{key_id: k, public_key: p}]\n";
    if (parse(yaml, &cfg, &arena, &err) != GF_OK)
        fail_msg("%s", err.message);
    assert_int_equal(fleet_config_refresh_ms(&cfg), 3000);
    gf_config_arena_free(arena);
}

/* docs/MATCHMAKING.md holds exactly what the tables print, between
 * <!-- BEGIN GENERATED functions.<name> --> and <!-- END ... --> (run with --print). */
static const struct {
    const char *id;
    const gf_cfg_table *table;
} doc_tables[] = {{"functions.fleet", &fleet_config_table},
                  {"functions.allocator", &alloc_config_table}};

static char *reference(const gf_cfg_table *t, const char *prefix)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gf_config_write_reference(f, t, prefix), GF_OK);
    fclose(f);
    return buf;
}

static void docs_hold_the_tables(void **state)
{
    (void)state;
    const char *root = getenv("GAMEFN_SOURCE_DIR");
    if (!root)
        skip();
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/MATCHMAKING.md", root);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char doc[1 << 20];
    size_t n = fread(doc, 1, sizeof doc - 1, f);
    doc[n] = '\0';
    fclose(f);
    gf_config_error err;
    for (size_t i = 0; i < sizeof doc_tables / sizeof doc_tables[0]; i++) {
        if (gf_config_table_check(doc_tables[i].table, &err) != GF_OK)
            fail_msg("%s: %s", doc_tables[i].id, err.message);
        char begin[128], end[128];
        snprintf(begin, sizeof begin, "<!-- BEGIN GENERATED %s -->\n", doc_tables[i].id);
        snprintf(end, sizeof end, "<!-- END GENERATED %s -->", doc_tables[i].id);
        char *a = strstr(doc, begin), *b = a ? strstr(a, end) : NULL;
        if (!a || !b)
            fail_msg("docs/MATCHMAKING.md lacks the block '%s'", doc_tables[i].id);
        a += strlen(begin);
        char *want = reference(doc_tables[i].table, doc_tables[i].id);
        if (strlen(want) != (size_t)(b - a) || strncmp(a, want, (size_t)(b - a)) != 0)
            fail_msg("docs/MATCHMAKING.md block '%s' is stale: run test_fleet_config --print",
                     doc_tables[i].id);
        free(want);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--print") == 0) {
        for (size_t i = 0; i < sizeof doc_tables / sizeof doc_tables[0]; i++) {
            char *text = reference(doc_tables[i].table, doc_tables[i].id);
            printf("<!-- BEGIN GENERATED %s -->\n%s<!-- END GENERATED %s -->\n\n", doc_tables[i].id,
                   text, doc_tables[i].id);
            free(text);
        }
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_is_well_formed),
        cmocka_unit_test(good_section_with_defaults),
        cmocka_unit_test(bad_sections),
        cmocka_unit_test(refresh_follows_interval_and_timeout),
        cmocka_unit_test(docs_hold_the_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
