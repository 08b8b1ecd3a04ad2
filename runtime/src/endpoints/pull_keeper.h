/*
 * pull_keeper.h — private: keeps held JetStream messages from being redelivered while their
 * handler still runs.
 *
 * The server redelivers a message that is not acked within its consumer's ack wait — and
 * with a `backoff` list nats-server 2.9.10 makes that backoff[n-1] for the n-th delivery
 * (first 1 s for the shipped allocator consumer), whatever `ack_wait` says
 * (docs/NATS-FACTS.md §5). A handler that runs longer than that would see its message
 * handed to another replica while it works. So every running handler registers what it
 * holds (gf__keeper_add) and one keeper thread per endpoint sends "in progress" for it
 * every 40% of the shortest such wait, until the handler releases it (before acking). A
 * hold may carry a validity deadline (a partition owner's lease): past it nothing more is
 * sent, so the messages come back to the next owner one ack wait after this owner stopped
 * acting.
 *
 * Threads: hold/release from handler threads, set_ack_wait from the thread that binds; the
 * keeper thread sends. One mutex guards the list, and in-progress is sent under it, so once
 * gf__keeper_remove returns nothing touches the messages again and they may be acked and
 * destroyed. Ownership: a hold is the caller's memory (usually on its stack) and borrows
 * the messages; the keeper owns its thread.
 */
#ifndef GAMEFN_ENDPOINTS_PULL_KEEPER_H
#define GAMEFN_ENDPOINTS_PULL_KEEPER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

typedef struct gf__keeper gf__keeper;

typedef struct gf__keeper_hold {
    natsMsg *const *msgs;
    size_t len;
    int64_t next_ms;                     /* monotonic: next in-progress */
    const _Atomic int64_t *valid_until;  /* monotonic ms; NULL = no limit */
    struct gf__keeper_hold *prev, *next; /* the keeper's list */
} gf__keeper_hold;

/* Starts the keeper thread; `endpoint` names it in logs (borrowed, must outlive it). */
gf_err gf__keeper_start(const char *endpoint, gf__keeper **out);

/* The consumer's effective ack wait, as the server reports it (0 = unknown: nothing
 * is sent). */
void gf__keeper_set_ack_wait(gf__keeper *k, int64_t ack_wait_ms);

/* Registers `len` messages delivered at `delivered_ms` (monotonic, taken before the
 * fetch) as held by a running handler. */
void gf__keeper_add(gf__keeper *k, gf__keeper_hold *h, natsMsg *const *msgs, size_t len,
                    int64_t delivered_ms, const _Atomic int64_t *valid_until);

/* Unregisters; afterwards the keeper never touches h's messages. */
void gf__keeper_remove(gf__keeper *k, gf__keeper_hold *h);

/* Stops and joins the thread, frees. No hold may remain. NULL is fine. */
void gf__keeper_stop(gf__keeper *k);

#endif
