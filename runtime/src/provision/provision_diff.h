/*
 * provision_diff.h — helpers shared by the provisioning files (private to the runtime).
 *
 * A gf__prov_diff collects the fields where the server's asset differs from the
 * configured one, split into "fixed" (the server cannot change them in place)
 * and "editable" (an update can). Each entry reads "field is <server> on the
 * server, <config> in config", so the final message names asset, field and
 * both values. Values are formatted for people: durations as 7d / 1h / 250ms,
 * limits as "unlimited" when negative.
 *
 * Everything here is plain data on the caller's stack; no threads, no NATS calls.
 */
#ifndef GAMEFN_PROVISION_DIFF_H
#define GAMEFN_PROVISION_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"
#include "gamefn/log.h"
#include "gamefn/provision.h"

typedef struct gf__prov_diff {
    char fixed[512];
    char editable[512];
    size_t fixed_len, editable_len; /* bytes used in each buffer */
    int nfixed, neditable;          /* entries */
} gf__prov_diff;

void gf__prov_diff_init(gf__prov_diff *d);

/* Records one difference with already formatted values. */
void gf__prov_diff_add(gf__prov_diff *d, bool editable, const char *field, const char *server,
                       const char *config);

/* Compare-and-record helpers. `zero` is the text for 0 ("unlimited", "none" or NULL to
 * print "0"). Durations are in nanoseconds. */
void gf__prov_diff_duration(gf__prov_diff *d, bool editable, const char *field, int64_t server_ns,
                            int64_t config_ns, const char *zero);
void gf__prov_diff_limit(gf__prov_diff *d, bool editable, const char *field, int64_t server,
                         int64_t config); /* negative = "unlimited" */
void gf__prov_diff_string(gf__prov_diff *d, bool editable, const char *field, const char *server,
                          const char *config); /* NULL == "" */
/* Sets of subjects: order and duplicates do not matter. */
void gf__prov_diff_subjects(gf__prov_diff *d, bool editable, const char *field,
                            const char *const *server, int server_len, const char *const *config,
                            int config_len);

static inline bool gf__prov_diff_empty(const gf__prov_diff *d)
{
    return d->nfixed == 0 && d->neditable == 0;
}

/* "stream EVENTS: <fixed entries>; <editable entries>" into out. With `update`
 * false and only editable entries, says that an update would apply them. */
void gf__prov_diff_message(const gf__prov_diff *d, const char *asset, bool update, char *out,
                           size_t size);

/* Value formatting (always NUL-terminates). */
char *gf__prov_fmt_duration(char *buf, size_t size, int64_t ns, const char *zero);
char *gf__prov_fmt_limit(char *buf, size_t size, int64_t v);

/* Conversions from config units; callers validated the ranges. */
static inline int64_t gf__prov_ms_to_ns(int64_t ms)
{
    return ms * 1000000;
}
/* ms values that fit in int64 nanoseconds once converted. */
bool gf__prov_ms_ok(int64_t ms);

/* Name of enum values as the server spells them. */
const char *gf__prov_retention_name(int v);
const char *gf__prov_storage_name(int v);
const char *gf__prov_discard_name(int v);
const char *gf__prov_deliver_name(int v);
const char *gf__prov_ack_name(int v);

/* The one log line for a provisioned asset: kind "stream", "consumer" or "bucket", its
 * name, its outcome and res->message as detail, at info, or at warn when `warn` is set.
 * A failure (err != GF_OK) is not logged: it is in res->message, and the caller logs
 * it where it decides what to do about it. */
void gf__prov_report(const char *kind, const char *name, gf_err err, gf_provision_outcome outcome,
                     bool warn, const gf_provision_result *res);

/* The end of every in-place update (streams, buckets, consumers): `s`/`jerr` are the
 * update call's result and `still` what differs in the server's answer to it (checked
 * only when s == NATS_OK). Sets res (outcome UPDATED on success, else a message that
 * keeps the difference found before the update) and returns the error to report. */
gf_err gf__prov_update_result(natsStatus s, jsErrCode jerr, const gf__prov_diff *still,
                              const char *asset, gf_provision_result *res);

/* A mirror (`mirror`->Mirror set) is created or updated while its origin's allow_direct
 * is off for a moment: nats-server 2.9.10 makes a mirror of an allow_direct stream answer
 * that stream's direct gets (mirror_direct: checkStreamCfg sets it from the origin on a
 * create and on every update, whatever the request says; docs/NATS-FACTS.md §7), and a
 * mirror lags, so a KV read of the origin right after a write could be answered by the
 * mirror: "not found", or an older revision (9 of 2,000 reads on an idle server). With
 * the origin not direct at that instant the mirror gets no mirror_direct. Direct gets of
 * the origin meanwhile have no responder (a few ms; readers retry). _off returns the
 * origin's info to hand to _restore (NULL: nothing was changed, also for a stream that
 * is no mirror); restoring is retried, and its failure logged. */
jsStreamInfo *gf__prov_origin_direct_off(jsCtx *js, const jsStreamConfig *mirror);
void gf__prov_origin_direct_restore(jsCtx *js, jsStreamInfo *oi, const jsStreamConfig *mirror);

/* An existing stream (a KV bucket's backing stream too) against what config wants.
 * `compare` records every difference between the server's config and `want`;
 * `patch` writes the managed fields of `want` into `up`, a copy of the server's
 * config. Equal -> UNCHANGED, nothing sent. Different -> GF_ERR_CONFLICT with the
 * differences in res->message, unless `update` and every difference is editable:
 * then js_UpdateStream with the patched config, verified by comparing the answer
 * (gf__prov_update_result). */
typedef void (*gf__prov_stream_compare_fn)(const jsStreamConfig *server, const void *want,
                                           gf__prov_diff *d);
typedef void (*gf__prov_stream_patch_fn)(jsStreamConfig *up, const void *want);
gf_err gf__prov_stream_reconcile(jsCtx *js, const jsStreamInfo *si, const void *want,
                                 gf__prov_stream_compare_fn compare, gf__prov_stream_patch_fn patch,
                                 const char *asset, bool update, gf_provision_result *res);

/* The start of every provisioning call: `res`, or `local` when res is NULL, zeroed with
 * outcome UNCHANGED. Returns the one to use. */
gf_provision_result *gf__prov_begin(gf_provision_result *res, gf_provision_result *local);

/* An asset was just created, and `diff` is what the server stored against the config.
 * Sets outcome CREATED; a difference (the server adjusted something) goes into
 * res->message now, because the next run would call it a conflict. Returns true when
 * the log line deserves warn level. */
bool gf__prov_created(const gf__prov_diff *diff, const char *asset, gf_provision_result *res);

/* Formats res->message (printf style). */
void gf__prov_message(gf_provision_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Text of the last nats.c error, for messages. */
const char *gf__prov_nats_text(natsStatus s);

#endif
