/*
 * test_fleet_keys.c — keys of the `fleet` bucket that are not a usable record, and one
 * server id in two datacenters, against two fleet replicas (and the allocator) on a
 * real nats-server (PROTOCOL.md §8):
 *   - garbage, an invalid ServerRecord, a record under another key, one of a datacenter
 *     that is not configured and a key that is no "<datacenter>.<server_id>" are never
 *     allocated (a match with only them to choose from is aborted, NO_SERVER), are still
 *     there just short of heartbeat_timeout, and are removed soon after it, each once
 *     (one "broken fleet key removed" line over both replicas); a broken key made a
 *     valid record meanwhile is kept;
 *   - server-id indexes (ids/<server_id>) whose datacenter holds no record of the id are
 *     removed by the sweep once claimed heartbeat_timeout ago (not before), each once over
 *     both replicas; the index of a live server and a value that is no index are kept;
 *   - a register of a server id that has a record in another datacenter is refused
 *     (FAILED_PRECONDITION naming server_id) and creates nothing; it is allowed again
 *     once that record is deregistered or swept; registers of one id in two
 *     datacenters at once (spread over both replicas) have exactly one winner.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_support.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/error.pb-c.h"

#define FREE     GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE
#define ABORTED  2 /* fleet_outcome_state */
#define C_FAILED GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION
#define TIMEOUT  1500 /* heartbeat 500 ms: timeout 3 of them */

/* Packs a FREE record of <dc>.<id>, fresh for a minute; match: set it (invalid when FREE). */
static size_t free_record(uint8_t *buf, const char *dc, const char *id, const char *match)
{
    Gamefn__V1__ServerRecord r = GAMEFN__V1__SERVER_RECORD__INIT;
    int64_t now = gf_clock_unix_ms();
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = (char *)(uintptr_t)dc;
    r.address = "127.0.0.1";
    r.port = 7777;
    r.capacity = 10;
    r.state = FREE;
    r.free_since_unix_ms = now;
    r.last_heartbeat_unix_ms = now;
    r.stale_unix_ms = now + 60000;
    if (match)
        r.allocated_match_id = (char *)(uintptr_t)match;
    return gamefn__v1__server_record__pack(&r, buf);
}

static uint64_t put_raw(fleet_env *e, const char *key, const void *data, size_t len)
{
    uint64_t rev = 0;
    assert_int_equal(kvStore_Put(&rev, e->fleet, key, data, (int)len), NATS_OK);
    return rev;
}

static bool key_exists(fleet_env *e, const char *key)
{
    kvEntry *en = NULL;
    bool found = gf_kv_get(e->fleet, key, &en) == GF_OK;
    kvEntry_Destroy(en);
    return found;
}

/* A fleet bucket and two fleet replicas (f1, f2) on a fresh nats-server. */
static void two_fleets(fleet_env *e, gf_proc *f1, gf_proc *f2)
{
    fleet_env_start(e, NULL);
    fleet_env_spawn(e, f1, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(e, f2, FLEET_BIN, "fleet", "f2", NULL);
}

static size_t removed_lines(gf_proc *f1, gf_proc *f2, const char *text)
{
    return fleet_log_count(f1, text) + fleet_log_count(f2, text);
}

static void broken_keys_swept(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc f1 = {0}, f2 = {0}, alloc = {0};
    fleet_env_opts o = {.deadline = "1s"};
    fleet_env_start(&e, &o);
    fleet_env_spawn(&e, &f1, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&e, &f2, FLEET_BIN, "fleet", "f2", NULL);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);

    /* The broken keys: each would be a FREE eu server if it were read as one. */
    static const char *const broken[] = {"eu.garbage", "eu.invalid", "eu.moved", "zz.gs-9",
                                         "nokey"};
    enum { N_BROKEN = sizeof broken / sizeof broken[0] };
    uint8_t buf[512];
    size_t len;
    int64_t t0 = gf_clock_mono_ms();
    put_raw(&e, "eu.garbage", "\xff\xff\x01", 3);
    len = free_record(buf, "eu", "invalid", "m-none");
    put_raw(&e, "eu.invalid", buf, len);
    len = free_record(buf, "eu", "elsewhere", NULL);
    put_raw(&e, "eu.moved", buf, len);
    put_raw(&e, "nokey", buf, len);
    len = free_record(buf, "zz", "gs-9", NULL);
    put_raw(&e, "zz.gs-9", buf, len);

    /* A match for eu while only broken keys are there: never allocated, so aborted at
     * its deadline (NO_SERVER). */
    fleet_claim_ticket(&e, "t-1", "m-1", gf_clock_unix_ms());
    char *tickets[] = {"t-1"};
    fleet_publish_match(&e, "m-1", tickets, 1, "eu");

    /* Still there just short of the timeout (the sweep ran meanwhile)... */
    int64_t left = t0 + TIMEOUT - 300 - gf_clock_mono_ms();
    if (left > 0)
        gf_clock_sleep_ms(left);
    for (size_t i = 0; i < N_BROKEN; i++)
        assert_true(key_exists(&e, broken[i]));
    fleet_wait_matches_drained(&e, 15000);
    assert_int_equal(fleet_outcome_state(&e, "m-1"), ABORTED);
    /* ...removed after it, each once over both replicas, each logged with its why. */
    for (size_t i = 0; i < N_BROKEN; i++) {
        for (int waited = 0; key_exists(&e, broken[i]); waited += 100) {
            if (waited > 8000)
                fail_msg("broken key %s still in the fleet bucket", broken[i]);
            gf_clock_sleep_ms(100);
        }
    }
    assert_true(gf_clock_mono_ms() - t0 >= TIMEOUT);
    gf_clock_sleep_ms(2000); /* both replicas have had ticks since */
    assert_int_equal(removed_lines(&f1, &f2, "broken fleet key removed"), N_BROKEN);
    assert_int_equal(removed_lines(&f1, &f2, "broken fleet key not removed"), 0);
    assert_true(removed_lines(&f1, &f2, "datacenter zz is not configured") >= 1);

    /* A broken key made a valid record within the timeout is kept. */
    put_raw(&e, "eu.fixed", "\xff\xff\x02", 3);
    gf_clock_sleep_ms(300);
    fleet_register(&e, "eu", "fixed");
    for (int waited = 0; waited < TIMEOUT + 2000; waited += 300) { /* alive meanwhile */
        gf_clock_sleep_ms(300);
        assert_int_equal(fleet_heartbeat(&e, "eu", "fixed", NULL), GF_OK);
    }
    Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", "fixed");
    assert_non_null(r);
    assert_int_equal(r->state, FREE);
    gamefn__v1__server_record__free_unpacked(r, NULL);
    assert_int_equal(removed_lines(&f1, &f2, "broken fleet key removed"), N_BROKEN);

    assert_true(gf_fnenv_stop(&alloc, 15000));
    assert_true(gf_fnenv_stop(&f2, 15000));
    assert_true(gf_fnenv_stop(&f1, 15000));
    fleet_env_free(&e);
}

/* ---- orphaned server-id indexes ---------------------------------------------------- */

static uint64_t put_claim(fleet_env *e, const char *id, const char *dc, int64_t claimed_unix_ms)
{
    char key[96], value[96];
    snprintf(key, sizeof key, "ids/%s", id);
    int n = snprintf(value, sizeof value, "%lld %s", (long long)claimed_unix_ms, dc);
    return put_raw(e, key, value, (size_t)n);
}

/* Sleeps 100 ms, heartbeating gs-live (eu) every third call. */
static void live_tick(fleet_env *e, int *calls)
{
    if ((*calls)++ % 3 == 0)
        assert_int_equal(fleet_heartbeat(e, "eu", "gs-live", NULL), GF_OK);
    gf_clock_sleep_ms(100);
}

static void orphan_indexes_swept(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc f1 = {0}, f2 = {0};
    two_fleets(&e, &f1, &f2);

    /* A live server (claimed long ago: its record is what keeps its index), an index left
     * by a register that died before its record (young, then old), one left long ago, and
     * a value that is no index. */
    fleet_register(&e, "eu", "gs-live");
    uint64_t live = fleet_key_revision(&e, "ids/gs-live");
    assert_true(live > 0);
    int64_t t0 = gf_clock_mono_ms();
    put_claim(&e, "gs-young", "eu", gf_clock_unix_ms());
    put_claim(&e, "gs-old", "us", gf_clock_unix_ms() - 10 * TIMEOUT);
    put_raw(&e, "ids/gs-junk", "not an index", 12);

    /* Old: gone within a few sweeps; young: kept just short of the timeout. The live
     * server heartbeats throughout. */
    int calls = 0;
    for (int waited = 0; key_exists(&e, "ids/gs-old"); waited += 100) {
        if (waited > 5000)
            fail_msg("orphan index ids/gs-old still in the fleet bucket");
        live_tick(&e, &calls);
    }
    while (gf_clock_mono_ms() < t0 + TIMEOUT - 300)
        live_tick(&e, &calls);
    assert_true(key_exists(&e, "ids/gs-young"));
    /* After it: gone within a few sweeps. */
    for (int waited = 0; key_exists(&e, "ids/gs-young"); waited += 100) {
        if (waited > 5000)
            fail_msg("orphan index ids/gs-young still in the fleet bucket");
        live_tick(&e, &calls);
    }
    assert_true(gf_clock_mono_ms() - t0 >= TIMEOUT);

    /* Several sweeps more: the live index and the junk are never touched. */
    for (int waited = 0; waited < 4000; waited += 100) {
        live_tick(&e, &calls);
        assert_int_equal(fleet_key_revision(&e, "ids/gs-live"), live);
    }
    assert_true(key_exists(&e, "ids/gs-junk"));
    assert_int_equal(removed_lines(&f1, &f2, "orphan server-id index removed"), 2);
    assert_int_equal(removed_lines(&f1, &f2, "orphan server-id index not removed"), 0);
    assert_true(removed_lines(&f1, &f2, "key=ids/gs-old datacenter=us") == 1);

    /* The id of an index removed is free again, anywhere. */
    fleet_register(&e, "us", "gs-young");

    assert_true(gf_fnenv_stop(&f2, 15000));
    assert_true(gf_fnenv_stop(&f1, 15000));
    fleet_env_free(&e);
}

/* ---- one id, one datacenter ------------------------------------------------------ */

static int try_register(fleet_env *e, const char *dc, const char *id, int *code, char field[64])
{
    Gamefn__V1__RegisterServerRequest r = GAMEFN__V1__REGISTER_SERVER_REQUEST__INIT;
    uint8_t buf[512];
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = (char *)(uintptr_t)dc;
    r.address = "127.0.0.1";
    r.port = 7777;
    r.capacity = 10;
    size_t len = gamefn__v1__register_server_request__pack(&r, buf);
    return fleet_call_raw(e, GF_WIRE_SUBJ_FLEET_REGISTER, buf, len, code, field, 64);
}

static void refused(fleet_env *e, const char *dc, const char *id)
{
    int code = 0;
    char field[64];
    assert_int_not_equal(try_register(e, dc, id, &code, field), GF_OK);
    assert_int_equal(code, C_FAILED);
    assert_string_equal(field, "server_id");
    Gamefn__V1__ServerRecord *r = fleet_record(e, dc, id);
    assert_null(r);
}

static void deregister(fleet_env *e, const char *dc, const char *id)
{
    Gamefn__V1__DeregisterServerRequest r = GAMEFN__V1__DEREGISTER_SERVER_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = (char *)(uintptr_t)dc;
    assert_int_equal(
        fleet_call(e, GF_WIRE_SUBJ_FLEET_DEREGISTER, &r.base, NULL, NULL, NULL, NULL, 0), GF_OK);
}

typedef struct racer {
    fleet_env *e;
    const char *dc;
    const char *id;
    pthread_barrier_t *go;
    int err, code;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    char field[64];
    pthread_barrier_wait(r->go);
    r->err = try_register(r->e, r->dc, r->id, &r->code, field);
    return NULL;
}

static void server_id_unique(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc f1 = {0}, f2 = {0};
    two_fleets(&e, &f1, &f2);

    /* gs-1 in eu: refused in us; a register again in eu is fine. */
    fleet_register(&e, "eu", "gs-1");
    refused(&e, "us", "gs-1");
    fleet_register(&e, "eu", "gs-1");
    refused(&e, "us", "gs-1");

    /* Deregistered in eu: free to register in us at once; then refused in eu. */
    deregister(&e, "eu", "gs-1");
    fleet_register(&e, "us", "gs-1");
    refused(&e, "eu", "gs-1");

    /* Silent in us: refused in eu until the sweep removed it (heartbeat_timeout). */
    int64_t t0 = gf_clock_mono_ms();
    int err = GF_ERR_CONFLICT, code = 0;
    char field[64];
    while (err != GF_OK) {
        assert_true(gf_clock_mono_ms() - t0 < 10000);
        gf_clock_sleep_ms(100);
        err = try_register(&e, "eu", "gs-1", &code, field);
        if (err != GF_OK)
            assert_int_equal(code, C_FAILED);
    }
    assert_true(gf_clock_mono_ms() - t0 >= TIMEOUT - 200);
    assert_null(fleet_record(&e, "us", "gs-1"));

    /* The same id in eu and us at once, many times: one winner each time. */
    for (int round = 0; round < 20; round++) {
        char id[32];
        snprintf(id, sizeof id, "race-%d", round);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        racer a = {.e = &e, .dc = "eu", .id = id, .go = &go};
        racer b = {.e = &e, .dc = "us", .id = id, .go = &go};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, race, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, race, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&go);
        assert_int_not_equal(a.err, GF_ERR_TIMEOUT);
        assert_int_not_equal(b.err, GF_ERR_TIMEOUT);
        assert_int_equal((a.err == GF_OK) + (b.err == GF_OK), 1);
        Gamefn__V1__ServerRecord *ra = fleet_record(&e, "eu", id);
        Gamefn__V1__ServerRecord *rb = fleet_record(&e, "us", id);
        assert_int_equal((ra != NULL) + (rb != NULL), 1);
        assert_int_equal(a.err == GF_OK ? b.code : a.code, C_FAILED);
        gamefn__v1__server_record__free_unpacked(ra, NULL);
        gamefn__v1__server_record__free_unpacked(rb, NULL);
    }

    assert_true(gf_fnenv_stop(&f2, 15000));
    assert_true(gf_fnenv_stop(&f1, 15000));
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(broken_keys_swept),
        cmocka_unit_test(server_id_unique),
        cmocka_unit_test(orphan_indexes_swept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
