/*
 * tools/local/local.h — gamefn-local: the local stack's supervisor and run.
 *
 *   main.c      the command line, the foreground/supervisor split, `stop`
 *   run.c       one run: nats-server, provisioning, functions, the simulated game,
 *               the end (checker, summary, report), --keep
 *   summary.c   summary.json and the summary printed at the end
 *   supervise.c the process table; child.c one child; stack.c files and helpers;
 *   progress.c  the live block on a terminal
 *
 * Processes: `gamefn-local run` forks at once. The parent stays in the foreground
 * (the terminal's Ctrl-C reaches it alone, and it forwards it); the child calls setsid
 * and is the supervisor: it starts everything else, each in a process group of its own
 * that dies with it (PR_SET_PDEATHSIG). The two are joined by pipes: when the
 * foreground process dies (killed, terminal closed), the supervisor sees the pipe close
 * and stops everything; with --keep the supervisor says "detached" at the end of the
 * run, the foreground process returns to the shell, and the supervisor keeps the stack
 * running until `gamefn-local stop` (deploy/local/run.sh --stop) sends it SIGTERM.
 */
#ifndef GAMEFN_LOCAL_H
#define GAMEFN_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include "stack.h"

enum {
    GF_LOCAL_EXIT_OK = 0,
    GF_LOCAL_EXIT_FAILED = 1, /* the stack failed, or an invariant count is not 0 */
    GF_LOCAL_EXIT_USAGE = 2,
    GF_LOCAL_EXIT_BUSY = 3, /* another run holds the data directory */
    GF_LOCAL_EXIT_INTERRUPTED = 130,
};

typedef struct gf_local_opts {
    gf_stack_paths paths;
    char runs[GF_STACK_PATH_MAX + 16]; /* where run directories go (--report-dir) */
    int seconds;
    uint64_t seed;
    char population[8]; /* low, mid, high */
    char replicas[512]; /* "matcher=3,allocator=2" */
    bool keep;
    int lock_fd; /* held: flock()ed by us or by run.sh */
} gf_local_opts;

/* The supervisor's side of a run. up_fd: to the foreground process ("detached\n");
 * down_fd: from it (EOF = it is gone). Returns the exit code. */
int gf_local_run(const gf_local_opts *o, int up_fd, int down_fd);

#endif
