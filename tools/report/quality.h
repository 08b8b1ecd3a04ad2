/*
 * quality.h — the run's quality figures against their goals, and the verdict a reader
 * sees first (docs/REPORT.md, "Reading a report").
 *
 * Figures (all from the raw rows, nearest-rank percentiles):
 *   wait p50 / p99     assigned tickets of the headline queue (hybrid 5v5)   < 2 s / < 30 s
 *                      the goals apply at mid population (summary run.population)
 *   delta ping p95     assigned ping_first tickets                          <= 20 ms
 *   skill spread p95   sbmm matches                                         (reported)
 *   limit violations   check.json's limit_violations                        0
 *   merge              low_pop_region's p95 wait, merge on vs off           on <= off / 2
 *
 * Verdict: UNHEALTHY when anything fails (an invariant count > 0, a goal missed, an
 * unplanned restart, an event gap still open, a failed run); else INCOMPLETE when
 * something needed to judge is missing (no check.json, an invariant not checked, a goal
 * not measured, restarts not recorded, malformed input, a run that did not complete);
 * else HEALTHY. Notes (DLQ messages, planned restarts, a consumer still lagging at the
 * end...) never change it.
 *
 * Pure: reads a gf_run, allocates nothing the caller must free.
 */
#ifndef GAMEFN_REPORT_QUALITY_H
#define GAMEFN_REPORT_QUALITY_H

#include <stddef.h>

#include "run.h"

typedef enum gf_goal {
    GF_GOAL_MET,
    GF_GOAL_MISSED,
    GF_GOAL_UNMEASURED,
    GF_GOAL_NOT_APPLICABLE, /* measured, but the goal is for another population */
    GF_GOAL_NONE,           /* a figure without a goal */
} gf_goal;

enum {
    GF_FIG_WAIT_P50,
    GF_FIG_WAIT_P99,
    GF_FIG_DPING_P95,
    GF_FIG_SPREAD_P95,
    GF_FIG_VIOLATIONS,
    GF_FIG_MERGE,
    GF_FIG__COUNT
};

typedef struct gf_figure {
    const char *what; /* static */
    const char *goal; /* static, NULL: reported only */
    char measured[200];
    gf_goal status;
} gf_figure;

typedef enum gf_verdict_level { GF_HEALTHY, GF_INCOMPLETE, GF_UNHEALTHY } gf_verdict_level;

enum { GF_VERDICT_LINES = 24, GF_VERDICT_LINE = 256 };

typedef struct gf_verdict_list {
    char line[GF_VERDICT_LINES][GF_VERDICT_LINE];
    size_t n, dropped;
} gf_verdict_list;

typedef struct gf_verdict {
    gf_verdict_level level;
    gf_verdict_list fails, missing, notes;
} gf_verdict;

/* Consumer lag alert thresholds (the lag monitor's defaults, docs/EVENTS.md "Lag"): drawn
 * on the lag plot; a consumer whose lag ends above the warning gets a note. */
#define GF_LAG_WARNING  1000.0
#define GF_LAG_CRITICAL 10000.0

/* The headline queue of the quality goals. */
#define GF_QUALITY_MODE  "hybrid"
#define GF_QUALITY_SHAPE "5v5"

/* The invariants the checker must report, in the order the report lists them. */
const char *const *gf_quality_required_invariants(size_t *n);
/* The report's explanation of a known invariant name, or NULL. */
const char *gf_quality_invariant_explanation(const char *name);

void gf_quality_figures(const gf_run *run, gf_figure figs[GF_FIG__COUNT]);
void gf_quality_verdict(const gf_run *run, const gf_figure figs[GF_FIG__COUNT], gf_verdict *v);
const char *gf_quality_level_name(gf_verdict_level level); /* "healthy", ... */

/* Selects rows of a table: sel[i] = 1 where every given KEY column (names[k]) holds
 * values[k] (NULL: any). Returns how many rows were selected: 0 when a named column is
 * missing or a value never appears. sel has t->nrows entries. */
size_t gf_quality_select(const gf_tsv_table *t, const char *const *names, const char *const *values,
                         size_t n, unsigned char *sel);

#endif
