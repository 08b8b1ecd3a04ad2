/*
 * analytics — per-minute event counts (docs/EVENTS.md, "Analytics").
 *
 *  - "events", the consumer framework (gamefn/consumer.h) on EVENTS, group `analytics`:
 *    every valid event counts once in its partition's record of the minute it occurred
 *    (key "<YYYYMMDD>.<HH>.<MM>.p<NN>", effect a MinuteRollup: by type, datacenter and
 *    queue). The framework makes the count exact: a redelivery, a crash between write and
 *    ack, a rebalance or a spool replay never counts an event twice.
 *  - "query", request/reply on gamefn.v1.analytics.query (queue analytics): reads the
 *    records of the range from the bucket (one KV watch per hour, effects.h) and adds the
 *    partitions up (analytics.h). Any replica answers: the records are in KV, not in
 *    memory.
 * gf_effects_main (effects.h) declares both; the function state is the gf_consumer, its
 * ctx a gf_effects_ctx.
 *
 * Threads: batches of different partitions run concurrently (the ops touch only their
 * key's rollup); queries run on the request endpoint's handlers and only read KV.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analytics.h"
#include "gamefn/consumer.h"
#include "effects.h"
#include "gamefn/function.h"
#include "gamefn/log.h"

#define QUERY_SUBJECT "gamefn.v1.analytics.query"

/* The function's config, from the ops' ctx (a gf_effects_ctx). */
static const an_config *config_of(const void *ctx)
{
    return ((const gf_effects_ctx *)ctx)->section;
}

/* ---- the consumer ---------------------------------------------------------------------- */

static gf_err keys(void *ctx, const gf_consumer_event *e, gf_consumer_keys *out, char *why,
                   size_t why_size)
{
    (void)ctx;
    int64_t minute = gf_rollup_minute_of(e->ev->occurred_unix_ms);
    if (an_key_format(minute, e->partition, out->key[0], GF_CONSUMER_KEY_MAX) != GF_OK) {
        snprintf(why, why_size, "occurred_unix_ms %lld is not a countable time",
                 (long long)e->ev->occurred_unix_ms);
        return GF_ERR_INVALID;
    }
    out->n = 1;
    return GF_OK;
}

static gf_err load(void *ctx, const char *key, const uint8_t *effect, size_t len, void **state)
{
    const an_config *cfg = config_of(ctx);
    int64_t minute = 0;
    unsigned partition = 0;
    gf_rollup *r = NULL;
    gf_err err = an_key_parse(key, &minute, &partition);
    if (err != GF_OK)
        return err;
    err = len ? gf_rollup_decode(effect, len, (uint32_t)cfg->max_keys, &r)
              : gf_rollup_alloc(minute, (uint32_t)cfg->max_keys, &r);
    if (err == GF_OK && gf_rollup_minute(r) != minute)
        err = GF_ERR_INVALID; /* a record under another minute's key */
    if (err != GF_OK) {
        gf_rollup_free(r);
        return err;
    }
    *state = r;
    return GF_OK;
}

static gf_err apply(void *ctx, const char *key, void *state, const gf_consumer_event *e, char *why,
                    size_t why_size)
{
    (void)ctx;
    (void)key;
    gf_err err = gf_rollup_add_event(state, e->ev);
    if (err == GF_ERR_INVALID)
        snprintf(why, why_size, "not countable: event_type, datacenter or queue is no name token");
    return err;
}

static gf_err store(void *ctx, const char *key, const void *state, uint8_t **out, size_t *len)
{
    (void)ctx;
    (void)key;
    return gf_rollup_encode(state, out, len);
}

static void drop(void *ctx, void *state)
{
    (void)ctx;
    gf_rollup_free(state);
}

/* ---- queries --------------------------------------------------------------------------- */

/* Adds one stored record to q (one that does not read is skipped and logged). */
static gf_err add_record(void *arg, const char *key, const uint8_t *effect, size_t len)
{
    an_query *q = arg;
    int64_t minute = 0;
    unsigned partition = 0;
    gf_rollup *r = NULL;
    gf_err err = an_key_parse(key, &minute, &partition);
    if (err == GF_OK)
        err = gf_rollup_decode(effect, len, GF_ROLLUP_KEYS_MAX, &r);
    if (err == GF_OK)
        err = gf_rollup_minute(r) == minute ? an_query_add(q, r) : GF_ERR_INVALID;
    gf_rollup_free(r);
    if (err == GF_ERR_INVALID) {
        gf_log_warn("unreadable analytics record skipped", "key=%s", key);
        err = GF_OK;
    }
    return err;
}

static gf_err on_query(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    const gf_effects_ctx *st = gf_effects_ctx_of(fn);
    const an_config *cfg = config_of(st);
    an_request r;
    gf_err err = an_request_parse(req->data, req->len, cfg->max_range_ms, &r, reply->field,
                                  sizeof reply->field, reply->error, sizeof reply->error);
    if (err != GF_OK)
        return err;
    an_query *q = NULL;
    if ((err = an_query_alloc(&r, &q)) != GF_OK)
        return err;
    char filter[AN_KEY_MAX];
    for (int64_t hour = r.from - r.from % 3600000; hour < r.to && err == GF_OK; hour += 3600000) {
        err = an_hour_filter(hour, filter, sizeof filter); /* every record of the hour */
        if (err == GF_OK)
            err = gf_effects_read(st, filter, add_record, q);
    }
    uint8_t *out = NULL;
    size_t len = 0;
    if (err == GF_OK)
        err = an_query_reply(q, &out, &len);
    else
        snprintf(reply->error, sizeof reply->error, "cannot read the analytics records: %s",
                 gf_err_str(err));
    an_query_free(q);
    reply->data = out;
    reply->len = len;
    return err;
}

/* ---- the declaration ---------------------------------------------------------------------- */

static const gf_effects_function analytics = {
    .name = "analytics",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Per-minute event counts by type, datacenter and queue; answers "
                   "gamefn.v1.analytics.query.",
    .config = &analytics_config_table,
    .bucket_offset = offsetof(an_config, bucket),
    .events_offset = offsetof(an_config, events),
    .ops = {keys, load, apply, store, drop},
    .query_subject = QUERY_SUBJECT,
    .on_query = on_query,
};

int main(int argc, char **argv)
{
    return gf_effects_main(&analytics, argc, argv);
}
