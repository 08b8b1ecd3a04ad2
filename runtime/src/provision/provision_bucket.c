/*
 * provision_bucket.c — KV buckets from config.
 *
 * Design notes:
 *  - A bucket is created with js_CreateKeyValue (so it gets exactly the stream
 *    settings nats.c gives every bucket: rollup, deny-delete, direct get,
 *    discard new) and checked through its backing stream KV_<bucket>:
 *      history        = max_msgs_per_subject
 *      ttl            = max_age          (0 = keys never expire)
 *      max_value_size = max_msg_size     (0 in config = -1 on the server)
 *      max_bytes      = max_bytes        (0 in config = -1 on the server)
 *      storage, replicas, description
 *      discard        = new              (not configurable)
 *    plus its subjects, which must be exactly $KV.<bucket>.>.
 *  - Discard new is checked because a bucket made another way (nats.c before it talked
 *    to a 2.7.2 server, an old `nats kv add`, by hand) may have discard old: at its
 *    max_bytes such a bucket silently drops its oldest revisions, i.e. live tickets,
 *    players records or claims, where discard new refuses the write (10077) and the
 *    writer sees it. An update sets it.
 *  - Updates patch the backing stream's own config (js_UpdateStream). The
 *    duplicate window is reset to 0 so that the server derives it from the new
 *    ttl as it did at creation (2 minutes, or the ttl when shorter); otherwise a
 *    shorter ttl would be refused for being below the old window.
 *  - Storage cannot change in place; everything else we manage can.
 *  - Units: config ms, kvConfig.TTL and stream MaxAge ns.
 */
#include "gamefn/provision.h"

#include <stdio.h>
#include <string.h>

#include "gamefn/names.h"
#include "nats/nats_err.h"
#include "provision_diff.h"

enum { PROV_MAX_HISTORY = 64, PROV_MAX_REPLICAS = 5 };

static gf_err bucket_validate(const gf_bucket_config *c, const char *asset,
                              gf_provision_result *res)
{
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_bucket_ok(c->name, why, sizeof why)) {
        gf__prov_message(res, "%s: name %s", asset, why);
        return GF_ERR_INVALID;
    }
    if (c->history < 1 || c->history > PROV_MAX_HISTORY) {
        gf__prov_message(res, "%s: history %lld is outside 1..%d", asset, (long long)c->history,
                         PROV_MAX_HISTORY);
        return GF_ERR_INVALID;
    }
    if (!gf__prov_ms_ok(c->ttl_ms)) {
        gf__prov_message(res, "%s: ttl must be >= 0 and fit in int64 nanoseconds", asset);
        return GF_ERR_INVALID;
    }
    if (c->storage < GF_STORAGE_FILE || c->storage > GF_STORAGE_MEMORY) {
        gf__prov_message(res, "%s: storage %d out of range", asset, c->storage);
        return GF_ERR_INVALID;
    }
    if (c->replicas < 0 || c->replicas > PROV_MAX_REPLICAS) {
        gf__prov_message(res, "%s: replicas %lld is outside 0..%d", asset, (long long)c->replicas,
                         PROV_MAX_REPLICAS);
        return GF_ERR_INVALID;
    }
    if (c->max_value_size < -1 || c->max_value_size > INT32_MAX || c->max_bytes < -1) {
        gf__prov_message(res, "%s: max_value_size (at most %d) and max_bytes must be >= 0", asset,
                         INT32_MAX);
        return GF_ERR_INVALID;
    }
    return GF_OK;
}

/* The backing stream as the server reports it for a bucket created from `c`:
 * only the fields we compare are set. */
typedef struct bucket_expected {
    int64_t history;
    int64_t max_age;
    jsStorageType storage;
    int64_t replicas;
    int32_t max_msg_size;
    int64_t max_bytes;
    const char *description;
    char subject[GF_NAME_BUCKET_MAX + 8];
} bucket_expected;

static void bucket_expect(const gf_bucket_config *c, bucket_expected *w)
{
    w->history = c->history;
    w->max_age = gf__prov_ms_to_ns(c->ttl_ms);
    w->storage = c->storage == GF_STORAGE_MEMORY ? js_MemoryStorage : js_FileStorage;
    w->replicas = c->replicas > 0 ? c->replicas : 1;
    w->max_msg_size = c->max_value_size > 0 ? (int32_t)c->max_value_size : -1;
    w->max_bytes = c->max_bytes > 0 ? c->max_bytes : -1;
    w->description = c->description;
    snprintf(w->subject, sizeof w->subject, "$KV.%s.>", c->name);
}

static void bucket_compare(const jsStreamConfig *s, const bucket_expected *w, gf__prov_diff *d)
{
    const char *subject = w->subject;
    gf__prov_diff_subjects(d, false, "subjects", (const char *const *)s->Subjects, s->SubjectsLen,
                           &subject, 1);
    gf__prov_diff_limit(d, true, "history", s->MaxMsgsPerSubject, w->history);
    gf__prov_diff_duration(d, true, "ttl", s->MaxAge, w->max_age, "none");
    if (s->Storage != w->storage)
        gf__prov_diff_add(d, false, "storage", gf__prov_storage_name(s->Storage),
                          gf__prov_storage_name(w->storage));
    gf__prov_diff_limit(d, true, "replicas", s->Replicas, w->replicas);
    gf__prov_diff_limit(d, true, "max_value_size", s->MaxMsgSize, w->max_msg_size);
    gf__prov_diff_limit(d, true, "max_bytes", s->MaxBytes, w->max_bytes);
    if (s->Discard != js_DiscardNew)
        gf__prov_diff_add(d, true, "discard", gf__prov_discard_name(s->Discard),
                          gf__prov_discard_name(js_DiscardNew));
    if (w->description != NULL)
        gf__prov_diff_string(d, true, "description", s->Description, w->description);
}

static void bucket_compare_any(const jsStreamConfig *server, const void *want, gf__prov_diff *d)
{
    bucket_compare(server, want, d);
}

/* The fields config manages, written over the backing stream's config for an update. */
static void bucket_patch(jsStreamConfig *up, const void *want)
{
    const bucket_expected *w = want;
    if (w->description)
        up->Description = w->description;
    up->MaxMsgsPerSubject = w->history;
    up->MaxAge = w->max_age;
    up->Duplicates = 0; /* re-derived from the ttl by the server */
    up->Replicas = w->replicas;
    up->MaxMsgSize = w->max_msg_size;
    up->MaxBytes = w->max_bytes;
    up->Discard = js_DiscardNew;
}

static gf_err bucket_create(jsCtx *js, const gf_bucket_config *cfg, const bucket_expected *w,
                            const char *asset, gf_provision_result *res)
{
    kvConfig kc;
    kvStore *kv = NULL;

    kvConfig_Init(&kc);
    kc.Bucket = cfg->name;
    kc.Description = cfg->description;
    kc.History = (uint8_t)w->history;
    kc.TTL = w->max_age;
    kc.StorageType = w->storage;
    kc.Replicas = (int)w->replicas;
    kc.MaxValueSize = w->max_msg_size;
    kc.MaxBytes = w->max_bytes;
    natsStatus s = js_CreateKeyValue(&kv, js, &kc);
    kvStore_Destroy(kv);
    if (s != NATS_OK) {
        gf__prov_message(res, "%s: create failed: %s", asset, gf__prov_nats_text(s));
        return gf_nats_err(s);
    }
    return GF_OK;
}

static gf_err bucket_apply(jsCtx *js, const gf_bucket_config *cfg, const char *asset, bool update,
                           gf_provision_result *res, bool *warn)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    bucket_expected want;
    gf__prov_diff diff;
    char stream[GF_NAME_BUCKET_MAX + 4];
    bool created = false;
    gf_err err = GF_OK;
    natsStatus s;

    bucket_expect(cfg, &want);
    snprintf(stream, sizeof stream, "KV_%s", cfg->name);

    s = js_GetStreamInfo(&si, js, stream, NULL, &jerr);
    if (s != NATS_OK && (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr)) {
        err = bucket_create(js, cfg, &want, asset, res);
        created = err == GF_OK;
        /* Read back either way: on success to check what the server stored,
         * on failure because another process may have created it first. */
        jerr = 0;
        s = js_GetStreamInfo(&si, js, stream, NULL, &jerr);
        if (err != GF_OK && s != NATS_OK)
            goto out; /* the create error stands */
        err = GF_OK;
        res->message[0] = '\0';
    }
    if (s != NATS_OK) {
        gf__prov_message(res, "%s: cannot read stream %s: %s", asset, stream,
                         gf__prov_nats_text(s));
        err = gf__nats_js_err(s, jerr);
        goto out;
    }

    if (created) {
        gf__prov_diff_init(&diff);
        bucket_compare(si->Config, &want, &diff);
        *warn = gf__prov_created(&diff, asset, res);
        goto out;
    }
    err = gf__prov_stream_reconcile(js, si, &want, bucket_compare_any, bucket_patch, asset, update,
                                    res);
out:
    jsStreamInfo_Destroy(si);
    return err;
}

gf_err gf_provision_bucket(jsCtx *js, const gf_bucket_config *cfg, bool update,
                           gf_provision_result *res)
{
    gf_provision_result local;
    char asset[300];
    bool warn = false;
    gf_err err;

    res = gf__prov_begin(res, &local);
    snprintf(asset, sizeof asset, "bucket %s", cfg && cfg->name ? cfg->name : "(null)");
    if (js == NULL || cfg == NULL) {
        gf__prov_message(res, "bucket: no JetStream context or config");
        err = GF_ERR_INVALID;
    } else {
        err = bucket_validate(cfg, asset, res);
        if (err == GF_OK)
            err = bucket_apply(js, cfg, asset, update, res, &warn);
    }
    gf__prov_report("bucket", cfg ? cfg->name : NULL, err, res->outcome, warn, res);
    return err;
}
