/*
 * publish_util.c — helpers for the publisher's integration tests (publish_util.h).
 */
#include "publish_util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "harness_util.h"

void pt_env_start(pt_env *e, int nodes)
{
    const char *urls[3];
    memset(e, 0, sizeof *e);
    if (nodes == 1) {
        assert_int_equal(gf_natsd_start(NULL, &e->srv), 0);
        urls[0] = gf_natsd_url(e->srv);
    } else {
        assert_int_equal(nodes, 3);
        assert_int_equal(gf_natsd_cluster_start(3, NULL, &e->cluster), 0);
        for (int i = 0; i < 3; i++)
            urls[i] = gf_natsd_url(gf_natsd_cluster_node(e->cluster, i));
    }
    e->nc = th_connect(urls, nodes);
    e->js = th_js(e->nc);
}

void pt_env_stop(pt_env *e)
{
    jsCtx_Destroy(e->js);
    natsConnection_Destroy(e->nc);
    gf_natsd_free(e->srv);
    gf_natsd_cluster_free(e->cluster);
}

pt_tally *pt_tally_new(int n)
{
    pt_tally *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->items = calloc((size_t)n, sizeof *t->items);
    assert_non_null(t->items);
    t->n = n;
    for (int i = 0; i < n; i++) {
        t->items[i].tally = t;
        t->items[i].index = i;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    return t;
}

void pt_tally_free(pt_tally *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->items);
    free(t);
}

void pt_done(const gf_publish_result *res, void *closure)
{
    pt_item *it = closure;
    pt_tally *t = it->tally;
    int in_flight = t->pub ? gf_publish_in_flight(t->pub) : 0;
    int64_t now = gf_clock_mono_ms();
    pthread_mutex_lock(&t->mu);
    it->calls++;
    it->res = *res;
    it->done_ms = now;
    t->done++;
    if (in_flight > t->max_in_flight_seen)
        t->max_in_flight_seen = in_flight;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

bool pt_wait_done(pt_tally *t, int count, long long timeout_ms)
{
    int64_t deadline = gf_clock_mono_ms() + timeout_ms;
    pthread_mutex_lock(&t->mu);
    while (t->done < count) {
        int64_t now = gf_clock_mono_ms();
        if (now >= deadline)
            break;
        struct timespec ts = {.tv_sec = deadline / 1000, .tv_nsec = (deadline % 1000) * 1000000L};
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);
    }
    bool ok = t->done >= count;
    pthread_mutex_unlock(&t->mu);
    return ok;
}

int pt_done_count(pt_tally *t)
{
    pthread_mutex_lock(&t->mu);
    int n = t->done;
    pthread_mutex_unlock(&t->mu);
    return n;
}

void pt_assert_once(pt_tally *t, int *ok, int *dup, int *timeout, int *other)
{
    int counts[4] = {0};
    pthread_mutex_lock(&t->mu);
    for (int i = 0; i < t->n; i++) {
        const pt_item *it = &t->items[i];
        if (it->calls != 1) {
            pthread_mutex_unlock(&t->mu);
            fail_msg("message %d: %d callbacks", i, it->calls);
        }
        if (it->res.err == GF_OK)
            counts[it->res.duplicate ? 1 : 0]++;
        else if (it->res.err == GF_ERR_TIMEOUT)
            counts[2]++;
        else
            counts[3]++;
    }
    pthread_mutex_unlock(&t->mu);
    if (ok)
        *ok = counts[0];
    if (dup)
        *dup = counts[1];
    if (timeout)
        *timeout = counts[2];
    if (other)
        *other = counts[3];
}

void pt_send(gf_publish *p, pt_tally *t, const char *subject, const char *prefix, int i)
{
    char id[64], body[32];
    snprintf(id, sizeof id, "%s-%d", prefix, i);
    int len = snprintf(body, sizeof body, "m%d", i);
    gf_publish_msg m = {.subject = subject,
                        .msg_id = id,
                        .data = body,
                        .len = (size_t)len,
                        .done = pt_done,
                        .closure = &t->items[i]};
    pthread_mutex_lock(&t->mu);
    t->items[i].sent_ms = gf_clock_mono_ms();
    pthread_mutex_unlock(&t->mu);
    gf_err err = gf_publish_send(p, &m);
    if (err != GF_OK)
        fail_msg("send %s: %s", id, gf_err_str(err));
}

char **pt_read_ids(jsCtx *js, const char *stream, uint64_t expect)
{
    char durable[64];
    snprintf(durable, sizeof durable, "readback%lld", (long long)gf_clock_mono_ns());
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = durable;
    cc.AckPolicy = js_AckExplicit;
    cc.DeliverPolicy = js_DeliverAll;
    cc.MaxAckPending = (int64_t)expect + 1000;
    natsSubscription *sub = th_pull_consumer(js, stream, &cc);
    natsStatus s = NATS_ERR;
    jsErrCode jerr = 0;
    char **ids = calloc(expect ? expect : 1, sizeof *ids);
    assert_non_null(ids);
    uint64_t got = 0;
    int empty = 0;
    while (got < expect && empty < 10) {
        natsMsgList list = {0};
        s = natsSubscription_Fetch(&list, sub, 1000, 2000, &jerr);
        if (s != NATS_OK) {
            empty++;
            continue;
        }
        for (int i = 0; i < list.Count; i++) {
            jsMsgMetaData *md = NULL;
            assert_int_equal(natsMsg_GetMetaData(&md, list.Msgs[i]), NATS_OK);
            uint64_t seq = md->Sequence.Stream;
            jsMsgMetaData_Destroy(md);
            if (seq < 1 || seq > expect)
                fail_msg("%s: message at seq %llu, expected %llu in all", stream,
                         (unsigned long long)seq, (unsigned long long)expect);
            const char *id = NULL;
            if (natsMsgHeader_Get(list.Msgs[i], "Nats-Msg-Id", &id) == NATS_OK && !ids[seq - 1])
                ids[seq - 1] = strdup(id);
            got++;
        }
        natsMsgList_Destroy(&list);
    }
    natsSubscription_Destroy(sub);
    js_DeleteConsumer(js, stream, durable, NULL, NULL);
    if (got != expect)
        fail_msg("%s: read %llu messages, expected %llu", stream, (unsigned long long)got,
                 (unsigned long long)expect);
    return ids;
}

void pt_ids_free(char **ids, uint64_t n)
{
    for (uint64_t i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
}

gf_natsd *pt_stream_leader(gf_natsd_cluster *c, jsCtx *js, const char *stream)
{
    for (int64_t until = gf_clock_mono_ms() + 20000; gf_clock_mono_ms() < until;) {
        jsStreamInfo *si = NULL;
        gf_natsd *found = NULL;
        if (js_GetStreamInfo(&si, js, stream, NULL, NULL) == NATS_OK && si->Cluster &&
            si->Cluster->Leader) {
            for (int i = 0; i < gf_natsd_cluster_size(c); i++) {
                gf_natsd *n = gf_natsd_cluster_node(c, i);
                if (strcmp(gf_natsd_name(n), si->Cluster->Leader) == 0)
                    found = n;
            }
        }
        jsStreamInfo_Destroy(si);
        if (found)
            return found;
        nats_Sleep(200);
    }
    return NULL;
}

/* ---- pipelined CAS ---- */

typedef struct pt_cas_key {
    pt_cas_pipe *cp;
    int k;
    uint64_t rev; /* of its last acknowledged write */
    int writes;
} pt_cas_key;

struct pt_cas_pipe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char bucket[64];
    int nkeys;
    pt_cas_key *keys;
    int *ready; /* keys with nothing in flight */
    int nready;
    int done;
    int bad[GF_ERR__COUNT];
};

pt_cas_pipe *pt_cas_pipe_new(const char *bucket, int keys)
{
    pt_cas_pipe *cp = calloc(1, sizeof *cp);
    assert_non_null(cp);
    snprintf(cp->bucket, sizeof cp->bucket, "%s", bucket);
    cp->nkeys = keys;
    cp->keys = calloc((size_t)keys, sizeof *cp->keys);
    cp->ready = calloc((size_t)keys, sizeof *cp->ready);
    assert_true(cp->keys && cp->ready);
    for (int k = 0; k < keys; k++)
        cp->keys[k] = (pt_cas_key){.cp = cp, .k = k};
    pthread_mutex_init(&cp->mu, NULL);
    pthread_cond_init(&cp->cv, NULL);
    return cp;
}

void pt_cas_pipe_free(pt_cas_pipe *cp)
{
    if (!cp)
        return;
    pthread_mutex_destroy(&cp->mu);
    pthread_cond_destroy(&cp->cv);
    free(cp->keys);
    free(cp->ready);
    free(cp);
}

/* Publisher callback thread. */
static void cas_done(const gf_publish_result *res, void *closure)
{
    pt_cas_key *ck = closure;
    pt_cas_pipe *cp = ck->cp;
    pthread_mutex_lock(&cp->mu);
    if (res->err == GF_OK) {
        ck->rev = res->seq;
        ck->writes++;
    } else {
        cp->bad[res->err]++;
    }
    cp->done++;
    cp->ready[cp->nready++] = ck->k;
    pthread_cond_signal(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
}

static void cas_send(pt_cas_pipe *cp, gf_publish *p, int k, uint64_t rev, int n)
{
    char key[32], value[32];
    snprintf(key, sizeof key, "k.%d", k);
    snprintf(value, sizeof value, "v%d", n);
    gf_publish_cas c = {.kind = rev ? GF_PUBLISH_CAS_UPDATE : GF_PUBLISH_CAS_CREATE,
                        .bucket = cp->bucket,
                        .key = key,
                        .revision = rev,
                        .data = value,
                        .len = strlen(value),
                        .done = cas_done,
                        .closure = &cp->keys[k]};
    assert_int_equal(gf_publish_cas_send(p, &c), GF_OK);
}

void pt_cas_pipe_run(pt_cas_pipe *cp, gf_publish *p, int total, int at, void (*at_fn)(void *),
                     void *arg)
{
    for (int sent = 0; sent < total; sent++) {
        if (at_fn && sent == at)
            at_fn(arg);
        if (sent < cp->nkeys) {
            cas_send(cp, p, sent, 0, 0);
            continue;
        }
        pthread_mutex_lock(&cp->mu);
        while (cp->nready == 0)
            pthread_cond_wait(&cp->cv, &cp->mu);
        int k = cp->ready[--cp->nready];
        uint64_t rev = cp->keys[k].rev;
        int n = cp->keys[k].writes;
        pthread_mutex_unlock(&cp->mu);
        cas_send(cp, p, k, rev, n);
    }
    assert_int_equal(gf_publish_flush(p, 120000), GF_OK);
}

void pt_cas_pipe_verify(pt_cas_pipe *cp, jsCtx *js, int total)
{
    char stream[80];
    snprintf(stream, sizeof stream, "KV_%s", cp->bucket);
    for (int i = 1; i < GF_ERR__COUNT; i++)
        if (cp->bad[i])
            fail_msg("%d CAS ended with %s", cp->bad[i], gf_err_str((gf_err)i));
    assert_int_equal(cp->done, total);
    int writes = 0;
    for (int k = 0; k < cp->nkeys; k++) {
        char subject[96], want[32];
        snprintf(subject, sizeof subject, "$KV.%s.k.%d", cp->bucket, k);
        snprintf(want, sizeof want, "v%d", cp->keys[k].writes - 1);
        natsMsg *m = NULL;
        natsStatus s = NATS_ERR;
        for (int64_t until = gf_clock_mono_ms() + 10000; gf_clock_mono_ms() < until;) {
            if ((s = js_GetLastMsg(&m, js, stream, subject, NULL, NULL)) == NATS_OK)
                break;
            nats_Sleep(100); /* a new leader may still be settling */
        }
        assert_int_equal(s, NATS_OK);
        assert_int_equal(natsMsg_GetSequence(m), cp->keys[k].rev);
        assert_int_equal(natsMsg_GetDataLength(m), (int)strlen(want));
        assert_memory_equal(natsMsg_GetData(m), want, strlen(want));
        natsMsg_Destroy(m);
        writes += cp->keys[k].writes;
    }
    assert_int_equal(writes, total);
}
