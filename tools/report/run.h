/*
 * run.h — a run directory, loaded and checked (the format is docs/REPORT.md).
 *
 *   summary.json   the supervisor: parameters, restarts, leaderboard, DLQ, gaps,
 *                  analytics, crashes (required)
 *   check.json     the independent checker: the invariant counts
 *   tickets.tsv    one row per ticket that ended (assigned, cancelled, timed out)
 *   matches.tsv    one row per match formed
 *   queues.tsv     tickets waiting per queue, sampled (about once a second)
 *   fleet.tsv      game servers warm / free / busy per datacenter, sampled
 *   events.tsv     cumulative event counters, sampled
 *   lag.tsv        per consumer pending and in-flight messages, sampled
 *
 * Only an unreadable summary.json stops the load (it is what makes a folder a run).
 * Anything else missing is "not measured"; anything else malformed is recorded as a
 * problem (with file:line) and that part is left out, so the report can say what is
 * missing instead of not being written at all.
 *
 * Ownership: gf_run_load allocates *out, gf_run_free frees it (NULL is fine). Every
 * string in it is borrowed from the JSON documents it keeps and lives as long as the run.
 */
#ifndef GAMEFN_REPORT_RUN_H
#define GAMEFN_REPORT_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "tsv.h"

typedef enum gf_run_file {
    GF_RUN_TICKETS,
    GF_RUN_MATCHES,
    GF_RUN_QUEUES,
    GF_RUN_FLEET,
    GF_RUN_EVENTS,
    GF_RUN_LAG,
    GF_RUN__FILES
} gf_run_file;

typedef enum gf_run_state {
    GF_RUN_ABSENT,   /* not in the run: not measured */
    GF_RUN_UNUSABLE, /* there but malformed: a problem */
    GF_RUN_LOADED,
} gf_run_state;

typedef struct gf_run_restart {
    double t; /* seconds since the start; NAN if not given */
    const char *function, *instance, *reason;
    bool planned; /* a restart the run caused on purpose (fault injection) */
} gf_run_restart;

typedef struct gf_run_lb_entry {
    int64_t rank;
    const char *player;
    double score;
} gf_run_lb_entry;

typedef struct gf_run_invariant {
    const char *name;
    int64_t count;
    const char *detail;      /* the checker's words on this count, or NULL */
    const char *explanation; /* the checker's, for a name the report does not know */
    json_t *examples;        /* array of strings, or NULL */
} gf_run_invariant;

enum { GF_RUN_PROBLEMS_MAX = 64, GF_RUN_LB_MAX = 10 };

typedef struct gf_run {
    char dir[4096];
    json_t *summary, *check;
    json_t *params;         /* summary.run */
    const char *population; /* "mid" when not given (the default run) */
    bool population_given;
    const char *low_pop_region; /* NULL: not given */
    const char *status;         /* NULL: not given */

    gf_run_state restarts_state;
    gf_run_restart *restarts;
    size_t nrestarts;

    gf_run_state lb_state;
    const char *lb_board;
    gf_run_lb_entry lb[GF_RUN_LB_MAX];
    size_t nlb;

    gf_run_state dlq_state;
    int64_t dlq_messages;
    json_t *dlq_by_consumer; /* object name -> count, or NULL */

    gf_run_state gaps_state;
    int64_t gaps_suspected, gaps_closed, gaps_open;
    const char *gaps_not_counted; /* why the run has no gap counts, when it says */

    /* The event log's functions, as `gamefn analytics --json` and `gamefn crashes --json`
     * print them (run_json_log.c checks their shape; the report reads them as JSON). */
    gf_run_state analytics_state;
    json_t *analytics; /* {total, counts: [{name, count}], minutes: [...]} */
    gf_run_state crashes_state;
    json_t *crashes; /* {top: [...], fingerprints, crashes} */

    gf_run_state check_state;
    const char *checked_at;
    gf_run_invariant *invariants;
    size_t ninvariants;

    gf_run_state file_state[GF_RUN__FILES];
    gf_tsv_table *tables[GF_RUN__FILES];
    bool partial[GF_RUN__FILES]; /* an unfinished last line was ignored */

    char *problems[GF_RUN_PROBLEMS_MAX]; /* malformed input, one line each */
    size_t nproblems, problems_dropped;
} gf_run;

/* The run directory's file names, in gf_run_file order. */
const char *gf_run_file_name(gf_run_file f);

/* GF_OK; GF_ERR_NOT_FOUND / GF_ERR_IO / GF_ERR_INVALID when dir or its summary.json is
 * missing, unreadable or not a summary (why says which); GF_ERR_NOMEM. */
gf_err gf_run_load(const char *dir, gf_run **out, char *why, size_t whysize);
void gf_run_free(gf_run *run);

/* Records a problem (printf-style); kept in order, at most GF_RUN_PROBLEMS_MAX. */
void gf_run_problem(gf_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The JSON documents' checks, on their own (the unit tests feed them strings). Each
 * records problems in run and fills the matching fields. */
void gf_run_read_summary(gf_run *run, json_t *root);
void gf_run_read_check(gf_run *run, json_t *root);

/* summary.json's analytics and crashes (run_json_log.c); part of gf_run_read_summary. */
void gf_run_read_log(gf_run *run, json_t *root);

/* A whole number in [0, 1e15]: true and *out, else false. */
bool gf_run_count_value(json_t *v, int64_t *out);

/* The TSV column specs of each file (for the synthetic generator's self-check and tests). */
const gf_tsv_col *gf_run_file_spec(gf_run_file f, size_t *n, const gf_tsv_col **rest);

/* Reads a whole file (at most max bytes). GF_ERR_NOT_FOUND when it does not exist. */
gf_err gf_run_read_file(const char *path, size_t max, char **text, size_t *len, char *why,
                        size_t whysize);

#endif
