/*
 * Pull endpoints under the faults found by probing them (issue 6, faults 2-5), with the
 * test worker (tests/fixtures/test_worker.c) against a real nats-server. The worker
 * records every handler start (test.results.starts) and every completion
 * (test.results.jobs) durably, so the counts come from the stream, not from the worker.
 *
 *  - Handlers run concurrently up to runtime.max_in_flight and nothing is fetched for a
 *    busy pool, so a queued batch tail cannot pass its ack wait (fault 3), also when a
 *    consumer backoff makes the ack wait 1 s and handlers take longer (in-progress).
 *  - A SIGKILL burns deliveries only of messages whose handler started (fault 2).
 *  - A stream that disappears is recreated; while it cannot be, the instance is unhealthy
 *    in $SRV (no PING answer, INFO says why) (fault 4).
 *  - A deleted consumer is recreated where it was, not from the stream's start (fault 5).
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
#define JOBS   10

static char *const pull_env[] = {"GAMEFN_TEST_MODE=pull", NULL};

/* The setting: fetch_batch 64, so a worker that held what it fetched would hold
 * every job; 4 handlers at once per instance. */
static const char runtime_pool4[] = "  drain_timeout: 5s\n"
                                    "  fetch_batch: 64\n"
                                    "  max_in_flight: 4\n"
                                    "  fetch_expiry: 1s\n"
                                    "  heartbeat: 250ms\n";

typedef struct counts {
    int starts[JOBS];          /* handler starts per job */
    unsigned start_mask[JOBS]; /* bit d set: a handler started on delivery d */
    int completions[JOBS];     /* handlers that finished (recorded before the ack) */
    int max_delivery[JOBS];
} counts;

static void read_counts(gf_fnenv *env, counts *c)
{
    gf_lines lines;
    memset(c, 0, sizeof *c);
    assert_int_equal(gf_fnenv_results(env, "test.results.starts", &lines), 0);
    for (size_t i = 0; i < lines.count; i++) {
        int id = -1, d = 0;
        if (sscanf(lines.lines[i], "start j%d %d", &id, &d) != 2 || id < 0 || id >= JOBS || d < 1)
            fail_msg("unexpected start record '%s'", lines.lines[i]);
        c->starts[id]++;
        c->start_mask[id] |= 1u << (d < 31 ? d : 31);
        if (d > c->max_delivery[id])
            c->max_delivery[id] = d;
    }
    gf_fnenv_lines_free(&lines);
    assert_int_equal(gf_fnenv_results(env, "test.results.jobs", &lines), 0);
    for (size_t i = 0; i < lines.count; i++) {
        int id = -1;
        if (sscanf(lines.lines[i], "j%d", &id) != 1 || id < 0 || id >= JOBS)
            fail_msg("unexpected record '%s'", lines.lines[i]);
        c->completions[id]++;
    }
    gf_fnenv_lines_free(&lines);
}

static bool all_completed(gf_fnenv *env, void *arg)
{
    counts *c = arg;
    read_counts(env, c);
    for (int i = 0; i < JOBS; i++) {
        if (c->completions[i] == 0)
            return false;
    }
    return true;
}

/* Two workers handle ten jobs; every job's handler runs exactly once. */
static void two_workers_run_each_job_once(const gf_fnenv_opts *opts)
{
    gf_fnenv env;
    gf_proc a = {0}, b = {0};
    counts c;
    assert_int_equal(gf_fnenv_start_opts(&env, opts), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, WORKER, "a", pull_env), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &b, WORKER, "b", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &a, "test-worker", "a", 10000));
    assert_true(gf_fnenv_wait_ready(&env, &b, "test-worker", "b", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, JOBS, NULL), 0);
    if (!gf_fnenv_eventually(all_completed, &env, &c, 30000)) {
        gf_proc_dump_log(&a, 40);
        gf_proc_dump_log(&b, 40);
        for (int i = 0; i < JOBS; i++)
            fprintf(stderr, "j%d: %d starts, %d completions\n", i, c.starts[i], c.completions[i]);
        fail_msg("not every job completed in 30 s");
    }
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 10000));
    gf_clock_sleep_ms(2500); /* past any ack wait: a late redelivery would show now */
    read_counts(&env, &c);
    for (int i = 0; i < JOBS; i++) {
        if (c.starts[i] != 1 || c.completions[i] != 1 || c.max_delivery[i] != 1)
            fail_msg("job j%d: %d handler starts, %d completions, delivery %d (want 1, 1, 1)", i,
                     c.starts[i], c.completions[i], c.max_delivery[i]);
    }
    assert_true(gf_fnenv_stop(&a, 15000));
    assert_true(gf_fnenv_stop(&b, 15000));
    gf_fnenv_free(&env);
}

/* Fault 3 as reported: 1 s per job, 2 s ack wait, two workers, ten jobs, the default
 * pool and batch (64): one worker used to take all ten and run them one by one. */
static void no_job_is_redelivered_while_a_worker_holds_it(void **state)
{
    gf_fnenv_opts opts = {
        .runtime = "  drain_timeout: 5s\n"
                   "  fetch_batch: 64\n"
                   "  max_in_flight: 64\n"
                   "  fetch_expiry: 1s\n"
                   "  heartbeat: 250ms\n",
        .functions = "  test-worker:\n    delay: 1s\n",
    };
    two_workers_run_each_job_once(&opts);
}

/* With a backoff the server's ack wait is backoff[0] (1 s) whatever ack_wait says; jobs
 * take 1.6 s and call no in-progress themselves: the runtime must keep them. */
static void held_messages_are_kept_in_progress_past_a_backoff_ack_wait(void **state)
{
    gf_fnenv_opts opts = {
        .runtime = runtime_pool4,
        .worker = "      ack_wait: 10s\n"
                  "      max_deliver: 5\n"
                  "      backoff: [1s, 2s]\n",
        .functions = "  test-worker:\n    delay: 1600ms\n",
    };
    two_workers_run_each_job_once(&opts);
}

/* Fault 2 as reported: ten 1 s jobs, max_deliver 3, the worker SIGKILLed 1.6 s after each
 * of three starts. Every delivery the server made must have started a handler — the
 * deliveries each job's handlers saw are exactly 1..k, with no gap — but for the one a
 * kill may take in flight (below). */
static void a_killed_worker_burns_only_deliveries_it_started(void **state)
{
    gf_fnenv env;
    gf_fnenv_opts opts = {
        .runtime = runtime_pool4,
        .worker = "      ack_wait: 2s\n"
                  "      max_deliver: 3\n",
        .functions = "  test-worker:\n    delay: 1s\n",
    };
    counts c;
    assert_int_equal(gf_fnenv_start_opts(&env, &opts), 0);
    for (int round = 0; round < 3; round++) {
        gf_proc k = {0};
        char name[16];
        snprintf(name, sizeof name, "k%d", round);
        int64_t started = gf_clock_mono_ms();
        assert_int_equal(gf_fnenv_spawn(&env, &k, WORKER, name, pull_env), 0);
        if (round == 0) { /* the first worker provisions the stream */
            assert_true(gf_fnenv_wait_ping(&env, "test-worker", name, 1500));
            assert_int_equal(gf_fnenv_publish_jobs(&env, 0, JOBS, NULL), 0);
        }
        gf_clock_sleep_ms(started + 1600 - gf_clock_mono_ms());
        gf_proc_signal(&k, SIGKILL);
        assert_int_equal(gf_proc_wait(&k, 5000), 0);
    }
    gf_proc last = {0};
    assert_int_equal(gf_fnenv_spawn(&env, &last, WORKER, "last", pull_env), 0);
    /* Ready before anything else: the jobs may all be settled already, and a SIGTERM that
     * lands before main() has blocked it ends the process by the default action. */
    assert_true(gf_fnenv_wait_ready(&env, &last, "test-worker", "last", 10000));
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 30000));
    read_counts(&env, &c);
    /* One delivery may be burned by a kill itself: a SIGKILL that lands between a
     * message's arrival and its handler's start record (one synchronous publish, a few ms)
     * takes the delivery with it. It happened once in CI under ASan, where the fixed 1.6 s
     * schedule met a redelivery's arrival. A worker that fetched ahead of its free handlers
     * burns every message it holds at each kill: here the six jobs beyond the first
     * four at once. So more than one burned delivery is the defect this test is for. */
    int burned = 0;
    for (int i = 0; i < JOBS; i++) {
        unsigned want = ((1u << (c.max_delivery[i] + 1)) - 1) & ~1u; /* deliveries 1..k */
        unsigned missing = want & ~c.start_mask[i];
        for (; missing; missing &= missing - 1)
            burned++;
        if ((c.start_mask[i] & ~want) != 0 || burned > 1)
            fail_msg("job j%d: handlers started on deliveries mask 0x%x, want 0x%x (%d burned "
                     "so far, 1 allowed): deliveries were used up without their handlers "
                     "starting",
                     i, c.start_mask[i], want, burned);
        /* Not completed is only allowed for a job that reached max_deliver with its
         * handler started on every delivery (killed three times while running). */
        if (c.completions[i] == 0 && c.max_delivery[i] < 3)
            fail_msg("job j%d never completed and is not dead (%d starts)", i, c.starts[i]);
    }
    assert_true(gf_fnenv_stop(&last, 15000));
    gf_fnenv_free(&env);
}

static bool completed(gf_fnenv *env, void *arg)
{
    counts c;
    read_counts(env, &c);
    return c.completions[*(int *)arg] > 0;
}

static bool stream_exists(gf_fnenv *env, void *arg)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, env->js, (const char *)arg, NULL, NULL) != NATS_OK)
        return false;
    jsStreamInfo_Destroy(si);
    return true;
}

/* Fault 4: the stream is deleted under a running worker (a wiped store, a memory stream
 * lost in a restart). It is recreated; while it cannot be (another stream took its
 * subject), the worker is unhealthy (PING silent, INFO says why), and once it can, the
 * worker is healthy and works. */
static void a_vanished_stream_is_recreated_or_reported(void **state)
{
    gf_fnenv env;
    gf_proc w = {0};
    int job = 0;
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "w", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &w, "test-worker", "w", 10000));
    gf_fnenv_health_want healthy = {"test-worker", "w", NULL};
    gf_fnenv_health_want stream_lost = {"test-worker", "w",
                                        "endpoint jobs: stream TEST_JOBS is missing and "
                                        "cannot be recreated"};
    assert_true(gf_fnenv_eventually(gf_fnenv_health_is, &env, &healthy, 5000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 1, NULL), 0);
    assert_true(gf_fnenv_eventually(completed, &env, &job, 10000));

    assert_int_equal(js_DeleteStream(env.js, "TEST_JOBS", NULL, NULL), NATS_OK);
    assert_true(gf_fnenv_eventually(stream_exists, &env, "TEST_JOBS", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 1, 2, NULL), 0);
    job = 1;
    assert_true(gf_fnenv_eventually(completed, &env, &job, 10000));
    assert_true(gf_fnenv_health_is(&env, &healthy));

    /* Now a stream that cannot be recreated: another one holds its subject. */
    assert_int_equal(js_DeleteStream(env.js, "TEST_JOBS", NULL, NULL), NATS_OK);
    assert_int_equal(gf_fnenv_add_stream(env.js, "HOG", "test.jobs"), NATS_OK);
    assert_true(gf_fnenv_eventually(gf_fnenv_health_is, &env, &stream_lost, 15000));
    assert_true(gf_proc_running(&w));

    assert_int_equal(js_DeleteStream(env.js, "HOG", NULL, NULL), NATS_OK);
    assert_true(gf_fnenv_eventually(gf_fnenv_health_is, &env, &healthy, 15000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 2, 3, NULL), 0);
    job = 2;
    assert_true(gf_fnenv_eventually(completed, &env, &job, 10000));
    assert_true(gf_fnenv_stop(&w, 15000));
    gf_fnenv_free(&env);
}

/* Fault 5: a consumer deleted under a running worker is recreated from where it was:
 * nothing already handled comes back — not the acked jobs, not the dead-lettered poison
 * (which keeps the server's ack floor behind it forever) — and it says so in its log. */
static void a_deleted_consumer_resumes_where_it_was(void **state)
{
    gf_fnenv env;
    gf_fnenv_opts opts = {.worker = "      ack_wait: 2s\n"
                                    "      max_deliver: 2\n"};
    gf_proc w = {0};
    counts c;
    assert_int_equal(gf_fnenv_start_opts(&env, &opts), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "w", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &w, "test-worker", "w", 10000));
    assert_int_equal(gf_fnenv_publish_jobs(&env, 0, 2, NULL), 0);
    assert_int_equal(gf_fnenv_publish_jobs(&env, 2, 3, "fail"),
                     0); /* poison: fails twice, then it is a dead letter */
    assert_int_equal(gf_fnenv_publish_jobs(&env, 3, 5, NULL), 0);
    int last = 4;
    assert_true(gf_fnenv_eventually(completed, &env, &last, 10000));
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 15000));
    read_counts(&env, &c);
    assert_int_equal(c.starts[2], 2);
    gf_clock_sleep_ms(2500); /* the worker has looked at the settled consumer since */

    assert_int_equal(js_DeleteConsumer(env.js, "TEST_JOBS", "worker", NULL, NULL), NATS_OK);
    assert_int_equal(gf_fnenv_publish_jobs(&env, 5, 6, NULL), 0);
    last = 5;
    assert_true(gf_fnenv_eventually(completed, &env, &last, 15000));
    assert_true(gf_fnenv_eventually(gf_fnenv_jobs_settled, &env, NULL, 10000));
    gf_clock_sleep_ms(2500);
    read_counts(&env, &c);
    for (int i = 0; i < 6; i++) {
        int want = i == 2 ? 2 : 1;
        if (c.starts[i] != want)
            fail_msg("job j%d started %d times after the consumer was recreated (want %d)", i,
                     c.starts[i], want);
    }
    assert_true(0 < gf_fnenv_log_count(&w, "recreated from the last known position"));
    assert_true(gf_fnenv_stop(&w, 15000));

    /* Deleted while no instance runs, nobody knows the position: the next start creates it
     * from config (deliver all), and says loudly that the stored messages come again. */
    assert_int_equal(js_DeleteConsumer(env.js, "TEST_JOBS", "worker", NULL, NULL), NATS_OK);
    gf_proc w2 = {0};
    assert_int_equal(gf_fnenv_spawn(&env, &w2, WORKER, "w2", pull_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &w2, "test-worker", "w2", 10000));
    assert_true(0 < gf_fnenv_log_count(
                        &w2, "consumer created with deliver=all on a stream that holds messages"));
    assert_true(gf_fnenv_stop(&w2, 15000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_job_is_redelivered_while_a_worker_holds_it),
        cmocka_unit_test(held_messages_are_kept_in_progress_past_a_backoff_ack_wait),
        cmocka_unit_test(a_killed_worker_burns_only_deliveries_it_started),
        cmocka_unit_test(a_vanished_stream_is_recreated_or_reported),
        cmocka_unit_test(a_deleted_consumer_resumes_where_it_was),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
