/*
 * plots.h — the report's plots as gnuplot scripts (drawn by gnuplot.c).
 *
 * Each script is self-contained: the data goes in as inline datablocks ($s0 << EOD),
 * so nothing is written to disk, and the SVG comes out on gnuplot's standard output.
 * A plot whose data is missing is not drawn: gf_plot_script says why, and the report
 * prints "not measured" with that reason instead of an empty frame.
 *
 * Time series are drawn per second; a run longer than 30 minutes is drawn in wider
 * buckets (at most ~900): counts become rates over the bucket, sampled values its last
 * sample. A plot of many keys (queues, consumers, modes x shapes) draws the 10 largest (by
 * peak; a distribution by its samples) and says how many it left out.
 *
 * Titles come from KEY columns (tokens: no quote can break out of gnuplot's strings) and
 * fixed text; gnuplot's SVG escapes them for XML.
 */
#ifndef GAMEFN_REPORT_PLOTS_H
#define GAMEFN_REPORT_PLOTS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "run.h"

typedef enum gf_plot_id {
    GF_PLOT_WAIT,    /* wait distribution per mode and shape */
    GF_PLOT_SPREAD,  /* skill spread per match, per mode */
    GF_PLOT_DPING,   /* delta ping per ticket, per mode */
    GF_PLOT_QUEUES,  /* tickets waiting per queue over time */
    GF_PLOT_MATCHES, /* matches/s per region, merge on marked */
    GF_PLOT_ALLOC,   /* allocation time p50/p95/p99 over time */
    GF_PLOT_FLEET,   /* servers warm / free / busy over time */
    GF_PLOT_EVENTS,  /* events/s per counter over time */
    GF_PLOT_LAG,     /* consumer lag over time */
    GF_PLOT__COUNT
} gf_plot_id;

/* Writes plot id's gnuplot script into script and returns true; or returns false with
 * why ("tickets.tsv: the run has no such file", ...). caption receives a remark on what
 * was drawn ("" if none). */
bool gf_plot_script(const gf_run *run, gf_plot_id id, gf_buf *script, char *why, size_t whysize,
                    char *caption, size_t capsize);

/* The bucket width in seconds for a run whose last time is tmax. */
double gf_plot_bucket_width(double tmax);

#endif
