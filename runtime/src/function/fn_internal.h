/*
 * fn_internal.h — the running function instance, shared by function.c and the
 * endpoint_*.c modules (private to the runtime).
 *
 * Threads: gf_stop_requested is written by the signal thread (and the main thread on
 * a failed start) and read everywhere; everything
 * else in gf_fn is written before endpoints start and only read afterwards, except
 * each endpoint's own gf_endpoint_run, which belongs to that endpoint's thread.
 */
#ifndef GAMEFN_FN_INTERNAL_H
#define GAMEFN_FN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "gamefn/conn.h"
#include "gamefn/function.h"
#include "gamefn/lease.h"
#include "gamefn/srv.h"
#include "gamefn/wire.h"
#include "core/clock.h"

typedef struct gf_endpoint_run {
    gf_fn *fn;
    const gf_endpoint *ep;
    size_t index; /* position in def->endpoints and in $SRV stats */
    natsSubscription *sub;
    /* PULL and the TICK ticker run on a thread of their own. */
    pthread_t thread;
    bool thread_started;
    atomic_int thread_done;
    const gf_consumer_config *consumer; /* PULL */
    kvStore *lease_kv;                  /* TICK */
    gf_lease lease;                     /* TICK: owned by the ticker thread */
} gf_endpoint_run;

struct gf_fn {
    const gf_function *def;
    gf_config *cfg;
    char instance_id[GF_WIRE_ID_MAX + 1];
    char conn_name[160];
    gf_conn *conn;
    gf_srv *srv;
    void *state;
    gf_endpoint_run *runs; /* def->endpoints_len entries */
};

/* Set once SIGTERM/SIGINT arrived: every loop that must end on shutdown polls it. */
extern atomic_int gf_stop_requested;

/* Each kind starts on the instance's connection and stops within the drain bound. */
gf_err gf_endpoint_request_start(gf_endpoint_run *run);
gf_err gf_endpoint_pull_start(gf_endpoint_run *run);
gf_err gf_endpoint_tick_start(gf_endpoint_run *run);

/* Stops taking new work; returns once in-flight work finished or deadline_ms (monotonic)
 * passed. Returns false if work was still running at the deadline. */
bool gf_endpoint_stop(gf_endpoint_run *run, int64_t deadline_ms);

/* Drains a request or tick subscription (bounded); false if it did not finish. */
bool gf_endpoint_drain_subscription(gf_endpoint_run *run, int64_t deadline_ms);

/* Records a handled message in $SRV stats. */
void gf_endpoint_record(gf_endpoint_run *run, int64_t start_ns, gf_err err, const char *text);

#endif
