/*
 * crashes — crash reports grouped by fingerprint (docs/EVENTS.md, "Crashes").
 *
 *  - "events", the consumer framework (gamefn/consumer.h) on EVENTS, group `crashes`:
 *    every crash event counts once in its partition's group of its fingerprint (key
 *    "<fingerprint>.p<NN>", effect a CrashGroup: count, first and last seen, a sample,
 *    builds and platforms). Other event types do not concern it.
 *  - "query", request/reply on gamefn.v1.crashes.query (queue crashes): top (every
 *    group read with one KV watch, merged by fingerprint) or detail (one fingerprint's
 *    groups, "<fingerprint>.>"); effects.h reads them.
 * gf_effects_main (effects.h) declares both; the function state is the gf_consumer, its
 * ctx a gf_effects_ctx.
 *
 * Threads: batches of different partitions run concurrently (the ops touch only their
 * key's group); queries run on the request handlers and only read KV.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashes.h"
#include "gamefn/consumer.h"
#include "effects.h"
#include "gamefn/function.h"
#include "gamefn/log.h"

#define QUERY_SUBJECT "gamefn.v1.crashes.query"

/* The function's config, from the ops' ctx (a gf_effects_ctx). */
static const cr_config *config_of(const void *ctx)
{
    return ((const gf_effects_ctx *)ctx)->section;
}

/* ---- the consumer ---------------------------------------------------------------------- */

static gf_err keys(void *ctx, const gf_consumer_event *e, gf_consumer_keys *out, char *why,
                   size_t why_size)
{
    const cr_config *cfg = config_of(ctx);
    if (e->ev->payload_case != GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH)
        return GF_OK; /* not a crash: no key */
    gf_fingerprint fp;
    if (cr_fingerprint_of(e->ev, (unsigned)cfg->max_frames, &fp, NULL, 0) != GF_OK ||
        cr_key_format(fp.hex, e->partition, out->key[0], GF_CONSUMER_KEY_MAX) != GF_OK) {
        snprintf(why, why_size, "no fingerprint: no stack frame and no signature");
        return GF_ERR_INVALID;
    }
    out->n = 1;
    return GF_OK;
}

static gf_err load(void *ctx, const char *key, const uint8_t *effect, size_t len, void **state)
{
    (void)ctx;
    char fp[GF_FINGERPRINT_HEX_LEN + 1];
    unsigned partition = 0;
    gf_err err = cr_key_parse(key, fp, &partition);
    cr_group *g = calloc(1, sizeof *g);
    if (!g)
        return GF_ERR_NOMEM;
    if (err == GF_OK)
        err = len ? cr_group_decode(effect, len, g) : cr_group_init(g, fp);
    if (err == GF_OK && strcmp(g->fingerprint, fp) != 0)
        err = GF_ERR_INVALID; /* a group under another fingerprint's key */
    if (err != GF_OK) {
        cr_group_fini(g);
        free(g);
        return err;
    }
    *state = g;
    return GF_OK;
}

static gf_err apply(void *ctx, const char *key, void *state, const gf_consumer_event *e, char *why,
                    size_t why_size)
{
    const cr_config *cfg = config_of(ctx);
    (void)key;
    gf_err err = cr_group_add(state, e->ev, (unsigned)cfg->max_frames);
    if (err == GF_ERR_INVALID)
        snprintf(why, why_size, "not a crash event with a fingerprint");
    return err;
}

static gf_err store(void *ctx, const char *key, const void *state, uint8_t **out, size_t *len)
{
    (void)ctx;
    (void)key;
    return cr_group_encode(state, out, len);
}

static void drop(void *ctx, void *state)
{
    (void)ctx;
    cr_group_fini(state);
    free(state);
}

/* ---- queries --------------------------------------------------------------------------- */

/* A stored group, handed to each(); one that does not read is skipped and logged. */
typedef struct groups {
    gf_err (*each)(void *arg, const cr_group *g);
    void *arg;
} groups;

static gf_err read_group(void *arg, const char *key, const uint8_t *effect, size_t len)
{
    const groups *gs = arg;
    char fp[GF_FINGERPRINT_HEX_LEN + 1];
    unsigned partition = 0;
    cr_group g;
    gf_err err = cr_key_parse(key, fp, &partition);
    if (err == GF_OK && (err = cr_group_decode(effect, len, &g)) == GF_OK) {
        err = strcmp(g.fingerprint, fp) == 0 ? gs->each(gs->arg, &g) : GF_ERR_INVALID;
        cr_group_fini(&g);
    }
    if (err == GF_ERR_INVALID) {
        gf_log_warn("unreadable crash group skipped", "key=%s", key);
        err = GF_OK;
    }
    return err;
}

static gf_err read_groups(const gf_effects_ctx *st, const char *filter,
                          gf_err (*each)(void *, const cr_group *), void *arg)
{
    groups gs = {each, arg};
    return gf_effects_read(st, filter, read_group, &gs);
}

static gf_err add_top(void *arg, const cr_group *g)
{
    return cr_top_add(arg, g);
}

typedef struct detail {
    cr_group merged;
    uint32_t partitions;
} detail;

static gf_err add_detail(void *arg, const cr_group *g)
{
    detail *d = arg;
    d->partitions++;
    return cr_group_merge(&d->merged, g);
}

static gf_err on_query(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    const gf_effects_ctx *st = gf_effects_ctx_of(fn);
    cr_request r;
    gf_err err = cr_request_parse(req->data, req->len, &r, reply->field, sizeof reply->field,
                                  reply->error, sizeof reply->error);
    if (err != GF_OK)
        return err;
    uint8_t *out = NULL;
    size_t len = 0;
    if (r.kind == CR_QUERY_TOP) {
        cr_top *t = NULL;
        err = cr_top_alloc(&t);
        if (err == GF_OK)
            err = read_groups(st, ">", add_top, t);
        if (err == GF_OK)
            err = cr_top_reply(t, r.limit, r.since_unix_ms, &out, &len);
        cr_top_free(t);
    } else {
        detail d = {0};
        char filter[CR_KEY_MAX + 4];
        snprintf(filter, sizeof filter, "%s.>", r.fingerprint);
        err = cr_group_init(&d.merged, r.fingerprint);
        if (err == GF_OK)
            err = read_groups(st, filter, add_detail, &d);
        if (err == GF_OK && d.partitions == 0) {
            snprintf(reply->error, sizeof reply->error, "no crash has fingerprint %s",
                     r.fingerprint);
            snprintf(reply->field, sizeof reply->field, "detail.fingerprint");
            err = GF_ERR_NOT_FOUND;
        } else if (err == GF_OK) {
            err = cr_detail_reply(&d.merged, d.partitions, &out, &len);
        }
        cr_group_fini(&d.merged);
    }
    if (err != GF_OK && err != GF_ERR_NOT_FOUND && !reply->error[0])
        snprintf(reply->error, sizeof reply->error, "cannot read the crash groups: %s",
                 gf_err_str(err));
    reply->data = out;
    reply->len = len;
    return err;
}

/* ---- the declaration ---------------------------------------------------------------------- */

static const gf_effects_function crashes = {
    .name = "crashes",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Crash reports grouped by stack fingerprint; answers gamefn.v1.crashes.query.",
    .config = &crashes_config_table,
    .bucket_offset = offsetof(cr_config, bucket),
    .events_offset = offsetof(cr_config, events),
    .ops = {keys, load, apply, store, drop},
    .query_subject = QUERY_SUBJECT,
    .on_query = on_query,
};

int main(int argc, char **argv)
{
    return gf_effects_main(&crashes, argc, argv);
}
