/*
 * bench/events.h — private to `gamefn-bench events`: the event plan, the publisher,
 * the effect observer and the raw pipeline (events_load.c), driven by events.c.
 *
 * The plan: event i (over every phase) scores player plan.player[i] on board "global"
 * (incr) with delta 2^20 + a small part, so a player's score says how many of its
 * events were applied (high bits) and which (the exact cumulative sums), without
 * trusting any counter of the system under test. Event i goes to partition
 * gf_partition_of("pl<player>", EV_PARTITIONS) of EVENTS, as the server's mapping puts it.
 *
 * Threads: the publisher runs on the caller's thread (nats.c's threads take the acks);
 * the observer's callback runs on its subscription's nats.c thread, the only one that
 * touches its cursors (no lock), and writes the plan's effect times and its counters as
 * atomics, which the caller's thread reads.
 */
#ifndef GAMEFN_BENCH_EVENTS_H
#define GAMEFN_BENCH_EVENTS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

/* EV_PARTITIONS: the partitions of the server's event mapping and of the consumer group. */
enum { EV_SOURCES = 8, EV_COUNT_SHIFT = 20, EV_PARTITIONS = 16 };

typedef struct ev_plan {
    size_t events, players;
    uint32_t *player;        /* per event */
    int64_t *delta;          /* per event */
    _Atomic int64_t *pub_ns; /* per event: when it was handed to the publisher */
    _Atomic int64_t *eff_ns; /* per event: when the observer saw its effect */
    /* per player: its events in plan order and their cumulative sums */
    size_t **idx;
    int64_t **cum;
    size_t *n;
    uint8_t *player_part; /* per player: its partition */
    /* per partition: its events in plan order (= stream order) */
    size_t *part_idx[EV_PARTITIONS];
    size_t part_n[EV_PARTITIONS];
} ev_plan;

int ev_plan_init(ev_plan *p, size_t events, size_t players, uint64_t seed);
void ev_plan_fini(ev_plan *p);

/* Called about every 100 ms while a publish or a wait lasts, on the calling thread: true
 * ends it at once (e.g. a process that would apply the events is gone). */
typedef bool (*ev_give_up)(void *arg);

/* Publishes plan events [from, to) as GameEvents (8 sources, windowed async JetStream
 * publish with Msg-Id and Gamefn-Source headers). rate 0 = as fast as the window allows,
 * else paced to `rate` events/s. subject_prefix NULL = gamefn.v1.event (mapped by the
 * server); else raw subjects "<prefix>.<player>". 0, or -1 (why on stderr, or give_up, may
 * be NULL, said so). */
int ev_publish(jsCtx *js, ev_plan *p, size_t from, size_t to, double rate,
               const char *subject_prefix, ev_give_up give_up, void *arg);
/* A JetStream context for ev_publish: async window 4096, acks counted. */
jsCtx *ev_js(natsConnection *nc);
/* Waits for every async publish ack; the number of failed publishes so far. */
long long ev_publish_wait(jsCtx *js);

/* The observer: the consumer's acks of EVENTS (an ack follows the stored effect); plan
 * event i is stream sequence i + 1. Effect times go to plan->eff_ns. With explicit acks
 * (ack_all false) an ack of stream sequence S marks event S - 1 alone; with ack_policy
 * all an ack of S from durable "<group>-p<NN>" marks every event of partition NN up to S
 * (one ack per batch acknowledges the durable's earlier messages). A +TERM marks its own
 * event, as an anomaly. Events before `from` (acknowledged before the observer started)
 * are never marked. */
typedef struct ev_observer {
    ev_plan *plan;
    natsConnection *nc;
    natsSubscription *sub;
    bool ack_all;
    size_t cursor[EV_PARTITIONS]; /* ack_all: the next of plan->part_idx[NN] to mark */
    _Atomic long long total;      /* events acked */
    _Atomic long long anomalies;  /* events terminated (dead-lettered) */
    _Atomic long long mismatched; /* ack_all: acks whose durable is not their event's partition */
} ev_observer;

/* Subscribes on url; ev_observer_stop undoes it (also after a failed start). */
int ev_observer_start(ev_observer *o, ev_plan *p, const char *url, bool ack_all, size_t from);
void ev_observer_stop(ev_observer *o);
/* Waits until the observer saw `count` events applied or terminated in all, or timeout_ms passed,
 * or give_up (may be NULL) says so; then the time (monotonic ns) the last effect of plan events
 * [from, to) was seen, or -1 when the wait ended without them. */
int64_t ev_observer_wait(ev_observer *o, long long count, size_t from, size_t to,
                         int64_t timeout_ms, ev_give_up give_up, void *arg);

/* Waits until every durable of partitioned group `group` (<group>-p00 ..) on stream
 * EVENTS has nothing pending and nothing awaiting an ack (every stored event's effect is
 * stored and acknowledged), polling their consumer info every 20 ms; call it after every
 * publish is acknowledged by the stream. The monotonic ns at the end of the poll that saw
 * it (at most ~20 ms late: never early), or -1
 * after timeout_ms or when give_up (may be NULL) says so. Unlike the observer, it costs
 * the server nothing per event: the throughput phases measure the consumer alone. */
int64_t ev_drained_wait(jsCtx *js, const char *group, int partitions, int64_t timeout_ms,
                        ev_give_up give_up, void *arg);

/* The raw pipeline of the same server: plan events [0, n) published to a stream of
 * their own while one durable fetches and acks them, at once. Events/s, 0 on failure. */
double ev_raw_pipeline(natsConnection *pub_nc, natsConnection *sub_nc, ev_plan *p, size_t n,
                       int batch);

#endif
