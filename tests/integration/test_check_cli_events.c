/*
 * test_check_cli_events.c — `gamefn check` on the event side against a real nats-server:
 * events in EVENTS (with the producer's headers), dead letters in DLQ, a producers' log,
 * and a stand-in leaderboard answering gamefn.v1.leaderboard.query from a table. A
 * clean log and board give zeros; an acknowledged event missing from EVENTS, an event
 * applied twice and an event never applied are each found; a stream without the
 * matchmaking audit reports those counts "not checked" with the reason.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check_fixture.h"
#include "cli_support.h"
#include "gamefn/clock.h"
#include "gamefn/v1/dlq.pb-c.h"
#include "gamefn/v1/event.pb-c.h"
#include "gamefn/v1/leaderboard.pb-c.h"

/* The stand-in leaderboard: board "global", players and scores (rank order). */
typedef struct board {
    pthread_mutex_t mu;
    const char *players[8];
    int64_t scores[8];
    size_t n;
    int queries;
} board;

static void on_query(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    board *b = closure;
    Gamefn__V1__LeaderboardQueryRequest *q = gamefn__v1__leaderboard_query_request__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    Gamefn__V1__LeaderboardQueryReply r = GAMEFN__V1__LEADERBOARD_QUERY_REPLY__INIT;
    Gamefn__V1__LeaderboardEntry e[8], *ep[8];
    pthread_mutex_lock(&b->mu);
    b->queries++;
    if (q && q->page && strcmp(q->board, "global") == 0) {
        for (size_t i = q->page->start_rank - 1; i < b->n && r.n_entries < q->page->limit; i++) {
            e[r.n_entries] = (Gamefn__V1__LeaderboardEntry)GAMEFN__V1__LEADERBOARD_ENTRY__INIT;
            e[r.n_entries].rank = i + 1;
            e[r.n_entries].player_id = (char *)(uintptr_t)b->players[i];
            e[r.n_entries].score = b->scores[i];
            ep[r.n_entries] = &e[r.n_entries];
            r.n_entries++;
        }
        r.entries = ep;
        r.board = q->board;
        r.total_players = b->n;
    }
    uint8_t buf[2048];
    size_t len = gamefn__v1__leaderboard_query_reply__pack(&r, buf);
    pthread_mutex_unlock(&b->mu);
    natsConnection_Publish(nc, natsMsg_GetReply(m), buf, (int)len);
    if (q)
        gamefn__v1__leaderboard_query_request__free_unpacked(q, NULL);
    natsMsg_Destroy(m);
}

static uint64_t publish_event(gf_fnenv *e, const char *source, uint64_t seq, const char *player,
                              int64_t delta, const char *msg_id)
{
    char id[96], seqtext[24], subject[160];
    uint8_t buf[512];
    snprintf(id, sizeof id, "%s-%llu", source, (unsigned long long)seq);
    snprintf(seqtext, sizeof seqtext, "%llu", (unsigned long long)seq);
    size_t len =
        fx_event_pack(source, seq, player, delta ? "" : NULL, delta, buf, subject, sizeof subject);
    natsMsg *m = NULL;
    assert_int_equal(natsMsg_Create(&m, subject, NULL, (const char *)buf, (int)len), NATS_OK);
    natsMsgHeader_Set(m, "Gamefn-Source", source);
    natsMsgHeader_Set(m, "Gamefn-Source-Seq", seqtext);
    natsMsgHeader_Set(m, "Nats-Msg-Id", msg_id ? msg_id : id);
    jsPubAck *ack = NULL;
    assert_int_equal(js_PublishMsg(&ack, e->js, m, NULL, NULL), NATS_OK);
    uint64_t stream_seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(m);
    return stream_seq;
}

static void dead_letter(gf_fnenv *e, uint64_t stream_seq)
{
    Gamefn__V1__DeadLetter d = GAMEFN__V1__DEAD_LETTER__INIT;
    d.stream = "EVENTS";
    d.consumer = "leaderboard-p07";
    d.stream_seq = stream_seq;
    d.reason = GAMEFN__V1__DEAD_LETTER_REASON__DEAD_LETTER_REASON_TERMINATED;
    uint8_t buf[256];
    size_t len = gamefn__v1__dead_letter__pack(&d, buf);
    assert_int_equal(
        js_Publish(NULL, e->js, "gamefn.v1.dlq.EVENTS.leaderboard-p07", buf, (int)len, NULL, NULL),
        NATS_OK);
}

static void write_log(gf_fnenv *e, const char *text, char *path, size_t size)
{
    snprintf(path, size, "%s/events.log", e->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static json_t *check(gf_fnenv *e, const char *log, int want)
{
    char out[400];
    snprintf(out, sizeof out, "%s/check.json", e->dir);
    cli_result r = cli_run(e, NULL, "check", "--events-log", log, "--json", "--out", out,
                           "--settle", "1s", NULL);
    if (r.code != want)
        fail_msg("check exited %d, not %d:\n%s", r.code, want, r.out);
    json_t *j = cli_json(&r); /* --json prints only JSON on stdout; nothing on stderr */
    cli_result_free(&r);
    json_t *written = json_load_file(out, 0, NULL);
    assert_non_null(written);
    assert_int_equal(json_integer_value(json_object_get(written, "broken")),
                     json_integer_value(json_object_get(j, "broken")));
    json_decref(written);
    return j;
}

static const char *why_not_checked(json_t *j, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(j, "not_checked"), i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, "name")), name) == 0)
            return json_string_value(json_object_get(x, "why"));
    }
    return NULL;
}

static void events_lost_and_applied_twice(void **state)
{
    (void)state;
    gf_fnenv e;
    assert_int_equal(gf_fnenv_start(&e, NULL), 0);
    assert_int_equal(gf_fnenv_add_stream(e.js, "EVENTS", "gamefn.v1.evp.>"), NATS_OK);
    assert_int_equal(gf_fnenv_add_stream(e.js, "DLQ", "gamefn.v1.dlq.>"), NATS_OK);
    /* s1: five +10 for p1, then five zone changes; s2: three +5 for p2; s3: p3's +7 was
     * dead-lettered by the leaderboard (not expected on the board). */
    for (uint64_t q = 1; q <= 10; q++)
        publish_event(&e, "s1", q, "p1", q <= 5 ? 10 : 0, NULL);
    for (uint64_t q = 1; q <= 3; q++)
        publish_event(&e, "s2", q, "p2", 5, NULL);
    publish_event(&e, "s1", 3, "p1", 10, "s1-3-replayed"); /* stored again: counts once */
    dead_letter(&e, publish_event(&e, "s3", 1, "p3", 7, NULL));

    board b = {
        .mu = PTHREAD_MUTEX_INITIALIZER, .players = {"p1", "p2"}, .scores = {50, 15}, .n = 2};
    natsSubscription *sub = NULL;
    assert_int_equal(
        natsConnection_Subscribe(&sub, e.nc, "gamefn.v1.leaderboard.query", on_query, &b), NATS_OK);
    assert_int_equal(natsConnection_Flush(e.nc), NATS_OK);

    char log[400];
    write_log(&e, "# the simulator's log\ngamefn-events-log 1\nack s1 1-10\nack s2 1-3\nack s3 1\n",
              log, sizeof log);
    json_t *j = check(&e, log, 0);
    assert_int_equal(cli_check_count(j, "events_lost"), 0);
    assert_int_equal(cli_check_count(j, "events_double_applied"), 0);
    assert_int_equal(cli_check_count(j, "events_undelivered"), 0);
    json_t *tot = json_object_get(j, "totals");
    assert_int_equal(json_integer_value(json_object_get(tot, "events")), 15);
    assert_int_equal(json_integer_value(json_object_get(tot, "event_sources")), 3);
    assert_int_equal(json_integer_value(json_object_get(tot, "boards")), 1);
    assert_int_equal(json_integer_value(json_object_get(tot, "dead_letters")), 1);
    /* No audit mirrors here: the matchmaking counts say why they were not checked. */
    const char *why = why_not_checked(j, "double_claims");
    assert_non_null(why);
    assert_non_null(strstr(why, "AUDIT_TICKETS does not exist"));
    json_decref(j);

    /* An acknowledged event the stream does not hold, one emitted and never delivered,
     * p2's +5 applied twice, p1's last +10 never applied. */
    write_log(&e, "gamefn-events-log 1\nack s1 1-11\nack s2 1-3\nemit s2 1-4\nack s3 1\n", log,
              sizeof log);
    pthread_mutex_lock(&b.mu);
    b.scores[0] = 40;
    b.scores[1] = 20;
    pthread_mutex_unlock(&b.mu);
    j = check(&e, log, 1);
    assert_int_equal(cli_check_count(j, "events_lost"), 2); /* s1 11, p1's +10 */
    assert_int_equal(cli_check_count(j, "events_double_applied"), 1);
    assert_int_equal(cli_check_count(j, "events_undelivered"), 1);
    json_decref(j);

    /* The leaderboard gone: scores are not compared, the log still is. */
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    j = check(&e, log, 1);
    assert_int_equal(cli_check_count(j, "events_lost"), 1);
    why = why_not_checked(j, "events_double_applied");
    assert_non_null(why);
    assert_non_null(strstr(json_string_value(json_object_get(j, "notes")), "no leaderboard"));
    json_decref(j);
    gf_fnenv_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(events_lost_and_applied_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
