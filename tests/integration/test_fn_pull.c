/*
 * Durable pull consumer endpoints end to end, with the test worker function
 * (tests/fixtures/test_worker.c) against a real nats-server: ack after success,
 * redelivery after a nak, term, SIGKILL of a worker, SIGTERM drain, NATS restart.
 * Every job's handling is recorded durably by the worker before it acks, so these
 * tests count effects from the stream, not from the worker's own counters.
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

#include "fn_support.h"
#include "gamefn/clock.h"

#define WORKER "tests/gamefn-test-worker"

static char *const pull_env[] = {"GAMEFN_TEST_MODE=pull", NULL};

/* Deliveries recorded per job id "j<n>", for n < max. */
typedef struct tally {
    int max;
    int handled[256];     /* records per job */
    int redelivered[256]; /* records with delivery >= 2 */
    int distinct;
    int total;
} tally;

static void count(gf_fnenv *env, tally *t)
{
    gf_lines lines;
    int max = t->max;
    memset(t, 0, sizeof *t);
    t->max = max;
    assert_int_equal(gf_fnenv_results(env, "test.results.jobs", &lines), 0);
    for (size_t i = 0; i < lines.count; i++) {
        int id = -1, delivery = 0;
        if (sscanf(lines.lines[i], "j%d %d", &id, &delivery) != 2 || id < 0 || id >= t->max)
            fail_msg("unexpected record '%s'", lines.lines[i]);
        if (t->handled[id]++ == 0)
            t->distinct++;
        if (delivery >= 2)
            t->redelivered[id]++;
        t->total++;
    }
    gf_fnenv_lines_free(&lines);
}

struct want {
    tally *t;
    int distinct;
};

static bool all_handled(gf_fnenv *env, void *arg)
{
    struct want *w = arg;
    count(env, w->t);
    return w->t->distinct >= w->distinct;
}

/* The handler has started on a job (the worker records that first). A job merely
 * delivered may still be nak'd unstarted by a SIGTERM. */
static bool handler_started(gf_fnenv *env, void *arg)
{
    gf_lines lines;
    if (gf_fnenv_results(env, "test.results.starts", &lines) != 0)
        return false;
    bool started = lines.count > 0;
    gf_fnenv_lines_free(&lines);
    return started;
}

static void acks_after_success(void **state)
{
    gf_fnenv env;
    gf_proc w = {0};
    tally t = {.max = 200};
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "w1", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &w, "test-worker", "w1", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 200, NULL), 0);

    struct want want = {&t, 200};
    assert_true(gf_fnenv_eventually(all_handled, &env, &want, 20000));
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 10000));
    /* Past the ack wait (2 s): nothing comes back, so every ack reached the server. */
    gf_clock_sleep_ms(2500);
    count(&env, &t);
    assert_int_equal(t.total, 200);
    for (int i = 0; i < 200; i++)
        assert_int_equal(t.handled[i], 1);
    assert_true(gf_fnenv_stop(&w, 15000));
    gf_fnenv_free(&env);
}

static void nak_redelivers_and_term_does_not(void **state)
{
    gf_fnenv env;
    gf_proc w = {0};
    tally t = {.max = 10};
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "w1", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &w, "test-worker", "w1", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 1, "nak-once"), 0);
    assert_int_equal(gf_fnenv_publish_jobs(&env, 1, 2, "term"), 0);
    /* j2 carries a header the handler rejects as invalid before recording anything. */
    natsMsg *m = NULL;
    assert_int_equal(natsMsg_Create(&m, "test.jobs", NULL, "j2", 2), NATS_OK);
    assert_int_equal(natsMsgHeader_Set(m, "Test-Fail", "yes"), NATS_OK);
    assert_int_equal(js_PublishMsg(NULL, env.js, m, NULL, NULL), NATS_OK);
    natsMsg_Destroy(m);

    /* j0: delivery 1 (nak) then delivery 2 (ack); the consumer has no backoff, so
     * the runtime's own first delay (1 s) applies. */
    struct want want = {&t, 2};
    assert_true(gf_fnenv_eventually(all_handled, &env, &want, 10000));
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 10000));
    gf_clock_sleep_ms(2500);
    count(&env, &t);
    assert_int_equal(t.handled[0], 2);
    assert_int_equal(t.redelivered[0], 1);
    assert_int_equal(t.handled[1], 1); /* terminated: never again */
    assert_int_equal(t.redelivered[1], 0);
    assert_int_equal(t.handled[2], 0); /* invalid: terminated, not retried, not pending */
    assert_true(gf_fnenv_stop(&w, 15000));
    gf_fnenv_free(&env);
}

static void in_progress_keeps_a_long_job_from_redelivery(void **state)
{
    gf_fnenv env;
    gf_proc w = {0}, other = {0};
    tally t = {.max = 10};
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "w1", pull_env), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &other, WORKER, "w2", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &w, "test-worker", "w1", 10000));
    assert_true(gf_fnenv_wait_ready(&env, &other, "test-worker", "w2", 10000));
    /* 3 s of work against a 2 s ack wait: without in-progress the idle second
     * worker would get it again after 2 s. */
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 1, "long"), 0);
    struct want want = {&t, 1};
    assert_true(gf_fnenv_eventually(all_handled, &env, &want, 10000));
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 10000));
    gf_clock_sleep_ms(2500);
    count(&env, &t);
    assert_int_equal(t.total, 1);
    assert_int_equal(t.redelivered[0], 0);
    assert_true(gf_fnenv_stop(&w, 15000));
    assert_true(gf_fnenv_stop(&other, 15000));
    gf_fnenv_free(&env);
}

static bool handled_some(gf_fnenv *env, void *arg)
{
    tally *t = arg;
    count(env, t);
    return t->distinct >= 3;
}

static void sigkill_hands_unacked_work_to_another_worker(void **state)
{
    gf_fnenv env;
    gf_proc a = {0}, b = {0};
    tally t = {.max = 40};
    assert_int_equal(gf_fnenv_start(&env, "  test-worker:\n    delay: 150ms\n"), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, WORKER, "a", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &a, "test-worker", "a", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 40, NULL), 0);
    assert_true(gf_fnenv_eventually(handled_some, &env, &t, 10000));

    gf_proc_signal(&a, SIGKILL);
    assert_int_equal(gf_proc_wait(&a, 5000), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &b, WORKER, "b", pull_env), 0);

    struct want want = {&t, 40};
    assert_true(gf_fnenv_eventually(all_handled, &env, &want, 30000));
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 10000));
    count(&env, &t);
    /* a held a batch (up to 8) un-acked when it died: b got them as redeliveries. */
    int redelivered = 0;
    for (int i = 0; i < 40; i++) {
        assert_true(t.handled[i] >= 1);
        redelivered += t.redelivered[i];
    }
    assert_true(redelivered >= 1);
    assert_true(gf_fnenv_stop(&b, 15000));
    gf_fnenv_free(&env);
}

static void sigterm_finishes_and_acks_what_it_holds(void **state)
{
    gf_fnenv env;
    gf_proc a = {0}, b = {0};
    tally t = {.max = 30};
    assert_int_equal(gf_fnenv_start(&env, "  test-worker:\n    delay: 100ms\n"), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, WORKER, "a", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &a, "test-worker", "a", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 30, NULL), 0);
    assert_true(gf_fnenv_eventually(handled_some, &env, &t, 10000));
    assert_true(
        gf_fnenv_stop(&a, 15000)); /* mid-batch: it must finish and ack the batch it holds */

    assert_int_equal(gf_fnenv_spawn(&env, &b, WORKER, "b", pull_env), 0);
    struct want want = {&t, 30};
    assert_true(gf_fnenv_eventually(all_handled, &env, &want, 30000));
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 10000));
    gf_clock_sleep_ms(2500); /* past the ack wait: a late redelivery would show now */
    count(&env, &t);
    /* A job a fetched after SIGTERM arrived is nak'd unstarted (so b sees it as a second
     * delivery); none may be handled twice. */
    for (int i = 0; i < 30; i++) {
        if (t.handled[i] != 1) {
            gf_lines lines;
            gf_fnenv_results(&env, "test.results.jobs", &lines);
            for (size_t k = 0; k < lines.count; k++)
                fprintf(stderr, "record: %s\n", lines.lines[k]);
            gf_fnenv_lines_free(&lines);
            gf_proc_dump_log(&a, 40);
            fail_msg("job j%d was handled %d times", i, t.handled[i]);
        }
    }
    assert_int_equal(t.total, 30); /* nothing handled twice, nothing lost */
    assert_true(gf_fnenv_stop(&b, 15000));
    gf_fnenv_free(&env);
}

static void stuck_handler_is_abandoned_at_the_drain_deadline(void **state)
{
    gf_fnenv env;
    gf_proc w = {0};
    /* The handler takes 20 s; the drain deadline is 5 s (fn_support's config). */
    assert_int_equal(gf_fnenv_start(&env, "  test-worker:\n    delay: 20s\n"), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "stuck", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &w, "test-worker", "stuck", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 1, NULL), 0);
    assert_true(gf_fnenv_eventually(handler_started, &env, NULL, 10000));
    gf_proc_signal(&w, SIGTERM);
    /* Gone well before the handler could have finished, with exit code 1. */
    assert_int_equal(gf_proc_wait(&w, 12000), 0);
    assert_true(gf_proc_exited_with(&w, 1));
    tally t = {.max = 1};
    count(&env, &t);
    assert_int_equal(t.total, 0); /* never recorded, so JetStream will redeliver it */
    gf_fnenv_free(&env);
}

static void pulls_resume_after_nats_restarts(void **state)
{
    gf_fnenv env;
    gf_proc w = {0};
    tally t = {.max = 20};
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "w1", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &w, "test-worker", "w1", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 10, NULL), 0);
    struct want want = {&t, 10};
    assert_true(gf_fnenv_eventually(all_handled, &env, &want, 10000));

    assert_int_equal(gf_natsd_stop(env.natsd), 0);
    gf_clock_sleep_ms(1500);
    assert_true(gf_proc_running(&w)); /* rides out the outage */
    assert_int_equal(gf_natsd_restart(env.natsd), 0);
    gf_clock_sleep_ms(500); /* our own client reconnects too */
    assert_int_equal(gf_fnenv_publish_jobs(&env, 10, 20, NULL), 0);
    want.distinct = 20;
    assert_true(gf_fnenv_eventually(all_handled, &env, &want, 30000));
    for (int i = 0; i < 20; i++)
        assert_true(t.handled[i] >= 1);
    assert_true(gf_fnenv_stop(&w, 15000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(acks_after_success),
        cmocka_unit_test(nak_redelivers_and_term_does_not),
        cmocka_unit_test(in_progress_keeps_a_long_job_from_redelivery),
        cmocka_unit_test(sigkill_hands_unacked_work_to_another_worker),
        cmocka_unit_test(sigterm_finishes_and_acks_what_it_holds),
        cmocka_unit_test(stuck_handler_is_abandoned_at_the_drain_deadline),
        cmocka_unit_test(pulls_resume_after_nats_restarts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
