/*
 * test_publish_kv.c — KV compare-and-set through gamefn/publish.h against one real
 * nats-server: pipelined CAS on many keys ends at exactly the revisions the callbacks
 * reported; two writers racing on the same keys get exactly one winner per key and
 * round, the loser a GF_ERR_CONFLICT with JetStream code 10071; create succeeds over a
 * deleted or purged key and conflicts over a live one; delete-if; a resend of the same
 * Msg-Id and revision (a lost ack) is a success with the original revision. Also the
 * blocking helpers of gamefn/kv.h, which classify refusals without error text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/kv.h"
#include "harness_util.h"
#include "publish_util.h"

typedef struct env {
    pt_env pt;
    kvStore *kv;
    gf_publish *p;
} env;

static void env_start(env *e, const char *bucket, int history)
{
    memset(e, 0, sizeof *e);
    pt_env_start(&e->pt, 1);
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = bucket;
    kc.History = (uint8_t)history;
    assert_int_equal(js_CreateKeyValue(&e->kv, e->pt.js, &kc), NATS_OK);
    assert_int_equal(gf_publish_open(e->pt.nc, NULL, &e->p), GF_OK);
}

static void env_stop(env *e)
{
    gf_publish_close(e->p, 5000);
    kvStore_Destroy(e->kv);
    pt_env_stop(&e->pt);
}

/* The key's value and revision as the server has them. */
static uint64_t kv_value(kvStore *kv, const char *key, char *buf, size_t size)
{
    kvEntry *ent = NULL;
    natsStatus s = kvStore_Get(&ent, kv, key);
    if (s == NATS_NOT_FOUND)
        return 0;
    assert_int_equal(s, NATS_OK);
    snprintf(buf, size, "%.*s", kvEntry_ValueLen(ent), (const char *)kvEntry_Value(ent));
    uint64_t rev = kvEntry_Revision(ent);
    kvEntry_Destroy(ent);
    return rev;
}

static gf_publish_result cas(gf_publish *p, gf_publish_cas_kind kind, const char *key, uint64_t rev,
                             const char *value, const char *msg_id)
{
    gf_publish_cas c = {.kind = kind,
                        .bucket = "kvt",
                        .key = key,
                        .revision = rev,
                        .data = value,
                        .len = value ? strlen(value) : 0,
                        .msg_id = msg_id};
    gf_publish_result res;
    memset(&res, 0, sizeof res);
    gf_err err = gf_publish_cas_sync(p, &c, &res);
    assert_int_equal(err, res.err);
    return res;
}

/* ---- pipelined CAS: one in flight per key, many keys ---- */

static void test_cas_pipelined(void **state)
{
    (void)state;
    enum { KEYS = 256, TOTAL = KEYS * 40 };
    env e;
    env_start(&e, "kvt", 1);
    pt_cas_pipe *cp = pt_cas_pipe_new("kvt", KEYS);
    pt_cas_pipe_run(cp, e.p, TOTAL, 0, NULL, NULL);
    pt_cas_pipe_verify(cp, e.pt.js, TOTAL);
    gf_publish_stats st;
    gf_publish_stats_get(e.p, &st);
    assert_int_equal(st.ok, TOTAL);
    assert_int_equal(st.conflicts, 0);
    assert_int_equal(st.lookups, 0);
    pt_cas_pipe_free(cp);
    env_stop(&e);
}

/* ---- two writers, same keys, same expected revision ---- */

static void test_cas_race_one_winner(void **state)
{
    (void)state;
    enum { RACE_KEYS = 32, RACE_ROUNDS = 20 };
    env e;
    env_start(&e, "kvt", 1);
    const char *url = gf_natsd_url(e.pt.srv);
    natsConnection *nc2 = th_connect(&url, 1);
    gf_publish *p2 = NULL;
    assert_int_equal(gf_publish_open(nc2, NULL, &p2), GF_OK);
    gf_publish *w[2] = {e.p, p2};
    uint64_t rev[RACE_KEYS];
    for (int k = 0; k < RACE_KEYS; k++) {
        char key[16];
        snprintf(key, sizeof key, "r%d", k);
        gf_publish_result r = cas(e.p, GF_PUBLISH_CAS_CREATE, key, 0, "start", NULL);
        assert_int_equal(r.err, GF_OK);
        rev[k] = r.seq;
    }
    for (int round = 0; round < RACE_ROUNDS; round++) {
        pt_tally *t = pt_tally_new(2 * RACE_KEYS);
        for (int k = 0; k < RACE_KEYS; k++) {
            char key[16], value[32];
            snprintf(key, sizeof key, "r%d", k);
            for (int j = 0; j < 2; j++) {
                int who = (k + round + j) % 2; /* alternate who sends first */
                snprintf(value, sizeof value, "w%d-round%d", who, round);
                gf_publish_cas c = {.kind = GF_PUBLISH_CAS_UPDATE,
                                    .bucket = "kvt",
                                    .key = key,
                                    .revision = rev[k],
                                    .data = value,
                                    .len = strlen(value),
                                    .done = pt_done,
                                    .closure = &t->items[2 * k + who]};
                assert_int_equal(gf_publish_cas_send(w[who], &c), GF_OK);
            }
        }
        assert_int_equal(gf_publish_flush(e.p, 30000), GF_OK);
        assert_int_equal(gf_publish_flush(p2, 30000), GF_OK);
        for (int k = 0; k < RACE_KEYS; k++) {
            const gf_publish_result *a = &t->items[2 * k].res, *b = &t->items[2 * k + 1].res;
            assert_int_equal(t->items[2 * k].calls, 1);
            assert_int_equal(t->items[2 * k + 1].calls, 1);
            bool a_won = a->err == GF_OK;
            const gf_publish_result *win = a_won ? a : b, *lose = a_won ? b : a;
            assert_int_equal(win->err, GF_OK);
            assert_int_equal(lose->err, GF_ERR_CONFLICT);
            assert_int_equal(lose->js_code, 10071);
            char key[16], want[32], got[64] = "";
            snprintf(key, sizeof key, "r%d", k);
            snprintf(want, sizeof want, "w%d-round%d", a_won ? 0 : 1, round);
            assert_int_equal(kv_value(e.kv, key, got, sizeof got), win->seq);
            assert_string_equal(got, want);
            rev[k] = win->seq;
        }
        pt_tally_free(t);
    }
    gf_publish_close(p2, 5000);
    natsConnection_Destroy(nc2);
    env_stop(&e);
}

static void test_cas_create_delete(void **state)
{
    (void)state;
    env e;
    env_start(&e, "kvt", 5);
    char got[64];
    gf_publish_result r = cas(e.p, GF_PUBLISH_CAS_CREATE, "c1", 0, "one", NULL);
    assert_int_equal(r.err, GF_OK);
    uint64_t r1 = r.seq;
    r = cas(e.p, GF_PUBLISH_CAS_CREATE, "c1", 0, "clash", NULL);
    assert_int_equal(r.err, GF_ERR_CONFLICT);
    assert_int_equal(r.js_code, 10071);
    r = cas(e.p, GF_PUBLISH_CAS_UPDATE, "c1", r1, "two", NULL);
    assert_int_equal(r.err, GF_OK);
    uint64_t r2 = r.seq;
    r = cas(e.p, GF_PUBLISH_CAS_DELETE, "c1", r1, NULL, NULL); /* stale */
    assert_int_equal(r.err, GF_ERR_CONFLICT);
    r = cas(e.p, GF_PUBLISH_CAS_UPDATE, "c1", r1, "stale", NULL);
    assert_int_equal(r.err, GF_ERR_CONFLICT);
    assert_int_equal(kv_value(e.kv, "c1", got, sizeof got), r2);
    assert_string_equal(got, "two");
    r = cas(e.p, GF_PUBLISH_CAS_DELETE, "c1", r2, NULL, NULL);
    assert_int_equal(r.err, GF_OK);
    uint64_t marker = r.seq;
    assert_int_equal(kv_value(e.kv, "c1", got, sizeof got), 0); /* deleted */

    /* Create over the delete marker, as kvStore_Create does. */
    r = cas(e.p, GF_PUBLISH_CAS_CREATE, "c1", 0, "again", NULL);
    assert_int_equal(r.err, GF_OK);
    assert_true(r.seq > marker);
    assert_true(r.attempts >= 2); /* expected 0 was refused, then the marker's revision */
    assert_int_equal(kv_value(e.kv, "c1", got, sizeof got), r.seq);
    assert_string_equal(got, "again");
    r = cas(e.p, GF_PUBLISH_CAS_CREATE, "c1", 0, "clash", NULL);
    assert_int_equal(r.err, GF_ERR_CONFLICT);

    /* Over a purge marker too, and over an update on a purged key it conflicts. */
    assert_int_equal(kvStore_PutString(NULL, e.kv, "c2", "x"), NATS_OK);
    assert_int_equal(kvStore_Purge(e.kv, "c2", NULL), NATS_OK);
    r = cas(e.p, GF_PUBLISH_CAS_CREATE, "c2", 0, "fresh", NULL);
    assert_int_equal(r.err, GF_OK);
    assert_int_equal(kv_value(e.kv, "c2", got, sizeof got), r.seq);
    assert_string_equal(got, "fresh");

    /* Delete then create again, both through the publisher, on a never-seen key. */
    r = cas(e.p, GF_PUBLISH_CAS_CREATE, "c3", 0, "a", NULL);
    assert_int_equal(r.err, GF_OK);
    r = cas(e.p, GF_PUBLISH_CAS_DELETE, "c3", r.seq, NULL, NULL);
    assert_int_equal(r.err, GF_OK);
    r = cas(e.p, GF_PUBLISH_CAS_CREATE, "c3", 0, "b", NULL);
    assert_int_equal(r.err, GF_OK);
    gf_publish_stats st;
    gf_publish_stats_get(e.p, &st);
    assert_true(st.lookups >= 3);
    env_stop(&e);
}

/* A lost ack, simulated: the same change (Msg-Id and expected revision) sent again. */
static void test_cas_lost_ack_is_success(void **state)
{
    (void)state;
    env e;
    env_start(&e, "kvt", 5);
    char got[64];
    gf_publish_result a = cas(e.p, GF_PUBLISH_CAS_CREATE, "l1", 0, "v1", "create-l1");
    assert_int_equal(a.err, GF_OK);
    assert_false(a.duplicate);
    gf_publish_result b = cas(e.p, GF_PUBLISH_CAS_CREATE, "l1", 0, "v1", "create-l1");
    assert_int_equal(b.err, GF_OK);
    assert_true(b.duplicate);
    assert_int_equal(b.seq, a.seq);

    gf_publish_result u = cas(e.p, GF_PUBLISH_CAS_UPDATE, "l1", a.seq, "v2", "update-l1-2");
    assert_int_equal(u.err, GF_OK);
    gf_publish_result u2 = cas(e.p, GF_PUBLISH_CAS_UPDATE, "l1", a.seq, "v2", "update-l1-2");
    assert_int_equal(u2.err, GF_OK);
    assert_true(u2.duplicate);
    assert_int_equal(u2.seq, u.seq);
    /* A different change from the same stale revision is a real conflict. */
    gf_publish_result c = cas(e.p, GF_PUBLISH_CAS_UPDATE, "l1", a.seq, "v3", "update-l1-3");
    assert_int_equal(c.err, GF_ERR_CONFLICT);
    assert_int_equal(kv_value(e.kv, "l1", got, sizeof got), u.seq);
    assert_string_equal(got, "v2");

    gf_publish_result d = cas(e.p, GF_PUBLISH_CAS_DELETE, "l1", u.seq, NULL, "delete-l1");
    assert_int_equal(d.err, GF_OK);
    gf_publish_result d2 = cas(e.p, GF_PUBLISH_CAS_DELETE, "l1", u.seq, NULL, "delete-l1");
    assert_int_equal(d2.err, GF_OK);
    assert_true(d2.duplicate);
    assert_int_equal(d2.seq, d.seq);
    assert_int_equal(kv_value(e.kv, "l1", got, sizeof got), 0);
    env_stop(&e);
}

/* gamefn/kv.h: conflicts told apart from other refusals by the key's state. */
static void test_kv_helpers(void **state)
{
    (void)state;
    env e;
    env_start(&e, "kvt", 5);
    uint64_t r1 = 0, r2 = 0;
    assert_int_equal(gf_kv_create(e.kv, "h", "a", 1, &r1), GF_OK);
    assert_int_equal(gf_kv_create(e.kv, "h", "b", 1, NULL), GF_ERR_CONFLICT);
    assert_int_equal(gf_kv_update(e.kv, "h", "b", 1, r1, &r2), GF_OK);
    assert_int_equal(gf_kv_update(e.kv, "h", "c", 1, r1, NULL), GF_ERR_CONFLICT);
    assert_int_equal(gf_kv_update(e.kv, "h", "c", 1, r2 + 100, NULL), GF_ERR_CONFLICT);
    assert_int_equal(gf_kv_delete_if(e.pt.js, e.kv, "h", r1, NULL), GF_ERR_CONFLICT);
    assert_int_equal(gf_kv_delete_if(e.pt.js, e.kv, "h", r2, NULL), GF_OK);
    assert_int_equal(gf_kv_update(e.kv, "h", "d", 1, r2, NULL), GF_ERR_CONFLICT);
    kvEntry *ent = NULL;
    assert_int_equal(gf_kv_get(e.kv, "h", &ent), GF_ERR_NOT_FOUND);
    assert_int_equal(gf_kv_create(e.kv, "h", "e", 1, &r1), GF_OK); /* over the marker */
    assert_int_equal(gf_kv_update(e.kv, "nokey", "x", 1, 5, NULL), GF_ERR_CONFLICT);
    env_stop(&e);
}

/* gf_kv_put_if: the same outcomes as gf_kv_create / gf_kv_update, and a refusal's
 * JetStream code: a bucket at its max_bytes (discard new) refuses with 10077. */
static void test_kv_put_if(void **state)
{
    (void)state;
    env e;
    env_start(&e, "kvp", 5);
    jsCtx *js = e.pt.js;
    uint64_t r1 = 0, r2 = 0;
    int code = -1;
    assert_int_equal(gf_kv_put_if(js, e.kv, "h", "a", 1, 0, &r1, &code), GF_OK);
    assert_int_equal(code, 0);
    assert_int_equal(gf_kv_put_if(js, e.kv, "h", "b", 1, 0, NULL, &code), GF_ERR_CONFLICT);
    assert_int_equal(code, 0);
    assert_int_equal(gf_kv_put_if(js, e.kv, "h", "b", 1, r1, &r2, NULL), GF_OK);
    assert_true(r2 > r1);
    assert_int_equal(gf_kv_put_if(js, e.kv, "h", "c", 1, r1, NULL, NULL), GF_ERR_CONFLICT);
    assert_int_equal(gf_kv_delete_if(js, e.kv, "h", r2, NULL), GF_OK);
    assert_int_equal(gf_kv_put_if(js, e.kv, "h", "d", 1, 0, &r1, NULL), GF_OK); /* over it */
    kvEntry *ent = NULL;
    assert_int_equal(gf_kv_get(e.kv, "h", &ent), GF_OK);
    assert_int_equal(kvEntry_Revision(ent), r1);
    kvEntry_Destroy(ent);

    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, js, "KV_kvp", NULL, NULL), NATS_OK);
    si->Config->MaxBytes = (int64_t)si->State.Bytes; /* exactly what it holds */
    assert_int_equal(js_UpdateStream(NULL, js, si->Config, NULL, NULL), NATS_OK);
    jsStreamInfo_Destroy(si);
    assert_int_equal(gf_kv_put_if(js, e.kv, "new", "x", 1, 0, NULL, &code), GF_ERR_NATS);
    assert_int_equal(code, 10077);
    assert_int_equal(gf_kv_put_if(js, e.kv, "h", "e", 1, r1, NULL, &code), GF_ERR_NATS);
    assert_int_equal(code, 10077);
    assert_int_equal(gf_kv_delete_if(js, e.kv, "h", r1, &code), GF_ERR_NATS);
    assert_int_equal(code, 10077);
    env_stop(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cas_pipelined),     cmocka_unit_test(test_cas_race_one_winner),
        cmocka_unit_test(test_cas_create_delete), cmocka_unit_test(test_cas_lost_ack_is_success),
        cmocka_unit_test(test_kv_helpers),        cmocka_unit_test(test_kv_put_if),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
