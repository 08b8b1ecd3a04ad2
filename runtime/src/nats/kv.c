/*
 * kv.c — KV compare-and-set with conflicts told apart from unknown outcomes.
 *
 * Design notes:
 * - nats.c 3.4.1's kvStore_Create / kvStore_Update publish with a NULL jsErrCode, so
 *   a refusal reaches us only as NATS_ERR plus error text, and the API here takes no
 *   jsCtx to publish ourselves. A refusal is therefore classified by the key's
 *   state, never by the text: after NATS_ERR (the server answered with an API error,
 *   so nothing was stored) the key is read once; if its state makes the expectation
 *   false (an update's revision is no longer the latest, a create's key has a value)
 *   it is GF_ERR_CONFLICT, otherwise GF_ERR_NATS (refused for another reason, e.g.
 *   a value over the bucket's limit). Revisions only grow, so a read after the
 *   refusal cannot make an update's stale revision look current; a create refused
 *   while someone deletes the key may read as GF_ERR_NATS (worth one retry).
 * - gf_kv_put_if and gf_kv_delete_if publish to $KV.<bucket>.<key> themselves with
 *   Nats-Expected-Last-Subject-Sequence (a delete: the marker "KV-Operation: DEL"), so
 *   there nats.c gives the code: 10071 is the conflict, any other (10077: the bucket is
 *   full) is handed to the caller. Their create expects no message on the subject and,
 *   refused over a delete or purge marker (the subject's last message), is sent once
 *   more on the marker's sequence, as kvStore_Create does.
 * - The pipelined CAS with the code is gamefn/publish.h (gf_publish_cas_send/_sync).
 */
#include "gamefn/kv.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "nats_err.h"

/* After kvStore_Update(last) or kvStore_Create (last 0) returned NATS_ERR: is the
 * expectation false now? A key that is absent or deleted has no live revision. */
static gf_err refusal(kvStore *kv, const char *key, uint64_t last)
{
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, kv, key);
    gf_err err = GF_ERR_NATS;
    if (s == NATS_OK)
        err = kvEntry_Revision(e) != last ? GF_ERR_CONFLICT : GF_ERR_NATS;
    else if (s == NATS_NOT_FOUND)
        err = last != 0 ? GF_ERR_CONFLICT : GF_ERR_NATS;
    kvEntry_Destroy(e);
    return err;
}

static gf_err cas_result(natsStatus s, kvStore *kv, const char *key, uint64_t last)
{
    return s == NATS_ERR ? refusal(kv, key, last) : gf_nats_err(s);
}

gf_err gf_kv_open(jsCtx *js, const char *bucket, kvStore **out)
{
    return gf_nats_err(js_KeyValue(out, js, bucket));
}

gf_err gf_kv_get(kvStore *kv, const char *key, kvEntry **out)
{
    *out = NULL;
    return gf_nats_err(kvStore_Get(out, kv, key));
}

gf_err gf_kv_create(kvStore *kv, const char *key, const void *data, size_t len, uint64_t *new_rev)
{
    uint64_t rev = 0;
    gf_err err = cas_result(kvStore_Create(&rev, kv, key, data, (int)len), kv, key, 0);
    if (new_rev)
        *new_rev = rev;
    return err;
}

gf_err gf_kv_update(kvStore *kv, const char *key, const void *data, size_t len, uint64_t last,
                    uint64_t *new_rev)
{
    uint64_t rev = 0;
    gf_err err = cas_result(kvStore_Update(&rev, kv, key, data, (int)len, last), kv, key, last);
    if (new_rev)
        *new_rev = rev;
    return err;
}

/* "$KV.<bucket>.<key>" into subject. */
static gf_err kv_subject(kvStore *kv, const char *key, char *subject, size_t size)
{
    int n = snprintf(subject, size, "$KV.%s.%s", kvStore_Bucket(kv), key);
    return n < 0 || (size_t)n >= size ? GF_ERR_INVALID : GF_OK;
}

/* The result of a conditional publish: the conflict (10071) told apart, any other
 * refusal's code into *js_code. */
static gf_err coded(natsStatus s, jsErrCode jerr, int *js_code)
{
    gf_err err = gf__nats_js_err(s, jerr);
    if (js_code)
        *js_code = err == GF_ERR_NATS ? (int)jerr : 0;
    return err;
}

/* The sequence of the subject's last message if it is a delete or purge marker, else 0. */
static uint64_t marker_seq(jsCtx *js, kvStore *kv, const char *subject)
{
    char stream[256];
    natsMsg *m = NULL;
    const char *op = NULL;
    uint64_t seq = 0;
    snprintf(stream, sizeof stream, "KV_%s", kvStore_Bucket(kv));
    if (js_GetLastMsg(&m, js, stream, subject, NULL, NULL) == NATS_OK &&
        natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && op &&
        (strcmp(op, "DEL") == 0 || strcmp(op, "PURGE") == 0))
        seq = natsMsg_GetSequence(m);
    natsMsg_Destroy(m);
    return seq;
}

gf_err gf_kv_put_if(jsCtx *js, kvStore *kv, const char *key, const void *data, size_t len,
                    uint64_t last, uint64_t *new_rev, int *js_code)
{
    char subject[512];
    if (new_rev)
        *new_rev = 0;
    if (js_code)
        *js_code = 0;
    if (kv_subject(kv, key, subject, sizeof subject) != GF_OK)
        return GF_ERR_INVALID;
    bool create = last == 0;
    for (int attempt = 0;; attempt++) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.ExpectLastSubjectSeq = last;
        po.ExpectNoMessage = last == 0;
        jsPubAck *pa = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_Publish(&pa, js, subject, data, (int)len, &po, &jerr);
        if (s == NATS_OK && new_rev)
            *new_rev = pa->Sequence;
        jsPubAck_Destroy(pa);
        gf_err err = coded(s, jerr, js_code);
        if (err != GF_ERR_CONFLICT || !create || attempt > 0)
            return err;
        last = marker_seq(js, kv, subject); /* a create over a marker: once more on it */
        if (last == 0)
            return err;
    }
}

gf_err gf_kv_delete_if(jsCtx *js, kvStore *kv, const char *key, uint64_t last, int *js_code)
{
    char subject[512];
    if (js_code)
        *js_code = 0;
    if (kv_subject(kv, key, subject, sizeof subject) != GF_OK)
        return GF_ERR_INVALID;

    natsMsg *msg = NULL;
    natsStatus s = natsMsg_Create(&msg, subject, NULL, NULL, 0);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(msg, "KV-Operation", "DEL");
    if (s != NATS_OK) {
        natsMsg_Destroy(msg);
        return gf_nats_err(s);
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.ExpectLastSubjectSeq = last;
    jsErrCode jerr = 0;
    s = js_PublishMsg(NULL, js, msg, &po, &jerr);
    natsMsg_Destroy(msg);
    return coded(s, jerr, js_code);
}
