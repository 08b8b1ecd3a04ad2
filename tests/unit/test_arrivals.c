/*
 * test_arrivals — the local run's arrival process (support/playsim/arrivals.h): the same
 * seed gives the same trace however it is read, the day curve's range and each region's
 * evening peak and night trough within one run, the queue mix, parties never larger than
 * their queue's teams, and the day/night swing reaching the arrivals themselves.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arrivals.h"

static const gf_arr_queue queues[] = {
    {.name = "1v1-hybrid", .mode = "hybrid", .shape = "1v1", .team_size = 1},
    {.name = "5v5-sbmm", .mode = "sbmm", .shape = "5v5", .team_size = 5},
    {.name = "5v5-hybrid", .mode = "hybrid", .shape = "5v5", .team_size = 5},
    {.name = "ffa16-ping", .mode = "ping_first", .shape = "ffa16", .team_size = 1},
};
enum { NQ = sizeof queues / sizeof queues[0], DAY_S = 60 };

typedef struct rec {
    uint64_t serial;
    int64_t at_ms;
    size_t queue;
    int region;
    uint32_t players;
    double skill0;
} rec;

/* Every arrival of a run, asking up to each `step_ms`. */
static size_t trace(uint64_t seed, int64_t step_ms, rec *out, size_t max)
{
    gf_arrivals *a = NULL;
    assert_int_equal(gf_arrivals_new(seed, 100, DAY_S, queues, NQ, &a), GF_OK);
    size_t n = 0;
    gf_arrival x;
    for (int64_t t = 0, end = DAY_S * 1000;; t += step_ms) {
        if (t > end)
            t = end; /* the last read is at the end, whatever the step */
        while (gf_arrivals_next(a, t, &x)) {
            assert_true(x.at_ms <= t);
            assert_true(n < max);
            out[n++] = (rec){x.serial,
                             x.at_ms,
                             x.queue,
                             x.region,
                             (uint32_t)x.t->players_len,
                             x.t->players[0].skill};
        }
        if (t == end)
            break;
    }
    gf_arrivals_free(a);
    return n;
}

static rec t1[20000], t2[20000];

static void test_replayable(void **state)
{
    (void)state;
    size_t n1 = trace(7, 10, t1, 20000), n2 = trace(7, 997, t2, 20000);
    assert_true(n1 > 1000);
    assert_int_equal(n1, n2);
    assert_memory_equal(t1, t2, n1 * sizeof t1[0]);
    size_t n3 = trace(8, 10, t2, 20000);
    assert_false(n3 == n1 && memcmp(t1, t2, n1 * sizeof t1[0]) == 0);
    for (size_t i = 1; i < n1; i++)
        assert_true(t1[i].at_ms >= t1[i - 1].at_ms && t1[i].serial > t1[i - 1].serial);
}

static void test_day_curve(void **state)
{
    (void)state;
    gf_arrivals *a = NULL;
    assert_int_equal(gf_arrivals_new(1, 100, DAY_S, queues, NQ, &a), GF_OK);
    for (int region = 0; region < GF_POP__REGIONS; region++) {
        double lo = 2, hi = -1, h_lo = 0, h_hi = 0, h;
        for (int64_t t = 0; t <= DAY_S * 1000; t += 100) {
            double d = gf_arrivals_day(a, region, t, &h);
            assert_true(d >= 0.1 - 1e-12 && d <= 1 + 1e-12 && h >= 0 && h < 24);
            if (d < lo)
                lo = d, h_lo = h;
            if (d > hi)
                hi = d, h_hi = h;
        }
        /* Every region passes its evening peak (21:00) and its night trough (09:00). */
        assert_true(hi > 0.99 && fabs(h_hi - 21) < 0.2);
        assert_true(lo < 0.11 && fabs(h_lo - 9) < 0.2);
    }
    gf_arrivals_free(a);
    assert_true(gf_arrivals_peak_rate("low") < gf_arrivals_peak_rate("mid"));
    assert_true(gf_arrivals_peak_rate("mid") < gf_arrivals_peak_rate("high"));
    assert_true(gf_arrivals_peak_rate("huge") == 0);
}

static void test_mix(void **state)
{
    (void)state;
    size_t n = trace(3, 50, t1, 20000), per_queue[NQ] = {0};
    for (size_t i = 0; i < n; i++) {
        per_queue[t1[i].queue]++;
        assert_true(t1[i].players >= 1 && t1[i].players <= queues[t1[i].queue].team_size);
        assert_true(t1[i].skill0 > 0 && t1[i].skill0 < 3000);
    }
    /* Weights shape x mode: 1v1 hybrid 10x50, 5v5 sbmm 50x25, 5v5 hybrid 50x50, ffa16
     * ping 20x25: shares 500 / 1250 / 2500 / 500 of 4750. */
    static const double share[NQ] = {500.0 / 4750, 1250.0 / 4750, 2500.0 / 4750, 500.0 / 4750};
    for (size_t q = 0; q < NQ; q++)
        assert_true(fabs((double)per_queue[q] / (double)n - share[q]) < 0.03);
}

static void test_swing(void **state)
{
    (void)state;
    /* na (UTC-5): local 19:00 at the start, its trough (09:00) at t = 14/24 of the day. */
    size_t n = trace(5, 50, t1, 20000), evening = 0, night = 0;
    for (size_t i = 0; i < n; i++) {
        if (t1[i].region != GF_POP_NA)
            continue;
        double f = (double)t1[i].at_ms / (DAY_S * 1000.0);
        evening += f < 0.1;
        night += f > 14.0 / 24 - 0.05 && f < 14.0 / 24 + 0.05;
    }
    assert_true(evening > 3 * night);
    assert_true(night > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replayable),
        cmocka_unit_test(test_day_curve),
        cmocka_unit_test(test_mix),
        cmocka_unit_test(test_swing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
