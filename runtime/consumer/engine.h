/*
 * engine.h — private to the consumer framework: one batch of one partition, against
 * an abstract store (read keys, compare-and-set writes, reason records). consumer.c
 * runs it against NATS (store_nats.c); the unit tests run it against a fake store
 * that loses writes, times out and conflicts, to check exactness without a server.
 *
 * Threads: one gf__cpart per partition, used by that partition's thread only; the
 * engine itself is immutable; stats are atomics shared by every partition.
 */
#ifndef GAMEFN_CONSUMER_ENGINE_H
#define GAMEFN_CONSUMER_ENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/consumer.h"
#include "gamefn/effect_record.h"
#include "strmap.h"

/* A message of the batch, as the engine sees it (borrowed). */
typedef struct gf__cmsg {
    const char *subject;
    const uint8_t *data;
    size_t len;
    uint64_t stream_seq;
    uint64_t num_delivered;
    int64_t stored_unix_ms;
    const char *redrive; /* GF_CONSUMER_REDRIVE_HEADER, or NULL */
} gf__cmsg;

typedef struct gf__cbatch {
    const gf__cmsg *msgs;
    size_t len;
    unsigned partition;
    uint64_t token;
    unsigned attempt;
    bool last_try;
    int64_t now_unix_ms;
    gf_err *verdicts; /* len; GF_OK on entry */
} gf__cbatch;

/* A read: GF_OK (rev, data: malloc'd by the store, freed by the engine),
 * GF_ERR_NOT_FOUND (absent or deleted), anything else: transient. */
typedef struct gf__cread {
    gf_err err;
    uint64_t rev;
    uint8_t *data;
    size_t len;
} gf__cread;

/* A compare-and-set: rev 0 = create. The store sets err (GF_OK: new_rev) — anything
 * else means "read the key again": lost, or outcome unknown. */
typedef struct gf__cwrite {
    const char *key;
    uint64_t rev;
    uint8_t *data; /* the engine's */
    size_t len;
    gf_err err;
    uint64_t new_rev;
} gf__cwrite;

typedef struct gf__creason {
    char key[320]; /* "<stream>.<durable>.<stream_seq>" */
    char msg_id[320];
    uint8_t *data; /* DeadReason */
    size_t len;
} gf__creason;

typedef struct gf__cstore {
    void *io;
    void (*read)(void *io, const char *const *keys, size_t n, gf__cread *out);
    void (*write)(void *io, gf__cwrite *w, size_t n);
    gf_err (*reasons)(void *io, const gf__creason *r, size_t n);
    bool (*owned)(void *io);             /* this replica still owns the partition */
    void (*pause)(void *io, int64_t ms); /* sleep */
} gf__cstore;

typedef struct gf__cstats {
    _Atomic uint64_t batches, events, applied, duplicates, ignored, dead, redriven, reads, writes,
        conflicts, retries, marks_lost;
} gf__cstats;

typedef struct gf__cengine {
    const gf_consumer_ops *ops;
    void *ctx;
    gf_consumer_options opts;
    const char *stream, *group, *instance;
    gf__cstats *stats;
} gf__cengine;

/* A cached effect key of one partition. */
typedef struct gf__centry {
    char *key;
    uint64_t rev; /* 0: absent */
    gf_effect_record rec;
    void *state;
    uint64_t used; /* the partition's batch counter at its last use */
} gf__centry;

typedef struct gf__cpart {
    unsigned partition;
    char durable[128]; /* "<group>-p<NN>" */
    gf__strmap cache;  /* key -> gf__centry * */
    uint64_t batches;
} gf__cpart;

void gf__cpart_init(gf__cpart *p, unsigned partition, const char *group);
/* Empties the cache (a new tenure must read every key again). */
void gf__cpart_reset(gf__cpart *p, const gf__cengine *e);
void gf__cpart_fini(gf__cpart *p, const gf__cengine *e);

/* Runs the batch (gamefn/consumer.h, "What one batch does") and fills b->verdicts.
 * GF_OK, or the error for the runtime to retry the batch (transient; GF_ERR_CONFLICT
 * when a newer owner wrote one of its keys). On a last try it waits out transient
 * failures while store->owned() holds. */
gf_err gf__cengine_batch(const gf__cengine *e, gf__cpart *p, const gf__cstore *s,
                         const gf__cbatch *b);

void gf__cstats_get(const gf__cstats *s, gf_consumer_stats *out);

#endif
