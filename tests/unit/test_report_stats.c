/*
 * test_report_stats.c — the report's percentiles and distribution curves
 * (tools/report/stats.h, groups.h): nearest-rank tables, boundaries, NAN handling.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "groups.h"
#include "stats.h"

static void test_percentiles(void **state)
{
    (void)state;
    static const double ten[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    static const double one[] = {42};
    static const double hundred_ish[] = {0, 0, 0, 5, 5, 100};
    static const struct {
        const double *v;
        size_t n;
        double p, want;
    } cases[] = {
        /* clang-format off */
        {ten, 10, 50, 5},     /* rank ceil(5) = 5 */
        {ten, 10, 51, 6},     /* rank ceil(5.1) = 6 */
        {ten, 10, 95, 10},    /* rank ceil(9.5) = 10 */
        {ten, 10, 90, 9},
        {ten, 10, 99, 10},
        {ten, 10, 100, 10},   /* the maximum */
        {ten, 10, 0, 1},      /* the minimum */
        {ten, 10, 10, 1},
        {ten, 10, 10.0001, 2},
        {one, 1, 0, 42},
        {one, 1, 50, 42},
        {one, 1, 100, 42},
        {hundred_ish, 6, 50, 0},
        {hundred_ish, 6, 51, 5},
        {hundred_ish, 6, 83, 5},     /* rank ceil(4.98) = 5 */
        {hundred_ish, 6, 84, 100},   /* rank ceil(5.04) = 6 */
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double got = gf_stats_percentile(cases[i].v, cases[i].n, cases[i].p);
        if (got != cases[i].want)
            fail_msg("case %zu: p%g = %g, want %g", i, cases[i].p, got, cases[i].want);
    }
    assert_true(isnan(gf_stats_percentile(ten, 0, 50)));
    assert_true(isnan(gf_stats_percentile(ten, 10, -1)));
    assert_true(isnan(gf_stats_percentile(ten, 10, 100.5)));
    assert_true(isnan(gf_stats_percentile(ten, 10, NAN)));
}

static void test_fraction_and_cdf(void **state)
{
    (void)state;
    static const double v[] = {1, 2, 2, 3, 10};
    assert_true(gf_stats_fraction_le(v, 5, 0) == 0);
    assert_true(gf_stats_fraction_le(v, 5, 2) == 0.6);
    assert_true(gf_stats_fraction_le(v, 5, 10) == 1);
    assert_true(gf_stats_fraction_le(v, 0, 10) == 0);

    double xs[300], ys[300];
    assert_int_equal(gf_stats_cdf(v, 0, 10, xs, ys), 0);
    assert_int_equal(gf_stats_cdf(v, 5, 0, xs, ys), 0);
    assert_int_equal(gf_stats_cdf(v, 5, 1, xs, ys), 1);
    assert_true(xs[0] == 10 && ys[0] == 1);
    /* fewer samples than points: every sample, y = rank / n */
    assert_int_equal(gf_stats_cdf(v, 5, 300, xs, ys), 5);
    for (size_t i = 0; i < 5; i++)
        assert_true(xs[i] == v[i] && ys[i] == (double)(i + 1) / 5);
    /* many samples: exactly max points, first and last included, y increasing */
    double *big = malloc(sizeof *big * 100000);
    assert_non_null(big);
    for (size_t i = 0; i < 100000; i++)
        big[i] = (double)i;
    assert_int_equal(gf_stats_cdf(big, 100000, 300, xs, ys), 300);
    assert_true(xs[0] == 0 && ys[0] == 1e-5);
    assert_true(xs[299] == 99999 && ys[299] == 1);
    for (size_t i = 1; i < 300; i++)
        assert_true(xs[i] > xs[i - 1] && ys[i] > ys[i - 1]);
    free(big);
}

static void test_collect(void **state)
{
    (void)state;
    double v[] = {3, NAN, 1, INFINITY, 2, 5};
    unsigned char sel[] = {1, 1, 1, 1, 0, 1};
    double *out = NULL;
    size_t n = 0;
    assert_int_equal(gf_stats_collect(v, sel, 6, 10, &out, &n), 0);
    assert_int_equal(n, 3);
    assert_true(out[0] == 10 && out[1] == 30 && out[2] == 50);
    free(out);
    assert_int_equal(gf_stats_collect(v, NULL, 6, 1, &out, &n), 0);
    assert_int_equal(n, 4);
    free(out);
    unsigned char none[6] = {0};
    assert_int_equal(gf_stats_collect(v, none, 6, 1, &out, &n), 0);
    assert_null(out);
    assert_int_equal(n, 0);
}

static void test_groups(void **state)
{
    (void)state;
    gf_tsv_column a = {.name = "mode", .kind = GF_TSV_KEY, .present = true, .nkeys = 2};
    gf_tsv_column b = {.name = "shape", .kind = GF_TSV_KEY, .present = true, .nkeys = 2};
    uint8_t ka[] = {1, 0, 1, 0, 1}, kb[] = {0, 0, 0, 1, 0};
    a.key = ka;
    b.key = kb;
    double num[] = {5, 1, 3, NAN, 4};
    gf_tsv_table t = {.nrows = 5};
    gf_group *g = NULL;
    size_t n = 0;
    assert_int_equal(gf_groups_collect(&t, &a, &b, num, NULL, 2, &g, &n), GF_OK);
    assert_int_equal(n, 3);
    /* in key order: (0,0), (0,1), (1,0) */
    assert_true(g[0].a == 0 && g[0].b == 0 && g[0].n == 1 && g[0].v[0] == 2);
    assert_true(g[1].a == 0 && g[1].b == 1 && g[1].n == 0 && g[1].rows == 1);
    assert_true(g[2].a == 1 && g[2].b == 0 && g[2].n == 3 && g[2].rows == 3);
    assert_true(g[2].v[0] == 6 && g[2].v[1] == 8 && g[2].v[2] == 10);
    gf_groups_free(g, n);
    unsigned char sel[] = {0, 1, 0, 0, 0};
    assert_int_equal(gf_groups_collect(&t, &a, NULL, num, sel, 1, &g, &n), GF_OK);
    assert_int_equal(n, 1);
    assert_true(g[0].a == 0 && g[0].n == 1 && g[0].v[0] == 1);
    gf_groups_free(g, n);
    gf_tsv_column numeric = {.kind = GF_TSV_NUM};
    assert_int_equal(gf_groups_collect(&t, &numeric, NULL, num, NULL, 1, &g, &n), GF_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_percentiles),
        cmocka_unit_test(test_fraction_and_cdf),
        cmocka_unit_test(test_collect),
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
