/*
 * test_clock.c — gamefn/clock.h: the RFC 3339 formatter (digits, truncation, dates
 * before 1970, small buffers), its parser (round trips, offsets, fractions, every malformed
 * shape refused) and a monotonic clock that does not go back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"

static void rfc3339(void **state)
{
    (void)state;
    static const struct {
        int64_t ns;
        int digits;
        const char *want;
    } rows[] = {
        {0, 0, "1970-01-01T00:00:00Z"},
        {0, 3, "1970-01-01T00:00:00.000Z"},
        {1795966336123456789LL, 3, "2026-11-29T15:32:16.123Z"},
        {1795966336123456789LL, 9, "2026-11-29T15:32:16.123456789Z"},
        {1795966336123456789LL, 0, "2026-11-29T15:32:16Z"},
        {1795966336999999999LL, 3, "2026-11-29T15:32:16.999Z"},        /* truncated, not rounded */
        {1795966336123456789LL, 12, "2026-11-29T15:32:16.123456789Z"}, /* at most 9 */
        {-1, 3, "1969-12-31T23:59:59.999Z"},
        {951782400000000000LL, 0, "2000-02-29T00:00:00Z"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char buf[GF_CLOCK_RFC3339_MAX];
        assert_string_equal(gf_clock_rfc3339(rows[i].ns, rows[i].digits, buf, sizeof buf),
                            rows[i].want);
    }
    char small[11];
    gf_clock_rfc3339(0, 9, small, sizeof small);
    assert_string_equal(small, "1970-01-01");
    char one[1] = {'x'};
    gf_clock_rfc3339(0, 9, one, sizeof one);
    assert_int_equal(one[0], '\0');
}

static void parse_rfc3339(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t ns;
    } good[] = {
        {"1970-01-01T00:00:00Z", 0},
        {"2026-11-29T15:32:16.123Z", 1795966336123000000LL},
        {"2026-11-29T15:32:16.123456789Z", 1795966336123456789LL},
        {"2026-11-29t15:32:16.1z", 1795966336100000000LL},
        {"2026-11-29 15:32:16Z", 1795966336000000000LL},
        {"2026-11-29T17:32:16+02:00", 1795966336000000000LL},
        {"2026-11-29T10:02:16-05:30", 1795966336000000000LL},
        {"2000-02-29T00:00:00Z", 951782400000000000LL},
        {"2026-11-30T23:39:37.824522697Z", 1796081977824522697LL}, /* nats-server's "time" */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t ns = -1;
        assert_int_equal(gf_clock_parse_rfc3339(good[i].text, &ns), GF_OK);
        assert_int_equal(ns, good[i].ns);
    }
    static const char *const bad[] = {
        "",
        "2026",
        "2026-11-29",
        "2026-11-29T15:32",
        "2026-11-29T15:32:16",
        "2026-13-01T00:00:00Z",
        "2026-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z",
        "2026-11-29T24:00:00Z",
        "2026-11-29T15:60:00Z",
        "2026-11-29T15:32:16.Z",
        "2026-11-29T15:32:16.1234567890Z",
        "2026-11-29T15:32:16Zx",
        "2026-11-29T15:32:16+2:00",
        "2026-11-29T15:32:16+02",
        "1969-12-31T23:59:59Z",
        "1970-01-01T00:00:00+00:01",
        "x026-11-29T15:32:16Z",
        "2026/11/29T15:32:16Z",
        "2026-11-29X15:32:16Z",
        " 2026-11-29T15:32:16Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ns = 42;
        assert_int_equal(gf_clock_parse_rfc3339(bad[i], &ns), GF_ERR_INVALID);
        assert_int_equal(ns, 42);
    }
    assert_int_equal(gf_clock_parse_rfc3339(NULL, NULL), GF_ERR_INVALID);
    /* Round trip of the formatter. */
    for (int64_t ns = 0; ns < 4000000000000000000LL; ns += 123456789012345677LL) {
        char buf[GF_CLOCK_RFC3339_MAX];
        int64_t back = -1;
        assert_int_equal(gf_clock_parse_rfc3339(gf_clock_rfc3339(ns, 9, buf, sizeof buf), &back),
                         GF_OK);
        assert_int_equal(back, ns);
    }
}

static void monotonic(void **state)
{
    (void)state;
    int64_t a = gf_clock_mono_ns();
    gf_clock_sleep_ms(5);
    int64_t b = gf_clock_mono_ns();
    assert_true(b - a >= 5000000);
    assert_true(gf_clock_unix_ms() > 1700000000000LL);
    int64_t until = gf_clock_mono_ms() + 20;
    atomic_int stop = 1;
    gf_clock_sleep_until(until, &stop); /* returns at once when stopped */
    assert_true(gf_clock_mono_ms() < until);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc3339),
        cmocka_unit_test(parse_rfc3339),
        cmocka_unit_test(monotonic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
