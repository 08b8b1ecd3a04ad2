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

static void kill_leader(pt_env *e, const char *stream)
{
    gf_natsd *leader = pt_stream_leader(e->cluster, e->js, stream);
    assert_non_null(leader);
    fprintf(stderr, "killing %s, leader of %s\n", gf_natsd_name(leader), stream);
    assert_int_equal(gf_natsd_kill(leader), 0);
}

static void test_publish_through_leader_kill(void **state)
{
    (void)state;
    enum { N = 20000, KILL_AT = 6000 };
    pt_env e;
    pt_env_start(&e, 3);
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
    int64_t longest = 0; /* the stall as messages saw it: send to callback */
    for (int i = 0; i < N; i++)
        if (t->items[i].done_ms - t->items[i].sent_ms > longest)
            longest = t->items[i].done_ms - t->items[i].sent_ms;
    fprintf(stderr,
            "publish failover: %d ok, %d duplicate (a lost ack resent), %lld resends, longest "
            "message %.1f s, all %.1f s\n",
            ok, dup, st.resends, (double)longest / 1000.0,
            (double)(gf_clock_mono_ms() - t0) / 1000.0);
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
    pt_env_stop(&e);
}

/* ---- CAS through a KV leader kill ---- */

static void kill_kv_leader(void *arg)
{
    kill_leader(arg, "KV_fkv");
}

static void test_cas_through_leader_kill(void **state)
{
    (void)state;
    enum { KEYS = 128, TOTAL = 12000, KILL_AT = 3000 };
    pt_env e;
    pt_env_start(&e, 3);
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
    pt_cas_pipe *cp = pt_cas_pipe_new("fkv", KEYS);
    pt_cas_pipe_run(cp, p, TOTAL, KILL_AT, kill_kv_leader, &e);
    gf_publish_stats st;
    gf_publish_stats_get(p, &st);
    fprintf(stderr,
            "CAS failover: %lld ok (%lld duplicate), %lld conflicts, %lld given up, "
            "%lld resends, %lld lookups\n",
            st.ok, st.duplicates, st.conflicts, st.gave_up, st.resends, st.lookups);
    assert_true(st.resends > 0);
    /* No acknowledged update lost: each key holds its last acknowledged write. */
    pt_cas_pipe_verify(cp, e.js, TOTAL);

    /* A lost ack, simulated: the same Msg-Id and revision again. The cluster refuses it
     * with 10071 before looking at the Msg-Id; the publisher must still say "stored". */
    natsMsg *last = NULL;
    assert_int_equal(js_GetLastMsg(&last, e.js, "KV_fkv", "$KV.fkv.k.0", NULL, NULL), NATS_OK);
    gf_publish_cas c = {.kind = GF_PUBLISH_CAS_UPDATE,
                        .bucket = "fkv",
                        .key = "k.0",
                        .revision = natsMsg_GetSequence(last),
                        .data = "again",
                        .len = 5,
                        .msg_id = "resend-k0"};
    natsMsg_Destroy(last);
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
    pt_cas_pipe_free(cp);
    kvStore_Destroy(kv);
    pt_env_stop(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_publish_through_leader_kill),
        cmocka_unit_test(test_cas_through_leader_kill),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
