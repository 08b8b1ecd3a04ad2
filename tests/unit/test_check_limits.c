/*
 * test_check_limits.c — the checker's recomputed limits: every member's own skill gap and
 * ping limit at the instant its match was formed, at the curves' boundaries (the
 * reference values of docs/MATCHMAKING.md), in every mode, with parties.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check_fixture.h"
#include "gamefn/v1/match.pb-c.h"

/* Two tickets queued at 0, claimed (the match formed) at `age`, committed in dc. */
static uint64_t duel(const char *qa, double ra, const char *pa, const char *qb, double rb,
                     const char *pb, int64_t age, const char *dc)
{
    ck_fx f;
    ck_fx_start(&f, age + 1000);
    fx_ticket a = {"ta", qa, "pa", {ra}, pa, 0};
    fx_ticket b = {"tb", qb, "pb", {rb}, pb, 0};
    fx_pair(&f, &a, &b, "m1", 0, age, dc);
    fx_only(&f, NULL, 0, "limit_violations"); /* nothing else */
    uint64_t n = fx_count(&f, "limit_violations");
    ck_fx_end(&f);
    return n;
}

#define EU20 "eu-west:20"

static void test_skill_gap_at_zero(void **state)
{
    assert_int_equal(duel("duel", 1500, EU20, "duel", 1550, EU20, 0, "eu-west"), 0);
    assert_int_equal(duel("duel", 1500, EU20, "duel", 1550.01, EU20, 0, "eu-west"), 1);
    assert_int_equal(duel("duel", 1500, EU20, "duel", 1449.99, EU20, 0, "eu-west"), 1);
}

/* 10 s: 50 + 4.5 * 10^1.35 = 150.74 (docs/MATCHMAKING.md's table). */
static void test_skill_gap_at_ten_seconds(void **state)
{
    assert_int_equal(duel("duel", 1500, EU20, "duel", 1650.7, EU20, 10000, "eu-west"), 0);
    assert_int_equal(duel("duel", 1500, EU20, "duel", 1650.8, EU20, 10000, "eu-west"), 1);
    /* 60 s and later: the cap, 600. */
    assert_int_equal(duel("duel", 1500, EU20, "duel", 2100, EU20, 90000, "eu-west"), 0);
    assert_int_equal(duel("duel", 1500, EU20, "duel", 2100.5, EU20, 90000, "eu-west"), 1);
}

/* hybrid: 35 ms until 4 s, 50 ms from 4 s; the cap 180 ms. */
static void test_ping_steps(void **state)
{
    assert_int_equal(duel("duel", 1500, "eu-west:35", "duel", 1500, EU20, 0, "eu-west"), 0);
    assert_int_equal(duel("duel", 1500, "eu-west:36", "duel", 1500, EU20, 0, "eu-west"), 1);
    assert_int_equal(duel("duel", 1500, "eu-west:50", "duel", 1500, EU20, 3999, "eu-west"), 1);
    assert_int_equal(duel("duel", 1500, "eu-west:50", "duel", 1500, EU20, 4000, "eu-west"), 0);
    assert_int_equal(duel("duel", 1500, "eu-west:180", "duel", 1500, EU20, 99000, "eu-west"), 0);
    assert_int_equal(duel("duel", 1500, "eu-west:181", "duel", 1500, EU20, 99000, "eu-west"), 1);
}

/* The chosen datacenter is the assignment's: a ticket's ping to the other does not count;
 * a member without a ping to it breaks its limit. */
static void test_chosen_datacenter(void **state)
{
    const char *far_us = "eu-west:20,us-east:150";
    assert_int_equal(
        duel("duel", 1500, far_us, "duel", 1500, "eu-west:20,us-east:20", 0, "eu-west"), 0);
    assert_int_equal(
        duel("duel", 1500, far_us, "duel", 1500, "eu-west:20,us-east:20", 0, "us-east"), 1);
    assert_int_equal(duel("duel", 1500, EU20, "duel", 1500, "us-east:10", 0, "eu-west"), 1);
}

/* A young member's own limits hold even when the other waited long (asymmetric). */
static void test_per_member(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 100000);
    fx_ticket old = {"told", "duel", "po", {1500}, "eu-west:150", 0};
    fx_ticket young = {"tyoung", "duel", "py", {1600}, "eu-west:20", 88000};
    fx_queued(&f, &old, 0);
    fx_queued(&f, &young, 88000);
    fx_claimed(&f, &old, "m1", 90000);
    fx_claimed(&f, &young, "m1", 90000);
    fx_committed(&f, "m1", "told,tyoung", "eu-west", 90050);
    fx_assigned(&f, &old, "m1", "eu-west", 90050);
    fx_assigned(&f, &young, "m1", "eu-west", 90050);
    fx_only(&f, "limit_violations", 1, NULL);
    const gf_check_count *n = gf_check_report_find(f.r, "limit_violations");
    /* old: gap 600, ping 180 hold; young (2 s: gap 61.4) is 100 from old. */
    assert_non_null(strstr(n->examples[0], "tyoung"));
    assert_non_null(strstr(n->examples[0], "gap 61.4"));
    ck_fx_end(&f);
}

static void test_modes(void **state)
{
    /* sbmm: any ping up to the cap from the start. */
    assert_int_equal(duel("sduel", 1500, "eu-west:180", "sduel", 1500, EU20, 0, "eu-west"), 0);
    assert_int_equal(duel("sduel", 1500, "eu-west:181", "sduel", 1500, EU20, 0, "eu-west"), 1);
    assert_int_equal(duel("sduel", 1500, EU20, "sduel", 1551, EU20, 0, "eu-west"), 1);
    /* ping_first: skill ignored, ping curve. */
    assert_int_equal(duel("pduel", 1000, EU20, "pduel", 2500, EU20, 0, "eu-west"), 0);
    assert_int_equal(duel("pduel", 1500, "eu-west:40", "pduel", 1500, EU20, 0, "eu-west"), 1);
    /* A merged pool: a ping_first member ignores skill, the hybrid one does not. */
    assert_int_equal(duel("pduel", 1000, EU20, "duel", 1100, EU20, 0, "eu-west"), 1);
}

/* A party is one member with its average skill; its players share its limits. */
static void test_party(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 5000);
    fx_ticket party = {"tp", "pair", "p1,p2", {1400, 1600}, EU20, 0};
    fx_ticket s1 = {"ts1", "pair", "p3", {1520}, EU20, 0};
    fx_ticket s2 = {"ts2", "pair", "p4", {1480}, EU20, 0};
    fx_queued(&f, &party, 0);
    fx_queued(&f, &s1, 0);
    fx_queued(&f, &s2, 0);
    fx_claimed(&f, &party, "m1", 100);
    fx_claimed(&f, &s1, "m1", 100);
    fx_claimed(&f, &s2, "m1", 100);
    fx_committed(&f, "m1", "tp,ts1,ts2", "eu-west", 150);
    fx_assigned(&f, &party, "m1", "eu-west", 150);
    fx_assigned(&f, &s1, "m1", "eu-west", 150);
    fx_assigned(&f, &s2, "m1", "eu-west", 150);
    fx_all_zero(&f);
    ck_fx_end(&f);
}

/* A Match still in MATCHES gives the instant the match was formed. */
static void test_match_time(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 20000);
    fx_ticket a = {"ta", "duel", "pa", {1500}, EU20, 0};
    fx_ticket b = {"tb", "duel", "pb", {1600}, EU20, 0};
    fx_pair(&f, &a, &b, "m1", 0, 10000, "eu-west"); /* 10 s: gap 150.74 holds */
    Gamefn__V1__Match m = GAMEFN__V1__MATCH__INIT;
    m.match_id = "m1";
    m.created_unix_ms = T0; /* formed at 0: gap 50 */
    uint8_t buf[256];
    size_t len = gamefn__v1__match__pack(&m, buf);
    assert_int_equal(gf_check_match(f.c, buf, len), GF_OK);
    fx_only(&f, "limit_violations", 1, NULL);
    ck_fx_end(&f);
}

static void test_unchecked(void **state)
{
    /* No queue table: not checked at all. */
    gf_check_params p;
    gf_check_params_default(&p);
    p.now_ms = T0;
    gf_check *c = NULL;
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_new(&p, &c), GF_OK);
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    const gf_check_count *n = gf_check_report_find(r, "limit_violations");
    assert_false(n->checked);
    assert_non_null(strstr(n->detail, "queue table"));
    gf_check_free(c);
    /* A queue the table does not know: that match cannot be checked. */
    ck_fx f;
    ck_fx_start(&f, 5000);
    fx_ticket a = {"ta", "gone", "pa", {1500}, EU20, 0};
    fx_ticket b = {"tb", "duel", "pb", {1500}, EU20, 0};
    fx_pair(&f, &a, &b, "m1", 0, 100, "eu-west");
    fx_all_zero(&f);
    assert_int_equal(f.r->totals.limits_unchecked, 1);
    ck_fx_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skill_gap_at_zero),
        cmocka_unit_test(test_skill_gap_at_ten_seconds),
        cmocka_unit_test(test_ping_steps),
        cmocka_unit_test(test_chosen_datacenter),
        cmocka_unit_test(test_per_member),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_party),
        cmocka_unit_test(test_match_time),
        cmocka_unit_test(test_unchecked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
