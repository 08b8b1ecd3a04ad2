/*
 * test_match_audit.c — the minimal pools of the independent audit of the engine (issue 7,
 * "Engine corrections"), one test per finding, each failing on the engine the audit
 * drove: 64-player parties in a 64v64 shape.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/match/tick.h"
#include "match_fixture.h"

static fx F;

/* ---- 5: parties of 64 in a 64v64 shape ------------------------------------------------ */

static void test_64v64_two_parties_of_64(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "64v64");
    /* Each party is a whole team: the packing must not shift a 64-bit word by 64 (UBSan
     * stopped there). */
    uint32_t a = fx_add(&F, 0, 30000, 1500, 64, "a:20");
    uint32_t b = fx_add(&F, 0, 20000, 1510, 64, "a:25");
    uint32_t c = fx_add(&F, 0, 10000, 1505, 63, "b:20"); /* shares no datacenter */
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    const gf_match *m = fx_match_of(r, a);
    assert_non_null(m);
    assert_ptr_equal(fx_match_of(r, b), m);
    assert_null(fx_match_of(r, c));
    assert_int_equal(m->members_len, 2);
    assert_int_not_equal(m->members[0].team, m->members[1].team);
    gf_match_result_free(r);

    /* 64 against 63 + 1 fills it too. */
    F.t[a].queue = 99; /* refused: out of the pool */
    F.pings[c][0].dc = 0;
    uint32_t d = fx_add(&F, 0, 5000, 1500, 1, "a:20");
    r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    m = fx_match_of(r, b);
    assert_non_null(m);
    assert_ptr_equal(fx_match_of(r, c), m);
    assert_ptr_equal(fx_match_of(r, d), m);
    gf_match_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_64v64_two_parties_of_64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
