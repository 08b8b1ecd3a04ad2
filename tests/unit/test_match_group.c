/*
 * test_match_group.c — datacenter choice (ties, no common datacenter, a missing ping,
 * each member's own limit), packing, and team balance for 1v1, 2v2 with a party, 5v5
 * with parties, 4v4v4 and free-for-all. Balance results are checked against a brute
 * force written here, not against the engine's own search.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/match/config.h"
#include "gamefn/match/group.h"

#define NONE GF_MATCH_PING_NONE

/* ---- datacenters ------------------------------------------------------------------ */

static void test_dc_lowest_total_first(void **state)
{
    (void)state;
    const uint16_t p1[4] = {20, 60, 90, NONE}, p2[4] = {50, 30, 95, 40};
    gf_match_dc_member m[2] = {{p1, 100, 1, NULL}, {p2, 100, 1, NULL}};
    gf_match_dc_choice out[4];
    size_t n = gf_match_dc_rank(m, 2, 4, out);
    /* totals: a 70, b 90, c 185 (both within 100? 90 and 95 yes); d: p1 missing. */
    assert_int_equal(n, 3);
    assert_int_equal(out[0].dc, 0);
    assert_int_equal(out[0].total_ping_ms, 70);
    assert_int_equal(out[0].max_ping_ms, 50);
    assert_int_equal(out[1].dc, 1);
    assert_int_equal(out[2].dc, 2);
    assert_int_equal(out[2].total_ping_ms, 185);
}

static void test_dc_ties(void **state)
{
    (void)state;
    /* a and c tie on total 80; a has the lower worst ping (40 vs 60). b and d tie on total
     * and worst: the lower index wins. */
    const uint16_t p1[4] = {40, 45, 20, 45}, p2[4] = {40, 45, 60, 45};
    gf_match_dc_member m[2] = {{p1, 100, 1, NULL}, {p2, 100, 1, NULL}};
    gf_match_dc_choice out[4];
    assert_int_equal(gf_match_dc_rank(m, 2, 4, out), 4);
    assert_int_equal(out[0].dc, 0);
    assert_int_equal(out[1].dc, 2);
    assert_int_equal(out[2].dc, 1);
    assert_int_equal(out[3].dc, 3);
}

static void test_dc_no_common(void **state)
{
    (void)state;
    const uint16_t p1[3] = {20, NONE, NONE}, p2[3] = {NONE, 20, NONE}, p3[3] = {30, 30, 30};
    gf_match_dc_member m[3] = {{p1, 180, 1, NULL}, {p2, 180, 1, NULL}, {p3, 180, 1, NULL}};
    gf_match_dc_choice out[3];
    assert_int_equal(gf_match_dc_rank(m, 3, 3, out), 0);
    /* Without the second member, a is common. */
    gf_match_dc_member m2[2] = {{p1, 180, 1, NULL}, {p3, 180, 1, NULL}};
    assert_int_equal(gf_match_dc_rank(m2, 2, 3, out), 1);
    assert_int_equal(out[0].dc, 0);
}

static void test_dc_each_members_own_limit(void **state)
{
    (void)state;
    /* The fresh member (limit 35) measured b at 150: b is out even though the old member
     * (limit 180) would accept it and it has the lowest total. */
    const uint16_t fresh[2] = {30, 150}, old[2] = {170, 10};
    gf_match_dc_member m[2] = {{fresh, 35, 1, NULL}, {old, 180, 1, NULL}};
    gf_match_dc_choice out[2];
    size_t n = gf_match_dc_rank(m, 2, 2, out);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].dc, 0);
    /* Exactly at the limit is accepted. */
    m[0].limit_ms = 150;
    assert_int_equal(gf_match_dc_rank(m, 2, 2, out), 2);
    assert_int_equal(out[0].dc, 1);
}

/* ---- packing ------------------------------------------------------------------------ */

static bool pack_brute(const uint8_t *sizes, int k, int teams, int size, int *room, int i)
{
    if (i == k)
        return true;
    for (int t = 0; t < teams; t++) {
        if (room[t] >= sizes[i]) {
            room[t] -= sizes[i];
            bool ok = pack_brute(sizes, k, teams, size, room, i + 1);
            room[t] += sizes[i];
            if (ok)
                return true;
        }
    }
    return false;
}

static void test_pack_matches_brute_force(void **state)
{
    (void)state;
    srand(7);
    for (int iter = 0; iter < 3000; iter++) {
        int teams = 2 + rand() % 3, size = 1 + rand() % 6;
        int k = 1 + rand() % 8;
        uint8_t sizes[8];
        uint32_t count[GF_MATCH_MAX_TEAM_SIZE + 1] = {0};
        for (int i = 0; i < k; i++) {
            sizes[i] = (uint8_t)(1 + rand() % size);
            count[sizes[i]]++;
        }
        int room[4] = {size, size, size, size};
        bool want = pack_brute(sizes, k, teams, size, room, 0);
        bool got = gf_match_pack_feasible(count, (uint32_t)teams, (uint32_t)size);
        if (want != got)
            fail_msg("iteration %d: %d teams of %d, want %d got %d", iter, teams, size, want, got);
    }
    /* Two parties of 3 and three of 2 fill 2 x 6 only as 3+3 | 2+2+2. */
    uint32_t c[7] = {0, 0, 3, 2, 0, 0, 0};
    assert_true(gf_match_pack_feasible(c, 2, 6));
    uint32_t c2[6] = {0, 0, 0, 0, 2, 0}; /* 4 + 4 into 2 x 5: yes; a third 4 would not */
    assert_true(gf_match_pack_feasible(c2, 2, 5));
    c2[4] = 3;
    assert_false(gf_match_pack_feasible(c2, 2, 5));
}

/* ---- team balance ---------------------------------------------------------------------- */

/* Best (max - min team total) over every assignment, by brute force. */
static double brute_best(const double *s, const uint8_t *z, int k, int teams, int size, int *team,
                         int i)
{
    if (i == k) {
        double tot[8] = {0};
        int pl[8] = {0};
        for (int j = 0; j < k; j++) {
            tot[team[j]] += s[j] * z[j];
            pl[team[j]] += z[j];
        }
        double lo = INFINITY, hi = -INFINITY;
        for (int t = 0; t < teams; t++) {
            if (pl[t] != size)
                return INFINITY;
            lo = fmin(lo, tot[t]);
            hi = fmax(hi, tot[t]);
        }
        return hi - lo;
    }
    double best = INFINITY;
    for (int t = 0; t < teams; t++) {
        team[i] = t;
        best = fmin(best, brute_best(s, z, k, teams, size, team, i + 1));
    }
    return best;
}

/* Checks a balance result: every team exactly full, the reported difference right. */
static double check_teams(const double *s, const uint8_t *z, int k, int teams, int size,
                          const uint16_t *team, double reported)
{
    double tot[64] = {0};
    int pl[64] = {0};
    for (int j = 0; j < k; j++) {
        assert_true(team[j] < teams);
        tot[team[j]] += s[j] * z[j];
        pl[team[j]] += z[j];
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int t = 0; t < teams; t++) {
        assert_int_equal(pl[t], size);
        lo = fmin(lo, tot[t]);
        hi = fmax(hi, tot[t]);
    }
    assert_true(fabs((hi - lo) - reported) < 1e-6);
    return hi - lo;
}

typedef struct balance_case {
    const char *what;
    int teams, size, k;
    double skill[12];
    uint8_t party[12];
} balance_case;

static const balance_case balance_cases[] = {
    {"1v1", 2, 1, 2, {1400, 1600}, {1, 1}},
    {"2v2 with a party", 2, 2, 3, {1500, 1300, 1700}, {2, 1, 1}},
    {"2v2 solos", 2, 2, 4, {1000, 1100, 1900, 2000}, {1, 1, 1, 1}},
    {"5v5 solos",
     2,
     5,
     10,
     {1510, 1490, 1700, 1300, 1620, 1380, 1555, 1445, 1800, 1200},
     {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
    {"5v5 with parties", 2, 5, 6, {1500, 1480, 1650, 1320, 1590, 1410}, {3, 2, 2, 1, 1, 1}},
    {"5v5 two full premades", 2, 5, 2, {1600, 1400}, {5, 5}},
    {"4v4v4 with parties",
     3,
     4,
     7,
     {1500, 1400, 1600, 1550, 1450, 1700, 1300},
     {2, 2, 2, 2, 1, 2, 1}},
};

static void test_balance_small_shapes_are_optimal(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof balance_cases / sizeof balance_cases[0]; c++) {
        const balance_case *b = &balance_cases[c];
        uint16_t team[12];
        double diff = -1;
        assert_int_equal(gf_match_teams_balance(b->skill, b->party, (size_t)b->k,
                                                (uint32_t)b->teams, (uint32_t)b->size, team, &diff),
                         GF_OK);
        double got = check_teams(b->skill, b->party, b->k, b->teams, b->size, team, diff);
        int scratch[12];
        double want = brute_best(b->skill, b->party, b->k, b->teams, b->size, scratch, 0);
        if (fabs(got - want) > 1e-6)
            fail_msg("%s: difference %.3f, best possible %.3f", b->what, got, want);
    }
}

static void test_balance_random_small_is_optimal(void **state)
{
    (void)state;
    srand(11);
    for (int iter = 0; iter < 400; iter++) {
        int size = 1 + rand() % 5, teams = 2 + (rand() % 4 == 0);
        double skill[12];
        uint8_t party[12];
        int k = 0, left = teams * size;
        while (left > 0 && k < 12) {
            int p = 1 + rand() % (size < left ? size : left);
            party[k] = (uint8_t)p;
            skill[k] = 1000 + rand() % 1000;
            left -= p;
            k++;
        }
        uint16_t team[12];
        double diff = 0;
        gf_err err = gf_match_teams_balance(skill, party, (size_t)k, (uint32_t)teams,
                                            (uint32_t)size, team, &diff);
        int scratch[12];
        double want = brute_best(skill, party, k, teams, size, scratch, 0);
        if (!isfinite(want)) {
            assert_int_equal(err, GF_ERR_INVALID); /* these parties cannot fill the teams */
            continue;
        }
        assert_int_equal(err, GF_OK);
        double got = check_teams(skill, party, k, teams, size, team, diff);
        if (fabs(got - want) > 1e-6)
            fail_msg("iteration %d: difference %.3f, best possible %.3f", iter, got, want);
    }
}

/* Matches of a dense pool have close skills (within a few points at 100k tickets), which
 * is where exhaustive searches struggle: many splits are almost equally good. Random
 * tight cases, checked against brute force: 2 teams of 2..5 with parties (the
 * enumerated splits), and 8v8 with 13..16 tickets (the depth-first search). */
static void test_balance_tight_skills_are_optimal(void **state)
{
    (void)state;
    srand(23);
    for (int iter = 0; iter < 600; iter++) {
        bool big = iter % 100 == 99;
        int size = big ? 8 : 2 + rand() % 4, teams = 2;
        double skill[16];
        uint8_t party[16];
        int k = 0, left = teams * size;
        while (left > 0 && k < 16) {
            int most = big ? (k < 12 ? 1 : 2) : (size < left ? size : left);
            int p = 1 + rand() % most;
            p = p > left ? left : p;
            party[k] = (uint8_t)p;
            skill[k] = 1500 + (double)rand() / RAND_MAX * 2.0; /* within 2 points */
            left -= p;
            k++;
        }
        if (left > 0)
            continue;
        uint16_t team[16];
        double diff = 0;
        gf_err err = gf_match_teams_balance(skill, party, (size_t)k, (uint32_t)teams,
                                            (uint32_t)size, team, &diff);
        int scratch[16];
        double want = brute_best(skill, party, k, teams, size, scratch, 0);
        if (!isfinite(want)) {
            assert_int_equal(err, GF_ERR_INVALID);
            continue;
        }
        assert_int_equal(err, GF_OK);
        double got = check_teams(skill, party, k, teams, size, team, diff);
        if (fabs(got - want) > 1e-6)
            fail_msg("iteration %d (k %d): difference %.9f, best possible %.9f", iter, k, got,
                     want);
    }
}

static void test_balance_free_for_all(void **state)
{
    (void)state;
    double skill[16];
    uint8_t party[16];
    for (int i = 0; i < 16; i++) {
        skill[i] = 1200 + 37 * i;
        party[i] = 1;
    }
    uint16_t team[16];
    double diff = 0;
    assert_int_equal(gf_match_teams_balance(skill, party, 16, 16, 1, team, &diff), GF_OK);
    uint32_t seen = 0;
    for (int i = 0; i < 16; i++)
        seen |= 1u << team[i];
    assert_int_equal(seen, 0xffff); /* one ticket per team */
    assert_true(fabs(diff - 37 * 15) < 1e-9);
}

static void test_balance_large_shape_heuristic(void **state)
{
    (void)state;
    /* 8 teams of 8 with parties: exhaustive search cannot finish; the heuristic must
     * still fill every team exactly and land near the ideal. */
    double skill[64];
    uint8_t party[64];
    int k = 0, left = 64;
    srand(3);
    while (left > 0) {
        int p = left >= 4 ? 1 + rand() % 4 : left;
        party[k] = (uint8_t)p;
        skill[k] = 1200 + rand() % 600;
        left -= p;
        k++;
    }
    uint16_t team[64];
    double diff = 0;
    assert_int_equal(gf_match_teams_balance(skill, party, (size_t)k, 8, 8, team, &diff), GF_OK);
    double got = check_teams(skill, party, k, 8, 8, team, diff);
    /* A random split of these would typically differ by thousands. */
    if (got >= 600)
        fail_msg("8 x 8 teams differ by %.1f", got);
}

static void test_balance_refuses_bad_input(void **state)
{
    (void)state;
    double skill[3] = {1, 2, 3};
    uint8_t party[3] = {1, 1, 1};
    uint16_t team[3];
    assert_int_equal(gf_match_teams_balance(skill, party, 3, 2, 2, team, NULL), GF_ERR_INVALID);
    uint8_t big[2] = {3, 1};
    assert_int_equal(gf_match_teams_balance(skill, big, 2, 2, 2, team, NULL), GF_ERR_INVALID);
    double nan_skill[2] = {NAN, 1};
    uint8_t one[2] = {1, 1};
    assert_int_equal(gf_match_teams_balance(nan_skill, one, 2, 2, 1, team, NULL), GF_ERR_INVALID);
    assert_int_equal(gf_match_teams_balance(NULL, one, 2, 2, 1, team, NULL), GF_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dc_lowest_total_first),
        cmocka_unit_test(test_dc_ties),
        cmocka_unit_test(test_dc_no_common),
        cmocka_unit_test(test_dc_each_members_own_limit),
        cmocka_unit_test(test_pack_matches_brute_force),
        cmocka_unit_test(test_balance_small_shapes_are_optimal),
        cmocka_unit_test(test_balance_random_small_is_optimal),
        cmocka_unit_test(test_balance_tight_skills_are_optimal),
        cmocka_unit_test(test_balance_free_for_all),
        cmocka_unit_test(test_balance_large_shape_heuristic),
        cmocka_unit_test(test_balance_refuses_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
