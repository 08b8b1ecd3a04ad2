/*
 * run.c — loading a run directory (run.h): the TSV files and the order of things.
 * The JSON documents are read in run_json.c.
 *
 * Design notes: each file is read whole (bounded) and parsed by tsv.c against the spec
 * below; the specs are the format of docs/REPORT.md in code, one row per column with its
 * range. The ranges only keep out the absurd (a negative wait, a run of a year): the
 * report draws what it is given.
 */
#define _GNU_SOURCE /* vasprintf */
#include "run.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define T_MAX 1e7 /* seconds since the start: about 115 days */

static const char *const file_names[GF_RUN__FILES] = {
    "tickets.tsv", "matches.tsv", "queues.tsv", "fleet.tsv", "events.tsv", "lag.tsv",
};

static const char *const outcomes[] = {"assigned", "cancelled", "timed_out", NULL};
static const char *const on_off[] = {"on", "off", NULL};

#define COL_T                                                                                      \
    {                                                                                              \
        "t", GF_TSV_NUM, false, false, 0, T_MAX, NULL                                              \
    }
#define KEY(n)                                                                                     \
    {                                                                                              \
        n, GF_TSV_KEY, false, false, 0, 0, NULL                                                    \
    }
#define NUM(n, lo, hi)                                                                             \
    {                                                                                              \
        n, GF_TSV_NUM, false, false, lo, hi, NULL                                                  \
    }
#define OPT_NUM(n, lo, hi)                                                                         \
    {                                                                                              \
        n, GF_TSV_NUM, true, true, lo, hi, NULL                                                    \
    }

static const gf_tsv_col tickets_spec[] = {
    COL_T,
    KEY("mode"),
    KEY("shape"),
    KEY("region"),
    {"outcome", GF_TSV_KEY, false, false, 0, 0, outcomes},
    NUM("wait_ms", 0, 1e9),
    OPT_NUM("delta_ping_ms", 0, 1e5),
    {"merge", GF_TSV_KEY, true, false, 0, 0, on_off},
};
static const gf_tsv_col matches_spec[] = {
    COL_T,
    KEY("mode"),
    KEY("shape"),
    KEY("region"),
    {"merge", GF_TSV_KEY, true, false, 0, 0, on_off},
    OPT_NUM("skill_spread", 0, 1e6),
    OPT_NUM("alloc_ms", 0, 1e8),
};
static const gf_tsv_col queues_spec[] = {COL_T, KEY("queue"), NUM("waiting", 0, 1e9)};
static const gf_tsv_col fleet_spec[] = {
    COL_T,
    {"datacenter", GF_TSV_KEY, true, false, 0, 0, NULL},
    NUM("warm", 0, 1e7),
    NUM("free", 0, 1e7),
    NUM("busy", 0, 1e7),
};
static const gf_tsv_col events_spec[] = {COL_T};
static const gf_tsv_col events_rest = {NULL, GF_TSV_NUM, true, true, 0, 1e15, NULL};
static const gf_tsv_col lag_spec[] = {
    COL_T,
    KEY("consumer"),
    NUM("pending", 0, 1e12),
    OPT_NUM("ack_pending", 0, 1e12),
};

const gf_tsv_col *gf_run_file_spec(gf_run_file f, size_t *n, const gf_tsv_col **rest)
{
    *rest = NULL;
    switch (f) {
    case GF_RUN_TICKETS:
        *n = sizeof tickets_spec / sizeof tickets_spec[0];
        return tickets_spec;
    case GF_RUN_MATCHES:
        *n = sizeof matches_spec / sizeof matches_spec[0];
        return matches_spec;
    case GF_RUN_QUEUES:
        *n = sizeof queues_spec / sizeof queues_spec[0];
        return queues_spec;
    case GF_RUN_FLEET:
        *n = sizeof fleet_spec / sizeof fleet_spec[0];
        return fleet_spec;
    case GF_RUN_EVENTS:
        *n = sizeof events_spec / sizeof events_spec[0];
        *rest = &events_rest;
        return events_spec;
    case GF_RUN_LAG:
        *n = sizeof lag_spec / sizeof lag_spec[0];
        return lag_spec;
    default:
        *n = 0;
        return NULL;
    }
}

const char *gf_run_file_name(gf_run_file f)
{
    return f < GF_RUN__FILES ? file_names[f] : "?";
}

void gf_run_problem(gf_run *run, const char *fmt, ...)
{
    if (run->nproblems == GF_RUN_PROBLEMS_MAX) {
        run->problems_dropped++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (s)
        run->problems[run->nproblems++] = s;
    else
        run->problems_dropped++;
}

gf_err gf_run_read_file(const char *path, size_t max, char **text, size_t *len, char *why,
                        size_t whysize)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, whysize, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? GF_ERR_NOT_FOUND : GF_ERR_IO;
    }
    gf_err e = GF_OK;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whysize, "%s: not a regular file", path);
        e = GF_ERR_IO;
        goto out;
    }
    if ((uint64_t)st.st_size > max) {
        snprintf(why, whysize, "%s: larger than %zu bytes", path, max);
        e = GF_ERR_INVALID;
        goto out;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *p = malloc(cap);
    if (!p) {
        e = GF_ERR_NOMEM;
        goto out;
    }
    /* the file may still be growing (a run in progress): read what st_size said */
    while (n < cap - 1) {
        size_t r = fread(p + n, 1, cap - 1 - n, f);
        if (r == 0)
            break;
        n += r;
    }
    if (ferror(f)) {
        snprintf(why, whysize, "%s: %s", path, strerror(errno));
        free(p);
        e = GF_ERR_IO;
        goto out;
    }
    p[n] = '\0';
    *text = p;
    *len = n;
out:
    fclose(f);
    return e;
}

/* Sampled files come from one sampler each, which writes in time order. */
static bool t_in_order(gf_run *run, gf_run_file f, const gf_tsv_table *t)
{
    const double *tv = gf_tsv_find(t, "t")->num;
    for (size_t i = 1; i < t->nrows; i++)
        if (tv[i] < tv[i - 1]) {
            gf_run_problem(run, "%s: t goes back from %g to %g (rows are appended in time order)",
                           file_names[f], tv[i - 1], tv[i]);
            return false;
        }
    return true;
}

/* events.tsv counters are totals since the start. */
static bool counters_grow(gf_run *run, const gf_tsv_table *t)
{
    const double *tv = gf_tsv_find(t, "t")->num;
    for (size_t c = 0; c < t->ncols; c++) {
        const gf_tsv_column *col = &t->cols[c];
        if (strcmp(col->name, "t") == 0)
            continue;
        double last = NAN;
        for (size_t i = 0; i < t->nrows; i++) {
            double v = col->num[i];
            if (isnan(v))
                continue;
            if (!isnan(last) && v < last) {
                gf_run_problem(run,
                               "events.tsv: counter '%s' goes down at t=%g (%g after %g); "
                               "counters are totals since the start",
                               col->name, tv[i], v, last);
                return false;
            }
            last = v;
        }
    }
    return true;
}

static gf_err load_table(gf_run *run, gf_run_file f)
{
    char path[4200], why[512];
    snprintf(path, sizeof path, "%s/%s", run->dir, file_names[f]);
    char *text = NULL;
    size_t len = 0;
    gf_err e = gf_run_read_file(path, (size_t)1 << 30, &text, &len, why, sizeof why);
    if (e == GF_ERR_NOT_FOUND) {
        run->file_state[f] = GF_RUN_ABSENT;
        return GF_OK;
    }
    if (e == GF_ERR_NOMEM)
        return e;
    if (e != GF_OK) {
        gf_run_problem(run, "%s", why);
        run->file_state[f] = GF_RUN_UNUSABLE;
        return GF_OK;
    }
    size_t n = 0;
    const gf_tsv_col *rest = NULL;
    const gf_tsv_col *spec = gf_run_file_spec(f, &n, &rest);
    gf_tsv_error err;
    gf_tsv_table *t = NULL;
    e = gf_tsv_parse(text, len, file_names[f], spec, n, rest, &t, &err);
    free(text);
    if (e == GF_ERR_NOMEM)
        return e;
    bool ok = e == GF_OK;
    if (!ok)
        gf_run_problem(run, "%s", err.message);
    if (ok && f != GF_RUN_TICKETS && f != GF_RUN_MATCHES)
        ok = t_in_order(run, f, t);
    if (ok && f == GF_RUN_EVENTS)
        ok = counters_grow(run, t);
    if (!ok) {
        gf_tsv_free(t);
        run->file_state[f] = GF_RUN_UNUSABLE;
        return GF_OK;
    }
    run->tables[f] = t;
    run->partial[f] = t->partial_last;
    run->file_state[f] = GF_RUN_LOADED;
    return GF_OK;
}

/* A JSON file: NULL when absent (not a problem) or malformed (a problem). */
static json_t *load_json(gf_run *run, const char *name, bool *present)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", run->dir, name);
    struct stat st;
    *present = stat(path, &st) == 0;
    if (!*present)
        return NULL;
    if (!S_ISREG(st.st_mode) || st.st_size > (64 << 20)) {
        gf_run_problem(run, "%s: not a regular file of at most 64 MiB", name);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        gf_run_problem(run, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text);
    return root;
}

gf_err gf_run_load(const char *dir, gf_run **out, char *why, size_t whysize)
{
    *out = NULL;
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, whysize, "%s: not a directory", dir);
        return GF_ERR_NOT_FOUND;
    }
    gf_run *run = calloc(1, sizeof *run);
    if (!run)
        return GF_ERR_NOMEM;
    if (strlen(dir) >= sizeof run->dir) {
        snprintf(why, whysize, "directory name too long");
        free(run);
        return GF_ERR_INVALID;
    }
    snprintf(run->dir, sizeof run->dir, "%s", dir);

    bool present = false;
    run->summary = load_json(run, "summary.json", &present);
    if (!run->summary) {
        if (!present)
            snprintf(why, whysize,
                     "%s/summary.json: no such file (is this a run directory? see "
                     "docs/REPORT.md)",
                     dir);
        else
            snprintf(why, whysize, "%s", run->nproblems ? run->problems[0] : "unreadable");
        gf_run_free(run);
        return present ? GF_ERR_INVALID : GF_ERR_NOT_FOUND;
    }
    gf_run_read_summary(run, run->summary);
    if (!run->params) {
        snprintf(why, whysize, "%s", run->nproblems ? run->problems[0] : "summary.json: no run");
        gf_run_free(run);
        return GF_ERR_INVALID;
    }
    run->check = load_json(run, "check.json", &present);
    if (run->check)
        gf_run_read_check(run, run->check);
    else
        run->check_state = present ? GF_RUN_UNUSABLE : GF_RUN_ABSENT;

    for (int f = 0; f < GF_RUN__FILES; f++) {
        gf_err e = load_table(run, (gf_run_file)f);
        if (e != GF_OK) {
            snprintf(why, whysize, "out of memory");
            gf_run_free(run);
            return e;
        }
    }
    *out = run;
    return GF_OK;
}

void gf_run_free(gf_run *run)
{
    if (!run)
        return;
    for (int f = 0; f < GF_RUN__FILES; f++)
        gf_tsv_free(run->tables[f]);
    for (size_t i = 0; i < run->nproblems; i++)
        free(run->problems[i]);
    free(run->restarts);
    free(run->invariants);
    json_decref(run->summary);
    json_decref(run->check);
    free(run);
}
