/*
 * analytics.h — the analytics function's pure parts (no NATS): its config section, the
 * keys of its per-partition minute records, and queries over them.
 *
 * Keys. A minute's count of one partition lives under "<YYYYMMDD>.<HH>.<MM>.p<NN>" (UTC)
 * in bucket functions.analytics.bucket: the partition suffix makes every key belong to
 * one partition, so the consumer framework applies each key's events in one stream order
 * and exactly once; the hour in its own token lets a query read one hour's records with
 * one wildcard ("<YYYYMMDD>.<HH>.>").
 *
 * Queries (gamefn.v1.analytics.query). AnalyticsQueryRequest is validated whole (typed
 * errors naming the field); the records of the range are added up by the chosen
 * dimension, in total and, on request, per minute. Counts are exact sums of the stored
 * records; names beyond a record's key bound are in `other` there and here.
 *
 * Ownership: an_query_alloc allocates, an_query_free frees; an_query_reply's buffer is
 * malloc'd for the caller. Threads: one query per thread; nothing global.
 */
#ifndef GAMEFN_ANALYTICS_H
#define GAMEFN_ANALYTICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"
#include "gamefn/consumer_options.h"
#include "gamefn/err.h"
#include "rollup.h"

/* functions.analytics */
typedef struct an_config {
    const char *bucket;
    int64_t max_keys;     /* names per dimension in one partition's minute */
    int64_t max_range_ms; /* longest query */
    gf_consumer_options events;
} an_config;

extern const gf_cfg_table analytics_config_table;

enum {
    AN_KEY_MAX = 32,          /* "20261129.15.32.p07" + NUL, with room */
    AN_REPLY_NAMES_MAX = 1000 /* counts listed in a reply (the rest: other) */
};

/* The record key of a minute (>= 0, a multiple of 60000) in partition 0..99. */
gf_err an_key_format(int64_t minute_unix_ms, unsigned partition, char *buf, size_t size);
/* Its inverse; GF_ERR_INVALID for anything not made by an_key_format. */
gf_err an_key_parse(const char *key, int64_t *minute_unix_ms, unsigned *partition);
/* "<YYYYMMDD>.<HH>.>": the wildcard of every record of the hour holding unix_ms. */
gf_err an_hour_filter(int64_t unix_ms, char *buf, size_t size);

typedef struct an_request {
    int64_t from, to; /* minutes, to exclusive */
    int group_by;     /* gf_rollup_dim */
    bool per_minute;
} an_request;

/* Decodes and validates an AnalyticsQueryRequest. GF_ERR_INVALID with `field` (the
 * request field, "" for the whole body) and `why` (what is wrong). */
gf_err an_request_parse(const uint8_t *data, size_t len, int64_t max_range_ms, an_request *out,
                        char *field, size_t field_size, char *why, size_t why_size);

typedef struct an_query an_query;

gf_err an_query_alloc(const an_request *req, an_query **out);
void an_query_free(an_query *q);
/* Adds one record's rollup; a minute outside [from, to) is ignored. */
gf_err an_query_add(an_query *q, const gf_rollup *r);
/* The AnalyticsQueryReply (sorts q's counts, so no add after it). */
gf_err an_query_reply(an_query *q, uint8_t **out, size_t *len);

#endif
