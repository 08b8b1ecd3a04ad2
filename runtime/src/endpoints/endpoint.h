/*
 * endpoint.h — the endpoint kinds as tables of operations (private to the runtime).
 *
 * Every kind (request, pull, tick, ...) is one gf__endpoint_ops in its own file,
 * registered in endpoints/kinds.c. The lifecycle (function/) drives every endpoint
 * through the same four operations and never looks at its kind:
 *
 *   provision  ensure the JetStream assets this endpoint needs exist (may be NULL)
 *   describe   subject and queue group it reports in $SRV.INFO / STATS
 *   start      begin taking work on the host's connection
 *   stop       stop taking work; return once in-flight work is done or the deadline
 *              passed (false then: something is still running)
 *   check      (may be NULL) bring the kind's $SRV counters up to date and say whether
 *              it can do its work (false, with the reason: a request handler stuck past
 *              its deadline, a stream that is gone and cannot be recreated); called
 *              before each $SRV answer, between start and stop only, never concurrently
 *              with itself or with stop (the lifecycle serializes). This is the only way
 *              an endpoint's health reaches $SRV: a problem one of the kind's own threads
 *              finds is kept in a gf__health (below) that `check` reports.
 *
 * The host is what the lifecycle lends to its endpoints: the connection, the config,
 * the $SRV service, the stop flag and the gf_fn handed to handlers (opaque here).
 *
 * Threads: provision, describe, start and stop are called from the main thread.
 * A kind's own threads and nats.c callbacks read the host, which is filled before
 * start and not changed while endpoints run; *host->stop is atomic.
 * Ownership: the host and the gf_endpoint are borrowed. run->state belongs to the
 * kind: allocated by start, freed by a clean stop (left alone when stop returns
 * false, because a thread may still use it; the process is about to exit).
 */
#ifndef GAMEFN_ENDPOINTS_ENDPOINT_H
#define GAMEFN_ENDPOINTS_ENDPOINT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/config.h"
#include "gamefn/endpoint.h"
#include "gamefn/provision.h"
#include "gamefn/srv.h"

typedef struct gf__endpoint_host {
    gf_fn *fn; /* passed to handlers */
    const char *function_name;
    const char *instance_id;
    const gf_config *cfg;
    natsConnection *nc;
    jsCtx *js;
    gf_srv *srv; /* $SRV stats; NULL until discovery started */
    const atomic_int *stop;
} gf__endpoint_host;

typedef struct gf__endpoint_run {
    const gf__endpoint_host *host;
    const gf_endpoint *ep;
    size_t index; /* position in the function's endpoints and in $SRV stats */
    /* Mechanics shared by kinds (see the helpers below). */
    natsSubscription *sub;
    pthread_t thread;
    bool thread_started;
    atomic_int thread_done;
    void *state; /* the kind's own */
} gf__endpoint_run;

typedef struct gf__endpoint_ops {
    const char *name; /* "request", for messages */
    /* What becomes of the work in flight when stop gives up at the deadline, for the
     * log line ("requests in flight are not answered; callers retry"). */
    const char *abandoned;
    /* On failure res->message says what, naming the asset; the caller logs it. */
    gf_err (*provision)(gf__endpoint_run *run, gf_provision_result *res);
    void (*describe)(const gf__endpoint_run *run, gf_srv_endpoint *out);
    gf_err (*start)(gf__endpoint_run *run);
    bool (*stop)(gf__endpoint_run *run, int64_t deadline_ms);
    bool (*check)(gf__endpoint_run *run, char *why, size_t why_size);
} gf__endpoint_ops;

/* The operations of `kind`, or NULL for a kind nobody registered (endpoints/kinds.c). */
const gf__endpoint_ops *gf__endpoint_ops_of(gf_endpoint_kind kind);

/* ---- helpers shared by the kinds (endpoints/endpoint.c) ------------------- */

/* Runs `body(run)` on run->thread; body must set run->thread_done when it returns. */
gf_err gf__endpoint_thread_start(gf__endpoint_run *run, void *(*body)(void *));

/* Joins run->thread if it finished before deadline_ms (monotonic); false if it did not
 * (it is then left behind: its un-acked messages are redelivered by JetStream). */
bool gf__endpoint_thread_join(gf__endpoint_run *run, int64_t deadline_ms);

/* Drains run->sub (bounded by the deadline) and destroys it; false if it did not finish. */
bool gf__endpoint_drain_subscription(gf__endpoint_run *run, int64_t deadline_ms);

/* A set of threads started together and joined together (a pull endpoint's fetcher and
 * workers). Each body runs through a trampoline that counts it out when it returns. */
typedef struct gf__threads {
    pthread_t *ids;
    size_t n, cap;
    atomic_int alive;
} gf__threads;

/* Starts body(arg) as one more thread of the set. */
gf_err gf__threads_start(gf__threads *t, void *(*body)(void *), void *arg);

/* Joins every thread if all have returned before deadline_ms (monotonic), and frees the
 * set; false if one is still running (the set is then left alone: its threads may still
 * use what they were given). */
bool gf__threads_join(gf__threads *t, int64_t deadline_ms);

/* What a message handed to a partition owner's handler carries (gf_msg.owner): the
 * deadline past which the owner must not act on the partition. */
struct gf__msg_owner {
    _Atomic int64_t valid_until_ms; /* monotonic */
};

/* A problem found by one of a kind's own threads (a pull fetcher, a partition's worker)
 * that keeps the endpoint from working, e.g. "stream X is missing and cannot be
 * recreated: ...". The thread that found it sets it and clears it once the problem is
 * gone; the kind's `check` reports it. Its own lock: set from the kind's threads, read
 * on a $SRV thread. */
typedef struct gf__health {
    pthread_mutex_t mu;
    char problem[256]; /* "" while healthy */
} gf__health;

void gf__health_init(gf__health *h);
void gf__health_fini(gf__health *h);

/* Sets the problem (copied, truncated), or clears it (NULL). A change is logged, naming
 * run's endpoint: at error when the endpoint becomes unhealthy, at info when it recovers. */
void gf__health_set(gf__health *h, const gf__endpoint_run *run, const char *problem);

/* For a kind's `check`: true while there is no problem; otherwise false with
 * "endpoint <name>: <prefix><problem>" in `why` (prefix may be NULL). */
bool gf__health_check(gf__health *h, const gf__endpoint_run *run, const char *prefix, char *why,
                      size_t why_size);

/* Records a handled message in $SRV stats; `text` may be NULL. */
void gf__endpoint_record(const gf__endpoint_run *run, int64_t start_ns, gf_err err,
                         const char *text);

#endif
