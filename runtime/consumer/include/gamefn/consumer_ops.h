/*
 * gamefn/consumer_ops.h — what an event consumer implements for the framework
 * (gamefn/consumer.h): the event as its ops see it, and the five ops. Pure (no NATS),
 * so a consumer's effect logic lives in a library of its own and is unit-tested without
 * a server (e.g. functions/leaderboard/lb_effect.c).
 *
 * The contract of each op is in gamefn/consumer.h ("What one batch does") and below.
 * Threads: ops are called on partition threads, concurrently for different partitions
 * (never for one key at once); ctx must be safe to share.
 */
#ifndef GAMEFN_CONSUMER_OPS_H
#define GAMEFN_CONSUMER_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/v1/event.pb-c.h"

enum {
    GF_CONSUMER_KEY_MAX = 256, /* bytes of a key, NUL included; a valid KV key */
    GF_CONSUMER_KEYS_MAX = 8,  /* keys per event */
    GF_CONSUMER_WHY_MAX = 200, /* why[] given to keys() and apply() */
};

/* The headers of a re-drive (gamefn dlq redrive): the durable it was dead-lettered by,
 * and the DLQ sequence it came from. */
#define GF_CONSUMER_REDRIVE_HEADER    "Gamefn-Redrive"
#define GF_CONSUMER_REDRIVE_OF_HEADER "Gamefn-Redrive-Of"

/* One valid event, as the ops see it. */
typedef struct gf_consumer_event {
    const Gamefn__V1__GameEvent *ev; /* decoded and validated */
    const char *subject;             /* as stored: gamefn.v1.evp.<p>.<player>.<type> */
    uint64_t stream_seq;
    int64_t stored_unix_ms; /* when the stream stored it */
    unsigned partition;
    bool redriven; /* a re-drive of one of this group's dead letters */
} gf_consumer_event;

typedef struct gf_consumer_keys {
    size_t n; /* 0..GF_CONSUMER_KEYS_MAX, distinct */
    char key[GF_CONSUMER_KEYS_MAX][GF_CONSUMER_KEY_MAX];
} gf_consumer_keys;

typedef struct gf_consumer_ops {
    /* The keys the event changes; out->n = 0 when it does not concern this consumer (it
     * is acked). A non-OK return dead-letters it, `why` saying why (no key is marked). */
    gf_err (*keys)(void *ctx, const gf_consumer_event *e, gf_consumer_keys *out, char *why,
                   size_t why_size);
    /* The key's state from its stored effect bytes (len 0: the key has none yet). A
     * non-OK return dead-letters the batch's events of that key ("unreadable effect"). */
    gf_err (*load)(void *ctx, const char *key, const uint8_t *effect, size_t len, void **state);
    /* Applies one event, not yet applied to this key, to its state. GF_OK: applied (the
     * state may be unchanged, e.g. a `best` that is not better). GF_ERR_INVALID or
     * GF_ERR_PERMANENT: this event can never apply (dead-lettered, state unchanged).
     * Anything else: transient (the batch is retried; on the last try, dead-lettered). */
    gf_err (*apply)(void *ctx, const char *key, void *state, const gf_consumer_event *e, char *why,
                    size_t why_size);
    /* The state's effect bytes; *out malloc'd (NULL with len 0 for "no effect"). */
    gf_err (*store)(void *ctx, const char *key, const void *state, uint8_t **out, size_t *len);
    void (*drop)(void *ctx, void *state);
} gf_consumer_ops;

#endif
