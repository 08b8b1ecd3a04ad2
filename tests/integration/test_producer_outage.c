/*
 * The reference's outage, end to end: a game server process produces at 2,400
 * events/s (the reference design's peak) while nats-server is stopped for 30 s, and
 * the game server itself is SIGKILLed and restarted once in the middle of the outage.
 * When NATS is back, every event must be in the stream exactly once: each (source,
 * seq) of 1..N stored once, none missing, none twice — read back from the stream and
 * validated, not taken from any counter. The producing process is
 * tests/fixtures/test_producer.c (the library, nothing else), with a small memory
 * queue so the outage's backlog is read back from the spool on disk.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "harness_util.h"
#include "natsd.h"
#include "proc.h"
#include "producer_check.h"

enum {
    RATE = 2400,
    BEFORE_S = 5,  /* producing with NATS up */
    OUTAGE_S = 30, /* nats-server stopped */
    AFTER_S = 10,  /* producing after it is back */
    TOTAL = RATE * (BEFORE_S + OUTAGE_S + AFTER_S),
};

/* The last "progress next_seq=<n>" the fixture printed, 0 if none yet. */
static uint64_t fixture_next_seq(const gf_proc *p)
{
    FILE *f = fopen(p->log_path, "r");
    if (f == NULL)
        return 0;
    char line[512];
    unsigned long long last = 0, n;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "progress next_seq=%llu", &n) == 1)
            last = n;
    fclose(f);
    return last;
}

static void spawn(gf_proc *p, char *url, char *spool, int run)
{
    char bin[512], total[24], rate[24], log[400];
    const char *build = getenv("GAMEFN_BUILD_DIR");
    snprintf(bin, sizeof bin, "%s/tests/gamefn-test-producer", build ? build : ".");
    snprintf(total, sizeof total, "%d", TOTAL);
    snprintf(rate, sizeof rate, "%d", RATE);
    snprintf(log, sizeof log, "%s/producer-run%d.log", th_tmpdir, run);
    char *argv[] = {bin,       "--url",      url,      "--source", "gs-outage", "--spool",
                    spool,     "--total",    total,    "--rate",   rate,        "--memory",
                    "2000000", "--flush-ms", "120000", NULL};
    assert_int_equal(gf_proc_spawn(p, argv, NULL, log), 0);
}

static void wait_next_seq(gf_proc *p, uint64_t at_least, int timeout_ms)
{
    for (int64_t until = gf_clock_mono_ms() + timeout_ms; gf_clock_mono_ms() < until;) {
        if (fixture_next_seq(p) >= at_least)
            return;
        if (!gf_proc_running(p)) {
            gf_proc_dump_log(p, 30);
            fail_msg("the producer exited early");
        }
        gf_clock_sleep_ms(50);
    }
    gf_proc_dump_log(p, 30);
    fail_msg("the producer did not reach seq %" PRIu64, at_least);
}

static void outage_and_a_killed_producer_lose_nothing(void **state)
{
    gf_natsd *srv = NULL;
    gf_natsd_opts o = {.extra_config = pcx_mapping};
    assert_int_equal(gf_natsd_start(&o, &srv), 0);
    const char *urls[] = {gf_natsd_url(srv)};
    char url[64];
    snprintf(url, sizeof url, "%s", urls[0]);
    natsConnection *nc = th_connect(urls, 1);
    jsCtx *js = th_js(nc);
    pcx_add_events(js, 1, 0);
    char spool[300];
    snprintf(spool, sizeof spool, "%s/spool", th_tmpdir);

    gf_proc first = {0}, second = {0};
    spawn(&first, url, spool, 1);
    wait_next_seq(&first, RATE * BEFORE_S, 60000);

    /* The outage: the server stops; half-way through, the game server is killed. */
    int64_t outage_start = gf_clock_mono_ms();
    assert_int_equal(gf_natsd_stop(srv), 0);
    gf_clock_sleep_until(outage_start + OUTAGE_S * 1000 / 2, NULL);
    uint64_t at_kill = fixture_next_seq(&first);
    assert_int_equal(gf_proc_signal(&first, SIGKILL), 0);
    assert_int_equal(gf_proc_wait(&first, 5000), 0);
    spawn(&second, url, spool, 2);
    wait_next_seq(&second, at_kill + RATE, 30000); /* it goes on from the spool's counter */
    gf_clock_sleep_until(outage_start + OUTAGE_S * 1000, NULL);
    assert_int_equal(gf_natsd_restart(srv), 0);

    /* The rest is produced, the backlog replayed; the fixture flushes and exits 0. */
    if (gf_proc_wait(&second, 180000) != 0 || !gf_proc_exited_with(&second, 0)) {
        gf_proc_dump_log(&second, 40);
        fail_msg("the restarted producer did not finish with every event acknowledged");
    }
    pcx_stored s;
    pcx_read(js, "EVENTS", &s);
    assert_int_equal(s.messages, TOTAL);
    pcx_expect(&s, "gs-outage", 1, TOTAL, NULL, 0);
    pcx_free(&s);

    gf_proc_cleanup(&first);
    gf_proc_cleanup(&second);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s/spool %s/producer-run1.log %s/producer-run2.log",
             th_tmpdir, th_tmpdir, th_tmpdir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(outage_and_a_killed_producer_lose_nothing),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
