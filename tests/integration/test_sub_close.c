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
 * And gf_sub_forget() / gf_sub_unsubscribed_passed(), the flush after an unsubscribe
 * (docs/NATS-FACTS.md §4): subscriptions forgotten while another connection streams
 * messages at them (under ASan, a read loop still inside a freed subscription is a
 * report); no PONG from a stopped (SIGSTOP) server: not passed, within the bound;
 * a closed connection: passed at once; KV watchers forgotten (gf_kv_watcher_forget) while
 * another connection keeps writing the key they watch.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <nats/nats.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "natsd.h"
#include "proc.h"

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

typedef struct streamer {
    const char *url, *subject;
    atomic_int stop;
    long sent;
} streamer;

/* Publishes on st->subject from its own connection, as fast as it goes, until told to
 * stop (on a KV key's subject, $KV.<bucket>.<key>, the bucket's stream stores them). */
static void *stream_main(void *arg)
{
    streamer *st = arg;
    natsConnection *nc = NULL;
    if (natsConnection_ConnectTo(&nc, st->url) != NATS_OK)
        return NULL;
    while (!atomic_load(&st->stop)) {
        for (int i = 0; i < 64; i++) {
            if (natsConnection_PublishString(nc, st->subject, "x") == NATS_OK)
                st->sent++;
        }
        natsConnection_Flush(nc);
    }
    natsConnection_Destroy(nc);
    return NULL;
}

static void forget_while_messages_arrive(void **state)
{
    env *e = *state;
    enum { CYCLES = 300 };
    streamer st = {.url = gf_natsd_url(e->srv), .subject = "sub.forget"};
    pthread_t tid;
    assert_int_equal(pthread_create(&tid, NULL, stream_main, &st), 0);
    int received = 0;
    for (int i = 0; i < CYCLES; i++) {
        natsSubscription *sub = NULL;
        assert_int_equal(natsConnection_SubscribeSync(&sub, e->nc, "sub.forget"), NATS_OK);
        assert_int_equal(natsConnection_Flush(e->nc), NATS_OK);
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, 1000) == NATS_OK) {
            received++;
            natsMsg_Destroy(m);
        }
        gf_sub_forget(e->nc, sub, 5000);
    }
    atomic_store(&st.stop, 1);
    pthread_join(tid, NULL);
    /* The stream really ran into the subscriptions being forgotten. */
    assert_true(st.sent > 0);
    assert_int_equal(received, CYCLES);
    assert_int_equal(natsConnection_Status(e->nc), NATS_CONN_STATUS_CONNECTED);
}

static void no_pong_is_not_passed(void **state)
{
    env *e = *state;
    pid_t pid = gf_natsd_pid(e->srv);
    assert_true(pid > 0);
    assert_true(gf_proc_pid_stop(pid, 5000));
    int64_t t0 = gf_clock_mono_ms();
    bool passed = gf_sub_unsubscribed_passed(e->nc, 300);
    int64_t took = gf_clock_mono_ms() - t0;
    assert_int_equal(kill(pid, SIGCONT), 0);
    assert_false(passed);
    assert_true(took >= 300 && took < 5000);
    /* Once the server answers again, so does the barrier. */
    assert_true(gf_sub_unsubscribed_passed(e->nc, 5000));
}

static void a_closed_connection_has_passed(void **state)
{
    env *e = *state;
    natsConnection *nc = NULL;
    assert_int_equal(natsConnection_ConnectTo(&nc, gf_natsd_url(e->srv)), NATS_OK);
    natsSubscription *sub = NULL;
    assert_int_equal(natsConnection_SubscribeSync(&sub, nc, "sub.closed"), NATS_OK);
    natsConnection_Close(nc);
    assert_true(gf_sub_unsubscribed_passed(nc, 5000));
    gf_sub_forget(nc, sub, 5000); /* frees it: nothing left for ASan's leak check */
    natsConnection_Destroy(nc);
    gf_sub_forget(e->nc, NULL, 100); /* NULL is fine */
}

static void kv_watcher_forget_while_updates_arrive(void **state)
{
    (void)state;
    enum { CYCLES = 200 };
    gf_natsd *srv = NULL;
    gf_natsd_opts opts = {0};
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    kvStore *kv = NULL;
    assert_int_equal(gf_natsd_start(&opts, &srv), 0);
    assert_int_equal(natsConnection_ConnectTo(&nc, gf_natsd_url(srv)), NATS_OK);
    assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = "watched";
    assert_int_equal(js_CreateKeyValue(&kv, js, &kc), NATS_OK);
    assert_int_equal(kvStore_PutString(NULL, kv, "k", "first"), NATS_OK);

    streamer wr = {.url = gf_natsd_url(srv), .subject = "$KV.watched.k"};
    pthread_t tid;
    assert_int_equal(pthread_create(&tid, NULL, stream_main, &wr), 0);
    int seen = 0;
    for (int i = 0; i < CYCLES; i++) {
        kvWatcher *w = NULL;
        assert_int_equal(kvStore_Watch(&w, kv, "k", NULL), NATS_OK);
        kvEntry *e = NULL;
        if (kvWatcher_Next(&e, w, 5000) == NATS_OK && e) {
            seen++;
            kvEntry_Destroy(e);
        }
        gf_kv_watcher_forget(nc, w, 5000);
    }
    atomic_store(&wr.stop, 1);
    pthread_join(tid, NULL);
    assert_int_equal(seen, CYCLES);      /* every watcher got the key's value */
    assert_true(wr.sent > 0);            /* and writes kept coming meanwhile */
    gf_kv_watcher_forget(nc, NULL, 100); /* NULL is fine */
    kvStore_Destroy(kv);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
}

int main(void)
{
    gf_log_init("test_sub_close", GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(waits_for_the_running_callback),
        cmocka_unit_test(a_callback_longer_than_the_timeout_is_reported),
        cmocka_unit_test(null_is_fine),
        cmocka_unit_test(forget_while_messages_arrive),
        cmocka_unit_test(no_pong_is_not_passed),
        cmocka_unit_test(a_closed_connection_has_passed),
        cmocka_unit_test(kv_watcher_forget_while_updates_arrive),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
