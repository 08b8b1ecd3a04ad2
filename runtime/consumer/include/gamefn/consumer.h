/*
 * gamefn/consumer.h — the event consumer framework: a consumer of stream EVENTS says
 * which effect keys an event touches and how it changes one key's state; the
 * framework does everything else, exactly once.
 *
 *   static gf_err lb_keys(void *ctx, const gf_consumer_event *e, gf_consumer_keys *out,
 *                         char *why, size_t why_size);     -> "<board>.<period>.<player>"
 *   static gf_err lb_load(void *ctx, const char *key, const uint8_t *effect, size_t len,
 *                         void **state);                   -> decode (len 0: a new key)
 *   static gf_err lb_apply(void *ctx, const char *key, void *state,
 *                          const gf_consumer_event *e, char *why, size_t why_size);
 *   static gf_err lb_store(void *ctx, const char *key, const void *state,
 *                          uint8_t **out, size_t *len);    -> encode
 *   static void   lb_drop(void *ctx, void *state);
 *
 *   static const gf_consumer_def def = {
 *       .stream = "EVENTS", .group = "leaderboard", .bucket = "leaderboard",
 *       .ops = {lb_keys, lb_load, lb_apply, lb_store, lb_drop}};
 *   init:      gf_consumer_open(fn, &def, &opts, ctx, &c); gf_fn_set_state(fn, c);
 *   endpoint:  {.name = "events", .kind = GF_ENDPOINT_PARTITIONED,
 *               .partitioned = {.stream = "EVENTS", .group = "leaderboard",
 *                               .on_batch = gf_consumer_on_batch,
 *                               .on_acquire = gf_consumer_on_acquire,
 *                               .on_release = gf_consumer_on_release}}
 *   fini:      gf_consumer_close(gf_fn_state(fn));
 *
 * What one batch does (one partition's messages, stream order; docs/EVENTS.md):
 *  1. Decode and validate every message (gamefn/event_check.h; the stored subject's
 *     player and type tokens must equal the event's and its partition token the
 *     player's partition). A bad one is dead-lettered with its reason:
 *     garbage bytes, oversized, missing player id, unknown type or a payload that does
 *     not match it. A message re-driven for another consumer group (header
 *     Gamefn-Redrive naming another group's durable) is acked with no effect.
 *  2. keys(): the effect keys of each event (0 = it does not concern this consumer).
 *     An error dead-letters the event with the text written into `why`.
 *  3. Load every key once: from the partition's cache (emptied on acquire), else by a
 *     pipelined read of the bucket (direct get, all keys at once).
 *  4. Per key, in stream order, apply only the events the key's record says it has not
 *     applied (gamefn/effect_record.h: the dedup window plus dead marks — exact for
 *     redeliveries, crashes between effect and ack, rebalances, spool replays long after
 *     the duplicate window, and re-drives). apply() returning GF_ERR_INVALID or
 *     GF_ERR_PERMANENT dead-letters the event for that key (a dead mark is written).
 *  5. Write every changed key once: effect + marks + this owner's fencing token in one
 *     value, by compare-and-set, all keys pipelined (gamefn/publish.h). A key whose
 *     write lost (or whose outcome is unknown) is read again and its events re-applied
 *     (the marks make that idempotent), up to options.max_rounds rounds. A record
 *     written by a newer owner (a larger token) stops the batch: GF_ERR_CONFLICT.
 *  6. For each dead-lettered message, write its reason (DeadReason in options'
 *     reasons_bucket, key "<stream>.<durable>.<stream_seq>") for the DLQ mover, then
 *     return GF_OK with the verdicts: the runtime acks the rest and terminates those.
 * Transient failures (KV unreachable, timeouts) return GF_ERR_RETRY: the runtime retries
 * the batch in place with the consumer's backoff. On a message's last try (max_deliver
 * used up, gf_batch.last_try) the framework does not let a transient failure kill it:
 * an apply() that still fails is dead-lettered with its dead mark written, and a store
 * that is unreachable is waited for (while this replica owns the partition), because a
 * keyed event may die only once its dead mark is stored.
 *
 * Cost per batch: one compare-and-set per changed key (not per event), plus one read
 * per key not in the cache; one KV write per dead-lettered message.
 *
 * Threads: batches of different partitions run concurrently, one at a time per
 * partition. The ops are called on the partition's thread and must be safe to call
 * concurrently for different partitions (different keys: a key belongs to one
 * partition); state objects are only touched by their partition's thread.
 * Ownership: gf_consumer_open allocates, gf_consumer_close frees (after the endpoints
 * stopped: in fini). ctx is borrowed. Everything an op gets is borrowed for the call;
 * load()'s state is the framework's until it calls drop().
 */
#ifndef GAMEFN_CONSUMER_H
#define GAMEFN_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/consumer_ops.h"
#include "gamefn/consumer_options.h"
#include "gamefn/endpoint.h"
#include "gamefn/err.h"
#include "gamefn/function.h"

typedef struct gf_consumer_def {
    const char *stream; /* the event stream, e.g. "EVENTS" */
    const char *group;  /* its partitioned group in jetstream.consumers */
    const char *bucket; /* KV bucket of the effect records (in jetstream.buckets) */
    gf_consumer_ops ops;
} gf_consumer_def;

typedef struct gf_consumer gf_consumer;

typedef struct gf_consumer_stats {
    uint64_t batches;
    uint64_t events;     /* valid events seen */
    uint64_t applied;    /* (event, key) pairs applied */
    uint64_t duplicates; /* (event, key) pairs found applied already */
    uint64_t ignored;    /* events with no key, or re-driven for another group */
    uint64_t dead;       /* messages dead-lettered */
    uint64_t redriven;   /* re-driven events seen */
    uint64_t reads;      /* keys read from the bucket */
    uint64_t writes;     /* compare-and-set writes sent */
    uint64_t conflicts;  /* writes that lost or had an unknown outcome (re-read) */
    uint64_t retries;    /* batches that returned an error to be retried */
    uint64_t marks_lost; /* dead marks dropped at GF_EFFECT_DEAD_MAX */
} gf_consumer_stats;

/* Binds the consumer to a running function: its group's partition count and
 * max_deliver from config, a publisher on the function's connection, the bucket.
 * `opts` NULL = defaults (gamefn/consumer_options.h). Call from init. */
gf_err gf_consumer_open(gf_fn *fn, const gf_consumer_def *def, const gf_consumer_options *opts,
                        void *ctx, gf_consumer **out);

/* Frees it (NULL is fine); the partitioned endpoint must have stopped (fini). */
void gf_consumer_close(gf_consumer *c);

void *gf_consumer_ctx(const gf_consumer *c);
void gf_consumer_stats_get(const gf_consumer *c, gf_consumer_stats *out);

/* The batch, as described above. */
gf_err gf_consumer_batch(gf_consumer *c, const gf_batch *batch);
/* A new tenure of the partition: its cache starts empty. */
gf_err gf_consumer_acquire(gf_consumer *c, unsigned partition, uint64_t token);
/* The tenure ended: its cache is dropped. */
void gf_consumer_release(gf_consumer *c, unsigned partition, uint64_t token);

/* The three for a partitioned endpoint whose function state (gf_fn_set_state) is the
 * gf_consumer. */
gf_err gf_consumer_on_batch(gf_fn *fn, const gf_batch *batch);
gf_err gf_consumer_on_acquire(gf_fn *fn, unsigned partition, uint64_t token);
void gf_consumer_on_release(gf_fn *fn, unsigned partition, uint64_t token);

#endif
