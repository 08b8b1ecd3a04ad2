/*
 * test_fleet_replicas.c — two fleet instances at once on a real nats-server, then one
 * SIGKILLed:
 *   - with both up, one FleetScaleRequest per datacenter per scale_interval reaches an
 *     adapter, whichever replica takes each tick (the ticks are spread over the queue
 *     group);
 *   - after the SIGKILL, registrations and heartbeats are answered at once by the other,
 *     the scale requests come again within the tick lease's takeover, and servers that
 *     stop heartbeating are still swept.
 */
#include <setjmp.h>
#include <signal.h>
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

/* Scale requests for eu received within ms; *min_gap_ms gets the shortest time between
 * two of them (by issued_unix_ms). */
static int count_scale(natsSubscription *sub, int ms, int64_t *min_gap_ms)
{
    int n = 0;
    int64_t last = 0, end = gf_clock_mono_ms() + ms;
    *min_gap_ms = INT64_MAX;
    for (int64_t left = ms; left > 0; left = end - gf_clock_mono_ms()) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, left) != NATS_OK)
            break;
        Gamefn__V1__FleetScaleRequest *r = gamefn__v1__fleet_scale_request__unpack(
            NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
        assert_non_null(r);
        if (last && r->issued_unix_ms - last < *min_gap_ms)
            *min_gap_ms = r->issued_unix_ms - last;
        last = r->issued_unix_ms;
        n++;
        gamefn__v1__fleet_scale_request__free_unpacked(r, NULL);
        natsMsg_Destroy(m);
    }
    return n;
}

/* 20 heartbeats of a registered server, each answered. */
static void heartbeats_answered(fleet_env *e, const char *id)
{
    for (int i = 0; i < 20; i++)
        assert_int_equal(fleet_heartbeat(e, "eu", id, NULL), GF_OK);
}

static void two_replicas_then_one(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc f1 = {0}, f2 = {0};
    fleet_env_opts o = {.scale_interval = "2s"};
    fleet_env_start(&e, &o);
    fleet_env_spawn(&e, &f1, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&e, &f2, FLEET_BIN, "fleet", "f2", NULL);
    natsSubscription *sub = NULL;
    assert_int_equal(natsConnection_SubscribeSync(&sub, e.fn.nc, GF_WIRE_SUBJ_FLEET_SCALE ".eu"),
                     NATS_OK);

    /* Both up: 8 s of ticks taken in turn give about 4 requests, 2 s apart. */
    int64_t gap = 0;
    int n = count_scale(sub, 8000, &gap);
    fprintf(stderr, "two replicas: %d scale requests in 8 s, shortest gap %lld ms\n", n,
            (long long)gap);
    assert_true(n >= 3 && n <= 5);
    assert_true(gap >= 1500);
    fleet_register(&e, "eu", "gs-1");
    heartbeats_answered(&e, "gs-1");

    /* Kill the one that holds the tick lease ("<expires> <holder>"). */
    kvStore *leases = NULL;
    kvEntry *en = NULL;
    assert_int_equal(gf_kv_open(e.fn.js, "leases", &leases), GF_OK);
    assert_int_equal(gf_kv_get(leases, "tick.fleet.sweep", &en), GF_OK);
    bool f2_leads = strstr(kvEntry_ValueString(en), "f2") != NULL;
    kvEntry_Destroy(en);
    kvStore_Destroy(leases);
    gf_proc *victim = f2_leads ? &f2 : &f1, *survivor = f2_leads ? &f1 : &f2;
    gf_proc_signal(victim, SIGKILL);
    gf_proc_wait(victim, 5000);
    fleet_register(&e, "eu", "gs-2");
    heartbeats_answered(&e, "gs-2");
    heartbeats_answered(&e, "gs-1");
    n = count_scale(sub, 6000, &gap);
    fprintf(stderr, "after the kill: %d scale requests in 6 s\n", n);
    assert_true(n >= 1 && n <= 4);

    /* gs-1 and gs-2 fell silent while we counted: the survivor sweeps them (timeout
     * 1.5 s), while a third that heartbeats stays. */
    fleet_register(&e, "eu", "gs-3");
    for (int waited = 0; fleet_count(&e) > 1; waited += 100) {
        assert_int_equal(fleet_heartbeat(&e, "eu", "gs-3", NULL), GF_OK);
        assert_true(waited < 8000);
        gf_clock_sleep_ms(100);
    }
    Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", "gs-3");
    assert_non_null(r);
    gamefn__v1__server_record__free_unpacked(r, NULL);
    natsSubscription_Destroy(sub);
    assert_true(gf_fnenv_stop(survivor, 15000));
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_replicas_then_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
