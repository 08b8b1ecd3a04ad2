/*
 * stats.h — the figures the report draws from samples: percentiles and points of a
 * distribution's curve.
 *
 * Percentiles are nearest-rank (the value at rank ceil(p/100 * n), 1-based, of the
 * sorted samples): every figure is a value that was measured, p100 is the maximum and p0
 * the minimum. NAN samples (not measured) are left out by gf_stats_collect and must not
 * be passed to the others.
 *
 * Pure, reentrant; nothing is allocated except by gf_stats_collect (the caller frees).
 */
#ifndef GAMEFN_REPORT_STATS_H
#define GAMEFN_REPORT_STATS_H

#include <stddef.h>

/* Sorts v[0..n) ascending. */
void gf_stats_sort(double *v, size_t n);

/* The p-th percentile (0 <= p <= 100) of sorted[0..n): NAN when n is 0 or p is out of
 * range. */
double gf_stats_percentile(const double *sorted, size_t n, double p);

/* The fraction of sorted[0..n) that is <= x (0 when n is 0). */
double gf_stats_fraction_le(const double *sorted, size_t n, double x);

/* At most max_points (x, y) points of the empirical distribution of sorted[0..n): y is
 * the fraction of samples <= x, the last point (max, 1). Evenly spaced in rank; always
 * includes the first and last samples. Returns the number written to xs/ys. */
size_t gf_stats_cdf(const double *sorted, size_t n, size_t max_points, double *xs, double *ys);

/* The finite values of v[0..n) (NANs left out) whose index i has sel == NULL or
 * sel[i] != 0, multiplied by scale, in a new sorted array (*out, *nout). *out is NULL when
 * nothing is selected. Returns 0, or -1 when out of memory. */
int gf_stats_collect(const double *v, const unsigned char *sel, size_t n, double scale,
                     double **out, size_t *nout);

#endif
