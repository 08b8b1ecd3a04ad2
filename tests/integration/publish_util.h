/*
 * publish_util.h — helpers for the publisher's integration tests (test_publish*.c):
 * a tally the callbacks write into, reading a stream back by sequence, finding the
 * node that leads a stream. The assert helpers use cmocka and fail the calling test.
 *
 * Threads: pt_done runs on the publisher's callback threads; everything in a tally
 * is guarded by its mutex. The rest is for the test's main thread.
 */
#ifndef GAMEFN_TEST_PUBLISH_UTIL_H
#define GAMEFN_TEST_PUBLISH_UTIL_H

#include <nats/nats.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gamefn/publish.h"
#include "natsd.h"

/* One server (nodes 1) or a 3-node cluster (nodes 3), one connection that knows
 * every node (reconnecting every 100 ms), a JetStream context (API wait 2 s). */
typedef struct pt_env {
    gf_natsd *srv;
    gf_natsd_cluster *cluster;
    natsConnection *nc;
    jsCtx *js;
} pt_env;

void pt_env_start(pt_env *e, int nodes);
void pt_env_stop(pt_env *e);

typedef struct pt_tally pt_tally;

/* One message's record: how often its callback ran and with what. */
typedef struct pt_item {
    pt_tally *tally;
    int index;
    int calls;
    gf_publish_result res;
    int64_t sent_ms, done_ms; /* monotonic: set by pt_send and pt_done */
} pt_item;

struct pt_tally {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    int done; /* callbacks so far, all items */
    pt_item *items;
    gf_publish *pub; /* optional: in_flight is sampled in every callback */
    int max_in_flight_seen;
};

pt_tally *pt_tally_new(int n);
void pt_tally_free(pt_tally *t);

/* gf_publish_done_fn: closure is &tally->items[i]. */
void pt_done(const gf_publish_result *res, void *closure);

/* Waits until `count` callbacks ran in total, at most timeout_ms. true if so. */
bool pt_wait_done(pt_tally *t, int count, long long timeout_ms);

/* Snapshot under the lock. */
int pt_done_count(pt_tally *t);

/* Every item called exactly once; counts of each result. */
void pt_assert_once(pt_tally *t, int *ok, int *dup, int *timeout, int *other);

/* Sends msg id "<prefix>-<i>" (payload "m<i>") on subject with pt_done; asserts GF_OK. */
void pt_send(gf_publish *p, pt_tally *t, const char *subject, const char *prefix, int i);

/* The Nats-Msg-Id of every message of `stream` in sequence order, read through a
 * fresh durable pull consumer: ids[seq-1] (malloc'd strings, NULL where a message has
 * none). Asserts that exactly `expect` messages are read. Caller frees with
 * pt_ids_free. */
char **pt_read_ids(jsCtx *js, const char *stream, uint64_t expect);
void pt_ids_free(char **ids, uint64_t n);

/* The cluster node leading `stream` (retried while an election runs), or NULL. */
gf_natsd *pt_stream_leader(gf_natsd_cluster *c, jsCtx *js, const char *stream);

/* Pipelined KV compare-and-set: keys "k.<i>" of a bucket, one CAS in flight per key,
 * a create first and then updates from the revision its last callback reported,
 * with the values "v0", "v1", ... */
typedef struct pt_cas_pipe pt_cas_pipe;

pt_cas_pipe *pt_cas_pipe_new(const char *bucket, int keys);
void pt_cas_pipe_free(pt_cas_pipe *cp);

/* Sends `total` CAS through p and waits for every callback. `at_fn(arg)` runs on
 * this thread once `at` have been sent (at_fn may be NULL). */
void pt_cas_pipe_run(pt_cas_pipe *cp, gf_publish *p, int total, int at, void (*at_fn)(void *),
                     void *arg);

/* Every CAS ended GF_OK, and each key holds its last acknowledged value at the
 * revision its callback reported, read from the stream leader (a direct get may be
 * answered by a lagging replica). */
void pt_cas_pipe_verify(pt_cas_pipe *cp, jsCtx *js, int total);

#endif
