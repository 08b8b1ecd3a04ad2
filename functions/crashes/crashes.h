/*
 * crashes.h — the crashes function's pure parts (no NATS): its config section, record
 * keys, and queries over the per-partition groups (crash_group.h).
 *
 * Keys: "<fingerprint>.p<NN>" in bucket functions.crashes.bucket. A fingerprint's crashes
 * are spread over every partition (a crash is a player's event, and players of every
 * partition hit the same bug), so each partition keeps its own group, applied in its
 * stream order and exactly once by the consumer framework; a query merges them. The
 * fingerprint first in the key lets a detail query read one fingerprint's groups with
 * one wildcard ("<fingerprint>.>").
 *
 * Queries (gamefn.v1.crashes.query): top — the fingerprints with the most crashes
 * (optionally only those seen since a time); detail — one fingerprint's merged group.
 * Requests are validated whole, with typed errors naming the field.
 *
 * Ownership: cr_top_alloc allocates, cr_top_free frees; replies are malloc'd for the
 * caller. Threads: one query per thread.
 */
#ifndef GAMEFN_CRASHES_H
#define GAMEFN_CRASHES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crash_group.h"
#include "gamefn/config.h"
#include "gamefn/consumer_options.h"
#include "gamefn/err.h"

/* functions.crashes */
typedef struct cr_config {
    const char *bucket;
    int64_t max_frames; /* frames hashed into a fingerprint */
    gf_consumer_options events;
} cr_config;

extern const gf_cfg_table crashes_config_table;

enum {
    CR_KEY_MAX = GF_FINGERPRINT_HEX_LEN + 5, /* "<32 hex>.pNN" + NUL */
    CR_TOP_MAX = 100,
    CR_SUMMARY_MESSAGE_MAX = 256,
};

gf_err cr_key_format(const char *fingerprint, unsigned partition, char *buf, size_t size);
/* The fingerprint of a key made by cr_key_format (into fp, 33 bytes). */
gf_err cr_key_parse(const char *key, char *fp, unsigned *partition);

typedef enum cr_kind { CR_QUERY_TOP = 1, CR_QUERY_DETAIL } cr_kind;

typedef struct cr_request {
    cr_kind kind;
    uint32_t limit;                               /* top */
    int64_t since_unix_ms;                        /* top */
    char fingerprint[GF_FINGERPRINT_HEX_LEN + 1]; /* detail */
} cr_request;

/* Decodes and validates a CrashesQueryRequest. GF_ERR_INVALID with `field` and `why`. */
gf_err cr_request_parse(const uint8_t *data, size_t len, cr_request *out, char *field,
                        size_t field_size, char *why, size_t why_size);

/* Top: groups merged by fingerprint. */
typedef struct cr_top cr_top;
gf_err cr_top_alloc(cr_top **out);
void cr_top_free(cr_top *t);
gf_err cr_top_add(cr_top *t, const cr_group *g);
/* The reply (CrashesQueryReply.top, fingerprints, crashes) for limit and since. */
gf_err cr_top_reply(cr_top *t, uint32_t limit, int64_t since_unix_ms, uint8_t **out, size_t *len);

/* Detail: the reply for a merged group seen by `partitions` partitions. */
gf_err cr_detail_reply(const cr_group *g, uint32_t partitions, uint8_t **out, size_t *len);

/* s cut to at most max bytes on a UTF-8 character boundary, into buf (max + 1 bytes). */
const char *cr_utf8_cut(const char *s, size_t max, char *buf);

#endif
