/*
 * test_report_json.c — summary.json and check.json as the report reads them
 * (tools/report/run.h): tables of good and malformed documents with the problem each
 * gives; HTML escaping (buf.h) and the SVG inlining that keeps plots' ids apart
 * (gnuplot.h).
 */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "gnuplot.h"
#include "run.h"

static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (!j)
        fail_msg("bad test JSON: %s: %s", err.text, text);
    return j;
}

static void reset(gf_run *run)
{
    for (size_t i = 0; i < run->nproblems; i++)
        free(run->problems[i]);
    free(run->restarts);
    free(run->invariants);
    memset(run, 0, sizeof *run);
}

#define RUN "\"run\": {\"id\": \"r1\", \"population\": \"mid\"}"

static void test_summary(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *problem; /* NULL: none; else a part of the first problem */
        bool params;
    } cases[] = {
        /* clang-format off */
        {"{" RUN "}", NULL, true},
        {"{\"format\": 1, " RUN ", \"restarts\": [], \"dlq\": {\"messages\": 0}, \"gaps\": {\"open\": 0}}", NULL, true},
        {"{" RUN ", \"restarts\": [{\"function\": \"matcher\", \"t\": 3.5, \"planned\": true, \"reason\": \"x\", \"instance\": \"m-1\"}]}", NULL, true},
        {"{" RUN ", \"leaderboard\": {\"board\": \"kills\", \"top\": [{\"rank\": 1, \"player\": \"<b>\", \"score\": -2.5}]}}", NULL, true},
        {"{" RUN ", \"dlq\": {\"messages\": 3, \"by_consumer\": {\"a\": 1, \"b\": 2}}}", NULL, true},
        {"[]", "not a JSON object", false},
        {"{}", "no \"run\" object", false},
        {"{\"run\": 5}", "no \"run\" object", false},
        {"{\"format\": 2, " RUN "}", "format is not 1", true},
        {"{\"format\": \"1\", " RUN "}", "format is not 1", true},
        {"{\"run\": {\"population\": 3}}", "run.population must be a string", true},
        {"{\"run\": {\"low_pop_region\": []}}", "run.low_pop_region must be a string", true},
        {"{\"run\": {\"seconds\": -1}}", "run.seconds must be a number", true},
        {"{\"run\": {\"elapsed_s\": \"60\"}}", "run.elapsed_s must be a number", true},
        {"{\"run\": {\"seconds\": 1e300}}", "run.seconds must be a number", true},
        {"{" RUN ", \"restarts\": {}}", "restarts must be an array", true},
        {"{" RUN ", \"restarts\": [{\"instance\": \"x\"}]}", "restarts[0]: needs \"function\"", true},
        {"{" RUN ", \"restarts\": [{\"function\": \"m\"}, {\"function\": \"m\", \"t\": -3}]}", "restarts[1]", true},
        {"{" RUN ", \"restarts\": [{\"function\": \"m\", \"planned\": \"yes\"}]}", "restarts[0]", true},
        {"{" RUN ", \"restarts\": [{\"function\": 7}]}", "restarts[0]", true},
        {"{" RUN ", \"leaderboard\": []}", "leaderboard must be", true},
        {"{" RUN ", \"leaderboard\": {\"top\": [{\"rank\": 0, \"player\": \"a\", \"score\": 1}]}}", "leaderboard.top[0]", true},
        {"{" RUN ", \"leaderboard\": {\"top\": [{\"rank\": 1, \"player\": \"a\", \"score\": \"1\"}]}}", "leaderboard.top[0]", true},
        {"{" RUN ", \"leaderboard\": {\"top\": [{\"rank\": 1, \"score\": 1}]}}", "leaderboard.top[0]", true},
        {"{" RUN ", \"dlq\": {\"messages\": -1}}", "dlq must be", true},
        {"{" RUN ", \"dlq\": {\"messages\": 1.5}}", "dlq must be", true},
        {"{" RUN ", \"dlq\": {\"messages\": 1, \"by_consumer\": {\"a\": \"x\"}}}", "dlq must be", true},
        {"{" RUN ", \"gaps\": {\"suspected\": 1}}", "gaps must be", true},
        {"{" RUN ", \"gaps\": {\"open\": 0, \"closed\": -1}}", "gaps must be", true},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_run run = {0};
        json_t *j = parse(cases[i].json);
        gf_run_read_summary(&run, j);
        if (cases[i].problem == NULL && run.nproblems)
            fail_msg("case %zu: unexpected problem: %s", i, run.problems[0]);
        if (cases[i].problem && (!run.nproblems || !strstr(run.problems[0], cases[i].problem)))
            fail_msg("case %zu: want a problem with \"%s\", got \"%s\"", i, cases[i].problem,
                     run.nproblems ? run.problems[0] : "none");
        assert_int_equal(run.params != NULL, cases[i].params);
        reset(&run);
        json_decref(j);
    }
}

static void test_summary_fields(void **state)
{
    (void)state;
    gf_run run = {0};
    json_t *j = parse("{\"run\": {\"low_pop_region\": \"sa\", \"status\": \"completed\"}, "
                      "\"restarts\": [{\"function\": \"matcher\", \"t\": 3.5, \"planned\": true},"
                      " {\"function\": \"allocator\", \"instance\": \"a-2\"}],"
                      "\"leaderboard\": {\"top\": [" /* 12 entries: the first 10 are kept */
                      "{\"rank\":1,\"player\":\"a\",\"score\":9},{\"rank\":2,\"player\":\"b\","
                      "\"score\":8},{\"rank\":3,\"player\":\"c\",\"score\":7},{\"rank\":4,"
                      "\"player\":\"d\",\"score\":6},{\"rank\":5,\"player\":\"e\",\"score\":5},"
                      "{\"rank\":6,\"player\":\"f\",\"score\":4},{\"rank\":7,\"player\":\"g\","
                      "\"score\":3},{\"rank\":8,\"player\":\"h\",\"score\":2},{\"rank\":9,"
                      "\"player\":\"i\",\"score\":1},{\"rank\":10,\"player\":\"j\",\"score\":0},"
                      "{\"rank\":11,\"player\":\"k\",\"score\":0},{\"rank\":12}]},"
                      "\"gaps\": {\"open\": 2, \"suspected\": 5}}");
    gf_run_read_summary(&run, j);
    assert_int_equal(run.nproblems, 0);
    assert_string_equal(run.population, "mid"); /* the default run's */
    assert_false(run.population_given);
    assert_string_equal(run.low_pop_region, "sa");
    assert_string_equal(run.status, "completed");
    assert_int_equal(run.restarts_state, GF_RUN_LOADED);
    assert_int_equal(run.nrestarts, 2);
    assert_true(run.restarts[0].planned && run.restarts[0].t == 3.5);
    assert_false(run.restarts[1].planned);
    assert_true(isnan(run.restarts[1].t));
    assert_string_equal(run.restarts[1].instance, "a-2");
    assert_int_equal(run.lb_state, GF_RUN_LOADED);
    assert_int_equal(run.nlb, 10);
    assert_string_equal(run.lb[9].player, "j");
    assert_int_equal(run.dlq_state, GF_RUN_ABSENT);
    assert_int_equal(run.gaps_state, GF_RUN_LOADED);
    assert_true(run.gaps_open == 2 && run.gaps_suspected == 5 && run.gaps_closed == -1);
    reset(&run);
    json_decref(j);
}

static void test_check(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *problem;
        size_t n;
    } cases[] = {
        /* clang-format off */
        {"{\"invariants\": []}", NULL, 0},
        {"{\"format\": 1, \"checked_at\": \"2025-01-01T00:00:00Z\", \"invariants\": [{\"name\": \"double_claims\", \"count\": 0}, {\"name\": \"x\", \"count\": 3, \"detail\": \"d\", \"explanation\": \"e\", \"examples\": [\"t-1\"]}]}", NULL, 2},
        {"{}", "needs an \"invariants\" array", 0},
        {"[]", "needs an \"invariants\" array", 0},
        {"{\"invariants\": {}}", "needs an \"invariants\" array", 0},
        {"{\"checked_at\": 5, \"invariants\": []}", "checked_at must be a string", 0},
        {"{\"invariants\": [{\"name\": \"a\"}]}", "invariants[0]", 0},
        {"{\"invariants\": [{\"name\": \"a\", \"count\": -1}]}", "invariants[0]", 0},
        {"{\"invariants\": [{\"name\": \"a\", \"count\": 0.5}]}", "invariants[0]", 0},
        {"{\"invariants\": [{\"name\": \"a\", \"count\": \"0\"}]}", "invariants[0]", 0},
        {"{\"invariants\": [{\"name\": \"\", \"count\": 0}]}", "invariants[0]", 0},
        {"{\"invariants\": [{\"count\": 0}]}", "invariants[0]", 0},
        {"{\"invariants\": [{\"name\": \"a\", \"count\": 0, \"examples\": [1]}]}", "invariants[0]", 0},
        {"{\"invariants\": [{\"name\": \"a\", \"count\": 0, \"detail\": {}}]}", "invariants[0]", 0},
        {"{\"invariants\": [{\"name\": \"a\", \"count\": 0}, {\"name\": \"a\", \"count\": 0}]}", "appears twice", 0},
        {"{\"invariants\": [5]}", "invariants[0]", 0},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_run run = {0};
        json_t *j = parse(cases[i].json);
        gf_run_read_check(&run, j);
        if (cases[i].problem == NULL) {
            if (run.nproblems)
                fail_msg("case %zu: unexpected problem: %s", i, run.problems[0]);
            assert_int_equal(run.check_state, GF_RUN_LOADED);
            assert_int_equal(run.ninvariants, cases[i].n);
        } else {
            if (!run.nproblems || !strstr(run.problems[0], cases[i].problem))
                fail_msg("case %zu: want a problem with \"%s\", got \"%s\"", i, cases[i].problem,
                         run.nproblems ? run.problems[0] : "none");
            assert_int_equal(run.check_state, GF_RUN_UNUSABLE);
            assert_null(run.invariants);
        }
        reset(&run);
        json_decref(j);
    }
}

static void test_problems_bounded(void **state)
{
    (void)state;
    gf_run run = {0};
    for (int i = 0; i < GF_RUN_PROBLEMS_MAX + 5; i++)
        gf_run_problem(&run, "problem %d", i);
    assert_int_equal(run.nproblems, GF_RUN_PROBLEMS_MAX);
    assert_int_equal(run.problems_dropped, 5);
    assert_string_equal(run.problems[0], "problem 0");
    reset(&run);
}

static void test_html_escape(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        /* clang-format off */
        {"", ""},
        {"plain text", "plain text"},
        {"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
        {"a & b \"c\" 'd'", "a &amp; b &quot;c&quot; &#39;d&#39;"},
        {"&amp;", "&amp;amp;"},
        {"tab\tnew\nline", "tab\tnew\nline"},
        {"bell\x07" "esc\x1b" "del\x7f", "bell\xef\xbf\xbd" "esc\xef\xbf\xbd" "del\xef\xbf\xbd"},
        {"caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_buf b = {0};
        gf_buf_puts(&b, "");
        gf_buf_html(&b, cases[i].in);
        assert_false(b.oom);
        if (strcmp(b.p, cases[i].out) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, b.p, cases[i].out);
        gf_buf_free(&b);
    }
    gf_buf b = {0};
    gf_buf_html(&b, NULL);
    assert_int_equal(b.len, 0);
    for (int i = 0; i < 1000; i++)
        gf_buf_printf(&b, "%0300d", i); /* growth past the small printf buffer */
    assert_int_equal(b.len, 300000);
    assert_int_equal(strlen(b.p), 300000);
    gf_buf_free(&b);
}

static void test_svg_inline(void **state)
{
    (void)state;
    const char *svg = "<?xml version=\"1.0\"?>\n<svg\n viewBox=\"0 0 10 10\">\n"
                      "<g id=\"gnuplot_canvas\"><defs><path id='gpPt1' d='M0,0'/></defs>\n"
                      "<use xlink:href='#gpPt1'/><use href=\"#gpPt1\"/>"
                      "<rect filter=\"url(#textbox)\"/><text>id='x' stays</text></g>\n</svg>\n"
                      "trailing junk";
    gf_buf out = {0};
    assert_int_equal(gf_svg_inline(svg, strlen(svg), "p3-", &out), GF_OK);
    const char *want = "<svg class=\"plot\"\n viewBox=\"0 0 10 10\">\n"
                       "<g id=\"p3-gnuplot_canvas\"><defs><path id='p3-gpPt1' d='M0,0'/></defs>\n"
                       "<use xlink:href='#p3-gpPt1'/><use href=\"#p3-gpPt1\"/>"
                       "<rect filter=\"url(#p3-textbox)\"/><text>id='x' stays</text></g>\n"
                       "</svg>\n";
    assert_string_equal(out.p, want);
    gf_buf_free(&out);
    static const char *const bad[] = {"", "<svg>", "</svg><svg", "no svg here"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gf_buf o = {0};
        assert_int_equal(gf_svg_inline(bad[i], strlen(bad[i]), "p-", &o), GF_ERR_INVALID);
        gf_buf_free(&o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary),     cmocka_unit_test(test_summary_fields),
        cmocka_unit_test(test_check),       cmocka_unit_test(test_problems_bounded),
        cmocka_unit_test(test_html_escape), cmocka_unit_test(test_svg_inline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
