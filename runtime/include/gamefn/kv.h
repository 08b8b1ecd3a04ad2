/*
 * gamefn/kv.h — JetStream KV helpers: compare-and-set with a real conflict code.
 *
 * nats.c 3.4.1's kvStore_Update reports a lost compare-and-set only as NATS_ERR with
 * error text and no JetStream code. These wrappers turn a refusal whose expectation
 * no longer holds into GF_ERR_CONFLICT once, here (kv.c says how, without the text),
 * so callers can branch on it. gf_kv_put_if and gf_kv_delete_if publish themselves and
 * also give the code of any other refusal (a full bucket). For pipelined CAS with the
 * code, see gamefn/publish.h. Any other failure
 * (GF_ERR_TIMEOUT, GF_ERR_UNAVAILABLE) means the outcome is unknown: re-read the key.
 * The kvStore is borrowed; thread-safety is nats.c's (kvStore calls are thread-safe).
 */
#ifndef GAMEFN_KV_H
#define GAMEFN_KV_H

#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

/* Binds to an existing bucket. */
gf_err gf_kv_open(jsCtx *js, const char *bucket, kvStore **out);

/* Reads the latest value. GF_ERR_NOT_FOUND if absent or deleted. The caller
 * destroys *out with kvEntry_Destroy. */
gf_err gf_kv_get(kvStore *kv, const char *key, kvEntry **out);

/* Creates `key` only if it does not exist (or was deleted). GF_ERR_CONFLICT if it exists. */
gf_err gf_kv_create(kvStore *kv, const char *key, const void *data, size_t len, uint64_t *new_rev);

/* Writes only if the key's latest revision is `last`. GF_ERR_CONFLICT otherwise. */
gf_err gf_kv_update(kvStore *kv, const char *key, const void *data, size_t len, uint64_t last,
                    uint64_t *new_rev);

/* Deletes only if the key's latest revision is `last` (a delete marker through CAS).
 * *js_code (may be NULL) as for gf_kv_put_if. */
gf_err gf_kv_delete_if(jsCtx *js, kvStore *kv, const char *key, uint64_t last, int *js_code);

/* gf_kv_create (last 0) or gf_kv_update (last > 0) published through `js`, so that a
 * refusal carries its JetStream code: *js_code (may be NULL) gets it when the result is
 * GF_ERR_NATS (10077: the bucket is at its max_bytes or max_msgs, nothing stored; see
 * gamefn/publish.h gf_publish_full), else 0. A create over a delete or purge marker is
 * sent once more on the marker's revision, as nats.c's kvStore_Create does. */
gf_err gf_kv_put_if(jsCtx *js, kvStore *kv, const char *key, const void *data, size_t len,
                    uint64_t last, uint64_t *new_rev, int *js_code);

#endif
