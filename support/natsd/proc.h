/*
 * support/natsd/proc.h — start, signal and reap child processes (function binaries)
 * from tests, by pid. Output of the child goes to a log file so a failing test can
 * show it.
 *
 * Children are started with PR_SET_PDEATHSIG=SIGKILL, so they die with the thread
 * that spawned them: spawn from the main thread (or another thread that lives as
 * long as the child should). None of these functions is thread-safe for one gf_proc;
 * use each gf_proc from one thread. A gf_proc needs no init before gf_proc_spawn.
 */
#ifndef GAMEFN_TEST_PROC_H
#define GAMEFN_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct gf_proc {
    pid_t pid;          /* 0 once reaped */
    int exit_status;    /* raw wait status, valid once reaped */
    char log_path[512]; /* stdout+stderr of the child */
} gf_proc;

/* argv[0] is the program path. env: extra "K=V" entries added to the environment
 * (NULL-terminated, may be NULL). log_path may be NULL for /dev/null. Returns 0 or -1. */
int gf_proc_spawn(gf_proc *p, char *const argv[], char *const env[], const char *log_path);

/* Sends sig to the child (no-op if reaped). */
int gf_proc_signal(gf_proc *p, int sig);

/* Waits up to timeout_ms (negative: no limit) for the child to exit. Returns 0 when
 * reaped (or already reaped), -1 on timeout. */
int gf_proc_wait(gf_proc *p, int timeout_ms);

/* true while the child runs; reaps it (WNOHANG) if it has exited. */
bool gf_proc_running(gf_proc *p);

/* true when reaped with exit code `code`. */
bool gf_proc_exited_with(const gf_proc *p, int code);

/* How a reaped child ended, from its exit_status: "exited with status 3", "killed by
 * signal 9 (Killed)"; "still running (pid N)" when it has not been reaped (call
 * gf_proc_running or gf_proc_wait first to reap one that ended). Always NUL-terminates
 * buf. */
void gf_proc_describe(const gf_proc *p, char *buf, size_t size);

/* Kills (SIGKILL) and reaps if still running. */
void gf_proc_cleanup(gf_proc *p);

/* Prints the last `max_lines` lines of the child's log to stderr (for failures). */
void gf_proc_dump_log(const gf_proc *p, int max_lines);

/* Same for any file (used for server logs that outlive one gf_proc). */
void gf_proc_dump_file(const char *path, int max_lines);

/* Field `field` (numbered as in proc(5), 3 and up: 14 utime, 15 stime, 22 starttime, in
 * clock ticks) of /proc/<pid>/stat, of any process. 0, or -1 (gone, or no such field). */
int gf_proc_stat_field(pid_t pid, int field, unsigned long long *out);

/* true once every thread of pid is stopped (SIGSTOP; state T in /proc/<pid>/task/<tid>/stat):
 * kill(SIGSTOP) returns before the signal has stopped every thread, and a process that
 * stops itself does so at a moment of its own choosing. false when pid is gone. */
bool gf_proc_pid_stopped(pid_t pid);

/* Sends SIGSTOP to pid and waits (up to timeout_ms) until every thread is stopped. */
bool gf_proc_pid_stop(pid_t pid, int timeout_ms);

#endif
