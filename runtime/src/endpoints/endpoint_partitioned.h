/*
 * endpoint_partitioned.h — private: what the coordinator of a partitioned endpoint
 * (endpoint_partitioned.c) shares with the worker of each partition it owns
 * (endpoint_partitioned_worker.c).
 *
 * One part_slot per partition. The coordinator thread alone touches the lease, the
 * thread handle and `state`; a worker thread exists only while the slot is OWNED or
 * RELEASING, and alone touches `bind` and its batch buffers. They talk through the
 * atomics: the coordinator publishes the tenure's deadline (owner.valid_until_ms) and
 * token and may ask the worker to stop; the worker says when it is done. What keeps a
 * worker from binding is kept in the slot's health record (its own lock) for the
 * endpoint's `check`, and cleared when the tenure ends.
 */
#ifndef GAMEFN_ENDPOINTS_ENDPOINT_PARTITIONED_H
#define GAMEFN_ENDPOINTS_ENDPOINT_PARTITIONED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "endpoints/endpoint.h"
#include "endpoints/partition_share.h"
#include "endpoints/pull_consumer.h"
#include "endpoints/pull_keeper.h"
#include "gamefn/lease.h"

typedef enum part_state {
    PART_FREE,      /* not ours (as far as we know) */
    PART_OWNED,     /* lease held, worker running */
    PART_RELEASING, /* worker asked to stop; lease given back once it is done */
} part_state;

struct part_group;

typedef struct part_slot {
    struct part_group *group;
    unsigned partition;
    gf_partition_names names;
    gf_consumer_config cc; /* this partition's durable; strings in names and the config */

    /* coordinator thread only */
    gf_lease lease;
    part_state state;
    int64_t renew_at_ms;   /* monotonic: next renewal */
    int64_t retry_from_ms; /* monotonic: do not try to acquire before (after a refusal) */
    pthread_t thread;
    bool thread_started;

    /* shared */
    struct gf__msg_owner owner; /* valid_until_ms: acting on the partition stops there */
    _Atomic uint64_t token;     /* fencing token of the tenure */
    atomic_int stop;            /* coordinator -> worker: stop at the next boundary */
    atomic_int done;            /* worker -> coordinator: stopped; join me */
    gf__health health;          /* worker (through bind) -> check: why it cannot work */

    /* worker thread only */
    gf__pull_binding bind; /* kept across tenures: it remembers the position */
} part_slot;

typedef struct part_group {
    gf__endpoint_run *run;
    const gf_consumer_config *cc; /* the group (template) from config */
    unsigned partitions;
    int64_t ttl_ms;
    int64_t margin_ms; /* never act later than (renewal sent) + ttl - margin */
    int batch;
    char holder[GF_MEMBER_HOLDER_MAX]; /* "<instance>.<nonce>" */
    jsCtx *js;                         /* ours: API timeout bounded by the ttl */
    kvStore *kv;                       /* the lease bucket */
    gf__keeper *keeper;
    part_slot *slots;    /* partitions entries */
    gf__members members; /* coordinator only: the member list as last written */
    char *members_text;  /* coordinator only: its encoding buffer */
    bool hungry;         /* coordinator only: below target after the last rebalance */
} part_group;

/* The worker thread of one tenure (endpoint_partitioned_worker.c): runs on_acquire,
 * binds, waits for a previous owner's unacked messages, then fetch -> on_batch -> ack
 * until told to stop or the tenure's deadline nears; then on_release. Sets slot->done. */
void *gf__partition_worker(void *slot);

/* True while the tenure may still act (monotonic now < valid_until). */
bool gf__partition_valid(const part_slot *slot);

#endif
