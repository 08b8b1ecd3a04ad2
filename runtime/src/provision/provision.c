/*
 * provision.c — JetStream streams from config, and gf_provision_all().
 *
 * Design notes:
 *  - Read first, write only when needed: js_GetStreamInfo, then create if absent,
 *    compare if present. An existing stream that matches the config gets no
 *    request at all, so provisioning on every function start is free and safe.
 *  - Comparison is against what the server reports, with the server's defaults
 *    applied to the config first ("expected" values): 0 max_msgs/max_bytes/
 *    max_msg_size means unlimited and the server reports -1; an unset duplicate
 *    window is 2 minutes, or max_age when that is shorter (nats-server 2.9.10,
 *    measured; docs/NATS-FACTS.md §6); replicas 0 means 1. Without this,
 *    provisioning twice would report conflicts against the server's own defaults.
 *  - Updates start from the server's own config and overwrite only the fields
 *    we manage, so settings we do not manage (placement, mirror, allow_direct…)
 *    are sent back unchanged. Retention and storage cannot change in place on
 *    2.9.10 (the server answers 10052); everything else we manage can, though
 *    the server may still refuse (e.g. replicas on a single server) and we
 *    report its words.
 *  - Two processes provisioning at once: if our create loses to another
 *    creator (10058 "name already in use", or 10065 "subjects overlap" with the stream
 *    the other just made), we read again and compare.
 *  - Units: config durations are ms, jsStreamConfig wants ns (docs/NATS-FACTS.md §2).
 *
 * Folder runtime/src/provision/: making JetStream streams, consumers and KV buckets
 * match config (streams here, provision_consumer.c, provision_bucket.c; differences,
 * messages and the shared update path in provision_diff.c). It may use core/,
 * config/ and nats/.
 */
#include "gamefn/provision.h"

#include <stdio.h>
#include <string.h>

#include "gamefn/log.h"
#include "gamefn/names.h"
#include "nats/nats_err.h"
#include "provision_diff.h"

enum { PROV_DUP_DEFAULT_MS = 2 * 60 * 1000, PROV_MAX_REPLICAS = 5, PROV_MAX_SOURCES = 64 };

/* What config wants of a stream, as the server reports it, with storage for the
 * sources (jsStreamConfig points into it). */
typedef struct stream_want {
    jsStreamConfig cfg;
    jsStreamSource src[PROV_MAX_SOURCES];
    jsStreamSource *srcp[PROV_MAX_SOURCES];
    jsStreamSource mirror;
} stream_want;

/* ---- validation --------------------------------------------------------- */

static gf_err stream_validate(const gf_stream_config *c, gf_provision_result *res)
{
    const char *name = c->name ? c->name : "(null)";
    char why[GF_NAME_WHY_MAX];

    if (!gf_name_asset_ok(c->name, why, sizeof why)) {
        gf__prov_message(res, "stream %s: name %s", name, why);
        return GF_ERR_INVALID;
    }
    if ((c->subjects_len > 0 && c->subjects == NULL) || c->subjects_len > 1024 ||
        (c->sources_len > 0 && c->sources == NULL) || c->sources_len > PROV_MAX_SOURCES ||
        (c->mirror ? c->subjects_len + c->sources_len != 0
                   : c->subjects_len + c->sources_len == 0)) {
        gf__prov_message(res,
                         "stream %s: needs 1 to 1024 subjects and/or 1 to %d sources, or a "
                         "mirror and neither",
                         name, PROV_MAX_SOURCES);
        return GF_ERR_INVALID;
    }
    if (c->mirror && !gf_name_asset_ok(c->mirror, why, sizeof why)) {
        gf__prov_message(res, "stream %s: mirror %s", name, why);
        return GF_ERR_INVALID;
    }
    for (size_t i = 0; i < c->sources_len; i++) {
        if (!gf_name_asset_ok(c->sources[i], why, sizeof why)) {
            gf__prov_message(res, "stream %s: sources[%zu] %s", name, i, why);
            return GF_ERR_INVALID;
        }
    }
    for (size_t i = 0; i < c->subjects_len; i++) {
        if (!gf_name_subject_ok(c->subjects[i], true, why, sizeof why)) {
            gf__prov_message(res, "stream %s: subjects[%zu] %s", name, i, why);
            return GF_ERR_INVALID;
        }
    }
    if (c->retention < GF_RETENTION_LIMITS || c->retention > GF_RETENTION_WORKQUEUE ||
        c->storage < GF_STORAGE_FILE || c->storage > GF_STORAGE_MEMORY ||
        c->discard < GF_DISCARD_OLD || c->discard > GF_DISCARD_NEW) {
        gf__prov_message(res, "stream %s: retention, storage or discard out of range", name);
        return GF_ERR_INVALID;
    }
    if (c->replicas < 0 || c->replicas > PROV_MAX_REPLICAS) {
        gf__prov_message(res, "stream %s: replicas %lld is outside 0..%d", name,
                         (long long)c->replicas, PROV_MAX_REPLICAS);
        return GF_ERR_INVALID;
    }
    if (!gf__prov_ms_ok(c->max_age_ms) || !gf__prov_ms_ok(c->duplicate_window_ms)) {
        gf__prov_message(res,
                         "stream %s: max_age and duplicate_window must be >= 0 and "
                         "fit in int64 nanoseconds",
                         name);
        return GF_ERR_INVALID;
    }
    if (c->max_age_ms > 0 && c->duplicate_window_ms > c->max_age_ms) {
        char a[32], b[32];
        gf__prov_message(
            res, "stream %s: duplicate_window %s is longer than max_age %s", name,
            gf__prov_fmt_duration(a, sizeof a, gf__prov_ms_to_ns(c->duplicate_window_ms), NULL),
            gf__prov_fmt_duration(b, sizeof b, gf__prov_ms_to_ns(c->max_age_ms), NULL));
        return GF_ERR_INVALID;
    }
    if (c->max_msgs < -1 || c->max_bytes < -1 || c->max_msg_size < -1 ||
        c->max_msg_size > INT32_MAX) {
        gf__prov_message(res,
                         "stream %s: max_msgs, max_bytes and max_msg_size must be >= 0 "
                         "(max_msg_size at most %d)",
                         name, INT32_MAX);
        return GF_ERR_INVALID;
    }
    return GF_OK;
}

/* ---- expected server config ------------------------------------------------ */

static const jsRetentionPolicy retention_map[] = {js_LimitsPolicy, js_InterestPolicy,
                                                  js_WorkQueuePolicy};
static const jsStorageType storage_map[] = {js_FileStorage, js_MemoryStorage};
static const jsDiscardPolicy discard_map[] = {js_DiscardOld, js_DiscardNew};

/* What the server reports for a stream created from `c`. Pointers borrow `c`. */
static void stream_expected(const gf_stream_config *c, stream_want *sw)
{
    jsStreamConfig *w = &sw->cfg;
    jsStreamConfig_Init(w);
    for (size_t i = 0; i < c->sources_len; i++) {
        jsStreamSource_Init(&sw->src[i]);
        sw->src[i].Name = c->sources[i];
        sw->srcp[i] = &sw->src[i];
    }
    w->Sources = c->sources_len ? sw->srcp : NULL;
    w->SourcesLen = (int)c->sources_len;
    if (c->mirror) {
        jsStreamSource_Init(&sw->mirror);
        sw->mirror.Name = c->mirror;
        w->Mirror = &sw->mirror;
    }
    w->Name = c->name;
    w->Description = c->description;
    w->Subjects = c->subjects;
    w->SubjectsLen = (int)c->subjects_len;
    w->Retention = retention_map[c->retention];
    w->Storage = storage_map[c->storage];
    w->Discard = discard_map[c->discard];
    w->Replicas = c->replicas > 0 ? c->replicas : 1;
    w->MaxAge = gf__prov_ms_to_ns(c->max_age_ms);
    int64_t dup_ms = c->duplicate_window_ms;
    if (dup_ms == 0)
        dup_ms = (c->max_age_ms > 0 && c->max_age_ms < PROV_DUP_DEFAULT_MS) ? c->max_age_ms
                                                                            : PROV_DUP_DEFAULT_MS;
    w->Duplicates = gf__prov_ms_to_ns(dup_ms);
    /* A mirror deduplicates nothing: nats-server 2.9.10 stores its duplicate window as 0
     * whatever was asked, so asking 0 keeps a second provisioning from seeing a
     * difference (it reported one, and stopped every second local run). */
    if (c->mirror)
        w->Duplicates = 0;
    w->MaxMsgs = c->max_msgs > 0 ? c->max_msgs : -1;
    w->MaxBytes = c->max_bytes > 0 ? c->max_bytes : -1;
    w->MaxMsgSize = c->max_msg_size > 0 ? (int32_t)c->max_msg_size : -1;
    w->AllowDirect = c->allow_direct;
}

/* The names of a stream's sources (at most PROV_MAX_SOURCES). */
static int source_names(const jsStreamConfig *c, const char **names)
{
    int n = 0;
    for (int i = 0; i < c->SourcesLen && n < PROV_MAX_SOURCES; i++) {
        if (c->Sources[i] && c->Sources[i]->Name)
            names[n++] = c->Sources[i]->Name;
    }
    return n;
}

/* Every managed field; `w` is stream_expected(). */
static void stream_compare(const jsStreamConfig *s, const jsStreamConfig *w, gf__prov_diff *d)
{
    const char *have[PROV_MAX_SOURCES], *want[PROV_MAX_SOURCES];
    gf__prov_diff_subjects(d, true, "subjects", (const char *const *)s->Subjects, s->SubjectsLen,
                           (const char *const *)w->Subjects, w->SubjectsLen);
    gf__prov_diff_subjects(d, true, "sources", have, source_names(s, have), want,
                           source_names(w, want));
    gf__prov_diff_string(d, false, "mirror", s->Mirror ? s->Mirror->Name : NULL,
                         w->Mirror ? w->Mirror->Name : NULL);
    if (s->Retention != w->Retention)
        gf__prov_diff_add(d, false, "retention", gf__prov_retention_name(s->Retention),
                          gf__prov_retention_name(w->Retention));
    if (s->Storage != w->Storage)
        gf__prov_diff_add(d, false, "storage", gf__prov_storage_name(s->Storage),
                          gf__prov_storage_name(w->Storage));
    if (s->Discard != w->Discard)
        gf__prov_diff_add(d, true, "discard", gf__prov_discard_name(s->Discard),
                          gf__prov_discard_name(w->Discard));
    gf__prov_diff_limit(d, true, "replicas", s->Replicas, w->Replicas);
    gf__prov_diff_duration(d, true, "max_age", s->MaxAge, w->MaxAge, "unlimited");
    gf__prov_diff_duration(d, true, "duplicate_window", s->Duplicates, w->Duplicates, NULL);
    gf__prov_diff_limit(d, true, "max_msgs", s->MaxMsgs, w->MaxMsgs);
    gf__prov_diff_limit(d, true, "max_bytes", s->MaxBytes, w->MaxBytes);
    gf__prov_diff_limit(d, true, "max_msg_size", s->MaxMsgSize, w->MaxMsgSize);
    if (s->AllowDirect != w->AllowDirect)
        gf__prov_diff_add(d, true, "allow_direct", s->AllowDirect ? "true" : "false",
                          w->AllowDirect ? "true" : "false");
    if (w->Description != NULL)
        gf__prov_diff_string(d, true, "description", s->Description, w->Description);
}

static void stream_compare_any(const jsStreamConfig *server, const void *want, gf__prov_diff *d)
{
    stream_compare(server, want, d);
}

/* The fields config manages, written over the server's own config for an update. */
static void stream_patch(jsStreamConfig *up, const void *want)
{
    const jsStreamConfig *w = want;
    if (w->Description)
        up->Description = w->Description;
    up->Subjects = w->Subjects;
    up->SubjectsLen = w->SubjectsLen;
    up->Sources = w->Sources;
    up->SourcesLen = w->SourcesLen;
    up->Discard = w->Discard;
    up->Replicas = w->Replicas;
    up->MaxAge = w->MaxAge;
    up->Duplicates = w->Duplicates;
    up->MaxMsgs = w->MaxMsgs;
    up->MaxBytes = w->MaxBytes;
    up->MaxMsgSize = w->MaxMsgSize;
    up->AllowDirect = w->AllowDirect; /* a mirror's own; its mirror_direct: see reconcile */
}

/* ---- one stream ------------------------------------------------------------- */

static bool stream_absent(natsStatus s, jsErrCode jerr)
{
    return s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr;
}

/* Creates stream `want`; a mirror with its origin's allow_direct off for the moment
 * (gf__prov_origin_direct_off). */
static natsStatus add_stream(jsCtx *js, jsStreamConfig *want, jsStreamInfo **si, jsErrCode *jerr)
{
    jsStreamInfo *oi = gf__prov_origin_direct_off(js, want);
    natsStatus s = js_AddStream(si, js, want, NULL, jerr);
    gf__prov_origin_direct_restore(js, oi, want);
    return s;
}

/* An existing mirror that answers its origin's direct gets (made before add_stream, or by
 * hand): reads of the origin may be stale; only re-creating it helps (the server keeps
 * mirror_direct through updates). */
static void warn_mirror_direct(const jsStreamInfo *si)
{
    if (si && si->Config && si->Config->Mirror && si->Config->MirrorDirect)
        gf_log_warn("mirror answers its origin's direct gets: KV reads of the origin may be "
                    "stale or 'not found' right after a write; delete this stream and provision "
                    "again to re-create it without (its history older than the origin's is "
                    "lost)",
                    "stream=%s origin=%s", si->Config->Name,
                    si->Config->Mirror->Name ? si->Config->Mirror->Name : "");
}

/* Create, update or compare. Returns with res filled; *warn set when the line
 * deserves warn level (created, but the server changed a value). */
static gf_err stream_apply(jsCtx *js, const gf_stream_config *cfg, bool update,
                           gf_provision_result *res, bool *warn)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    stream_want sw;
    jsStreamConfig *want = &sw.cfg;
    gf__prov_diff diff;
    char asset[300];
    gf_err err = GF_OK;
    natsStatus s;

    snprintf(asset, sizeof asset, "stream %s", cfg->name);
    stream_expected(cfg, &sw);

    s = js_GetStreamInfo(&si, js, cfg->name, NULL, &jerr);
    if (s != NATS_OK && stream_absent(s, jerr)) {
        jerr = 0;
        s = add_stream(js, want, &si, &jerr);
        if (s == NATS_OK) {
            gf__prov_diff_init(&diff);
            stream_compare(si->Config, want, &diff);
            *warn = gf__prov_created(&diff, asset, res);
            goto out;
        }
        /* Someone may have created it between our read and our create: a concurrent
         * creator's stream makes ours fail with "name already in use", or (nats-server
         * 2.9.10, seen with two replicas starting at once) with "subjects overlap" when the
         * overlap is with that very stream. Read again: if ours exists now, compare. */
        char create_text[256]; /* the server's words, before the read below replaces them */
        snprintf(create_text, sizeof create_text, "%s", gf__prov_nats_text(s));
        natsStatus created = s;
        jsErrCode create_err = jerr;
        bool overlap = create_err == JSStreamSubjectOverlapErr;
        if (create_err == JSStreamNameExistErr || overlap) {
            jerr = 0;
            s = js_GetStreamInfo(&si, js, cfg->name, NULL, &jerr);
        }
        bool raced = create_err == JSStreamNameExistErr ||
                     (overlap && !(s != NATS_OK && stream_absent(s, jerr)));
        if (!raced) {
            gf__prov_message(res, "%s: create failed: %s", asset, create_text);
            /* another stream already takes these subjects: an asset conflict */
            err = overlap ? GF_ERR_CONFLICT : gf__nats_js_err(created, create_err);
            goto out;
        }
    }
    if (s != NATS_OK) {
        gf__prov_message(res, "%s: cannot read stream info: %s", asset, gf__prov_nats_text(s));
        err = gf__nats_js_err(s, jerr);
        goto out;
    }

    warn_mirror_direct(si);
    err = gf__prov_stream_reconcile(js, si, want, stream_compare_any, stream_patch, asset, update,
                                    res);
out:
    jsStreamInfo_Destroy(si);
    return err;
}

gf_err gf_provision_stream(jsCtx *js, const gf_stream_config *cfg, bool update,
                           gf_provision_result *res)
{
    gf_provision_result local;
    bool warn = false;
    gf_err err;

    res = gf__prov_begin(res, &local);
    if (js == NULL || cfg == NULL) {
        gf__prov_message(res, "stream: no JetStream context or config");
        err = GF_ERR_INVALID;
    } else {
        err = stream_validate(cfg, res);
        if (err == GF_OK)
            err = stream_apply(js, cfg, update, res, &warn);
    }
    gf__prov_report("stream", cfg ? cfg->name : NULL, err, res->outcome, warn, res);
    return err;
}

/* ---- by name ----------------------------------------------------------------- */

static gf_err not_in_config(gf_provision_result *res, const char *what, const char *name,
                            const char *list)
{
    gf_provision_result local;
    res = gf__prov_begin(res, &local);
    gf__prov_message(res, "%s %s is not in config (jetstream.%s)", what, name ? name : "(null)",
                     list);
    return GF_ERR_CONFIG;
}

gf_err gf_provision_stream_named(jsCtx *js, const gf_config *cfg, const char *name,
                                 gf_provision_result *res)
{
    const gf_stream_config *sc = gf_config_stream(cfg, name);
    return sc ? gf_provision_stream(js, sc, false, res)
              : not_in_config(res, "stream", name, "streams");
}

gf_err gf_provision_bucket_named(jsCtx *js, const gf_config *cfg, const char *name,
                                 gf_provision_result *res)
{
    const gf_bucket_config *bc = gf_config_bucket(cfg, name);
    return bc ? gf_provision_bucket(js, bc, false, res)
              : not_in_config(res, "bucket", name, "buckets");
}

gf_err gf_provision_consumer_named(jsCtx *js, const gf_config *cfg, const char *stream,
                                   const char *name, gf_provision_result *res)
{
    const gf_consumer_config *cc = gf_config_consumer(cfg, stream, name);
    if (cc)
        return gf_provision_consumer(js, cc, false, res);
    char both[600];
    snprintf(both, sizeof both, "%s/%s", stream ? stream : "(null)", name ? name : "(null)");
    return not_in_config(res, "consumer", both, "consumers");
}

/* ---- everything ------------------------------------------------------------ */

gf_err gf_provision_all(jsCtx *js, const gf_jetstream_config *js_cfg, bool update,
                        gf_provision_result *res)
{
    gf_provision_result local;
    gf_provision_result one;
    int counts[3] = {0, 0, 0}; /* indexed by gf_provision_outcome */
    gf_err err = GF_OK;

    res = gf__prov_begin(res, &local);
    if (js == NULL || js_cfg == NULL) {
        gf__prov_message(res, "provision: no JetStream context or config");
        return GF_ERR_INVALID;
    }
    if ((js_cfg->streams_len > 0 && js_cfg->streams == NULL) ||
        (js_cfg->buckets_len > 0 && js_cfg->buckets == NULL) ||
        (js_cfg->consumers_len > 0 && js_cfg->consumers == NULL)) {
        gf__prov_message(res, "provision: a list has a length but no entries");
        return GF_ERR_INVALID;
    }

    /* Buckets first (a stream may source a bucket's KV_<name> stream), then streams,
     * then consumers (they need their stream). */
    for (size_t i = 0; i < js_cfg->buckets_len && err == GF_OK; i++) {
        err = gf_provision_bucket(js, &js_cfg->buckets[i], update, &one);
        counts[one.outcome]++;
    }
    for (size_t i = 0; i < js_cfg->streams_len && err == GF_OK; i++) {
        err = gf_provision_stream(js, &js_cfg->streams[i], update, &one);
        counts[one.outcome]++;
    }
    for (size_t i = 0; i < js_cfg->consumers_len && err == GF_OK; i++) {
        err = gf_provision_consumer(js, &js_cfg->consumers[i], update, &one);
        counts[one.outcome]++;
    }
    if (err != GF_OK) {
        *res = one; /* names the asset that failed */
        return err;
    }
    if (counts[GF_PROVISION_UPDATED] > 0)
        res->outcome = GF_PROVISION_UPDATED;
    else if (counts[GF_PROVISION_CREATED] > 0)
        res->outcome = GF_PROVISION_CREATED;
    gf__prov_message(res, "%d created, %d updated, %d unchanged", counts[GF_PROVISION_CREATED],
                     counts[GF_PROVISION_UPDATED], counts[GF_PROVISION_UNCHANGED]);
    return GF_OK;
}
