/*
 * tools/local/stack.h — the files and helpers of one local stack: where everything
 * lives, the server and function config written into the data directory, the
 * nats-server's ports file and health, the function binaries of a build, and short
 * helper programs (provision, keygen, check, report) run to completion.
 *
 * Data directory layout (every file mode 0600, directories 0700: the caller's umask
 * is 077):
 *
 *   run.lock                 flock()ed by the run using this directory
 *   run.pid                  "pid start_ticks keep" of that run's supervisor
 *   run.pids                 every process it runs now, "pid instance" per line
 *   nats.conf                from deploy/local/nats.conf.in
 *   nats-server_<pid>.ports  written by nats-server: its URLs
 *   jetstream/               the server's store
 *   gamefn.yaml              config/gamefn.yaml with the key paths of this directory
 *   keys/local.key, .pub     the join-token key pair (made once, atomically)
 *   logs/<instance>.log      one per process
 *   runs/<run id>/           the run data and report (unless --report-dir)
 *
 * Every file is written whole (a temporary file, then rename), so an interrupted run
 * never leaves half a config or half a key pair behind.
 */
#ifndef GAMEFN_LOCAL_STACK_H
#define GAMEFN_LOCAL_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gamefn/err.h"

enum { GF_STACK_PATH_MAX = 1024, GF_STACK_MAX_FUNCTIONS = 32 };

typedef struct gf_stack_paths {
    char source[GF_STACK_PATH_MAX]; /* the checkout: config/, deploy/local/ */
    char build[GF_STACK_PATH_MAX];
    char data[GF_STACK_PATH_MAX];
    char config[GF_STACK_PATH_MAX + 16]; /* <data>/gamefn.yaml */
    char logs[GF_STACK_PATH_MAX + 16];   /* <data>/logs */
} gf_stack_paths;

/* Writes `len` bytes to path through path.tmp + rename. */
gf_err gf_stack_write_file(const char *path, const char *text, size_t len);

/* Reads a whole file (NUL-terminated, *len without it). Caller frees. */
char *gf_stack_read_file(const char *path, size_t *len);

/* <data>/nats.conf from <source>/deploy/local/nats.conf.in (@DATA@ replaced), and
 * <data>/gamefn.yaml from <source>/config/gamefn.yaml (key paths moved under <data>). */
gf_err gf_stack_write_configs(const gf_stack_paths *p, char *why, size_t why_size);

/* Waits for <data>/nats-server_<pid>.ports and reads the client and monitoring URLs
 * from it. GF_ERR_TIMEOUT, or GF_ERR_UNAVAILABLE if the process exited meanwhile. */
gf_err gf_stack_nats_ports(const gf_stack_paths *p, pid_t pid, int64_t timeout_ms, char *url,
                           size_t url_size, char *monitor, size_t monitor_size);

/* GET <monitor>/healthz?js-enabled-only=true until it answers 200, or the timeout. */
gf_err gf_stack_nats_healthy(const char *monitor, int64_t timeout_ms);

/* The function binaries of a build: <build>/functions/<name>/gamefn-<name>, sorted by
 * name. names[i] points into storage owned by the caller's array (32 bytes each). */
size_t gf_stack_functions(const gf_stack_paths *p, char names[][32], size_t max);

/* Asked every 50 ms while a helper runs: true = stop it now (Ctrl-C). */
typedef bool (*gf_stack_cancel)(void *arg);

/* Runs argv (env envp) to completion, stdout to out_path (NULL: with the output to
 * log_path), stderr appended to log_path, for at most timeout_ms. Returns the wait
 * status, or -1 if it could not start or timed out (killed then), or -2 if cancel said
 * so (killed then). */
int gf_stack_run_helper(char *const argv[], char *const envp[], const char *log_path,
                        const char *out_path, int64_t timeout_ms, gf_stack_cancel cancel,
                        void *arg);

/* Makes <data>/keys/local.key and .pub with `gamefn keygen`, once: into a temporary
 * directory renamed into place, so the pair is there whole or not at all. */
gf_err gf_stack_keys(const gf_stack_paths *p, char *const envp[], char *why, size_t why_size);

#endif
