/*
 * gamefn/endpoint.h — how a function receives work: the endpoint declaration, and the
 * messages, replies and ticks its handlers see.
 *
 * An endpoint is a kind tag plus the fields of that kind, and only those:
 *
 *   {.name = "echo", .kind = GF_ENDPOINT_REQUEST,
 *    .request = {.subject = "gamefn.v1.echo", .queue_group = "echo", .on_request = on_echo}}
 *   {.name = "jobs", .kind = GF_ENDPOINT_PULL,
 *    .pull = {.stream = "MATCHES", .consumer = "allocator", .on_message = on_match}}
 *   {.name = "tick", .kind = GF_ENDPOINT_TICK,
 *    .tick = {.subject = "gamefn.v1.tick.matcher", .queue_group = "matcher",
 *             .period_ms = 1000, .lease_bucket = "LEASES", .on_tick = on_tick}}
 *   {.name = "ticks", .kind = GF_ENDPOINT_TICK,           (a ticker function)
 *    .tick = {.role = GF_TICK_PUBLISH, .subjects = tick_groups, .period_ms = 250,
 *             .lease_bucket = "leases"}}
 *   {.name = "tick", .kind = GF_ENDPOINT_TICK,            (its handlers, elsewhere)
 *    .tick = {.role = GF_TICK_HANDLE, .subject = "gamefn.v1.tick.matcher.*",
 *             .queue_group = "matcher", .on_tick = on_tick}}
 *   {.name = "count", .kind = GF_ENDPOINT_PARTITIONED,
 *    .partitioned = {.stream = "EVENTS", .group = "leaderboard", .on_batch = on_batch}}
 *
 * The four kinds (docs/FUNCTIONS.md walks through each):
 *  - GF_ENDPOINT_REQUEST: request/reply on a queue group. The handler fills a reply;
 *    a non-OK return sends an error reply (Nats-Service-Error-Code / Nats-Service-Error
 *    headers + a gamefn.v1.Error body) and the process goes on. At most once: callers
 *    retry with an idempotency key.
 *  - GF_ENDPOINT_PULL: a durable pull consumer (jetstream.consumers in config) shared by
 *    every replica. Return GF_OK -> ack; GF_ERR_RETRY (or any unexpected error) -> nak
 *    with delay (the consumer's backoff, else exponential); GF_ERR_PERMANENT or
 *    GF_ERR_INVALID -> term (never redelivered; the dead-letter path sees the
 *    advisory). Up to runtime.max_in_flight handlers run at once, and messages are
 *    fetched only for idle ones; the runtime keeps a running handler's message in
 *    progress, so long handlers need not call gf_msg_in_progress() (they may).
 *  - GF_ENDPOINT_PARTITIONED: a partitioned consumer group (a jetstream.consumers entry
 *    with `partitions` P): P durables "<group>-p<NN>", each partition handled by one
 *    replica at a time (KV leases with fencing tokens), in batches of one partition's
 *    messages in stream order. Return GF_OK -> every message acked except those marked
 *    in batch->verdicts[] (terminated); anything else -> the same batch retried in place.
 *    Replicas share the partitions evenly and take over a dead one's after its lease.
 *  - GF_ENDPOINT_TICK: every period_ms one instance (the leader, by a lease in KV
 *    bucket lease_bucket) publishes a tick on `subject` (or on each of `subjects`);
 *    one instance of the queue group takes each tick and runs on_tick. `role` splits
 *    the two sides between functions: GF_TICK_PUBLISH only competes for the lease and
 *    publishes (a ticker), GF_TICK_HANDLE only subscribes and handles; GF_TICK_BOTH
 *    (the default) does both in one function. Handlers drop a tick whose lease token
 *    is older than one they have seen (a deposed leader's), so one tenure ticks.
 *
 * Each kind is one table of operations inside the runtime (runtime/src/endpoints/);
 * a new kind adds its enum value, its struct and union member here, and its own file
 * there.
 *
 * Threads: each request endpoint has `concurrency` handler threads (1 by default: one
 * request at a time per endpoint and instance), fed from one subscription, so an
 * idle handler takes the next request; pull handlers run on the endpoint's
 * max_in_flight worker threads, concurrently; partitioned handlers on one thread per
 * owned partition (one batch at a time per partition, partitions concurrently), and
 * on_acquire / on_release on that partition's thread; tick handlers on the tick
 * subscription's thread. Handlers of different endpoints, pull handlers of one, and
 * request handlers of one with concurrency > 1 run concurrently: shared function state
 * needs a lock.
 *
 * Replies go only to inbox subjects (runtime.reply_prefixes, "_INBOX." by default):
 * a request whose reply subject is anything else is refused before the handler runs
 * and counted in $SRV STATS (num_refused).
 *
 * Health: an instance is unhealthy while an endpoint cannot do its work — a request
 * handler running longer than runtime.request_deadline, a pull or partitioned
 * endpoint whose stream or consumer is gone and cannot be recreated. It then stops
 * answering $SRV.PING, and $SRV.INFO / STATS say why, until the endpoint works again.
 */
#ifndef GAMEFN_ENDPOINT_H
#define GAMEFN_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

typedef struct gf_fn gf_fn; /* one running instance; owned by gf_function_main */

/* A received message. Everything is borrowed for the duration of the handler. */
typedef struct gf_msg {
    const char *subject;
    const uint8_t *data;
    size_t len;
    natsMsg *nats;                     /* for headers; do not ack or destroy it */
    uint64_t stream_seq;               /* pull only */
    uint64_t num_delivered;            /* pull only: 1 on the first delivery */
    int64_t timestamp_ns;              /* pull only: when the stream stored it */
    const struct gf__msg_owner *owner; /* runtime-private (partitioned: the lease deadline) */
} gf_msg;

/* The handler's answer to a request. Set data to a malloc'd buffer (the runtime
 * frees it) or leave it NULL for an empty reply. On a non-OK return, `error`
 * is the text sent to the caller; the wire code is derived from the gf_err
 * (gf_wire_code_from_err) unless `code` names a gamefn.v1.ErrorCode itself (e.g.
 * FAILED_PRECONDITION), and `field` / `retry_after_ms` fill the Error message. */
typedef struct gf_reply {
    void *data;
    size_t len;
    char error[256];
    int code;        /* 0: from the returned gf_err */
    char field[128]; /* offending request field, "" for none */
    uint32_t retry_after_ms;
} gf_reply;

/* A tick as published by the leader. seq restarts at 1 with each leader tenure (the
 * ticks of one period on several subjects share it); lease_token is the tenure's
 * fencing token (grows with every new tenure); subject is where it came (its tick
 * group), borrowed for the handler's duration. */
typedef struct gf_tick {
    int64_t seq;
    int64_t unix_ms;
    uint64_t lease_token;
    const char *subject;
} gf_tick;

/* A batch of one partition's messages, in stream order, as a partitioned endpoint's
 * handler sees it. Everything is borrowed for the duration of the handler, except that
 * the handler may write verdicts[]. */
typedef struct gf_batch {
    unsigned partition; /* 0..partitions-1 */
    uint64_t token;     /* fencing token of this instance's ownership of the partition: a
                           new owner always has a larger one. Store it with the effects and
                           refuse writes carrying a smaller one; a handler whose fenced
                           write is refused must return an error, never GF_OK */
    const gf_msg *msgs; /* len >= 1 messages, ascending stream_seq */
    size_t len;
    unsigned attempt; /* 1, then 2, 3... when the same messages are retried in place */
    gf_err *verdicts; /* len entries, GF_OK on entry: set verdicts[i] to GF_ERR_PERMANENT or
                         GF_ERR_INVALID to dead-letter msgs[i] (poison); with a GF_OK
                         return the others are acked */
    bool last_try;    /* a non-OK return terminates the message (len is then 1): the
                         consumer's max_deliver is used up. A handler that must record why
                         before a message dies (or must not let it die for a reason it can
                         wait out) does so on this call */
} gf_batch;

typedef gf_err (*gf_request_fn)(gf_fn *fn, const gf_msg *req, gf_reply *reply);
typedef gf_err (*gf_message_fn)(gf_fn *fn, const gf_msg *msg);
typedef gf_err (*gf_tick_fn)(gf_fn *fn, const gf_tick *tick);
typedef gf_err (*gf_batch_fn)(gf_fn *fn, const gf_batch *batch);
/* A partition's ownership begins (acquire) or ends (release); see gf_partitioned_endpoint. */
typedef gf_err (*gf_partition_acquire_fn)(gf_fn *fn, unsigned partition, uint64_t token);
typedef void (*gf_partition_release_fn)(gf_fn *fn, unsigned partition, uint64_t token);

/* 0 is no kind, so an endpoint whose kind was left out is refused at start. */
typedef enum gf_endpoint_kind {
    GF_ENDPOINT_REQUEST = 1,
    GF_ENDPOINT_PULL,
    GF_ENDPOINT_TICK,
    GF_ENDPOINT_PARTITIONED,
} gf_endpoint_kind;

typedef struct gf_request_endpoint {
    const char *subject;     /* request subject */
    const char *queue_group; /* NULL: every instance gets every request */
    gf_request_fn on_request;
    int concurrency; /* handlers run at once by this instance (0 means 1; at most 256) */
    /* May be NULL. Asked once after init; a value > 0 replaces `concurrency` (e.g. read
     * from the function's config section, gf_fn_section). Same bounds. */
    int (*concurrency_of)(gf_fn *fn);
} gf_request_endpoint;

typedef struct gf_pull_endpoint {
    const char *stream;   /* stream and durable consumer name, both */
    const char *consumer; /* from config jetstream.consumers */
    gf_message_fn on_message;
} gf_pull_endpoint;

/* Which side of ticking a tick endpoint plays. */
typedef enum gf_tick_role {
    GF_TICK_BOTH = 0, /* compete for the lease, publish while leader, and handle ticks */
    GF_TICK_PUBLISH,  /* a ticker: compete for the lease and publish; handles nothing */
    GF_TICK_HANDLE,   /* handle ticks another function publishes: no lease, no period */
} gf_tick_role;

typedef struct gf_tick_endpoint {
    /* BOTH: where ticks are published and handled. PUBLISH: where ticks go, unless
     * `subjects` is set (then only what $SRV shows). HANDLE: what to subscribe to;
     * a wildcard takes several tick groups (e.g. "gamefn.v1.tick.matcher.*"). */
    const char *subject;
    const char *queue_group;  /* BOTH, HANDLE: NULL = the endpoint's name */
    int64_t period_ms;        /* BOTH, PUBLISH: > 0 */
    const char *lease_bucket; /* BOTH, PUBLISH: KV bucket holding the lease (in config) */
    gf_tick_fn on_tick;       /* BOTH, HANDLE */
    gf_tick_role role;
    /* BOTH, PUBLISH (may be NULL): the subjects to tick, one tick on each per period (one
     * per tick group), as a NULL-terminated list owned by the function (e.g. built in
     * init from its config; valid until fini). Asked once, after init. */
    const char *const *(*subjects)(gf_fn *fn);
    /* BOTH, PUBLISH (may be NULL): the period in ms, asked once after init; a value > 0
     * replaces period_ms (e.g. an interval from the function's config section). */
    int64_t (*period)(gf_fn *fn);
} gf_tick_endpoint;

/* A partitioned consumer group: config jetstream.consumers has an entry with this
 * stream and name = group and `partitions` P > 0. The runtime creates its P durables
 * "<group>-p<NN>" and hands each partition to one replica at a time. */
typedef struct gf_partitioned_endpoint {
    const char *stream;
    const char *group;
    gf_batch_fn on_batch;
    /* May be NULL. Runs before the first batch of a partition this instance now owns
     * (load per-partition state here); a non-OK return gives the partition back. */
    gf_partition_acquire_fn on_acquire;
    /* May be NULL. Runs once this instance has stopped handling the partition: no batch
     * of it runs any more on this instance until a new on_acquire. */
    gf_partition_release_fn on_release;
} gf_partitioned_endpoint;

typedef struct gf_endpoint {
    const char *name; /* as listed by $SRV.INFO: [A-Za-z0-9_-]+ */
    gf_endpoint_kind kind;
    union { /* the member named by `kind` */
        gf_request_endpoint request;
        gf_pull_endpoint pull;
        gf_tick_endpoint tick;
        gf_partitioned_endpoint partitioned;
    };
} gf_endpoint;

/* A header's value, or NULL. */
const char *gf_msg_header(const gf_msg *msg, const char *key);

/* Pull and partitioned handlers: tell the server the message is still being worked on
 * (resets its ack wait). The runtime already does this for running handlers.
 * GF_ERR_INVALID for a message that did not come from a pull or partitioned endpoint;
 * GF_ERR_CONFLICT for a partitioned message once this instance's ownership of the
 * partition has lapsed (it must not keep the message from the next owner). */
gf_err gf_msg_in_progress(const gf_msg *msg);

#endif
