/*
 * test_sub_close.c — gf_sub_close() against a real nats-server: when it returns, the
 * subscription's callback is not running and will not run again, so the caller may free
 * what the callback uses. natsSubscription_Destroy alone returns while a callback is
 * still running on the delivery thread; every case holds a callback in progress (it
 * sleeps) at the moment of the close:
 *  - the close waits for it, and for a message queued behind it (a drain delivers what
 *    the client already has), then returns true;
 *  - a callback that outlasts the timeout: false, and the close returns without it;
 *  - NULL is fine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <nats/nats.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "natsd.h"

typedef struct slow_cb {
    int sleep_ms;
    atomic_int started;
    atomic_int finished;
} slow_cb;

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    slow_cb *s = closure;
    atomic_fetch_add(&s->started, 1);
    gf_clock_sleep_ms(s->sleep_ms);
    atomic_fetch_add(&s->finished, 1);
    natsMsg_Destroy(m);
}

typedef struct env {
    gf_natsd *srv;
    natsConnection *nc;
} env;

static int setup(void **state)
{
    static env e;
    gf_natsd_opts opts = {.no_jetstream = true};
    if (gf_natsd_start(&opts, &e.srv) != 0 ||
        natsConnection_ConnectTo(&e.nc, gf_natsd_url(e.srv)) != NATS_OK)
        return -1;
    *state = &e;
    return 0;
}

static int teardown(void **state)
{
    env *e = *state;
    natsConnection_Destroy(e->nc);
    gf_natsd_free(e->srv);
    return 0;
}

/* Subscribes s's callback on subject, publishes n messages and waits until the first
 * callback is running. */
static natsSubscription *busy_subscription(env *e, const char *subject, slow_cb *s, int n)
{
    natsSubscription *sub = NULL;
    assert_int_equal(natsConnection_Subscribe(&sub, e->nc, subject, on_msg, s), NATS_OK);
    assert_int_equal(natsConnection_Flush(e->nc), NATS_OK);
    for (int i = 0; i < n; i++)
        assert_int_equal(natsConnection_PublishString(e->nc, subject, "x"), NATS_OK);
    assert_int_equal(natsConnection_Flush(e->nc), NATS_OK);
    for (int waited = 0; atomic_load(&s->started) == 0 && waited < 5000; waited += 5)
        gf_clock_sleep_ms(5);
    assert_int_equal(atomic_load(&s->started), 1);
    return sub;
}

static void waits_for_the_running_callback(void **state)
{
    env *e = *state;
    slow_cb s = {.sleep_ms = 300};
    /* Two messages: the second is in the client's queue behind the running callback. */
    natsSubscription *sub = busy_subscription(e, "sub.close.wait", &s, 2);
    assert_int_equal(atomic_load(&s.finished), 0);
    assert_true(gf_sub_close(sub, 5000));
    /* Nothing runs after the return: both callbacks have ended, none is left. */
    assert_int_equal(atomic_load(&s.finished), 2);
    assert_int_equal(atomic_load(&s.started), 2);
    gf_clock_sleep_ms(100);
    assert_int_equal(atomic_load(&s.started), 2);
}

static void a_callback_longer_than_the_timeout_is_reported(void **state)
{
    env *e = *state;
    static slow_cb s = {.sleep_ms = 3000}; /* may outlive this frame: static */
    natsSubscription *sub = busy_subscription(e, "sub.close.slow", &s, 1);
    int64_t t0 = gf_clock_mono_ms();
    assert_false(gf_sub_close(sub, 200));
    assert_true(gf_clock_mono_ms() - t0 < 2500); /* it did not wait for the callback */
    for (int waited = 0; atomic_load(&s.finished) == 0 && waited < 10000; waited += 10)
        gf_clock_sleep_ms(10);
    assert_int_equal(atomic_load(&s.finished), 1);
}

static void null_is_fine(void **state)
{
    (void)state;
    assert_true(gf_sub_close(NULL, 100));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(waits_for_the_running_callback),
        cmocka_unit_test(a_callback_longer_than_the_timeout_is_reported),
        cmocka_unit_test(null_is_fine),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
