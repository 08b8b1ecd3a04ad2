/*
 * test_fn_concurrency.c — request endpoints under load, against a real nats-server:
 * `concurrency` handlers really run at once (seen from inside the handlers), a drain
 * waits for every one of them, a handler stuck past runtime.request_deadline makes
 * the instance unhealthy in $SRV (no PING answer, INFO says why) until it returns, and
 * requests dropped under overload (runtime.max_queued_requests) show in $SRV STATS.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fn_support.h"
#include "gamefn/clock.h"

#define WORKER "tests/gamefn-test-worker"

static char *const four_handlers[] = {"GAMEFN_TEST_MODE=request", "GAMEFN_TEST_CONCURRENCY=4",
                                      NULL};

/* Starts a server (with `runtime_yaml`, may be NULL) and one test worker in request
 * mode with `env_vars`, ready to take requests. */
static void start_worker(gf_fnenv *env, gf_proc *w, const char *id, char *const env_vars[],
                         const char *runtime_yaml)
{
    gf_fnenv_opts opts = {.runtime = runtime_yaml};
    assert_int_equal(gf_fnenv_start_opts(env, &opts), 0);
    assert_int_equal(gf_fnenv_spawn_ready(env, w, WORKER, "test-worker", id, env_vars), 0);
}

/* The inbox that collects the replies of requests sent at once. */
typedef struct replies {
    natsInbox *inbox;
    natsSubscription *sub;
} replies;

/* Sends `n` requests at once, each with `payload`, to one inbox. */
static replies send_all(gf_fnenv *env, const char *payload, int n)
{
    replies r = {0};
    assert_int_equal(natsInbox_Create(&r.inbox), NATS_OK);
    assert_int_equal(natsConnection_SubscribeSync(&r.sub, env->nc, r.inbox), NATS_OK);
    for (int i = 0; i < n; i++)
        assert_int_equal(natsConnection_PublishRequest(env->nc, "test.request", r.inbox, payload,
                                                       (int)strlen(payload)),
                         NATS_OK);
    assert_int_equal(natsConnection_Flush(env->nc), NATS_OK);
    return r;
}

static void replies_free(replies *r)
{
    natsSubscription_Destroy(r->sub);
    natsInbox_Destroy(r->inbox);
}

/* Receives `n` replies within timeout_ms each; returns how many came. */
static int receive(replies *r, int n, int timeout_ms, const char *want)
{
    int got = 0;
    for (int i = 0; i < n; i++) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, r->sub, timeout_ms) != NATS_OK)
            break;
        if (want) {
            char body[32];
            snprintf(body, sizeof body, "%.*s", natsMsg_GetDataLength(m), natsMsg_GetData(m));
            if (strcmp(body, want) != 0)
                fail_msg("reply %d is '%s', want '%s'", i, body, want);
        }
        got++;
        natsMsg_Destroy(m);
    }
    return got;
}

static void handlers_run_at_once(void **state)
{
    gf_fnenv env;
    gf_proc w = {0};
    start_worker(&env, &w, "c4", four_handlers, NULL);

    /* Four requests; each handler waits until all four are inside at once. With one
     * handler at a time the first would give up after 3 s and answer 1. */
    replies r = send_all(&env, "barrier:4", 4);
    assert_int_equal(receive(&r, 4, 5000, "4"), 4);
    replies_free(&r);
    assert_true(gf_fnenv_stop(&w, 10000));
    gf_fnenv_free(&env);
}

static void drain_waits_for_every_handler(void **state)
{
    gf_fnenv env;
    gf_proc w = {0};
    start_worker(&env, &w, "d4", four_handlers, NULL);

    replies r = send_all(&env, "sleep:800", 6);
    gf_clock_sleep_ms(300); /* four handlers sleep, two requests wait for one */
    gf_proc_signal(&w, SIGTERM);
    assert_int_equal(receive(&r, 6, 5000, "sleep:800"), 6);
    assert_int_equal(gf_proc_wait(&w, 10000), 0);
    assert_true(gf_proc_exited_with(&w, 0));
    replies_free(&r);
    gf_fnenv_free(&env);
}

static json_t *srv_json(gf_fnenv *env, const char *verb)
{
    char subject[128], *text = NULL;
    snprintf(subject, sizeof subject, "$SRV.%s.test-worker.s2", verb);
    if (gf_fnenv_srv(env, subject, &text) != 0)
        return NULL;
    json_t *root = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(root);
    return root;
}

static const char *metadata(json_t *root, const char *key)
{
    return json_string_value(json_object_get(json_object_get(root, "metadata"), key));
}

static bool pings(gf_fnenv *env, void *arg)
{
    json_t *root = srv_json(env, "PING");
    json_decref(root);
    return root != NULL;
}

static void stuck_handler_makes_the_instance_unhealthy(void **state)
{
    char *const two[] = {"GAMEFN_TEST_MODE=request", "GAMEFN_TEST_CONCURRENCY=2", NULL};
    gf_fnenv env;
    gf_proc w = {0};
    start_worker(&env, &w, "s2", two, "  request_deadline: 400ms\n");
    char why[256] = "";
    assert_int_equal(gf_fnenv_health(&env, "test-worker", "s2", why, sizeof why), 1);

    replies r = send_all(&env, "sleep:2500", 1);
    gf_clock_sleep_ms(900);
    /* Past the deadline: no PING answer; INFO and STATS say why. */
    assert_null(srv_json(&env, "PING"));
    assert_int_equal(gf_fnenv_health(&env, "test-worker", "s2", why, sizeof why), 0);
    assert_non_null(strstr(why, "request_deadline"));
    /* The other handler still serves. */
    natsMsg *reply = NULL;
    assert_int_equal(natsConnection_Request(&reply, env.nc, "test.request", "hi", 2, 2000),
                     NATS_OK);
    natsMsg_Destroy(reply);

    /* The stuck handler returns (its reply is still sent) and PING answers again. */
    assert_int_equal(receive(&r, 1, 5000, "sleep:2500"), 1);
    assert_true(gf_fnenv_eventually(pings, &env, NULL, 2000));
    json_t *root = srv_json(&env, "STATS");
    assert_string_equal(metadata(root, "healthy"), "true");
    json_decref(root);
    replies_free(&r);
    assert_true(gf_fnenv_stop(&w, 10000));
    gf_fnenv_free(&env);
}

typedef struct counts {
    json_int_t requests, errors, dropped;
} counts;

static counts stats_counts(gf_fnenv *env)
{
    counts c = {0};
    char *text = NULL;
    assert_int_equal(gf_fnenv_srv(env, "$SRV.STATS.test-worker.o1", &text), 0);
    json_t *root = json_loads(text, 0, NULL);
    free(text);
    json_t *ep = json_array_get(json_object_get(root, "endpoints"), 0);
    c.requests = json_integer_value(json_object_get(ep, "num_requests"));
    c.errors = json_integer_value(json_object_get(ep, "num_errors"));
    c.dropped = json_integer_value(json_object_get(ep, "num_dropped"));
    json_decref(root);
    return c;
}

static bool all_counted(gf_fnenv *env, void *arg)
{
    return stats_counts(env).requests == *(json_int_t *)arg;
}

static void overload_drops_show_in_stats(void **state)
{
    char *const one[] = {"GAMEFN_TEST_MODE=request", NULL};
    gf_fnenv env;
    gf_proc w = {0};
    start_worker(&env, &w, "o1", one, "  max_queued_requests: 2\n");

    enum { N = 40 };
    replies r = send_all(&env, "sleep:50", N);
    int answered = receive(&r, N, 1500, NULL);
    json_int_t want = N;
    assert_true(gf_fnenv_eventually(all_counted, &env, &want, 5000));
    counts c = stats_counts(&env);
    /* Every request is counted once: answered, or dropped (an error). */
    assert_true(c.dropped >= 1);
    assert_int_equal(c.dropped, N - answered);
    assert_int_equal(c.errors, c.dropped);
    assert_true(gf_fnenv_wait_log(&w, "requests dropped", 1000));
    replies_free(&r);
    assert_true(gf_fnenv_stop(&w, 10000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handlers_run_at_once),
        cmocka_unit_test(drain_waits_for_every_handler),
        cmocka_unit_test(stuck_handler_makes_the_instance_unhealthy),
        cmocka_unit_test(overload_drops_show_in_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
