/*
 * test_match_audit.c — the minimal pools of the independent audit of the engine (issue 7,
 * "Engine corrections"), one test per finding, each failing on the engine the audit
 * drove: a ticket at its caps is matched when a valid group holding it exists, a merge
 * only adds partners, the datacenter choice counts players and exact pings, a
 * ticket's region is that of its exact lowest ping, young parties are not held back by
 * the nearest solo player, 64-player parties in a 64v64 shape; and the two decisions
 * taken on its questions (an sbmm queue's flat ping limit, negative skills).
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

/* ---- 1: the oldest ticket no longer starves ------------------------------------------- */

static void test_capped_ticket_matched_when_a_group_exists(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_SBMM, "5v5");
    /* S is at both caps (250 s). The eight solos (20 s, gap 306.7) are its nearest, but
     * no solo fits with the parties at 1650; {S, P5, P4} is valid for every member
     * (spread 150 <= 150.74 for the 10 s parties, 600 for S) and nothing else holds S. */
    uint32_t s = fx_add(&F, 0, 250000, 1500, 1, "a:20");
    for (int i = 0; i < 8; i++)
        fx_add(&F, 0, 20000, 1380 + 2.5 * i, 1, "a:20");
    uint32_t p5 = fx_add(&F, 0, 10000, 1650, 5, "a:20");
    uint32_t p4 = fx_add(&F, 0, 10000, 1650, 4, "a:20");
    uint32_t y = fx_add(&F, 0, 0, 1650, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    const gf_match *m = fx_match_of(r, s);
    assert_non_null(m);
    assert_ptr_equal(fx_match_of(r, p5), m);
    assert_ptr_equal(fx_match_of(r, p4), m);
    assert_null(fx_match_of(r, y));
    assert_int_equal(m->seed, s);
    gf_match_result_free(r);

    /* Beyond the walk: with a window of 4 a 1v1 walk sees 16 tickets, here all nearer in
     * skill but in another datacenter. The exact search skips them (by the words of
     * acceptance bits) to the one partner in S's datacenter. */
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    F.cfg.search_window = 4;
    s = fx_add(&F, 0, 250000, 1500, 1, "a:20");
    for (int i = 0; i < 40; i++)
        fx_add(&F, 0, 1000 + i, 1500 + i, 1, "b:20");
    uint32_t far = fx_add(&F, 0, 100000, 1950, 1, "a:30");
    r = fx_tick(&F);
    m = fx_match_of(r, s);
    assert_non_null(m);
    assert_ptr_equal(fx_match_of(r, far), m);
    assert_true(m->starved);
    assert_int_equal(r->stats.exact_matches, 1);
    assert_int_equal(r->stats.exact_cut, 0);
    gf_match_result_free(r);
}

/* ---- 2: a merge only adds partners --------------------------------------------------- */

static void test_merge_keeps_own_queue_partners(void **state)
{
    (void)state;
    /* Datacenters a (region r1) and c (region r2); qa and qb in playlist pl, floor 2. */
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    F.queues[0].name = "qa";
    F.queues[0].playlist = "pl";
    F.queues[0].population_floor = 2;
    uint32_t qb = fx_queue(&F, "qb", GF_MATCH_HYBRID, "1v1", "pl");
    F.queues[qb].population_floor = 2;
    uint32_t n1 = fx_add(&F, 0, 50000, 1500, 1, "a:20");
    uint32_t n2 = fx_add(&F, 0, 40000, 1500, 1, "a:20");
    uint32_t n3 = fx_add(&F, 0, 30000, 1500, 1, "a:20 c:30");
    uint32_t e = fx_add(&F, 0, 60000, 1500, 1, "a:25 c:30");
    F.t[e].region = 1; /* r2, where qa has one player: merged there only */
    gf_match_result *r = fx_tick(&F);
    size_t nreg = gf_match_config_regions(&F.cfg);
    assert_true(r->pools[0 * nreg + 1].merged);
    assert_false(r->pools[0 * nreg + 0].merged);
    /* e, moved into the playlist's pool, still meets n3 of its own queue: two matches, as
     * without the playlist. */
    assert_int_equal(r->matches_len, 2);
    assert_ptr_equal(fx_match_of(r, e), fx_match_of(r, n3));
    assert_ptr_equal(fx_match_of(r, n1), fx_match_of(r, n2));
    assert_false(fx_match_of(r, e)->merged); /* formed in its queue's pool */
    gf_match_result_free(r);

    /* A qb ticket in r2 joins the merged pool: e meets it there (the merge adds partners),
     * while the r1 tickets of qa never meet it. */
    uint32_t f = fx_add(&F, qb, 70000, 1500, 1, "a:40 c:20");
    F.t[f].region = 1;
    r = fx_tick(&F);
    assert_int_equal(r->matches_len, 2);
    const gf_match *m = fx_match_of(r, f);
    assert_non_null(m);
    assert_ptr_equal(fx_match_of(r, e), m);
    assert_true(m->merged);
    assert_null(fx_match_of(r, n3));
    assert_int_equal(fx_unmatched(r, n3)->why, GF_MATCH_WHY_POPULATION);
    gf_match_result_free(r);
}

/* ---- 3: the datacenter choice counts every player ------------------------------------ */

static void test_datacenter_choice_counts_players(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "2v2");
    /* Per player: a = 2 x 10 + 40 + 40 = 100, b = 2 x 50 + 10 + 10 = 120 -> a. Per ticket
     * (the party counted once) b would win, 70 against 90. */
    uint32_t p = fx_add(&F, 0, 60000, 1500, 2, "a:10 b:50");
    fx_add(&F, 0, 60000, 1500, 1, "a:40 b:10");
    fx_add(&F, 0, 60000, 1500, 1, "a:40 b:10");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    const gf_match *m = fx_match_of(r, p);
    assert_non_null(m);
    assert_int_equal(m->dcs_len, 2);
    assert_int_equal(m->dcs[0].dc, 0);
    assert_int_equal(m->dcs[0].total_ping_ms, 100);
    assert_int_equal(m->dcs[0].max_ping_ms, 40);
    assert_int_equal(m->dcs[1].dc, 1); /* the fallback, ranked the same way */
    assert_int_equal(m->dcs[1].total_ping_ms, 120);
    gf_match_result_free(r);

    /* The public ranking weighs by players too. */
    const uint16_t party[2] = {10, 50}, solo[2] = {40, 10};
    gf_match_dc_member mb[3] = {{party, 180, 2, NULL}, {solo, 180, 1, NULL}, {solo, 180, 1, NULL}};
    gf_match_dc_choice out[2];
    assert_int_equal(gf_match_dc_rank(mb, 3, 2, out), 2);
    assert_int_equal(out[0].dc, 0);
    assert_int_equal(out[0].total_ping_ms, 100);
}

/* ---- 4: choices on exact pings; limits as before ------------------------------------ */

static void test_choices_on_exact_pings(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    /* b totals 20.02 against a's 21; rounded up first, a would win (21 against 22). */
    uint32_t x = fx_add(&F, 0, 60000, 1500, 1, "a:10 b:10.01");
    fx_add(&F, 0, 60000, 1500, 1, "a:11 b:10.01");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    const gf_match *m = fx_match_of(r, x);
    assert_int_equal(m->dcs_len, 2);
    assert_int_equal(m->dcs[0].dc, 1);
    assert_int_equal(m->dcs[1].dc, 0);
    gf_match_result_free(r);

    /* The public ranking, given the exact values. */
    const uint16_t rx[2] = {10, 11}, ry[2] = {11, 11};
    const double ex[2] = {10, 10.01}, ey[2] = {11, 10.01};
    gf_match_dc_member mb[2] = {{rx, 180, 1, ex}, {ry, 180, 1, ey}};
    gf_match_dc_choice out[2];
    assert_int_equal(gf_match_dc_rank(mb, 2, 2, out), 2);
    assert_int_equal(out[0].dc, 1);

    /* A ticket's region is that of its exact lowest ping: c (r2) at 20.3, not a (r1) at
     * 20.4, though both round up to 21. Limits still compare exactly: 35.5 is over 35. */
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    fx_add(&F, 0, 0, 1500, 1, "a:20.4 c:20.3");
    uint32_t y = fx_add(&F, 0, 0, 1500, 1, "a:35.5");
    r = fx_tick(&F);
    size_t nreg = gf_match_config_regions(&F.cfg);
    assert_int_equal(r->pools[0 * nreg + 1].players, 1); /* r2 */
    assert_int_equal(r->pools[0 * nreg + 0].players, 1); /* r1: y */
    assert_int_equal(fx_unmatched(r, y)->why, GF_MATCH_WHY_PING);
    gf_match_result_free(r);
}

/* ---- 6: young parties are not held back by the nearest solo player ------------------- */

static void test_parties_first_when_the_walk_falls_short(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "2v2");
    /* {P1, P2} is valid (20 apart; gaps 150.7 and 89.5); S is nearer to each, and once a
     * seed takes it no party fits. The walk saw P2, so a retry parties first finds it. */
    uint32_t p1 = fx_add(&F, 0, 10000, 1500, 2, "a:20");
    uint32_t p2 = fx_add(&F, 0, 5000, 1520, 2, "a:20");
    uint32_t s = fx_add(&F, 0, 0, 1505, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    const gf_match *m = fx_match_of(r, p1);
    assert_non_null(m);
    assert_ptr_equal(fx_match_of(r, p2), m);
    assert_null(fx_match_of(r, s));
    assert_false(m->starved);
    gf_match_result_free(r);
}

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

/* ---- the two decisions -------------------------------------------------------------- */

static void test_decisions_sbmm_ping_cap_and_negative_skills(void **state)
{
    (void)state;
    /* An sbmm queue accepts ping_cap from the start (it trades ping for skill): two fresh
     * tickets meet on a 170 ms server; a studio tightens it with the queue's own ping
     * parameters. */
    fx_init(&F, GF_MATCH_SBMM, "1v1");
    uint32_t a = fx_add(&F, 0, 0, 1500, 1, "a:170");
    fx_add(&F, 0, 0, 1510, 1, "a:165");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    assert_int_equal(fx_match_of(r, a)->members[0].allowed_ping_ms, 180);
    gf_match_result_free(r);
    F.queues[0].curve.ping_cap_ms = 100;
    r = fx_tick(&F);
    assert_int_equal(r->matches_len, 0);
    assert_int_equal(fx_unmatched(r, a)->why, GF_MATCH_WHY_PING);
    gf_match_result_free(r);

    /* Negative skills are valid (conservative ratings can be negative) and compare as
     * any others. */
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    uint32_t n1 = fx_add(&F, 0, 0, -120, 1, "a:20");
    uint32_t n2 = fx_add(&F, 0, 0, -100, 1, "a:20");
    uint32_t far = fx_add(&F, 0, 0, -300, 1, "a:20");
    r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    assert_ptr_equal(fx_match_of(r, n1), fx_match_of(r, n2));
    assert_null(fx_match_of(r, far)); /* 180 below: over both fresh gaps */
    gf_match_result_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capped_ticket_matched_when_a_group_exists),
        cmocka_unit_test(test_merge_keeps_own_queue_partners),
        cmocka_unit_test(test_datacenter_choice_counts_players),
        cmocka_unit_test(test_choices_on_exact_pings),
        cmocka_unit_test(test_parties_first_when_the_walk_falls_short),
        cmocka_unit_test(test_64v64_two_parties_of_64),
        cmocka_unit_test(test_decisions_sbmm_ping_cap_and_negative_skills),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
