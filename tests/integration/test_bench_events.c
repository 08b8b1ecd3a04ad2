/*
 * test_bench_events.c — `gamefn-bench events` when its leaderboard replica dies: killed
 * (SIGKILL) in the middle of the run, the bench must stop at once with exit status 1, name
 * the replica and how it ended, and print no figures — not wait out its 5-minute timeout.
 * A short run (10,000 events, a 5 s latency phase, no catch-up), killed once the latency
 * phase starts.
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

#include "gamefn/clock.h"
#include "proc.h"

/* The bench's output so far (stdout and stderr), NUL-terminated into buf. */
static const char *output(const gf_proc *p, char *buf, size_t size)
{
    FILE *f = fopen(p->log_path, "r");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Polls the output until it holds `needle` (true) or timeout_ms passes. */
static bool wait_output(const gf_proc *p, const char *needle, int timeout_ms, char *buf,
                        size_t size)
{
    int64_t deadline = gf_clock_mono_ms() + timeout_ms;
    while (!strstr(output(p, buf, size), needle)) {
        if (gf_clock_mono_ms() > deadline)
            return false;
        gf_clock_sleep_ms(50);
    }
    return true;
}

static void a_dead_replica_ends_the_run_at_once(void **state)
{
    (void)state;
    static char out[1 << 16];
    const char *build = getenv("GAMEFN_BUILD_DIR");
    char bench[512], log[] = "/tmp/gamefn-bench-events-XXXXXX";
    snprintf(bench, sizeof bench, "%s/bench/gamefn-bench", build ? build : "build");
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    close(fd);
    char *args[] = {
        bench, "events",    "--events", "10000", "--players", "100", "--latency-seconds",
        "5",   "--catchup", "0",        NULL};
    gf_proc p = {0};
    assert_int_equal(gf_proc_spawn(&p, args, NULL, log), 0);

    if (!wait_output(&p, "events: latency", 90000, out, sizeof out)) {
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
    output(&p, out, sizeof out);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_dead_replica_ends_the_run_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
