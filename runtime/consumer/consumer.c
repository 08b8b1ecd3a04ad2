/*
 * consumer.c — the event consumer framework's public face (gamefn/consumer.h): binds
 * the engine (engine.c) to a running function, its partitioned endpoint and NATS
 * (store_nats.c).
 *
 * Design notes: per partition, one gf__cpart (cache) and one gf__store_part (reply
 * inbox), created on acquire and dropped on release, touched only by that partition's
 * thread (the runtime runs acquire, batches and release of a partition on one thread).
 * The publisher is shared and thread-safe; stats are atomics.
 */
#include "gamefn/consumer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "store_nats.h"

enum { PUBLISH_WINDOW = 8192, PUBLISH_GIVE_UP_MS = 10000 };

typedef struct part {
    gf__cpart engine;
    gf__store_part store;
    bool open;
} part;

struct gf_consumer {
    gf_consumer_def def;
    gf__cengine engine;
    gf__cstats stats;
    gf__store_shared shared;
    part *parts;
    unsigned nparts;
    void *ctx;
};

static bool ops_complete(const gf_consumer_ops *o)
{
    return o->keys && o->load && o->apply && o->store && o->drop;
}

/* The bucket must exist (provisioned from config by the function's `buckets`). */
static gf_err bucket_present(gf_fn *fn, const char *bucket, const char *what)
{
    kvStore *kv = NULL;
    gf_err err = gf_kv_open(gf_fn_js(fn), bucket, &kv);
    kvStore_Destroy(kv);
    if (err != GF_OK)
        gf_log_error("consumer: bucket missing (list it in the function's buckets and in "
                     "jetstream.buckets)",
                     "what=%s bucket=%s err=%s", what, bucket, gf_err_str(err));
    return err;
}

gf_err gf_consumer_open(gf_fn *fn, const gf_consumer_def *def, const gf_consumer_options *opts,
                        void *ctx, gf_consumer **out)
{
    *out = NULL;
    if (!fn || !def || !def->stream || !def->group || !def->bucket || !ops_complete(&def->ops))
        return GF_ERR_INVALID;
    const gf_consumer_config *cc = gf_config_consumer(gf_fn_config(fn), def->stream, def->group);
    if (!cc || cc->partitions <= 0) {
        gf_log_error("consumer: no partitioned group in jetstream.consumers", "stream=%s group=%s",
                     def->stream, def->group);
        return GF_ERR_CONFIG;
    }
    gf_consumer *c = calloc(1, sizeof *c);
    if (!c)
        return GF_ERR_NOMEM;
    c->def = *def;
    c->ctx = ctx;
    c->nparts = (unsigned)cc->partitions;
    if (opts)
        c->engine.opts = *opts;
    else
        gf_consumer_options_default(&c->engine.opts);
    c->engine.ops = &c->def.ops;
    c->engine.ctx = ctx;
    c->engine.stream = def->stream;
    c->engine.group = def->group;
    c->engine.instance = gf_fn_instance_id(fn);
    c->engine.stats = &c->stats;
    c->shared.nc = gf_fn_nats(fn);
    c->shared.bucket = def->bucket;
    c->shared.reasons_bucket = c->engine.opts.reasons_bucket;
    gf_err err = (c->parts = calloc(c->nparts, sizeof *c->parts)) ? GF_OK : GF_ERR_NOMEM;
    for (unsigned p = 0; err == GF_OK && p < c->nparts; p++)
        gf__cpart_init(&c->parts[p].engine, p, def->group);
    if (err == GF_OK)
        err = bucket_present(fn, def->bucket, "effect records");
    if (err == GF_OK)
        err = bucket_present(fn, c->shared.reasons_bucket, "dead-letter reasons");
    if (err == GF_OK) {
        gf_publish_opts po = {.max_in_flight = PUBLISH_WINDOW, .give_up_ms = PUBLISH_GIVE_UP_MS};
        err = gf_publish_open(c->shared.nc, &po, &c->shared.pub);
    }
    if (err != GF_OK) {
        gf_consumer_close(c);
        return err;
    }
    *out = c;
    return GF_OK;
}

static void part_close(gf_consumer *c, part *p)
{
    gf__cpart_reset(&p->engine, &c->engine);
    if (p->open)
        gf__store_part_close(&p->store, c->shared.nc);
    p->open = false;
}

void gf_consumer_close(gf_consumer *c)
{
    if (!c)
        return;
    gf_consumer_stats st;
    gf__cstats_get(&c->stats, &st);
    gf_log_info("consumer stats",
                "group=%s batches=%" PRIu64 " events=%" PRIu64 " applied=%" PRIu64
                " duplicates=%" PRIu64 " ignored=%" PRIu64 " dead=%" PRIu64 " reads=%" PRIu64
                " writes=%" PRIu64 " conflicts=%" PRIu64 " retries=%" PRIu64,
                c->def.group, st.batches, st.events, st.applied, st.duplicates, st.ignored, st.dead,
                st.reads, st.writes, st.conflicts, st.retries);
    gf_publish_close(c->shared.pub, 5000);
    for (unsigned p = 0; c->parts && p < c->nparts; p++) {
        part_close(c, &c->parts[p]);
        gf__cpart_fini(&c->parts[p].engine, &c->engine);
    }
    free(c->parts);
    free(c);
}

void *gf_consumer_ctx(const gf_consumer *c)
{
    return c ? c->ctx : NULL;
}

void gf_consumer_stats_get(const gf_consumer *c, gf_consumer_stats *out)
{
    gf__cstats_get(&c->stats, out);
}

gf_err gf_consumer_acquire(gf_consumer *c, unsigned partition, uint64_t token)
{
    (void)token;
    if (partition >= c->nparts)
        return GF_ERR_INVALID;
    part *p = &c->parts[partition];
    part_close(c, p); /* whatever a previous tenure left: read everything again */
    gf_err err = gf__store_part_open(&p->store, c->shared.nc);
    p->open = err == GF_OK;
    return err;
}

void gf_consumer_release(gf_consumer *c, unsigned partition, uint64_t token)
{
    (void)token;
    if (partition < c->nparts)
        part_close(c, &c->parts[partition]);
}

gf_err gf_consumer_batch(gf_consumer *c, const gf_batch *batch)
{
    if (batch->partition >= c->nparts || !c->parts[batch->partition].open)
        return GF_ERR_RETRY;
    part *p = &c->parts[batch->partition];
    gf__cmsg *msgs = calloc(batch->len ? batch->len : 1, sizeof *msgs);
    if (!msgs)
        return GF_ERR_NOMEM;
    for (size_t i = 0; i < batch->len; i++) {
        const gf_msg *m = &batch->msgs[i];
        msgs[i] = (gf__cmsg){.subject = m->subject,
                             .data = m->data,
                             .len = m->len,
                             .stream_seq = m->stream_seq,
                             .num_delivered = m->num_delivered ? m->num_delivered : 1,
                             .stored_unix_ms = m->timestamp_ns / 1000000,
                             .redrive = gf_msg_header(m, GF_CONSUMER_REDRIVE_HEADER)};
    }
    gf__store_call call = {.shared = &c->shared, .part = &p->store, .msg = &batch->msgs[0]};
    gf__cstore store = {.io = &call,
                        .read = gf__store_read,
                        .write = gf__store_write,
                        .reasons = gf__store_reasons,
                        .owned = gf__store_owned,
                        .pause = gf__store_pause};
    gf__cbatch b = {.msgs = msgs,
                    .len = batch->len,
                    .partition = batch->partition,
                    .token = batch->token,
                    .attempt = batch->attempt,
                    .last_try = batch->last_try,
                    .now_unix_ms = gf_clock_unix_ms(),
                    .verdicts = batch->verdicts};
    gf_err err = gf__cengine_batch(&c->engine, &p->engine, &store, &b);
    free(msgs);
    return err;
}

gf_err gf_consumer_on_batch(gf_fn *fn, const gf_batch *batch)
{
    return gf_consumer_batch(gf_fn_state(fn), batch);
}

gf_err gf_consumer_on_acquire(gf_fn *fn, unsigned partition, uint64_t token)
{
    return gf_consumer_acquire(gf_fn_state(fn), partition, token);
}

void gf_consumer_on_release(gf_fn *fn, unsigned partition, uint64_t token)
{
    gf_consumer_release(gf_fn_state(fn), partition, token);
}
