/*
 * effects.h — what the consumers that answer queries from their effect records share
 * (analytics, crashes): opening their store, and reading records back.
 *
 * gf_effects_start / gf_effects_stop are such a function's init and fini: the store's
 * bucket (and the framework's reasons bucket) provisioned and opened, the consumer
 * opened with a gf_effects_ctx as its ctx (the function's section and the bucket), and
 * the function state set to the gf_consumer, so the partitioned endpoint takes
 * gf_consumer_on_batch / _on_acquire / _on_release as they are.
 *
 * A consumer on the framework (gamefn/consumer.h) keeps each key's effect inside an
 * EffectRecord; a query reads the records of some keys (a KV wildcard) on whatever
 * replica it lands, and only needs their effect bytes. gf_effects_read walks the
 * current value of every matching key once (a KV watch over the initial values, deletes
 * ignored) and hands each effect to the caller; a record that is not an EffectRecord is
 * skipped and logged, never fatal to the query.
 *
 * gf_effects_main is such a function whole: its "events" endpoint (the framework on
 * EVENTS, group <name>) and its "query" endpoint (request/reply, queue group <name>),
 * with gf_effects_start / gf_effects_stop as init and fini. A function gives only its
 * ops, its config table and its query handler.
 *
 * Ownership: gf_effects_start allocates the ctx and the consumer, gf_effects_stop frees
 * both. The key and effect given to `each` are borrowed for the call. Threads: the ctx
 * is read-only once started; each gf_effects_read uses its own watcher.
 */
#ifndef GAMEFN_EFFECTS_H
#define GAMEFN_EFFECTS_H

#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/consumer.h"
#include "gamefn/err.h"
#include "gamefn/function.h"

/* What the consumer's ops get as ctx. */
typedef struct gf_effects_ctx {
    const void *section; /* gf_fn_section(fn): the function's config */
    kvStore *kv;         /* def->bucket */
    natsConnection *nc;  /* gf_fn_nats(fn): the flush that lets a read's watcher go */
} gf_effects_ctx;

/* init: provisions def->bucket and opts->reasons_bucket from config and opens the
 * consumer (ctx: a gf_effects_ctx); the function state becomes the gf_consumer. On
 * failure the reason is logged and nothing is left behind. */
gf_err gf_effects_start(gf_fn *fn, const gf_consumer_def *def, const gf_consumer_options *opts);
/* fini: closes the consumer and the bucket. */
void gf_effects_stop(gf_fn *fn);
/* The ctx of a started function (for its request handlers). */
const gf_effects_ctx *gf_effects_ctx_of(gf_fn *fn);

/* each() returns GF_OK to go on; anything else stops the read with that error. */
typedef gf_err (*gf_effects_each_fn)(void *arg, const char *key, const uint8_t *effect, size_t len);

/* Every non-empty effect under the keys matching `filter` (a KV key with wildcards).
 * GF_ERR_TIMEOUT / GF_ERR_UNAVAILABLE when the bucket does not answer. */
gf_err gf_effects_read(const gf_effects_ctx *ctx, const char *filter, gf_effects_each_fn each,
                       void *arg);

/* An effect-reading consumer on EVENTS, for gf_effects_main. Its section (config) holds
 * the bucket's name (const char *) at bucket_offset and its gf_consumer_options at
 * events_offset (effects_config.h has the shared keys). */
typedef struct gf_effects_function {
    const char *name; /* the function, its consumer group and its query queue group */
    const char *version;
    const char *description;
    const gf_cfg_table *config;
    size_t bucket_offset; /* offsetof(section, bucket) */
    size_t events_offset; /* offsetof(section, events) */
    gf_consumer_ops ops;  /* ctx: a gf_effects_ctx */
    const char *query_subject;
    gf_request_fn on_query; /* gf_effects_ctx_of(fn) gives the ctx */
} gf_effects_function;

/* main() of such a function (one per process): gf_function_main with the endpoints above.
 * `def` must outlive the call. */
int gf_effects_main(const gf_effects_function *def, int argc, char **argv);

#endif
