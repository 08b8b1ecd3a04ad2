/*
 * test_bench_e2e.c — `gamefn-bench e2e`, one short run on one queue (1v1-sbmm, 80
 * simulated servers) with its two load options set:
 * - --waiting 60: the closed loop never has more than 60 tickets between their send and
 *   their end, and keeps sending as tickets end (more submitted than the window);
 * - --verify-every 3: the simulated servers verify the tokens of one match in three and
 *   admit the others unchecked; none is refused;
 * and the checker's invariant counts are all 0. Bad values of both are usage errors.
 * No rate is asserted: performance is the benchmark's to report, not a test's.
 */
#include <setjmp.h>
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

enum { WINDOW = 60 };

static void a_closed_loop_run_with_sampled_tokens(void **state)
{
    (void)state;
    static char out[1 << 17];
    char log[] = "/tmp/gamefn-bench-e2e-XXXXXX";
    const char *src = getenv("GAMEFN_SOURCE_DIR");
    char config[1024];
    snprintf(config, sizeof config, "%s/config/gamefn.yaml", src ? src : ".");
    char *args[] = {"e2e",  "--seconds",      "4", "--raw-seconds", "0.5",      "--servers",
                    "80",   "--sim-workers",  "8", "--queue",       "1v1-sbmm", "--waiting",
                    "60",   "--verify-every", "3", "--drain",       "30",       "--config",
                    config, "--json",         NULL};
    gf_proc p = {0};
    bench_spawn(&p, log, args);
    assert_int_equal(gf_proc_wait(&p, 200000), 0);
    bench_output(&p, out, sizeof out);
    if (!gf_proc_exited_with(&p, 0))
        fail_msg("exit status 0x%x:\n%s", (unsigned)p.exit_status, out);
    json_t *j = bench_json_line(out);
    if (!j)
        fail_msg("no JSON line last:\n%s", out);
    assert_true(bench_number(j, "waiting") == WINDOW);
    assert_true(bench_number(j, "verify_every") == 3);
    double peak = bench_number(j, "peak_waiting"), sent = bench_number(j, "submitted");
    if (peak < 1 || peak > WINDOW || sent < 3 * WINDOW)
        fail_msg("peak_waiting %.0f (window %d), submitted %.0f:\n%s", peak, WINDOW, sent, out);
    assert_true(bench_number(j, "assigned") > 0);
    double ok = bench_number(j, "tokens_ok"), unchecked = bench_number(j, "tokens_unchecked");
    /* One match in three verified, two tokens a match: a third of the tokens, give or take
     * the match the count started on. */
    if (ok < 1 || unchecked < 1 || ok * 3 > ok + unchecked + 6)
        fail_msg("tokens verified %.0f, unchecked %.0f:\n%s", ok, unchecked, out);
    assert_true(bench_number(j, "tokens_bad") == 0);
    const char *zero[] = {"double_claims", "players_in_two_matches", "lost_tickets", "violations",
                          "half_assigned"};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        if (bench_number(j, zero[i]) != 0)
            fail_msg("%s is not 0:\n%s", zero[i], out);
    json_decref(j);
    unlink(log);
}

/* Out of range: usage error (exit 2) naming the option; nothing is started. */
static void bad_load_options_are_usage_errors(void **state)
{
    (void)state;
    const char *cases[][3] = {
        {"--verify-every", "0", "--verify-every"},
        {"--waiting", "-1", "--waiting"},
        {"--waiting", "many", "--waiting"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        bench_expect_usage_error("e2e", cases[i][0], cases[i][1], cases[i][2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_load_options_are_usage_errors),
        cmocka_unit_test(a_closed_loop_run_with_sampled_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
