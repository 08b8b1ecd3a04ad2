/*
 * test_match_tick.c — behaviour of one tick on small, hand-built pools: each player's own
 * limits (the asymmetric case), datacenter choice, teams, oldest first, starvation,
 * low-population merge, match attributes, why-not-matched reasons, determinism, and the
 * reusable workspace.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/match/rules.h"
#include "gamefn/match/tick.h"
#include "match_fixture.h"

static fx F;

static const gf_match_member *member_of(const gf_match *m, uint32_t ticket)
{
    for (uint32_t k = 0; k < m->members_len; k++) {
        if (m->members[k].ticket == ticket)
            return &m->members[k];
    }
    return NULL;
}

/* ---- each player's own limits ------------------------------------------------------ */

static void test_fresh_ticket_not_pulled_into_far_server(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    /* The only datacenter both measured is c: 10 ms for the 90 s ticket, 150 ms for the
     * 2 s ticket, whose own limit is 35 ms. */
    uint32_t old = fx_add(&F, 0, 90000, 1500, 1, "a:20 c:10");
    uint32_t fresh = fx_add(&F, 0, 2000, 1500, 1, "b:20 c:150");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 0);
    const gf_match_unmatched *u = fx_unmatched(r, fresh);
    assert_non_null(u);
    assert_int_equal(u->why, GF_MATCH_WHY_PING);
    gf_match_result_free(r);

    /* Once the fresh ticket has waited long enough for 150 ms (35 + 15 * 8 = 155 at 32 s)
     * they match, in c, and the result reports each one's own limits. */
    F.t[fresh].queued_ms = FX_NOW - 32000;
    r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    const gf_match *m = &r->matches[0];
    assert_int_equal(m->dcs_len, 1);
    assert_int_equal(m->dcs[0].dc, 2);
    assert_int_equal(member_of(m, fresh)->allowed_ping_ms, 155);
    assert_int_equal(member_of(m, old)->allowed_ping_ms, 180);
    assert_int_equal(member_of(m, fresh)->ping_ms, 150);
    assert_int_equal(m->region, 1); /* c is in r2, the second region */
    gf_match_result_free(r);
}

static void test_fresh_ticket_skill_limit_is_its_own(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    /* The old ticket would accept a 200 gap (its gap is 600); the fresh one (50) not. */
    uint32_t old = fx_add(&F, 0, 90000, 1500, 1, "a:20");
    uint32_t fresh = fx_add(&F, 0, 1000, 1700, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 0);
    const gf_match_unmatched *u = fx_unmatched(r, fresh);
    assert_int_equal(u->why, GF_MATCH_WHY_SKILL);
    assert_int_equal(u->miss.other, old);
    assert_true(u->miss.own_limit);
    assert_true(fabs(u->miss.skill_gap - 200) < 1e-9);
    assert_true(fabs(u->miss.allowed_gap - gf_match_rules_skill_gap(&F.queues[0].curve, 1000, 0)) <
                1e-9);
    u = fx_unmatched(r, old);
    assert_int_equal(u->why, GF_MATCH_WHY_SKILL);
    assert_false(u->miss.own_limit); /* the old ticket is held back by the fresh one's limit */
    gf_match_result_free(r);
}

/* ---- datacenter choice ------------------------------------------------------------------ */

static void test_datacenter_choice_and_fallbacks(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    /* Both at 60 s (ping limit 180). Totals: a 40+100=140, b 70+60=130, c 30+90=120,
     * d only measured by one. Chosen c, then b, then a. */
    uint32_t x = fx_add(&F, 0, 60000, 1500, 1, "a:40 b:70 c:30 d:5");
    uint32_t y = fx_add(&F, 0, 60000, 1500, 1, "a:100 b:60 c:90");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    const gf_match *m = &r->matches[0];
    assert_int_equal(m->dcs_len, 3);
    assert_int_equal(m->dcs[0].dc, 2);
    assert_int_equal(m->dcs[0].total_ping_ms, 120);
    assert_int_equal(m->dcs[0].max_ping_ms, 90);
    assert_int_equal(m->dcs[1].dc, 1);
    assert_int_equal(m->dcs[2].dc, 0);
    assert_int_equal(member_of(m, x)->ping_ms, 30);
    assert_int_equal(member_of(m, y)->ping_ms, 90);
    gf_match_result_free(r);
}

static void test_missing_ping_excludes_datacenter(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    /* a would be best by far, but y did not measure it. */
    fx_add(&F, 0, 60000, 1500, 1, "a:1 b:50");
    fx_add(&F, 0, 60000, 1500, 1, "b:50 c:60");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    assert_int_equal(r->matches[0].dcs_len, 1);
    assert_int_equal(r->matches[0].dcs[0].dc, 1);
    gf_match_result_free(r);
}

static void test_no_common_datacenter(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    uint32_t x = fx_add(&F, 0, 60000, 1500, 1, "a:20");
    fx_add(&F, 0, 60000, 1500, 1, "b:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 0);
    assert_int_equal(fx_unmatched(r, x)->why, GF_MATCH_WHY_NO_COMMON_DC);
    gf_match_result_free(r);
}

/* ---- teams ------------------------------------------------------------------------------ */

static void test_2v2_party_kept_whole_and_balanced(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_SBMM, "2v2");
    uint32_t party = fx_add(&F, 0, 60000, 1500, 2, "a:20");
    uint32_t lo = fx_add(&F, 0, 60000, 1400, 1, "a:20");
    uint32_t hi = fx_add(&F, 0, 60000, 1600, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    const gf_match *m = &r->matches[0];
    assert_int_equal(m->members_len, 3);
    /* The party is one member (one team); the two solos form the other team. */
    assert_int_not_equal(member_of(m, party)->team, member_of(m, lo)->team);
    assert_int_equal(member_of(m, lo)->team, member_of(m, hi)->team);
    assert_true(fabs(m->team_skill_diff - 0) < 1e-9); /* 3000 vs 1400 + 1600 */
    /* Members are grouped by team, team 0 first. */
    assert_true(m->members[0].team <= m->members[m->members_len - 1].team);
    gf_match_result_free(r);
}

static void test_5v5_with_parties(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_SBMM, "5v5");
    fx_add(&F, 0, 60000, 1500, 3, "a:20");
    fx_add(&F, 0, 60000, 1520, 2, "a:20");
    fx_add(&F, 0, 60000, 1480, 2, "a:20");
    fx_add(&F, 0, 60000, 1510, 1, "a:20");
    fx_add(&F, 0, 60000, 1490, 1, "a:20");
    fx_add(&F, 0, 60000, 1505, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    const gf_match *m = &r->matches[0];
    int players[2] = {0, 0};
    for (uint32_t k = 0; k < m->members_len; k++)
        players[m->members[k].team] += (int)F.t[m->members[k].ticket].players_len;
    assert_int_equal(players[0], 5);
    assert_int_equal(players[1], 5);
    gf_match_result_free(r);
}

static void test_free_for_all(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_SBMM, "ffa8");
    for (int i = 0; i < 8; i++)
        fx_add(&F, 0, 60000, 1500 + i, 1, "a:20 b:30");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    uint32_t teams = 0;
    for (uint32_t k = 0; k < r->matches[0].members_len; k++)
        teams |= 1u << r->matches[0].members[k].team;
    assert_int_equal(teams, 0xff);
    gf_match_result_free(r);
}

/* ---- oldest first, starvation ----------------------------------------------------------- */

static void test_oldest_ticket_seeds_first(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    /* y and z are the closest pair, but x has waited longest and can match y. */
    uint32_t x = fx_add(&F, 0, 60000, 1500, 1, "a:20");
    uint32_t y = fx_add(&F, 0, 5000, 1560, 1, "a:20");
    uint32_t z = fx_add(&F, 0, 5000, 1561, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    assert_non_null(fx_match_of(r, x));
    assert_ptr_equal(fx_match_of(r, x), fx_match_of(r, y));
    assert_null(fx_match_of(r, z));
    assert_int_equal(fx_unmatched(r, z)->why, GF_MATCH_WHY_POPULATION);
    gf_match_result_free(r);
}

static void test_starvation_old_ticket_matched_when_any_group_exists(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "2v2");
    /* The old seed's nearest neighbour is fresh (gap 50): taking it first would leave no
     * room for anyone else. */
    uint32_t seed = fx_add(&F, 0, 120000, 1500, 1, "a:20");
    uint32_t near = fx_add(&F, 0, 1000, 1510, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 0);
    gf_match_result_free(r);

    /* Three old tickets 100..120 away appear: a valid group {seed, them} now exists. */
    uint32_t o[3];
    for (int i = 0; i < 3; i++)
        o[i] = fx_add(&F, 0, 100000, 1600 + 10 * i, 1, "a:20");
    r = fx_tick(&F);
    const gf_match *m = fx_match_of(r, seed);
    assert_non_null(m);
    for (int i = 0; i < 3; i++)
        assert_ptr_equal(fx_match_of(r, o[i]), m);
    assert_null(fx_match_of(r, near));
    /* The nearest-first walk took `near` and fell short: the fallback formed this one. */
    assert_true(m->starved);
    gf_match_result_free(r);

    /* Without `near` in the way the walk itself finds the group: not a fallback match. */
    F.t[near].queue = 99; /* refused (no such queue), out of the pool */
    r = fx_tick(&F);
    m = fx_match_of(r, seed);
    assert_non_null(m);
    assert_false(m->starved);
    gf_match_result_free(r);
}

/* ---- low-population merge ------------------------------------------------------------ */

static void test_low_population_merge_on_and_off(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_SBMM, "1v1");
    F.queues[0].name = "ranked-sbmm";
    F.queues[0].playlist = "ranked";
    uint32_t pf = fx_queue(&F, "ranked-ping", GF_MATCH_PING_FIRST, "1v1", "ranked");
    /* One sbmm and one ping_first ticket in r1, compatible under each one's own rules. */
    uint32_t s1 = fx_add(&F, 0, 1000, 1500, 1, "a:20");
    uint32_t p1 = fx_add(&F, pf, 1000, 1520, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1); /* 1 player per queue < floor 1000: merged */
    assert_true(r->matches[0].merged);
    assert_ptr_equal(fx_match_of(r, s1), fx_match_of(r, p1));
    assert_true(r->pools[0].merged); /* queue 0, region r1 */
    assert_int_equal(r->pools[0].players, 1);
    gf_match_result_free(r);

    /* Floors of 1: both queues are at their floor, so they stay split. */
    F.queues[0].population_floor = 1;
    F.queues[pf].population_floor = 1;
    r = fx_tick(&F);
    assert_int_equal(r->matches_len, 0);
    assert_false(r->pools[0].merged);
    assert_int_equal(fx_unmatched(r, s1)->why, GF_MATCH_WHY_POPULATION);
    gf_match_result_free(r);
}

static void test_merged_tickets_keep_their_own_rules(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_SBMM, "1v1");
    F.queues[0].playlist = "ranked";
    uint32_t pf = fx_queue(&F, "ranked-ping", GF_MATCH_PING_FIRST, "1v1", "ranked");
    /* The ping_first ticket accepts any skill; the fresh sbmm one still needs a close one. */
    uint32_t s = fx_add(&F, 0, 1000, 1800, 1, "a:20");
    uint32_t p = fx_add(&F, pf, 2000, 1000, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 0);
    assert_int_equal(fx_unmatched(r, s)->why, GF_MATCH_WHY_SKILL);
    gf_match_result_free(r);
    /* Another ping_first ticket, far in skill: the two ping_first tickets match. */
    uint32_t p2 = fx_add(&F, pf, 1000, 2500, 1, "a:20");
    r = fx_tick(&F);
    assert_int_equal(r->matches_len, 1);
    assert_ptr_equal(fx_match_of(r, p), fx_match_of(r, p2));
    assert_null(fx_match_of(r, s));
    gf_match_result_free(r);
}

static void test_merge_only_in_the_low_region(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_SBMM, "1v1");
    F.queues[0].playlist = "ranked";
    F.queues[0].population_floor = 2;
    uint32_t h = fx_queue(&F, "ranked-hybrid", GF_MATCH_HYBRID, "1v1", "ranked");
    F.queues[h].population_floor = 2;
    /* r1 (datacenter a): two sbmm + two hybrid players: at the floor, split.
     * r3 (datacenter d): one of each: merged. */
    fx_add(&F, 0, 60000, 1500, 1, "a:20");
    fx_add(&F, 0, 60000, 1500, 1, "a:20");
    uint32_t h1 = fx_add(&F, h, 60000, 1500, 1, "a:20");
    uint32_t h2 = fx_add(&F, h, 60000, 1500, 1, "a:20");
    uint32_t ds = fx_add(&F, 0, 60000, 1500, 1, "d:20");
    uint32_t dh = fx_add(&F, h, 60000, 1500, 1, "d:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 3);
    assert_ptr_equal(fx_match_of(r, h1), fx_match_of(r, h2));
    assert_false(fx_match_of(r, h1)->merged);
    assert_ptr_equal(fx_match_of(r, ds), fx_match_of(r, dh));
    assert_true(fx_match_of(r, ds)->merged);
    assert_int_equal(fx_match_of(r, ds)->region, 2); /* r3 */
    gf_match_result_free(r);
}

/* ---- attributes ---------------------------------------------------------------------- */

static void test_match_attributes(void **state)
{
    (void)state;
    static const char *keys[] = {"platform"};
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    F.queues[0].match_attributes = keys;
    F.queues[0].match_attributes_len = 1;
    static gf_match_attr pc[1] = {{"platform", "pc"}}, console[1] = {{"platform", "console"}};
    uint32_t a = fx_add(&F, 0, 60000, 1500, 1, "a:20");
    uint32_t b = fx_add(&F, 0, 60000, 1500, 1, "a:20");
    uint32_t c = fx_add(&F, 0, 60000, 1501, 1, "a:20");
    uint32_t d = fx_add(&F, 0, 60000, 1501, 1, "a:20");
    F.t[a].attrs = pc;
    F.t[b].attrs = console;
    F.t[c].attrs = pc;
    F.t[d].attrs = console;
    F.t[a].attrs_len = F.t[b].attrs_len = F.t[c].attrs_len = F.t[d].attrs_len = 1;
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 2);
    assert_ptr_equal(fx_match_of(r, a), fx_match_of(r, c));
    assert_ptr_equal(fx_match_of(r, b), fx_match_of(r, d));
    assert_int_equal(r->stats.partitions, 2);
    gf_match_result_free(r);
}

/* ---- why not matched -------------------------------------------------------------------- */

static void test_why_population_and_expired(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "5v5");
    uint32_t lone = fx_add(&F, 0, 10000, 1500, 2, "a:20");
    uint32_t old = fx_add(&F, 0, 6 * 60000, 1500, 1, "a:20"); /* TTL 5 min */
    gf_match_result *r = fx_tick(&F);
    const gf_match_unmatched *u = fx_unmatched(r, lone);
    assert_int_equal(u->why, GF_MATCH_WHY_POPULATION);
    assert_int_equal(u->miss.players_short, 8);
    assert_int_equal(fx_unmatched(r, old)->why, GF_MATCH_WHY_EXPIRED);
    assert_int_equal(r->stats.expired, 1);
    assert_int_equal(r->unmatched_len, 2);
    gf_match_result_free(r);
}

static void test_why_ping(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    /* Own limit accepts nothing: best 50 ms, limit 35. */
    uint32_t far = fx_add(&F, 0, 1000, 1500, 1, "a:50 b:70");
    /* A common datacenter both measured, over someone's limit. */
    uint32_t x = fx_add(&F, 0, 1000, 1500, 1, "c:30 d:100");
    fx_add(&F, 0, 1000, 1500, 1, "c:100 d:30");
    gf_match_result *r = fx_tick(&F);
    const gf_match_unmatched *u = fx_unmatched(r, far);
    assert_int_equal(u->why, GF_MATCH_WHY_PING);
    assert_true(u->miss.own_limit);
    assert_int_equal(u->miss.dc, 0);
    assert_int_equal(u->miss.ping_ms, 50);
    assert_int_equal(u->miss.allowed_ping_ms, 35);
    u = fx_unmatched(r, x);
    assert_int_equal(u->why, GF_MATCH_WHY_PING);
    assert_int_equal(u->miss.allowed_ping_ms, 35);
    assert_int_equal(u->miss.ping_ms, 100);
    gf_match_result_free(r);
}

static void test_why_shape(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_SBMM, "5v5");
    /* Three parties of 3 and a solo: ten players, but no team can hold two parties of 3. */
    uint32_t t0 = fx_add(&F, 0, 60000, 1500, 3, "a:20");
    fx_add(&F, 0, 60000, 1500, 3, "a:20");
    fx_add(&F, 0, 60000, 1500, 3, "a:20");
    fx_add(&F, 0, 60000, 1500, 1, "a:20");
    gf_match_result *r = fx_tick(&F);
    assert_int_equal(r->matches_len, 0);
    assert_int_equal(fx_unmatched(r, t0)->why, GF_MATCH_WHY_SHAPE);
    gf_match_result_free(r);
}

/* ---- determinism, workspace ------------------------------------------------------------ */

static void pool_random(fx *f, unsigned seed, int n)
{
    srand(seed);
    fx_init(f, GF_MATCH_HYBRID, "5v5");
    static const char *const pings[] = {"a:20 b:60", "a:50 b:25 c:90", "c:30 d:70", "b:40 d:20",
                                        "a:35 b:35 c:35 d:35"};
    for (int i = 0; i < n; i++)
        fx_add(f, 0, rand() % 90000, 1200 + rand() % 600, 1 + (rand() % 10 == 0) * 2,
               pings[rand() % 5]);
}

static bool same_result(const gf_match_result *a, const gf_match_result *b)
{
    if (a->matches_len != b->matches_len || a->unmatched_len != b->unmatched_len)
        return false;
    for (size_t i = 0; i < a->matches_len; i++) {
        const gf_match *x = &a->matches[i], *y = &b->matches[i];
        if (x->members_len != y->members_len || x->dcs_len != y->dcs_len ||
            memcmp(x->dcs, y->dcs, x->dcs_len * sizeof *x->dcs) != 0)
            return false;
        for (uint32_t k = 0; k < x->members_len; k++) {
            if (x->members[k].ticket != y->members[k].ticket ||
                x->members[k].team != y->members[k].team)
                return false;
        }
    }
    for (size_t i = 0; i < a->unmatched_len; i++) {
        if (a->unmatched[i].ticket != b->unmatched[i].ticket ||
            a->unmatched[i].why != b->unmatched[i].why)
            return false;
    }
    return true;
}

static void test_deterministic_and_workspace_identical(void **state)
{
    (void)state;
    gf_match_workspace *ws = NULL;
    assert_int_equal(gf_match_workspace_create(&ws), GF_OK);
    gf_match_result *keep = NULL;
    for (unsigned seed = 1; seed <= 20; seed++) {
        pool_random(&F, seed, 200 + (int)seed * 10);
        gf_match_result *a = fx_tick(&F), *b = fx_tick(&F), *c = NULL;
        assert_int_equal(gf_match_tick_ws(ws, &F.cfg, F.t, F.n, FX_NOW, &c), GF_OK);
        assert_true(same_result(a, b));
        assert_true(same_result(a, c));
        assert_true(a->matches_len > 0);
        gf_match_result_free(a);
        gf_match_result_free(b);
        if (seed == 20)
            keep = c; /* outlives the workspace below */
        else
            gf_match_result_free(c);
    }
    assert_true(gf_match_workspace_bytes(ws) > 0);
    gf_match_workspace_free(ws);
    /* Still readable, then released (the workspace goes with its last result). */
    assert_true(keep->matches_len > 0 && keep->matches[0].members_len > 0);
    gf_match_result_free(keep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_ticket_not_pulled_into_far_server),
        cmocka_unit_test(test_fresh_ticket_skill_limit_is_its_own),
        cmocka_unit_test(test_datacenter_choice_and_fallbacks),
        cmocka_unit_test(test_missing_ping_excludes_datacenter),
        cmocka_unit_test(test_no_common_datacenter),
        cmocka_unit_test(test_2v2_party_kept_whole_and_balanced),
        cmocka_unit_test(test_5v5_with_parties),
        cmocka_unit_test(test_free_for_all),
        cmocka_unit_test(test_oldest_ticket_seeds_first),
        cmocka_unit_test(test_starvation_old_ticket_matched_when_any_group_exists),
        cmocka_unit_test(test_low_population_merge_on_and_off),
        cmocka_unit_test(test_merged_tickets_keep_their_own_rules),
        cmocka_unit_test(test_merge_only_in_the_low_region),
        cmocka_unit_test(test_match_attributes),
        cmocka_unit_test(test_why_population_and_expired),
        cmocka_unit_test(test_why_ping),
        cmocka_unit_test(test_why_shape),
        cmocka_unit_test(test_deterministic_and_workspace_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
