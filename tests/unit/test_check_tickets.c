/*
 * test_check_tickets.c — the checker (gamefn/check/check.h) on hand-built ticket, commit
 * and players histories: clean histories give zeros; every planted violation is found,
 * counted once, and nothing else is reported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check_fixture.h"

static const fx_ticket A = {"ta", "duel", "pa", {1500}, "eu-west:20,us-east:90", 0};
static const fx_ticket B = {"tb", "duel", "pb", {1510}, "eu-west:25,us-east:80", 0};
static const fx_ticket C = {"tc", "duel", "pc", {1505}, "eu-west:30", 0};
static const fx_ticket D = {"td", "duel", "pd", {1495}, "eu-west:30", 0};

/* A clean life of every kind: matched, returned and matched again, cancelled, timed out,
 * still queued, still claimed within its lease. */
static void test_clean(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 60000);
    fx_match(&f, &A, &B, "m1", 0);
    /* C and D: claimed by m2, aborted (lease), back to the pool, matched by m3. */
    fx_player(&f, "pc", "tc", 1000);
    fx_queued(&f, &C, 1000);
    fx_player(&f, "pd", "td", 1000);
    fx_queued(&f, &D, 1000);
    fx_claimed(&f, &C, "m2", 1100);
    fx_claimed(&f, &D, "m2", 1100);
    fx_aborted(&f, "m2", 12000);
    fx_queued(&f, &C, 12001);
    fx_queued(&f, &D, 12001);
    fx_claimed(&f, &C, "m3", 13000);
    fx_claimed(&f, &D, "m3", 13000);
    fx_committed(&f, "m3", "tc,td", "eu-west", 13100);
    fx_assigned(&f, &C, "m3", "eu-west", 13100);
    fx_assigned(&f, &D, "m3", "eu-west", 13100);
    /* Cancelled and timed out, their players records deleted. */
    fx_ticket E = {"te", "duel", "pe", {1500}, "eu-west:20", 20000};
    fx_ticket F = {"tf", "duel", "pf", {1500}, "eu-west:20", -5000};
    fx_player(&f, "pe", "te", 20000);
    fx_queued(&f, &E, 20000);
    fx_cancelled(&f, &E, 21000);
    fx_player_deleted(&f, "pe", 21001);
    fx_player(&f, "pf", "tf", -5000);
    fx_queued(&f, &F, -5000);
    fx_timed_out(&f, &F, 55100);
    fx_player_deleted(&f, "pf", 55101);
    /* Still live at the end: queued within its TTL, claimed within its lease. */
    fx_ticket G = {"tg", "duel", "pg", {1500}, "eu-west:20", 50000};
    fx_ticket H = {"th", "duel", "ph", {1500}, "eu-west:20", 50000};
    fx_player(&f, "pg", "tg", 50000);
    fx_queued(&f, &G, 50000);
    fx_player(&f, "ph", "th", 50000);
    fx_queued(&f, &H, 50000);
    fx_claimed(&f, &H, "m4", 55000);
    /* A player of a finished match (record deleted at its end) queues again. */
    fx_player_deleted(&f, "pa", 40000);
    fx_ticket A2 = {"ta2", "duel", "pa", {1500}, "eu-west:20", 41000};
    fx_player(&f, "pa", "ta2", 41000);
    fx_queued(&f, &A2, 41000);
    fx_claimed(&f, &A2, "m5", 42000);
    fx_ticket X = {"tx", "duel", "px", {1500}, "eu-west:20", 41000};
    fx_player(&f, "px", "tx", 41000);
    fx_queued(&f, &X, 41000);
    fx_claimed(&f, &X, "m5", 42000);
    fx_committed(&f, "m5", "ta2,tx", "eu-west", 42100);
    fx_assigned(&f, &A2, "m5", "eu-west", 42100);
    fx_assigned(&f, &X, "m5", "eu-west", 42100);
    fx_all_zero(&f);
    assert_int_equal(f.r->totals.tickets, 10);
    assert_int_equal(f.r->totals.matches_committed, 3);
    assert_int_equal(f.r->totals.matches_aborted, 1);
    assert_int_equal(gf_check_report_broken(f.r), 0);
    ck_fx_end(&f);
}

static void test_double_claim(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 5000);
    fx_queued(&f, &A, 0);
    fx_claimed(&f, &A, "m1", 100);
    fx_claimed(&f, &A, "m2", 200); /* m1's claim overwritten */
    fx_only(&f, "double_claims", 1, NULL);
    const gf_check_count *n = gf_check_report_find(f.r, "double_claims");
    assert_int_equal(n->examples_len, 1);
    assert_non_null(strstr(n->examples[0], "CLAIMED by m1"));
    assert_non_null(strstr(n->examples[0], "then by m2"));
    ck_fx_end(&f);
}

static void test_assigned_by_other_match(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 60000);
    fx_match(&f, &A, &B, "m1", 0);
    fx_queued(&f, &C, 0);
    fx_claimed(&f, &C, "m2", 100);
    fx_committed(&f, "m3", "tc", "eu-west", 300);
    fx_assigned(&f, &C, "m3", "eu-west", 300); /* claimed by m2, assigned by m3 */
    fx_only(&f, "double_claims", 1, NULL);
    ck_fx_end(&f);
}

static void test_two_committed_records(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 60000);
    fx_match(&f, &A, &B, "m1", 0);
    fx_committed(&f, "m2", "ta,tc", "eu-west", 500);
    /* ta in m1 and m2; m2 is half assigned (neither ta nor tc ends ASSIGNED by it), tc has
     * no revision at all (so no limits either). */
    fx_only(&f, "double_claims", 1, "half_assigned_matches");
    assert_int_equal(fx_count(&f, "half_assigned_matches"), 1);
    assert_int_equal(f.r->totals.limits_unchecked, 1);
    ck_fx_end(&f);
}

static void test_players_in_two_matches(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 8000);
    fx_ticket A1 = {"t1", "duel", "p", {1500}, "eu-west:20", 0};
    fx_ticket A2 = {"t2", "duel", "p", {1500}, "eu-west:20", 0};
    fx_queued(&f, &A1, 0);
    fx_queued(&f, &A2, 10);
    fx_claimed(&f, &A1, "m1", 100);
    fx_claimed(&f, &A2, "m2", 150);
    fx_only(&f, "players_in_two_matches", 1, "players_in_two_live_tickets");
    assert_int_equal(fx_count(&f, "players_in_two_live_tickets"), 1);
    ck_fx_end(&f);
}

/* The first ticket is ASSIGNED and its match still runs (no players record deleted, within
 * max_match): a second ticket of the same player in a match overlaps it. */
static void test_assigned_match_still_running(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 40000);
    fx_match(&f, &A, &B, "m1", 0);
    fx_ticket A2 = {"ta2", "duel", "pa", {1500}, "eu-west:20", 30000};
    fx_player(&f, "pa", "ta2", 30000); /* replaced while m1 runs */
    fx_queued(&f, &A2, 30000);
    fx_claimed(&f, &A2, "m9", 31000);
    fx_only(&f, "players_in_two_matches", 1, "players_in_two_live_tickets");
    assert_int_equal(fx_count(&f, "players_in_two_live_tickets"), 1);
    ck_fx_end(&f);
}

/* pa, matched at 0 (assigned at 150), queues again at 30000 and is claimed at 55000,
 * without its players record deleted: the check with these parameters at 60000. */
static void requeued(gf_check_params *p)
{
    static const fx_ticket A2 = {"ta2", "duel", "pa", {1500}, "eu-west:20", 30000};
    ck_fx f;
    memset(&f, 0, sizeof f);
    p->now_ms = T0 + 60000;
    ck_fx_start_with(&f, p);
    fx_match(&f, &A, &B, "m1", 0);
    fx_player(&f, "pa", "ta2", 30000);
    fx_queued(&f, &A2, 30000);
    fx_claimed(&f, &A2, "m9", 55000);
    fx_all_zero(&f);
    ck_fx_end(&f);
}

/* Deleting the players record at the match's end (the fleet) ends it (test_clean); so do
 * max_match_ms and the tickets bucket's TTL. */
static void test_match_end_rules(void **state)
{
    gf_check_params p;
    gf_check_params_default(&p);
    p.max_match_ms = 20000; /* over at 20150 */
    requeued(&p);
    gf_check_params_default(&p);
    p.ticket_ttl_ms = 10000; /* the assigned record is gone at 10150 */
    requeued(&p);
}

static void test_two_live_tickets(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 8000);
    fx_ticket P1 = {"t1", "pair", "p,q", {1500, 1500}, "eu-west:20", 0};
    fx_ticket P2 = {"t2", "duel", "q", {1500}, "eu-west:20", 1000};
    fx_queued(&f, &P1, 0);
    fx_queued(&f, &P2, 1000); /* q queued twice; t1 ends only later */
    fx_cancelled(&f, &P1, 2000);
    fx_only(&f, "players_in_two_live_tickets", 1, NULL);
    ck_fx_end(&f);
}

static void test_lost(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 80000);
    fx_queued(&f, &A, 0); /* TTL 60 s + grace 5 s passed */
    fx_queued(&f, &B, 0);
    fx_claimed(&f, &B, "m1", 100); /* lease 10 s passed */
    fx_ticket C2 = {"tc", "duel", "pc", {1500}, "eu-west:20", 70000};
    fx_queued(&f, &C2, 70000); /* live */
    fx_ticket D2 = {"td", "duel", "pd", {1500}, "eu-west:20", 70000};
    fx_queued(&f, &D2, 70000);
    fx_ticket_deleted(&f, "td", 70500); /* deleted while queued */
    fx_only(&f, "tickets_lost", 3, "orphaned_claims");
    assert_int_equal(fx_count(&f, "orphaned_claims"), 1);
    const gf_check_count *n = gf_check_report_find(f.r, "tickets_lost");
    assert_non_null(strstr(n->detail, "1 QUEUED past their TTL, 1 CLAIMED past their lease, 1 "
                                      "deleted"));
    ck_fx_end(&f);
}

/* Just before the deadlines plus grace nothing is lost. */
static void test_grace(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 64999);
    fx_queued(&f, &A, 0);
    fx_queued(&f, &B, 50000);
    fx_claimed(&f, &B, "m1", 50000); /* lease until 60000, + 5 s grace */
    fx_all_zero(&f);
    ck_fx_end(&f);
}

/* A and B claimed by m1 at 100, committed at 150 with A assigned; the check at `now`. */
static void half_started(ck_fx *f, int64_t now)
{
    ck_fx_start(f, now);
    fx_pair(f, &A, &B, "m1", 0, 100, NULL); /* leases until 10100 */
    fx_committed(f, "m1", "ta,tb", "eu-west", 150);
    fx_assigned(f, &A, "m1", "eu-west", 150);
}

static void test_half_assigned(void **state)
{
    ck_fx f;
    half_started(&f, 30000);
    fx_queued(&f, &B, 300); /* released although committed */
    fx_only(&f, "half_assigned_matches", 1, NULL);
    ck_fx_end(&f);

    /* A ticket still CLAIMED within its lease (+ 5 s grace) is being assigned; after it,
     * the match is half assigned (and the ticket lost). */
    half_started(&f, 15099);
    fx_all_zero(&f);
    ck_fx_end(&f);
    half_started(&f, 15100);
    fx_only(&f, "half_assigned_matches", 1, "tickets_lost,orphaned_claims");
    assert_int_equal(fx_count(&f, "tickets_lost"), 1);
    ck_fx_end(&f);

    /* Within the grace after the commit, a ticket still CLAIMED is being assigned. */
    half_started(&f, 2000);
    fx_all_zero(&f);
    ck_fx_end(&f);
}

static void test_aborted_but_assigned(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 30000);
    fx_queued(&f, &A, 0);
    fx_claimed(&f, &A, "m1", 100);
    fx_aborted(&f, "m1", 200);
    fx_assigned(&f, &A, "m1", "eu-west", 300);
    fx_only(&f, "half_assigned_matches", 1, NULL);
    ck_fx_end(&f);
}

static void test_assigned_without_commit(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 30000);
    fx_queued(&f, &A, 0);
    fx_claimed(&f, &A, "m1", 100);
    fx_assigned(&f, &A, "m1", "eu-west", 200); /* no record at all */
    fx_queued(&f, &B, 0);
    fx_queued(&f, &C, 0);
    fx_claimed(&f, &B, "m2", 100);
    fx_claimed(&f, &C, "m2", 100);
    fx_committed(&f, "m2", "tb", "eu-west", 200); /* does not list tc */
    fx_assigned(&f, &B, "m2", "eu-west", 200);
    fx_assigned(&f, &C, "m2", "eu-west", 200);
    fx_only(&f, "assigned_without_commit", 2, NULL);
    ck_fx_end(&f);
}

static void test_terminal_changed(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 30000);
    fx_match(&f, &A, &B, "m1", 0);
    fx_assigned(&f, &A, "m1", "eu-west", 400); /* the same assignment again: harmless */
    fx_queued(&f, &C, 0);
    fx_cancelled(&f, &C, 100);
    fx_queued(&f, &C, 200); /* back from CANCELLED */
    fx_cancelled(&f, &C, 300);
    fx_queued(&f, &D, 0);
    fx_timed_out(&f, &D, 100);
    fx_ticket_deleted(&f, "td", 200);
    fx_only(&f, "terminal_changed", 2, NULL);
    ck_fx_end(&f);
}

static void test_outcome_rewritten(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 30000);
    fx_match(&f, &A, &B, "m1", 0);
    fx_aborted(&f, "m1", 300);
    fx_only(&f, "match_outcome_rewritten", 1, NULL);
    ck_fx_end(&f);
}

static void test_bad_records(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 30000);
    fx_match(&f, &A, &B, "m1", 0);
    fx_ticket_garbage(&f, "tz", 100);
    fx_player(&f, "", "ta", 100);
    fx_only(&f, "bad_records", 2, NULL);
    const gf_check_count *n = gf_check_report_find(f.r, "bad_records");
    assert_int_equal(n->examples_len, 1);
    assert_non_null(strstr(n->examples[0], "tz"));
    ck_fx_end(&f);
}

/* Tickets created before `since` are left out, with the matches they are in. */
static void test_since(void **state)
{
    gf_check_params p;
    gf_check_params_default(&p);
    p.now_ms = T0 + 100000;
    p.since_ms = T0 + 1000;
    ck_fx f;
    memset(&f, 0, sizeof f);
    ck_fx_start_with(&f, &p);
    fx_queued(&f, &A, 0); /* would be lost */
    fx_claimed(&f, &A, "m1", 100);
    fx_claimed(&f, &A, "m2", 200); /* a double claim */
    fx_committed(&f, "m2", "ta", "eu-west", 300);
    fx_ticket N = {"tn", "duel", "pn", {1500}, "eu-west:20", 90000};
    fx_queued(&f, &N, 90000);
    fx_all_zero(&f);
    assert_int_equal(f.r->totals.tickets, 1);
    assert_int_equal(f.r->totals.tickets_skipped, 1);
    ck_fx_end(&f);
}

/* Every required count is present, in order, with its explanation. */
static void test_report_shape(void **state)
{
    ck_fx f;
    ck_fx_start(&f, 0);
    ck_fx_finish(&f);
    static const char *const required[] = {"double_claims", "players_in_two_matches",
                                           "tickets_lost",  "limit_violations",
                                           "events_lost",   "events_double_applied"};
    assert_true(f.r->counts_len > 6);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(f.r->counts[i].name, required[i]);
        assert_true(f.r->counts[i].required);
        assert_true(strlen(f.r->counts[i].explanation) > 20);
    }
    for (size_t i = 6; i < f.r->counts_len; i++)
        assert_false(f.r->counts[i].required);
    /* Without an events log or boards, the event counts are not checked. */
    assert_false(gf_check_report_find(f.r, "events_lost")->checked);
    assert_false(gf_check_report_find(f.r, "events_double_applied")->checked);
    assert_true(gf_check_report_find(f.r, "limit_violations")->checked);
    ck_fx_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean),
        cmocka_unit_test(test_double_claim),
        cmocka_unit_test(test_assigned_by_other_match),
        cmocka_unit_test(test_two_committed_records),
        cmocka_unit_test(test_players_in_two_matches),
        cmocka_unit_test(test_assigned_match_still_running),
        cmocka_unit_test(test_match_end_rules),
        cmocka_unit_test(test_two_live_tickets),
        cmocka_unit_test(test_lost),
        cmocka_unit_test(test_grace),
        cmocka_unit_test(test_half_assigned),
        cmocka_unit_test(test_aborted_but_assigned),
        cmocka_unit_test(test_assigned_without_commit),
        cmocka_unit_test(test_terminal_changed),
        cmocka_unit_test(test_outcome_rewritten),
        cmocka_unit_test(test_bad_records),
        cmocka_unit_test(test_since),
        cmocka_unit_test(test_report_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
