/*
 * test_bench_e2e.c — `gamefn-bench e2e`, one short run on one queue (1v1-sbmm, 80
 * simulated servers, 3 s at 150 tickets/s) with --verify-every 3: the simulated servers
 * verify the tokens of one match in three and admit the others unchecked, none is
 * refused, the checker's invariant counts are all 0, and the messages are split by the
 * connection that sent them. A bad value is a usage error.
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

static void a_run_with_sampled_tokens(void **state)
{
    (void)state;
    static char out[1 << 17];
    char log[] = "/tmp/gamefn-bench-e2e-XXXXXX";
    const char *src = getenv("GAMEFN_SOURCE_DIR");
    char config[1024];
    snprintf(config, sizeof config, "%s/config/gamefn.yaml", src ? src : ".");
    char *args[] = {"e2e",  "--seconds",      "3", "--raw-seconds", "0.5",      "--servers",
                    "80",   "--sim-workers",  "8", "--queue",       "1v1-sbmm", "--rate",
                    "150",  "--verify-every", "3", "--drain",       "30",       "--config",
                    config, "--json",         NULL};
    gf_proc p = {0};
    bench_spawn(&p, log, args);
    json_t *j = bench_finish(&p, 200000, out, sizeof out);
    assert_true(bench_number(j, "verify_every") == 3);
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
    /* Whose messages: every function of the stack and the benchmark itself, by role. A
     * create is at least its reply and two writes (the ticket, the player's record) from
     * intake, and an assignment at least one write from the allocator; no role sends more
     * than the server counted in all. */
    const json_t *by = json_object_get(j, "msgs_per_ticket_by_connection");
    const char *roles[] = {"intake", "matcher", "allocator", "fleet", "ticker", "bench"};
    double all = bench_number(j, "in_msgs_per_ticket");
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        const json_t *r = json_object_get(by, roles[i]);
        double in = json_number_value(json_object_get(r, "in"));
        if (!r || in <= 0 || in > all)
            fail_msg("msgs_per_ticket_by_connection: %s in %.2f of %.2f:\n%s", roles[i], in, all,
                     out);
    }
    if (json_number_value(json_object_get(json_object_get(by, "intake"), "in")) < 3 ||
        json_number_value(json_object_get(json_object_get(by, "allocator"), "in")) < 1)
        fail_msg("msgs_per_ticket_by_connection: intake or allocator below its floor:\n%s", out);
    json_decref(j);
    unlink(log);
}

/* Out of range or not a number: usage error (exit 2) naming the option. */
static void a_bad_sample_is_a_usage_error(void **state)
{
    (void)state;
    bench_expect_usage_error("e2e", "--verify-every", "0",
                             "--verify-every: a whole number in 1..1048576, got '0'");
    bench_expect_usage_error("e2e", "--verify-every", "some", "--verify-every");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_bad_sample_is_a_usage_error),
        cmocka_unit_test(a_run_with_sampled_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
