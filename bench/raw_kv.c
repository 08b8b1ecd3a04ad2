/*
 * raw_kv.c — `gamefn-bench raw` KV compare-and-set phases.
 *
 * Design notes:
 * - A KV CAS is a JetStream publish to $KV.<bucket>.<key> with
 *   ExpectLastSubjectSeq = the revision the writer last saw (what kvStore_Update
 *   does inside, docs/NATS-FACTS.md §7), so a lost race comes back as jsErrCode 10071.
 * - Sync: one key, one CAS in flight, each ack's sequence is the next expected
 *   revision. Pipelined: `keys` distinct keys, each with exactly one CAS in flight;
 *   the ack handler (nats.c thread) stores the key's new revision and queues the key
 *   as free again; the main thread takes free keys and sends their next CAS with
 *   js_PublishMsgAsync. With distinct keys a conflict can only mean a bug (a wrong
 *   tracked revision), so conflicts are counted and must be 0.
 * - The pipelined phase runs twice: bare, and with a unique Nats-Msg-Id on every
 *   timed CAS, which is what the runtime's publisher sends; the server then also
 *   records every id for dedup, and that costs (docs/BENCHMARKS.md).
 * - Verification: every CAS acked, the server's revision of every key equals the
 *   one tracked, and a deliberately stale CAS (sync and async) IS rejected with
 *   10071, which proves the expectation header really reached the server: without
 *   that check a broken CAS would look like a fast one.
 * - The pipelined state lives on the heap and is freed only once no ack can still
 *   arrive (js_PublishAsyncComplete succeeded); on the failure path where acks
 *   stay outstanding it is deliberately leaked, as the program is about to exit.
 */
#include "raw.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void bucket_name(const gf_raw_opts *o, char *buf, size_t size)
{
    snprintf(buf, size, "bench_%s", o->run_id);
}

static kvStore *open_bucket(jsCtx *js, const gf_raw_opts *o)
{
    kvStore *kv = NULL;
    char bucket[64];
    kvConfig kc;
    bucket_name(o, bucket, sizeof bucket);
    kvConfig_Init(&kc);
    kc.Bucket = bucket;
    kc.History = 1;
    kc.StorageType = js_FileStorage;
    if (js_CreateKeyValue(&kv, js, &kc) != NATS_OK) {
        fprintf(stderr, "raw: create KV bucket %s: %s\n", bucket, nats_GetLastError(NULL));
        return NULL;
    }
    return kv;
}

static int key_revision(kvStore *kv, const char *key, uint64_t *rev)
{
    kvEntry *e = NULL;
    if (kvStore_Get(&e, kv, key) != NATS_OK) {
        fprintf(stderr, "raw: KV get %s: %s\n", key, nats_GetLastError(NULL));
        return -1;
    }
    *rev = kvEntry_Revision(e);
    kvEntry_Destroy(e);
    return 0;
}

int gf_raw_kv_sync(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r)
{
    int rc = -1;
    jsCtx *js = NULL;
    kvStore *kv = NULL;
    char *payload = NULL;
    char bucket[64], subj[128];
    uint64_t rev = 0, server_rev = 0;
    jsErrCode jerr = 0;

    bucket_name(o, bucket, sizeof bucket);
    snprintf(subj, sizeof subj, "$KV.%s.sync", bucket);
    if (natsConnection_JetStream(&js, nc, NULL) != NATS_OK) {
        fprintf(stderr, "raw: JetStream context: %s\n", nats_GetLastError(NULL));
        goto out;
    }
    payload = malloc((size_t)o->payload);
    kv = open_bucket(js, o);
    if (!payload || !kv)
        goto out;
    gf_raw_fill_payload(payload, o->payload, 0);
    if (kvStore_Create(&rev, kv, "sync", payload, o->payload) != NATS_OK) {
        fprintf(stderr, "raw: KV create: %s\n", nats_GetLastError(NULL));
        goto out;
    }

    fprintf(stderr, "raw: [kv-sync] CAS on one key, one in flight\n");
    long long n = 0;
    double t0 = gf_raw_now(), last = t0;
    while (!gf_raw_done(o, t0, n)) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.ExpectLastSubjectSeq = rev;
        gf_raw_fill_payload(payload, o->payload, (uint64_t)n + 1);
        jsPubAck *pa = NULL;
        natsStatus s = js_Publish(&pa, js, subj, payload, o->payload, &po, &jerr);
        if (s != NATS_OK) {
            fprintf(stderr, "raw: kv-sync CAS %lld from revision %llu: %s (jsErrCode %d)%s\n", n,
                    (unsigned long long)rev, nats_GetLastError(NULL), (int)jerr,
                    jerr == JSStreamWrongLastSequenceErr ? ": someone else writes this key" : "");
            goto out;
        }
        bool grew = pa->Sequence > rev;
        rev = pa->Sequence;
        jsPubAck_Destroy(pa);
        if (!grew) {
            fprintf(stderr, "raw: kv-sync: revision did not grow\n");
            goto out;
        }
        n++;
        if ((n & 255) == 0)
            gf_raw_progress("kv-sync", t0, n, &last);
    }
    r->kv_sync.secs = gf_raw_now() - t0;
    r->kv_sync.count = n;

    if (key_revision(kv, "sync", &server_rev) != 0)
        goto out;
    if (server_rev != rev || n == 0) {
        fprintf(stderr, "raw: kv-sync: server revision %llu, tracked %llu, %lld updates\n",
                (unsigned long long)server_rev, (unsigned long long)rev, n);
        goto out;
    }
    /* A stale CAS must lose, or the figures above measured plain puts. */
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.ExpectLastSubjectSeq = rev - 1;
    jerr = 0;
    if (js_Publish(NULL, js, subj, payload, o->payload, &po, &jerr) == NATS_OK ||
        jerr != JSStreamWrongLastSequenceErr) {
        fprintf(stderr, "raw: kv-sync: a stale CAS was not rejected (jsErrCode %d)\n", (int)jerr);
        goto out;
    }
    rc = 0;
out:
    kvStore_Destroy(kv);
    free(payload);
    jsCtx_Destroy(js);
    return rc;
}

typedef struct kv_pipe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int keys;
    size_t prefix_len; /* strlen("$KV.<bucket>.") */
    uint64_t *rev;     /* per key: revision of its last acked CAS */
    int *ring;         /* keys with nothing in flight */
    int head, count;
    long long ok, conflicts, failed;
    int first_code;
    natsStatus first_status;
} kv_pipe;

static long key_of(const kv_pipe *p, const char *subject)
{
    if (!subject || strlen(subject) <= p->prefix_len + 1 || subject[p->prefix_len] != 'p')
        return -1;
    char *end = NULL;
    long k = strtol(subject + p->prefix_len + 1, &end, 10);
    return (*end == '\0' && k >= 0 && k < p->keys) ? k : -1;
}

/* nats.c thread: one call per CAS; owns and destroys msg. */
static void pipe_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    kv_pipe *p = closure;
    long k = key_of(p, natsMsg_GetSubject(msg));
    pthread_mutex_lock(&p->mu);
    if (k >= 0 && pa && !pae) {
        p->rev[k] = pa->Sequence;
        p->ok++;
    } else if (k >= 0 && pae && pae->ErrCode == JSStreamWrongLastSequenceErr) {
        p->conflicts++;
    } else {
        if (p->failed++ == 0) {
            p->first_code = pae ? (int)pae->ErrCode : 0;
            p->first_status = pae ? pae->Err : NATS_ERR;
        }
    }
    if (k >= 0) {
        p->ring[(p->head + p->count) % p->keys] = (int)k;
        p->count++;
        pthread_cond_signal(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    natsMsg_Destroy(msg);
}

/* Takes a key with nothing in flight, waiting up to 5 s for an ack. */
static int pipe_take(kv_pipe *p, int *key, uint64_t *rev)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    int rc = 0;
    pthread_mutex_lock(&p->mu);
    while (p->count == 0 && rc == 0)
        rc = pthread_cond_timedwait(&p->cv, &p->mu, &deadline);
    if (p->count > 0) {
        *key = p->ring[p->head];
        *rev = p->rev[*key];
        p->head = (p->head + 1) % p->keys;
        p->count--;
        rc = 0;
    }
    pthread_mutex_unlock(&p->mu);
    if (rc != 0)
        fprintf(stderr, "raw: kv-pipelined: no CAS acked for 5 s\n");
    return rc == 0 ? 0 : -1;
}

/* Sends one CAS for key k expecting revision `expect` (0 = unconditional put), with
 * Nats-Msg-Id msg_id unless NULL. */
static int pipe_send(jsCtx *js, const char *bucket, int k, uint64_t expect, const char *msg_id,
                     const char *payload, int len)
{
    char subj[128];
    natsMsg *m = NULL;
    snprintf(subj, sizeof subj, "$KV.%s.p%d", bucket, k);
    if (natsMsg_Create(&m, subj, NULL, payload, len) != NATS_OK) {
        fprintf(stderr, "raw: message: %s\n", nats_GetLastError(NULL));
        return -1;
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.ExpectLastSubjectSeq = expect;
    po.MsgId = msg_id;
    natsStatus s;
    while ((s = js_PublishMsgAsync(js, &m, &po)) == NATS_TIMEOUT)
        ;
    natsMsg_Destroy(m); /* no-op once js_PublishMsgAsync took it */
    if (s != NATS_OK) {
        fprintf(stderr, "raw: kv-pipelined publish: %s\n", nats_GetLastError(NULL));
        return -1;
    }
    return 0;
}

static int pipe_complete(jsCtx *js, const char *what)
{
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 30000;
    if (js_PublishAsyncComplete(js, &po) != NATS_OK) {
        fprintf(stderr, "raw: kv-pipelined %s: acks missing after 30 s\n", what);
        return -1;
    }
    return 0;
}

/* Called once no CAS is in flight; the lock only orders us after the handlers. */
static int pipe_verify(kv_pipe *p, kvStore *kv, long long sent)
{
    pthread_mutex_lock(&p->mu);
    bool ok = p->ok == sent && p->conflicts == 0 && p->failed == 0;
    if (!ok)
        fprintf(stderr,
                "raw: kv-pipelined: sent %lld, acked %lld, conflicts %lld, failed %lld "
                "(first failure: %s, jsErrCode %d)\n",
                sent, p->ok, p->conflicts, p->failed, natsStatus_GetText(p->first_status),
                p->first_code);
    pthread_mutex_unlock(&p->mu);
    if (!ok)
        return -1;
    for (int k = 0; k < p->keys; k++) {
        char key[32];
        uint64_t rev = 0;
        snprintf(key, sizeof key, "p%d", k);
        if (key_revision(kv, key, &rev) != 0)
            return -1;
        if (rev != p->rev[k]) {
            fprintf(stderr, "raw: kv-pipelined: key %s at revision %llu, tracked %llu\n", key,
                    (unsigned long long)rev, (unsigned long long)p->rev[k]);
            return -1;
        }
    }
    return 0;
}

/* with_id: every timed CAS also carries a unique Nats-Msg-Id, as the runtime's
 * publisher sends them (the server then also keeps each id for dedup). */
static int kv_pipelined(natsConnection *nc, const gf_raw_opts *o, bool with_id, gf_raw_rate *rate,
                        long long *conflicts)
{
    int rc = -1;
    bool quiet = false; /* true once no ack can arrive any more */
    jsCtx *js = NULL;
    kvStore *kv = NULL;
    char *payload = NULL;
    char bucket[64];
    kv_pipe *p = calloc(1, sizeof *p);

    if (p) {
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cv, NULL);
    }
    bucket_name(o, bucket, sizeof bucket);
    payload = malloc((size_t)o->payload);
    if (!p || !payload || !(p->rev = calloc((size_t)o->keys, sizeof *p->rev)) ||
        !(p->ring = calloc((size_t)o->keys, sizeof *p->ring))) {
        fprintf(stderr, "raw: out of memory\n");
        quiet = true;
        goto out;
    }
    p->keys = o->keys;
    p->prefix_len = strlen("$KV.") + strlen(bucket) + 1;

    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = o->keys + 16; /* one CAS per key in flight, never stalls */
    jo.PublishAsync.AckHandler = pipe_ack;
    jo.PublishAsync.AckHandlerClosure = p;
    if (natsConnection_JetStream(&js, nc, &jo) != NATS_OK) {
        fprintf(stderr, "raw: JetStream context: %s\n", nats_GetLastError(NULL));
        quiet = true;
        goto out;
    }
    kv = open_bucket(js, o);
    if (!kv) {
        quiet = true;
        goto out;
    }

    /* Untimed: one plain put per key gives every key a first revision. */
    gf_raw_fill_payload(payload, o->payload, 0);
    for (int k = 0; k < o->keys; k++) {
        if (pipe_send(js, bucket, k, 0, NULL, payload, o->payload) != 0)
            goto out;
    }
    if (pipe_complete(js, "setup") != 0)
        goto out;
    quiet = true;
    pthread_mutex_lock(&p->mu);
    long long written = p->ok, failed = p->failed;
    p->ok = 0;
    pthread_mutex_unlock(&p->mu);
    if (written != o->keys || failed != 0) {
        fprintf(stderr, "raw: kv-pipelined setup: %lld of %d keys written\n", written, o->keys);
        goto out;
    }
    quiet = false;

    fprintf(stderr, "raw: [kv-pipelined] CAS on %d distinct keys, one in flight per key\n",
            o->keys);
    long long sent = 0;
    double t0 = gf_raw_now(), last = t0;
    while (!gf_raw_done(o, t0, sent)) {
        int k = 0;
        uint64_t expect = 0;
        if (pipe_take(p, &k, &expect) != 0)
            goto out;
        char id[48];
        snprintf(id, sizeof id, "%s-c%d-%lld", o->run_id, with_id, sent);
        gf_raw_fill_payload(payload, o->payload, (uint64_t)sent);
        if (pipe_send(js, bucket, k, expect, with_id ? id : NULL, payload, o->payload) != 0)
            goto out;
        sent++;
        if ((sent & 1023) == 0) {
            pthread_mutex_lock(&p->mu);
            bool trouble = p->conflicts || p->failed;
            pthread_mutex_unlock(&p->mu);
            if (trouble)
                break; /* reported by pipe_verify */
            gf_raw_progress("kv-pipelined", t0, sent, &last);
        }
    }
    if (pipe_complete(js, "run") != 0)
        goto out;
    rate->secs = gf_raw_now() - t0;
    rate->count = sent;
    quiet = true;
    pthread_mutex_lock(&p->mu);
    *conflicts = p->conflicts;
    pthread_mutex_unlock(&p->mu);
    if (pipe_verify(p, kv, sent) != 0)
        goto out;

    /* The stale-CAS probe: an async CAS from an old revision must conflict. */
    pthread_mutex_lock(&p->mu);
    uint64_t before = p->rev[0];
    pthread_mutex_unlock(&p->mu);
    quiet = false;
    if (pipe_send(js, bucket, 0, before > 1 ? before - 1 : before + 1, NULL, payload, o->payload) !=
            0 ||
        pipe_complete(js, "probe") != 0)
        goto out;
    quiet = true;
    pthread_mutex_lock(&p->mu);
    bool rejected = p->conflicts == 1 && p->rev[0] == before;
    pthread_mutex_unlock(&p->mu);
    if (!rejected) {
        fprintf(stderr, "raw: kv-pipelined: a stale CAS was not rejected\n");
        goto out;
    }
    rc = 0;
out:
    kvStore_Destroy(kv);
    jsCtx_Destroy(js);
    free(payload);
    if (p && quiet) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p->rev);
        free(p->ring);
        free(p);
    }
    return rc;
}

int gf_raw_kv_pipelined(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r)
{
    return kv_pipelined(nc, o, false, &r->kv_pipe, &r->kv_pipe_conflicts);
}

int gf_raw_kv_pipelined_msgid(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r)
{
    return kv_pipelined(nc, o, true, &r->kv_pipe_msgid, &r->kv_pipe_msgid_conflicts);
}

void gf_raw_kv_cleanup(natsConnection *nc, const gf_raw_opts *o)
{
    jsCtx *js = NULL;
    char bucket[64];
    bucket_name(o, bucket, sizeof bucket);
    if (natsConnection_JetStream(&js, nc, NULL) != NATS_OK)
        return;
    natsStatus s = js_DeleteKeyValue(js, bucket);
    if (s != NATS_OK && s != NATS_NOT_FOUND)
        fprintf(stderr, "raw: could not delete KV bucket %s: %s\n", bucket,
                nats_GetLastError(NULL));
    jsCtx_Destroy(js);
}
