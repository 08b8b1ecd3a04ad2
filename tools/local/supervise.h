/*
 * tools/local/supervise.h — the local stack's process table: N replicas per function,
 * each restarted with exponential backoff when it dies, every restart recorded, and
 * everything stopped in order at the end.
 *
 *   policy RESTART  a function replica: restarted after min(30 s, 0.5 s * 2^(k-1)),
 *                   k counting the consecutive runs shorter than 10 s (a replica that
 *                   ran longer starts again at 0.5 s). Five deaths in a row within
 *                   2 s of starting and the table gives up on it (`failed`): a
 *                   function that cannot start (bad config, missing key) fails the run
 *                   instead of spinning.
 *   policy ONCE     nats-server and the simulated game: never restarted; their exit
 *                   is handed back to the caller (gf_sup_reap's `exits`).
 *
 * Stopping (gf_sup_stop): by ascending stop_order, one group at a time: the stop signal
 * (SIGTERM unless the spec names another) to the group's processes (to their process
 * groups), wait up to grace_ms, then SIGKILL and reap. Nothing is restarted once stopping began.
 *
 * The table also keeps a pids file (`pids_path`, one "pid instance" line per running
 * child, replaced whole on every change) and a journal (`journal_path`, appended:
 * "<unix ms> start <pid> <instance>" and "<unix ms> exit <pid> <instance> <how>"), so
 * that `gamefn-local stop`, operators and the tests can see exactly what this run
 * started and what became of it.
 *
 * Threads: one (the supervisor's loop). SIGCHLD is expected to be blocked and taken
 * from a signalfd by the caller, which then calls gf_sup_reap. Ownership: gf_sup_add
 * copies the spec; gf_sup_fini frees everything (it does not stop processes).
 */
#ifndef GAMEFN_LOCAL_SUPERVISE_H
#define GAMEFN_LOCAL_SUPERVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "gamefn/err.h"

typedef enum gf_sup_policy { GF_SUP_RESTART, GF_SUP_ONCE } gf_sup_policy;

typedef struct gf_sup_spec {
    const char *function; /* "matcher" */
    const char *instance; /* "matcher-1" */
    char *const *argv;    /* argv[0] is the program's path; copied */
    char *const *envp;    /* copied */
    const char *log_path; /* stdout+stderr appended here (NULL: /dev/null) */
    int out_fd;           /* >= 0: stdout to this descriptor (borrowed, kept open) */
    gf_sup_policy policy;
    int stop_order;  /* lower stops first */
    int stop_signal; /* 0: SIGTERM. nats-server 2.9.10 exits 1 on SIGTERM, 0 on SIGINT */
} gf_sup_spec;

typedef struct gf_sup_restart {
    double t; /* seconds since gf_sup.t0_ms */
    char function[32];
    char instance[64];
    char reason[96];  /* "killed by signal 9 (Killed)" */
    int64_t delay_ms; /* when it was started again */
} gf_sup_restart;

typedef struct gf_sup_proc {
    char function[32];
    char instance[64];
    char **argv, **envp;
    char *log_path;
    int out_fd;
    gf_sup_policy policy;
    int stop_order;
    int stop_signal;
    pid_t pid;             /* 0: not running */
    int64_t started_ms;    /* monotonic */
    int64_t restart_at_ms; /* 0: no restart pending */
    int quick_deaths;      /* consecutive runs shorter than 2 s */
    int attempt;           /* backoff attempt of the pending restart */
    int restarts;
    bool failed; /* gave up restarting it */
    bool exited; /* ONCE: it has exited */
    int status;  /* its last wait status */
} gf_sup_proc;

typedef struct gf_sup_exit {
    size_t index; /* into gf_sup.procs */
    int status;
} gf_sup_exit;

typedef struct gf_sup {
    gf_sup_proc *procs;
    size_t n_procs, cap_procs;
    gf_sup_restart *restarts;
    size_t n_restarts, cap_restarts;
    int64_t t0_ms; /* monotonic: restarts' t counts from here */
    bool stopping;
    bool gave_up;    /* some replica failed for good */
    char *pids_path; /* NULL: no pids file */
    FILE *journal;   /* NULL: none */
} gf_sup;

gf_err gf_sup_init(gf_sup *s, const char *pids_path, const char *journal_path);
void gf_sup_fini(gf_sup *s);

/* Copies the spec and starts the process. *index (may be NULL) is its slot. */
gf_err gf_sup_add(gf_sup *s, const gf_sup_spec *spec, size_t *index);

/* Reaps every child that exited (WNOHANG). RESTART processes get a restart scheduled
 * (and recorded, with `log` called for it); ONCE processes are listed in exits (up to
 * max_exits). Returns the number of exits listed. */
size_t gf_sup_reap(gf_sup *s, int64_t now_ms, gf_sup_exit *exits, size_t max_exits,
                   void (*log)(void *arg, const gf_sup_restart *r, const gf_sup_proc *p),
                   void *arg);

/* Starts the restarts that are due. Returns the monotonic time of the next pending one,
 * or -1 if none. */
int64_t gf_sup_restart_due(gf_sup *s, int64_t now_ms);

/* Stops every process with stop_order <= max_order (see above). */
void gf_sup_stop(gf_sup *s, int max_order, int64_t grace_ms);

/* Processes running now. */
size_t gf_sup_running(const gf_sup *s);

#endif
