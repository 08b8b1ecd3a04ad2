/*
 * test_check_events.c — the checker's event side: the producers' log format (good,
 * boundary and malformed lines), events acknowledged but not stored, emitted but never
 * delivered, dropped, and boards' scores against the scores recomputed from the stream
 * (applied twice, missing, effects without events; incr, best and set boards; scores of
 * players from before --since not judged).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check_fixture.h"
#include "gamefn/v1/dlq.pb-c.h"
#include "gamefn/v1/event.pb-c.h"

static uint64_t stream_seq;

static gf_check *fresh(void)
{
    gf_check_params p;
    gf_check_params_default(&p);
    p.now_ms = T0;
    p.max_examples = 10;
    gf_check *c = NULL;
    assert_int_equal(gf_check_new(&p, &c), GF_OK);
    stream_seq = 0;
    return c;
}

static void log_ok(gf_check *c, const char *text)
{
    char why[200] = "";
    gf_err err = gf_check_events_log(c, text, strlen(text), why, sizeof why);
    if (err != GF_OK)
        fail_msg("log refused: %s", why);
}

/* One event of `source` seq `seq`; a score event of `delta` on `board` for `player` when
 * board is not NULL. with_headers: the producer's headers, else only the payload says. */
static void event(gf_check *c, const char *source, uint64_t seq, const char *player,
                  const char *board, int64_t delta, bool with_headers)
{
    char seqtext[24], subject[160];
    uint8_t buf[512];
    snprintf(seqtext, sizeof seqtext, "%llu", (unsigned long long)seq);
    size_t len = fx_event_pack(source, seq, player, board, delta, buf, subject, sizeof subject);
    gf_check_event_msg m = {++stream_seq,
                            T0 * 1000000,
                            subject,
                            with_headers ? source : NULL,
                            with_headers ? seqtext : NULL,
                            buf,
                            len};
    assert_int_equal(gf_check_event(c, &m), GF_OK);
}

static const gf_check_count *finish(gf_check *c, const char *name)
{
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    return gf_check_report_find(r, name);
}

static void test_log_format(void **state)
{
    static const struct {
        const char *text;
        const char *why; /* NULL: accepted */
    } rows[] = {
        {"gamefn-events-log 1\n", NULL},
        {"# a comment\n\ngamefn-events-log 1\r\nack s1 1-10\r\n\temit\ts1\t11 \n", NULL},
        {"gamefn-events-log 1\ndrop s_1-x 9223372036854775807", NULL},
        {"", "line 1: expected the header"},
        {"ack s1 1\n", "line 1: expected the header"},
        {"gamefn-events-log 2\n", "line 1: unknown format"},
        {"gamefn-events-log 1\nack s1\n", "line 2: expected"},
        {"gamefn-events-log 1\nack s1 1 2\n", "line 2: expected"},
        {"gamefn-events-log 1\nsent s1 1\n", "line 2: the first field"},
        {"gamefn-events-log 1\nack s.1 1\n", "line 2: the source id"},
        {"gamefn-events-log 1\nack s1 0\n", "line 2: the sequence"},
        {"gamefn-events-log 1\nack s1 -3\n", "line 2: the sequence"},
        {"gamefn-events-log 1\nack s1 9223372036854775808\n", "line 2: the sequence"},
        {"gamefn-events-log 1\nack s1 5-3\n", "line 2: a range's last"},
        {"gamefn-events-log 1\nack s1 5-\n", "line 2: the range's last"},
        {"gamefn-events-log 1\nack s1 5x\n", "line 2: the sequence must be"},
        {"gamefn-events-log 1\n\n# c\nack s1 1\nack s2 1-2-3\n", "line 5: the sequence must"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        gf_check *c = fresh();
        char why[200] = "";
        gf_err err = gf_check_events_log(c, rows[i].text, strlen(rows[i].text), why, sizeof why);
        if (!rows[i].why) {
            assert_int_equal(err, GF_OK);
        } else {
            assert_int_equal(err, GF_ERR_INVALID);
            if (!strstr(why, rows[i].why))
                fail_msg("row %zu: '%s' does not say '%s'", i, why, rows[i].why);
        }
        gf_check_free(c);
    }
    /* A NUL byte and an overlong line. */
    gf_check *c = fresh();
    char why[200];
    static const char nul[] = "gamefn-events-log 1\nack s1\0 1\n";
    assert_int_equal(gf_check_events_log(c, nul, sizeof nul - 1, why, sizeof why), GF_ERR_INVALID);
    assert_non_null(strstr(why, "line 2: a NUL"));
    char big[5000 + 32];
    int n = snprintf(big, sizeof big, "gamefn-events-log 1\n# %4990d\n", 1);
    assert_int_equal(gf_check_events_log(c, big, (size_t)n, why, sizeof why), GF_ERR_INVALID);
    assert_non_null(strstr(why, "line 2: line longer"));
    gf_check_free(c);
}

static void test_clean_log(void **state)
{
    gf_check *c = fresh();
    log_ok(c, "gamefn-events-log 1\nack s1 1-5\nack s2 1-3\nemit s1 1-5\nack s2 2\n");
    for (uint64_t s = 1; s <= 5; s++)
        event(c, "s1", s, "p1", NULL, 0, true);
    for (uint64_t s = 1; s <= 3; s++)
        event(c, "s2", s, "p2", NULL, 0, s != 2); /* seq 2 known from its payload only */
    event(c, "s1", 3, "p1", NULL, 0, true);       /* stored twice: allowed */
    const gf_check_count *n = finish(c, "events_lost");
    assert_true(n->checked);
    assert_int_equal(n->count, 0);
    assert_non_null(strstr(n->detail, "1 events stored twice"));
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    assert_int_equal(gf_check_report_broken(r), 0);
    assert_int_equal(r->totals.events, 9);
    assert_int_equal(r->totals.event_sources, 2);
    assert_int_equal(r->totals.events_logged, 8);
    gf_check_free(c);
}

static void test_lost_undelivered_dropped(void **state)
{
    gf_check *c = fresh();
    log_ok(c, "gamefn-events-log 1\nack s1 1-10\nemit s1 1-14\ndrop s1 13-14\nack s9 7\n");
    for (uint64_t s = 1; s <= 11; s++) {
        if (s != 4 && s != 7 && s != 8)
            event(c, "s1", s, "p1", NULL, 0, true);
    }
    const gf_check_count *lost = finish(c, "events_lost");
    assert_int_equal(lost->count, 4); /* s1 4, 7-8; s9 7 */
    assert_int_equal(lost->examples_len, 3);
    assert_non_null(strstr(lost->examples[0], "source s1: seq 4 acknowledged"));
    assert_non_null(strstr(lost->examples[1], "source s1: seq 7-8 acknowledged"));
    assert_non_null(strstr(lost->examples[2], "source s9: seq 7"));
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    const gf_check_count *u = gf_check_report_find(r, "events_undelivered");
    assert_int_equal(u->count, 1); /* 12: emitted, not acknowledged, not stored, not dropped */
    assert_non_null(strstr(u->examples[0], "seq 12 "));
    assert_int_equal(gf_check_report_find(r, "events_dropped")->count, 2);
    gf_check_free(c);
}

static void score_board(gf_check *c, const char *board, const char *player, int64_t score)
{
    assert_int_equal(gf_check_board_score(c, board, player, score), GF_OK);
}

static void test_incr_board(void **state)
{
    gf_check *c = fresh();
    assert_int_equal(gf_check_board(c, "global", GF_CHECK_BOARD_INCR, false), GF_OK);
    /* p1: three equal deltas, stored as four: one applied twice. */
    for (uint64_t s = 1; s <= 3; s++)
        event(c, "s1", s, "p1", "", 10, true);
    score_board(c, "global", "p1", 40);
    /* p2: +5 and +7, stored 5: the +7 missing. */
    event(c, "s1", 4, "p2", "global", 5, true);
    event(c, "s2", 1, "p2", "global", 7, true);
    score_board(c, "global", "p2", 5);
    /* p3: a score with no event; p4: events and no score. */
    score_board(c, "global", "p3", 100);
    event(c, "s2", 2, "p4", "global", 3, true);
    event(c, "s2", 3, "p4", "global", 4, true);
    /* p5: one event stored twice (a spool replay) counts once. */
    event(c, "s3", 1, "p5", "global", 10, true);
    event(c, "s3", 1, "p5", "global", 10, true);
    score_board(c, "global", "p5", 10);
    /* p6: a dead-lettered event is not expected. */
    event(c, "s3", 2, "p6", "global", 4, true);
    event(c, "s3", 3, "p6", "global", 6, true);
    score_board(c, "global", "p6", 6);
    Gamefn__V1__DeadLetter d = GAMEFN__V1__DEAD_LETTER__INIT;
    d.stream = "EVENTS";
    d.consumer = "leaderboard-p03";
    d.stream_seq = stream_seq - 1;
    uint8_t buf[128];
    assert_int_equal(gf_check_dead_letter(c, buf, gamefn__v1__dead_letter__pack(&d, buf)), GF_OK);
    /* Another board, not declared: not compared. */
    event(c, "s4", 1, "p1", "weekly", 10, true);
    score_board(c, "weekly", "p1", 999);

    const gf_check_count *twice = finish(c, "events_double_applied");
    assert_true(twice->checked);
    assert_int_equal(twice->count, 2); /* p1 (one event), p3 */
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    const gf_check_count *lost = gf_check_report_find(r, "events_lost");
    assert_int_equal(lost->count, 3); /* p2 (one), p4 (two) */
    assert_non_null(strstr(twice->examples[0], "player p1: stored 40, recomputed 30"));
    assert_int_equal(r->totals.boards, 1);
    gf_check_free(c);
}

/* With --since, a stored score whose events are all older (not read) is not judged. */
static void test_scores_before_since(void **state)
{
    (void)state;
    gf_check_params p;
    gf_check_params_default(&p);
    p.now_ms = T0;
    p.since_ms = T0 - 60000;
    gf_check *c = NULL;
    assert_int_equal(gf_check_new(&p, &c), GF_OK);
    stream_seq = 0;
    assert_int_equal(gf_check_board(c, "global", GF_CHECK_BOARD_INCR, false), GF_OK);
    event(c, "s1", 1, "p1", "", 10, true);
    score_board(c, "global", "p1", 20);   /* one event applied twice: still found */
    score_board(c, "global", "old", 500); /* a player of before --since */
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    assert_int_equal(gf_check_report_find(r, "events_double_applied")->count, 1);
    assert_int_equal(gf_check_report_find(r, "events_lost")->count, 0);
    assert_int_equal(r->totals.scores_before_since, 1);
    gf_check_free(c);
}

static void test_best_and_set_boards(void **state)
{
    gf_check *c = fresh();
    assert_int_equal(gf_check_board(c, "best", GF_CHECK_BOARD_BEST, false), GF_OK);
    assert_int_equal(gf_check_board(c, "fast", GF_CHECK_BOARD_BEST, true), GF_OK);
    assert_int_equal(gf_check_board(c, "last", GF_CHECK_BOARD_SET, false), GF_OK);
    uint64_t s = 0;
    const char *players[] = {"a", "b", "c"};
    for (size_t p = 0; p < 3; p++) {
        int64_t values[] = {5, 9, 7};
        for (size_t i = 0; i < 3; i++) {
            event(c, "s1", ++s, players[p], "best", values[i], true);
            event(c, "s1", ++s, players[p], "fast", values[i], true);
            event(c, "s1", ++s, players[p], "last", values[i], true);
        }
    }
    score_board(c, "best", "a", 9);  /* right */
    score_board(c, "best", "b", 11); /* better than any value: an effect without its event */
    score_board(c, "best", "c", 7);  /* worse: the 9 missing */
    score_board(c, "fast", "a", 5);
    score_board(c, "fast", "b", 5);
    score_board(c, "fast", "c", 9); /* the 5 missing */
    score_board(c, "last", "a", 7);
    score_board(c, "last", "b", 9); /* an older value: the last event missing */
    score_board(c, "last", "c", 8); /* a value no event carries */
    const gf_check_count *twice = finish(c, "events_double_applied");
    assert_int_equal(twice->count, 2);
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    assert_int_equal(gf_check_report_find(r, "events_lost")->count, 3);
    assert_false(gf_check_report_find(r, "events_undelivered")->checked);
    gf_check_free(c);
}

static void test_bad_events(void **state)
{
    gf_check *c = fresh();
    static const uint8_t junk[] = {0xff, 0xff, 0xff};
    gf_check_event_msg m = {1, 0, "gamefn.v1.evp.1.p.score", "s1", "1", junk, sizeof junk};
    assert_int_equal(gf_check_event(c, &m), GF_OK); /* a score event must decode */
    gf_check_event_msg h = {2, 0, "gamefn.v1.evp.1.p.kill", NULL, NULL, junk, sizeof junk};
    assert_int_equal(gf_check_event(c, &h), GF_OK); /* no headers: its payload must say */
    gf_check_event_msg k = {3, 0, "gamefn.v1.evp.1.p.kill", "s1", "2", junk, sizeof junk};
    assert_int_equal(gf_check_event(c, &k), GF_OK); /* headers suffice */
    assert_int_equal(gf_check_dead_letter(c, junk, sizeof junk), GF_OK);
    /* Undecodable events are the consumers' to dead-letter, not a broken invariant; an
     * undecodable dead letter is. */
    const gf_check_count *bad = finish(c, "bad_records");
    assert_int_equal(bad->count, 1);
    const gf_check_report *r = NULL;
    assert_int_equal(gf_check_finish(c, &r), GF_OK);
    assert_int_equal(r->totals.events_malformed, 2);
    assert_int_equal(r->totals.events, 1);
    gf_check_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_format),
        cmocka_unit_test(test_clean_log),
        cmocka_unit_test(test_lost_undelivered_dropped),
        cmocka_unit_test(test_incr_board),
        cmocka_unit_test(test_scores_before_since),
        cmocka_unit_test(test_best_and_set_boards),
        cmocka_unit_test(test_bad_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
