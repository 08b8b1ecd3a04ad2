/*
 * pull_consumer.h — private: what the pull and the partitioned endpoints share about
 * one durable consumer: binding to it (and recreating what went missing), where it
 * stands, fetching, reading a message's metadata, and retry delays.
 *
 * A binding (gf__pull_binding) is one subscription to one consumer, used by one thread
 * (the pull endpoint's fetcher, or the worker of one partition). Ownership: the
 * binding borrows the run, the configs and the health record it reports problems to
 * (the kind's `check` reads that record); it owns its subscription.
 * Messages fetched through it point at that subscription (nats.c keeps a raw pointer
 * in every natsMsg for acks), so it must not be unbound while any is still held.
 */
#ifndef GAMEFN_ENDPOINTS_PULL_CONSUMER_H
#define GAMEFN_ENDPOINTS_PULL_CONSUMER_H

#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

#include "endpoints/endpoint.h"

typedef struct gf__pull_binding {
    const gf__endpoint_run *run;    /* for js, stop, logs */
    gf__health *health;             /* where binding problems go (the kind's `check` reads it) */
    const gf_consumer_config *cc;   /* a plain consumer (a partition's own for a group) */
    const gf_stream_config *stream; /* its stream, recreated if it disappears; may be NULL */
    natsSubscription *sub;          /* NULL while unbound */
    /* The server's ack waits: with a backoff list nats-server 2.9.10 times out a message's
     * n-th delivery after backoff[n-1] (and reports ack_wait = backoff[0]), so the
     * shortest and the longest wait it may apply differ. 0 until bound. */
    int64_t ack_wait_ms;      /* shortest: keep held messages alive well within it */
    int64_t ack_wait_max_ms;  /* longest: an unacked message is redelivered within it */
    uint64_t num_ack_pending; /* at the last look (bind or check) */
    /* For a consumer with one reader (a partition's owner). The server numbers every
     * delivery of a consumer, redeliveries included (its "consumer sequence"), so the
     * reader's deliveries follow one another without a gap unless someone else got
     * messages in between: a previous owner's pull request that reached the server after
     * its tenure (a process stopped between its deadline check and the send), or a
     * forged one. delivered_seq is the last delivery this reader got, or the consumer's
     * count when it bound; delivered_elsewhere is set once a gap was seen (the next bind
     * clears it, and the reader then waits for what is unacked to come back first). */
    uint64_t delivered_seq;
    bool delivered_elsewhere;
    /* Position: every stream sequence <= floor was acked, terminated or dead-lettered,
     * as far as this binding has seen. A consumer that disappears is recreated from
     * floor + 1 (never from the start of the stream). Reset when the stream itself is
     * a new one (its creation time changed). */
    uint64_t floor;
    bool floor_known;
    int64_t stream_created_ns;
    int64_t checked_ms; /* monotonic: when gf__pull_check last looked */
    int failures;       /* consecutive failed binds, for backoff and logs */
} gf__pull_binding;

/* Provisioning for an endpoint that reads `cc` (a plain consumer or a partitioned
 * group): its stream, then its consumer(s), from config. A consumer created on a
 * stream that already holds messages with deliver `all` is logged at warn (every one
 * of them will be delivered): it was deleted while no instance ran, or is new.
 * On failure res->message names the asset. */
gf_err gf__pull_provision(const gf__endpoint_run *run, const gf_consumer_config *cc,
                          gf_provision_result *res);

/* Sets up an unbound binding that reports its problems to `health` (initialized by the
 * caller). `stream` may be NULL (then a missing stream is only reported, not recreated). */
void gf__pull_binding_init(gf__pull_binding *b, const gf__endpoint_run *run,
                           const gf_consumer_config *cc, const gf_stream_config *stream,
                           gf__health *health);

/* Binds to the consumer. A missing stream is provisioned again from config; a missing
 * consumer is recreated from the binding's position (deliver by_start_sequence
 * floor + 1, logged at warn with what is skipped), or with its configured policy when
 * no position is known (logged at warn when that replays stored messages). A failure to
 * recreate, or a third failed bind in a row, is set as the problem in b->health (so the
 * endpoint is unhealthy in $SRV) until a bind succeeds.
 * GF_OK when bound; otherwise the caller backs off (gf__pull_bind_delay_ms) and
 * retries. */
gf_err gf__pull_bind(gf__pull_binding *b);

/* Delay before the next bind attempt after b->failures failures. */
int64_t gf__pull_bind_delay_ms(const gf__pull_binding *b);

/* Looks at the consumer (consumer info) if `every_ms` passed since the last look,
 * refreshing the position and ack wait. A fetch cannot tell an idle consumer from a
 * deleted one (both time out), so this is how a vanished consumer or stream is noticed:
 * call it when a fetch came back empty. Consumer info is not free: nats-server 2.9.10
 * counts a filtered consumer's pending messages by scanning (11 ms for 300k stored
 * messages, measured), so never call it per batch. GF_ERR_NOT_FOUND when the consumer
 * or its stream is gone (the caller unbinds once it holds no message, then binds
 * again); other errors are transient. */
gf_err gf__pull_check(gf__pull_binding *b, int64_t every_ms);

/* True when the delivery numbered `delivery_seq` (gf__pull_msg's return) is the next
 * one after the last this binding got, and records it; false (delivered_elsewhere)
 * when the consumer delivered messages to someone else since. For a consumer with one
 * reader. */
bool gf__pull_in_turn(gf__pull_binding *b, uint64_t delivery_seq);

/* The only reader of a consumer (a partition's owner) acked everything up to `seq`
 * in order and the server confirmed it: the position is at least `seq`. */
void gf__pull_acked(gf__pull_binding *b, uint64_t seq);

/* Naks every message queued on the subscription that no fetch returned (late deliveries
 * for a request that gave up), so that a stopping reader hands them back at once instead
 * of leaving them to their ack wait. Returns how many. */
size_t gf__pull_hand_back(gf__pull_binding *b);

/* Destroys the subscription (never the durable). No message of it may still be held. */
void gf__pull_unbind(gf__pull_binding *b);

/* Up to `batch` messages. A NoWait request takes what is ready (on nats-server 2.9.10 it
 * waits up to max(poll_ms, 500 ms) for a first message); only when nothing came, a long
 * poll of poll_ms (0: none) waits for one message. So a call that gets nothing returns
 * after about max(poll_ms, 500 ms) + poll_ms. Returns NATS_OK with at least
 * one message, NATS_TIMEOUT with none, or an error. Every request carries an expiry, so
 * none is left open at the server when this returns. No idle heartbeat is asked for:
 * nats.c 3.4.1's heartbeat timer reports heartbeats as missed that were not, and can
 * fire on a subscription being destroyed (docs/NATS-FACTS.md §3); a poll is bounded by
 * its expiry instead. */
natsStatus gf__pull_fetch(natsSubscription *sub, natsMsgList *list, int batch, int64_t poll_ms);

/* The same for a partition's tenure, which may fetch only until `deadline_ms` (monotonic;
 * the lease's valid_until): no request is sent, and none left open at the server, past
 * it, whatever happened between two requests (a thread paused, a process stopped). A
 * request still open when the next owner starts could take a message the next owner
 * then never sees: delivered here, dropped unacked, and covered by the next owner's
 * acks under ack_policy all (lost), or redelivered after newer ones (out of order). So
 * the deadline is looked at again right before each request and bounds its expiry; a
 * NoWait request (its 500-ms floor) is skipped when less than that is left. */
natsStatus gf__pull_fetch_until(natsSubscription *sub, natsMsgList *list, int batch,
                                int64_t poll_ms, int64_t deadline_ms);

/* The handler's view of a fetched message (borrowing it). Returns the server's number
 * of this delivery (the consumer sequence; 0 when the message has no metadata). */
uint64_t gf__pull_msg(natsMsg *m, gf_msg *out);

/* Redelivery delay for delivery `delivered` (1-based): the consumer's backoff list
 * when it has one (the last entry repeating), else 1 s doubling up to 30 s. */
int64_t gf__pull_retry_delay_ms(const gf_consumer_config *cc, uint64_t delivered);

#endif
