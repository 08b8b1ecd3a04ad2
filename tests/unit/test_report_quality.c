/*
 * test_report_quality.c — the quality figures and the verdict (tools/report/quality.h)
 * on small runs built in memory: a healthy one, and one change at a time that must turn
 * the verdict (an invariant, a restart, a missed goal, missing data) with the reason a
 * reader will see.
 */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quality.h"
#include "run.h"

#define TICKETS_HEADER "t\tmode\tshape\tregion\toutcome\twait_ms\tdelta_ping_ms\tmerge\n"

static const char healthy_tickets[] =
    TICKETS_HEADER "1\thybrid\t5v5\teu\tassigned\t800\t4\toff\n"
                   "2\thybrid\t5v5\teu\tassigned\t1200\t6\toff\n"
                   "3\thybrid\t5v5\teu\tcancelled\t90000\t-\toff\n" /* not timed */
                   "4\tping_first\t5v5\teu\tassigned\t500\t12\toff\n"
                   "5\tping_first\t5v5\teu\tassigned\t500\t20\toff\n"
                   "6\tsbmm\t1v1\tsa\tassigned\t10000\t30\toff\n"
                   "7\tsbmm\t1v1\tsa\tassigned\t4000\t30\ton\n";
static const char healthy_matches[] = "t\tmode\tshape\tregion\tskill_spread\n"
                                      "1\tsbmm\t1v1\teu\t80\n2\tsbmm\t1v1\teu\t120\n";
static const char healthy_summary[] =
    "{\"run\": {\"population\": \"mid\", \"low_pop_region\": \"sa\", \"status\": "
    "\"completed\"}, \"restarts\": [], \"gaps\": {\"open\": 0}, \"dlq\": {\"messages\": 0}}";
static const char healthy_check[] =
    "{\"invariants\": [{\"name\": \"double_claims\", \"count\": 0}, {\"name\": "
    "\"players_in_two_matches\", \"count\": 0}, {\"name\": \"tickets_lost\", \"count\": 0}, "
    "{\"name\": \"limit_violations\", \"count\": 0}, {\"name\": \"events_lost\", \"count\": 0}, "
    "{\"name\": \"events_double_applied\", \"count\": 0}]}";

typedef struct spec {
    const char *tickets, *matches, *summary, *check; /* NULL: absent */
} spec;

static gf_run *build(const spec *s)
{
    gf_run *run = calloc(1, sizeof *run);
    assert_non_null(run);
    json_error_t jerr;
    run->summary = json_loads(s->summary, 0, &jerr);
    assert_non_null(run->summary);
    gf_run_read_summary(run, run->summary);
    if (s->check) {
        run->check = json_loads(s->check, 0, &jerr);
        assert_non_null(run->check);
        gf_run_read_check(run, run->check);
    }
    const char *texts[GF_RUN__FILES] = {
        [GF_RUN_TICKETS] = s->tickets, [GF_RUN_MATCHES] = s->matches};
    for (int f = 0; f < GF_RUN__FILES; f++) {
        if (!texts[f])
            continue;
        size_t n;
        const gf_tsv_col *rest;
        const gf_tsv_col *cols = gf_run_file_spec((gf_run_file)f, &n, &rest);
        gf_tsv_error err;
        if (gf_tsv_parse(texts[f], strlen(texts[f]), "x", cols, n, rest, &run->tables[f], &err))
            fail_msg("%s", err.message);
        run->file_state[f] = GF_RUN_LOADED;
    }
    return run;
}

static void judge(const spec *s, gf_figure figs[GF_FIG__COUNT], gf_verdict *v)
{
    gf_run *run = build(s);
    gf_quality_figures(run, figs);
    gf_quality_verdict(run, figs, v);
    gf_run_free(run);
}

static bool has(const gf_verdict_list *l, const char *part)
{
    for (size_t i = 0; i < l->n; i++)
        if (strstr(l->line[i], part))
            return true;
    return false;
}

static void dump(const gf_verdict *v)
{
    const gf_verdict_list *ls[] = {&v->fails, &v->missing, &v->notes};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < ls[k]->n; i++)
            fprintf(stderr, "  [%d] %s\n", k, ls[k]->line[i]);
}

static void test_healthy(void **state)
{
    (void)state;
    spec s = {healthy_tickets, healthy_matches, healthy_summary, healthy_check};
    gf_figure figs[GF_FIG__COUNT];
    gf_verdict v;
    judge(&s, figs, &v);
    if (v.level != GF_HEALTHY)
        dump(&v);
    assert_int_equal(v.level, GF_HEALTHY);
    assert_int_equal(figs[GF_FIG_WAIT_P50].status, GF_GOAL_MET);
    assert_string_equal(figs[GF_FIG_WAIT_P50].measured, "0.80 s (2 tickets)");
    assert_string_equal(figs[GF_FIG_WAIT_P99].measured, "1.20 s (2 tickets)");
    assert_string_equal(figs[GF_FIG_DPING_P95].measured, "20.0 ms (2 tickets)");
    assert_int_equal(figs[GF_FIG_DPING_P95].status, GF_GOAL_MET); /* <= 20 */
    assert_int_equal(figs[GF_FIG_SPREAD_P95].status, GF_GOAL_NONE);
    assert_string_equal(figs[GF_FIG_SPREAD_P95].measured, "120 (2 matches)");
    assert_string_equal(figs[GF_FIG_VIOLATIONS].measured, "0");
    assert_int_equal(figs[GF_FIG_MERGE].status, GF_GOAL_MET); /* 4 s <= 10 s / 2 */
    assert_string_equal(figs[GF_FIG_MERGE].measured, "sa: 4.00 s on (1) vs 10.00 s off (1): x0.40");
}

static void test_turns(void **state)
{
    (void)state;
    static const char slow[] = TICKETS_HEADER "1\thybrid\t5v5\teu\tassigned\t2000\t4\toff\n"
                                              "4\tping_first\t5v5\teu\tassigned\t500\t21\toff\n"
                                              "6\tsbmm\t1v1\tsa\tassigned\t6000\t30\toff\n"
                                              "7\tsbmm\t1v1\tsa\tassigned\t4000\t30\ton\n";
    static const char no_merge_col[] = "t\tmode\tshape\tregion\toutcome\twait_ms\tdelta_ping_ms\n"
                                       "1\thybrid\t5v5\teu\tassigned\t800\t4\n"
                                       "4\tping_first\t5v5\teu\tassigned\t500\t12\n";
    static const struct {
        spec s;
        gf_verdict_level level;
        const char *reason; /* a part of a line of the list the level reports */
    } cases[] = {
        {{healthy_tickets, healthy_matches, healthy_summary, NULL},
         GF_INCOMPLETE,
         "invariants not checked: the run has no check.json"},
        {{healthy_tickets, healthy_matches, healthy_summary,
          "{\"invariants\": [{\"name\": \"double_claims\", \"count\": 2}]}"},
         GF_UNHEALTHY,
         "invariant double_claims = 2 (must be 0)"},
        {{healthy_tickets, healthy_matches, healthy_summary,
          "{\"invariants\": [{\"name\": \"double_claims\", \"count\": 0}]}"},
         GF_INCOMPLETE,
         "invariant tickets_lost not checked"},
        {{healthy_tickets, healthy_matches, healthy_summary,
          "{\"invariants\": [{\"name\": \"limit_violations\", \"count\": 1}]}"},
         GF_UNHEALTHY,
         "invariant limit_violations = 1"},
        {{slow, healthy_matches, healthy_summary, healthy_check},
         GF_UNHEALTHY,
         "goal missed: Wait p50, hybrid 5v5 = 2.00 s (1 tickets) (goal < 2 s at mid population)"},
        {{slow, healthy_matches, healthy_summary, healthy_check},
         GF_UNHEALTHY,
         "goal missed: Delta ping p95, ping_first = 21.0 ms"},
        {{slow, healthy_matches, healthy_summary, healthy_check},
         GF_UNHEALTHY,
         "goal missed: Low-population p95 wait, merge on vs off = sa: 4.00 s on (1) vs 6.00 s "
         "off (1): x0.67"},
        {{healthy_tickets, healthy_matches,
          "{\"run\": {\"low_pop_region\": \"sa\"}, \"restarts\": [{\"function\": \"matcher\", "
          "\"instance\": \"matcher-2\"}]}",
          healthy_check},
         GF_UNHEALTHY,
         "1 unplanned restart (matcher-2)"},
        {{healthy_tickets, healthy_matches,
          "{\"run\": {\"low_pop_region\": \"sa\"}, \"restarts\": [{\"function\": \"matcher\", "
          "\"planned\": true}], \"dlq\": {\"messages\": 4}}",
          healthy_check},
         GF_HEALTHY,
         "1 planned restart"},
        {{healthy_tickets, healthy_matches,
          "{\"run\": {\"low_pop_region\": \"sa\"}, \"restarts\": [], \"dlq\": {\"messages\": 4}}",
          healthy_check},
         GF_HEALTHY,
         "4 messages in the dead-letter stream"},
        {{healthy_tickets, healthy_matches, "{\"run\": {\"low_pop_region\": \"sa\"}}",
          healthy_check},
         GF_INCOMPLETE,
         "restarts not recorded"},
        {{healthy_tickets, healthy_matches,
          "{\"run\": {\"low_pop_region\": \"sa\"}, \"restarts\": [], \"gaps\": {\"open\": 3}}",
          healthy_check},
         GF_UNHEALTHY,
         "3 event gaps still open (events lost)"},
        {{healthy_tickets, healthy_matches,
          "{\"run\": {\"low_pop_region\": \"sa\", \"status\": \"interrupted\"}, \"restarts\": []}",
          healthy_check},
         GF_INCOMPLETE,
         "the run did not complete (run.status \"interrupted\")"},
        {{healthy_tickets, healthy_matches,
          "{\"run\": {\"low_pop_region\": \"sa\", \"status\": \"failed\"}, \"restarts\": []}",
          healthy_check},
         GF_UNHEALTHY,
         "the run failed"},
        {{healthy_tickets, healthy_matches, "{\"run\": {}, \"restarts\": []}", healthy_check},
         GF_INCOMPLETE,
         "not measured: summary.json names no run.low_pop_region"},
        {{no_merge_col, healthy_matches, healthy_summary, healthy_check},
         GF_INCOMPLETE,
         "not measured: tickets.tsv has no merge column"},
        {{NULL, healthy_matches, healthy_summary, healthy_check},
         GF_INCOMPLETE,
         "Wait p50, hybrid 5v5 not measured: tickets.tsv: the run has no such file"},
        /* a low-population run: the wait goals are for mid population, so a slow wait is
         * reported, not failed; what else fails still does */
        {{slow, healthy_matches,
          "{\"run\": {\"population\": \"low\", \"low_pop_region\": \"sa\"}, \"restarts\": []}",
          healthy_check},
         GF_UNHEALTHY,
         "goal missed: Delta ping p95"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_figure figs[GF_FIG__COUNT];
        gf_verdict v;
        judge(&cases[i].s, figs, &v);
        const gf_verdict_list *l = cases[i].level == GF_UNHEALTHY    ? &v.fails
                                   : cases[i].level == GF_INCOMPLETE ? &v.missing
                                                                     : &v.notes;
        if (v.level != cases[i].level || !has(l, cases[i].reason)) {
            dump(&v);
            fail_msg("case %zu: level %d (want %d), reason \"%s\"", i, v.level, cases[i].level,
                     cases[i].reason);
        }
    }
    /* the low-population run's wait figure is measured and marked not applicable */
    spec low = {slow, healthy_matches,
                "{\"run\": {\"population\": \"low\", \"low_pop_region\": \"sa\"}}", NULL};
    gf_figure figs[GF_FIG__COUNT];
    gf_verdict v;
    judge(&low, figs, &v);
    assert_int_equal(figs[GF_FIG_WAIT_P50].status, GF_GOAL_NOT_APPLICABLE);
    assert_false(has(&v.fails, "Wait p50"));
}

static void test_select(void **state)
{
    (void)state;
    spec s = {healthy_tickets, NULL, healthy_summary, NULL};
    gf_run *run = build(&s);
    const gf_tsv_table *t = run->tables[GF_RUN_TICKETS];
    unsigned char sel[16];
    static const char *const names[] = {"mode", "outcome"};
    const char *v1[] = {"hybrid", "assigned"};
    assert_int_equal(gf_quality_select(t, names, v1, 2, sel), 2);
    assert_true(sel[0] && sel[1] && !sel[2] && !sel[3]);
    const char *v2[] = {"nonesuch", NULL};
    assert_int_equal(gf_quality_select(t, names, v2, 2, sel), 0);
    const char *v3[] = {NULL, "cancelled"};
    assert_int_equal(gf_quality_select(t, names, v3, 2, sel), 1);
    static const char *const bad[] = {"wait_ms"}; /* not a KEY column */
    assert_int_equal(gf_quality_select(t, bad, v1, 1, sel), 0);
    gf_run_free(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_healthy),
        cmocka_unit_test(test_turns),
        cmocka_unit_test(test_select),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
