/* Score operators (best, set, incr with its bound) and board periods (UTC day, ISO
 * week), the periods checked against the C library's own calendar. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "board.h"
#include "period.h"
#include "score.h"

#define MAXS GF_BOARD_SCORE_MAX

static void operators(void **state)
{
    static const struct {
        gf_score_op op;
        gf_board_order order;
        bool has_old;
        int64_t old, value;
        gf_err err;
        int64_t out;
        bool changed;
    } rows[] = {
        {GF_SCORE_BEST, GF_BOARD_DESCENDING, false, 0, 5, GF_OK, 5, true},
        {GF_SCORE_BEST, GF_BOARD_DESCENDING, true, 7, 5, GF_OK, 7, false},
        {GF_SCORE_BEST, GF_BOARD_DESCENDING, true, 7, 9, GF_OK, 9, true},
        {GF_SCORE_BEST, GF_BOARD_DESCENDING, true, 7, 7, GF_OK, 7, false},
        {GF_SCORE_BEST, GF_BOARD_ASCENDING, true, 7, 5, GF_OK, 5, true},
        {GF_SCORE_BEST, GF_BOARD_ASCENDING, true, 7, 9, GF_OK, 7, false},
        {GF_SCORE_BEST, GF_BOARD_ASCENDING, false, 0, -3, GF_OK, -3, true},
        {GF_SCORE_SET, GF_BOARD_DESCENDING, true, 7, 2, GF_OK, 2, true},
        {GF_SCORE_SET, GF_BOARD_DESCENDING, true, 7, 7, GF_OK, 7, false},
        {GF_SCORE_SET, GF_BOARD_ASCENDING, false, 0, 0, GF_OK, 0, true},
        {GF_SCORE_INCR, GF_BOARD_DESCENDING, false, 0, 4, GF_OK, 4, true},
        {GF_SCORE_INCR, GF_BOARD_DESCENDING, true, 10, -4, GF_OK, 6, true},
        {GF_SCORE_INCR, GF_BOARD_DESCENDING, true, 10, 0, GF_OK, 10, false},
        {GF_SCORE_INCR, GF_BOARD_DESCENDING, true, MAXS - 1, 1, GF_OK, MAXS, true},
        {GF_SCORE_INCR, GF_BOARD_DESCENDING, true, MAXS, 1, GF_ERR_INVALID, 0, false},
        {GF_SCORE_INCR, GF_BOARD_DESCENDING, true, -MAXS, -1, GF_ERR_INVALID, 0, false},
        {GF_SCORE_INCR, GF_BOARD_DESCENDING, true, MAXS, MAXS, GF_ERR_INVALID, 0, false},
        {GF_SCORE_SET, GF_BOARD_DESCENDING, false, 0, MAXS + 1, GF_ERR_INVALID, 0, false},
        {GF_SCORE_BEST, GF_BOARD_DESCENDING, true, INT64_MAX, 1, GF_ERR_INVALID, 0, false},
        {(gf_score_op)9, GF_BOARD_DESCENDING, false, 0, 1, GF_ERR_INVALID, 0, false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int64_t out = 0;
        bool changed = true;
        gf_err err =
            gf_score_apply(rows[i].op, rows[i].order, rows[i].has_old ? &rows[i].old : NULL,
                           rows[i].value, &out, &changed);
        assert_int_equal(err, rows[i].err);
        assert_int_equal(changed, rows[i].changed);
        if (err == GF_OK)
            assert_int_equal(out, rows[i].out);
    }
}

static void board_apply(void **state)
{
    gf_board *b = NULL;
    gf_board_entry e;
    assert_int_equal(gf_board_alloc(GF_BOARD_DESCENDING, &b), GF_OK);
    assert_int_equal(gf_board_apply(b, GF_SCORE_BEST, "p", 10, 100), GF_OK);
    assert_int_equal(gf_board_apply(b, GF_SCORE_BEST, "p", 10, 200), GF_OK); /* no change */
    assert_int_equal(gf_board_get(b, "p", &e), GF_OK);
    assert_int_equal(e.updated_unix_ms, 100); /* keeps the earlier time */
    assert_int_equal(gf_board_apply(b, GF_SCORE_INCR, "p", 5, 300), GF_OK);
    assert_int_equal(gf_board_get(b, "p", &e), GF_OK);
    assert_int_equal(e.score, 15);
    assert_int_equal(e.updated_unix_ms, 300);
    assert_int_equal(gf_board_apply(b, GF_SCORE_INCR, "p", MAXS, 400), GF_ERR_INVALID);
    assert_int_equal(gf_board_get(b, "p", &e), GF_OK);
    assert_int_equal(e.score, 15); /* refused: unchanged */
    assert_int_equal(gf_board_apply(b, GF_SCORE_SET, "bad id", 1, 1), GF_ERR_INVALID);
    gf_board_free(b);
}

static void periods_known_dates(void **state)
{
    static const struct {
        gf_period_kind kind;
        int64_t ms;
        const char *id;
        int64_t start, end;
    } rows[] = {
        {GF_PERIOD_DAILY, INT64_C(1795996800000), "2026-11-30", INT64_C(1795996800000),
         INT64_C(1796083200000)},
        {GF_PERIOD_DAILY, INT64_C(1796083199999), "2026-11-30", INT64_C(1795996800000),
         INT64_C(1796083200000)},
        {GF_PERIOD_WEEKLY, INT64_C(1795996800000), "2026-W49", INT64_C(1795996800000),
         INT64_C(1796601600000)},
        {GF_PERIOD_WEEKLY, INT64_C(1796601599999), "2026-W49", INT64_C(1795996800000),
         INT64_C(1796601600000)}, /* Sunday 23:59:59.999 */
        {GF_PERIOD_WEEKLY, INT64_C(1609632000000), "2020-W53", INT64_C(1609113600000),
         INT64_C(1609718400000)}, /* 2021-01-03 */
        {GF_PERIOD_WEEKLY, INT64_C(1735516800000), "2025-W01", INT64_C(1735516800000),
         INT64_C(1736121600000)}, /* 2024-12-30 */
        {GF_PERIOD_WEEKLY, 0, "1970-W01", INT64_C(-259200000), INT64_C(345600000)},
        {GF_PERIOD_DAILY, INT64_C(951782400000), "2000-02-29", INT64_C(951782400000),
         INT64_C(951868800000)},
        {GF_PERIOD_DAILY, GF_PERIOD_MAX_UNIX_MS, "9999-12-31", INT64_C(253402214400000),
         INT64_C(253402300800000)},
        {GF_PERIOD_NONE, 12345, "all", 0, INT64_MAX},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        gf_period p;
        assert_int_equal(gf_period_of(rows[i].kind, rows[i].ms, &p), GF_OK);
        assert_string_equal(p.id, rows[i].id);
        assert_int_equal(p.start_unix_ms, rows[i].start);
        assert_int_equal(p.end_unix_ms, rows[i].end);
    }
    gf_period p;
    assert_int_equal(gf_period_of(GF_PERIOD_DAILY, -1, &p), GF_ERR_INVALID);
    assert_int_equal(gf_period_of(GF_PERIOD_WEEKLY, GF_PERIOD_MAX_UNIX_MS + 1, &p), GF_ERR_INVALID);
    assert_int_equal(gf_period_of((gf_period_kind)7, 0, &p), GF_ERR_INVALID);
}

/* Every period id and start agrees with gmtime_r + strftime (%F and %G-W%V). */
static void periods_agree_with_libc(void **state)
{
    uint64_t s = 88172645463325252ULL;
    for (int i = 0; i < 200000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        int64_t ms = (int64_t)(s % (uint64_t)(GF_PERIOD_MAX_UNIX_MS + 1));
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        assert_non_null(gmtime_r(&t, &tm));
        char day[32], week[32];
        strftime(day, sizeof day, "%Y-%m-%d", &tm);
        strftime(week, sizeof week, "%G-W%V", &tm);
        gf_period d, w;
        assert_int_equal(gf_period_of(GF_PERIOD_DAILY, ms, &d), GF_OK);
        assert_int_equal(gf_period_of(GF_PERIOD_WEEKLY, ms, &w), GF_OK);
        assert_string_equal(d.id, day);
        assert_string_equal(w.id, week);
        int64_t midnight =
            ms - (int64_t)(tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec) * 1000 - ms % 1000;
        assert_int_equal(d.start_unix_ms, midnight);
        int64_t monday = midnight - (int64_t)((tm.tm_wday + 6) % 7) * 86400000;
        assert_int_equal(w.start_unix_ms, monday);
        assert_true(w.start_unix_ms <= ms && ms < w.end_unix_ms);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(operators),
        cmocka_unit_test(board_apply),
        cmocka_unit_test(periods_known_dates),
        cmocka_unit_test(periods_agree_with_libc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
