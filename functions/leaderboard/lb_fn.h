/*
 * lb_fn.h — the leaderboard process's state, shared by main.c (consumer, queries),
 * follow.c (the follower of KV_leaderboard) and snapshot.c (LB_SNAPSHOTS).
 *
 * Threads: the boards are behind `lock` (a rwlock): the follower writes (a batch of KV
 * messages at a time, so as_of_stream_seq always names a state the boards are exactly
 * in), queries and the snapshot writer read. The freshness numbers are atomics.
 */
#ifndef GAMEFN_LB_FN_H
#define GAMEFN_LB_FN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gamefn/consumer.h"
#include "gamefn/function.h"
#include "lb.h"

#define LB_BUCKET           "leaderboard"
#define LB_SNAPSHOTS        "LB_SNAPSHOTS"
#define LB_CHUNK_SUBJECT    "gamefn.v1.lb.snapshot.chunk"
#define LB_MANIFEST_SUBJECT "gamefn.v1.lb.snapshot.manifest"

typedef struct lb_fn {
    const lb_config *cfg;
    gf_consumer *consumer;
    natsConnection *nc;
    jsCtx *js;
    const char *instance;

    pthread_rwlock_t lock;
    lb_boards *boards;          /* under lock */
    uint64_t applied_seq;       /* under lock: last KV_leaderboard sequence in boards */
    _Atomic uint64_t as_of_seq; /* the same, for readers without the lock */
    _Atomic int64_t heard_unix_ms;
    _Atomic uint64_t pending;
    atomic_int caught_up;

    pthread_t follower;
    bool follower_started;
    atomic_int stop;
} lb_fn;

/* follow.c: starts the follower from applied_seq + 1; stops it. */
gf_err lb_follow_start(lb_fn *lb);
void lb_follow_stop(lb_fn *lb);

/* snapshot.c: loads the latest snapshot into lb->boards (applied_seq = its as_of; 0 and
 * empty boards when there is none or it cannot be read whole). Before the follower. */
void lb_snapshot_load(lb_fn *lb);
/* Writes a snapshot if the last one is older than snapshot_interval and the boards
 * changed since; keeps the last two. */
gf_err lb_snapshot_maybe_write(lb_fn *lb);

#endif
