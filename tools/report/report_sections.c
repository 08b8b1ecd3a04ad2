/*
 * report_sections.c — the report's data sections: tables computed from the rows, and the
 * plots drawn by gnuplot next to them (report.h).
 *
 * Design notes: a plot is drawn by gf_report_plot alone, so every plot goes through the
 * same path: a script from plots.c, gnuplot, the SVG inlined with a per-plot id prefix,
 * or a "not measured" / "could not be drawn" paragraph that says why.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gnuplot.h"
#include "groups.h"
#include "report.h"
#include "stats.h"

void gf_report_plot(const gf_run *run, const gf_report_opts *o, gf_plot_id id, gf_buf *out,
                    gf_report_result *res)
{
    const char *name = gf_report_plot_name(id);
    gf_buf script = {0}, svg = {0};
    char why[320], caption[200];
    if (!gf_plot_script(run, id, &script, why, sizeof why, caption, sizeof caption)) {
        gf_report_not_measured(out, name, why);
        res->plots_not_measured++;
        goto done;
    }
    if (script.oom) {
        snprintf(why, sizeof why, "out of memory");
    } else if (gf_gnuplot_run(script.p, script.len, o->gnuplot_timeout_ms, &svg, why, sizeof why) ==
               GF_OK) {
        char prefix[40];
        snprintf(prefix, sizeof prefix, "p%d-", (int)id);
        gf_buf_printf(out, "<figure class=\"plot\" data-plot=\"%s\">\n", name);
        if (gf_svg_inline(svg.p, svg.len, prefix, out) == GF_OK) {
            if (caption[0]) {
                gf_buf_puts(out, "<figcaption>");
                gf_buf_html(out, caption);
                gf_buf_puts(out, "</figcaption>\n");
            }
            gf_buf_puts(out, "</figure>\n");
            res->plots_drawn++;
            goto done;
        }
        gf_buf_puts(out, "</figure>\n");
        snprintf(why, sizeof why, "gnuplot's output has no <svg> element");
    }
    gf_buf_printf(out, "<p class=\"not-measured\" data-plot=\"%s\">Could not be drawn: ", name);
    gf_buf_html(out, why);
    gf_buf_puts(out, ".</p>\n");
    if (res->plots_failed++ == 0)
        snprintf(res->first_failure, sizeof res->first_failure, "%.40s: %.270s", name, why);
done:
    gf_buf_free(&script);
    gf_buf_free(&svg);
}

static bool loaded(const gf_run *run, gf_run_file f, gf_buf *out)
{
    if (run->file_state[f] == GF_RUN_LOADED)
        return true;
    char why[160];
    snprintf(why, sizeof why, "%s %s", gf_run_file_name(f),
             run->file_state[f] == GF_RUN_ABSENT ? "is not in the run"
                                                 : "is malformed (see Input problems)");
    gf_report_not_measured(out, NULL, why);
    return false;
}

static const gf_tsv_column *col(const gf_run *run, gf_run_file f, const char *name)
{
    const gf_tsv_column *c = gf_tsv_find(run->tables[f], name);
    return c && c->present ? c : NULL;
}

/* A table cell with a percentile of sorted[0..n), "-" when n is 0. */
static void cell_pct(gf_buf *out, const double *sorted, size_t n, double p, int decimals)
{
    if (n == 0) {
        gf_buf_puts(out, "<td class=\"num\">-</td>");
        return;
    }
    gf_buf_printf(out, "<td class=\"num\">%.*f</td>", decimals, gf_stats_percentile(sorted, n, p));
}

/* Table cells with the p50, p95, p99 (if with_p99) and the maximum of sorted[0..n). */
static void cells_pcts(gf_buf *out, const double *sorted, size_t n, bool with_p99, int decimals)
{
    cell_pct(out, sorted, n, 50, decimals);
    cell_pct(out, sorted, n, 95, decimals);
    if (with_p99)
        cell_pct(out, sorted, n, 99, decimals);
    cell_pct(out, sorted, n, 100, decimals);
}

void gf_report_waits(const gf_run *run, const gf_report_opts *o, gf_buf *out, gf_report_result *res)
{
    gf_buf_puts(out, "<section id=\"waits\"><h2>Wait time per mode and shape</h2>\n"
                     "<p class=\"expl\">Wait: from submitting the ticket to being assigned a "
                     "server, over assigned tickets. Cancelled and timed-out tickets are "
                     "counted, not timed.</p>\n");
    if (!loaded(run, GF_RUN_TICKETS, out)) {
        gf_report_plot(run, o, GF_PLOT_WAIT, out, res);
        gf_buf_puts(out, "</section>\n");
        return;
    }
    const gf_tsv_table *t = run->tables[GF_RUN_TICKETS];
    const gf_tsv_column *cm = col(run, GF_RUN_TICKETS, "mode"),
                        *cs = col(run, GF_RUN_TICKETS, "shape"),
                        *co = col(run, GF_RUN_TICKETS, "outcome"),
                        *cw = col(run, GF_RUN_TICKETS, "wait_ms");
    int assigned = gf_tsv_key_index(co, "assigned"), cancelled = gf_tsv_key_index(co, "cancelled"),
        timed_out = gf_tsv_key_index(co, "timed_out");
    /* the waits of assigned tickets (others NAN: counted in their group, not timed), and
     * per (mode, shape) cell the cancelled and timed-out counts */
    double *w = malloc(sizeof *w * (t->nrows ? t->nrows : 1));
    size_t(*ended)[2] = calloc((size_t)GF_TSV_MAX_KEYS * GF_TSV_MAX_KEYS, sizeof *ended);
    gf_group *g = NULL;
    size_t ng = 0;
    if (!w || !ended) {
        out->oom = true;
        goto done;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        w[r] = co->key[r] == assigned ? cw->num[r] / 1000.0 : NAN;
        size_t cell = (size_t)cm->key[r] * GF_TSV_MAX_KEYS + cs->key[r];
        ended[cell][0] += co->key[r] == cancelled;
        ended[cell][1] += co->key[r] == timed_out;
    }
    if (gf_groups_collect(t, cm, cs, w, NULL, 1, &g, &ng) != GF_OK) {
        out->oom = true;
        goto done;
    }
    gf_buf_puts(out, "<table><tr><th>mode</th><th>shape</th><th>assigned</th>"
                     "<th>p50 (s)</th><th>p95 (s)</th><th>p99 (s)</th><th>max (s)</th>"
                     "<th>cancelled</th><th>timed out</th></tr>\n");
    for (size_t i = 0; i < ng; i++) {
        size_t cell = (size_t)g[i].a * GF_TSV_MAX_KEYS + (size_t)g[i].b;
        gf_buf_puts(out, "<tr><td>");
        gf_buf_html(out, cm->keys[g[i].a]);
        gf_buf_puts(out, "</td><td>");
        gf_buf_html(out, cs->keys[g[i].b]);
        gf_buf_printf(out, "</td><td class=\"num\">%zu</td>", g[i].n);
        cells_pcts(out, g[i].v, g[i].n, true, 2);
        gf_buf_printf(out, "<td class=\"num\">%zu</td><td class=\"num\">%zu</td></tr>\n",
                      ended[cell][0], ended[cell][1]);
    }
done:
    free(w);
    free(ended);
    gf_groups_free(g, ng);
    gf_buf_puts(out, "</table>\n");
    gf_report_plot(run, o, GF_PLOT_WAIT, out, res);
    gf_buf_puts(out, "</section>\n");
}

/* One row per mode: count and p50/p95/max of a column, over the selected rows. */
static void per_mode_table(const gf_run *run, gf_run_file f, const char *value,
                           const unsigned char *sel, const char *unit, const char *count_what,
                           gf_buf *out)
{
    const gf_tsv_column *cm = col(run, f, "mode"), *cv = col(run, f, value);
    if (!cv) {
        char why[120];
        snprintf(why, sizeof why, "%s has no %s column", gf_run_file_name(f), value);
        gf_report_not_measured(out, NULL, why);
        return;
    }
    gf_group *g = NULL;
    size_t ng = 0;
    if (gf_groups_collect(run->tables[f], cm, NULL, cv->num, sel, 1, &g, &ng) != GF_OK) {
        out->oom = true;
        return;
    }
    gf_buf_printf(out,
                  "<table><tr><th>mode</th><th>%s</th><th>p50 %s</th><th>p95 %s</th>"
                  "<th>max %s</th></tr>\n",
                  count_what, unit, unit, unit);
    for (size_t i = 0; i < ng; i++) {
        gf_buf_puts(out, "<tr><td>");
        gf_buf_html(out, cm->keys[g[i].a]);
        gf_buf_printf(out, "</td><td class=\"num\">%zu</td>", g[i].n);
        cells_pcts(out, g[i].v, g[i].n, false, 1);
        gf_buf_puts(out, "</tr>\n");
    }
    gf_buf_puts(out, "</table>\n");
    gf_groups_free(g, ng);
}

void gf_report_match_quality(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                             gf_report_result *res)
{
    gf_buf_puts(out, "<section id=\"match-quality\"><h2>Skill spread and delta ping per "
                     "mode</h2>\n<h3>Skill spread per match</h3>\n<p class=\"expl\">Highest "
                     "minus lowest skill among a match's players.</p>\n");
    if (loaded(run, GF_RUN_MATCHES, out))
        per_mode_table(run, GF_RUN_MATCHES, "skill_spread", NULL, "", "matches", out);
    gf_report_plot(run, o, GF_PLOT_SPREAD, out, res);
    gf_buf_puts(out, "<h3>Delta ping per ticket</h3>\n<p class=\"expl\">Ping to the chosen "
                     "datacenter minus the ticket's best ping, over assigned tickets.</p>\n");
    if (loaded(run, GF_RUN_TICKETS, out)) {
        const gf_tsv_table *t = run->tables[GF_RUN_TICKETS];
        unsigned char *sel = malloc(t->nrows ? t->nrows : 1);
        static const char *const names[] = {"outcome"};
        static const char *const values[] = {"assigned"};
        if (sel) {
            gf_quality_select(t, names, values, 1, sel);
            per_mode_table(run, GF_RUN_TICKETS, "delta_ping_ms", sel, "(ms)", "tickets", out);
        } else {
            out->oom = true;
        }
        free(sel);
    }
    gf_report_plot(run, o, GF_PLOT_DPING, out, res);
    gf_buf_puts(out, "</section>\n");
}

void gf_report_matches(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                       gf_report_result *res)
{
    gf_buf_puts(out, "<section id=\"matches\"><h2>Matches per region</h2>\n<p class=\"expl\">"
                     "Matches formed per second in each region. Dots mark the seconds in which "
                     "the region's matches came from merged queues (the low-population merge "
                     "on).</p>\n");
    if (loaded(run, GF_RUN_MATCHES, out)) {
        const gf_tsv_table *t = run->tables[GF_RUN_MATCHES];
        const gf_tsv_column *cr = col(run, GF_RUN_MATCHES, "region"),
                            *cm = col(run, GF_RUN_MATCHES, "merge");
        int on = cm ? gf_tsv_key_index(cm, "on") : -1;
        gf_buf_puts(out, "<table><tr><th>region</th><th>matches</th><th>merge on</th></tr>\n");
        for (size_t r = 0; r < cr->nkeys; r++) {
            size_t n = 0, m = 0;
            for (size_t i = 0; i < t->nrows; i++)
                if (cr->key[i] == r) {
                    n++;
                    m += on >= 0 && cm->key[i] == on;
                }
            gf_buf_puts(out, "<tr><td>");
            gf_buf_html(out, cr->keys[r]);
            if (cm)
                gf_buf_printf(
                    out, "</td><td class=\"num\">%zu</td><td class=\"num\">%zu</td></tr>\n", n, m);
            else
                gf_buf_printf(out, "</td><td class=\"num\">%zu</td><td>not recorded</td></tr>\n",
                              n);
        }
        gf_buf_puts(out, "</table>\n");
    }
    gf_report_plot(run, o, GF_PLOT_MATCHES, out, res);
    gf_buf_puts(out, "</section>\n");
}

void gf_report_allocation(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                          gf_report_result *res)
{
    gf_buf_puts(out, "<section id=\"allocation\"><h2>Allocation time</h2>\n<p class=\"expl\">"
                     "From a match being formed to its game server being assigned.</p>\n");
    if (loaded(run, GF_RUN_MATCHES, out)) {
        const gf_tsv_table *t = run->tables[GF_RUN_MATCHES];
        const gf_tsv_column *ca = col(run, GF_RUN_MATCHES, "alloc_ms");
        double *v = NULL;
        size_t n = 0;
        if (!ca) {
            gf_report_not_measured(out, NULL, "matches.tsv has no alloc_ms column");
        } else if (gf_stats_collect(ca->num, NULL, t->nrows, 1, &v, &n) != 0) {
            out->oom = true;
        } else {
            gf_buf_puts(out, "<table><tr><th>allocated</th><th>not allocated</th><th>p50 (ms)"
                             "</th><th>p95 (ms)</th><th>p99 (ms)</th><th>max (ms)</th></tr>\n");
            gf_buf_printf(out, "<tr><td class=\"num\">%zu</td><td class=\"num\">%zu</td>", n,
                          t->nrows - n);
            cells_pcts(out, v, n, true, 1);
            gf_buf_puts(out, "</tr></table>\n");
        }
        free(v);
    }
    gf_report_plot(run, o, GF_PLOT_ALLOC, out, res);
    gf_buf_puts(out, "</section>\n");
}

void gf_report_events(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                      gf_report_result *res)
{
    gf_buf_puts(out, "<section id=\"events\"><h2>Events and consumer lag</h2>\n"
                     "<h3>Events per second</h3>\n");
    if (loaded(run, GF_RUN_EVENTS, out)) {
        const gf_tsv_table *t = run->tables[GF_RUN_EVENTS];
        gf_buf_puts(out, "<table><tr><th>counter</th><th>total</th><th>mean per second</th>"
                         "</tr>\n");
        const double *tv = gf_tsv_find(t, "t")->num;
        for (size_t c = 0; c < t->ncols; c++) {
            const gf_tsv_column *k = &t->cols[c];
            if (strcmp(k->name, "t") == 0)
                continue;
            double first = NAN, last = NAN, t0 = NAN, t1 = NAN;
            for (size_t i = 0; i < t->nrows; i++)
                if (!isnan(k->num[i])) {
                    if (isnan(first)) {
                        first = k->num[i];
                        t0 = tv[i];
                    }
                    last = k->num[i];
                    t1 = tv[i];
                }
            gf_buf_puts(out, "<tr><td>");
            gf_buf_html(out, k->name);
            if (isnan(last))
                gf_buf_puts(out, "</td><td class=\"num\">-</td><td class=\"num\">-</td></tr>\n");
            else if (t1 > t0)
                gf_buf_printf(out,
                              "</td><td class=\"num\">%.0f</td><td class=\"num\">%.1f</td></tr>\n",
                              last, (last - first) / (t1 - t0));
            else
                gf_buf_printf(
                    out, "</td><td class=\"num\">%.0f</td><td class=\"num\">-</td></tr>\n", last);
        }
        gf_buf_puts(out, "</table>\n");
    }
    gf_report_plot(run, o, GF_PLOT_EVENTS, out, res);
    gf_buf_puts(out, "<h3>Consumer lag</h3>\n<p class=\"expl\">Messages not yet delivered "
                     "(pending) plus delivered and not yet acknowledged (in flight), per "
                     "durable consumer; the alert thresholds are 1,000 (warning) and 10,000 "
                     "(critical).</p>\n");
    if (loaded(run, GF_RUN_LAG, out)) {
        const gf_tsv_table *t = run->tables[GF_RUN_LAG];
        const gf_tsv_column *cc = col(run, GF_RUN_LAG, "consumer"),
                            *cp = col(run, GF_RUN_LAG, "pending"),
                            *ca = col(run, GF_RUN_LAG, "ack_pending");
        gf_buf_puts(out, "<table><tr><th>consumer</th><th>peak lag</th><th>last lag</th></tr>\n");
        for (size_t k = 0; k < cc->nkeys; k++) {
            double peak = 0, last = 0;
            for (size_t i = 0; i < t->nrows; i++) {
                if (cc->key[i] != k)
                    continue;
                last = cp->num[i] + (ca && isfinite(ca->num[i]) ? ca->num[i] : 0);
                if (last > peak)
                    peak = last;
            }
            gf_buf_puts(out, "<tr><td>");
            gf_buf_html(out, cc->keys[k]);
            gf_buf_printf(out, "</td><td class=\"num\">%.0f</td><td class=\"num\">%.0f</td></tr>\n",
                          peak, last);
        }
        gf_buf_puts(out, "</table>\n");
    }
    gf_report_plot(run, o, GF_PLOT_LAG, out, res);
    gf_buf_puts(out, "</section>\n");
}
