/*
 * test_clock.c — gamefn/clock.h: the RFC 3339 formatter (digits, truncation, dates
 * before 1970, small buffers) and a monotonic clock that does not go back.
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
        cmocka_unit_test(monotonic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
