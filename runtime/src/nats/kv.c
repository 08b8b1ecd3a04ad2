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
 * - gf_kv_delete_if publishes the KV delete marker ("KV-Operation: DEL") itself with
 *   Nats-Expected-Last-Subject-Sequence, so there nats.c gives the code (10071).
 * - The pipelined CAS with the code is gamefn/publish.h (gf_publish_cas_send/_sync).
 */
#include "gamefn/kv.h"

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

gf_err gf_kv_delete_if(jsCtx *js, kvStore *kv, const char *key, uint64_t last)
{
    char subject[512];
    const char *bucket = kvStore_Bucket(kv);
    int n = snprintf(subject, sizeof subject, "$KV.%s.%s", bucket, key);
    if (n < 0 || (size_t)n >= sizeof subject)
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
    return gf__nats_js_err(s, jerr);
}
