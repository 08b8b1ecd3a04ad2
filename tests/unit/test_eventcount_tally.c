/*
 * eventcount's pure logic (examples/eventcount/tally.c): the record's text round trip
 * and malformed records, exactly-once counting by stream sequence, fencing by token,
 * reset, and event subjects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tally.h"

static void records_round_trip(void **state)
{
    ec_record r;
    char buf[EC_RECORD_MAX];
    ec_record_init(&r);
    assert_true(ec_record_apply(&r, 5, "kill"));
    assert_true(ec_record_apply(&r, 7, "score"));
    assert_true(ec_record_apply(&r, 9, "kill"));
    r.token = 42;
    size_t len = ec_record_encode(&r, buf, sizeof buf);
    assert_string_equal(buf, "v1 9 42 3 kill=2 score=1");
    ec_record back;
    assert_int_equal(ec_record_decode(buf, len, &back), GF_OK);
    assert_int_equal(back.applied_seq, 9);
    assert_int_equal(back.token, 42);
    assert_int_equal(back.total, 3);
    assert_int_equal(back.ntypes, 2);
    assert_int_equal(back.types[0].n, 2);
    assert_int_equal(ec_record_encode(&r, buf, 8), 0); /* does not fit */
}

static void malformed_records_are_refused(void **state)
{
    static const char *const bad[] = {
        "",
        "v2 1 1 1",
        "v1 1 1",
        "v1 x 1 1",
        "v1 1 1 1 kill",
        "v1 1 1 1 k=",
        "v1 1 1 1 k=-1",
        "v1 -1 1 1",
        "v1 1 1 1 a.b=1",
        "v1 1 1 1 kill=1x",
    };
    ec_record r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ec_record_decode(bad[i], strlen(bad[i]), &r), GF_ERR_INVALID);
}

static void an_event_counts_once(void **state)
{
    ec_record r;
    ec_record_init(&r);
    assert_true(ec_record_apply(&r, 10, "kill"));
    assert_false(ec_record_apply(&r, 10, "kill")); /* redelivered */
    assert_false(ec_record_apply(&r, 3, "kill"));  /* older */
    assert_true(ec_record_apply(&r, 11, "kill"));
    assert_int_equal(r.total, 2);
    ec_record_reset(&r);
    assert_int_equal(r.total, 0);
    assert_false(ec_record_apply(&r, 11, "kill")); /* a reset does not bring it back */
    assert_true(ec_record_apply(&r, 12, "zone"));
    assert_int_equal(r.total, 1);
}

static void a_stale_owner_is_fenced_off(void **state)
{
    ec_record r;
    ec_record_init(&r);
    assert_true(ec_record_fence(&r, 7));
    assert_true(ec_record_fence(&r, 7)); /* the same tenure again */
    assert_true(ec_record_fence(&r, 9)); /* a newer owner */
    assert_false(ec_record_fence(&r, 7));
    assert_int_equal(r.token, 9);
}

static void subjects_name_player_and_type(void **state)
{
    char player[EC_PLAYER_MAX + 1], type[EC_TYPE_MAX + 1];
    assert_int_equal(
        ec_subject_parse("gamefn.v1.evp.14.p-alice.kill", player, sizeof player, type, sizeof type),
        GF_OK);
    assert_string_equal(player, "p-alice");
    assert_string_equal(type, "kill");
    static const char *const bad[] = {
        "gamefn.v1.evp.14.p-alice",      "gamefn.v1.evp.14.p-alice.kill.x",
        "gamefn.v1.event.p-alice.kill",  "gamefn.v1.evp.14..kill",
        "gamefn.v1.evp.14.p alice.kill", NULL,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ec_subject_parse(bad[i], player, sizeof player, type, sizeof type),
                         GF_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(records_round_trip),
        cmocka_unit_test(malformed_records_are_refused),
        cmocka_unit_test(an_event_counts_once),
        cmocka_unit_test(a_stale_owner_is_fenced_off),
        cmocka_unit_test(subjects_name_player_and_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
