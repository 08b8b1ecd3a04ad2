/*
 * Partitioned pull consumers on a single nats-server, with the test worker
 * (GAMEFN_TEST_MODE=partitioned, tests/fixtures/test_worker.c) as replicas of one group
 * of 16 partitions (lease ttl 3 s, ack wait 2 s):
 *
 *  - fair share: with k replicas each owns 16/k (rounded down or up), as replicas join
 *    and leave;
 *  - one owner at a time and per-key order: keyed sequences published while replicas
 *    join, stop (SIGTERM) and are killed (SIGKILL); no two owners' handler runs overlap
 *    on a partition, tokens grow, every key's events are applied in order, and nothing
 *    is handled twice except what a killed owner left unacked;
 *  - takeover: a SIGKILLed owner's partitions are owned and handled by the survivor
 *    within the bound the lease ttl sets (asserted against the configured values);
 *  - in-place retry and poison: a failing batch is retried as is (order kept), a poison
 *    message is dead-lettered and the partition goes on;
 *  - health: an owner whose partitions' stream is gone and cannot be recreated is
 *    unhealthy in $SRV until it can be.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/partition.h"
#include "partition_check.h"

static const char functions_fast[] = "  test-worker:\n    delay: 10ms\n";

typedef struct share_want {
    const char *instances[4];
    int n;
} share_want;

/* Every listed instance owns 16/n rounded down or up, and all 16 are owned. */
static bool fair_share(gf_fnenv *env, void *arg)
{
    const share_want *w = arg;
    char owner[PC_PARTITIONS][PC_INSTANCE_MAX];
    if (pc_owners(env, owner) != 0)
        return false;
    int total = 0;
    for (int i = 0; i < w->n; i++) {
        int c = pc_count(owner, w->instances[i]);
        if (c < PC_PARTITIONS / w->n || c > (PC_PARTITIONS + w->n - 1) / w->n)
            return false;
        total += c;
    }
    return total == PC_PARTITIONS;
}

static void spawn(gf_fnenv *env, gf_proc *p, const char *name)
{
    assert_int_equal(gf_fnenv_spawn(env, p, PC_WORKER, name, pc_env), 0);
    assert_true(gf_fnenv_wait_ping(env, "test-worker", name, 10000));
}

static void each_replica_owns_its_fair_share(void **state)
{
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc a = {0}, b = {0}, c = {0};
    pc_opts(&o, 1, functions_fast);
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);

    spawn(&env, &a, "a");
    share_want one = {{"a"}, 1};
    assert_true(gf_fnenv_eventually(fair_share, &env, &one, 15000));
    spawn(&env, &b, "b");
    share_want two = {{"a", "b"}, 2};
    assert_true(gf_fnenv_eventually(fair_share, &env, &two, 20000));
    spawn(&env, &c, "c");
    share_want three = {{"a", "b", "c"}, 3};
    assert_true(gf_fnenv_eventually(fair_share, &env, &three, 20000));
    assert_true(gf_fnenv_stop(&b, 15000)); /* a clean stop gives its partitions back */
    share_want two_left = {{"a", "c"}, 2};
    assert_true(gf_fnenv_eventually(fair_share, &env, &two_left, 20000));

    assert_true(gf_fnenv_stop(&a, 15000));
    assert_true(gf_fnenv_stop(&c, 15000));
    gf_fnenv_free(&env);
}

/* A single node, replica "a" running. */
static void start_a(gf_fnenv *env, gf_proc *a)
{
    gf_fnenv_opts o;
    pc_opts(&o, 1, functions_fast);
    assert_int_equal(gf_fnenv_start_opts(env, &o), 0);
    spawn(env, a, "a");
}

/* The same, keyed events flowing. */
static void begin(gf_fnenv *env, gf_proc *a, pc_publisher *pub)
{
    start_a(env, a);
    pub->env = env;
    pc_publish_start(pub);
}

/* Replicas join, leave and die while keyed events flow. */
static void one_owner_at_a_time_and_per_key_order(void **state)
{
    gf_fnenv env;
    gf_proc a = {0}, b = {0}, c = {0}, d = {0};
    pc_publisher pub = {.keys = 40, .per_key = 60, .pause_ms = 200};
    begin(&env, &a, &pub);
    gf_clock_sleep_ms(1500);
    spawn(&env, &b, "b"); /* join: a gives partitions to b */
    gf_clock_sleep_ms(2500);
    spawn(&env, &c, "c");
    gf_clock_sleep_ms(2500);
    assert_true(gf_fnenv_stop(&a, 15000)); /* leave cleanly */
    gf_clock_sleep_ms(2500);
    gf_proc_signal(&b, SIGKILL); /* die: its partitions move after the lease ttl */
    assert_int_equal(gf_proc_wait(&b, 5000), 0);
    spawn(&env, &d, "d");
    /* Only what the killed owner held unacked (at most one batch of 16 per partition it
     * owned) may be handled twice. */
    size_t replays = pc_verify(&pub, true);
    if (replays > 16 * 16)
        fail_msg("%zu events handled twice", replays);

    assert_true(gf_fnenv_stop(&c, 15000));
    assert_true(gf_fnenv_stop(&d, 15000));
    gf_fnenv_free(&env);
}

/* Rebalancing without faults hands over cleanly: nothing is handled twice. */
static void clean_rebalances_handle_everything_once(void **state)
{
    gf_fnenv env;
    gf_proc a = {0}, b = {0}, c = {0};
    pc_publisher pub = {.keys = 30, .per_key = 40, .pause_ms = 150};
    begin(&env, &a, &pub);
    gf_clock_sleep_ms(1000);
    spawn(&env, &b, "b");
    gf_clock_sleep_ms(2000);
    spawn(&env, &c, "c");
    gf_clock_sleep_ms(2000);
    assert_true(gf_fnenv_stop(&b, 15000));
    pc_verify(&pub, false);
    gf_clock_sleep_ms(PC_ACK_WAIT_MS + 500); /* a missed ack would show as a replay now */
    pc_verify(&pub, false);
    assert_true(gf_fnenv_stop(&a, 15000));
    assert_true(gf_fnenv_stop(&c, 15000));
    gf_fnenv_free(&env);
}

struct takeover {
    bool dead[PC_PARTITIONS]; /* partitions the killed replica owned */
    int64_t killed_us;
    int64_t owned_us;   /* when the survivor held all of them */
    int64_t handled_us; /* when the survivor had handled a batch of each, after the kill */
};

static bool survivor_owns_all(gf_fnenv *env, void *arg)
{
    struct takeover *t = arg;
    char owner[PC_PARTITIONS][PC_INSTANCE_MAX];
    if (pc_owners(env, owner) != 0 || pc_count(owner, "a") != PC_PARTITIONS)
        return false;
    t->owned_us = gf_clock_unix_ns() / 1000;
    return true;
}

static bool survivor_handled_all(gf_fnenv *env, void *arg)
{
    struct takeover *t = arg;
    pc_records r;
    bool done[PC_PARTITIONS] = {false};
    if (pc_read(env, &r) != 0)
        return false;
    for (size_t i = 0; i < r.nbatches; i++) {
        const pc_batch *b = &r.batches[i];
        if (strcmp(b->instance, "a") == 0 && b->start_us > t->killed_us)
            done[b->partition] = true;
    }
    pc_free(&r);
    for (unsigned p = 0; p < PC_PARTITIONS; p++) {
        if (t->dead[p] && !done[p])
            return false;
    }
    t->handled_us = gf_clock_unix_ns() / 1000;
    return true;
}

static void a_killed_owners_partitions_move_within_the_lease_bound(void **state)
{
    enum { KEYS = 40, PER_KEY = 80 };
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc a = {0}, b = {0};
    struct takeover t = {0};
    char owner[PC_PARTITIONS][PC_INSTANCE_MAX];
    pc_opts(&o, 1, functions_fast);
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    spawn(&env, &a, "a");
    spawn(&env, &b, "b");
    share_want two = {{"a", "b"}, 2};
    assert_true(gf_fnenv_eventually(fair_share, &env, &two, 20000));
    pc_publisher pub = {.env = &env, .keys = KEYS, .per_key = PER_KEY, .pause_ms = 100};
    pc_publish_start(&pub);
    gf_clock_sleep_ms(1500);

    assert_int_equal(pc_owners(&env, owner), 0);
    for (unsigned p = 0; p < PC_PARTITIONS; p++)
        t.dead[p] = strcmp(owner[p], "b") == 0;
    t.killed_us = gf_clock_unix_ns() / 1000;
    gf_proc_signal(&b, SIGKILL);
    assert_int_equal(gf_proc_wait(&b, 5000), 0);
    assert_true(gf_fnenv_eventually(survivor_owns_all, &env, &t, 30000));
    assert_true(gf_fnenv_eventually(survivor_handled_all, &env, &t, 30000));

    /* The bound the design gives (endpoint_partitioned.c): the lease runs out at most one
     * ttl after the kill; the survivor notices the member list change and the free
     * leases within a cycle (ttl/4) and a hungry cycle (0.5 s); before fetching it waits
     * one ack wait (+10% + 0.1 s) for what the dead owner left unacked. 1 s of slack
     * for the polls of this test and the machine. */
    int64_t lease_bound = PC_LEASE_TTL_MS + PC_LEASE_TTL_MS / 4 + 500 + 1000;
    int64_t work_bound = lease_bound + PC_ACK_WAIT_MS + PC_ACK_WAIT_MS / 10 + 100 + 1000;
    int64_t owned_ms = (t.owned_us - t.killed_us) / 1000;
    int64_t handled_ms = (t.handled_us - t.killed_us) / 1000;
    printf("takeover: owned after %lld ms (bound %lld), handling after %lld ms (bound %lld)\n",
           (long long)owned_ms, (long long)lease_bound, (long long)handled_ms,
           (long long)work_bound);
    assert_true(owned_ms <= lease_bound);
    assert_true(handled_ms <= work_bound);
    /* ...and not before the lease could have expired: nobody took over early. */
    assert_true(owned_ms >= PC_LEASE_TTL_MS - PC_LEASE_TTL_MS / 4 - 100);

    pc_verify(&pub, true);
    assert_true(gf_fnenv_stop(&a, 15000));
    gf_fnenv_free(&env);
}

/* A batch that fails is retried in place (nothing behind it overtakes it); a poison
 * message is dead-lettered (terminated) and its partition goes on. */
static void retries_keep_order_and_poison_does_not_block(void **state)
{
    gf_fnenv env;
    gf_proc a = {0};
    start_a(&env, &a);
    const char *const payloads[] = {"1", "2 flaky", "3", "poison", "4", "5"};
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++)
        assert_int_equal(js_Publish(NULL, env.js, "test.ev.k0", payloads[i],
                                    (int)strlen(payloads[i]), NULL, NULL),
                         NATS_OK);
    assert_true(pc_wait_all_handled(&env, 1, 5, 15000));
    gf_clock_sleep_ms(PC_ACK_WAIT_MS + 500);
    pc_records r;
    size_t replays = 0;
    assert_int_equal(pc_read(&env, &r), 0);
    pc_check_order(&r, 1, 5, false, &replays);
    pc_free(&r);
    /* Everything was acked or terminated: nothing pending on k0's partition. */
    jsConsumerInfo *ci = NULL;
    char name[32];
    snprintf(name, sizeof name, "tp-p%02u", (unsigned)gf_partition_of("k0", PC_PARTITIONS));
    assert_int_equal(js_GetConsumerInfo(&ci, env.js, "TEST_EVENTS", name, NULL, NULL), NATS_OK);
    assert_int_equal(ci->NumAckPending, 0);
    assert_int_equal(ci->NumPending, 0);
    jsConsumerInfo_Destroy(ci);
    assert_true(gf_fnenv_stop(&a, 15000));
    gf_fnenv_free(&env);
}

/* A partition's stream deleted under its owner is recreated; while it cannot be (another
 * stream took its subjects), the owner is unhealthy in $SRV (PING silent, INFO names the
 * partition and why), and once it can, it is healthy and handles events again. */
static void a_lost_stream_makes_the_owner_unhealthy_until_recreated(void **state)
{
    gf_fnenv env;
    gf_proc a = {0};
    start_a(&env, &a);
    gf_fnenv_health_want healthy = {"test-worker", "a", NULL};
    gf_fnenv_health_want stream_lost = {"test-worker", "a",
                                        "stream TEST_EVENTS is missing and cannot be "
                                        "recreated"};
    assert_true(gf_fnenv_eventually(gf_fnenv_health_is, &env, &healthy, 10000));

    /* Delete, then take its subjects (again if an owner recreated it in between). */
    natsStatus s = NATS_ERR;
    for (int attempt = 0; attempt < 5 && s != NATS_OK; attempt++) {
        js_DeleteStream(env.js, "TEST_EVENTS", NULL, NULL);
        s = gf_fnenv_add_stream(env.js, "HOG", "test.evp.>");
    }
    assert_int_equal(s, NATS_OK);
    assert_true(gf_fnenv_eventually(gf_fnenv_health_is, &env, &stream_lost, 30000));
    char why[512] = "";
    assert_int_equal(gf_fnenv_health(&env, "test-worker", "a", why, sizeof why), 0);
    assert_non_null(strstr(why, "endpoint events: partition "));

    assert_int_equal(js_DeleteStream(env.js, "HOG", NULL, NULL), NATS_OK);
    assert_true(gf_fnenv_eventually(gf_fnenv_health_is, &env, &healthy, 30000));
    assert_int_equal(js_Publish(NULL, env.js, "test.ev.k0", "1", 1, NULL, NULL), NATS_OK);
    assert_true(pc_wait_all_handled(&env, 1, 1, 15000));
    assert_true(gf_fnenv_stop(&a, 15000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_replica_owns_its_fair_share),
        cmocka_unit_test(retries_keep_order_and_poison_does_not_block),
        cmocka_unit_test(clean_rebalances_handle_everything_once),
        cmocka_unit_test(one_owner_at_a_time_and_per_key_order),
        cmocka_unit_test(a_killed_owners_partitions_move_within_the_lease_bound),
        cmocka_unit_test(a_lost_stream_makes_the_owner_unhealthy_until_recreated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
