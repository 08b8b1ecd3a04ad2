/*
 * test_backoff.c — gamefn/backoff.h: doubling from the base up to the cap, with the
 * constants of the reconnect loop (nats.reconnect_* defaults 250 ms, 5 s, 250 ms
 * jitter), and jitter that stays within its bound.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gamefn/backoff.h"

static void backoff_doubles_to_cap_plus_jitter(void **state)
{
    (void)state;
    static const struct {
        int attempt;
        int64_t jitter, want; /* want: without jitter; with it, want..want+jitter */
    } rows[] = {
        {1, 0, 250},  {2, 0, 500},   {3, 0, 1000},       {4, 0, 2000},   {5, 0, 4000},
        {6, 0, 5000}, {50, 0, 5000}, {1, 100, 250},      {6, 100, 5000}, {1, -5, 250},
        {0, 0, 250},  {-3, 0, 250},  {1000000, 7, 5000},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int64_t lo = rows[i].want, hi = rows[i].want + (rows[i].jitter > 0 ? rows[i].jitter : 0);
        for (int k = 0; k < 200; k++) {
            int64_t got = gf_backoff_ms(rows[i].attempt, 250, 5000, rows[i].jitter);
            if (got < lo || got > hi)
                fail_msg("row %zu: %lld outside %lld..%lld", i, (long long)got, (long long)lo,
                         (long long)hi);
        }
    }
}

/* The runtime's other retry loops: their first delays and caps. */
static void backoff_sites(void **state)
{
    (void)state;
    static const struct {
        int64_t base, cap;
        int64_t want[6]; /* attempts 1..6 */
    } sites[] = {
        {400, 5000, {400, 800, 1600, 3200, 5000, 5000}},       /* provisioning, pull bind */
        {200, 2000, {200, 400, 800, 1600, 2000, 2000}},        /* failed fetch */
        {1000, 30000, {1000, 2000, 4000, 8000, 16000, 30000}}, /* nak without backoff list */
    };
    for (size_t s = 0; s < sizeof sites / sizeof sites[0]; s++)
        for (int a = 1; a <= 6; a++)
            assert_int_equal(gf_backoff_ms(a, sites[s].base, sites[s].cap, 0),
                             sites[s].want[a - 1]);
    /* No overflow on a huge cap. */
    assert_true(gf_backoff_ms(200, 1, INT64_MAX, 0) > 0);
}

/* Jitter spreads: over many draws both ends of a small range show up. */
static void backoff_jitter_spreads(void **state)
{
    (void)state;
    bool seen[4] = {false};
    for (int k = 0; k < 1000; k++)
        seen[gf_backoff_ms(1, 10, 10, 3) - 10] = true;
    for (int v = 0; v < 4; v++)
        assert_true(seen[v]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backoff_doubles_to_cap_plus_jitter),
        cmocka_unit_test(backoff_sites),
        cmocka_unit_test(backoff_jitter_spreads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
