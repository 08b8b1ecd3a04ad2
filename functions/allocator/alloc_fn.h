/*
 * alloc_fn.h — the allocator's running state (private to functions/allocator).
 *
 *   main.c        the function: config, keys, buckets, the fleet mirror, the endpoint
 *   alloc_run.c   one Match from MATCHES to ASSIGNED (or back to the pool)
 *
 * Threads: the pull endpoint's thread(s) run alloc_on_match; the mirror has its own.
 * The state is set in init and read-only afterwards, but for the counters of a full
 * fleet bucket (atomics).
 */
#ifndef GAMEFN_ALLOC_FN_H
#define GAMEFN_ALLOC_FN_H

#include <stdatomic.h>
#include <stdint.h>

#include <nats/nats.h>

#include "alloc_config.h"
#include "alloc_plan.h"
#include "fleet_mirror.h"
#include "gamefn/endpoint.h"
#include "gamefn/test_pause.h"
#include "mmstore.h"

/* GAMEFN_TEST_ALLOCATOR_PAUSE=<step>: tests make the allocator stop (sleep until
 * killed) at one step of a match, to SIGKILL it there; <step>:<ms> sleeps that long and
 * goes on (gamefn/test_pause.h). Steps, in order: */
#define ALLOC_STEPS "fenced server committed assigning assigned"

typedef struct alloc_state {
    const alloc_config *cfg;
    const char *instance_id;
    natsConnection *nc;
    gf_mmstore *store; /* tickets, players, matches */
    jsCtx *js;         /* the fleet's writes go through it (fleet_store.h) */
    kvStore *fleet;
    fleet_mirror *mirror;
    uint8_t sk[GF_WIRE_JOIN_SK_LEN];
    alloc_signer signer;
    /* GAMEFN_TEST_ALLOCATOR_PAUSE=<step> (gamefn/test_pause.h), steps in order: `fenced`,
     * `server`, `assigning` (between two ASSIGNED writes), `committed`, `assigned`. */
    gf_test_pause pause;
    /* Allocations the fleet bucket refused for want of room since the last warning, and
     * when that was (monotonic ms; one line every 10 s at most). */
    atomic_llong fleet_full_refused;
    _Atomic int64_t fleet_full_logged_ms;
} alloc_state;

gf_err alloc_on_match(gf_fn *fn, const gf_msg *msg);

#endif
