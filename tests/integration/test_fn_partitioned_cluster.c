/*
 * Partitioned pull consumers on a 3-node JetStream cluster (stream, consumers and the
 * lease bucket replicated 3 times), with the test worker as replicas of one group of 16
 * partitions: the fair share at steady state, and, while keyed events flow and replicas
 * join, leave and die, one owner at a time per partition, growing tokens, per-key order,
 * and a killed replica's partitions taken over within the lease bound.
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
#include "partition_check.h"

static void spawn(gf_fnenv *env, gf_proc *p, const char *name)
{
    assert_int_equal(gf_fnenv_spawn(env, p, PC_WORKER, name, pc_env), 0);
    assert_true(gf_fnenv_wait_ping(env, "test-worker", name, 15000));
}

struct share {
    const char *a, *b, *c; /* c may be NULL */
};

static bool fair(gf_fnenv *env, void *arg)
{
    const struct share *s = arg;
    char owner[PC_PARTITIONS][PC_INSTANCE_MAX];
    if (pc_owners(env, owner) != 0)
        return false;
    int k = s->c ? 3 : 2;
    const char *who[3] = {s->a, s->b, s->c};
    int total = 0;
    for (int i = 0; i < k; i++) {
        int n = pc_count(owner, who[i]);
        if (n < PC_PARTITIONS / k || n > (PC_PARTITIONS + k - 1) / k)
            return false;
        total += n;
    }
    return total == PC_PARTITIONS;
}

static bool gone_to(gf_fnenv *env, void *arg)
{
    const struct share *s = arg; /* every partition held by a or b */
    char owner[PC_PARTITIONS][PC_INSTANCE_MAX];
    return pc_owners(env, owner) == 0 &&
           pc_count(owner, s->a) + pc_count(owner, s->b) == PC_PARTITIONS;
}

static void rebalance_and_takeover_on_a_cluster(void **state)
{
    enum { KEYS = 30, PER_KEY = 60 };
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc a = {0}, b = {0}, c = {0}, d = {0};
    pc_opts(&o, 3, "  test-worker:\n    delay: 10ms\n");
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    spawn(&env, &a, "a");
    spawn(&env, &b, "b");
    struct share ab = {"a", "b", NULL};
    assert_true(gf_fnenv_eventually(fair, &env, &ab, 30000));

    pc_publisher pub = {.env = &env, .keys = KEYS, .per_key = PER_KEY, .pause_ms = 150};
    pc_publish_start(&pub);
    gf_clock_sleep_ms(1500);
    spawn(&env, &c, "c"); /* join */
    struct share abc = {"a", "b", "c"};
    assert_true(gf_fnenv_eventually(fair, &env, &abc, 30000));

    int64_t killed = gf_clock_mono_ms();
    gf_proc_signal(&b, SIGKILL); /* die */
    assert_int_equal(gf_proc_wait(&b, 5000), 0);
    struct share ac = {"a", "c", NULL};
    assert_true(gf_fnenv_eventually(gone_to, &env, &ac, 30000));
    int64_t took = gf_clock_mono_ms() - killed;
    int64_t bound = PC_LEASE_TTL_MS + PC_LEASE_TTL_MS / 4 + 500 + 1500;
    printf("takeover on the cluster after %lld ms (bound %lld)\n", (long long)took,
           (long long)bound);
    assert_true(took <= bound);

    assert_true(gf_fnenv_stop(&a, 15000)); /* leave */
    spawn(&env, &d, "d");                  /* and join again */
    pc_verify(&pub, true);
    struct share cd = {"c", "d", NULL};
    assert_true(gf_fnenv_eventually(fair, &env, &cd, 30000));

    assert_true(gf_fnenv_stop(&c, 15000));
    assert_true(gf_fnenv_stop(&d, 15000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rebalance_and_takeover_on_a_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
