/*
 * test_publish_cluster.c — gamefn/publish.h on a 3-node nats-server cluster while the
 * stream leader is SIGKILLed:
 * - publishing continuously to an R3 stream, every message completes GF_OK (none is
 *   given up) and afterwards the stream holds every Msg-Id exactly once, at the
 *   sequence its callback reported;
 * - pipelined CAS on an R3 KV bucket, one writer per key: every CAS completes GF_OK
 *   and each key ends at exactly the value and revision its last callback reported,
 *   so no acknowledged update is lost and no lost ack is mistaken for a conflict.
 * The kill happens on the main thread while sends continue (the harness's rule).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "harness_util.h"
#include "publish_util.h"

typedef struct env {
    gf_natsd_cluster *c;
    natsConnection *nc;
    jsCtx *js;
} env;

static void env_start(env *e)
{
    memset(e, 0, sizeof *e);
    assert_int_equal(gf_natsd_cluster_start(3, NULL, &e->c), 0);
    const char *urls[3];
    for (int i = 0; i < 3; i++)
        urls[i] = gf_natsd_url(gf_natsd_cluster_node(e->c, i));
    e->nc = th_connect(urls, 3);
    e->js = th_js(e->nc);
}

static void env_stop(env *e)
{
    jsCtx_Destroy(e->js);
    natsConnection_Destroy(e->nc);
    gf_natsd_cluster_free(e->c);
}

static void kill_leader(env *e, const char *stream)
{
    gf_natsd *leader = pt_stream_leader(e->c, e->js, stream);
    assert_non_null(leader);
    fprintf(stderr, "killing %s, leader of %s\n", gf_natsd_name(leader), stream);
    assert_int_equal(gf_natsd_kill(leader), 0);
}

static void test_publish_through_leader_kill(void **state)
{
    (void)state;
    enum { N = 20000, KILL_AT = 6000 };
    env e;
    env_start(&e);
    th_add_stream(e.js, "FAIL", "fail.>", 3);
    gf_publish *p = NULL;
    assert_int_equal(gf_publish_open(e.nc, &(gf_publish_opts){.max_in_flight = 512}, &p), GF_OK);
    pt_tally *t = pt_tally_new(N);
    int64_t t0 = gf_clock_mono_ms();
    for (int i = 0; i < N; i++) {
        if (i == KILL_AT) {
            assert_true(pt_wait_done(t, KILL_AT / 2, 30000)); /* well under way */
            kill_leader(&e, "FAIL");
        }
        pt_send(p, t, "fail.e", "f", i);
    }
    assert_int_equal(gf_publish_flush(p, 120000), GF_OK);
    int ok = 0, dup = 0, timeout = 0, other = 0;
    pt_assert_once(t, &ok, &dup, &timeout, &other);
    gf_publish_stats st;
    gf_publish_stats_get(p, &st);
    fprintf(stderr,
            "publish failover: %d ok, %d duplicate (a lost ack resent), %lld resends, %.1f s\n", ok,
            dup, st.resends, (double)(gf_clock_mono_ms() - t0) / 1000.0);
    assert_int_equal(timeout + other, 0);
    assert_int_equal(ok + dup, N);
    assert_true(st.resends > 0); /* the failover was really ridden out */

    /* Every Msg-Id exactly once, at the sequence its callback said. */
    assert_int_equal(th_stream_msgs(e.js, "FAIL"), N);
    char **ids = pt_read_ids(e.js, "FAIL", N);
    char *seen = calloc(N, 1);
    assert_non_null(seen);
    for (int s = 0; s < N; s++) {
        int i = -1;
        assert_non_null(ids[s]);
        assert_int_equal(sscanf(ids[s], "f-%d", &i), 1);
        assert_true(i >= 0 && i < N);
        assert_int_equal(seen[i]++, 0);
        assert_int_equal(t->items[i].res.seq, (uint64_t)s + 1);
    }
    free(seen);
    pt_ids_free(ids, N);
    gf_publish_close(p, 5000);
    pt_tally_free(t);
    env_stop(&e);
}

/* ---- CAS through a KV leader kill ---- */

enum { KEYS = 128, TOTAL = 12000, CAS_KILL_AT = 3000 };

typedef struct key_state {
    int k;
    uint64_t rev;
    int writes;
} key_state;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    key_state keys[KEYS];
    int ready[KEYS];
    int nready;
    int done;
    int bad[GF_ERR__COUNT];
} cs;

static void cas_done(const gf_publish_result *res, void *closure)
{
    key_state *ks = closure;
    pthread_mutex_lock(&cs.mu);
    if (res->err == GF_OK) {
        ks->rev = res->seq;
        ks->writes++;
    } else {
        cs.bad[res->err]++;
    }
    cs.done++;
    cs.ready[cs.nready++] = ks->k;
    pthread_cond_signal(&cs.cv);
    pthread_mutex_unlock(&cs.mu);
}

static void cas_send(gf_publish *p, int k, uint64_t rev, int n)
{
    char key[32], value[32];
    snprintf(key, sizeof key, "k.%d", k);
    snprintf(value, sizeof value, "v%d", n);
    gf_publish_cas c = {.kind = rev ? GF_PUBLISH_CAS_UPDATE : GF_PUBLISH_CAS_CREATE,
                        .bucket = "fkv",
                        .key = key,
                        .revision = rev,
                        .data = value,
                        .len = strlen(value),
                        .done = cas_done,
                        .closure = &cs.keys[k]};
    assert_int_equal(gf_publish_cas_send(p, &c), GF_OK);
}

static void test_cas_through_leader_kill(void **state)
{
    (void)state;
    env e;
    env_start(&e);
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = "fkv";
    kc.History = 5; /* lets a lost-ack lookup find the CAS under a later write */
    kc.Replicas = 3;
    kvStore *kv = NULL;
    natsStatus s = NATS_ERR;
    for (int64_t until = gf_clock_mono_ms() + 10000; gf_clock_mono_ms() < until;) {
        if ((s = js_CreateKeyValue(&kv, e.js, &kc)) == NATS_OK)
            break;
        nats_Sleep(100);
    }
    assert_int_equal(s, NATS_OK);
    gf_publish *p = NULL;
    assert_int_equal(gf_publish_open(e.nc, NULL, &p), GF_OK);
    memset(&cs, 0, sizeof cs);
    pthread_mutex_init(&cs.mu, NULL);
    pthread_cond_init(&cs.cv, NULL);
    for (int k = 0; k < KEYS; k++) {
        cs.keys[k].k = k;
        cas_send(p, k, 0, 0);
    }
    bool killed = false;
    for (int sent = KEYS; sent < TOTAL; sent++) {
        if (!killed && sent >= CAS_KILL_AT) {
            kill_leader(&e, "KV_fkv");
            killed = true;
        }
        pthread_mutex_lock(&cs.mu);
        while (cs.nready == 0)
            pthread_cond_wait(&cs.cv, &cs.mu);
        int k = cs.ready[--cs.nready];
        uint64_t rev = cs.keys[k].rev;
        int n = cs.keys[k].writes;
        pthread_mutex_unlock(&cs.mu);
        cas_send(p, k, rev, n);
    }
    assert_int_equal(gf_publish_flush(p, 120000), GF_OK);
    gf_publish_stats st;
    gf_publish_stats_get(p, &st);
    fprintf(stderr,
            "CAS failover: %lld ok (%lld duplicate), %lld conflicts, %lld given up, "
            "%lld resends, %lld lookups\n",
            st.ok, st.duplicates, st.conflicts, st.gave_up, st.resends, st.lookups);
    for (int i = 1; i < GF_ERR__COUNT; i++)
        if (cs.bad[i])
            fail_msg("%d CAS ended with %s", cs.bad[i], gf_err_str((gf_err)i));
    assert_int_equal(cs.done, TOTAL);
    assert_true(st.resends > 0);

    /* No acknowledged update lost: each key holds its last acknowledged write. Read
     * from the stream leader (a direct get may be answered by a lagging replica). */
    int total_writes = 0;
    for (int k = 0; k < KEYS; k++) {
        char subject[32], want[32];
        snprintf(subject, sizeof subject, "$KV.fkv.k.%d", k);
        snprintf(want, sizeof want, "v%d", cs.keys[k].writes - 1);
        natsMsg *m = NULL;
        natsStatus gs = NATS_ERR;
        for (int64_t until = gf_clock_mono_ms() + 10000; gf_clock_mono_ms() < until;) {
            if ((gs = js_GetLastMsg(&m, e.js, "KV_fkv", subject, NULL, NULL)) == NATS_OK)
                break;
            nats_Sleep(100);
        }
        assert_int_equal(gs, NATS_OK);
        assert_int_equal(natsMsg_GetSequence(m), cs.keys[k].rev);
        assert_int_equal(natsMsg_GetDataLength(m), (int)strlen(want));
        assert_memory_equal(natsMsg_GetData(m), want, strlen(want));
        natsMsg_Destroy(m);
        total_writes += cs.keys[k].writes;
    }
    assert_int_equal(total_writes, TOTAL);

    /* A lost ack, simulated: the same Msg-Id and revision again. The cluster refuses it
     * with 10071 before looking at the Msg-Id; the publisher must still say "stored". */
    gf_publish_cas c = {.kind = GF_PUBLISH_CAS_UPDATE,
                        .bucket = "fkv",
                        .key = "k.0",
                        .revision = cs.keys[0].rev,
                        .data = "again",
                        .len = 5,
                        .msg_id = "resend-k0"};
    gf_publish_result a, b, x;
    assert_int_equal(gf_publish_cas_sync(p, &c, &a), GF_OK);
    assert_false(a.duplicate);
    long long lookups = st.lookups;
    assert_int_equal(gf_publish_cas_sync(p, &c, &b), GF_OK);
    assert_true(b.duplicate);
    assert_int_equal(b.seq, a.seq);
    c.msg_id = "resend-k0-other"; /* a different change from the same revision */
    assert_int_equal(gf_publish_cas_sync(p, &c, &x), GF_ERR_CONFLICT);
    assert_int_equal(x.js_code, 10071);
    gf_publish_stats_get(p, &st);
    fprintf(stderr, "lost-ack resend on the cluster: %lld lookups\n", st.lookups - lookups);
    gf_publish_close(p, 5000);
    kvStore_Destroy(kv);
    pthread_mutex_destroy(&cs.mu);
    pthread_cond_destroy(&cs.cv);
    env_stop(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_publish_through_leader_kill),
        cmocka_unit_test(test_cas_through_leader_kill),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
