/*
 * store_nats.h — private: the consumer engine's store on NATS (store_nats.c).
 *
 * gf__store_shared is per consumer (the publisher, the bucket names); gf__store_part is
 * per partition (its reply inbox); gf__store_call is what one batch hands the engine as
 * its store's io.
 */
#ifndef GAMEFN_CONSUMER_STORE_NATS_H
#define GAMEFN_CONSUMER_STORE_NATS_H

#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

#include "engine.h"
#include "gamefn/publish.h"

typedef struct gf__store_shared {
    natsConnection *nc;
    gf_publish *pub;
    const char *bucket, *reasons_bucket;
} gf__store_shared;

typedef struct gf__store_part {
    char inbox[128];
    natsSubscription *sub; /* "<inbox>.*.*" */
    uint64_t gen;
} gf__store_part;

typedef struct gf__store_call {
    const gf__store_shared *shared;
    gf__store_part *part;
    const gf_msg *msg; /* the batch's first message: ownership checks, in progress */
} gf__store_call;

gf_err gf__store_part_open(gf__store_part *sp, natsConnection *nc);
void gf__store_part_close(gf__store_part *sp, natsConnection *nc);

/* The gf__cstore operations; io is a gf__store_call. */
void gf__store_read(void *io, const char *const *keys, size_t n, gf__cread *out);
void gf__store_write(void *io, gf__cwrite *w, size_t n);
gf_err gf__store_reasons(void *io, const gf__creason *r, size_t n);
bool gf__store_owned(void *io);
void gf__store_pause(void *io, int64_t ms);

#endif
