/*
 * test_intake_crash.c — intake SIGKILLed in the middle of a create, against a real
 * nats-server. An intake started with GAMEFN_TEST_INTAKE_PAUSE=<step> (intake.h) takes
 * the create and stops at the step; the client's request times out (no reply ever
 * comes); the test kills it and starts a normal intake. Then, from the replies and the
 * tickets and players buckets:
 *  - killed at `players` (the record written, no ticket): the retry with the same key
 *    makes the one ticket, on the record already there (renewed); another key for the
 *    player is CONFLICT with retry_after_ms and changes nothing until pending_grace has
 *    passed, then gets a new ticket and the record; a retry renews the record, so
 *    another key is CONFLICT for pending_grace from the retry, not from the first try;
 *  - killed at `ticket` (written, not answered): the retry is a replay of it, same id
 *    and revision, and writes nothing;
 *  - a party of 3 killed after its first member's record (`holding`): the retry
 *    completes it, also after pending_grace; a party whose retry finds a member in
 *    another live ticket removes its first member's record;
 *  - afterwards `gamefn check` finds no invariant broken.
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

#include "cli_support.h"
#include "gamefn/clock.h"
#include "gamefn/tickets/players.h"
#include "gamefn/tickets/record.h"
#include "gamefn/tickets/request.h"
#include "gamefn/v1/error.pb-c.h"
#include "mm_support.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define E(x)  GAMEFN__V1__ERROR_CODE__ERROR_CODE_##x

/* pending_grace of this config (short, so the waits are, yet long enough for a SIGKILL
 * and a new intake's start to fit inside it: 3 s did not, under ASan on a loaded CI
 * machine, where the record was 2.8–4.3 s old by the first create), and the client's
 * request timeout: what the client waits for the create that is never answered. */
enum { GRACE_MS = 6000, CLIENT_TIMEOUT_MS = 1000 };

typedef struct fixture {
    gf_fnenv env;
    gf_proc victim, intake; /* the paused intake; the normal one started after it */
    kvStore *tickets, *players;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    *state = f;
    const mm_env_opts o = {.intake = "    pending_grace: 6s\n",
                           .queues = "        - {name: trio, mode: hybrid, shape: 3v3}\n"};
    assert_int_equal(mm_env_start_opts(&f->env, &o), 0);
    cli_result r = cli_run(&f->env, NULL, "provision", NULL);
    cli_expect(&r, 0, NULL);
    assert_int_equal(js_KeyValue(&f->tickets, f->env.js, "tickets"), NATS_OK);
    assert_int_equal(js_KeyValue(&f->players, f->env.js, "players"), NATS_OK);
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kvStore_Destroy(f->tickets);
    kvStore_Destroy(f->players);
    gf_fnenv_free(&f->env);
    free(f);
    return 0;
}

/* After each test: the victim is gone (killed, or cleaned up after a failure) and the
 * normal intake stops cleanly, so the next test's victim is alone in the queue group. */
static int stop_intakes(void **state)
{
    fixture *f = *state;
    gf_proc_cleanup(&f->victim);
    bool clean = f->intake.pid == 0 || gf_fnenv_stop(&f->intake, 15000);
    memset(&f->victim, 0, sizeof f->victim);
    memset(&f->intake, 0, sizeof f->intake);
    return clean ? 0 : -1;
}

static void ticket_id(const char *key, char id[GF_TICKETS_ID_LEN + 1])
{
    assert_int_equal(gf_tickets_id(key, id), GF_OK);
}

/* The ticket players/<player> names ("" when there is no record) and its creation time. */
static void player_record(fixture *f, const char *player, char *id, size_t size, int64_t *created)
{
    kvEntry *e = NULL;
    id[0] = '\0';
    natsStatus s = kvStore_Get(&e, f->players, player);
    if (s == NATS_NOT_FOUND)
        return;
    assert_int_equal(s, NATS_OK);
    Gamefn__V1__PlayerMatchRecord *pr = NULL;
    assert_int_equal(gf_players_decode((const uint8_t *)kvEntry_Value(e),
                                       (size_t)kvEntry_ValueLen(e), player, &pr, NULL),
                     GF_OK);
    snprintf(id, size, "%s", pr->ticket_id);
    if (created)
        *created = pr->created_unix_ms;
    gf_players_free(pr);
    kvEntry_Destroy(e);
}

static void expect_record(fixture *f, const char *player, const char *want_id)
{
    char id[80];
    player_record(f, player, id, sizeof id, NULL);
    assert_string_equal(id, want_id);
}

/* tickets/<id> decoded (gf_ticket_free), with its revision; NULL when absent. */
static Gamefn__V1__TicketRecord *ticket_record(fixture *f, const char *id, uint64_t *rev)
{
    kvEntry *e = NULL;
    natsStatus s = kvStore_Get(&e, f->tickets, id);
    if (s == NATS_NOT_FOUND)
        return NULL;
    assert_int_equal(s, NATS_OK);
    Gamefn__V1__TicketRecord *rec = NULL;
    assert_int_equal(gf_ticket_decode((const uint8_t *)kvEntry_Value(e),
                                      (size_t)kvEntry_ValueLen(e), id, &rec, NULL),
                     GF_OK);
    if (rev)
        *rev = kvEntry_Revision(e);
    kvEntry_Destroy(e);
    return rec;
}

/* The tickets in the bucket that list `player`, whatever their state. */
static int tickets_listing(fixture *f, const char *player)
{
    kvKeysList keys = {0};
    natsStatus s = kvStore_Keys(&keys, f->tickets, NULL);
    if (s == NATS_NOT_FOUND)
        return 0;
    assert_int_equal(s, NATS_OK);
    int n = 0;
    for (int k = 0; k < keys.Count; k++) {
        Gamefn__V1__TicketRecord *rec = ticket_record(f, keys.Keys[k], NULL);
        for (size_t i = 0; rec && i < rec->n_members; i++)
            n += strcmp(rec->members[i]->player_id, player) == 0;
        gf_ticket_free(rec);
    }
    kvKeysList_Destroy(&keys);
    return n;
}

/* The one ticket of `player`: tickets/<id> QUEUED at `rev` (0: any), listing the player,
 * players/<player> naming it, and no other ticket listing the player. */
static void expect_queued(fixture *f, const char *player, const char *id, uint64_t rev)
{
    uint64_t got = 0;
    Gamefn__V1__TicketRecord *rec = ticket_record(f, id, &got);
    assert_non_null(rec);
    assert_int_equal(rec->state, ST(QUEUED));
    if (rev)
        assert_int_equal(got, rev);
    gf_ticket_free(rec);
    expect_record(f, player, id);
    assert_int_equal(tickets_listing(f, player), 1);
}

/* Starts an intake that pauses at `step` and sends it `t`, which times out: the intake
 * is held there (f->victim). `id`: the ticket id of t's key. */
static void hold_at(fixture *f, const char *step, const mm_ticket *t,
                    char id[GF_TICKETS_ID_LEN + 1])
{
    char env_pause[64], inst[48], want[96];
    snprintf(env_pause, sizeof env_pause, "GAMEFN_TEST_INTAKE_PAUSE=%s", step);
    snprintf(inst, sizeof inst, "victim-%s-%s", step, t->key);
    char *extra[] = {env_pause, NULL};
    assert_int_equal(gf_fnenv_spawn_ready(&f->env, &f->victim, "functions/intake/gamefn-intake",
                                          "intake", inst, extra),
                     0);
    Gamefn__V1__CreateTicketReply *r = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, t, CLIENT_TIMEOUT_MS, &r, &e), -1); /* no reply */
    ticket_id(t->key, id);
    snprintf(want, sizeof want, "step=%s ticket=%s", step, id);
    if (!gf_fnenv_wait_log(&f->victim, want, 15000)) {
        gf_proc_dump_log(&f->victim, 30);
        fail_msg("intake never reached step %s", step);
    }
}

/* SIGKILLs the held intake and starts a normal one. */
static void kill_held(fixture *f)
{
    assert_int_equal(gf_proc_signal(&f->victim, SIGKILL), 0);
    assert_int_equal(gf_proc_wait(&f->victim, 5000), 0);
    assert_true(mm_spawn(&f->env, &f->intake, "intake", "rescuer"));
}

/* hold_at, then kill_held: the create of `t` killed at `step`. */
static void kill_at(fixture *f, const char *step, const mm_ticket *t,
                    char id[GF_TICKETS_ID_LEN + 1])
{
    hold_at(f, step, t, id);
    kill_held(f);
}

/* One create of `t` for a player whose record (created at `created`) names a ticket that
 * does not exist: CONFLICT naming the member, retry_after_ms, nothing written. */
static void expect_pending(fixture *f, const mm_ticket *t, int64_t created)
{
    uint64_t t0 = mm_bucket_seq(&f->env, "tickets"), p0 = mm_bucket_seq(&f->env, "players");
    int64_t sent = gf_clock_unix_ms();
    if (sent >= created + GRACE_MS - 200)
        fail_msg("the record is already %lld ms old: the machine is too slow for this test",
                 (long long)(sent - created));
    Gamefn__V1__CreateTicketReply *r = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, t, 5000, &r, &e), E(CONFLICT));
    fprintf(stderr, "%s: CONFLICT with the record %lld ms old (pending_grace %d ms)\n", t->key,
            (long long)(sent - created), GRACE_MS);
    assert_string_equal(e.field, "members[0].player_id");
    assert_int_equal(e.retry_after_ms, 250);
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), t0);
    assert_int_equal(mm_bucket_seq(&f->env, "players"), p0);
}

/* Sends `t` as a client does, again after each CONFLICT's retry_after_ms, until it is
 * created: not before the record (created at `created`) is pending_grace old. Returns the
 * reply (the caller frees it). */
static Gamefn__V1__CreateTicketReply *create_after_grace(fixture *f, const mm_ticket *t,
                                                         int64_t created)
{
    Gamefn__V1__CreateTicketReply *r = NULL;
    gf_wire_error e;
    int code = E(CONFLICT);
    uint64_t t0 = mm_bucket_seq(&f->env, "tickets"), p0 = mm_bucket_seq(&f->env, "players");
    while (code == E(CONFLICT) && gf_clock_unix_ms() < created + GRACE_MS + 10000) {
        code = mm_create_err(&f->env, t, 5000, &r, &e);
        if (code != E(CONFLICT))
            break;
        assert_int_equal(mm_bucket_seq(&f->env, "tickets"), t0); /* a CONFLICT writes nothing */
        assert_int_equal(mm_bucket_seq(&f->env, "players"), p0);
        gf_clock_sleep_ms((int64_t)e.retry_after_ms);
    }
    assert_int_equal(code, 0);
    assert_true(gf_clock_unix_ms() >= created + GRACE_MS);
    assert_false(r->replayed);
    assert_int_equal(r->status->state, ST(QUEUED));
    return r;
}

/* Killed with the record written and no ticket: the same request again makes the ticket
 * on that record (renewed: one players write), and once more is a replay. */
static void killed_at_players_retry_converges(void **state)
{
    fixture *f = *state;
    char id[GF_TICKETS_ID_LEN + 1];
    mm_ticket t = mm_solo("k-players", "amy");
    kill_at(f, "players", &t, id);
    expect_record(f, "amy", id);
    assert_null(ticket_record(f, id, NULL));

    uint64_t t0 = mm_bucket_seq(&f->env, "tickets"), p0 = mm_bucket_seq(&f->env, "players");
    Gamefn__V1__CreateTicketReply *r = NULL, *again = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, &t, 5000, &r, &e), 0);
    assert_string_equal(r->ticket_id, id);
    assert_false(r->replayed);
    assert_int_equal(r->status->state, ST(QUEUED));
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), t0 + 1);
    assert_int_equal(mm_bucket_seq(&f->env, "players"), p0 + 1);
    expect_queued(f, "amy", id, r->status->revision);

    assert_int_equal(mm_create_err(&f->env, &t, 5000, &again, &e), 0);
    assert_string_equal(again->ticket_id, id);
    assert_true(again->replayed);
    assert_int_equal(again->status->revision, r->status->revision);
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), t0 + 1);
    assert_int_equal(mm_state(&f->env, id), ST(QUEUED));
    gamefn__v1__create_ticket_reply__free_unpacked(again, NULL);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

/* Killed with the record written and no ticket, and the client gives up on its key: a
 * create under another key is CONFLICT until pending_grace, then replaces the record. */
static void killed_at_players_other_key_after_grace(void **state)
{
    fixture *f = *state;
    char orphan[GF_TICKETS_ID_LEN + 1], id[GF_TICKETS_ID_LEN + 1], named[80];
    mm_ticket t = mm_solo("k-given-up", "ben");
    kill_at(f, "players", &t, orphan);
    int64_t created = 0;
    player_record(f, "ben", named, sizeof named, &created);
    assert_string_equal(named, orphan);

    t.key = "k-new-key";
    ticket_id(t.key, id);
    expect_pending(f, &t, created);
    Gamefn__V1__CreateTicketReply *r = create_after_grace(f, &t, created);
    assert_string_equal(r->ticket_id, id);
    expect_queued(f, "ben", id, r->status->revision);
    assert_null(ticket_record(f, orphan, NULL));
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

/* Killed with the ticket written and no reply: the retry is a replay of it and writes
 * nothing (no second ticket, no second players record). */
static void killed_at_ticket_replays(void **state)
{
    fixture *f = *state;
    char id[GF_TICKETS_ID_LEN + 1];
    mm_ticket t = mm_solo("k-ticket", "cat");
    kill_at(f, "ticket", &t, id);
    uint64_t rev = 0;
    Gamefn__V1__TicketRecord *rec = ticket_record(f, id, &rev);
    assert_non_null(rec);
    gf_ticket_free(rec);
    expect_queued(f, "cat", id, rev);

    uint64_t t0 = mm_bucket_seq(&f->env, "tickets"), p0 = mm_bucket_seq(&f->env, "players");
    Gamefn__V1__CreateTicketReply *r = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, &t, 5000, &r, &e), 0);
    assert_string_equal(r->ticket_id, id);
    assert_true(r->replayed);
    assert_int_equal(r->status->state, ST(QUEUED));
    assert_int_equal(r->status->revision, rev);
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), t0);
    assert_int_equal(mm_bucket_seq(&f->env, "players"), p0);
    expect_queued(f, "cat", id, rev);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

/* A party of 3 killed after its first member's record: the retry holds the other two
 * and makes the ticket, also when it comes after pending_grace (a client backing off):
 * the record another key would now replace is still this key's own. */
static void party_killed_after_first_member_retry_converges(void **state)
{
    fixture *f = *state;
    char id[GF_TICKETS_ID_LEN + 1], named[80];
    int64_t created = 0;
    mm_ticket t = {.key = "k-party",
                   .queue = "trio",
                   .players = {"dan", "eve", "fay"},
                   .nplayers = 3,
                   .rating = 1500,
                   .pings = "eu-west:20"};
    kill_at(f, "holding", &t, id);
    player_record(f, "dan", named, sizeof named, &created);
    assert_string_equal(named, id);
    player_record(f, "eve", named, sizeof named, NULL);
    assert_string_equal(named, "");
    player_record(f, "fay", named, sizeof named, NULL);
    assert_string_equal(named, "");
    assert_null(ticket_record(f, id, NULL));

    gf_clock_sleep_ms(created + GRACE_MS - gf_clock_unix_ms());
    Gamefn__V1__CreateTicketReply *r = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, &t, 5000, &r, &e), 0);
    assert_string_equal(r->ticket_id, id);
    assert_false(r->replayed);
    for (size_t i = 0; i < t.nplayers; i++)
        expect_queued(f, t.players[i], id, r->status->revision);
    Gamefn__V1__TicketRecord *rec = ticket_record(f, id, NULL);
    assert_int_equal(rec->n_members, 3);
    gf_ticket_free(rec);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

/* A party of 3 killed after its first member's record, and the party breaks up: the
 * first member is CONFLICT while the record is young; a member without a record queues
 * at once; the party's retry, finding that member in a live ticket, answers with that
 * ticket, writes no ticket and removes the first member's record (its own, renewed on
 * the way: two players writes), so the first member queues at once. No ticket for the
 * party ever exists. */
static void party_given_up_frees_its_members(void **state)
{
    fixture *f = *state;
    char id[GF_TICKETS_ID_LEN + 1], hal_id[GF_TICKETS_ID_LEN + 1], gus_id[GF_TICKETS_ID_LEN + 1];
    char named[80];
    mm_ticket party = {.key = "k-split",
                       .queue = "trio",
                       .players = {"gus", "hal", "ivy"},
                       .nplayers = 3,
                       .rating = 1500,
                       .pings = "eu-west:20"};
    kill_at(f, "holding", &party, id);
    int64_t created = 0;
    player_record(f, "gus", named, sizeof named, &created);
    assert_string_equal(named, id);
    mm_ticket gus = mm_solo("k-gus", "gus");
    expect_pending(f, &gus, created);

    mm_ticket hal = mm_solo("k-hal", "hal");
    ticket_id(hal.key, hal_id);
    Gamefn__V1__CreateTicketReply *r = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, &hal, 5000, &r, &e), 0);
    assert_false(r->replayed);
    expect_queued(f, "hal", hal_id, r->status->revision);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);

    uint64_t t0 = mm_bucket_seq(&f->env, "tickets"), p0 = mm_bucket_seq(&f->env, "players");
    assert_int_equal(mm_create_err(&f->env, &party, 5000, &r, &e), 0);
    assert_string_equal(r->ticket_id, hal_id);
    assert_true(r->replayed);
    assert_non_null(strstr(r->status->detail, "hal"));
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), t0);
    assert_int_equal(mm_bucket_seq(&f->env, "players"), p0 + 2);
    player_record(f, "gus", named, sizeof named, NULL);
    assert_string_equal(named, "");
    player_record(f, "ivy", named, sizeof named, NULL);
    assert_string_equal(named, "");

    ticket_id(gus.key, gus_id);
    assert_int_equal(mm_create_err(&f->env, &gus, 5000, &r, &e), 0);
    assert_false(r->replayed);
    assert_string_equal(r->ticket_id, gus_id);
    expect_queued(f, "gus", gus_id, r->status->revision);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
    assert_null(ticket_record(f, id, NULL));
}

/* A retry under the same key renews the record it finds without a ticket, so that
 * pending_grace counts from the retry: a create under another key that comes once the
 * first attempt's grace is over, while the retry is still writing its ticket (held at
 * `players`, after the renewal), is CONFLICT, not a second live ticket for the player.
 * Kept as found, the record would be stale by then and replaced. */
static void retry_renews_its_record(void **state)
{
    fixture *f = *state;
    char id[GF_TICKETS_ID_LEN + 1], again[GF_TICKETS_ID_LEN + 1], named[80];
    mm_ticket t = mm_solo("k-renew", "joe");
    kill_at(f, "players", &t, id);
    int64_t created = 0, renewed = 0;
    player_record(f, "joe", named, sizeof named, &created);
    assert_string_equal(named, id);

    /* The retry, half the grace later, lands on an intake held after its players step. */
    assert_true(gf_fnenv_stop(&f->intake, 15000));
    memset(&f->intake, 0, sizeof f->intake);
    gf_clock_sleep_ms(created + GRACE_MS / 2 - gf_clock_unix_ms());
    hold_at(f, "players", &t, again);
    assert_string_equal(again, id);
    player_record(f, "joe", named, sizeof named, &renewed);
    assert_string_equal(named, id);
    assert_true(renewed >= created + GRACE_MS / 2);

    /* The first attempt's grace is over, the retry's is not. */
    gf_clock_sleep_ms(created + GRACE_MS + 300 - gf_clock_unix_ms());
    mm_ticket other = mm_solo("k-joe-other", "joe");
    expect_pending(f, &other, renewed);

    kill_held(f);
    Gamefn__V1__CreateTicketReply *r = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, &t, 5000, &r, &e), 0);
    assert_string_equal(r->ticket_id, id);
    expect_queued(f, "joe", id, r->status->revision);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

/* Last: the independent checker over everything the tests above left (the records of
 * tickets that never existed included) finds no invariant broken. */
static void check_finds_nothing(void **state)
{
    fixture *f = *state;
    char out[400];
    snprintf(out, sizeof out, "%s/check.json", f->env.dir);
    cli_result r = cli_run(&f->env, NULL, "check", "--no-events", "--out", out, NULL);
    if (r.code != 0)
        fail_msg("gamefn check exited %d:\n%s", r.code, r.out);
    json_error_t err;
    json_t *j = json_load_file(out, 0, &err);
    if (!j)
        fail_msg("%s: %s", out, err.text);
    static const char *const zero[] = {"double_claims", "players_in_two_matches", "tickets_lost",
                                       "players_in_two_live_tickets", "terminal_changed"};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        if (cli_check_count(j, zero[i]) != 0) /* -1: not checked */
            fail_msg("gamefn check: %s = %lld", zero[i], cli_check_count(j, zero[i]));
    json_decref(j);
    cli_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(killed_at_players_retry_converges, stop_intakes),
        cmocka_unit_test_teardown(killed_at_players_other_key_after_grace, stop_intakes),
        cmocka_unit_test_teardown(killed_at_ticket_replays, stop_intakes),
        cmocka_unit_test_teardown(party_killed_after_first_member_retry_converges, stop_intakes),
        cmocka_unit_test_teardown(party_given_up_frees_its_members, stop_intakes),
        cmocka_unit_test_teardown(retry_renews_its_record, stop_intakes),
        cmocka_unit_test(check_finds_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
