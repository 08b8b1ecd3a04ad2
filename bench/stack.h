/*
 * bench/stack.h — what the end-to-end benchmarks (alloc, e2e, events, intake, service,
 * partitioned) stand up around the code they measure, in one place: the function
 * processes of this build, spawned with their logs in the run's directory, awaited until
 * they answer, watched while the run lasts, and stopped; the head of their config; the
 * run's directory; the SendAsap connection and the wait for simulated game servers of
 * the latency benches; and what is read back (CPU used, stream sequences).
 *
 * Why one place: each bench used to start, await and reap its children its own way, with
 * its own timeouts and its own words for a child that did not come up. A run that fails
 * to set up must say which process failed and how (its exit status, the end of its log),
 * the same way whichever bench it was.
 *
 * Threads: like support/natsd/proc.h, call these from the thread the children should die
 * with (the main thread). Messages go to stderr, each starting with "<bench>: ".
 */
#ifndef GAMEFN_BENCH_STACK_H
#define GAMEFN_BENCH_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <nats/nats.h>

#include "gamefn/err.h"
#include "gamesim.h"
#include "proc.h"

enum { GF_BENCH_MAX_FNS = 40 };

/* The function processes of one run. Fill in bench, build (or bin at spawn), log_dir and
 * optionally grace_ms; the rest starts zeroed. */
typedef struct gf_bench_fns {
    const char *bench;   /* "e2e": the start of every message */
    const char *build;   /* <build>: a function fn is <build>/functions/<fn>/gamefn-<fn> */
    const char *log_dir; /* each process logs to <log_dir>/<instance>.log */
    int grace_ms;        /* stopping: SIGTERM, then SIGKILL after this; 0 = 15 s */
    int n;               /* processes spawned so far, in procs[0..n) */
    gf_proc procs[GF_BENCH_MAX_FNS];
    char fn[GF_BENCH_MAX_FNS][32];       /* the function each process runs */
    char instance[GF_BENCH_MAX_FNS][48]; /* its --instance */
} gf_bench_fns;

/* Starts `bin --config config --instance instance` (bin NULL: function fn of s->build)
 * with the extra environment env (NULL-terminated "K=V", may be NULL). GF_ERR_INVALID when
 * GF_BENCH_MAX_FNS run already, GF_ERR_IO when it cannot be started; both said on stderr. */
gf_err gf_bench_fns_spawn(gf_bench_fns *s, const char *bin, const char *fn, const char *instance,
                          const char *config, char *const env[]);

/* n replicas of one function binary, instances bench0 .. bench<n-1>, each announced on
 * stderr ("<bench>: <fn> replica bench0 is pid N": a test kills it by that pid). */
gf_err gf_bench_fns_replicas(gf_bench_fns *s, const char *bin, const char *fn, int n,
                             const char *config);

/* Waits until processes [from, n) answer $SRV.PING.<fn>.<instance> (their endpoints run).
 * GF_ERR_UNAVAILABLE as soon as one has exited, GF_ERR_TIMEOUT after timeout_ms; either
 * way which one, how it ended and the end of its log are on stderr. */
gf_err gf_bench_fns_ready(gf_bench_fns *s, natsConnection *nc, int from, int64_t timeout_ms);

/* true, with which process ended and how on stderr ("<bench>: <fn> replica <instance>
 * (pid N) killed by signal 9; no figures") and the end of its log, once one is not
 * running. Its void * form is for callbacks that poll while they wait. */
bool gf_bench_fns_gone(gf_bench_fns *s);
bool gf_bench_fns_gone_cb(void *fns);

/* SIGTERMs the processes of function fn (every one when NULL) and waits grace_ms for each. */
void gf_bench_fns_stop(gf_bench_fns *s, const char *fn);

/* Stops every process, SIGKILLs what outlived its grace and reaps it. */
void gf_bench_fns_free(gf_bench_fns *s);

/* The config file of a bench's consumer replicas at path, opened for writing with its
 * nats (nats.flush: flush, NULL = immediate), log (info with --verbose, else warn) and
 * runtime sections written: the runtime tuning the benches share (fetch_expiry 1s,
 * heartbeat 250ms). The caller writes its jetstream and functions sections and fcloses
 * it. NULL after saying why. */
FILE *gf_bench_config_open(const char *bench, const char *path, const char *url, bool verbose,
                           long fetch_batch, const char *flush);

/* nats.flush's values (NULL-terminated), for the --flush option of the benches that start
 * functions (GF_BENCH_CHOICE_OPT). */
extern const char *const gf_bench_flush_modes[];

/* A fresh run directory from a mkdtemp template ("/tmp/gamefn-bench-e2e-XXXXXX"), which
 * is rewritten in place; false after saying why. It outlives the nats-server (whose own
 * directory goes with it) so that the logs of a failed run can be read. */
bool gf_bench_rundir_make(const char *bench, char *tmpl);
/* Removes it and everything in it (nothing when dir is empty). */
void gf_bench_rundir_remove(const char *bench, const char *dir);

/* A connection to url that sends every message at once (SendAsap) instead of batching:
 * the latency benches measure the service, not the client's flush timer. */
gf_err gf_bench_connect_asap(const char *url, natsConnection **nc);

/* Waits until the simulator has `servers` FREE servers registered, or timeout_ms passed;
 * its stats then into *st. The fleet answers a register only once it is up, so the
 * simulator retries until then. */
void gf_bench_await_servers(gf_gamesim *sim, uint32_t servers, int timeout_ms,
                            gf_gamesim_stats *st);

/* CPU seconds (user + system) process pid has used so far; -1 once it is gone. */
double gf_bench_cpu_seconds(pid_t pid);

/* The sum of the last sequences of `streams` (KV buckets are streams too, so overwritten
 * revisions count): every write they stored. -1 when one does not answer. */
long long gf_bench_last_seq(jsCtx *js, const char *const *streams, size_t n);

#endif
