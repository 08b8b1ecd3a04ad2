/*
 * quality.c — quality figures and the verdict (quality.h).
 */
#include "quality.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static const char *const required[] = {
    "double_claims", "players_in_two_matches", "tickets_lost", "limit_violations",
    "events_lost",   "events_double_applied",
};

static const struct {
    const char *name, *text;
} explanations[] = {
    {"double_claims", "Tickets claimed by two matches at once. Every claim is a compare-and-set "
                      "on the ticket's revision, so no ticket may ever be in two matches."},
    {"players_in_two_matches",
     "Players who were in two live matches at the same time (through two tickets, or a "
     "ticket and a party)."},
    {"tickets_lost", "Tickets that ended in no terminal state (assigned, cancelled, timed out) "
                     "and are not live either: every ticket must end, and its owner be told."},
    {"limit_violations",
     "Matches in which some member's skill gap to another member, or ping to the chosen "
     "datacenter, was beyond that member's own limits at the time, recomputed from the "
     "queue's curves."},
    {"events_lost", "Events the game servers' own log says were acknowledged by the event "
                    "stream but that a consumer never applied."},
    {"events_double_applied", "Events whose effect a consumer applied twice."},
    {"orphaned_claims", "Claims left by a matcher that died, never released after their lease "
                        "expired."},
};

const char *const *gf_quality_required_invariants(size_t *n)
{
    *n = sizeof required / sizeof required[0];
    return required;
}

const char *gf_quality_invariant_explanation(const char *name)
{
    for (size_t i = 0; i < sizeof explanations / sizeof explanations[0]; i++)
        if (strcmp(explanations[i].name, name) == 0)
            return explanations[i].text;
    return NULL;
}

const char *gf_quality_level_name(gf_verdict_level level)
{
    switch (level) {
    case GF_HEALTHY:
        return "healthy";
    case GF_INCOMPLETE:
        return "incomplete";
    default:
        return "not healthy";
    }
}

size_t gf_quality_select(const gf_tsv_table *t, const char *const *names, const char *const *values,
                         size_t n, unsigned char *sel)
{
    if (!t)
        return 0;
    int want[8];
    const gf_tsv_column *cols[8];
    if (n > 8)
        return 0;
    for (size_t k = 0; k < n; k++) {
        cols[k] = gf_tsv_find(t, names[k]);
        if (!cols[k] || !cols[k]->present || cols[k]->kind != GF_TSV_KEY)
            return 0;
        want[k] = values[k] ? gf_tsv_key_index(cols[k], values[k]) : -2;
        if (want[k] == -1)
            return 0;
    }
    size_t count = 0;
    for (size_t i = 0; i < t->nrows; i++) {
        bool ok = true;
        for (size_t k = 0; k < n && ok; k++)
            ok = want[k] == -2 || cols[k]->key[i] == want[k];
        sel[i] = ok;
        count += ok;
    }
    return count;
}

static void set(gf_figure *f, gf_goal status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set(gf_figure *f, gf_goal status, const char *fmt, ...)
{
    f->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->measured, sizeof f->measured, fmt, ap);
    va_end(ap);
}

/* The p-th percentile of `column` (times scale) over the selected rows of table f; n
 * receives the sample count (0: nothing measured). */
static double percentile_of(const gf_run *run, gf_run_file f, const char *column,
                            const char *const *names, const char *const *values, size_t nsel,
                            double scale, double p, size_t *n)
{
    *n = 0;
    const gf_tsv_table *t = run->tables[f];
    const gf_tsv_column *c = gf_tsv_find(t, column);
    if (!t || !c || !c->present || t->nrows == 0)
        return NAN;
    unsigned char *sel = malloc(t->nrows);
    double *v = NULL;
    double r = NAN;
    if (sel && gf_quality_select(t, names, values, nsel, sel) > 0 &&
        gf_stats_collect(c->num, sel, t->nrows, scale, &v, n) == 0)
        r = gf_stats_percentile(v, *n, p);
    free(v);
    free(sel);
    return r;
}

static const char *absent_why(const gf_run *run, gf_run_file f)
{
    switch (run->file_state[f]) {
    case GF_RUN_ABSENT:
        return "the run has no such file";
    case GF_RUN_UNUSABLE:
        return "the file is malformed (see Input problems)";
    default:
        return NULL;
    }
}

static void wait_figure(const gf_run *run, gf_figure *f, double p, double goal_s)
{
    const char *why = absent_why(run, GF_RUN_TICKETS);
    if (why) {
        set(f, GF_GOAL_UNMEASURED, "not measured: tickets.tsv: %s", why);
        return;
    }
    static const char *const names[] = {"mode", "shape", "outcome"};
    static const char *const values[] = {GF_QUALITY_MODE, GF_QUALITY_SHAPE, "assigned"};
    size_t n;
    double v = percentile_of(run, GF_RUN_TICKETS, "wait_ms", names, values, 3, 0.001, p, &n);
    if (n == 0) {
        set(f, GF_GOAL_UNMEASURED, "not measured: no assigned %s %s tickets", GF_QUALITY_MODE,
            GF_QUALITY_SHAPE);
        return;
    }
    if (strcmp(run->population, "mid") == 0)
        set(f, v < goal_s ? GF_GOAL_MET : GF_GOAL_MISSED, "%.2f s (%zu tickets)", v, n);
    else
        set(f, GF_GOAL_NOT_APPLICABLE,
            "%.2f s (%zu tickets); the goal is for mid population, this run's is %.40s", v, n,
            run->population);
}

static void dping_figure(const gf_run *run, gf_figure *f)
{
    const char *why = absent_why(run, GF_RUN_TICKETS);
    const gf_tsv_column *c = gf_tsv_find(run->tables[GF_RUN_TICKETS], "delta_ping_ms");
    if (!why && (!c || !c->present))
        why = "tickets.tsv has no delta_ping_ms column";
    if (why) {
        set(f, GF_GOAL_UNMEASURED, "not measured: %s", why);
        return;
    }
    static const char *const names[] = {"mode", "outcome"};
    static const char *const values[] = {"ping_first", "assigned"};
    size_t n;
    double v = percentile_of(run, GF_RUN_TICKETS, "delta_ping_ms", names, values, 2, 1, 95, &n);
    if (n == 0) {
        set(f, GF_GOAL_UNMEASURED,
            "not measured: no assigned ping_first tickets with a delta ping");
        return;
    }
    set(f, v <= 20.0 ? GF_GOAL_MET : GF_GOAL_MISSED, "%.1f ms (%zu tickets)", v, n);
}

static void spread_figure(const gf_run *run, gf_figure *f)
{
    const char *why = absent_why(run, GF_RUN_MATCHES);
    const gf_tsv_column *c = gf_tsv_find(run->tables[GF_RUN_MATCHES], "skill_spread");
    if (!why && (!c || !c->present))
        why = "matches.tsv has no skill_spread column";
    if (why) {
        set(f, GF_GOAL_NONE, "not measured: %s", why);
        return;
    }
    static const char *const names[] = {"mode"};
    static const char *const values[] = {"sbmm"};
    size_t n;
    double v = percentile_of(run, GF_RUN_MATCHES, "skill_spread", names, values, 1, 1, 95, &n);
    if (n == 0)
        set(f, GF_GOAL_NONE, "not measured: no sbmm matches with a skill spread");
    else
        set(f, GF_GOAL_NONE, "%.0f (%zu matches)", v, n);
}

static const gf_run_invariant *find_invariant(const gf_run *run, const char *name)
{
    for (size_t i = 0; run->check_state == GF_RUN_LOADED && i < run->ninvariants; i++)
        if (strcmp(run->invariants[i].name, name) == 0)
            return &run->invariants[i];
    return NULL;
}

static void violations_figure(const gf_run *run, gf_figure *f)
{
    const gf_run_invariant *inv = find_invariant(run, "limit_violations");
    if (!inv)
        set(f, GF_GOAL_UNMEASURED, "not measured: %s",
            run->check_state == GF_RUN_LOADED   ? "check.json has no limit_violations"
            : run->check_state == GF_RUN_ABSENT ? "no check.json"
                                                : "check.json is malformed");
    else
        set(f, inv->count == 0 ? GF_GOAL_MET : GF_GOAL_MISSED, "%lld", (long long)inv->count);
}

static void merge_figure(const gf_run *run, gf_figure *f)
{
    const char *why = absent_why(run, GF_RUN_TICKETS);
    const gf_tsv_column *c = gf_tsv_find(run->tables[GF_RUN_TICKETS], "merge");
    if (!why && !run->low_pop_region)
        why = "summary.json names no run.low_pop_region";
    if (!why && (!c || !c->present))
        why = "tickets.tsv has no merge column";
    if (why) {
        set(f, GF_GOAL_UNMEASURED, "not measured: %s", why);
        return;
    }
    static const char *const names[] = {"region", "outcome", "merge"};
    const char *on[] = {run->low_pop_region, "assigned", "on"};
    const char *off[] = {run->low_pop_region, "assigned", "off"};
    size_t non, noff;
    double p_on = percentile_of(run, GF_RUN_TICKETS, "wait_ms", names, on, 3, 0.001, 95, &non);
    double p_off = percentile_of(run, GF_RUN_TICKETS, "wait_ms", names, off, 3, 0.001, 95, &noff);
    if (non == 0 || noff == 0) {
        set(f, GF_GOAL_UNMEASURED,
            "not measured: %s has %zu assigned tickets with the merge on and %zu with it off "
            "(both are needed)",
            run->low_pop_region, non, noff);
        return;
    }
    gf_goal s = p_on <= p_off / 2 ? GF_GOAL_MET : GF_GOAL_MISSED;
    if (p_off > 0)
        set(f, s, "%s: %.2f s on (%zu) vs %.2f s off (%zu): x%.2f", run->low_pop_region, p_on, non,
            p_off, noff, p_on / p_off);
    else
        set(f, s, "%s: %.2f s on (%zu) vs %.2f s off (%zu)", run->low_pop_region, p_on, non, p_off,
            noff);
}

void gf_quality_figures(const gf_run *run, gf_figure figs[GF_FIG__COUNT])
{
    memset(figs, 0, sizeof *figs * GF_FIG__COUNT);
    figs[GF_FIG_WAIT_P50].what = "Wait p50, " GF_QUALITY_MODE " " GF_QUALITY_SHAPE;
    figs[GF_FIG_WAIT_P50].goal = "< 2 s at mid population";
    figs[GF_FIG_WAIT_P99].what = "Wait p99, " GF_QUALITY_MODE " " GF_QUALITY_SHAPE;
    figs[GF_FIG_WAIT_P99].goal = "< 30 s at mid population";
    figs[GF_FIG_DPING_P95].what = "Delta ping p95, ping_first";
    figs[GF_FIG_DPING_P95].goal = "<= 20 ms";
    figs[GF_FIG_SPREAD_P95].what = "Skill spread p95, sbmm";
    figs[GF_FIG_SPREAD_P95].goal = NULL;
    figs[GF_FIG_VIOLATIONS].what = "Limit violations (checker)";
    figs[GF_FIG_VIOLATIONS].goal = "0";
    figs[GF_FIG_MERGE].what = "Low-population p95 wait, merge on vs off";
    figs[GF_FIG_MERGE].goal = "on <= off / 2";
    wait_figure(run, &figs[GF_FIG_WAIT_P50], 50, 2.0);
    wait_figure(run, &figs[GF_FIG_WAIT_P99], 99, 30.0);
    dping_figure(run, &figs[GF_FIG_DPING_P95]);
    spread_figure(run, &figs[GF_FIG_SPREAD_P95]);
    violations_figure(run, &figs[GF_FIG_VIOLATIONS]);
    merge_figure(run, &figs[GF_FIG_MERGE]);
}

static void add(gf_verdict_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(gf_verdict_list *l, const char *fmt, ...)
{
    if (l->n == GF_VERDICT_LINES) {
        l->dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->line[l->n++], GF_VERDICT_LINE, fmt, ap);
    va_end(ap);
}

static void judge_invariants(const gf_run *run, gf_verdict *v)
{
    if (run->check_state != GF_RUN_LOADED) {
        add(&v->missing, "invariants not checked: %s",
            run->check_state == GF_RUN_ABSENT ? "the run has no check.json"
                                              : "check.json is malformed");
        return;
    }
    for (size_t i = 0; i < run->ninvariants; i++)
        if (run->invariants[i].count != 0)
            add(&v->fails, "invariant %s = %lld (must be 0)", run->invariants[i].name,
                (long long)run->invariants[i].count);
    size_t n;
    const char *const *req = gf_quality_required_invariants(&n);
    for (size_t i = 0; i < n; i++)
        if (!find_invariant(run, req[i]))
            add(&v->missing, "invariant %s not checked (not in check.json)", req[i]);
}

static void judge_restarts(const gf_run *run, gf_verdict *v)
{
    if (run->restarts_state != GF_RUN_LOADED) {
        add(&v->missing, "restarts not recorded: %s",
            run->restarts_state == GF_RUN_ABSENT ? "summary.json has no restarts list"
                                                 : "summary.json's restarts are malformed");
        return;
    }
    size_t unplanned = 0, planned = 0;
    char names[160] = "";
    for (size_t i = 0; i < run->nrestarts; i++) {
        const gf_run_restart *r = &run->restarts[i];
        if (r->planned) {
            planned++;
            continue;
        }
        if (unplanned++ < 3) {
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "",
                     r->instance ? r->instance : r->function);
        }
    }
    if (unplanned)
        add(&v->fails, "%zu unplanned restart%s (%s%s)", unplanned, unplanned == 1 ? "" : "s",
            names, unplanned > 3 ? ", ..." : "");
    if (planned)
        add(&v->notes, "%zu planned restart%s (faults the run injected)", planned,
            planned == 1 ? "" : "s");
}

/* A consumer whose lag ends above the warning threshold has not caught up. */
static void judge_lag(const gf_run *run, gf_verdict *v)
{
    const gf_tsv_table *t = run->tables[GF_RUN_LAG];
    if (run->file_state[GF_RUN_LAG] != GF_RUN_LOADED)
        return;
    const gf_tsv_column *cc = gf_tsv_find(t, "consumer"), *cp = gf_tsv_find(t, "pending"),
                        *ca = gf_tsv_find(t, "ack_pending");
    double last[GF_TSV_MAX_KEYS];
    for (size_t k = 0; k < GF_TSV_MAX_KEYS; k++)
        last[k] = 0;
    for (size_t i = 0; i < t->nrows; i++)
        last[cc->key[i]] = cp->num[i] + (ca->present && isfinite(ca->num[i]) ? ca->num[i] : 0);
    for (size_t k = 0; k < cc->nkeys; k++)
        if (last[k] >= GF_LAG_WARNING)
            add(&v->notes, "consumer %s ends %.0f messages behind (warning at 1,000)", cc->keys[k],
                last[k]);
}

void gf_quality_verdict(const gf_run *run, const gf_figure figs[GF_FIG__COUNT], gf_verdict *v)
{
    memset(v, 0, sizeof *v);
    judge_invariants(run, v);
    for (int i = 0; i < GF_FIG__COUNT; i++) {
        if (i == GF_FIG_VIOLATIONS)
            continue; /* an invariant: judged there */
        if (figs[i].status == GF_GOAL_MISSED)
            add(&v->fails, "goal missed: %s = %s (goal %s)", figs[i].what, figs[i].measured,
                figs[i].goal);
        else if (figs[i].status == GF_GOAL_UNMEASURED)
            add(&v->missing, "%s %s", figs[i].what, figs[i].measured);
    }
    judge_restarts(run, v);
    if (run->gaps_state == GF_RUN_LOADED && run->gaps_open > 0)
        add(&v->fails, "%lld event gap%s still open (events lost)", (long long)run->gaps_open,
            run->gaps_open == 1 ? "" : "s");
    if (run->status && strcmp(run->status, "failed") == 0)
        add(&v->fails, "the run failed (summary.json run.status)");
    else if (run->status && strcmp(run->status, "completed") != 0)
        add(&v->missing, "the run did not complete (run.status \"%.60s\")", run->status);
    if (run->nproblems || run->problems_dropped)
        add(&v->missing, "%zu input problem%s: some data was left out (see Input problems)",
            run->nproblems + run->problems_dropped,
            run->nproblems + run->problems_dropped == 1 ? "" : "s");
    if (run->gaps_not_counted)
        add(&v->notes, "event gaps not counted: %.200s", run->gaps_not_counted);
    if (run->dlq_state == GF_RUN_LOADED && run->dlq_messages > 0)
        add(&v->notes, "%lld message%s in the dead-letter stream", (long long)run->dlq_messages,
            run->dlq_messages == 1 ? "" : "s");
    judge_lag(run, v);
    if (!run->population_given)
        add(&v->notes, "the run's population is not recorded: goals judged as for mid");
    for (int f = 0; f < GF_RUN__FILES; f++)
        if (run->partial[f])
            add(&v->notes, "%s: an unfinished last line was left out",
                gf_run_file_name((gf_run_file)f));
    v->level = v->fails.n || v->fails.dropped       ? GF_UNHEALTHY
               : v->missing.n || v->missing.dropped ? GF_INCOMPLETE
                                                    : GF_HEALTHY;
}
