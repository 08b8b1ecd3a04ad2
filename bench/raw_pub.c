/*
 * raw_pub.c — `gamefn-bench raw` phases measured through the runtime's reliable
 * publisher (gamefn/publish.h), next to the raw nats.c rates of the same run:
 * - publish_reliable: what raw_js.c's async publish does (same payload, a unique
 *   Msg-Id per message, window = --max-pending, R1 file stream), through
 *   gf_publish_send;
 * - kv_cas_async: what raw_kv.c's pipelined CAS does (same --keys distinct keys,
 *   one CAS in flight per key, each from the revision its last ack gave), through
 *   gf_publish_cas_send, which also stamps every CAS with a unique Msg-Id.
 *
 * Design notes:
 * - Each phase verifies like its raw twin, or prints no figure: every message
 *   acked once (none duplicate, failed or given up) and the stream holds exactly that
 *   many; every key's server revision equals the one tracked, and a deliberately
 *   stale CAS IS refused with GF_ERR_CONFLICT / 10071.
 * - Counters are written by the publisher's callback threads: atomics for the
 *   publish, a mutex for the CAS ring. The publisher is closed (every callback
 *   returned) before its state is freed.
 */
#include "raw.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/publish.h"

typedef struct rel_state {
    atomic_llong ok, dup, failed;
    atomic_int first_err, first_code;
} rel_state;

/* Publisher callback thread: one call per message. */
static void rel_done(const gf_publish_result *res, void *closure)
{
    rel_state *st = closure;
    if (res->err == GF_OK && !res->duplicate) {
        atomic_fetch_add(&st->ok, 1);
        return;
    }
    if (res->err == GF_OK)
        atomic_fetch_add(&st->dup, 1);
    else if (atomic_fetch_add(&st->failed, 1) == 0) {
        atomic_store(&st->first_err, (int)res->err);
        atomic_store(&st->first_code, res->js_code);
    }
}

static gf_publish *open_publisher(natsConnection *nc, int window)
{
    gf_publish *p = NULL;
    gf_err err = gf_publish_open(nc, &(gf_publish_opts){.max_in_flight = window}, &p);
    if (err != GF_OK)
        fprintf(stderr, "raw: open publisher: %s\n", gf_err_str(err));
    return p;
}

int gf_raw_publish_reliable(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r)
{
    int rc = -1;
    jsCtx *js = NULL;
    gf_publish *p = NULL;
    jsStreamInfo *si = NULL;
    rel_state st = {0};
    char *payload = malloc((size_t)o->payload);
    char subjects[64], subj[64];
    snprintf(r->rel_stream, sizeof r->rel_stream, "BENCHREL_%s", o->run_id);
    snprintf(subjects, sizeof subjects, "benchrel.%s.>", o->run_id);
    snprintf(subj, sizeof subj, "benchrel.%s.pub", o->run_id);
    if (!payload || natsConnection_JetStream(&js, nc, NULL) != NATS_OK ||
        gf_raw_create_stream(js, r->rel_stream, subjects) != 0 ||
        !(p = open_publisher(nc, o->max_pending)))
        goto out;

    fprintf(stderr, "raw: [publish-reliable] gf_publish_send, unique Msg-Id, window %d\n",
            o->max_pending);
    long long sent = 0;
    double t0 = gf_raw_now(), last = t0;
    while (!gf_raw_done(o, t0, sent)) {
        char id[48];
        snprintf(id, sizeof id, "%s-r%lld", o->run_id, sent);
        gf_raw_fill_payload(payload, o->payload, (uint64_t)sent);
        gf_publish_msg m = {.subject = subj,
                            .msg_id = id,
                            .data = payload,
                            .len = (size_t)o->payload,
                            .done = rel_done,
                            .closure = &st};
        gf_err err = gf_publish_send(p, &m);
        if (err != GF_OK) {
            fprintf(stderr, "raw: publish-reliable %lld: %s\n", sent, gf_err_str(err));
            goto out;
        }
        sent++;
        if ((sent & 1023) == 0)
            gf_raw_progress("publish-reliable", t0, sent, &last);
    }
    if (gf_publish_flush(p, 30000) != GF_OK) {
        fprintf(stderr, "raw: publish-reliable: callbacks still missing after 30 s\n");
        goto out;
    }
    r->publish_reliable.secs = gf_raw_now() - t0;
    r->publish_reliable.count = sent;
    if (atomic_load(&st.ok) != sent || atomic_load(&st.dup) || atomic_load(&st.failed)) {
        fprintf(stderr,
                "raw: publish-reliable: sent %lld, acked %lld, duplicate %lld, failed %lld "
                "(first: %s, jsErrCode %d)\n",
                sent, atomic_load(&st.ok), atomic_load(&st.dup), atomic_load(&st.failed),
                gf_err_str((gf_err)atomic_load(&st.first_err)), atomic_load(&st.first_code));
        goto out;
    }
    if (js_GetStreamInfo(&si, js, r->rel_stream, NULL, NULL) != NATS_OK ||
        si->State.Msgs != (uint64_t)sent) {
        fprintf(stderr, "raw: publish-reliable: stream holds %llu messages, expected %lld\n",
                si ? (unsigned long long)si->State.Msgs : 0ULL, sent);
        goto out;
    }
    rc = 0;
out:
    gf_publish_close(p, 30000); /* every callback has returned after this */
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    free(payload);
    return rc;
}

/* ---- pipelined CAS through the publisher ---- */

typedef struct cas_key {
    struct cas_pipe *pipe;
    int k;
    uint64_t rev; /* of its last acked CAS */
} cas_key;

typedef struct cas_pipe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cas_key *keys;
    int nkeys;
    int *ring; /* keys with nothing in flight, oldest first (as raw_kv.c) */
    int head, nfree;
    long long ok, dup, conflicts, failed;
    gf_err first_err;
} cas_pipe;

/* Publisher callback thread: one call per CAS. */
static void cas_done(const gf_publish_result *res, void *closure)
{
    cas_key *ck = closure;
    cas_pipe *cp = ck->pipe;
    pthread_mutex_lock(&cp->mu);
    if (res->err == GF_OK) {
        ck->rev = res->seq;
        cp->ok++;
        cp->dup += res->duplicate; /* a resend after an attempt timed out */
    } else if (res->err == GF_ERR_CONFLICT) {
        cp->conflicts++;
    } else if (cp->failed++ == 0) {
        cp->first_err = res->err;
    }
    cp->ring[(cp->head + cp->nfree++) % cp->nkeys] = ck->k;
    pthread_cond_signal(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
}

static int cas_send(gf_publish *p, const char *bucket, cas_key *ck, const char *payload, int len)
{
    char key[32];
    snprintf(key, sizeof key, "p%d", ck->k);
    gf_publish_cas c = {.kind = ck->rev ? GF_PUBLISH_CAS_UPDATE : GF_PUBLISH_CAS_CREATE,
                        .bucket = bucket,
                        .key = key,
                        .revision = ck->rev,
                        .data = payload,
                        .len = (size_t)len,
                        .done = cas_done,
                        .closure = ck};
    gf_err err = gf_publish_cas_send(p, &c);
    if (err != GF_OK)
        fprintf(stderr, "raw: kv-cas-async send: %s\n", gf_err_str(err));
    return err == GF_OK ? 0 : -1;
}

/* Takes a key with nothing in flight (its revision read under the lock). */
static cas_key *cas_take(cas_pipe *cp)
{
    int64_t deadline = gf_clock_mono_ms() + 5000;
    cas_key *ck = NULL;
    pthread_mutex_lock(&cp->mu);
    while (cp->nfree == 0 && gf_clock_mono_ms() < deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&cp->cv, &cp->mu, &ts);
    }
    if (cp->nfree > 0) {
        ck = &cp->keys[cp->ring[cp->head]];
        cp->head = (cp->head + 1) % cp->nkeys;
        cp->nfree--;
    }
    pthread_mutex_unlock(&cp->mu);
    if (!ck)
        fprintf(stderr, "raw: kv-cas-async: no CAS acked for 5 s\n");
    return ck;
}

/* Every key's revision on the server equals the tracked one; a stale CAS loses. */
static int cas_verify(gf_publish *p, jsCtx *js, const char *bucket, cas_pipe *cp, int keys,
                      const char *payload, int len)
{
    kvStore *kv = NULL;
    if (js_KeyValue(&kv, js, bucket) != NATS_OK) {
        fprintf(stderr, "raw: bind %s: %s\n", bucket, nats_GetLastError(NULL));
        return -1;
    }
    int rc = 0;
    for (int k = 0; k < keys && rc == 0; k++) {
        char key[32];
        kvEntry *e = NULL;
        snprintf(key, sizeof key, "p%d", k);
        if (kvStore_Get(&e, kv, key) != NATS_OK || kvEntry_Revision(e) != cp->keys[k].rev) {
            fprintf(stderr, "raw: kv-cas-async: key %s at revision %llu, tracked %llu\n", key,
                    e ? (unsigned long long)kvEntry_Revision(e) : 0ULL,
                    (unsigned long long)cp->keys[k].rev);
            rc = -1;
        }
        kvEntry_Destroy(e);
    }
    kvStore_Destroy(kv);
    gf_publish_cas stale = {.kind = GF_PUBLISH_CAS_UPDATE,
                            .bucket = bucket,
                            .key = "p0",
                            .revision = cp->keys[0].rev - 1,
                            .data = payload,
                            .len = (size_t)len};
    gf_publish_result res;
    if (rc == 0 && (gf_publish_cas_sync(p, &stale, &res) != GF_ERR_CONFLICT ||
                    res.js_code != JSStreamWrongLastSequenceErr)) {
        fprintf(stderr, "raw: kv-cas-async: a stale CAS was not refused (%s, %d)\n",
                gf_err_str(res.err), res.js_code);
        rc = -1;
    }
    return rc;
}

int gf_raw_kv_cas_async(natsConnection *nc, const gf_raw_opts *o, gf_raw_results *r)
{
    int rc = -1;
    jsCtx *js = NULL;
    kvStore *kv = NULL;
    gf_publish *p = NULL;
    char *payload = malloc((size_t)o->payload);
    cas_pipe cp = {.keys = calloc((size_t)o->keys, sizeof *cp.keys),
                   .nkeys = o->keys,
                   .ring = calloc((size_t)o->keys, sizeof *cp.ring)};
    pthread_mutex_init(&cp.mu, NULL);
    pthread_cond_init(&cp.cv, NULL);
    snprintf(r->rel_bucket, sizeof r->rel_bucket, "benchrel_%s", o->run_id);
    const char *bucket = r->rel_bucket;
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = bucket;
    kc.History = 1;
    kc.StorageType = js_FileStorage;
    if (!payload || !cp.keys || !cp.ring || natsConnection_JetStream(&js, nc, NULL) != NATS_OK ||
        js_CreateKeyValue(&kv, js, &kc) != NATS_OK || !(p = open_publisher(nc, o->keys + 16))) {
        fprintf(stderr, "raw: kv-cas-async setup: %s\n", nats_GetLastError(NULL));
        goto out;
    }

    /* Untimed: a create per key gives every key its first revision. */
    gf_raw_fill_payload(payload, o->payload, 0);
    for (int k = 0; k < o->keys; k++) {
        cp.keys[k] = (cas_key){.pipe = &cp, .k = k};
        if (cas_send(p, bucket, &cp.keys[k], payload, o->payload) != 0)
            goto out;
    }
    if (gf_publish_flush(p, 30000) != GF_OK || cp.ok != o->keys) {
        fprintf(stderr, "raw: kv-cas-async setup: %lld of %d keys created\n", cp.ok, o->keys);
        goto out;
    }
    cp.ok = cp.dup = 0; /* no callback runs between the flush and the next send */

    fprintf(stderr, "raw: [kv-cas-async] gf_publish_cas_send on %d keys, one in flight per key\n",
            o->keys);
    long long sent = 0;
    double t0 = gf_raw_now(), last = t0;
    while (!gf_raw_done(o, t0, sent)) {
        cas_key *ck = cas_take(&cp);
        if (!ck)
            goto out;
        gf_raw_fill_payload(payload, o->payload, (uint64_t)sent);
        if (cas_send(p, bucket, ck, payload, o->payload) != 0)
            goto out;
        sent++;
        if ((sent & 1023) == 0)
            gf_raw_progress("kv-cas-async", t0, sent, &last);
    }
    if (gf_publish_flush(p, 30000) != GF_OK) {
        fprintf(stderr, "raw: kv-cas-async: callbacks still missing after 30 s\n");
        goto out;
    }
    r->kv_cas_async.secs = gf_raw_now() - t0;
    r->kv_cas_async.count = sent;
    if (cp.ok != sent || cp.dup || cp.conflicts || cp.failed) {
        fprintf(stderr,
                "raw: kv-cas-async: sent %lld, acked %lld (%lld after a resend), conflicts %lld, "
                "failed %lld (%s)\n",
                sent, cp.ok, cp.dup, cp.conflicts, cp.failed, gf_err_str(cp.first_err));
        goto out;
    }
    if (cas_verify(p, js, bucket, &cp, o->keys, payload, o->payload) != 0)
        goto out;
    rc = 0;
out:
    gf_publish_close(p, 30000); /* every callback has returned after this */
    kvStore_Destroy(kv);
    jsCtx_Destroy(js);
    pthread_mutex_destroy(&cp.mu);
    pthread_cond_destroy(&cp.cv);
    free(cp.keys);
    free(cp.ring);
    free(payload);
    return rc;
}

void gf_raw_pub_cleanup(natsConnection *nc, const gf_raw_results *r)
{
    jsCtx *js = NULL;
    if (natsConnection_JetStream(&js, nc, NULL) != NATS_OK)
        return;
    if (r->rel_stream[0] && js_DeleteStream(js, r->rel_stream, NULL, NULL) != NATS_OK)
        fprintf(stderr, "raw: could not delete stream %s\n", r->rel_stream);
    if (r->rel_bucket[0] && js_DeleteKeyValue(js, r->rel_bucket) != NATS_OK)
        fprintf(stderr, "raw: could not delete KV bucket %s\n", r->rel_bucket);
    jsCtx_Destroy(js);
}
