/*
 * effects.c — the effect stores of query-answering consumers (see effects.h).
 */
#include "effects.h"

#include <stdlib.h>

#include "gamefn/conn.h"
#include "gamefn/effect_record.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/provision.h"

gf_err gf_effects_start(gf_fn *fn, const gf_consumer_def *def, const gf_consumer_options *opts)
{
    gf_effects_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return GF_ERR_NOMEM;
    ctx->section = gf_fn_section(fn);
    ctx->nc = gf_fn_nats(fn);
    gf_provision_result res = {0};
    gf_consumer *c = NULL;
    gf_err err = gf_provision_bucket_named(gf_fn_js(fn), gf_fn_config(fn), def->bucket, &res);
    if (err == GF_OK)
        err = gf_provision_bucket_named(gf_fn_js(fn), gf_fn_config(fn), opts->reasons_bucket, &res);
    if (err != GF_OK)
        gf_log_error("cannot provision", "why=\"%s\"", res.message);
    if (err == GF_OK)
        err = gf_kv_open(gf_fn_js(fn), def->bucket, &ctx->kv);
    if (err == GF_OK)
        err = gf_consumer_open(fn, def, opts, ctx, &c);
    if (err != GF_OK) {
        kvStore_Destroy(ctx->kv);
        free(ctx);
        return err;
    }
    gf_fn_set_state(fn, c);
    return GF_OK;
}

void gf_effects_stop(gf_fn *fn)
{
    gf_consumer *c = gf_fn_state(fn);
    gf_effects_ctx *ctx = c ? gf_consumer_ctx(c) : NULL;
    gf_consumer_close(c);
    if (ctx)
        kvStore_Destroy(ctx->kv);
    free(ctx);
}

const gf_effects_ctx *gf_effects_ctx_of(gf_fn *fn)
{
    return gf_consumer_ctx(gf_fn_state(fn));
}

gf_err gf_effects_read(const gf_effects_ctx *ctx, const char *filter, gf_effects_each_fn each,
                       void *arg)
{
    kvWatchOptions wo;
    kvWatchOptions_Init(&wo);
    wo.IgnoreDeletes = true;
    kvWatcher *w = NULL;
    gf_err err = GF_OK;
    natsStatus s = kvStore_Watch(&w, ctx->kv, filter, &wo);
    while (s == NATS_OK && err == GF_OK) {
        kvEntry *e = NULL;
        s = kvWatcher_Next(&e, w, 5000);
        if (s != NATS_OK || !e)
            break; /* NULL: the initial values are done */
        uint8_t *effect = NULL;
        size_t len = 0;
        err = gf_effect_record_peek((const uint8_t *)kvEntry_Value(e), (size_t)kvEntry_ValueLen(e),
                                    NULL, &effect, &len);
        if (err == GF_ERR_INVALID) {
            gf_log_warn("not an effect record: skipped", "key=%s", kvEntry_Key(e));
            err = GF_OK;
        } else if (err == GF_OK && len > 0) {
            err = each(arg, kvEntry_Key(e), effect, len);
        }
        free(effect);
        kvEntry_Destroy(e);
    }
    /* The watcher still gets the keys' live updates: one may be arriving (NATS-FACTS §4). */
    gf_kv_watcher_forget(ctx->nc, w, GF_SUB_FORGET_WAIT_MS);
    if (err == GF_OK && s != NATS_OK)
        err = s == NATS_TIMEOUT ? GF_ERR_TIMEOUT : GF_ERR_UNAVAILABLE;
    return err;
}

static const gf_effects_function *the_def; /* gf_effects_main's, for init */

static gf_err effects_init(gf_fn *fn)
{
    const char *section = gf_fn_section(fn);
    const gf_consumer_def def = {.stream = "EVENTS",
                                 .group = the_def->name,
                                 .bucket = *(const char *const *)(section + the_def->bucket_offset),
                                 .ops = the_def->ops};
    return gf_effects_start(fn, &def,
                            (const gf_consumer_options *)(section + the_def->events_offset));
}

int gf_effects_main(const gf_effects_function *def, int argc, char **argv)
{
    the_def = def;
    const gf_endpoint endpoints[] = {
        {.name = "events",
         .kind = GF_ENDPOINT_PARTITIONED,
         .partitioned = {.stream = "EVENTS",
                         .group = def->name,
                         .on_batch = gf_consumer_on_batch,
                         .on_acquire = gf_consumer_on_acquire,
                         .on_release = gf_consumer_on_release}},
        {.name = "query",
         .kind = GF_ENDPOINT_REQUEST,
         .request = {.subject = def->query_subject,
                     .queue_group = def->name,
                     .on_request = def->on_query,
                     .concurrency = 4}},
    };
    const gf_function fn = {
        .name = def->name,
        .version = def->version,
        .description = def->description,
        .config = def->config,
        .endpoints = endpoints,
        .endpoints_len = sizeof endpoints / sizeof endpoints[0],
        .init = effects_init,
        .fini = gf_effects_stop,
    };
    return gf_function_main(&fn, argc, argv);
}
