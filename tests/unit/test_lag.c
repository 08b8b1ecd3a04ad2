/*
 * test_lag.c — the lag monitor's pure parts: levels at and around every threshold and
 * the retention (emergency) rules, debouncing (raise at once, lower after clear_after,
 * the trailing maximum), the retention capacity check, the open-gap list, the config
 * table, and the report rendering (text and JSON).
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gap_list.h"
#include "lag_config.h"
#include "level.h"
#include "render.h"
#include "retention.h"

static const lag_thresholds th = {1000, 10000};

static lag_level classify(uint64_t pending, uint64_t ack_pending, char *reason, size_t size)
{
    lag_input in = {.pending = pending, .ack_pending = ack_pending};
    lag_verdict v;
    lag_classify(&th, &in, &v);
    if (reason)
        snprintf(reason, size, "%s", v.reason);
    return v.level;
}

static void levels_by_lag(void **state)
{
    (void)state;
    static const struct {
        uint64_t pending, ack_pending;
        lag_level want;
        const char *reason;
    } rows[] = {
        {0, 0, LAG_OK, "lag 0 < warning 1000"},
        {999, 0, LAG_OK, "lag 999 < warning 1000"},
        {0, 999, LAG_OK, "lag 999 < warning 1000"},
        {500, 500, LAG_WARNING, "lag 1000 >= warning 1000"}, /* pending + in flight */
        {1000, 0, LAG_WARNING, "lag 1000 >= warning 1000"},
        {10000, 0, LAG_WARNING, "lag 10000 >= warning 1000"}, /* 1,000-10,000: warning */
        {10001, 0, LAG_CRITICAL, "lag 10001 > critical 10000"},
        {0, 10001, LAG_CRITICAL, "lag 10001 > critical 10000"},
        {UINT64_MAX, 5, LAG_CRITICAL, "lag 18446744073709551615 > critical 10000"}, /* saturates */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char reason[160];
        assert_int_equal(classify(rows[i].pending, rows[i].ack_pending, reason, sizeof reason),
                         rows[i].want);
        assert_string_equal(reason, rows[i].reason);
    }
}

static void emergency_by_retention(void **state)
{
    (void)state;
    lag_verdict v;
    /* age: over half of max_age, whatever the lag */
    lag_input age = {.pending = 1,
                     .oldest_seq = 10,
                     .oldest_age_ms = 3600001,
                     .stream_last_seq = 10,
                     .stream_msgs = 10,
                     .max_age_ms = 7200000};
    lag_classify(&th, &age, &v);
    assert_int_equal(v.level, LAG_EMERGENCY);
    assert_string_equal(v.reason, "oldest unacked event is 1.0h old, over half of max_age 2h");
    age.oldest_age_ms = 3600000; /* exactly half: not yet */
    lag_classify(&th, &age, &v);
    assert_int_equal(v.level, LAG_OK);
    age.oldest_seq = 0; /* nothing unacked: no age rule */
    age.oldest_age_ms = 9999999;
    lag_classify(&th, &age, &v);
    assert_int_equal(v.level, LAG_OK);

    /* count: events stored from the oldest unacked on, against max_msgs */
    lag_input count = {.pending = 5,
                       .oldest_seq = 100,
                       .stream_last_seq = 150,
                       .stream_msgs = 200,
                       .max_msgs = 100};
    lag_classify(&th, &count, &v);
    assert_int_equal(v.behind_msgs, 51);
    assert_int_equal(v.level, LAG_EMERGENCY);
    assert_string_equal(v.reason,
                        "51 events stored since the oldest unacked, over half of max_msgs 100");
    count.oldest_seq = 101; /* 50: exactly half */
    lag_classify(&th, &count, &v);
    assert_int_equal(v.level, LAG_OK);
    /* a work queue's sequence numbers count deleted messages: never more than stored */
    lag_input wq = {
        .pending = 1, .oldest_seq = 1, .stream_last_seq = 1000, .stream_msgs = 3, .max_msgs = 100};
    lag_classify(&th, &wq, &v);
    assert_int_equal(v.behind_msgs, 3);
    assert_int_equal(v.level, LAG_OK);

    /* bytes: behind x the stream's average size, against max_bytes */
    lag_input bytes = {.pending = 1,
                       .oldest_seq = 1,
                       .stream_last_seq = 60,
                       .stream_msgs = 100,
                       .stream_bytes = 20000,
                       .max_bytes = 20000};
    lag_classify(&th, &bytes, &v); /* 60 x 200 = 12000 > 10000 */
    assert_int_equal(v.level, LAG_EMERGENCY);
    assert_non_null(strstr(v.reason, "over half of max_bytes"));
    bytes.oldest_seq = 11; /* 50 x 200 = 10000: half */
    lag_classify(&th, &bytes, &v);
    assert_int_equal(v.level, LAG_OK);

    /* emergency wins over critical */
    age.oldest_seq = 10;
    age.pending = 50000;
    lag_classify(&th, &age, &v);
    assert_int_equal(v.level, LAG_EMERGENCY);
    assert_int_equal(v.lag, 50000);
}

static void debounce(void **state)
{
    (void)state;
    lag_debounce d;
    lag_debounce_init(&d, LAG_OK);
    assert_false(lag_debounce_step(&d, LAG_OK, 0, 1000));
    assert_true(lag_debounce_step(&d, LAG_CRITICAL, 100, 1000)); /* raise at once */
    assert_int_equal(d.level, LAG_CRITICAL);
    assert_false(lag_debounce_step(&d, LAG_CRITICAL, 200, 1000));
    assert_false(lag_debounce_step(&d, LAG_OK, 300, 1000)); /* lower only after 1 s */
    assert_false(lag_debounce_step(&d, LAG_WARNING, 800, 1000));
    assert_false(lag_debounce_step(&d, LAG_OK, 1200, 1000));
    /* 1 s after 300, every poll was <= WARNING, not all <= OK: the trailing maximum */
    assert_true(lag_debounce_step(&d, LAG_OK, 1300, 1000));
    assert_int_equal(d.level, LAG_WARNING);
    assert_false(lag_debounce_step(&d, LAG_OK, 1700, 1000));
    assert_false(lag_debounce_step(&d, LAG_OK, 2199, 1000));
    assert_true(lag_debounce_step(&d, LAG_OK, 2200, 1000)); /* OK since 1200 */
    assert_int_equal(d.level, LAG_OK);
    /* a relapse restarts the wait */
    assert_true(lag_debounce_step(&d, LAG_WARNING, 3000, 1000));
    assert_false(lag_debounce_step(&d, LAG_OK, 3100, 1000));
    assert_false(lag_debounce_step(&d, LAG_WARNING, 3500, 1000));
    assert_false(lag_debounce_step(&d, LAG_OK, 4000, 1000));
    assert_false(lag_debounce_step(&d, LAG_OK, 4999, 1000));
    assert_true(lag_debounce_step(&d, LAG_OK, 5000, 1000));
    /* clear_after 0: every change, both ways */
    lag_debounce_init(&d, LAG_EMERGENCY);
    assert_true(lag_debounce_step(&d, LAG_WARNING, 0, 0));
    assert_int_equal(d.level, LAG_WARNING);
    assert_true(lag_debounce_step(&d, LAG_OK, 1, 0));
    assert_false(lag_debounce_step(&d, LAG_OK, 2, 0));
    assert_string_equal(lag_level_name(LAG_EMERGENCY), "emergency");
    assert_string_equal(lag_level_name((lag_level)9), "unknown");
}

typedef struct warnings {
    char text[4][512];
    size_t n;
} warnings;

static void collect(void *ctx, const char *text)
{
    warnings *w = ctx;
    if (w->n < 4)
        snprintf(w->text[w->n++], sizeof w->text[0], "%s", text);
}

static void retention(void **state)
{
    (void)state;
    lag_retention_input in = {.stream = "EVENTS",
                              .peak_events_per_s = 2400,
                              .outage_ms = 300000,
                              .avg_event_size = 200,
                              .max_age_ms = 7LL * 86400000};
    assert_int_equal(lag_retention_needed(&in), 720000);
    warnings w = {0};
    assert_int_equal(lag_retention_check(&in, collect, &w), 0); /* 7 d, no size limit */
    in.max_msgs = 720000;
    in.max_bytes = 144000000;
    in.max_age_ms = 300000;
    assert_int_equal(lag_retention_check(&in, collect, &w), 0); /* exactly enough */
    in.max_msgs = 719999;
    in.max_bytes = 143999999;
    in.max_age_ms = 299999;
    assert_int_equal(lag_retention_check(&in, collect, &w), 3);
    assert_string_equal(w.text[0],
                        "stream EVENTS keeps at most 719999 events (max_msgs), but an outage of 5m "
                        "at 2400 events/s needs 720000: a consumer stopped that long loses the "
                        "oldest events to retention");
    assert_non_null(strstr(w.text[1], "keeps at most 143999999 (max_bytes)"));
    if (!strstr(w.text[1], "needs 144000000 bytes (144.0 MB)"))
        fail_msg("%s", w.text[1]);
    assert_non_null(
        strstr(w.text[2], "keeps events 299999ms (max_age), less than an outage of 5m"));
    in.discard_new = true;
    w.n = 0;
    assert_int_equal(lag_retention_check(&in, collect, &w), 3);
    assert_non_null(strstr(w.text[0], "refuses new events and producers spool them"));
    /* rounding up: 1 event/s for 1.5 s needs 2 */
    lag_retention_input tiny = {
        .stream = "S", .peak_events_per_s = 1, .outage_ms = 1500, .avg_event_size = 1};
    assert_int_equal(lag_retention_needed(&tiny), 2);
    /* the largest config values do not overflow */
    lag_retention_input big = {.stream = "S",
                               .peak_events_per_s = 10000000,
                               .outage_ms = 2592000000LL,
                               .avg_event_size = 65536};
    assert_int_equal(lag_retention_needed(&big), 25920000000000ULL);
}

static void gap_list(void **state)
{
    (void)state;
    lag_gap_list l = {0};
    lag_gap g = {.source_id = "gs-1", .first = 5, .last = 5, .reported_unix_ms = 100};
    assert_int_equal(lag_gap_list_add(&l, &g, 2), GF_OK);
    g.first = g.last = 9;
    g.reported_unix_ms = 200;
    assert_int_equal(lag_gap_list_add(&l, &g, 2), GF_OK);
    g.first = 20;
    g.last = 22;
    g.reported_unix_ms = 300;
    assert_int_equal(lag_gap_list_add(&l, &g, 2), GF_OK); /* bound 2: 5..5 goes */
    assert_int_equal(l.len, 2);
    assert_int_equal(l.unlisted, 1);
    assert_int_equal(l.items[0].first, 9);
    assert_true(lag_gap_list_close(&l, "gs-1", 20, 22));
    assert_false(lag_gap_list_close(&l, "gs-1", 5, 5)); /* the unlisted one closed */
    assert_int_equal(l.unlisted, 0);
    assert_false(lag_gap_list_close(&l, "gs-2", 9, 9));
    assert_int_equal(lag_gap_list_expire(&l, 201), 1);
    assert_int_equal(l.len, 0);
    assert_int_equal(l.unlisted, 1);
    lag_gap long_id = {.first = 1, .last = 1};
    memset(long_id.source_id, 'a', sizeof long_id.source_id);
    assert_int_equal(lag_gap_list_add(&l, &long_id, 2), GF_ERR_INVALID);
    assert_int_equal(lag_gap_list_add(&l, &g, 0), GF_ERR_INVALID);
    lag_gap_list_free(&l);
}

static void config_table(void **state)
{
    (void)state;
    gf_config_error err;
    assert_int_equal(gf_config_table_check(&lag_config_table, &err), GF_OK);
    lag_config c;
    struct gf_config_arena *arena = NULL;
    assert_int_equal(gf_config_parse_table("lag", "", 0, &lag_config_table, &c, &arena, &err),
                     GF_OK);
    assert_int_equal(c.interval_ms, 10000);
    assert_int_equal(c.warning, 1000);
    assert_int_equal(c.critical, 10000);
    assert_int_equal(c.peak_events_per_s, 2400);
    assert_int_equal(c.outage_ms, 300000);
    assert_int_equal(c.avg_event_size, 200);
    assert_true(c.gaps.enabled);
    assert_string_equal(c.gaps.stream, "EVENTS");
    assert_int_equal(c.gaps.window, 1024);
    assert_string_equal(c.alert_stream, "ALERTS");
    gf_config_arena_free(arena);
    static const struct {
        const char *yaml, *says;
    } bad[] = {
        {"warning: 10\ncritical: 5\n", "must be at least warning (10)"},
        {"warning: 0\n", "warning"},
        {"interval: 10ms\n", "interval"},
        {"report_bucket: a.b\n", "report_bucket"},
        {"alert_stream: \"a b\"\n", "alert_stream"},
        {"gaps: {grace: 0}\n", "grace"},
        {"gaps: {stream: \"x.y\"}\n", "gaps"},
        {"outage: 0\n", "outage"},
        {"nope: 1\n", "nope"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        arena = NULL;
        assert_int_equal(gf_config_parse_table("lag", bad[i].yaml, strlen(bad[i].yaml),
                                               &lag_config_table, &c, &arena, &err),
                         GF_ERR_CONFIG);
        if (!strstr(err.message, bad[i].says))
            fail_msg("'%s': '%s' does not name '%s'", bad[i].yaml, err.message, bad[i].says);
    }
}

static char *render(const Gamefn__V1__LagReport *r, bool json)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    if (json)
        assert_int_equal(lag_render_json(f, r), GF_OK);
    else
        lag_render_text(f, r, r->as_of_unix_ms + 2500);
    fclose(f);
    return text;
}

static void rendering(void **state)
{
    (void)state;
    Gamefn__V1__ConsumerLag c = GAMEFN__V1__CONSUMER_LAG__INIT;
    c.stream = "EVENTS";
    c.consumer = "leaderboard-p07";
    c.filter_subject = "gamefn.v1.evp.7.>";
    c.pending = 12000;
    c.ack_pending = 64;
    c.redelivered = 2;
    c.lag = 12064;
    c.oldest_unacked_seq = 42;
    c.oldest_unacked_age_ms = 95000;
    c.max_age_ms = 7LL * 86400000;
    c.level = GAMEFN__V1__LAG_LEVEL__LAG_LEVEL_WARNING;
    c.computed = GAMEFN__V1__LAG_LEVEL__LAG_LEVEL_CRITICAL;
    c.reason = "lag 12064 > critical 10000";
    Gamefn__V1__ConsumerLag *cs[] = {&c};
    Gamefn__V1__GapSummary g = GAMEFN__V1__GAP_SUMMARY__INIT;
    g.observing = true;
    g.stream = "EVENTS";
    g.events = 100;
    g.sources = 2;
    g.suspected = 1;
    g.suspected_seqs = 3;
    Gamefn__V1__SuspectedGap s = GAMEFN__V1__SUSPECTED_GAP__INIT;
    s.source_id = "gs-1";
    s.first = 5;
    s.last = 7;
    s.definite = true;
    Gamefn__V1__SuspectedGap *ss[] = {&s};
    char *warn[] = {"stream EVENTS keeps at most 10 events"};
    Gamefn__V1__LagReport r = GAMEFN__V1__LAG_REPORT__INIT;
    r.as_of_unix_ms = 1795966336123;
    r.monitor_id = "m1";
    r.lease_token = 7;
    r.interval_ms = 10000;
    r.warning = 1000;
    r.critical = 10000;
    r.consumers = cs;
    r.n_consumers = 1;
    r.gaps = &g;
    r.open_gaps = ss;
    r.n_open_gaps = 1;
    r.retention_warnings = warn;
    r.n_retention_warnings = 1;

    char *text = render(&r, false);
    assert_non_null(
        strstr(text, "lag monitor m1 (lease token 7): as of 2.5s ago, polled every 10s"));
    assert_non_null(strstr(text, "leaderboard-p07"));
    assert_non_null(strstr(text, "1.6m"));
    assert_non_null(strstr(text, "warning (now critical)"));
    assert_non_null(strstr(text, "source gs-1 seq 5..7 (3 events)"));
    assert_non_null(strstr(text, "definite"));
    assert_non_null(strstr(text, "retention warning: stream EVENTS keeps at most 10 events"));
    free(text);

    text = render(&r, true);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    assert_non_null(root);
    json_t *c0 = json_array_get(json_object_get(root, "consumers"), 0);
    assert_string_equal(json_string_value(json_object_get(c0, "level")), "warning");
    assert_string_equal(json_string_value(json_object_get(c0, "computed")), "critical");
    assert_int_equal(json_integer_value(json_object_get(c0, "lag")), 12064);
    json_t *gaps = json_object_get(root, "gaps");
    assert_int_equal(json_integer_value(json_object_get(gaps, "suspected")), 1);
    json_t *open = json_array_get(json_object_get(gaps, "open_gaps"), 0);
    assert_string_equal(json_string_value(json_object_get(open, "source_id")), "gs-1");
    assert_true(json_is_true(json_object_get(open, "definite")));
    json_decref(root);
    free(text);

    /* an empty report renders too */
    Gamefn__V1__LagReport empty = GAMEFN__V1__LAG_REPORT__INIT;
    text = render(&empty, false);
    assert_non_null(strstr(text, "(no durable consumers)"));
    assert_non_null(strstr(text, "gaps: not observed"));
    free(text);
    text = render(&empty, true);
    root = json_loads(text, 0, &jerr);
    assert_non_null(root);
    json_decref(root);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(levels_by_lag), cmocka_unit_test(emergency_by_retention),
        cmocka_unit_test(debounce),      cmocka_unit_test(retention),
        cmocka_unit_test(gap_list),      cmocka_unit_test(config_table),
        cmocka_unit_test(rendering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
