/*
 * test_match_wait.c — the wait estimator: per-cell means, the fallbacks to neighbouring
 * bands, region and queue, decay with age, learning from a tick's matches, bad input.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "gamefn/match/wait.h"
#include "match_fixture.h"

static fx F;

static gf_match_wait *make(void)
{
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    (void)fx_queue(&F, "q2", GF_MATCH_SBMM, "1v1", NULL);
    gf_match_wait *w = NULL;
    assert_int_equal(gf_match_wait_create(&F.cfg, NULL, &w), GF_OK); /* bands of 200 */
    return w;
}

static void test_empty_has_no_estimate(void **state)
{
    (void)state;
    gf_match_wait *w = make();
    gf_match_wait_estimate e;
    assert_int_equal(gf_match_wait_get(w, 0, 0, 1500, FX_NOW, &e), GF_OK);
    assert_int_equal(e.wait_ms, -1);
    assert_int_equal(e.level, -1);
    gf_match_wait_free(w);
}

static void test_own_band_then_fallbacks(void **state)
{
    (void)state;
    gf_match_wait *w = make();
    gf_match_wait_estimate e;
    /* Band 7 (1400..1600) of queue 0, region 0: waits 10, 20, 30 s. */
    for (int i = 1; i <= 3; i++)
        assert_int_equal(gf_match_wait_observe(w, 0, 0, 1500, i * 10000, FX_NOW), GF_OK);
    assert_int_equal(gf_match_wait_get(w, 0, 0, 1450, FX_NOW, &e), GF_OK);
    assert_int_equal(e.level, 0);
    assert_int_equal(e.wait_ms, 20000);
    /* Band 8 has nothing of its own: neighbours (7, 8, 9) answer. */
    assert_int_equal(gf_match_wait_get(w, 0, 0, 1700, FX_NOW, &e), GF_OK);
    assert_int_equal(e.level, 1);
    assert_int_equal(e.wait_ms, 20000);
    /* Band 12 (2400..): too far for neighbours: the whole (queue, region). */
    assert_int_equal(gf_match_wait_get(w, 0, 0, 2500, FX_NOW, &e), GF_OK);
    assert_int_equal(e.level, 2);
    /* Another region: the queue as a whole. Another queue: nothing. */
    assert_int_equal(gf_match_wait_get(w, 0, 2, 1500, FX_NOW, &e), GF_OK);
    assert_int_equal(e.level, 3);
    assert_int_equal(e.wait_ms, 20000);
    assert_int_equal(gf_match_wait_get(w, 1, 0, 1500, FX_NOW, &e), GF_OK);
    assert_int_equal(e.wait_ms, -1);
    gf_match_wait_free(w);
}

static void test_old_observations_fade(void **state)
{
    (void)state;
    gf_match_wait *w = make(); /* half-life 10 min */
    gf_match_wait_estimate e;
    for (int i = 0; i < 10; i++)
        gf_match_wait_observe(w, 0, 0, 1500, 30000, FX_NOW);
    int64_t later = FX_NOW + 10 * 60 * 1000;
    for (int i = 0; i < 10; i++)
        gf_match_wait_observe(w, 0, 0, 1500, 10000, later);
    assert_int_equal(gf_match_wait_get(w, 0, 0, 1500, later, &e), GF_OK);
    /* Old weight 10 -> 5 after one half-life: (5 * 30 + 10 * 10) / 15 = 16.67 s. */
    assert_true(llabs(e.wait_ms - 16667) <= 1);
    assert_true(fabs(e.weight - 15) < 1e-6);
    /* Out-of-order observations count as happening at the latest time seen. */
    assert_int_equal(gf_match_wait_observe(w, 0, 0, 1500, 10000, FX_NOW), GF_OK);
    gf_match_wait_free(w);
}

static void test_learn_from_tick(void **state)
{
    (void)state;
    gf_match_wait *w = make();
    uint32_t a = fx_add(&F, 0, 40000, 1500, 1, "a:20");
    fx_add(&F, 0, 20000, 1500, 1, "a:20");
    fx_add(&F, 0, 30000, 1510, 1, "a:20");
    fx_add(&F, 0, 50000, 1510, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 2);
    gf_match_wait_learn(w, F.t, F.n, r, FX_NOW);
    gf_match_wait_estimate e;
    assert_int_equal(gf_match_wait_get(w, 0, 0, 1500, FX_NOW, &e), GF_OK);
    assert_int_equal(e.level, 0);
    assert_int_equal(e.wait_ms, 35000); /* mean of 40, 20, 30, 50 s */
    assert_non_null(fx_match_of(r, a));
    gf_match_result_free(r);
    gf_match_wait_free(w);
}

static void test_bad_input(void **state)
{
    (void)state;
    gf_match_wait *w = make();
    gf_match_wait_estimate e;
    assert_int_equal(gf_match_wait_observe(w, 5, 0, 1500, 1000, FX_NOW), GF_ERR_INVALID);
    assert_int_equal(gf_match_wait_observe(w, 0, 9, 1500, 1000, FX_NOW), GF_ERR_INVALID);
    assert_int_equal(gf_match_wait_observe(w, 0, 0, NAN, 1000, FX_NOW), GF_ERR_INVALID);
    assert_int_equal(gf_match_wait_observe(w, 0, 0, 1500, -1, FX_NOW), GF_ERR_INVALID);
    assert_int_equal(gf_match_wait_get(w, 0, 0, INFINITY, FX_NOW, &e), GF_ERR_INVALID);
    assert_int_equal(e.level, -1);
    gf_match_wait_params p;
    gf_match_wait_params_default(&p);
    p.bands = 0;
    gf_match_wait *bad = NULL;
    assert_int_equal(gf_match_wait_create(&F.cfg, &p, &bad), GF_ERR_INVALID);
    assert_null(bad);
    gf_match_wait_free(w);
    gf_match_wait_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_has_no_estimate),
        cmocka_unit_test(test_own_band_then_fallbacks),
        cmocka_unit_test(test_old_observations_fade),
        cmocka_unit_test(test_learn_from_tick),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
