/*
 * test_match_ticket.c — malformed tickets are refused with a reason, never crash, and
 * change nothing for the rest of the pool; pool-wide duplicates keep the oldest holder.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/match/tick.h"
#include "match_fixture.h"

static fx F;

/* A good 5v5 solo ticket at index 0 of a fresh fixture. */
static gf_match_ticket *good(void)
{
    fx_init(&F, GF_MATCH_HYBRID, "5v5");
    fx_add(&F, 0, 1000, 1500, 1, "a:20 b:40");
    return &F.t[0];
}

typedef struct bad_case {
    const char *what;
    void (*mutate)(uint32_t i); /* breaks ticket i of F */
    gf_match_bad want;
} bad_case;

static gf_match_player party6[6], party2dup[2], player_null[1], player_empty[1];
static gf_match_ping pings_dup[2], ping_unknown[1];
static gf_match_attr attrs_many[17], attrs_dup[2], attr_null[1];
static char long_id[80];

static void m_nan_skill(uint32_t i)
{
    F.players[i][0].skill = NAN;
}
static void m_inf_skill(uint32_t i)
{
    F.players[i][0].skill = INFINITY;
}
static void m_neg_inf_skill(uint32_t i)
{
    F.players[i][0].skill = -INFINITY;
}
static void m_huge_skill(uint32_t i)
{
    F.players[i][0].skill = 2e6;
}
static void m_nan_sigma(uint32_t i)
{
    F.players[i][0].sigma = NAN;
}
static void m_neg_sigma(uint32_t i)
{
    F.players[i][0].sigma = -1;
}
static void m_inf_sigma(uint32_t i)
{
    F.players[i][0].sigma = INFINITY;
}
static void m_neg_ping(uint32_t i)
{
    F.pings[i][1].ms = -3;
}
static void m_nan_ping(uint32_t i)
{
    F.pings[i][0].ms = NAN;
}
static void m_inf_ping(uint32_t i)
{
    F.pings[i][0].ms = INFINITY;
}
static void m_absurd_ping(uint32_t i)
{
    F.pings[i][0].ms = 6000;
}
static void m_no_pings(uint32_t i)
{
    F.t[i].pings_len = 0;
}
static void m_null_pings(uint32_t i)
{
    F.t[i].pings = NULL;
}
static void m_unknown_dc(uint32_t i)
{
    ping_unknown[0] = (gf_match_ping){99, 20};
    F.t[i].pings = ping_unknown;
    F.t[i].pings_len = 1;
}
static void m_dup_dc(uint32_t i)
{
    pings_dup[0] = (gf_match_ping){1, 20};
    pings_dup[1] = (gf_match_ping){1, 30};
    F.t[i].pings = pings_dup;
    F.t[i].pings_len = 2;
}
static void m_too_many_pings(uint32_t i)
{
    F.t[i].pings_len = GF_MATCH_MAX_DCS + 1;
}
static void m_party_too_big(uint32_t i)
{
    for (int k = 0; k < 6; k++)
        party6[k] = (gf_match_player){"px", 1500, 0};
    F.t[i].players = party6;
    F.t[i].players_len = 6;
}
static void m_no_players(uint32_t i)
{
    F.t[i].players_len = 0;
}
static void m_null_players(uint32_t i)
{
    F.t[i].players = NULL;
}
static void m_null_id(uint32_t i)
{
    F.t[i].id = NULL;
}
static void m_empty_id(uint32_t i)
{
    F.t[i].id = "";
}
static void m_long_id(uint32_t i)
{
    memset(long_id, 'x', 65);
    long_id[65] = '\0';
    F.t[i].id = long_id;
}
static void m_null_player_id(uint32_t i)
{
    player_null[0] = (gf_match_player){NULL, 1500, 0};
    F.t[i].players = player_null;
}
static void m_empty_player_id(uint32_t i)
{
    player_empty[0] = (gf_match_player){"", 1500, 0};
    F.t[i].players = player_empty;
}
static void m_dup_player_in_party(uint32_t i)
{
    party2dup[0] = (gf_match_player){"same", 1500, 0};
    party2dup[1] = (gf_match_player){"same", 1400, 0};
    F.t[i].players = party2dup;
    F.t[i].players_len = 2;
}
static void m_bad_queue(uint32_t i)
{
    F.t[i].queue = 7;
}
static void m_bad_region(uint32_t i)
{
    F.t[i].region = 9;
}
static void m_future(uint32_t i)
{
    F.t[i].queued_ms = FX_NOW + 60000;
}
static void m_negative_time(uint32_t i)
{
    F.t[i].queued_ms = -1;
}
static void m_ancient(uint32_t i)
{
    F.t[i].queued_ms = FX_NOW - 8LL * 24 * 3600 * 1000;
}
static void m_null_attrs(uint32_t i)
{
    F.t[i].attrs = NULL;
    F.t[i].attrs_len = 1;
}
static void m_many_attrs(uint32_t i)
{
    for (int k = 0; k < 17; k++)
        attrs_many[k] = (gf_match_attr){"k", "v"};
    F.t[i].attrs = attrs_many;
    F.t[i].attrs_len = 17;
}
static void m_dup_attr(uint32_t i)
{
    attrs_dup[0] = (gf_match_attr){"platform", "pc"};
    attrs_dup[1] = (gf_match_attr){"platform", "console"};
    F.t[i].attrs = attrs_dup;
    F.t[i].attrs_len = 2;
}
static void m_null_attr_key(uint32_t i)
{
    attr_null[0] = (gf_match_attr){NULL, "v"};
    F.t[i].attrs = attr_null;
    F.t[i].attrs_len = 1;
}

static const bad_case cases[] = {
    {"NaN skill", m_nan_skill, GF_MATCH_BAD_SKILL},
    {"+inf skill", m_inf_skill, GF_MATCH_BAD_SKILL},
    {"-inf skill", m_neg_inf_skill, GF_MATCH_BAD_SKILL},
    {"skill beyond 1e6", m_huge_skill, GF_MATCH_BAD_SKILL},
    {"NaN sigma", m_nan_sigma, GF_MATCH_BAD_SIGMA},
    {"negative sigma", m_neg_sigma, GF_MATCH_BAD_SIGMA},
    {"infinite sigma", m_inf_sigma, GF_MATCH_BAD_SIGMA},
    {"negative ping", m_neg_ping, GF_MATCH_BAD_PING},
    {"NaN ping", m_nan_ping, GF_MATCH_BAD_PING},
    {"infinite ping", m_inf_ping, GF_MATCH_BAD_PING},
    {"absurd ping", m_absurd_ping, GF_MATCH_BAD_PING},
    {"no datacenters", m_no_pings, GF_MATCH_BAD_NO_DC},
    {"NULL pings", m_null_pings, GF_MATCH_BAD_NO_DC},
    {"unknown datacenter", m_unknown_dc, GF_MATCH_BAD_UNKNOWN_DC},
    {"datacenter twice", m_dup_dc, GF_MATCH_BAD_DUP_DC},
    {"more pings than datacenters", m_too_many_pings, GF_MATCH_BAD_DUP_DC},
    {"party larger than a team", m_party_too_big, GF_MATCH_BAD_PARTY_SIZE},
    {"no players", m_no_players, GF_MATCH_BAD_NO_PLAYERS},
    {"NULL players", m_null_players, GF_MATCH_BAD_NO_PLAYERS},
    {"NULL ticket id", m_null_id, GF_MATCH_BAD_ID},
    {"empty ticket id", m_empty_id, GF_MATCH_BAD_ID},
    {"65-byte ticket id", m_long_id, GF_MATCH_BAD_ID},
    {"NULL player id", m_null_player_id, GF_MATCH_BAD_PLAYER_ID},
    {"empty player id", m_empty_player_id, GF_MATCH_BAD_PLAYER_ID},
    {"player twice in a party", m_dup_player_in_party, GF_MATCH_BAD_DUP_PLAYER},
    {"unknown queue", m_bad_queue, GF_MATCH_BAD_QUEUE},
    {"unknown region", m_bad_region, GF_MATCH_BAD_REGION},
    {"queued a minute in the future", m_future, GF_MATCH_BAD_TIME},
    {"negative queue time", m_negative_time, GF_MATCH_BAD_TIME},
    {"queued 8 days ago", m_ancient, GF_MATCH_BAD_TIME},
    {"NULL attributes", m_null_attrs, GF_MATCH_BAD_ATTR},
    {"17 attributes", m_many_attrs, GF_MATCH_BAD_ATTR},
    {"attribute key twice", m_dup_attr, GF_MATCH_BAD_ATTR},
    {"NULL attribute key", m_null_attr_key, GF_MATCH_BAD_ATTR},
};

static void test_good_ticket_passes(void **state)
{
    (void)state;
    gf_match_ticket *t = good();
    assert_int_equal(gf_match_ticket_check(&F.cfg, t, FX_NOW), GF_MATCH_BAD_NONE);
    /* Slightly in the future (within clock skew) is fine and counts as just queued. */
    t->queued_ms = FX_NOW + 2000;
    assert_int_equal(gf_match_ticket_check(&F.cfg, t, FX_NOW), GF_MATCH_BAD_NONE);
    assert_int_equal(gf_match_ticket_age(t, FX_NOW), 0);
}

static void test_each_malformed_ticket_is_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_match_ticket *t = good();
        cases[i].mutate(0);
        gf_match_bad got = gf_match_ticket_check(&F.cfg, t, FX_NOW);
        if (got != cases[i].want)
            fail_msg("%s: got %s, want %s", cases[i].what, gf_match_bad_str(got),
                     gf_match_bad_str(cases[i].want));
        assert_string_not_equal(gf_match_bad_text(got), gf_match_bad_text(GF_MATCH_BAD_NONE));
    }
}

/* Tickets with several faults get the first one in check order (players before pings;
 * within a player: id, skill, sigma; within the pings, one ping at a time: datacenter
 * known, not repeated, value), the same from gf_match_ticket_check() and from a tick,
 * whose ingest folds the checks together and must still name the first fault. */
typedef struct multi_case {
    const char *what;
    gf_match_ping pings[4];
    size_t pings_len;
    double skill0, sigma1;
    const char *id1;
    gf_match_bad want;
} multi_case;

static const multi_case multi_cases[] = {
    {"repeated datacenter before a NaN ping",
     {{0, 10}, {0, NAN}},
     2,
     1500,
     50,
     "p-b",
     GF_MATCH_BAD_DUP_DC},
    {"negative ping before an unknown datacenter",
     {{0, -1}, {99, 10}},
     2,
     1500,
     50,
     "p-b",
     GF_MATCH_BAD_PING},
    {"unknown datacenter before a repeat",
     {{1, 10}, {99, 5}, {1, 5}},
     3,
     1500,
     50,
     "p-b",
     GF_MATCH_BAD_UNKNOWN_DC},
    {"unknown datacenter with a NaN ping",
     {{99, NAN}},
     1,
     1500,
     50,
     "p-b",
     GF_MATCH_BAD_UNKNOWN_DC},
    {"datacenter index far past 63",
     {{0, 10}, {200, 10}},
     2,
     1500,
     50,
     "p-b",
     GF_MATCH_BAD_UNKNOWN_DC},
    /* Indexes of 64 and more whose low six bits name a known datacenter (the fast
     * check keeps one bit per index below 64). */
    {"datacenter index 64 alone", {{64, 10}}, 1, 1500, 50, "p-b", GF_MATCH_BAD_UNKNOWN_DC},
    {"datacenter index 65 after another",
     {{0, 10}, {65, 10}},
     2,
     1500,
     50,
     "p-b",
     GF_MATCH_BAD_UNKNOWN_DC},
    {"datacenter index 65 after datacenter 1",
     {{1, 10}, {65, 10}},
     2,
     1500,
     50,
     "p-b",
     GF_MATCH_BAD_UNKNOWN_DC},
    {"huge ping after a good one", {{0, 10}, {1, 1e300}}, 2, 1500, 50, "p-b", GF_MATCH_BAD_PING},
    {"infinite ping, then a repeat",
     {{2, INFINITY}, {2, 5}},
     2,
     1500,
     50,
     "p-b",
     GF_MATCH_BAD_PING},
    {"player 0's skill before player 1's id", {{0, 10}}, 1, NAN, 50, "", GF_MATCH_BAD_SKILL},
    {"player 1's id before player 1's sigma", {{0, 10}}, 1, 1500, -1, "", GF_MATCH_BAD_PLAYER_ID},
    {"player 1's sigma before any ping fault", {{99, NAN}}, 1, 1500, -1, "p-b", GF_MATCH_BAD_SIGMA},
    {"a player fault before a ping fault", {{0, -5}}, 1, INFINITY, 50, "p-b", GF_MATCH_BAD_SKILL},
    {"all good", {{0, 10}, {3, 12.5}, {1, 0}}, 3, 1500, 50, "p-b", GF_MATCH_BAD_NONE},
};

static void test_several_faults_give_the_first_reason(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof multi_cases / sizeof multi_cases[0]; c++) {
        const multi_case *mc = &multi_cases[c];
        fx_init(&F, GF_MATCH_HYBRID, "5v5");
        uint32_t i = fx_add(&F, 0, 1000, 1500, 2, "a:20");
        F.players[i][0].skill = mc->skill0;
        F.players[i][1].sigma = mc->sigma1;
        F.players[i][1].id = mc->id1;
        memcpy(F.pings[i], mc->pings, mc->pings_len * sizeof mc->pings[0]);
        F.t[i].pings_len = mc->pings_len;
        gf_match_bad got = gf_match_ticket_check(&F.cfg, &F.t[i], FX_NOW);
        if (got != mc->want)
            fail_msg("%s: gf_match_ticket_check says %s, want %s", mc->what, gf_match_bad_str(got),
                     gf_match_bad_str(mc->want));
        gf_match_result *r = fx_tick(&F);
        const gf_match_unmatched *u = fx_unmatched(r, i);
        assert_non_null(u);
        gf_match_bad in_tick =
            u->why == GF_MATCH_WHY_INVALID ? (gf_match_bad)u->bad : GF_MATCH_BAD_NONE;
        if (in_tick != mc->want)
            fail_msg("%s: the tick says %s, want %s", mc->what, gf_match_bad_str(in_tick),
                     gf_match_bad_str(mc->want));
        gf_match_result_free(r);
    }
}

/* Ids of the tickets in matches, as a sorted bit set over the fixture's indices. */
static void matched_set(const gf_match_result *r, uint8_t *set, size_t n)
{
    memset(set, 0, n);
    for (size_t m = 0; m < r->matches_len; m++) {
        for (uint32_t k = 0; k < r->matches[m].members_len; k++)
            set[r->matches[m].members[k].ticket] = 1;
    }
}

/* Ten good solo tickets that make one 5v5 match, plus the malformed one last: the
 * malformed one is reported INVALID with its reason, and the others match exactly as
 * without it. */
static void test_malformed_ticket_changes_nothing(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fx_init(&F, GF_MATCH_HYBRID, "5v5");
        for (int i = 0; i < 10; i++)
            fx_add(&F, 0, 30000 - i * 100, 1500 + i * 10, 1, "a:20 b:40");
        gf_match_result *base = fx_tick(&F);
        uint8_t before[16], after[16];
        matched_set(base, before, 11);

        uint32_t bad = fx_add(&F, 0, 40000, 1505, 1, "a:20 b:40");
        cases[c].mutate(bad);

        gf_match_result *r = fx_tick(&F);
        const gf_match_unmatched *u = fx_unmatched(r, bad);
        if (!u || u->why != GF_MATCH_WHY_INVALID || u->bad != cases[c].want)
            fail_msg("%s: not reported as %s", cases[c].what, gf_match_bad_str(cases[c].want));
        matched_set(r, after, 11);
        assert_memory_equal(before, after, 10);
        assert_int_equal(r->stats.invalid, 1);
        gf_match_result_free(base);
        gf_match_result_free(r);
    }
}

static void test_duplicate_player_oldest_ticket_keeps_it(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    uint32_t young = fx_add(&F, 0, 1000, 1500, 1, "a:20");
    uint32_t old = fx_add(&F, 0, 9000, 1500, 1, "a:20");
    uint32_t other = fx_add(&F, 0, 5000, 1500, 1, "a:20");
    /* The young ticket carries the old ticket's player. */
    F.players[young][0].id = F.players[old][0].id;
    gf_match_result *r = fx_tick(&F);
    const gf_match_unmatched *u = fx_unmatched(r, young);
    assert_non_null(u);
    assert_int_equal(u->why, GF_MATCH_WHY_INVALID);
    assert_int_equal(u->bad, GF_MATCH_BAD_DUP_PLAYER);
    const gf_match *m = fx_match_of(r, old);
    assert_non_null(m);
    assert_ptr_equal(fx_match_of(r, other), m);
    gf_match_result_free(r);

    /* Same verdict whatever the input order: swap them. */
    gf_match_ticket tmp = F.t[young];
    F.t[young] = F.t[old];
    F.t[old] = tmp;
    r = fx_tick(&F);
    u = fx_unmatched(r, old); /* now holds the young ticket */
    assert_non_null(u);
    assert_int_equal(u->bad, GF_MATCH_BAD_DUP_PLAYER);
    gf_match_result_free(r);
}

static void test_duplicate_ticket_id(void **state)
{
    (void)state;
    fx_init(&F, GF_MATCH_HYBRID, "1v1");
    uint32_t a = fx_add(&F, 0, 9000, 1500, 1, "a:20");
    uint32_t b = fx_add(&F, 0, 1000, 1500, 1, "a:20");
    uint32_t c = fx_add(&F, 0, 5000, 1500, 1, "a:20");
    F.t[b].id = F.t[a].id;
    gf_match_result *r = fx_tick(&F);
    const gf_match_unmatched *u = fx_unmatched(r, b);
    assert_non_null(u);
    assert_int_equal(u->bad, GF_MATCH_BAD_DUP_TICKET);
    assert_ptr_equal(fx_match_of(r, a), fx_match_of(r, c));
    assert_non_null(fx_match_of(r, a));
    gf_match_result_free(r);
}

static void test_many_duplicates_at_scale(void **state)
{
    (void)state;
    /* Hundreds of tickets sharing a few players: exactly one holder per player survives. */
    static fx big;
    fx_init(&big, GF_MATCH_HYBRID, "1v1");
    for (int i = 0; i < 400; i++)
        fx_add(&big, 0, 1000 + i, 1500, 1, "a:20");
    static char shared[10][8];
    for (int i = 0; i < 400; i++) {
        snprintf(shared[i % 10], sizeof shared[0], "s%d", i % 10);
        big.players[i][0].id = shared[i % 10];
    }
    gf_match_result *r = NULL;
    assert_int_equal(gf_match_tick(&big.cfg, big.t, big.n, FX_NOW, &r), GF_OK);
    size_t dup = 0;
    for (size_t k = 0; k < r->unmatched_len; k++)
        dup += r->unmatched[k].bad == GF_MATCH_BAD_DUP_PLAYER;
    assert_int_equal(dup, 390);
    assert_int_equal(r->stats.matched_tickets, 10);
    gf_match_result_free(r);
}

static void test_bad_calls(void **state)
{
    (void)state;
    gf_match_result *r = (gf_match_result *)&r; /* must be reset to NULL */
    good();
    assert_int_equal(gf_match_tick(&F.cfg, NULL, 3, FX_NOW, &r), GF_ERR_INVALID);
    assert_null(r);
    assert_int_equal(gf_match_tick(NULL, F.t, 1, FX_NOW, &r), GF_ERR_INVALID);
    assert_int_equal(gf_match_tick(&F.cfg, F.t, 1, -5, &r), GF_ERR_INVALID);
    assert_int_equal(gf_match_tick(&F.cfg, F.t, 1, FX_NOW, NULL), GF_ERR_INVALID);
    /* An empty pool is fine. */
    assert_int_equal(gf_match_tick(&F.cfg, NULL, 0, FX_NOW, &r), GF_OK);
    assert_int_equal(r->matches_len, 0);
    assert_int_equal(r->unmatched_len, 0);
    gf_match_result_free(r);
    gf_match_result_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_ticket_passes),
        cmocka_unit_test(test_each_malformed_ticket_is_refused),
        cmocka_unit_test(test_several_faults_give_the_first_reason),
        cmocka_unit_test(test_malformed_ticket_changes_nothing),
        cmocka_unit_test(test_duplicate_player_oldest_ticket_keeps_it),
        cmocka_unit_test(test_duplicate_ticket_id),
        cmocka_unit_test(test_many_duplicates_at_scale),
        cmocka_unit_test(test_bad_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
