/*
 * partition_check.h — what the partitioned-consumer tests share: the config of the test
 * group, a keyed event publisher, and the checks on what the test worker recorded.
 *
 * The test worker (GAMEFN_TEST_MODE=partitioned) handles group TEST_EVENTS/tp:
 * PC_PARTITIONS durables, fed by the server mapping test.ev.<key> ->
 * test.evp.<partition>.<key>. Every batch is recorded on test.results.batches as
 * "<partition> <token> <instance> <start_us> <end_us> <key>:<n>...", acquisitions and
 * releases on test.results.owners.
 *
 * Ownership: pc_records and the publisher are the caller's; free them.
 */
#ifndef GAMEFN_TEST_PARTITION_CHECK_H
#define GAMEFN_TEST_PARTITION_CHECK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fn_support.h"

enum { PC_PARTITIONS = 16, PC_INSTANCE_MAX = 32 };

#define PC_WORKER       "tests/gamefn-test-worker"
#define PC_LEASE_TTL_MS 3000
#define PC_ACK_WAIT_MS  2000

/* Options for gf_fnenv_start_opts: the mapping, stream TEST_EVENTS and group tp (lease
 * ttl 3 s, ack wait 2 s), fetch_batch 16, and `delay` per batch. */
void pc_opts(gf_fnenv_opts *o, int nodes, const char *functions);

extern char *const pc_env[]; /* GAMEFN_TEST_MODE=partitioned */

typedef struct pc_batch {
    unsigned partition;
    uint64_t token;
    char instance[PC_INSTANCE_MAX];
    int64_t start_us, end_us;
    size_t first, count; /* its events in pc_records.events */
} pc_batch;

typedef struct pc_event {
    int key, n;
} pc_event;

typedef struct pc_records {
    pc_batch *batches; /* in the order they were recorded */
    size_t nbatches;
    pc_event *events;
    size_t nevents;
} pc_records;

/* Reads every batch recorded so far. 0, or -1 (e.g. a leader election: try again). */
int pc_read(gf_fnenv *env, pc_records *r);
void pc_free(pc_records *r);

/* Fails the test if two instances' (or two tenures') handler runs on one partition
 * overlap in time, or a partition's token goes down, or a new owner does not bring a
 * larger token. */
void pc_check_one_owner(const pc_records *r);

/* Fails unless every event (key 0..keys-1, n 1..per_key) was handled and, per key, the
 * first handling of each n came in order 1, 2, 3... A replay (an n at or below the
 * highest handled so far for its key: an unacked batch of a killed owner, handled again)
 * is counted in *replays, and fails the test unless allow_replays. */
void pc_check_order(const pc_records *r, int keys, int per_key, bool allow_replays,
                    size_t *replays);

/* Who holds each partition's lease now: owner[p] = instance id ("" when free). */
int pc_owners(gf_fnenv *env, char owner[PC_PARTITIONS][PC_INSTANCE_MAX]);

/* Partitions held by `instance`. */
int pc_count(char owner[PC_PARTITIONS][PC_INSTANCE_MAX], const char *instance);

/* Publishes n = 1..per_key for keys k0..k<keys-1>, round by round (every key's n, then
 * n+1), `pause_ms` between rounds, from its own thread, retrying through failovers. */
typedef struct pc_publisher {
    gf_fnenv *env;
    int keys, per_key, pause_ms;
    pthread_t thread;
    int published; /* rounds done; read after join */
    int failed;
} pc_publisher;

void pc_publish_start(pc_publisher *p);
void pc_publish_join(pc_publisher *p);

/* Waits until every event has a recorded batch. */
bool pc_wait_all_handled(gf_fnenv *env, int keys, int per_key, int timeout_ms);

/* The end of every scenario: waits for the publisher, then for every event to be handled
 * (60 s), and checks one owner at a time and per-key order. Returns the replays. */
size_t pc_verify(pc_publisher *pub, bool allow_replays);

#endif
