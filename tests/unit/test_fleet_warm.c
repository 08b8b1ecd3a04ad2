/*
 * test_fleet_warm.c — the warm pool (functions/fleet/warm.h): demand rates over the
 * observed time, a forecast that rises with the short window and falls only with the
 * long one, the target formula and its bounds, and which servers are hibernated.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "warm.h"

static void rate_counts_observed_time_only(void **state)
{
    (void)state;
    warm_history h;
    /* 5-minute window starting at t = 1,000 s. */
    int64_t t0 = 1000000;
    warm_history_init(&h, 300000, t0);
    assert_true(warm_rate(&h, t0, 60000) == 0.0);
    /* 2 matches/s for 60 s. */
    for (int s = 0; s < 60; s++)
        warm_history_add(&h, t0 + s * 1000, 2);
    int64_t now = t0 + 60000;
    /* Short window (60 s) sees 120 matches in 60 s; the whole window has only 60 s
     * observed, so it agrees instead of dividing by 300 s. */
    assert_true(fabs(warm_rate(&h, now, 60000) - 2.0) < 0.1);
    assert_true(fabs(warm_rate(&h, now, 300000) - 2.0) < 0.1);
    /* A fresh history and one early match does not look like a flood: at least a
     * tenth of the span (here four 2.5 s buckets) counts as observed. */
    warm_history fresh;
    warm_history_init(&fresh, 300000, t0);
    warm_history_add(&fresh, t0 + 100, 1);
    assert_true(warm_rate(&fresh, t0 + 200, 60000) <= 0.1 + 1e-9);
}

static void forecast_rises_fast_falls_slowly(void **state)
{
    (void)state;
    warm_history h;
    int64_t t0 = 0;
    warm_history_init(&h, 300000, t0);
    /* 5 minutes at 1/s. */
    for (int s = 0; s < 300; s++)
        warm_history_add(&h, t0 + s * 1000, 1);
    int64_t now = t0 + 300000;
    assert_true(fabs(warm_forecast(&h, now, 60000) - 1.0) < 0.1);
    /* A burst to 10/s for 20 s lifts the forecast at once (short window). */
    for (int s = 0; s < 20; s++)
        warm_history_add(&h, now + s * 1000, 10);
    now += 20000;
    double up = warm_forecast(&h, now, 60000);
    assert_true(up > 3.0);
    /* Silence for 2 minutes: the short rate is 0, the long window still remembers. */
    now += 120000;
    assert_true(warm_rate(&h, now, 60000) == 0.0);
    double later = warm_forecast(&h, now, 60000);
    assert_true(later > 0.5 && later < up);
    /* After a whole silent window the forecast is 0. */
    now += 300000;
    assert_true(warm_forecast(&h, now, 60000) == 0.0);
}

static void old_buckets_never_count(void **state)
{
    (void)state;
    warm_history h;
    warm_history_init(&h, 10000, 0); /* 100 ms buckets */
    warm_history_add(&h, 0, 50);
    /* WARM_BUCKETS * 100 ms later the same slot is reused: the old count is gone. */
    warm_history_add(&h, WARM_BUCKETS * 100, 1);
    assert_true(fabs(warm_rate(&h, WARM_BUCKETS * 100, 10000) - 0.1) < 0.002);
}

static void target_formula_and_bounds(void **state)
{
    (void)state;
    /* No demand: the floor. */
    assert_int_equal(warm_target(0, 30000, 2, 3, 50), 3);
    assert_int_equal(warm_target(NAN, 30000, 2, 3, 50), 3);
    /* 1 match/s, 30 s warm-up: m = 30, 30 + 2 * sqrt(30) = 40.95 -> 41. */
    assert_int_equal(warm_target(1.0, 30000, 2, 0, 100), 41);
    /* Safety 0 is just the mean, rounded up. */
    assert_int_equal(warm_target(0.1, 25000, 0, 0, 100), 3);
    /* Ceiling. */
    assert_int_equal(warm_target(10.0, 30000, 2, 0, 50), 50);
    /* Zero warm-up: nothing needed beyond the floor. */
    assert_int_equal(warm_target(10.0, 0, 2, 2, 50), 2);
}

static void plan_starts_and_hibernates(void **state)
{
    (void)state;
    warm_plan plan;
    int64_t now = 1000000;
    warm_server few[] = {{"a", now - 5000}, {"b", now - 1000}};
    warm_plan_compute(few, 2, 5, now, 60000, &plan);
    assert_int_equal(plan.start, 3);
    assert_int_equal(plan.n_hibernate, 0);

    /* 6 free, target 2: 4 excess, but only those idle >= 60 s, idle longest first. */
    warm_server many[] = {{"young", now - 1000}, {"old2", now - 200000}, {"old1", now - 300000},
                          {"mid", now - 60000},  {"new", now},           {"old3", now - 100000}};
    warm_plan_compute(many, 6, 2, now, 60000, &plan);
    assert_int_equal(plan.free_now, 6);
    assert_int_equal(plan.start, 0);
    assert_int_equal(plan.n_hibernate, 4);
    assert_string_equal(many[0].server_id, "old1");
    assert_string_equal(many[1].server_id, "old2");
    assert_string_equal(many[2].server_id, "old3");
    assert_string_equal(many[3].server_id, "mid");

    /* With a longer hibernate_after only the three oldest go. */
    warm_plan_compute(many, 6, 2, now, 100000, &plan);
    assert_int_equal(plan.n_hibernate, 3);
    /* Exactly on target: nothing to do. */
    warm_plan_compute(many, 6, 6, now, 0, &plan);
    assert_int_equal(plan.start, 0);
    assert_int_equal(plan.n_hibernate, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rate_counts_observed_time_only),
        cmocka_unit_test(forecast_rises_fast_falls_slowly),
        cmocka_unit_test(old_buckets_never_count),
        cmocka_unit_test(target_formula_and_bounds),
        cmocka_unit_test(plan_starts_and_hibernates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
