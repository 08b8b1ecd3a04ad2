/*
 * test_match_config.c — queue configuration: YAML through the runtime's table parser
 * (defaults, every key, errors with a location and the key's name), shape strings, the
 * checks on hand-built configs, and the lookups.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/config.h"
#include "gamefn/match/config.h"

static const char good_yaml[] = "datacenters:\n"
                                "  - {name: us-east, region: na}\n"
                                "  - {name: us-west, region: na}\n"
                                "  - {name: eu-west, region: eu}\n"
                                "queues:\n"
                                "  - name: ranked-hybrid\n"
                                "    playlist: ranked\n"
                                "    mode: hybrid\n"
                                "    shape: 5v5\n"
                                "    match_attributes: [platform]\n"
                                "  - name: ranked-sbmm\n"
                                "    playlist: ranked\n"
                                "    mode: sbmm\n"
                                "    shape: 5v5\n"
                                "    party_skill: max\n"
                                "    premade_bonus: 25\n"
                                "    skill_base: 40\n"
                                "    skill_alpha: 3\n"
                                "    skill_gamma: 1.2\n"
                                "    skill_cap: 400\n"
                                "    sigma_widen: 0.5\n"
                                "    ping_base: 50ms\n"
                                "    ping_beta: 10ms\n"
                                "    ping_step: 5s\n"
                                "    ping_cap: 150ms\n"
                                "    ticket_ttl: 2m\n"
                                "    population_floor: 500\n"
                                "    match_attributes: [platform]\n"
                                "  - name: duel\n"
                                "    mode: ping_first\n"
                                "    shape: 1v1\n"
                                "search_window: 48\n";

static void test_yaml_good(void **state)
{
    (void)state;
    gf_match_config cfg;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    gf_err rc =
        gf_match_config_parse("queues.yaml", good_yaml, strlen(good_yaml), &cfg, &arena, &err);
    if (rc != GF_OK)
        fail_msg("%s", err.message);
    assert_int_equal(cfg.datacenters_len, 3);
    assert_int_equal(cfg.queues_len, 3);
    assert_int_equal(cfg.search_window, 48);
    assert_int_equal(cfg.clock_skew_ms, 5000);
    assert_int_equal(gf_match_config_regions(&cfg), 2);
    assert_int_equal(gf_match_config_dc_region(&cfg, 2), 1);
    assert_int_equal(gf_match_config_dc_index(&cfg, "eu-west"), 2);
    assert_int_equal(gf_match_config_dc_index(&cfg, "mars"), -1);
    assert_int_equal(gf_match_config_queue_index(&cfg, "duel"), 2);
    assert_int_equal(gf_match_config_region_index(&cfg, "eu"), 1);

    /* Defaults: the reference constants. */
    const gf_match_queue *h = &cfg.queues[0];
    assert_int_equal(h->mode, GF_MATCH_HYBRID);
    assert_int_equal(h->teams, 2);
    assert_int_equal(h->team_size, 5);
    assert_true(h->curve.skill_base == 50 && h->curve.skill_alpha == 4.5 &&
                h->curve.skill_gamma == 1.35 && h->curve.skill_cap == 600);
    assert_true(h->curve.ping_base_ms == 35 && h->curve.ping_beta_ms == 15 &&
                h->curve.ping_step_ms == 4000 && h->curve.ping_cap_ms == 180);
    assert_int_equal(h->ttl_ms, 300000);
    assert_int_equal(h->population_floor, 1000);
    assert_int_equal(h->party_skill, GF_MATCH_PARTY_AVERAGE);
    assert_string_equal(h->playlist, "ranked");

    /* Every key set. */
    const gf_match_queue *s = &cfg.queues[1];
    assert_int_equal(s->mode, GF_MATCH_SBMM);
    assert_int_equal(s->party_skill, GF_MATCH_PARTY_MAX);
    assert_true(s->premade_bonus == 25 && s->curve.skill_base == 40 && s->curve.skill_alpha == 3 &&
                s->curve.skill_gamma == 1.2 && s->curve.skill_cap == 400 &&
                s->curve.sigma_widen == 0.5);
    assert_true(s->curve.ping_base_ms == 50 && s->curve.ping_beta_ms == 10 &&
                s->curve.ping_step_ms == 5000 && s->curve.ping_cap_ms == 150);
    assert_int_equal(s->ttl_ms, 120000);
    assert_int_equal(s->population_floor, 500);
    assert_int_equal(s->match_attributes_len, 1);
    assert_string_equal(s->match_attributes[0], "platform");

    const gf_match_queue *d = &cfg.queues[2];
    assert_int_equal(d->mode, GF_MATCH_PING_FIRST);
    assert_int_equal(d->teams, 2);
    assert_int_equal(d->team_size, 1);
    assert_true(d->playlist == NULL || d->playlist[0] == '\0');
    assert_int_equal(gf_match_config_check(&cfg, NULL, 0), GF_OK);
    gf_config_arena_free(arena);
}

typedef struct bad_yaml {
    const char *what;
    const char *yaml;
    const char *expect; /* substring of the error message */
} bad_yaml;

#define DCS "datacenters: [{name: a, region: r}]\n"

static const bad_yaml bad_cases[] = {
    {"unknown key", DCS "queues: [{name: q, shape: 5v5, colour: red}]\n", "colour"},
    {"bad shape", DCS "queues: [{name: q, shape: 5v4}]\n", "shape"},
    {"one team", DCS "queues: [{name: q, shape: 5}]\n", "shape"},
    {"bad mode", DCS "queues: [{name: q, shape: 1v1, mode: fastest}]\n", "mode"},
    {"missing shape", DCS "queues: [{name: q}]\n", "shape"},
    {"no queues", DCS "queues: []\n", "queues"},
    {"no datacenters", "datacenters: []\nqueues: [{name: q, shape: 1v1}]\n", "datacenters"},
    {"duplicate queue", DCS "queues: [{name: q, shape: 1v1}, {name: q, shape: 1v1}]\n", "'q'"},
    {"duplicate datacenter",
     "datacenters: [{name: a, region: r}, {name: a, region: s}]\nqueues: [{name: q, shape: "
     "1v1}]\n",
     "'a'"},
    {"playlist mixes shapes",
     DCS "queues: [{name: q, shape: 1v1, playlist: p}, {name: r, shape: 2v2, playlist: p}]\n",
     "shape"},
    {"playlist mixes attributes",
     DCS "queues: [{name: q, shape: 1v1, playlist: p, match_attributes: [platform]},"
         " {name: r, shape: 1v1, playlist: p}]\n",
     "match_attributes"},
    {"gamma out of range", DCS "queues: [{name: q, shape: 1v1, skill_gamma: 9}]\n", "skill_gamma"},
    {"ping cap out of range", DCS "queues: [{name: q, shape: 1v1, ping_cap: 6s}]\n", "ping_cap"},
    {"ttl too short", DCS "queues: [{name: q, shape: 1v1, ticket_ttl: 10ms}]\n", "ticket_ttl"},
    {"ping without unit", DCS "queues: [{name: q, shape: 1v1, ping_base: 35}]\n", "ping_base"},
    {"negative floor", DCS "queues: [{name: q, shape: 1v1, population_floor: -1}]\n",
     "population_floor"},
    {"broken yaml", DCS "queues: [{name: q, shape: 1v1\n", ""},
};

static void test_yaml_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        gf_match_config cfg;
        struct gf_config_arena *arena = NULL;
        gf_config_error err;
        memset(&err, 0, sizeof err);
        gf_err rc = gf_match_config_parse("q.yaml", bad_cases[i].yaml, strlen(bad_cases[i].yaml),
                                          &cfg, &arena, &err);
        if (rc == GF_OK)
            fail_msg("%s: accepted", bad_cases[i].what);
        assert_null(arena);
        if (!strstr(err.message, bad_cases[i].expect) || !strstr(err.message, "q.yaml"))
            fail_msg("%s: message '%s' lacks '%s'", bad_cases[i].what, err.message,
                     bad_cases[i].expect);
    }
}

static void test_tables_are_well_formed(void **state)
{
    (void)state;
    gf_config_error err;
    const gf_cfg_table *tables[] = {&gf_match_config_table, &gf_match_queue_table,
                                    &gf_match_dc_table};
    for (size_t i = 0; i < 3; i++) {
        if (gf_config_table_check(tables[i], &err) != GF_OK)
            fail_msg("%s: %s", tables[i]->name, err.message);
    }
}

static void test_shapes(void **state)
{
    (void)state;
    struct {
        const char *s;
        int64_t teams, size;
    } good[] = {{"1v1", 2, 1},    {"5v5", 2, 5},     {"4v4v4", 3, 4},
                {"ffa16", 16, 1}, {"2v2v2v2", 4, 2}, {"64v64", 2, 64}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t t = 0, z = 0;
        assert_int_equal(gf_match_shape_parse(good[i].s, &t, &z), GF_OK);
        assert_int_equal(t, good[i].teams);
        assert_int_equal(z, good[i].size);
    }
    const char *bad[] = {"",     "5",      "5v",    "v5",   "5v4",  "0v0", "ffa",   "ffa1",
                         "ffa0", "ffa129", "65v65", "5v5 ", " 5v5", "5x5", "-1v-1", "99999v99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t t = 0, z = 0;
        if (gf_match_shape_parse(bad[i], &t, &z) != GF_ERR_INVALID)
            fail_msg("shape '%s' accepted", bad[i]);
    }
    assert_int_equal(gf_match_shape_parse(NULL, NULL, NULL), GF_ERR_INVALID);
}

static void test_hand_built_checks(void **state)
{
    (void)state;
    gf_match_dc dcs[GF_MATCH_MAX_DCS + 1];
    char names[GF_MATCH_MAX_DCS + 1][8];
    for (int i = 0; i <= GF_MATCH_MAX_DCS; i++) {
        snprintf(names[i], sizeof names[i], "d%d", i);
        dcs[i] = (gf_match_dc){names[i], "r"};
    }
    gf_match_queue q;
    gf_match_queue_defaults(&q, "q", GF_MATCH_HYBRID, "5v5");
    gf_match_config cfg = {.datacenters = dcs,
                           .datacenters_len = 2,
                           .queues = &q,
                           .queues_len = 1,
                           .search_window = 32};
    char why[256];
    assert_int_equal(gf_match_config_prepare(&cfg, why, sizeof why), GF_OK);

    cfg.datacenters_len = GF_MATCH_MAX_DCS + 1;
    assert_int_equal(gf_match_config_check(&cfg, why, sizeof why), GF_ERR_CONFIG);
    cfg.datacenters_len = 0;
    assert_int_equal(gf_match_config_check(&cfg, why, sizeof why), GF_ERR_CONFIG);
    cfg.datacenters_len = 2;
    q.curve.ping_step_ms = 0;
    assert_int_equal(gf_match_config_check(&cfg, why, sizeof why), GF_ERR_CONFIG);
    assert_non_null(strstr(why, "queues[0]"));
    q.curve.ping_step_ms = 4000;
    q.mode = 7;
    assert_int_equal(gf_match_config_check(&cfg, why, sizeof why), GF_ERR_CONFIG);
    q.mode = GF_MATCH_SBMM;
    q.teams = 3; /* disagrees with "5v5" */
    assert_int_equal(gf_match_config_check(&cfg, why, sizeof why), GF_ERR_CONFIG);
    q.teams = 2;
    cfg.search_window = 2;
    assert_int_equal(gf_match_config_check(&cfg, why, sizeof why), GF_ERR_CONFIG);
    cfg.search_window = 32;
    assert_int_equal(gf_match_config_check(&cfg, why, sizeof why), GF_OK);
    assert_int_equal(gf_match_config_check(NULL, why, sizeof why), GF_ERR_CONFIG);
    assert_string_equal(gf_match_mode_name(GF_MATCH_PING_FIRST), "ping_first");
}

/* The defaults are written once (the table's rows): a queue made in code is the queue a
 * YAML file gets from name, mode and shape alone, field by field for every row with a
 * default, and those are the reference constants. */
static void test_defaults_one_source(void **state)
{
    (void)state;
    static const char yaml[] = "datacenters: [{name: a, region: r}]\n"
                               "queues: [{name: q, mode: sbmm, shape: 5v5}]\n";
    gf_match_config parsed;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    if (gf_match_config_parse("d.yaml", yaml, strlen(yaml), &parsed, &arena, &err) != GF_OK)
        fail_msg("%s", err.message);
    gf_match_queue q;
    gf_match_queue_defaults(&q, "q", GF_MATCH_SBMM, "5v5");
    const gf_match_queue *y = &parsed.queues[0];
    size_t tied = 0;
    for (size_t i = 0; i < gf_match_queue_table.nfields; i++) {
        const gf_cfg_field *f = &gf_match_queue_table.fields[i];
        if (!f->def || f->type == GF_CFG_STRING || f->type == GF_CFG_STRING_LIST)
            continue;
        size_t size = f->type == GF_CFG_ENUM ? sizeof(int) : 8;
        if (memcmp((const char *)&q + f->offset, (const char *)y + f->offset, size) != 0)
            fail_msg("default of '%s' differs between code and YAML", f->key);
        tied++;
    }
    assert_true(tied >= 14);
    assert_true(q.curve.skill_base == 50 && q.curve.skill_alpha == 4.5 &&
                q.curve.skill_gamma == 1.35 && q.curve.skill_cap == 600 &&
                q.curve.sigma_widen == 0);
    assert_true(q.curve.ping_base_ms == 35 && q.curve.ping_beta_ms == 15 &&
                q.curve.ping_step_ms == 4000 && q.curve.ping_cap_ms == 180);
    assert_true(q.ttl_ms == 300000 && q.population_floor == 1000 && q.premade_bonus == 0 &&
                q.party_skill == GF_MATCH_PARTY_AVERAGE && q.teams == 2 && q.team_size == 5);
    /* A hand-built config without a window gets the table's. */
    gf_match_dc dc = {"a", "r"};
    gf_match_config cfg = {.datacenters = &dc, .datacenters_len = 1, .queues = &q, .queues_len = 1};
    assert_int_equal(gf_match_config_prepare(&cfg, NULL, 0), GF_OK);
    assert_int_equal(cfg.search_window, parsed.search_window);
    assert_int_equal(cfg.search_window, 32);
    gf_config_arena_free(arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_yaml_good),
        cmocka_unit_test(test_yaml_errors),
        cmocka_unit_test(test_tables_are_well_formed),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_hand_built_checks),
        cmocka_unit_test(test_defaults_one_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
