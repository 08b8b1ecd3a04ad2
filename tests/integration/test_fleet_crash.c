/*
 * test_fleet_crash.c — the fleet function SIGKILLed between two writes of one request,
 * on the whole duel service (intake, ticker, matcher, allocator, fleet) with simulated
 * game servers, against a real nats-server. The test pause GAMEFN_TEST_FLEET_PAUSE=<step>
 * (functions/fleet/fleet_fn.h) stops the first fleet replica at the step; the test waits
 * for it in the log, kills it by its pid, starts a fresh replica and checks what a game
 * backend expects once the retries have run:
 *
 *  - a game over (the server's heartbeat naming its finished match), killed after the
 *    match was decided or after its players were released: the server's retry of the game
 *    over finishes it, the server ends FREE, and both players queue again and are matched
 *    (a new ticket each, ASSIGNED on one server);
 *  - the removal of a server that died mid-game (the stale sweep, or its deregister sent
 *    as it went), killed after the match was decided, after the players were released, or
 *    after the record was deleted: the next sweep (or the deregister's retry) finishes it,
 *    the record and its ids/<server_id> index are gone (when the kill fell between the two
 *    deletes, the index is left behind and the sweep of the next replica removes it as an
 *    orphan, once), the players queue again and are matched on the other server;
 *  - the removal of a server allocated to a match not yet committed (the allocator paused
 *    between taking the server and committing): the match ends ABORTED, never committed
 *    on the dead server, its tickets return to the pool and are matched on the other one;
 *  - a register killed between its index write and its record write: its retry
 *    registers the server, FREE and allocatable.
 *
 * Every case ends with no server allocated twice and `gamefn check` (the independent
 * checker) clean. Before the fix (see the commit), a game over killed after the FREE
 * write and a removal killed after the record delete left the match's players records
 * behind: the retry found nothing to do, and the players could not queue again until
 * `max_match_duration` (2 h).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_record.h"
#include "fleet_support.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/error.pb-c.h"
#include "mm_support.h"

#define ASSIGNED  GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED
#define QUEUED    GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED
#define FREE      GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE
#define COMMITTED 1
#define ABORTED   2

enum { SIMS = 2, HEAL_MS = 15000 };

typedef struct crash_env {
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N]; /* p[0] the fleet replica of the moment */
    gf_gamesim *sim;
    char pause_env[64];
} crash_env;

/* The duel service, the fleet armed at `step` and the allocator given alloc_pause (may
 * be NULL), and SIMS simulated servers in eu playing each game play_ms (-1: forever). */
static void crash_up(crash_env *c, const char *step, const char *alloc_pause, int64_t play_ms)
{
    memset(c, 0, sizeof *c);
    fleet_env_opts o = {.functions_extra = fleet_duel_functions};
    fleet_env_start(&c->e, &o);
    snprintf(c->pause_env, sizeof c->pause_env, "GAMEFN_TEST_FLEET_PAUSE=%s", step);
    char *fleet_pause[] = {c->pause_env, NULL};
    char alloc_buf[96];
    snprintf(alloc_buf, sizeof alloc_buf, "GAMEFN_TEST_ALLOCATOR_PAUSE=%s",
             alloc_pause ? alloc_pause : "");
    char *alloc_env[] = {alloc_buf, NULL};
    fleet_env_spawn(&c->e, &c->p[0], FLEET_BIN, "fleet", "f1", fleet_pause);
    fleet_env_spawn(&c->e, &c->p[FLEET_SERVICE_ALLOCATOR], ALLOCATOR_BIN, "allocator", "a1",
                    alloc_pause ? alloc_env : NULL);
    for (size_t i = FLEET_SERVICE_ALLOCATOR + 1; i < FLEET_SERVICE_N; i++)
        fleet_service_spawn_one(&c->e, c->p, i);
    c->sim = fleet_sim_start(&c->e, "eu", SIMS, play_ms);
}

static void crash_down(crash_env *c)
{
    gf_gamesim_stop(c->sim);
    fleet_service_stop(c->p);
    fleet_env_free(&c->e);
}

/* Waits until the armed fleet stopped at its step, SIGKILLs it (by pid) and starts a
 * fresh, unarmed replica. */
static void kill_paused_fleet(crash_env *c, const char *step)
{
    char at[64];
    snprintf(at, sizeof at, "paused for a test\" step=%s", step);
    if (!fleet_log_has(&c->p[0], at, 20000)) {
        gf_proc_dump_log(&c->p[0], 40);
        fail_msg("the fleet never paused at %s", step);
    }
    assert_int_equal(gf_proc_signal(&c->p[0], SIGKILL), 0);
    gf_proc_wait(&c->p[0], 5000);
    memset(&c->p[0], 0, sizeof c->p[0]);
    fleet_env_spawn(&c->e, &c->p[0], FLEET_BIN, "fleet", "f2", NULL);
}

/* Two new tickets for players a and b (pinging eu best); their ids into id[]. mm_create_new
 * fails the test unless each is a new ticket: a players record left behind would answer
 * with the old one. */
static void create_pair(crash_env *c, const char *a, const char *b, const char *round,
                        char id[2][80])
{
    const char *players[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        char key[48];
        snprintf(key, sizeof key, "k-%s-%s", players[i], round);
        mm_ticket t = mm_solo(key, players[i]);
        t.pings = "eu:20,us:90";
        mm_create_new(&c->e.fn, &t, id[i], 80);
    }
}

/* Both tickets ASSIGNED to one match on one server (waited for): match and server out. */
static void both_assigned(crash_env *c, char id[2][80], char *match, char *server)
{
    Gamefn__V1__TicketRecord *t[2];
    for (int i = 0; i < 2; i++)
        t[i] = fleet_wait_ticket(&c->e, id[i], ASSIGNED, 30000);
    assert_string_equal(t[0]->assignment->match_id, t[1]->assignment->match_id);
    assert_string_equal(t[0]->assignment->server_id, t[1]->assignment->server_id);
    snprintf(match, 80, "%s", t[0]->assignment->match_id);
    snprintf(server, 80, "%s", t[0]->assignment->server_id);
    for (int i = 0; i < 2; i++)
        gamefn__v1__ticket_record__free_unpacked(t[i], NULL);
}

/* Polls until neither player holds a players record; fails after HEAL_MS. */
static void players_released(crash_env *c, const char *a, const char *b)
{
    int64_t until = gf_clock_mono_ms() + HEAL_MS;
    while (fleet_player_exists(&c->e, a) || fleet_player_exists(&c->e, b)) {
        if (gf_clock_mono_ms() > until)
            fail_msg("players %s/%s still held %d ms after the crash (%s %s)", a, b, HEAL_MS,
                     fleet_player_exists(&c->e, a) ? a : "-",
                     fleet_player_exists(&c->e, b) ? b : "-");
        gf_clock_sleep_ms(100);
    }
}

/* The players of a finished (or lost) match queue again and are matched: new tickets,
 * ASSIGNED to a new match on a live server that runs nothing else. */
static void play_again(crash_env *c, const char *a, const char *b, const char *old_match)
{
    char id[2][80], match[80], server[80];
    create_pair(c, a, b, "again", id);
    both_assigned(c, id, match, server);
    assert_string_not_equal(match, old_match);
    assert_int_equal(fleet_allocated_to(&c->e, "eu", SIMS, match), 1);
}

/* No simulated server allocated to a match that is not COMMITTED on it, and none of
 * them to `match` (finished or lost). */
static void no_server_holds(crash_env *c, const char *match)
{
    assert_int_equal(fleet_allocated_to(&c->e, "eu", SIMS, match), 0);
}

/* Polls until server `id` is FREE with no match. */
static void server_free(crash_env *c, const char *id)
{
    int64_t until = gf_clock_mono_ms() + HEAL_MS;
    for (;;) {
        Gamefn__V1__ServerRecord *r = fleet_record(&c->e, "eu", id);
        bool free_now =
            r && r->state == FREE && (!r->allocated_match_id || !r->allocated_match_id[0]);
        if (r)
            gamefn__v1__server_record__free_unpacked(r, NULL);
        if (free_now)
            return;
        if (gf_clock_mono_ms() > until)
            fail_msg("server %s not FREE %d ms after the crash", id, HEAL_MS);
        gf_clock_sleep_ms(100);
    }
}

/* Sends a request and does not wait for its reply (the fleet will not answer: paused). */
static void send_unanswered(crash_env *c, const char *subject, const ProtobufCMessage *req)
{
    uint8_t buf[512];
    size_t len = protobuf_c_message_pack(req, buf);
    assert_int_equal(
        natsConnection_PublishRequest(c->e.fn.nc, subject, "_INBOX.nobody", buf, (int)len),
        NATS_OK);
}

/* A deregister (SHUTDOWN) of <dc>/<id>. */
static Gamefn__V1__DeregisterServerRequest shutdown_of(const char *dc, const char *id)
{
    Gamefn__V1__DeregisterServerRequest r = GAMEFN__V1__DEREGISTER_SERVER_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = (char *)(uintptr_t)dc;
    r.reason = GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_SHUTDOWN;
    return r;
}

/* A deregister of <dc>/<id>, answered: `ok_only` GF_OK, else GF_OK or NOT_FOUND (a server's
 * retry after no reply, when the sweep may have removed it first). */
static void deregister(crash_env *c, const char *dc, const char *id, bool ok_only)
{
    Gamefn__V1__DeregisterServerRequest r = shutdown_of(dc, id);
    int err = fleet_call(&c->e, GF_WIRE_SUBJ_FLEET_DEREGISTER, &r.base, NULL, NULL, NULL, NULL, 0);
    assert_true(err == GF_OK || (!ok_only && err == GF_ERR_NOT_FOUND));
}

/* Polls until the record of server `id` is gone and its ids/<id> index too (a fleet killed
 * between the two deletes leaves the index; the sweep removes it: PROTOCOL §8). The id
 * then registers at once in another datacenter (and is deregistered again). */
static void server_gone(crash_env *c, const char *id)
{
    char index[96];
    snprintf(index, sizeof index, "ids/%s", id);
    int64_t until = gf_clock_mono_ms() + HEAL_MS;
    for (;;) {
        Gamefn__V1__ServerRecord *r = fleet_record(&c->e, "eu", id);
        kvEntry *en = NULL;
        bool indexed = gf_kv_get(c->e.fleet, index, &en) == GF_OK;
        kvEntry_Destroy(en);
        if (r)
            gamefn__v1__server_record__free_unpacked(r, NULL);
        if (!r && !indexed)
            break;
        if (gf_clock_mono_ms() > until)
            fail_msg("server %s: record %s, index %s %d ms after the crash", id,
                     r ? "kept" : "gone", indexed ? "kept" : "gone", HEAL_MS);
        gf_clock_sleep_ms(100);
    }
    fleet_register(&c->e, "us", id);
    deregister(c, "us", id, true);
}

/* A match played on one server: the first pair's tickets, assigned (match, server out). */
static void first_match(crash_env *c, char *match, char *server)
{
    char id[2][80];
    create_pair(c, "pa", "pb", "first", id);
    both_assigned(c, id, match, server);
}

/* ---- game over ------------------------------------------------------------------ */

static void game_over_killed_at(const char *step)
{
    crash_env c;
    char match[80], server[80];
    crash_up(&c, step, NULL, 300);
    first_match(&c, match, server);
    kill_paused_fleet(&c, step);
    /* The simulated server reports the game over again until a reply comes. */
    players_released(&c, "pa", "pb");
    server_free(&c, server);
    assert_int_equal(fleet_outcome_state(&c.e, match), COMMITTED);
    no_server_holds(&c, match);
    play_again(&c, "pa", "pb", match);
    mm_check_clean(&c.e.fn, 0);
    crash_down(&c);
}

static void game_over_killed_once_decided(void **state)
{
    (void)state;
    game_over_killed_at("decided");
}

static void game_over_killed_once_players_released(void **state)
{
    (void)state;
    game_over_killed_at("released");
}

/* ---- removal -------------------------------------------------------------------- */

typedef enum { BY_SWEEP, BY_DEREGISTER } removal;

/* The server running a committed match dies (no more heartbeats); it is removed by the
 * sweep or by the deregister it sent as it went, and the fleet is killed at `step`. */
static void removal_killed_at(const char *step, removal how)
{
    crash_env c;
    char match[80], server[80];
    crash_up(&c, step, NULL, -1);
    first_match(&c, match, server);
    assert_int_equal(gf_gamesim_kill(c.sim, server), GF_OK);
    Gamefn__V1__DeregisterServerRequest d = shutdown_of("eu", server);
    if (how == BY_DEREGISTER)
        send_unanswered(&c, GF_WIRE_SUBJ_FLEET_DEREGISTER, &d.base);
    kill_paused_fleet(&c, step);
    if (how == BY_DEREGISTER)
        deregister(&c, "eu", server, false);
    players_released(&c, "pa", "pb");
    server_gone(&c, server);
    if (strcmp(step, "removed") == 0) /* the index the killed fleet left: the sweep's */
        assert_int_equal(fleet_log_count(&c.p[0], "orphan server-id index removed"), 1);
    assert_int_equal(fleet_outcome_state(&c.e, match), COMMITTED); /* the game was lost */
    no_server_holds(&c, match);
    play_again(&c, "pa", "pb", match);
    mm_check_clean(&c.e.fn, 0);
    crash_down(&c);
}

static void sweep_killed_once_decided(void **state)
{
    (void)state;
    removal_killed_at("decided", BY_SWEEP);
}

static void sweep_killed_once_players_released(void **state)
{
    (void)state;
    removal_killed_at("released", BY_SWEEP);
}

static void sweep_killed_once_record_removed(void **state)
{
    (void)state;
    removal_killed_at("removed", BY_SWEEP);
}

static void deregister_killed_once_players_released(void **state)
{
    (void)state;
    removal_killed_at("released", BY_DEREGISTER);
}

/* The simulated server allocated to a match (polled): its id and the match. */
static void allocated_server(crash_env *c, char *server, char *match)
{
    int64_t until = gf_clock_mono_ms() + 20000;
    for (;;) {
        for (int k = 1; k <= SIMS; k++) {
            char id[32];
            snprintf(id, sizeof id, "sim-eu-%d", k);
            Gamefn__V1__ServerRecord *r = fleet_record(&c->e, "eu", id);
            bool found = r && r->allocated_match_id && r->allocated_match_id[0];
            if (found) {
                snprintf(server, 80, "%s", id);
                snprintf(match, 80, "%s", r->allocated_match_id);
            }
            if (r)
                gamefn__v1__server_record__free_unpacked(r, NULL);
            if (found)
                return;
        }
        assert_true(gf_clock_mono_ms() < until);
        gf_clock_sleep_ms(50);
    }
}

/* The allocator took a server for the match and waits (paused 5 s) before committing it;
 * the server dies and the sweep removes it, the fleet killed once the match is decided
 * (ABORTED). The allocator's commit must find ABORTED: the tickets return and are matched
 * on the other server, never assigned to the dead one. */
static void sweep_of_an_uncommitted_match_killed_once_decided(void **state)
{
    (void)state;
    crash_env c;
    char id[2][80], match[80], server[80], again[80], on[80];
    crash_up(&c, "decided", "server:5000", -1);
    create_pair(&c, "pa", "pb", "first", id);
    if (!fleet_log_has(&c.p[FLEET_SERVICE_ALLOCATOR], "paused for a test\" step=server", 20000))
        fail_msg("the allocator never took a server");
    allocated_server(&c, server, match);
    assert_int_equal(gf_gamesim_kill(c.sim, server), GF_OK);
    kill_paused_fleet(&c, "decided");
    assert_int_equal(fleet_outcome_state(&c.e, match), ABORTED);
    server_gone(&c, server);
    both_assigned(&c, id, again, on); /* the same tickets, returned and matched again */
    assert_string_not_equal(again, match);
    assert_string_not_equal(on, server);
    assert_int_equal(fleet_outcome_state(&c.e, match), ABORTED);
    no_server_holds(&c, match);
    mm_check_clean(&c.e.fn, 0);
    crash_down(&c);
}

/* ---- register ------------------------------------------------------------------- */

static void register_killed_once_claimed(void **state)
{
    (void)state;
    crash_env c;
    memset(&c, 0, sizeof c);
    fleet_env_start(&c.e, NULL);
    char *armed[] = {"GAMEFN_TEST_FLEET_PAUSE=claimed", NULL};
    fleet_env_spawn(&c.e, &c.p[0], FLEET_BIN, "fleet", "f1", armed);
    Gamefn__V1__RegisterServerRequest r = GAMEFN__V1__REGISTER_SERVER_REQUEST__INIT;
    r.server_id = "gs-1";
    r.datacenter = "eu";
    r.address = "127.0.0.1";
    r.port = 7777;
    r.capacity = 10;
    send_unanswered(&c, GF_WIRE_SUBJ_FLEET_REGISTER, &r.base);
    kill_paused_fleet(&c, "claimed");
    assert_null(fleet_record(&c.e, "eu", "gs-1")); /* the index only */

    fleet_register(&c.e, "eu", "gs-1"); /* the server's retry: registered at once */
    Gamefn__V1__ServerRecord *rec = fleet_record(&c.e, "eu", "gs-1");
    assert_non_null(rec);
    assert_int_equal(rec->state, FREE);
    assert_true(fleet_allocatable(rec, 2, gf_clock_unix_ms()));
    gamefn__v1__server_record__free_unpacked(rec, NULL);
    /* The index names eu: the id cannot be registered in us as well. */
    Gamefn__V1__RegisterServerRequest us = r;
    us.datacenter = "us";
    int code = 0;
    assert_int_not_equal(
        fleet_call(&c.e, GF_WIRE_SUBJ_FLEET_REGISTER, &us.base, NULL, NULL, &code, NULL, 0), GF_OK);
    assert_int_equal(code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION);
    assert_int_equal(fleet_heartbeat(&c.e, "eu", "gs-1", NULL), GF_OK);
    assert_true(gf_fnenv_stop(&c.p[0], 15000));
    fleet_env_free(&c.e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(game_over_killed_once_decided),
        cmocka_unit_test(game_over_killed_once_players_released),
        cmocka_unit_test(sweep_killed_once_decided),
        cmocka_unit_test(sweep_killed_once_players_released),
        cmocka_unit_test(sweep_killed_once_record_removed),
        cmocka_unit_test(deregister_killed_once_players_released),
        cmocka_unit_test(sweep_of_an_uncommitted_match_killed_once_decided),
        cmocka_unit_test(register_killed_once_claimed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
