/*
 * kv.c — KV compare-and-set with conflicts told apart from unknown outcomes.
 *
 * Conflicts are recognised by nats.c's error text because kvStore_* do not expose
 * the JetStream error code (docs/NATS-FACTS.md §7); this is the only place that knows.
 * gf_kv_delete_if publishes the KV delete marker ("KV-Operation: DEL") itself, with
 * Nats-Expected-Last-Subject-Sequence, because kvStore_Delete is unconditional.
 */
#include "gamefn/kv.h"

#include <stdio.h>
#include <string.h>

#include "nats_err.h"

static gf_err kv_result(natsStatus s)
{
    if (s == NATS_OK)
        return GF_OK;
    if (s == NATS_ERR) {
        const char *text = nats_GetLastError(NULL);
        if (text && strstr(text, "wrong last sequence"))
            return GF_ERR_CONFLICT;
    }
    return gf__nats_err(s);
}

gf_err gf_kv_open(jsCtx *js, const char *bucket, kvStore **out)
{
    return gf__nats_err(js_KeyValue(out, js, bucket));
}

gf_err gf_kv_get(kvStore *kv, const char *key, kvEntry **out)
{
    *out = NULL;
    return kv_result(kvStore_Get(out, kv, key));
}

gf_err gf_kv_create(kvStore *kv, const char *key, const void *data, size_t len, uint64_t *new_rev)
{
    uint64_t rev = 0;
    gf_err err = kv_result(kvStore_Create(&rev, kv, key, data, (int)len));
    if (new_rev)
        *new_rev = rev;
    return err;
}

gf_err gf_kv_update(kvStore *kv, const char *key, const void *data, size_t len, uint64_t last,
                    uint64_t *new_rev)
{
    uint64_t rev = 0;
    gf_err err = kv_result(kvStore_Update(&rev, kv, key, data, (int)len, last));
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
        return gf__nats_err(s);
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.ExpectLastSubjectSeq = last;
    jsErrCode jerr = 0;
    s = js_PublishMsg(NULL, js, msg, &po, &jerr);
    natsMsg_Destroy(msg);
    return gf__nats_js_err(s, jerr);
}
