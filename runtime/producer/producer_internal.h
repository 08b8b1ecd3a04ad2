/*
 * producer_internal.h — what producer.c (API), producer_emit.c (validate, encode,
 * append), producer_loop.c (the publishing thread) and producer_diag.c (why the
 * stream does not answer) share. Private to the producer library.
 *
 * Locks, always taken in this order:
 *   spool_mu  the spool (gf_spool is single-threaded), `spilled`, the seq counter.
 *             Held by emit for its append, by the thread to refill the queue from
 *             disk, persist the floor and sync.
 *   mu        the queue, its entries' states, the ack floor ring, the mode and the
 *             counters. Held briefly by emit (push), publish callbacks (nats.c
 *             threads: mark an answer) and the thread.
 * Entries are freed only by the thread (once the floor passes them) or by close, so
 * the thread may read an entry's immutable fields (seq, subject, id, data) without
 * mu while it sends.
 *
 * The queue covers seqs [head_seq, head_seq + len): slot i holds seq head_seq + i, or
 * NULL for a seq with no record (dropped for space, skipped after a reboot), which is
 * never published and counts as acknowledged once the cursor passes it. Unless
 * `spilled`, the queue covers every seq handed out (head_seq + len == the spool's
 * next_seq); while spilled, the seqs above it exist only on disk and the thread reads
 * them back (refill) when the cursor gets there.
 */
#ifndef GAMEFN_PRODUCER_INTERNAL_H
#define GAMEFN_PRODUCER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/ack_floor.h"
#include "gamefn/config.h"
#include "gamefn/conn.h"
#include "gamefn/producer.h"
#include "gamefn/publish.h"
#include "gamefn/spool.h"

enum {
    /* The GameEvent fields the producer writes in front of the body: event_id (tag,
     * 1-byte length, <= 128), source_id (tag, length, <= 64), source_seq (tag, varint). */
    PR_PREFIX_MAX = 2 + 128 + 2 + 64 + 1 + 10,
    PR_SUBJECT_MAX = 16 + 64 + 1 + 32 + 1,
};

typedef enum pr_entry_state {
    PR_UNSENT = 0,
    PR_INFLIGHT,
    PR_FAILED,
    PR_ACKED,
} pr_entry_state;

typedef struct pr_entry {
    struct gf_producer *p; /* the publish callback's way back */
    uint64_t seq;
    pr_entry_state state; /* mu */
    bool sent;            /* mu: published at least once by this process */
    size_t bytes;         /* counted in mem_bytes */
    const char *subject, *msg_id;
    const uint8_t *data;
    size_t data_len;
    char storage[]; /* subject NUL msg_id NUL data */
} pr_entry;

typedef enum pr_mode {
    PR_RUNNING = 0, /* sending in order as the window allows */
    PR_BLOCKED,     /* stopped: waiting for the in-flight answers and the retry time */
    PR_PROBING,     /* one event out; its acknowledgement resumes sending */
} pr_mode;

struct gf_producer {
    /* Immutable after open. */
    gf_producer_config cfg;              /* strings point into the copies below */
    char name[GF_PRODUCER_NAME_MAX + 1]; /* cfg.source_id: the game server's id */
    char source_id[65];                  /* the spool's: "<name>-<incarnation>" */
    char *spool_dir, *url;
    gf_nats_config own_nats; /* cfg.url parsed, when the producer owns the connection */
    const char **own_servers;
    bool owns_conn;
    uint64_t first_seq; /* next_seq at open: lower seqs were left by a previous run */

    /* spool_mu */
    pthread_mutex_t spool_mu;
    gf_spool *sp;
    bool spilled; /* also written with mu held: read under either */
    int64_t last_drop_log_ms;

    /* mu */
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* the thread */
    pthread_cond_t progress; /* flushers: the floor moved */
    bool thread_waiting;     /* the thread sleeps on `wake` */
    bool thread_idle;        /* ... with nothing in flight or to send: an emit wakes it */
    pr_entry **slots;
    size_t cap, start, len, cursor; /* ring; cursor: next index to consider */
    uint64_t head_seq;
    uint64_t mem_bytes;
    gf_ack_floor floor;
    uint64_t persisted_floor;
    int in_flight;
    pr_mode mode;
    gf_producer_state state;
    int js_code;
    char reason[GF_PRODUCER_REASON_MAX];
    int attempt;           /* probes failed in a row */
    int64_t retry_at_ms;   /* BLOCKED: the next probe, monotonic */
    int64_t stopped_at_ms; /* monotonic; 0 while running */
    bool diagnose;         /* BLOCKED: ask JetStream why before the next probe */
    bool closing;
    gf_producer_stats count; /* the counters; the rest is filled by stats_get */

    /* The connection: set once by the thread (or open, when borrowed). */
    natsConnection *nc;
    gf_conn *conn;
    gf_publish *pub;
    _Atomic(gf_conn *) connected; /* owned: the connector thread's result */
    atomic_int stop;              /* close: the threads end */
    pthread_t thread, connector;
    bool connector_started;
};

/* ---- producer_emit.c ------------------------------------------------------ */

/* The body of ev as GameEvent bytes without the id fields, in a new entry with room
 * in front of the body for the id fields of a source id of source_len bytes, with
 * subject set. A player-less event gets `name` (the game server's id). On
 * GF_ERR_INVALID, *r says why. */
gf_err gf__producer_build(const char *name, size_t source_len, const gf_event *ev, pr_entry **out,
                          gf_producer_receipt *r);

/* Writes the id fields (event_id "<source>-<seq>", source_id, source_seq) in front of
 * the body and sets e->seq, msg_id, data. */
void gf__producer_stamp(const gf_producer *p, pr_entry *e, uint64_t seq);

/* A new entry holding a copy of a spool record (a refill). */
pr_entry *gf__producer_entry_from(gf_producer *p, const gf_spool_record *rec);

/* Protobuf bytes of the three id fields (at most PR_PREFIX_MAX); returns the length.
 * Pure: the unit tests compare prefix || body with protobuf-c's own encoding. */
size_t gf__producer_prefix(const char *event_id, const char *source_id, uint64_t seq, uint8_t *out);

/* ---- producer_loop.c ------------------------------------------------------ */

void *gf__producer_main(void *arg);
void *gf__producer_connector(void *arg);

/* mu held: appends e (NULL = a seq without a record) at the queue's end. */
gf_err gf__producer_push(gf_producer *p, pr_entry *e);

/* mu held: sets the mode BLOCKED with the state and reason (printf-style). */
void gf__producer_block(gf_producer *p, gf_producer_state state, int js_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- producer_diag.c ------------------------------------------------------ */

/* Publishes on `subject` (gamefn.v1.event.<player>.<type>) get no answer while the
 * connection is up: asks JetStream which stream captures the stored subject. Returns
 * GF_PRODUCER_NO_STREAM or GF_PRODUCER_NO_ANSWER with why filled. Blocks up to ~2 s. */
gf_producer_state gf__producer_diagnose(natsConnection *nc, const char *subject, char *why,
                                        size_t why_size);

#endif
