/*
 * report.h — the HTML report of a run: one self-contained file (inline CSS and SVG, no
 * script, nothing fetched: its Content-Security-Policy forbids every fetch).
 *
 * Sections, each an element with a stable id (the tests look for them):
 *   verdict (header), quality, invariants, waits, match-quality, queues, matches,
 *   allocation, fleet, events, leaderboard, dlq, analytics, crashes, restarts, run,
 *   problems.
 * Every plot is a <figure class="plot" data-plot="NAME"> holding one inline <svg>; a plot
 * without data is a <p class="not-measured" data-plot="NAME"> saying why.
 *
 * Every string from the run goes through gf_buf_html. Ownership: out is the caller's.
 */
#ifndef GAMEFN_REPORT_REPORT_H
#define GAMEFN_REPORT_REPORT_H

#include <stddef.h>

#include "buf.h"
#include "plots.h"
#include "quality.h"
#include "run.h"

typedef struct gf_report_opts {
    int gnuplot_timeout_ms;
    const char *gnuplot_version; /* shown in the footer */
    const char *generated_at;    /* RFC 3339, shown in the footer */
} gf_report_opts;

typedef struct gf_report_result {
    gf_verdict verdict;
    gf_figure figures[GF_FIG__COUNT];
    size_t plots_drawn, plots_not_measured, plots_failed;
    char first_failure[320]; /* why the first plot that failed failed */
} gf_report_result;

/* The plot names of data-plot, in gf_plot_id order. */
const char *gf_report_plot_name(gf_plot_id id);

/* Renders the report of run into out (check out->oom after). */
void gf_report_render(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                      gf_report_result *res);

/* Sections (report_sections.c): data tables and their plots. */
void gf_report_plot(const gf_run *run, const gf_report_opts *o, gf_plot_id id, gf_buf *out,
                    gf_report_result *res);
void gf_report_waits(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                     gf_report_result *res);
void gf_report_match_quality(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                             gf_report_result *res);
void gf_report_matches(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                       gf_report_result *res);
void gf_report_allocation(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                          gf_report_result *res);
void gf_report_events(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                      gf_report_result *res);

/* The event log's functions (report_log.c): events per minute by type, crash groups. */
void gf_report_analytics(const gf_run *run, gf_buf *out);
void gf_report_crashes(const gf_run *run, gf_buf *out);

/* "not measured" paragraph for a section or a plot (plot may be NULL). */
void gf_report_not_measured(gf_buf *out, const char *plot, const char *why);

#endif
