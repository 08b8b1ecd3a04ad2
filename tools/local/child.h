/*
 * tools/local/child.h — start one child process the way the local stack needs it, and
 * signal it by process group.
 *
 * A child started here:
 *   - leads a process group of its own (setpgid), so a terminal's Ctrl-C reaches the
 *     supervisor only, which then stops the children in order, and a signal to the
 *     group (kill(-pid)) also reaches anything the child started;
 *   - dies with the supervisor (PR_SET_PDEATHSIG = SIGKILL): if the supervisor is
 *     killed outright, nothing it started keeps running;
 *   - inherits no descriptor beyond 0, 1, 2 (close_range), so the supervisor's lock
 *     and pipes never leak into a function;
 *   - has stdin on /dev/null, stdout and stderr appended to `log_path`, or stdout on
 *     `out_fd` (a pipe the supervisor reads) when that is >= 0.
 *
 * Everything the child needs (argv, envp, the opened log) is prepared before fork, so
 * between fork and exec the child calls only async-signal-safe functions.
 */
#ifndef GAMEFN_LOCAL_CHILD_H
#define GAMEFN_LOCAL_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

/* Starts argv[0] (a path) with envp. Returns the pid, or -1 (errno set). out_fd < 0:
 * stdout goes to the log too. log_path NULL: /dev/null. */
pid_t gf_child_start(char *const argv[], char *const envp[], const char *log_path, int out_fd);

/* Sends sig to the child's process group (falls back to the pid). true if delivered. */
bool gf_child_kill(pid_t pid, int sig);

/* "exited with status 3", "killed by signal 9 (Killed)" for a wait status. */
void gf_child_describe(int status, char *buf, size_t size);

#endif
