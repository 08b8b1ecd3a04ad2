/*
 * publish_state.h — private to publish.c and publish_flow.c: the publisher's state
 * and the steps both files take on it.
 *
 * One mutex (p->mu) guards every field below except the immutable ones set by
 * gf_publish_open (nc, sub, o, prefixes, max_payload). A slot is owned by whoever
 * moved it into its current state: a NEW slot by its sender, a WORKING slot by the
 * retry thread, a DONE slot by the thread running its callback; nobody else touches
 * its fields, even under the lock. See publish.c's design notes for the lists.
 */
#ifndef GAMEFN_PUBLISH_STATE_H
#define GAMEFN_PUBLISH_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/publish.h"
#include "publish_int.h"

#define HDR_MSG_ID   "Nats-Msg-Id"
#define HDR_EXPECTED "Nats-Expected-Last-Subject-Sequence"
#define HDR_KV_OP    "KV-Operation"

enum {
    MAX_WINDOW = 1000000,
    MAX_LOOKUPS = 8,          /* per CAS: a create racing deletes ends as a conflict */
    ROOM_POLL_MS = 20,        /* a waiting send re-checks room and *stop this often */
    SUB_GONE_WAIT_MS = 10000, /* close: for nats.c's last callback; for a flush's PONG */
    REPLY_MAX = 160,
};

typedef enum pub_state {
    SLOT_FREE,
    SLOT_NEW,      /* accepted; its sender builds the first message unlocked */
    SLOT_AWAITING, /* an attempt is out; in p->awaiting */
    SLOT_BACKOFF,  /* waits for a resend or a lookup; in p->backoff */
    SLOT_WORKING,  /* the retry thread looks it up, unlocked */
    SLOT_DONE,     /* decided; its callback runs or is about to */
} pub_state;

typedef struct pub_slot pub_slot;
typedef struct pub_link {
    pub_slot *prev, *next;
} pub_link;
typedef struct pub_list {
    pub_slot *head, *tail;
} pub_list;

struct pub_slot {
    uint32_t idx;
    pub_state state;
    uint64_t serial;  /* acceptance number, unique in the publisher */
    uint32_t attempt; /* the attempt last sent (its number is in the reply) */
    natsMsg *msg;     /* that attempt's message; owned */
    bool cas;
    gf_publish_cas_kind kind;
    uint64_t expected; /* CAS: the expected revision the attempts carry */
    bool uncertain;    /* an attempt ended without an answer: it may be stored */
    uint64_t uncertain_expected;
    bool caller_id;   /* CAS: the caller chose the Msg-Id, so may be resending a change */
    bool next_lookup; /* BACKOFF: the next step is a lookup, not a resend */
    int failures, lookups;
    int64_t admitted_ms, sent_ms, due_ms;
    gf_publish_done_fn done;
    void *closure;
    gf_publish_result res;
    pub_link adm, tm;
    pub_list *on;         /* the list tm links it into: &p->awaiting, &p->backoff or NULL */
    pub_slot *next_batch; /* free list, or the finished slots of one batch */
};

struct gf_publish {
    natsConnection *nc;
    natsSubscription *sub;
    gf_publish_opts o;
    char reply_prefix[96]; /* "<inbox prefix>.<nuid>" */
    size_t reply_prefix_len;
    char api_prefix[64];
    char nuid[32]; /* generated Msg-Ids: "<nuid>-<serial>" */
    int64_t max_payload;

    pthread_mutex_t mu;
    pthread_cond_t room;    /* senders waiting for the window */
    pthread_cond_t drained; /* flush and close */
    pthread_cond_t wake;    /* the retry thread */
    pthread_t worker;
    int64_t worker_due; /* when the retry thread wakes; INT64_MIN while it runs */
    bool closing, stopping, sub_done;
    int users, flushers;
    int room_waiters; /* senders waiting for the window */
    int room_batch;   /* they are woken once this many slots are free */

    pub_slot **slots;
    uint32_t nslots, cap;
    pub_slot *free;
    int in_flight;
    uint64_t next_serial;
    pub_list admitted, awaiting, backoff;
    gf_publish_stats stats;
};

/* Everything below: p->mu held unless said otherwise. */

/* true on a thread that is running a publisher callback (any publisher). Lock-free. */
bool gf__pub_in_callback(void);

/* Waits on c until woken or the monotonic time until_ms (INT64_MAX: no bound). */
void gf__pub_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t until_ms);

/* A fresh slot, NEW, with the next serial, counted in flight and in p->admitted.
 * NULL when out of memory. */
pub_slot *gf__pub_slot_take(gf_publish *p);

/* Back to the free list, out of the window: its callback has returned (or it never
 * had one). Wakes waiting senders, flushers and close as due. */
void gf__pub_slot_release(gf_publish *p, pub_slot *s);

/* Decides s's result (err; seq/duplicate/js_code already in s->res as due), takes it
 * off the awaiting/backoff list and queues it on *batch. */
void gf__pub_finish(gf_publish *p, pub_slot *s, gf_err err, pub_slot **batch);

/* Lock NOT held: runs the batch's callbacks, then releases its slots. */
void gf__pub_run_batch(gf_publish *p, pub_slot *batch);

/* After a failed attempt or lookup: BACKOFF until the next step, no later than the
 * give-up deadline. */
void gf__pub_backoff(gf_publish *p, pub_slot *s, int64_t now, bool lookup);

/* Publishes s->msg; on NATS_OK the slot is AWAITING. */
natsStatus gf__pub_transmit(gf_publish *p, pub_slot *s, int64_t now);

/* A publish error worth a resend (the connection is away for now). Pure. */
bool gf__pub_retryable(natsStatus st);

/* "<reply prefix>.<idx>.<serial>.<attempt>" for s's current attempt. */
void gf__pub_reply_subject(const gf_publish *p, const pub_slot *s, char *buf, size_t size);

natsStatus gf__pub_set_expected(natsMsg *m, uint64_t expected);

/* nats.c callbacks of the reply subscription, and the retry thread (lock NOT held). */
void gf__pub_on_reply(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure);
void gf__pub_on_sub_done(void *closure);
void *gf__pub_worker_main(void *arg);

#endif
