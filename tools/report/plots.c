/*
 * plots.c — gnuplot scripts for the report's plots (plots.h).
 *
 * Design notes: every plot is a list of series (title, style, points) turned into
 * datablocks and one `plot` command by finish(). The distribution plots draw the
 * empirical curve (share of samples <= x) from at most CDF_POINTS points per group; the
 * time plots reduce rows to buckets first. Memory is bounded by keys x buckets
 * (64 x ~900).
 */
#include "plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"
#include "quality.h"
#include "stats.h"

enum { MAX_SERIES = 2 * GF_TSV_MAX_KEYS + 4, MAX_DRAWN = 10, CDF_POINTS = 300 };

typedef struct series {
    char title[2 * GF_TSV_NAME_MAX + 32];
    const char *style; /* gnuplot "with ..." */
    int lt;
    int follows; /* -1, or the series whose visibility this one shares */
    bool notitle, hidden;
    gf_buf data;
    size_t n;
    double peak;
    double weight; /* which series to keep when there are too many: peak, or samples */
} series;

typedef struct plot {
    series s[MAX_SERIES];
    size_t n;
} plot;

static series *add_series(plot *p, const char *title, const char *style, int lt)
{
    if (p->n == MAX_SERIES)
        return NULL;
    series *s = &p->s[p->n++];
    snprintf(s->title, sizeof s->title, "%s", title);
    s->style = style;
    s->lt = lt;
    s->follows = -1;
    s->peak = -INFINITY;
    return s;
}

static void add_point(series *s, double x, double y)
{
    if (!s)
        return;
    gf_buf_printf(&s->data, "%.6g %.6g\n", x, y);
    s->n++;
    if (y > s->peak)
        s->peak = y;
}

static void free_plot(plot *p)
{
    for (size_t i = 0; p && i < p->n; i++)
        gf_buf_free(&p->s[i].data);
    free(p);
}

static int by_weight(const void *a, const void *b)
{
    const series *x = *(const series *const *)a, *y = *(const series *const *)b;
    double wx = x->weight > 0 ? x->weight : x->peak, wy = y->weight > 0 ? y->weight : y->peak;
    return (wx < wy) - (wx > wy);
}

/* Hides all but the MAX_DRAWN primary series of most weight (else highest peak); returns
 * how many primaries it hid. */
static size_t keep_highest(plot *p)
{
    series *order[MAX_SERIES];
    size_t m = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->s[i].follows < 0 && p->s[i].n > 0)
            order[m++] = &p->s[i];
    if (m <= MAX_DRAWN)
        return 0;
    qsort(order, m, sizeof order[0], by_weight);
    for (size_t i = MAX_DRAWN; i < m; i++)
        order[i]->hidden = true;
    for (size_t i = 0; i < p->n; i++)
        if (p->s[i].follows >= 0)
            p->s[i].hidden = p->s[p->s[i].follows].hidden;
    return m - MAX_DRAWN;
}

static void preamble(gf_buf *b)
{
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    gf_buf_puts(b, "set terminal svg size 960,400 dynamic font 'sans-serif,12' "
                   "background '#ffffff'\n"
                   "set output\n"
                   "set encoding utf8\n"
                   "set termoption noenhanced\n"
                   "set border 3 lc rgb '#555555'\n"
                   "set tics nomirror\n"
                   "set grid xtics ytics lc rgb '#e6e6e6' dt 1\n"
                   "set key outside right top Left reverse samplen 2\n"
                   "set yrange [0:*]\n");
    for (int i = 0; i < 10; i++)
        gf_buf_printf(b, "set linetype %d lc rgb '%s' lw 2 pt 7 ps 0.6\n", i + 1, colors[i]);
    gf_buf_puts(b, "set linetype cycle 10\n");
}

/* Appends the datablocks and the plot command; false when nothing is drawable. */
static bool finish(plot *p, gf_buf *b)
{
    size_t drawn = 0;
    for (size_t i = 0; i < p->n; i++) {
        series *s = &p->s[i];
        if (s->hidden || s->n == 0)
            continue;
        gf_buf_printf(b, "$s%zu << EOD\n", i);
        gf_buf_put(b, s->data.p, s->data.len);
        gf_buf_puts(b, "EOD\n");
        drawn += s->follows < 0;
    }
    if (drawn == 0)
        return false;
    gf_buf_puts(b, "plot ");
    bool first = true;
    for (size_t i = 0; i < p->n; i++) {
        series *s = &p->s[i];
        if (s->hidden || s->n == 0)
            continue;
        gf_buf_printf(b, "%s$s%zu using 1:2 with %s lt %d ", first ? "" : ", \\\n  ", i, s->style,
                      s->lt);
        if (s->notitle) {
            gf_buf_puts(b, "notitle");
        } else {
            gf_buf_puts(b, "title '");
            for (const char *c = s->title; *c; c++)
                gf_buf_puts(b, *c == '\'' ? "''" : (char[]){*c, '\0'});
            gf_buf_puts(b, "'");
        }
        first = false;
    }
    gf_buf_puts(b, "\n");
    return true;
}

double gf_plot_bucket_width(double tmax)
{
    return tmax <= 1800 ? 1.0 : ceil(tmax / 900.0);
}

static double t_max(const gf_tsv_table *t)
{
    const gf_tsv_column *c = gf_tsv_find(t, "t");
    double m = 0;
    for (size_t i = 0; c && i < t->nrows; i++)
        if (c->num[i] > m)
            m = c->num[i];
    return m;
}

static bool need(const gf_run *run, gf_run_file f, char *why, size_t whysize)
{
    const char *name = gf_run_file_name(f);
    switch (run->file_state[f]) {
    case GF_RUN_ABSENT:
        snprintf(why, whysize, "the run has no %s", name);
        return false;
    case GF_RUN_UNUSABLE:
        snprintf(why, whysize, "%s is malformed (see Input problems)", name);
        return false;
    default:
        if (run->tables[f]->nrows == 0) {
            snprintf(why, whysize, "%s has no rows", name);
            return false;
        }
        return true;
    }
}

static const gf_tsv_column *column(const gf_run *run, gf_run_file f, const char *name)
{
    const gf_tsv_column *c = gf_tsv_find(run->tables[f], name);
    return c && c->present ? c : NULL;
}

/* The empirical distribution of num per group of (ca, cb), over the selected rows. */
static bool cdf_plot(const gf_run *run, gf_run_file f, const char *ka, const char *kb,
                     const char *value, const unsigned char *sel, double scale, double floor_x,
                     plot *p, char *why, size_t whysize)
{
    const gf_tsv_table *t = run->tables[f];
    const gf_tsv_column *ca = column(run, f, ka), *cb = kb ? column(run, f, kb) : NULL;
    const gf_tsv_column *cv = column(run, f, value);
    if (!cv) {
        snprintf(why, whysize, "%s has no %s column", gf_run_file_name(f), value);
        return false;
    }
    gf_group *g = NULL;
    size_t ng = 0;
    if (gf_groups_collect(t, ca, cb, cv->num, sel, scale, &g, &ng) != GF_OK) {
        snprintf(why, whysize, "out of memory");
        return false;
    }
    double xs[CDF_POINTS], ys[CDF_POINTS];
    for (size_t i = 0; i < ng; i++) {
        if (g[i].n == 0)
            continue;
        char title[2 * GF_TSV_NAME_MAX + 32];
        snprintf(title, sizeof title, "%s%s%s (%zu)", ca->keys[g[i].a], cb ? " " : "",
                 cb ? cb->keys[g[i].b] : "", g[i].n);
        series *s = add_series(p, title, "lines", (int)p->n + 1);
        if (s)
            s->weight = (double)g[i].n;
        size_t k = gf_stats_cdf(g[i].v, g[i].n, CDF_POINTS, xs, ys);
        for (size_t j = 0; j < k; j++)
            add_point(s, xs[j] < floor_x ? floor_x : xs[j], 100.0 * ys[j]);
    }
    gf_groups_free(g, ng);
    if (p->n == 0)
        snprintf(why, whysize, "%s has no %s values to draw", gf_run_file_name(f), value);
    return p->n > 0;
}

static unsigned char *select_assigned(const gf_run *run, const char *mode)
{
    const gf_tsv_table *t = run->tables[GF_RUN_TICKETS];
    unsigned char *sel = malloc(t->nrows ? t->nrows : 1);
    static const char *const names[] = {"outcome", "mode"};
    const char *values[] = {"assigned", mode};
    if (sel)
        gf_quality_select(t, names, values, mode ? 2 : 1, sel);
    return sel;
}

static bool wait_plot(const gf_run *run, plot *p, gf_buf *b, char *why, size_t whysize)
{
    unsigned char *sel = select_assigned(run, NULL);
    bool ok = sel && cdf_plot(run, GF_RUN_TICKETS, "mode", "shape", "wait_ms", sel, 0.001, 0.01, p,
                              why, whysize);
    free(sel);
    if (!ok)
        return false;
    gf_buf_puts(b, "set logscale x 10\nset format x '%g'\nset yrange [0:100]\n"
                   "set xlabel 'wait until assigned (s), log scale; under 10 ms drawn at 10 ms'\n"
                   "set ylabel '% of assigned tickets'\n"
                   "set arrow from 2, graph 0 to 2, graph 1 nohead dt 2 lc rgb '#999999'\n"
                   "set arrow from 30, graph 0 to 30, graph 1 nohead dt 2 lc rgb '#999999'\n"
                   "set label 'p50 goal 2 s' at 2, graph 0.05 offset 0.5,0 tc rgb '#777777'\n"
                   "set label 'p99 goal 30 s' at 30, graph 0.05 offset 0.5,0 tc rgb '#777777'\n");
    return true;
}

static bool spread_plot(const gf_run *run, plot *p, gf_buf *b, char *why, size_t whysize)
{
    if (!cdf_plot(run, GF_RUN_MATCHES, "mode", NULL, "skill_spread", NULL, 1, -INFINITY, p, why,
                  whysize))
        return false;
    gf_buf_puts(b, "set yrange [0:100]\nset xrange [0:*]\n"
                   "set xlabel 'skill spread per match (max - min skill)'\n"
                   "set ylabel '% of matches'\n");
    return true;
}

static bool dping_plot(const gf_run *run, plot *p, gf_buf *b, char *why, size_t whysize)
{
    unsigned char *sel = select_assigned(run, NULL);
    bool ok = sel && cdf_plot(run, GF_RUN_TICKETS, "mode", NULL, "delta_ping_ms", sel, 1, -INFINITY,
                              p, why, whysize);
    free(sel);
    if (!ok)
        return false;
    gf_buf_puts(b, "set yrange [0:100]\nset xrange [0:*]\n"
                   "set xlabel 'delta ping: chosen datacenter minus best (ms)'\n"
                   "set ylabel '% of assigned tickets'\n"
                   "set arrow from 20, graph 0 to 20, graph 1 nohead dt 2 lc rgb '#999999'\n"
                   "set label 'ping_first p95 goal 20 ms' at 20, graph 0.05 offset 0.5,0 "
                   "tc rgb '#777777'\n");
    return true;
}

/* Time buckets of a table: count, width. */
typedef struct buckets {
    double width;
    size_t n;
} buckets;

static buckets time_buckets(const gf_tsv_table *t)
{
    double tmax = t_max(t);
    buckets bk = {gf_plot_bucket_width(tmax), 0};
    bk.n = (size_t)floor(tmax / bk.width) + 1;
    return bk;
}

static void time_axis(gf_buf *b)
{
    gf_buf_puts(b, "set xlabel 'seconds since the start'\nset xrange [0:*]\n");
}

typedef struct mark {
    double value;
    const char *label;
} mark;

/* The last value per key and bucket of a sampled file (t in order), drawn per key, with
 * v2 added to v1 where given; horizontal lines at marks (ended by value 0) the data comes
 * within half of. */
static bool gauge_plot(const gf_run *run, gf_run_file f, const char *key, const char *v1,
                       const char *v2, const mark *marks, plot *p, gf_buf *body, char *why,
                       size_t whysize)
{
    const gf_tsv_table *t = run->tables[f];
    const gf_tsv_column *ck = column(run, f, key), *c1 = column(run, f, v1);
    const gf_tsv_column *c2 = v2 ? column(run, f, v2) : NULL;
    const double *tv = gf_tsv_find(t, "t")->num;
    buckets bk = time_buckets(t);
    double *last = malloc(sizeof *last * GF_TSV_MAX_KEYS * bk.n);
    if (!last) {
        snprintf(why, whysize, "out of memory");
        return false;
    }
    for (size_t i = 0; i < GF_TSV_MAX_KEYS * bk.n; i++)
        last[i] = NAN;
    for (size_t i = 0; i < t->nrows; i++) {
        double v = c1->num[i];
        if (c2 && isfinite(c2->num[i]))
            v += c2->num[i];
        size_t b = (size_t)(tv[i] / bk.width);
        if (isfinite(v))
            last[(size_t)ck->key[i] * bk.n + b] = v;
    }
    double peak = 0;
    for (size_t k = 0; k < ck->nkeys; k++) {
        series *s = add_series(p, ck->keys[k], "lines", (int)k + 1);
        for (size_t b = 0; b < bk.n; b++)
            if (!isnan(last[k * bk.n + b]))
                add_point(s, (double)b * bk.width, last[k * bk.n + b]);
        if (s && s->peak > peak)
            peak = s->peak;
    }
    free(last);
    if (marks) /* threshold lines, once the data comes near them */
        for (size_t i = 0; marks[i].value > 0; i++)
            if (peak >= marks[i].value / 2)
                gf_buf_printf(body,
                              "set arrow from graph 0, first %g to graph 1, first %g nohead "
                              "dt 2 lc rgb '#999999'\n"
                              "set label '%s' at graph 0.01, first %g offset 0,0.6 "
                              "tc rgb '#777777'\n",
                              marks[i].value, marks[i].value, marks[i].label, marks[i].value);
    return true;
}

static bool matches_plot(const gf_run *run, plot *p, gf_buf *b, char *why, size_t whysize,
                         char *caption, size_t capsize)
{
    const gf_tsv_table *t = run->tables[GF_RUN_MATCHES];
    const gf_tsv_column *cr = column(run, GF_RUN_MATCHES, "region");
    const gf_tsv_column *cm = column(run, GF_RUN_MATCHES, "merge");
    const double *tv = gf_tsv_find(t, "t")->num;
    buckets bk = time_buckets(t);
    size_t cells = GF_TSV_MAX_KEYS * bk.n;
    double *count = calloc(cells, sizeof *count), *merged = calloc(cells, sizeof *merged);
    if (!count || !merged) {
        free(count);
        free(merged);
        snprintf(why, whysize, "out of memory");
        return false;
    }
    int on = cm ? gf_tsv_key_index(cm, "on") : -1;
    for (size_t i = 0; i < t->nrows; i++) {
        size_t cell = (size_t)cr->key[i] * bk.n + (size_t)(tv[i] / bk.width);
        count[cell]++;
        if (on >= 0 && cm->key[i] == on)
            merged[cell]++;
    }
    for (size_t r = 0; r < cr->nkeys; r++) {
        int line = (int)p->n;
        series *s = add_series(p, cr->keys[r], "lines", (int)r + 1);
        for (size_t k = 0; k < bk.n; k++)
            add_point(s, (double)k * bk.width, count[r * bk.n + k] / bk.width);
        series *m = add_series(p, "", "points pt 7 ps 0.7", (int)r + 1);
        if (!m)
            continue;
        m->notitle = true;
        m->follows = line;
        for (size_t k = 0; k < bk.n; k++)
            if (merged[r * bk.n + k] > 0)
                add_point(m, (double)k * bk.width, count[r * bk.n + k] / bk.width);
    }
    free(count);
    free(merged);
    if (on >= 0) {
        series *legend = add_series(p, "dot: merge on", "points pt 7 ps 0.7 lc rgb '#444444'", 1);
        if (legend) {
            legend->follows = 0;
            add_point(legend, NAN, NAN);
        }
    } else {
        snprintf(caption, capsize, "%s",
                 cm ? "The merge was never on in this run."
                    : "matches.tsv has no merge column: merge on/off is not shown.");
    }
    gf_buf_puts(b, "set ylabel 'matches per second'\n");
    time_axis(b);
    return true;
}

static bool alloc_plot(const gf_run *run, plot *p, gf_buf *b, char *why, size_t whysize)
{
    const gf_tsv_table *t = run->tables[GF_RUN_MATCHES];
    const gf_tsv_column *ca = column(run, GF_RUN_MATCHES, "alloc_ms");
    if (!ca) {
        snprintf(why, whysize, "matches.tsv has no alloc_ms column");
        return false;
    }
    const double *tv = gf_tsv_find(t, "t")->num;
    buckets bk = time_buckets(t);
    size_t *count = calloc(bk.n + 1, sizeof *count);
    double *v = malloc(sizeof *v * (t->nrows ? t->nrows : 1));
    if (!count || !v) {
        free(count);
        free(v);
        snprintf(why, whysize, "out of memory");
        return false;
    }
    /* counting sort of the measured values by bucket, then each bucket's own sort */
    for (size_t i = 0; i < t->nrows; i++)
        if (isfinite(ca->num[i]))
            count[(size_t)(tv[i] / bk.width) + 1]++;
    for (size_t k = 1; k <= bk.n; k++)
        count[k] += count[k - 1];
    size_t *fill = calloc(bk.n, sizeof *fill);
    if (!fill) {
        free(count);
        free(v);
        snprintf(why, whysize, "out of memory");
        return false;
    }
    for (size_t i = 0; i < t->nrows; i++)
        if (isfinite(ca->num[i])) {
            size_t k = (size_t)(tv[i] / bk.width);
            v[count[k] + fill[k]++] = ca->num[i];
        }
    /* p99 first: where a second has few allocations its p95 is its p99 (nearest rank),
     * and the line drawn last is the one seen */
    static const double ps[] = {99, 95, 50};
    series *s[3];
    for (int j = 0; j < 3; j++) {
        char title[16];
        snprintf(title, sizeof title, "p%.0f", ps[j]);
        s[j] = add_series(p, title, "lines", j + 1);
    }
    for (size_t k = 0; k < bk.n; k++) {
        size_t n = count[k + 1] - count[k];
        if (n == 0)
            continue;
        gf_stats_sort(v + count[k], n);
        for (int j = 0; j < 3; j++)
            add_point(s[j], (double)k * bk.width, gf_stats_percentile(v + count[k], n, ps[j]));
    }
    free(count);
    free(fill);
    free(v);
    if (s[2]->n == 0) {
        snprintf(why, whysize, "matches.tsv has no allocation times (alloc_ms is '-' throughout)");
        return false;
    }
    gf_buf_puts(b, "set ylabel 'allocation time (ms)'\n");
    time_axis(b);
    return true;
}

static bool fleet_plot(const gf_run *run, plot *p, gf_buf *b, char *why, size_t whysize)
{
    const gf_tsv_table *t = run->tables[GF_RUN_FLEET];
    const gf_tsv_column *cd = column(run, GF_RUN_FLEET, "datacenter");
    static const char *const states[] = {"warm", "free", "busy"};
    const double *tv = gf_tsv_find(t, "t")->num;
    buckets bk = time_buckets(t);
    /* per datacenter, the last value of each state carried forward; summed per bucket */
    double cur[3][GF_TSV_MAX_KEYS];
    for (int j = 0; j < 3; j++)
        for (size_t d = 0; d < GF_TSV_MAX_KEYS; d++)
            cur[j][d] = 0;
    series *s[3];
    const double *val[3];
    for (int j = 0; j < 3; j++) {
        s[j] = add_series(p, states[j], "lines", j + 1);
        val[j] = gf_tsv_find(t, states[j])->num;
    }
    size_t i = 0;
    for (size_t k = 0; k < bk.n; k++) {
        bool any = false;
        for (; i < t->nrows && (size_t)(tv[i] / bk.width) == k; i++, any = true)
            for (int j = 0; j < 3; j++)
                cur[j][cd ? cd->key[i] : 0] = val[j][i];
        if (!any)
            continue;
        for (int j = 0; j < 3; j++) {
            double sum = 0;
            for (size_t d = 0; d < GF_TSV_MAX_KEYS; d++)
                sum += cur[j][d];
            add_point(s[j], (double)k * bk.width, sum);
        }
    }
    (void)why;
    (void)whysize;
    gf_buf_puts(b, "set ylabel 'game servers (all datacenters)'\n");
    time_axis(b);
    return true;
}

static bool events_plot(const gf_run *run, plot *p, gf_buf *b, char *why, size_t whysize)
{
    const gf_tsv_table *t = run->tables[GF_RUN_EVENTS];
    const double *tv = gf_tsv_find(t, "t")->num;
    buckets bk = time_buckets(t);
    double *dv = malloc(sizeof *dv * bk.n), *dt = malloc(sizeof *dt * bk.n);
    if (!dv || !dt) {
        free(dv);
        free(dt);
        snprintf(why, whysize, "out of memory");
        return false;
    }
    int lt = 1;
    for (size_t c = 0; c < t->ncols; c++) {
        const gf_tsv_column *col = &t->cols[c];
        if (strcmp(col->name, "t") == 0)
            continue;
        for (size_t k = 0; k < bk.n; k++)
            dv[k] = dt[k] = 0;
        double pt = NAN, pv = NAN;
        for (size_t i = 0; i < t->nrows; i++) {
            if (isnan(col->num[i]))
                continue;
            if (!isnan(pv) && tv[i] > pt) {
                size_t k = (size_t)(tv[i] / bk.width);
                dv[k] += col->num[i] - pv;
                dt[k] += tv[i] - pt;
            }
            pt = tv[i];
            pv = col->num[i];
        }
        char title[GF_TSV_NAME_MAX + 8];
        snprintf(title, sizeof title, "%s/s", col->name);
        series *s = add_series(p, title, "lines", lt++);
        for (size_t k = 0; k < bk.n; k++)
            if (dt[k] > 0)
                add_point(s, (double)k * bk.width, dv[k] / dt[k]);
    }
    free(dv);
    free(dt);
    if (lt == 1) {
        snprintf(why, whysize, "events.tsv has no counter columns");
        return false;
    }
    bool any = false;
    for (size_t i = 0; i < p->n; i++)
        any = any || p->s[i].n > 0;
    if (!any) {
        snprintf(why, whysize,
                 "events.tsv needs a counter's value at two different times to "
                 "give a rate");
        return false;
    }
    gf_buf_puts(b, "set ylabel 'events per second'\n");
    time_axis(b);
    return true;
}

static const mark lag_marks[] = {
    {GF_LAG_WARNING, "warning 1,000"}, {GF_LAG_CRITICAL, "critical 10,000"}, {0, NULL}};

static const gf_run_file plot_file[GF_PLOT__COUNT] = {
    GF_RUN_TICKETS, GF_RUN_MATCHES, GF_RUN_TICKETS, GF_RUN_QUEUES, GF_RUN_MATCHES,
    GF_RUN_MATCHES, GF_RUN_FLEET,   GF_RUN_EVENTS,  GF_RUN_LAG,
};

bool gf_plot_script(const gf_run *run, gf_plot_id id, gf_buf *script, char *why, size_t whysize,
                    char *caption, size_t capsize)
{
    caption[0] = '\0';
    why[0] = '\0';
    if (id >= GF_PLOT__COUNT || !need(run, plot_file[id], why, whysize))
        return false;
    plot *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(why, whysize, "out of memory");
        return false;
    }
    gf_buf body = {0};
    bool ok = false;
    switch (id) {
    case GF_PLOT_WAIT:
        ok = wait_plot(run, p, &body, why, whysize);
        break;
    case GF_PLOT_SPREAD:
        ok = spread_plot(run, p, &body, why, whysize);
        break;
    case GF_PLOT_DPING:
        ok = dping_plot(run, p, &body, why, whysize);
        break;
    case GF_PLOT_QUEUES:
        ok = gauge_plot(run, GF_RUN_QUEUES, "queue", "waiting", NULL, NULL, p, &body, why, whysize);
        gf_buf_puts(&body, "set ylabel 'tickets waiting'\n");
        time_axis(&body);
        break;
    case GF_PLOT_MATCHES:
        ok = matches_plot(run, p, &body, why, whysize, caption, capsize);
        break;
    case GF_PLOT_ALLOC:
        ok = alloc_plot(run, p, &body, why, whysize);
        break;
    case GF_PLOT_FLEET:
        ok = fleet_plot(run, p, &body, why, whysize);
        break;
    case GF_PLOT_EVENTS:
        ok = events_plot(run, p, &body, why, whysize);
        break;
    case GF_PLOT_LAG:
        ok = gauge_plot(run, GF_RUN_LAG, "consumer", "pending", "ack_pending", lag_marks, p, &body,
                        why, whysize);
        gf_buf_puts(&body, "set ylabel 'pending + in flight (messages)'\n");
        time_axis(&body);
        break;
    default:
        break;
    }
    if (ok) {
        size_t hidden = keep_highest(p);
        if (hidden)
            snprintf(caption, capsize,
                     "The %d largest (by peak, or by samples for a distribution) are drawn; "
                     "%zu more are not.",
                     MAX_DRAWN, hidden);
        preamble(script);
        gf_buf_put(script, body.p, body.len);
        ok = finish(p, script);
        if (!ok)
            snprintf(why, whysize, "%s has nothing to draw", gf_run_file_name(plot_file[id]));
    }
    gf_buf_free(&body);
    free_plot(p);
    return ok;
}
