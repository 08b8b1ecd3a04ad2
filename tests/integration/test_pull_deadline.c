/*
 * test_pull_deadline.c — a partition's fetch never holds a pull request open past its
 * tenure's deadline (gf__pull_fetch_until, runtime/src/endpoints/pull_consumer.h).
 *
 * Why it matters: a request still open at the server when the next owner starts takes
 * a message the next owner then never sees. The late owner drops it unacked, and under
 * ack_policy all the next owner's ack of a later message covers it: the event is lost
 * (seen once in CI: a consumer woken from SIGSTOP between the two requests of one fetch
 * sent the second with the whole poll as its expiry, long after its lease had passed;
 * one player's sum came out one event short).
 *
 * The fetch here has a 1-s poll and a deadline 600 ms away, on an empty stream, so its
 * first (NoWait) request waits out what is left of the deadline and the second is never
 * sent. A message published 300 ms past the deadline must stay at the server for
 * anyone else: not delivered to this subscription. Without the deadline the fetch would
 * still be polling then and take it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>

#include "endpoints/pull_consumer.h"
#include "fn_support.h"
#include "gamefn/clock.h"

enum { POLL_MS = 1000, DEADLINE_IN_MS = 600, LATE_BY_MS = 300 };

typedef struct fetch_run {
    natsSubscription *sub;
    int64_t deadline_ms, poll_ms;
    natsStatus s;
    int count;
} fetch_run;

static void *fetch_thread(void *arg)
{
    fetch_run *f = arg;
    natsMsgList list = {0};
    f->s = gf__pull_fetch_until(f->sub, &list, 10, f->poll_ms, f->deadline_ms);
    f->count = list.Count;
    natsMsgList_Destroy(&list);
    return NULL;
}

static void fetch_stops_at_the_deadline(void **state)
{
    (void)state;
    gf_fnenv env;
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_add_stream(env.js, "DEADLINE", "deadline.>"), NATS_OK);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "part";
    cc.AckPolicy = js_AckAll;
    assert_int_equal(js_AddConsumer(NULL, env.js, "DEADLINE", &cc, NULL, NULL), NATS_OK);
    natsSubscription *sub = NULL;
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "DEADLINE";
    so.Consumer = "part";
    assert_int_equal(js_PullSubscribe(&sub, env.js, "deadline.>", "part", NULL, &so, NULL),
                     NATS_OK);

    fetch_run f = {
        .sub = sub, .poll_ms = POLL_MS, .deadline_ms = gf_clock_mono_ms() + DEADLINE_IN_MS};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fetch_thread, &f), 0);
    while (gf_clock_mono_ms() < f.deadline_ms + LATE_BY_MS)
        gf_clock_sleep_ms(10);
    assert_int_equal(js_Publish(NULL, env.js, "deadline.x", "late", 4, NULL, NULL), NATS_OK);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(f.s, NATS_TIMEOUT);
    assert_int_equal(f.count, 0);

    /* Still at the server, delivered to nobody, and no request of ours left open. */
    gf_clock_sleep_ms(200);
    jsConsumerInfo *ci = NULL;
    assert_int_equal(js_GetConsumerInfo(&ci, env.js, "DEADLINE", "part", NULL, NULL), NATS_OK);
    printf("after the deadline: pending %llu, ack pending %lld, waiting requests %lld\n",
           (unsigned long long)ci->NumPending, (long long)ci->NumAckPending,
           (long long)ci->NumWaiting);
    assert_int_equal(ci->NumAckPending, 0);
    assert_int_equal(ci->NumPending, 1);
    assert_int_equal(ci->NumWaiting, 0);
    jsConsumerInfo_Destroy(ci);

    natsSubscription_Destroy(sub);
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fetch_stops_at_the_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
