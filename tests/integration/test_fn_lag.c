/*
 * The lag monitor (functions/lag) end to end on a real nats-server: a consumer that
 * falls behind is reported WARNING, then CRITICAL, then OK once it catches up, with one
 * alert per change and none in between, across a failover of the monitor's leader (the
 * new leader reads the levels back from ALERTS instead of repeating them); a consumer
 * whose oldest unacked event passes half of a short max_age is an EMERGENCY, and OK again
 * once retention has dropped what it never read; the retention warning reaches the
 * report; a `fresh` query makes the leader poll at once, whichever replica answers it;
 * `gamefn lag` shows it all, and refuses bad options.
 */
#include <jansson.h>
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
#include "gamefn/v1/lag.pb-c.h"
#include "obs_support.h"

#define LAG OBS_LAG

static const char *lag_section = "  lag:\n"
                                 "    interval: 200ms\n"
                                 "    warning: 100\n"
                                 "    critical: 1000\n"
                                 "    clear_after: 0\n"
                                 "    lease_ttl: 2s\n"
                                 "    streams: [EVENTS, SHORT]\n"
                                 "    gaps:\n"
                                 "      grace: 1s\n";

static void options(gf_fnenv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->server_config = OBS_MAPPING;
    o->streams = "    - name: EVENTS\n"
                 "      subjects: [\"gamefn.v1.evp.>\"]\n"
                 "      max_msgs: 100000\n"
                 "    - name: SHORT\n"
                 "      subjects: [\"short.>\"]\n"
                 "      max_age: 4s\n"
                 "      duplicate_window: 1s\n"
                 "    - name: ALERTS\n"
                 "      subjects: [\"gamefn.v1.alert.>\"]\n";
    o->consumers = "    - stream: EVENTS\n"
                   "      name: watcher\n"
                   "      max_ack_pending: 5000\n"
                   "    - stream: SHORT\n"
                   "      name: lazy\n";
    o->buckets = "    - name: lag\n";
    o->functions = lag_section;
}

/* The next alert on sub: its level (and previous, monitor), or -1 after timeout_ms. */
static int next_alert(natsSubscription *sub, int timeout_ms, int *previous, char *monitor,
                      size_t size, char *reason, size_t reason_size)
{
    natsMsg *m = NULL;
    if (natsSubscription_NextMsg(&m, sub, timeout_ms) != NATS_OK)
        return -1;
    Gamefn__V1__LagAlert *a = gamefn__v1__lag_alert__unpack(NULL, (size_t)natsMsg_GetDataLength(m),
                                                            (const uint8_t *)natsMsg_GetData(m));
    natsMsg_Destroy(m);
    assert_non_null(a);
    int level = (int)a->level;
    if (previous)
        *previous = (int)a->previous;
    if (monitor)
        snprintf(monitor, size, "%s", a->monitor_id);
    if (reason)
        snprintf(reason, reason_size, "%s", a->reason);
    gamefn__v1__lag_alert__free_unpacked(a, NULL);
    return level;
}

static void publish_n(gf_fnenv *env, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        char player[32];
        snprintf(player, sizeof player, "p%d", i % 97);
        assert_int_equal(
            obs_publish_generic(env->js, "gs-lag", (uint64_t)i + 1, player, "ping", false), 0);
    }
    assert_int_equal(gf_ev_flush(env->js), 0);
}

/* Fetches and acks everything the durable has. */
static void catch_up(gf_fnenv *env, const char *stream, const char *durable, const char *subject)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = durable;
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    assert_int_equal(js_PullSubscribe(&sub, env->js, subject, durable, NULL, &so, &jerr), NATS_OK);
    for (;;) {
        natsMsgList list = {0};
        natsStatus s = natsSubscription_Fetch(&list, sub, 500, 1000, &jerr);
        if (s == NATS_TIMEOUT)
            break;
        assert_int_equal(s, NATS_OK);
        for (int i = 0; i < list.Count; i++)
            assert_int_equal(i + 1 < list.Count ? natsMsg_Ack(list.Msgs[i], NULL)
                                                : natsMsg_AckSync(list.Msgs[i], NULL, &jerr),
                             NATS_OK);
        natsMsgList_Destroy(&list);
    }
    natsSubscription_Destroy(sub); /* bound: never deletes the durable */
}

static uint64_t alerts_stored(gf_fnenv *env, const char *subject)
{
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Info.SubjectsFilter = subject;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    assert_int_equal(js_GetStreamInfo(&si, env->js, "ALERTS", &o, &jerr), NATS_OK);
    uint64_t n =
        si->State.Subjects && si->State.Subjects->Count ? si->State.Subjects->List[0].Msgs : 0;
    jsStreamInfo_Destroy(si);
    return n;
}

static void levels_rise_and_fall_with_one_alert_per_change(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc m1 = {0}, m2 = {0};
    options(&o);
    obs_start_with_monitor(&env, &o, &m1, "m1");
    natsSubscription *alerts = NULL;
    assert_int_equal(
        natsConnection_SubscribeSync(&alerts, env.nc, "gamefn.v1.alert.lag.EVENTS.watcher"),
        NATS_OK);

    /* Nothing behind: no alert at all. */
    assert_int_equal(next_alert(alerts, 1000, NULL, NULL, 0, NULL, 0), -1);

    int prev = -1;
    char monitor[96], reason[256];
    publish_n(&env, 0, 150); /* lag 150 >= warning 100 */
    assert_int_equal(
        next_alert(alerts, 10000, &prev, monitor, sizeof monitor, reason, sizeof reason), 1);
    assert_int_equal(prev, 0);
    assert_string_equal(monitor, "m1");
    assert_non_null(strstr(reason, " >= warning 100")); /* a poll may see part of the 150 */

    publish_n(&env, 150, 1000); /* lag 1150 > critical 1000 */
    assert_int_equal(next_alert(alerts, 10000, &prev, NULL, 0, reason, sizeof reason), 2);
    assert_int_equal(prev, 1);
    assert_non_null(strstr(reason, " > critical 1000"));
    /* The level holds: five more polls, no alert. */
    assert_int_equal(next_alert(alerts, 1500, NULL, NULL, 0, NULL, 0), -1);

    /* The leader dies; the standby takes over and reads the level back, silently. */
    assert_int_equal(gf_fnenv_spawn_ready(&env, &m2, LAG, "lag", "m2", NULL), 0);
    gf_proc_signal(&m1, SIGKILL);
    assert_int_equal(gf_proc_wait(&m1, 5000), 0);
    assert_true(gf_fnenv_eventually(obs_lag_led_by, &env, "m2", 15000));
    assert_int_equal(next_alert(alerts, 1500, NULL, NULL, 0, NULL, 0), -1);

    /* Caught up: back to OK (maybe through WARNING if a poll saw the acks half done). */
    catch_up(&env, "EVENTS", "watcher", "gamefn.v1.evp.>");
    int level = next_alert(alerts, 10000, &prev, monitor, sizeof monitor, NULL, 0);
    assert_int_equal(prev, 2);
    assert_string_equal(monitor, "m2");
    int alerts_seen = 3;
    if (level == 1) {
        level = next_alert(alerts, 10000, &prev, NULL, 0, NULL, 0);
        assert_int_equal(prev, 1);
        alerts_seen++;
    }
    assert_int_equal(level, 0);
    assert_int_equal(next_alert(alerts, 1500, NULL, NULL, 0, NULL, 0), -1);
    /* Every alert is stored once in ALERTS: the new leader's history continues the old. */
    assert_int_equal(alerts_stored(&env, "gamefn.v1.alert.lag.EVENTS.watcher"), alerts_seen);

    /* The report, through the CLI. */
    cli_result out;
    const char *args[] = {"lag", "--json", NULL};
    assert_int_equal((out = cli_runv(&env, NULL, args)).code, 0);
    json_t *root = cli_json_line(&out);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "monitor_id")), "m2");
    json_t *c;
    size_t i;
    bool found = false;
    json_array_foreach(json_object_get(root, "consumers"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "consumer")), "watcher") == 0) {
            found = true;
            assert_string_equal(json_string_value(json_object_get(c, "level")), "ok");
            assert_int_equal(json_integer_value(json_object_get(c, "lag")), 0);
        }
    }
    assert_true(found);
    /* EVENTS keeps 100000 events: less than 2400/s for 5 min. */
    json_t *warnings = json_object_get(root, "retention_warnings");
    assert_int_equal(json_array_size(warnings), 1);
    assert_non_null(strstr(json_string_value(json_array_get(warnings, 0)), "720000"));
    json_decref(root);
    cli_result_free(&out);

    const char *table[] = {"lag", "--stream", "EVENTS", NULL};
    assert_int_equal((out = cli_runv(&env, NULL, table)).code, 0);
    assert_non_null(strstr(out.out, "watcher"));
    assert_null(strstr(out.out, "lazy")); /* another stream's */
    assert_non_null(strstr(out.out, "retention warning: stream EVENTS keeps at most 100000"));
    cli_result_free(&out);

    natsSubscription_Destroy(alerts);
    assert_true(gf_fnenv_stop(&m2, 15000));
    gf_fnenv_free(&env);
}

static void oldest_past_half_retention_is_an_emergency(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc m1 = {0};
    options(&o);
    obs_start_with_monitor(&env, &o, &m1, "m1");
    natsSubscription *alerts = NULL;
    assert_int_equal(
        natsConnection_SubscribeSync(&alerts, env.nc, "gamefn.v1.alert.lag.SHORT.lazy"), NATS_OK);

    int64_t t0 = gf_clock_mono_ms();
    for (int i = 0; i < 3; i++)
        assert_int_equal(js_Publish(NULL, env.js, "short.x", "e", 1, NULL, NULL), NATS_OK);
    /* 3 events is far below warning, but they age: past 2 s of the 4 s max_age. */
    int prev = -1;
    char reason[256];
    assert_int_equal(next_alert(alerts, 10000, &prev, NULL, 0, reason, sizeof reason), 3);
    assert_true(gf_clock_mono_ms() - t0 >= 2000);
    assert_int_equal(prev, 0);
    assert_non_null(strstr(reason, "over half of max_age 4s"));
    /* Retention drops them unread: nothing is behind any more. */
    assert_int_equal(next_alert(alerts, 10000, &prev, NULL, 0, NULL, 0), 0);
    assert_int_equal(prev, 3);

    natsSubscription_Destroy(alerts);
    assert_true(gf_fnenv_stop(&m1, 15000));
    gf_fnenv_free(&env);
}

/* gamefn.v1.lag.query with `fresh`: the report, and how long the answer took. */
static Gamefn__V1__LagReport *fresh_report(gf_fnenv *env, int64_t *took_ms)
{
    Gamefn__V1__LagQueryRequest q = GAMEFN__V1__LAG_QUERY_REQUEST__INIT;
    q.fresh = true;
    uint8_t buf[64];
    size_t len = gamefn__v1__lag_query_request__pack(&q, buf);
    natsMsg *m = NULL;
    int64_t start = gf_clock_mono_ms();
    assert_int_equal(
        natsConnection_Request(&m, env->nc, "gamefn.v1.lag.query", buf, (int)len, 10000), NATS_OK);
    *took_ms = gf_clock_mono_ms() - start;
    Gamefn__V1__LagReport *r = gamefn__v1__lag_report__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    natsMsg_Destroy(m);
    assert_non_null(r);
    return r;
}

/* A final reading (the local run's report) need not wait for the next poll: a `fresh`
 * query makes the leader poll at once, whichever replica answers it. The interval is
 * 30 s here, so a report newer than the request can only come from such a poll. */
static void fresh_query_answers_with_a_poll_made_now(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc m1 = {0}, m2 = {0};
    options(&o);
    o.functions = "  lag:\n"
                  "    interval: 30s\n"
                  "    lease_ttl: 2s\n"
                  "    streams: [EVENTS]\n";
    obs_start_with_monitor(&env, &o, &m1, "m1");
    assert_int_equal(gf_fnenv_spawn_ready(&env, &m2, LAG, "lag", "m2", NULL), 0);
    gf_clock_sleep_ms(300);
    Gamefn__V1__LagReport *r = obs_lag_report(&env); /* plain: the last poll's */
    assert_non_null(r);
    assert_true(r->as_of_unix_ms < gf_clock_unix_ms() - 200);
    gamefn__v1__lag_report__free_unpacked(r, NULL);
    /* Several, so that both replicas answer some (a queue group picks one at random). */
    for (int i = 0; i < 6; i++) {
        int64_t asked = gf_clock_unix_ms(), took = 0;
        r = fresh_report(&env, &took);
        assert_true(r->as_of_unix_ms >= asked);
        assert_string_equal(r->monitor_id, "m1");
        assert_true(took < 2500); /* one poll on demand, not the 30 s interval */
        assert_true(r->gaps && r->gaps->observing);
        gamefn__v1__lag_report__free_unpacked(r, NULL);
    }
    assert_true(gf_fnenv_stop(&m2, 15000));
    assert_true(gf_fnenv_stop(&m1, 15000));
    gf_fnenv_free(&env);
}

static void cli_refuses_bad_options_and_polls_without_a_monitor(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    options(&o);
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    cli_result out;
    static const struct {
        const char *args[5];
        const char *says;
    } bad[] = {
        {{"lag", "--timeout", "0", NULL}, "--timeout must be a duration"},
        {{"lag", "--stream", "a.b", NULL}, "--stream: stream name"},
        {{"lag", "--bogus", NULL}, "see gamefn lag --help"},
        {{"lag", "extra", NULL}, "unexpected argument 'extra'"},
        {{"lag", "--fresh", "--direct", NULL}, "--fresh asks the monitor"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal((out = cli_runv(&env, NULL, bad[i].args)).code, 2);
        if (!strstr(out.out, bad[i].says))
            fail_msg("'%s' does not say '%s'", out.out, bad[i].says);
        cli_result_free(&out);
    }
    const char *help[] = {"lag", "--help", NULL};
    out = cli_runv(&env, NULL, help);
    cli_expect(&out, 0, "--direct");

    /* Provision the assets (no monitor runs), then fall behind: a direct poll shows it. */
    const char *prov[] = {"provision", NULL};
    out = cli_runv(&env, NULL, prov);
    cli_expect(&out, 0, "warning: stream EVENTS keeps at most 100000 events");
    publish_n(&env, 0, 120);
    const char *direct[] = {"lag", "--stream", "EVENTS", NULL};
    assert_int_equal((out = cli_runv(&env, NULL, direct)).code, 0);
    assert_non_null(strstr(out.out, "no function instance serves gamefn.v1.lag.query"));
    assert_non_null(strstr(out.out, "polling the consumers directly instead"));
    assert_non_null(strstr(out.out, "lag 120 >= warning 100"));
    cli_result_free(&out);
    const char *nope[] = {"lag", "--stream", "NOPE", NULL};
    out = cli_runv(&env, NULL, nope); /* an unknown name */
    cli_expect(&out, 4, "stream NOPE: not found");
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(levels_rise_and_fall_with_one_alert_per_change),
        cmocka_unit_test(oldest_past_half_retention_is_an_emergency),
        cmocka_unit_test(fresh_query_answers_with_a_poll_made_now),
        cmocka_unit_test(cli_refuses_bad_options_and_polls_without_a_monitor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
