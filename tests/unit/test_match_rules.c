/*
 * test_match_rules.c — the rule curves: the formulas' values at t = 0, 1, 4, 10, 60 and
 * 1000 s, the step boundaries of the ping curve, the caps, and the mode presets.
 *
 * Expected values are written out from the formulas (by hand where they are round
 * numbers, with pow() from libm where they are not) — never read back from the engine.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gamefn/match/rules.h"

typedef struct row {
    double t;     /* seconds in queue */
    double gap;   /* expected allowed skill gap */
    int64_t ping; /* expected allowed ping */
} row;

static void reference_curve(gf_match_curve *c)
{
    gf_match_queue q;
    gf_match_queue_defaults(&q, "q", GF_MATCH_HYBRID, "5v5");
    *c = q.curve;
}

static void test_reference_constants(void **state)
{
    (void)state;
    gf_match_curve c;
    reference_curve(&c);
    assert_true(c.skill_base == 50 && c.skill_alpha == 4.5 && c.skill_gamma == 1.35 &&
                c.skill_cap == 600);
    assert_true(c.ping_base_ms == 35 && c.ping_beta_ms == 15 && c.ping_step_ms == 4000 &&
                c.ping_cap_ms == 180);
}

static void test_default_curve_values(void **state)
{
    (void)state;
    /* gap = min(600, 50 + 4.5 t^1.35); ping = min(180, 35 + 15 floor(t / 4)). */
    const row rows[] = {
        {0, 50, 35},
        {1, 54.5, 35},
        {4, 50 + 4.5 * pow(4, 1.35), 50},   /* ~79.24 */
        {10, 50 + 4.5 * pow(10, 1.35), 65}, /* ~150.74 */
        {60, 600, 180},                     /* 50 + 4.5 * 60^1.35 ~ 1182 > cap; 260 > cap */
        {1000, 600, 180},
    };
    gf_match_curve c;
    reference_curve(&c);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int64_t age = (int64_t)(rows[i].t * 1000);
        double gap = gf_match_rules_skill_gap(&c, age, 0);
        assert_true(fabs(gap - rows[i].gap) < 1e-9);
        assert_int_equal(gf_match_rules_ping(&c, age), rows[i].ping);
    }
    /* Sanity on the non-round ones, so a wrong pow() use would show. */
    assert_true(fabs(gf_match_rules_skill_gap(&c, 4000, 0) - 79.24) < 0.01);
    assert_true(fabs(gf_match_rules_skill_gap(&c, 10000, 0) - 150.74) < 0.01);
}

static void test_ping_steps_are_exact(void **state)
{
    (void)state;
    gf_match_curve c;
    reference_curve(&c);
    assert_int_equal(gf_match_rules_ping(&c, 3999), 35);
    assert_int_equal(gf_match_rules_ping(&c, 4000), 50);
    assert_int_equal(gf_match_rules_ping(&c, 7999), 50);
    assert_int_equal(gf_match_rules_ping(&c, 8000), 65);
    /* 35 + 15 * 9 = 170 at 36 s; 185 would pass the cap at 40 s. */
    assert_int_equal(gf_match_rules_ping(&c, 39999), 170);
    assert_int_equal(gf_match_rules_ping(&c, 40000), 180);
    /* Negative ages count as 0; absurd ages stay at the cap without overflowing. */
    assert_int_equal(gf_match_rules_ping(&c, -5000), 35);
    assert_int_equal(gf_match_rules_ping(&c, INT64_MAX), 180);
    assert_true(gf_match_rules_skill_gap(&c, -1, 0) == 50);
}

static void test_skill_cap_is_reached_and_held(void **state)
{
    (void)state;
    gf_match_curve c;
    reference_curve(&c);
    /* 50 + 4.5 t^1.35 = 600 at t = (550 / 4.5)^(1 / 1.35). */
    double t_cap = pow(550 / 4.5, 1 / 1.35);
    int64_t before = (int64_t)floor(t_cap * 1000) - 1, after = (int64_t)ceil(t_cap * 1000) + 1;
    assert_true(gf_match_rules_skill_gap(&c, before, 0) < 600);
    assert_true(gf_match_rules_skill_gap(&c, after, 0) == 600);
    for (int64_t age = after; age < 3600 * 1000; age += 60000)
        assert_true(gf_match_rules_skill_gap(&c, age, 0) == 600);
}

static void test_custom_curves(void **state)
{
    (void)state;
    gf_match_curve c = {.skill_base = 10,
                        .skill_alpha = 2,
                        .skill_gamma = 2,
                        .skill_cap = 100,
                        .ping_base_ms = 20,
                        .ping_beta_ms = 10,
                        .ping_step_ms = 1000,
                        .ping_cap_ms = 60};
    assert_true(gf_match_rules_skill_gap(&c, 3000, 0) == 28);   /* 10 + 2 * 9 */
    assert_true(gf_match_rules_skill_gap(&c, 10000, 0) == 100); /* 210 capped */
    assert_int_equal(gf_match_rules_ping(&c, 2500), 40);        /* 20 + 10 * 2 */
    assert_int_equal(gf_match_rules_ping(&c, 9000), 60);        /* 110 capped */
    /* sigma widens the gap, still under the cap. */
    c.sigma_widen = 0.5;
    assert_true(gf_match_rules_skill_gap(&c, 3000, 20) == 38);
    assert_true(gf_match_rules_skill_gap(&c, 3000, 1000) == 100);
    /* A base above the cap is held at the cap. */
    c.ping_base_ms = 500;
    assert_int_equal(gf_match_rules_ping(&c, 0), 60);
}

static void test_mode_presets(void **state)
{
    (void)state;
    gf_match_queue q;
    gf_match_limits l;

    gf_match_queue_defaults(&q, "q", GF_MATCH_SBMM, "5v5");
    gf_match_rules_limits(&q, 0, 0, &l);
    assert_true(l.skill_gap == 50);
    assert_int_equal(l.ping_ms, 180); /* loose but capped from the start */

    gf_match_queue_defaults(&q, "q", GF_MATCH_PING_FIRST, "5v5");
    gf_match_rules_limits(&q, 0, 0, &l);
    assert_true(isinf(l.skill_gap) && l.skill_gap > 0);
    assert_int_equal(l.ping_ms, 35);
    gf_match_rules_limits(&q, 8000, 0, &l);
    assert_int_equal(l.ping_ms, 65);

    gf_match_queue_defaults(&q, "q", GF_MATCH_HYBRID, "5v5");
    gf_match_rules_limits(&q, 10000, 0, &l);
    assert_true(fabs(l.skill_gap - (50 + 4.5 * pow(10, 1.35))) < 1e-9);
    assert_int_equal(l.ping_ms, 65);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_constants),
        cmocka_unit_test(test_default_curve_values),
        cmocka_unit_test(test_ping_steps_are_exact),
        cmocka_unit_test(test_skill_cap_is_reached_and_held),
        cmocka_unit_test(test_custom_curves),
        cmocka_unit_test(test_mode_presets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
