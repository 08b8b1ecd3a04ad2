/*
 * Dead letters end to end: the mover (functions/dlq) on both advisory kinds, the
 * consumer framework's recorded reasons, and `gamefn dlq ls|show|redrive`.
 *  - MAX_DELIVERIES: a plain pull consumer (the test worker) naks a job until
 *    max_deliver; its DeadLetter says max_deliveries.
 *  - MSG_TERMINATED: a framework consumer (tests/fixtures/test_consumer.c) fails an
 *    event transiently (delta 777) until its last try: dead-lettered with the reason
 *    "gave up at max_deliver: ..." and its attempts, while the partition moves on; a
 *    garbage message is dead-lettered as an invalid event.
 *  - After the fix, `gamefn dlq redrive` of the 777 letter, twice: applied exactly once.
 *  - The CLI's errors: an unknown DLQ sequence, a bad argument, NATS unreachable.
 *  - Scope: with the default functions.dlq.streams, a max-deliveries advisory about
 *    TEST_JOBS (not gamefn's) is acked and skipped, one about EVENTS is still moved.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "event_support.h"
#include "gamefn/clock.h"
#include "harness_util.h"

#define CONSUMER "tests/gamefn-test-consumer"
#define WORKER   "tests/gamefn-test-worker"
#define MOVER    "functions/dlq/gamefn-dlq"

static void options(gf_fnenv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->server_config = gf_ev_mapping;
    o->runtime = "  drain_timeout: 5s\n"
                 "  fetch_batch: 64\n"
                 "  fetch_expiry: 1s\n"
                 "  heartbeat: 250ms\n"
                 "  max_in_flight: 4\n";
    o->worker = "      ack_wait: 1s\n"
                "      max_deliver: 2\n"
                "      backoff: [200ms]\n";
    o->streams = "    - name: EVENTS\n"
                 "      subjects: [\"gamefn.v1.evp.>\"]\n"
                 "    - name: DLQ\n"
                 "      subjects: [\"gamefn.v1.dlq.>\"]\n"
                 "      duplicate_window: 1h\n"
                 "    - name: ADVISORIES\n"
                 "      subjects:\n"
                 "        - \"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>\"\n"
                 "        - \"$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>\"\n";
    o->consumers = GF_EV_SUMS_GROUP "    - stream: ADVISORIES\n"
                                    "      name: dlq\n"
                                    "      ack_wait: 5s\n"
                                    "      max_deliver: 10\n";
    o->buckets = GF_EV_SUMS_BUCKETS;
    o->functions = "  dlq:\n    streams: [EVENTS, TEST_JOBS]\n"; /* the worker's are moved too */
}

/* The letters `gamefn dlq ls --json` lists (a JSON array; the caller decrefs). */
static json_t *ls(gf_fnenv *env, const char *flag, const char *value)
{
    const char *args[] = {"dlq", "ls", "--json", flag, value, NULL};
    cli_result r = cli_runv(env, NULL, args);
    json_t *j = r.code == 0 ? cli_json_line(&r) : NULL;
    cli_result_free(&r);
    return j;
}

typedef struct letter_want {
    const char *stream, *consumer_prefix, *reason, *error_part;
    json_int_t dlq_seq, deliveries;
} letter_want;

static bool has_letter(gf_fnenv *env, void *arg)
{
    letter_want *w = arg;
    json_t *rows = ls(env, "--stream", w->stream);
    size_t i;
    json_t *row;
    bool found = false;
    json_array_foreach(rows, i, row)
    {
        const char *consumer = json_string_value(json_object_get(row, "consumer"));
        const char *reason = json_string_value(json_object_get(row, "reason"));
        const char *error = json_string_value(json_object_get(row, "error"));
        if (consumer && strncmp(consumer, w->consumer_prefix, strlen(w->consumer_prefix)) == 0 &&
            reason && strcmp(reason, w->reason) == 0 && error && strstr(error, w->error_part)) {
            w->dlq_seq = json_integer_value(json_object_get(row, "dlq_seq"));
            w->deliveries = json_integer_value(json_object_get(row, "deliveries"));
            found = true;
        }
    }
    json_decref(rows);
    return found;
}

typedef struct sums_want {
    const char *player, *value;
} sums_want;

static bool sums_are(gf_fnenv *env, void *arg)
{
    sums_want *w = arg;
    char got[64];
    return gf_ev_sums(env->js, w->player, got, sizeof got) >= 0 && strcmp(got, w->value) == 0;
}

static void publish_delta(gf_fnenv *env, const char *source, uint64_t seq, const char *player,
                          int64_t delta)
{
    uint8_t *data = NULL;
    size_t len = 0;
    assert_int_equal(gf_ev_score(source, seq, player, delta, NULL, 0, &data, &len), 0);
    assert_int_equal(gf_ev_publish(env->js, player, "score", data, len, source, seq, NULL, false),
                     0);
    free(data);
}

static void both_advisories_reasons_and_a_double_redrive(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc consumer = {0}, fixed = {0}, worker = {0}, mover = {0};
    cli_result r = {0};
    options(&o);
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    char *pull[] = {"GAMEFN_TEST_MODE=pull", NULL};
    assert_int_equal(gf_fnenv_spawn_ready(&env, &mover, MOVER, "dlq", "mover", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &worker, WORKER, "test-worker", "w", pull), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &consumer, CONSUMER, "test-consumer", "c", NULL),
                     0);

    /* MAX_DELIVERIES from a plain pull consumer. */
    assert_int_equal(gf_fnenv_publish_job(&env, "j1 fail"), 0);
    letter_want job = {.stream = "TEST_JOBS",
                       .consumer_prefix = "worker",
                       .reason = "max_deliveries",
                       .error_part = ""};
    assert_true(gf_fnenv_eventually(has_letter, &env, &job, 30000));
    assert_true(job.deliveries >= 2);

    /* MSG_TERMINATED from the framework: transient until the last try, with its reason;
     * the partition goes on (p1's later event is applied). */
    publish_delta(&env, "gs-1", 1, "p1", 777);
    publish_delta(&env, "gs-1", 2, "p1", 5);
    letter_want poison = {.stream = "EVENTS",
                          .consumer_prefix = "sums-p",
                          .reason = "terminated",
                          .error_part = "gave up at max_deliver"};
    assert_true(gf_fnenv_eventually(has_letter, &env, &poison, 30000));
    assert_true(poison.deliveries >= 3);
    sums_want after = {"p1", "1 5"};
    assert_true(gf_fnenv_eventually(sums_are, &env, &after, 10000));
    assert_int_equal(
        gf_ev_publish_raw(env.js, "gamefn.v1.event.p2.score", "\x01\x02\x03", 3, "garbage-1"), 0);
    letter_want garbage = {.stream = "EVENTS",
                           .consumer_prefix = "sums-p",
                           .reason = "terminated",
                           .error_part = "invalid event"};
    assert_true(gf_fnenv_eventually(has_letter, &env, &garbage, 30000));

    /* show, and the CLI's errors */
    char seq[24];
    snprintf(seq, sizeof seq, "%" JSON_INTEGER_FORMAT, poison.dlq_seq);
    cli_result_free(&r);
    r = cli_run(&env, NULL, "dlq", "show", seq, NULL);
    assert_int_equal(r.code, 0);
    assert_non_null(strstr(r.out, "gave up at max_deliver"));
    assert_non_null(strstr(r.out, "delta 777"));
    cli_result_free(&r);
    r = cli_run(&env, NULL, "dlq", "show", "99999", NULL); /* an unknown name */
    cli_expect(&r, 4, "no dead letter at DLQ sequence 99999");
    r = cli_run(&env, NULL, "dlq", "redrive", "x", NULL);
    cli_expect(&r, 2, "not a DLQ sequence");
    r = cli_run(&env, NULL, "dlq", "frobnicate", NULL);
    assert_int_equal(r.code, 2);

    /* Fixed, re-driven twice: applied once. */
    assert_true(gf_fnenv_stop(&consumer, 15000));
    char *accept[] = {"TEST_CONSUMER_ACCEPT_666=1", NULL};
    assert_int_equal(gf_fnenv_spawn_ready(&env, &fixed, CONSUMER, "test-consumer", "f", accept), 0);
    cli_result_free(&r);
    r = cli_run(&env, NULL, "dlq", "redrive", seq, NULL);
    cli_expect(&r, 0, "redriven DLQ");
    r = cli_run(&env, NULL, "dlq", "redrive", seq, "--json", NULL);
    assert_int_equal(r.code, 0);
    sums_want once = {"p1", "2 782"};
    assert_true(gf_fnenv_eventually(sums_are, &env, &once, 15000));
    gf_clock_sleep_ms(1500); /* the second re-drive has been handled as well */
    assert_true(sums_are(&env, &once));

    /* NATS unreachable: a clear error, exit 3. */
    char saved[sizeof env.config_path], dead[sizeof env.config_path];
    snprintf(saved, sizeof saved, "%s", env.config_path);
    snprintf(dead, sizeof dead, "%s/dead.yaml", env.dir);
    FILE *f = fopen(dead, "w");
    assert_non_null(f);
    fprintf(f, "nats:\n  servers: [\"nats://127.0.0.1:1\"]\n");
    fclose(f);
    snprintf(env.config_path, sizeof env.config_path, "%s", dead);
    cli_result_free(&r);
    r = cli_run(&env, NULL, "dlq", "ls", NULL);
    cli_expect(&r, 3, "cannot connect to NATS at nats://127.0.0.1:1");
    r = cli_run(&env, NULL, "lb", "top", NULL);
    cli_expect(&r, 3, "cannot connect to NATS");
    snprintf(env.config_path, sizeof env.config_path, "%s", saved);
    cli_result_free(&r);

    assert_true(gf_fnenv_stop(&fixed, 15000));
    assert_true(gf_fnenv_stop(&worker, 15000));
    assert_true(gf_fnenv_stop(&mover, 15000));
    gf_fnenv_free(&env);
}

/* Letters `gamefn dlq ls` lists for `stream` (among the first 100); -1 if ls failed. */
static int letters_of(gf_fnenv *env, const char *stream)
{
    json_t *rows = ls(env, "--limit", "100"), *row;
    size_t i;
    int n = rows ? 0 : -1;
    json_array_foreach(rows, i, row)
    {
        n += strcmp(json_string_value(json_object_get(row, "stream")), stream) == 0;
    }
    json_decref(rows);
    return n;
}

/* A max-deliveries advisory about EVENTS from a plain durable of its own: delivered once
 * (max_deliver 1), never acked; the next pull after its ack wait makes the server give up. */
static void exhaust_on_events(gf_fnenv *env)
{
    assert_int_equal(gf_fnenv_add_stream(env->js, "EVENTS", "gamefn.v1.evp.>"), NATS_OK);
    assert_int_equal(
        gf_ev_publish_raw(env->js, "gamefn.v1.event.p7.score", "\x01\x02", 2, "plain-1"), 0);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "plain";
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = 300 * 1000000LL;
    cc.MaxDeliver = 1;
    natsSubscription *sub = th_pull_consumer(env->js, "EVENTS", &cc);
    natsMsgList list = {0};
    assert_int_equal(natsSubscription_Fetch(&list, sub, 1, 2000, NULL), NATS_OK);
    natsMsgList_Destroy(&list); /* not acked */
    gf_clock_sleep_ms(600);
    assert_int_equal(natsSubscription_Fetch(&list, sub, 1, 1000, NULL), NATS_TIMEOUT);
    natsSubscription_Destroy(sub); /* bound: never deletes the durable */
}

static void only_the_configured_streams_are_moved(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc worker = {0}, mover = {0};
    options(&o);
    o.functions = NULL; /* the default streams: EVENTS, MATCHES, ADVISORIES */
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    char *pull[] = {"GAMEFN_TEST_MODE=pull", NULL};
    assert_int_equal(gf_fnenv_spawn_ready(&env, &mover, MOVER, "dlq", "mover", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &worker, WORKER, "test-worker", "w", pull), 0);

    /* The worker's job exhausts max_deliver: acked and skipped, no letter. */
    assert_int_equal(gf_fnenv_publish_job(&env, "j1 fail"), 0);
    assert_true(gf_fnenv_wait_log(&mover, "advisory skipped", 30000));
    assert_int_equal(gf_fnenv_log_count(&mover, "stream=TEST_JOBS consumer=worker"), 1);

    /* One about EVENTS is moved. */
    exhaust_on_events(&env);
    letter_want plain = {.stream = "EVENTS",
                         .consumer_prefix = "plain",
                         .reason = "max_deliveries",
                         .error_part = ""};
    assert_true(gf_fnenv_eventually(has_letter, &env, &plain, 30000));
    assert_int_equal(letters_of(&env, "EVENTS"), 1);
    assert_int_equal(letters_of(&env, "TEST_JOBS"), 0);

    /* Each counted once (the skipped advisory was acked, not terminated). */
    assert_true(gf_fnenv_stop(&mover, 15000));
    assert_int_equal(gf_fnenv_log_count(&mover, "advisory skipped"), 1);
    assert_int_equal(gf_fnenv_log_count(&mover, "moved_total=1 skipped_total=1"), 1);
    assert_true(gf_fnenv_stop(&worker, 15000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(both_advisories_reasons_and_a_double_redrive),
        cmocka_unit_test(only_the_configured_streams_are_moved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
