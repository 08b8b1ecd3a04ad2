/*
 * stats.c — percentiles and distribution curves (stats.h).
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void gf_stats_sort(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_double);
}

double gf_stats_percentile(const double *sorted, size_t n, double p)
{
    if (n == 0 || !(p >= 0.0 && p <= 100.0))
        return NAN;
    double r = ceil(p / 100.0 * (double)n);
    size_t rank = r < 1.0 ? 1 : (size_t)r;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

double gf_stats_fraction_le(const double *sorted, size_t n, double x)
{
    size_t lo = 0, hi = n; /* first index with sorted[i] > x */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return n ? (double)lo / (double)n : 0.0;
}

size_t gf_stats_cdf(const double *sorted, size_t n, size_t max_points, double *xs, double *ys)
{
    if (n == 0 || max_points == 0)
        return 0;
    if (max_points == 1) {
        xs[0] = sorted[n - 1];
        ys[0] = 1.0;
        return 1;
    }
    size_t k = n < max_points ? n : max_points;
    for (size_t i = 0; i < k; i++) {
        /* rank from 1 to n, evenly spread over the k points */
        size_t rank = k == 1 ? n : 1 + (size_t)((double)(n - 1) * (double)i / (double)(k - 1));
        xs[i] = sorted[rank - 1];
        ys[i] = (double)rank / (double)n;
    }
    return k;
}

int gf_stats_collect(const double *v, const unsigned char *sel, size_t n, double scale,
                     double **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if ((!sel || sel[i]) && isfinite(v[i]))
            m++;
    if (m == 0)
        return 0;
    double *a = malloc(sizeof *a * m);
    if (!a)
        return -1;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if ((!sel || sel[i]) && isfinite(v[i]))
            a[j++] = v[i] * scale;
    gf_stats_sort(a, m);
    *out = a;
    *nout = m;
    return 0;
}
