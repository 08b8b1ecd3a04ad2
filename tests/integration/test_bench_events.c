/*
 * test_bench_events.c — `gamefn-bench events`, short runs (10,000 events):
 * - a whole run, every phase (throughput and catch-up waited for by polling the
 *   consumers' state, latency by watching acks) ends with exit status 0 and a JSON line
 *   whose figures are there and plausible, nothing lost, nothing applied twice (the
 *   bench computes those from the stored scores);
 * - its leaderboard replica killed (SIGKILL) in the middle of the run: the bench must stop
 *   at once with exit status 1, name the replica and how it ended, and print no figures —
 *   not wait out its 5-minute timeout (a 5 s latency phase, no catch-up, killed once the
 *   latency phase starts).
 * No rate is asserted: performance is the benchmark's to report, not a test's.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "bench_support.h"
#include "gamefn/clock.h"

/* Starts a short bench (10,000 events over 100 players) with its output into log (a
 * mkstemp template, rewritten). */
static void spawn_bench(gf_proc *p, char *log, char *latency_seconds, char *catchup, bool json)
{
    char *args[] = {"events",
                    "--events",
                    "10000",
                    "--players",
                    "100",
                    "--latency-seconds",
                    latency_seconds,
                    "--catchup",
                    catchup,
                    json ? "--json" : NULL,
                    NULL};
    bench_spawn(p, log, args);
}

static void a_short_run_reports_every_figure(void **state)
{
    (void)state;
    static char out[1 << 16];
    char log[] = "/tmp/gamefn-bench-events-XXXXXX";
    gf_proc p = {0};
    spawn_bench(&p, log, "1", "10000", true);
    json_t *j = bench_finish(&p, 150000, out, sizeof out);
    assert_true(bench_number(j, "events_per_s") > 0);
    assert_true(bench_number(j, "raw_pipeline_per_s") > 0);
    assert_true(bench_number(j, "ratio") > 0);
    assert_true(bench_number(j, "p50_effect_ms") <= bench_number(j, "p99_effect_ms"));
    assert_true(bench_number(j, "catchup_s") > 0);
    assert_true(bench_number(j, "lost") == 0);
    assert_true(bench_number(j, "double_applied") == 0);
    assert_string_equal(json_string_value(json_object_get(j, "ack_policy")), "all");
    assert_true(bench_number(j, "linger_ms") == 1000);
    double writes = bench_number(j, "kv_writes_per_event");
    /* One write per changed key per batch: never more than one per event (plus the few of
     * the board itself). */
    assert_true(writes > 0 && writes <= 1.1);
    json_decref(j);
    unlink(log);
}

static void a_dead_replica_ends_the_run_at_once(void **state)
{
    (void)state;
    static char out[1 << 16];
    char log[] = "/tmp/gamefn-bench-events-XXXXXX";
    gf_proc p = {0};
    spawn_bench(&p, log, "5", "0", false);

    if (!bench_wait_output(&p, "events: latency", 90000, out, sizeof out)) {
        gf_proc_cleanup(&p);
        fail_msg("the latency phase never started:\n%s", out);
    }
    const char *at = strstr(out, "replica bench0 is pid ");
    assert_non_null(at);
    pid_t replica = (pid_t)atoi(at + strlen("replica bench0 is pid "));
    assert_true(replica > 0);
    int64_t killed = gf_clock_mono_ms();
    assert_int_equal(kill(replica, SIGKILL), 0);

    assert_int_equal(gf_proc_wait(&p, 20000), 0); /* the old bench waited 5 minutes here */
    int64_t took = gf_clock_mono_ms() - killed;
    bench_output(&p, out, sizeof out);
    if (!gf_proc_exited_with(&p, 1) || took > 5000)
        fail_msg("exit status 0x%x after %lld ms:\n%s", (unsigned)p.exit_status, (long long)took,
                 out);
    char want[128];
    snprintf(want, sizeof want, "leaderboard replica bench0 (pid %d) killed by signal 9",
             (int)replica);
    if (!strstr(out, want) || strstr(out, "gamefn-bench events: nats-server"))
        fail_msg("want '%s' and no figures:\n%s", want, out);
    unlink(log);
}

/* A value outside an option's choices: usage error (exit 2), naming the choices. */
static void a_bad_choice_is_a_usage_error(void **state)
{
    (void)state;
    const char *cases[][3] = {
        {"--ack", "none", "--ack: one of all, explicit; got 'none'"},
        {"--flush", "sometimes", "--flush: one of immediate, batched; got 'sometimes'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        bench_expect_usage_error("events", cases[i][0], cases[i][1], cases[i][2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_short_run_reports_every_figure),
        cmocka_unit_test(a_dead_replica_ends_the_run_at_once),
        cmocka_unit_test(a_bad_choice_is_a_usage_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
