/*
 * tools/local/summary.h — the end of a run: summary.json (the run directory's required
 * file, docs/REPORT.md) and the summary printed on the terminal.
 *
 * summary.json is written by the supervisor from what it knows (the run's parameters,
 * its status, every restart it made) and what the simulated game left in sim.json
 * (the low-population region, leaderboard, dead letters, gaps, analytics and crashes
 * when measured). The
 * printed summary is the game's own lines (its figures against the goals), the
 * checker's counts from check.json, the restarts, and the report's path.
 */
#ifndef GAMEFN_LOCAL_SUMMARY_H
#define GAMEFN_LOCAL_SUMMARY_H

#include <stdio.h>

#include "gamefn/err.h"
#include "supervise.h"

typedef struct gf_summary_run {
    const char *id;
    const char *started; /* RFC 3339 */
    int seconds;
    double elapsed_s;
    unsigned long long seed;
    const char *population;
    const char *status;   /* completed, interrupted, failed */
    const char *replicas; /* "intake=1,matcher=3,..." */
} gf_summary_run;

/* Writes <run_dir>/summary.json whole. */
gf_err gf_summary_write(const char *run_dir, const gf_summary_run *r, const gf_sup *sup);

/* Prints the checker's counts from <run_dir>/check.json. Returns the sum of the counts
 * (0: every invariant holds), or -1 when there is no usable check.json (then it says
 * why, with `why_missing`). */
long long gf_summary_print_check(FILE *out, const char *run_dir, const char *why_missing);

/* Prints the restarts the supervisor made. */
void gf_summary_print_restarts(FILE *out, const gf_sup *sup);

#endif
