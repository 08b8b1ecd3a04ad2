/*
 * test_intake_pending.c — functions/intake/pending.c: a players record is stale to
 * intake only once intake has itself seen the same revision for pending_grace, on its
 * monotonic clock (times here are given, not read).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "pending.h"

static void counts_from_first_sight(void **state)
{
    (void)state;
    intake_pending *p = NULL;
    assert_int_equal(intake_pending_new(&p), GF_OK);
    assert_false(intake_pending_seen_for(p, "amy", 7, 1000, 5000)); /* first sight */
    assert_false(intake_pending_seen_for(p, "amy", 7, 5999, 5000)); /* 4,999 ms */
    assert_true(intake_pending_seen_for(p, "amy", 7, 6000, 5000));  /* 5,000 ms */
    assert_false(intake_pending_seen_for(p, "amy", 8, 7000, 5000)); /* renewed: again */
    assert_true(intake_pending_seen_for(p, "amy", 8, 12000, 5000));
    assert_false(intake_pending_seen_for(p, "ben", 8, 12000, 5000)); /* another player */
    assert_true(intake_pending_seen_for(p, "amy", 8, 12000, 0));     /* no grace */
    intake_pending_free(p);
    intake_pending_free(NULL);
}

/* Many players: a slot taken by another record restarts its count (later, never
 * earlier), and no record is ever stale before its grace. */
static void never_early(void **state)
{
    (void)state;
    intake_pending *p = NULL;
    assert_int_equal(intake_pending_new(&p), GF_OK);
    char id[32];
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 4 * GF_INTAKE_PENDING_SLOTS; i++) {
            snprintf(id, sizeof id, "p-%d", i);
            int64_t now = round * 1000 + i / 1000;
            bool over = intake_pending_seen_for(p, id, 1, now, 5000);
            assert_false(over); /* at most ~3 s after any first sight */
        }
    intake_pending_free(p);
}

/* Clients retrying every 250 ms: each of 50 players' records keeps its count and is
 * over at its grace, not before (sets of 4 slots: colliding players do not restart each
 * other). */
static void retried_records_keep_their_counts(void **state)
{
    (void)state;
    intake_pending *p = NULL;
    assert_int_equal(intake_pending_new(&p), GF_OK);
    char id[32];
    for (int64_t now = 0; now <= 5000; now += 250)
        for (int i = 0; i < 50; i++) {
            snprintf(id, sizeof id, "player-%d", i);
            assert_int_equal(intake_pending_seen_for(p, id, 3, now, 5000), now >= 5000);
        }
    intake_pending_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_from_first_sight),
        cmocka_unit_test(never_early),
        cmocka_unit_test(retried_records_keep_their_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
