/* The gap tracker on simulated streams: in order, reordered, duplicated, with real
 * losses, late spool replays, the window rule, ticks, the hole bound, and a random
 * stream checked against what was really lost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/gap_tracker.h"

typedef struct seen {
    gf_gap_report r[4096];
    char ids[4096][72];
    size_t n;
} seen;

static void on_report(void *ctx, const gf_gap_report *r)
{
    seen *s = ctx;
    assert_true(s->n < 4096);
    s->r[s->n] = *r;
    snprintf(s->ids[s->n], sizeof s->ids[s->n], "%s", r->source_id);
    s->r[s->n].source_id = s->ids[s->n];
    s->n++;
}

/* A tracker reporting into s (emptied first). */
static gf_gap_tracker *tracker(seen *s, int64_t grace_ms, uint32_t window, uint32_t max_holes)
{
    s->n = 0;
    gf_gap_config cfg = {.grace_ms = grace_ms,
                         .window = window,
                         .max_holes = max_holes,
                         .report = on_report,
                         .ctx = s};
    gf_gap_tracker *t = NULL;
    assert_int_equal(gf_gap_alloc(&cfg, &t), GF_OK);
    return t;
}

static void feed(gf_gap_tracker *t, const char *src, uint64_t first, uint64_t last, int64_t *ms)
{
    for (uint64_t q = first; q <= last; q++)
        assert_int_equal(gf_gap_observe(t, src, q, (*ms)++), GF_OK);
}

static void check_report(const gf_gap_report *r, gf_gap_kind kind, const char *src, uint64_t first,
                         uint64_t last)
{
    assert_int_equal(r->kind, kind);
    assert_string_equal(r->source_id, src);
    assert_int_equal(r->first, first);
    assert_int_equal(r->last, last);
}

static void in_order_reordered_and_duplicates_are_not_gaps(void **state)
{
    static seen s;
    gf_gap_tracker *t = tracker(&s, 1000, 0, 0);
    int64_t ms = 1000000;
    feed(t, "a", 1, 100, &ms);
    feed(t, "b", 500, 600, &ms); /* first seen mid-stream: no alarm about 1..499 */
    static const uint64_t shuffled[] = {103, 101, 105, 102, 104, 101, 103, 50, 106};
    for (size_t i = 0; i < sizeof shuffled / sizeof shuffled[0]; i++)
        assert_int_equal(gf_gap_observe(t, "a", shuffled[i], ms++), GF_OK);
    assert_int_equal(gf_gap_observe(t, "b", 499, ms++), GF_OK); /* older than the start */
    gf_gap_tick(t, ms + 100000);
    gf_gap_stats st;
    gf_gap_stats_get(t, &st);
    assert_int_equal(s.n, 0);
    assert_int_equal(st.events, 100 + 101 + 9 + 1);
    assert_int_equal(st.old, 4); /* 101, 103, 50 again; b's 499 */
    assert_int_equal(st.sources, 2);
    assert_int_equal(st.open_holes + st.missing + st.suspected, 0);
    gf_gap_free(t);
}

static void loss_is_reported_once_and_closed_by_a_late_replay(void **state)
{
    static seen s;
    gf_gap_tracker *t = tracker(&s, 1000, 0, 0);
    int64_t ms = 1000000;
    feed(t, "a", 1, 49, &ms);
    feed(t, "a", 51, 99, &ms);
    feed(t, "a", 121, 1200, &ms); /* 100..120 lost too; the stream runs on */
    assert_int_equal(s.n, 2);
    check_report(&s.r[0], GF_GAP_SUSPECTED, "a", 50, 50);
    check_report(&s.r[1], GF_GAP_SUSPECTED, "a", 100, 120);
    assert_int_equal(s.r[1].opened_unix_ms, 1000000 + 49 + 49);
    assert_false(s.r[1].definite);
    gf_gap_stats st;
    gf_gap_stats_get(t, &st);
    assert_int_equal(st.missing, 22);
    assert_int_equal(st.suspected_seqs, 22);

    /* A spool replay, hours later: the middle first (splits), then the rest. */
    ms += 3600000;
    feed(t, "a", 110, 110, &ms);
    feed(t, "a", 100, 105, &ms);
    feed(t, "a", 50, 50, &ms);
    assert_int_equal(s.n, 3);
    check_report(&s.r[2], GF_GAP_CLOSED, "a", 50, 50);
    feed(t, "a", 111, 120, &ms);
    feed(t, "a", 106, 109, &ms);
    assert_int_equal(s.n, 4);
    check_report(&s.r[3], GF_GAP_CLOSED, "a", 100, 120); /* once, for the whole hole */
    gf_gap_stats_get(t, &st);
    assert_int_equal(st.open_holes, 0);
    assert_int_equal(st.closed, 2);
    gf_gap_free(t);
}

static void window_rule_reports_at_once(void **state)
{
    static seen s;
    gf_gap_tracker *t = tracker(&s, 3600000, 10, 0);
    int64_t ms = 5000;
    feed(t, "a", 1, 29, &ms);
    feed(t, "a", 31, 39, &ms); /* 39 - 30 < 10: still maybe late */
    assert_int_equal(s.n, 0);
    feed(t, "a", 40, 40, &ms); /* 40 - 30 >= 10: 30 was stored before 40 if at all */
    assert_int_equal(s.n, 1);
    check_report(&s.r[0], GF_GAP_SUSPECTED, "a", 30, 30);
    assert_true(s.r[0].definite);
    feed(t, "a", 41, 100, &ms);
    assert_int_equal(s.n, 1);
    gf_gap_free(t);
}

static void tick_reports_without_new_events(void **state)
{
    static seen s;
    gf_gap_tracker *t = tracker(&s, 1000, 0, 0);
    int64_t ms = 0;
    feed(t, "a", 1, 5, &ms);
    feed(t, "a", 8, 8, &ms); /* hole 6..7 opened at ms 5 */
    gf_gap_tick(t, 1004);
    assert_int_equal(s.n, 0);
    gf_gap_tick(t, 1005);
    assert_int_equal(s.n, 1);
    check_report(&s.r[0], GF_GAP_SUSPECTED, "a", 6, 7);
    assert_int_equal(s.r[0].at_unix_ms, 1005);
    gf_gap_tick(t, 900); /* the clock never goes back */
    gf_gap_tick(t, 99999);
    assert_int_equal(s.n, 1);
    gf_gap_free(t);
}

static void hole_bound_abandons_the_oldest(void **state)
{
    static seen s;
    gf_gap_tracker *t = tracker(&s, 1000000, 0, 3);
    int64_t ms = 0;
    for (uint64_t q = 1; q <= 11; q += 2) /* holes 2, 4, 6, 8, 10 */
        feed(t, "a", q, q, &ms);
    gf_gap_stats st;
    gf_gap_stats_get(t, &st);
    assert_int_equal(st.open_holes, 3);
    assert_int_equal(st.abandoned, 2);
    assert_int_equal(s.n, 2);
    check_report(&s.r[0], GF_GAP_SUSPECTED, "a", 2, 2);
    check_report(&s.r[1], GF_GAP_SUSPECTED, "a", 4, 4);
    feed(t, "a", 2, 2, &ms); /* abandoned: counted as old, no CLOSED */
    assert_int_equal(s.n, 2);
    gf_gap_stats_get(t, &st);
    assert_int_equal(st.old, 1);
    gf_gap_free(t);
}

static void bad_input_and_prune(void **state)
{
    gf_gap_tracker *t = NULL;
    gf_gap_config bad = {.grace_ms = -1};
    assert_int_equal(gf_gap_alloc(&bad, &t), GF_ERR_INVALID);
    bad = (gf_gap_config){.max_holes = 1048577};
    assert_int_equal(gf_gap_alloc(&bad, &t), GF_ERR_INVALID);
    static seen s;
    t = tracker(&s, 0, 0, 0);
    assert_int_equal(gf_gap_observe(t, "a", 0, 1), GF_ERR_INVALID);
    assert_int_equal(gf_gap_observe(t, "a.b", 1, 1), GF_ERR_INVALID);
    assert_int_equal(gf_gap_observe(t, "", 1, 1), GF_ERR_INVALID);
    assert_int_equal(gf_gap_observe(t, NULL, 1, 1), GF_ERR_INVALID);
    assert_int_equal(gf_gap_observe(t, "a", 1, 100), GF_OK);
    assert_int_equal(gf_gap_observe(t, "b", 1, 200), GF_OK);
    assert_int_equal(gf_gap_prune(t, 150), 1);
    gf_gap_stats st;
    gf_gap_stats_get(t, &st);
    assert_int_equal(st.sources, 1);
    gf_gap_free(t);
    gf_gap_free(NULL);
}

/* ---- random streams ---------------------------------------------------------- */

enum { RSRC = 4, RSEQ = 5000, REORDER = 40 };

typedef struct arrival {
    uint8_t src;
    uint64_t seq;
    uint64_t key; /* sort key: position + delay */
} arrival;

static int by_key(const void *a, const void *b)
{
    uint64_t x = ((const arrival *)a)->key, y = ((const arrival *)b)->key;
    return x < y ? -1 : x > y;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* fate: 0 delivered (maybe reordered, maybe twice), 1 lost, 2 late (after hours). */
static void random_stream(uint32_t window, uint64_t seed)
{
    static uint8_t fate[RSRC][RSEQ + 1];
    static arrival a[RSRC * RSEQ * 2];
    static seen s;
    uint64_t rng = seed;
    size_t n = 0;
    for (uint8_t i = 0; i < RSRC; i++)
        for (uint64_t q = 1; q <= RSEQ; q++) {
            uint64_t r = rnd(&rng) % 1000;
            fate[i][q] = q == 1 ? 0 : r < 5 ? 1 : r < 10 ? 2 : 0; /* seq 1 starts the source */
            if (fate[i][q] != 0)
                continue;
            uint64_t pos = (q * RSRC + i) * 4;
            a[n++] = (arrival){i, q, q == 1 ? i : pos + rnd(&rng) % (REORDER * 4)};
            if (r > 990)
                a[n++] = (arrival){i, q, pos + rnd(&rng) % 4000};
        }
    qsort(a, n, sizeof *a, by_key);
    gf_gap_tracker *t = tracker(&s, 10000, window, 0);
    int64_t ms = 0;
    char id[8];
    for (size_t j = 0; j < n; j++) {
        snprintf(id, sizeof id, "s%u", a[j].src);
        assert_int_equal(gf_gap_observe(t, id, a[j].seq, ms++), GF_OK);
    }
    ms += 3600000;
    gf_gap_tick(t, ms); /* everything still missing is overdue now */
    for (uint8_t i = 0; i < RSRC; i++)
        for (uint64_t q = 1; q <= RSEQ; q++)
            if (fate[i][q] == 2) {
                snprintf(id, sizeof id, "s%u", i);
                assert_int_equal(gf_gap_observe(t, id, q, ms++), GF_OK);
            }

    /* Suspected ranges are exactly the lost and late seqs below each source's last
     * seq; a closed range is one whose seqs all came late. */
    static uint8_t marked[RSRC][RSEQ + 1];
    memset(marked, 0, sizeof marked);
    for (size_t k = 0; k < s.n; k++) {
        unsigned i = (unsigned)(s.r[k].source_id[1] - '0');
        bool all_late = true;
        for (uint64_t q = s.r[k].first; q <= s.r[k].last; q++) {
            assert_int_not_equal(fate[i][q], 0);
            all_late = all_late && fate[i][q] == 2;
            if (s.r[k].kind == GF_GAP_SUSPECTED)
                marked[i][q]++;
        }
        assert_true(s.r[k].kind == GF_GAP_SUSPECTED || all_late);
    }
    for (uint8_t i = 0; i < RSRC; i++) {
        uint64_t last = RSEQ;
        while (fate[i][last] != 0)
            last--;
        for (uint64_t q = 1; q <= last; q++)
            assert_int_equal(marked[i][q], fate[i][q] != 0 ? 1 : 0);
    }
    gf_gap_stats st;
    gf_gap_stats_get(t, &st);
    size_t closed = 0;
    for (size_t k = 0; k < s.n; k++)
        closed += s.r[k].kind == GF_GAP_CLOSED;
    assert_int_equal(st.closed, closed);
    assert_int_equal(st.suspected, s.n - closed);
    assert_true(closed > 0 && st.suspected > closed);
    gf_gap_free(t);
}

static void random_streams_against_the_truth(void **state)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        random_stream(0, seed * 7919);
        random_stream(64, seed * 104729);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(in_order_reordered_and_duplicates_are_not_gaps),
        cmocka_unit_test(loss_is_reported_once_and_closed_by_a_late_replay),
        cmocka_unit_test(window_rule_reports_at_once),
        cmocka_unit_test(tick_reports_without_new_events),
        cmocka_unit_test(hole_bound_abandons_the_oldest),
        cmocka_unit_test(bad_input_and_prune),
        cmocka_unit_test(random_streams_against_the_truth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
