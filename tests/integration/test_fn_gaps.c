/*
 * The gap observer of the lag monitor on a real nats-server: a hole planted in a source's
 * sequence is reported as a suspected gap once its grace has passed (or at once, as
 * definite, when the source has gone a window W past it), and closed when the late event
 * arrives; events without source headers are counted apart. Then a source publishes
 * without holes while the consumer group that reads the same stream rebalances (a
 * replica added, one SIGKILLed) and the monitor's leader itself fails over: no gap is
 * reported, because the observer reads the stream, not the consumers.
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

#include "gamefn/clock.h"
#include "obs_support.h"

#define LAG        "functions/lag/gamefn-lag"
#define EVENTCOUNT "examples/eventcount/gamefn-eventcount"

static void options(gf_fnenv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->server_config = OBS_MAPPING;
    o->streams = "    - name: EVENTS\n"
                 "      subjects: [\"gamefn.v1.evp.>\"]\n"
                 "    - name: ALERTS\n"
                 "      subjects: [\"gamefn.v1.alert.>\"]\n"
                 "    - name: EVENTCOUNT_RESETS\n"
                 "      subjects: [\"gamefn.v1.eventcount.reset.>\"]\n"
                 "      retention: workqueue\n";
    o->consumers = "    - stream: EVENTS\n"
                   "      name: eventcount\n"
                   "      partitions: 16\n"
                   "      filter_subject: \"gamefn.v1.evp.{partition}.>\"\n"
                   "      lease_ttl: 2s\n"
                   "      ack_wait: 2s\n"
                   "    - stream: EVENTCOUNT_RESETS\n"
                   "      name: eventcount\n"
                   "      ack_wait: 2s\n";
    o->buckets = "    - name: lag\n"
                 "    - name: event_counts\n";
    o->functions = "  lag:\n"
                   "    interval: 200ms\n"
                   "    lease_ttl: 2s\n"
                   "    streams: [EVENTS]\n"
                   "    gaps:\n"
                   "      grace: 1s\n"
                   "      window: 8\n";
}

typedef struct want_gaps {
    const char *monitor;
    uint64_t events, suspected, closed, open_holes, unsourced;
    size_t listed;
} want_gaps;

static bool gaps_are(gf_fnenv *env, void *arg)
{
    const want_gaps *w = arg;
    Gamefn__V1__LagReport *r = obs_lag_report(env);
    if (!r)
        return false;
    const Gamefn__V1__GapSummary *g = r->gaps;
    bool ok = g && g->observing && strcmp(r->monitor_id, w->monitor) == 0 &&
              g->events == w->events && g->suspected == w->suspected && g->closed == w->closed &&
              g->open_holes == w->open_holes && g->unsourced == w->unsourced &&
              r->n_open_gaps == w->listed;
    gamefn__v1__lag_report__free_unpacked(r, NULL);
    return ok;
}

static void expect(gf_fnenv *env, const want_gaps *w)
{
    if (gf_fnenv_eventually(gaps_are, env, (void *)(uintptr_t)w, 30000))
        return;
    Gamefn__V1__LagReport *r = obs_lag_report(env);
    if (!r || !r->gaps)
        fail_msg("no report");
    const Gamefn__V1__GapSummary *g = r->gaps;
    fail_msg(
        "monitor %s: events %llu suspected %llu closed %llu open %llu unsourced %llu listed %zu; "
        "want %s: %llu %llu %llu %llu %llu %zu",
        r->monitor_id, (unsigned long long)g->events, (unsigned long long)g->suspected,
        (unsigned long long)g->closed, (unsigned long long)g->open_holes,
        (unsigned long long)g->unsourced, r->n_open_gaps, w->monitor, (unsigned long long)w->events,
        (unsigned long long)w->suspected, (unsigned long long)w->closed,
        (unsigned long long)w->open_holes, (unsigned long long)w->unsourced, w->listed);
}

static void publish(gf_fnenv *env, const char *source, uint64_t seq)
{
    char player[32];
    snprintf(player, sizeof player, "p%llu", (unsigned long long)(seq % 40));
    assert_int_equal(obs_publish_generic(env->js, source, seq, player, "ping", true), 0);
}

static void planted_holes_are_reported_then_closed(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc m1 = {0};
    options(&o);
    obs_start_with_monitor(&env, &o, &m1, "m1");

    /* gs-1: 1..10 without 5. Within the window (10 < 5 + 8): suspected after the grace. */
    for (uint64_t s = 1; s <= 10; s++)
        if (s != 5)
            publish(&env, "gs-1", s);
    /* gs-3: 1, 2, then 4..12: 12 >= 3 + 8, so 3 is definitely missing, at once. */
    for (uint64_t s = 1; s <= 12; s++)
        if (s != 3)
            publish(&env, "gs-3", s);
    /* no source headers: counted apart, never a gap */
    assert_int_equal(js_Publish(NULL, env.js, "gamefn.v1.event.p1.ping", "x", 1, NULL, NULL),
                     NATS_OK);

    want_gaps two = {"m1", 20, 2, 0, 2, 1, 2};
    expect(&env, &two);
    Gamefn__V1__LagReport *r = obs_lag_report(&env);
    assert_non_null(r);
    bool saw1 = false, saw3 = false;
    for (size_t i = 0; i < r->n_open_gaps; i++) {
        const Gamefn__V1__SuspectedGap *g = r->open_gaps[i];
        assert_int_equal(g->first, g->last);
        if (strcmp(g->source_id, "gs-1") == 0) {
            saw1 = g->first == 5 && !g->definite;
        } else {
            saw3 = strcmp(g->source_id, "gs-3") == 0 && g->first == 3 && g->definite;
        }
    }
    assert_true(saw1);
    assert_true(saw3);
    gamefn__v1__lag_report__free_unpacked(r, NULL);
    assert_true(gf_fnenv_wait_log(&m1, "suspected gap", 1000));

    /* the late events (a spool replay): both gaps close */
    publish(&env, "gs-1", 5);
    publish(&env, "gs-3", 3);
    want_gaps closed = {"m1", 22, 2, 2, 0, 1, 0};
    expect(&env, &closed);
    assert_true(gf_fnenv_wait_log(&m1, "gap closed", 1000));
    /* a duplicate (stored again after the dedup window: another Msg-Id) is no gap */
    Gamefn__V1__GameEvent ev;
    Gamefn__V1__GenericEvent g = GAMEFN__V1__GENERIC_EVENT__INIT;
    char id[64];
    obs_event_init(&ev, id, sizeof id, "gs-1", 5, "p5", "ping");
    snprintf(id, sizeof id, "gs-1-5-replayed");
    ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC;
    ev.generic = &g;
    assert_int_equal(obs_publish(env.js, &ev, true), 0);
    publish(&env, "gs-1", 11);
    want_gaps dup = {"m1", 24, 2, 2, 0, 1, 0};
    expect(&env, &dup);

    /* `gamefn lag` shows the counters */
    cli_result out;
    const char *args[] = {"lag", NULL};
    out = cli_runv(&env, NULL, args);
    cli_expect(&out, 0, "suspected gaps 2 (2 events), closed later 2");

    assert_true(gf_fnenv_stop(&m1, 15000));
    gf_fnenv_free(&env);
}

static void no_gap_across_rebalance_and_monitor_failover(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc m1 = {0}, m2 = {0}, a = {0}, b = {0};
    options(&o);
    obs_start_with_monitor(&env, &o, &m1, "m1");
    /* not waited for: a standby and a consumer start while events flow */
    assert_int_equal(gf_fnenv_spawn(&env, &m2, LAG, "m2", NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, EVENTCOUNT, "a", NULL), 0);

    const int n = 1200;
    for (int s = 1; s <= n; s++) {
        publish(&env, "gs-2", (uint64_t)s);
        if (s == 300) /* a replica joins: partitions move */
            assert_int_equal(gf_fnenv_spawn(&env, &b, EVENTCOUNT, "b", NULL), 0);
        if (s == 600) { /* one dies: its partitions move after its lease */
            gf_proc_signal(&a, SIGKILL);
            assert_int_equal(gf_proc_wait(&a, 5000), 0);
        }
        if (s == 900) { /* the monitor's leader dies: m2 takes over, reads from the start */
            gf_proc_signal(&m1, SIGKILL);
            assert_int_equal(gf_proc_wait(&m1, 5000), 0);
        }
    }
    want_gaps none = {"m2", (uint64_t)n, 0, 0, 0, 0, 0};
    expect(&env, &none);
    /* and stays so past the grace */
    gf_clock_sleep_ms(1500);
    expect(&env, &none);
    assert_int_equal(gf_fnenv_log_count(&m2, "suspected gap"), 0);

    assert_true(gf_fnenv_stop(&b, 15000));
    assert_true(gf_fnenv_stop(&m2, 15000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(planted_holes_are_reported_then_closed),
        cmocka_unit_test(no_gap_across_rebalance_and_monitor_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
