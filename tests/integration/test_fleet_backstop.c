/*
 * test_fleet_backstop.c — the fleet's backstop for allocations nobody finishes
 * (functions/fleet/fleet_sweep.c, step 3), against a real nats-server with the fleet
 * function and simulated servers. A server ALLOCATED for longer than
 * `allocation_grace` (1 s here) is looked at once:
 *
 *  - its match has no commit record (the allocator died and the Match was never
 *    redelivered): the fleet creates it ABORTED (NO_SERVER) and frees the server;
 *  - its match was ABORTED (the allocator died before freeing it): freed;
 *  - its match was COMMITTED on another server: a spare (an allocator took two servers
 *    for one match and did not free the second): freed — nothing else ever would, not
 *    even the committed server's game over;
 *  - its match was COMMITTED on it: a game running, kept.
 *
 * And a spare that reports a game over for the match (or leaves) is freed without
 * releasing the match's players: they are in the game on the other server (the fleet
 * used to take its game over for the end of that game, freeing its players to queue
 * and be matched again while in it). Only the real server's game over releases them.
 *
 * The allocations are written by hand, as an allocator would have, onto servers whose
 * simulated game servers heartbeat throughout (they never end a game: play forever).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_record.h"
#include "fleet_support.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/players.h"

#define COMMITTED 1
#define ABORTED   2

enum { SIMS = 4, GRACE_MS = 1000 };

/* The fleet function with `fleet_extra`, and SIMS simulated servers playing forever. */
static gf_gamesim *fleet_up(fleet_env *e, gf_proc *fleet, const char *fleet_extra)
{
    fleet_env_opts o = {.fleet_extra = fleet_extra};
    fleet_env_start(e, &o);
    fleet_env_spawn(e, fleet, FLEET_BIN, "fleet", "f1", NULL);
    return fleet_sim_start(e, "eu", SIMS, -1);
}

static void fleet_down(fleet_env *e, gf_proc *fleet, gf_gamesim *sim)
{
    gf_gamesim_stop(sim);
    assert_true(gf_fnenv_stop(fleet, 15000));
    fleet_env_free(e);
}

/* Allocates sim-eu-<k> to `match` as an allocator does, allocated `age_ms` ago (a CAS on
 * the revision read; the simulated server's heartbeats may win a round). */
static void allocate_by_hand(fleet_env *e, int k, const char *match, int64_t age_ms)
{
    char id[32], key[FLEET_KEY_MAX], player[48], ticket[48];
    snprintf(id, sizeof id, "sim-eu-%d", k);
    snprintf(player, sizeof player, "p-%s", match); /* the match's one player and ticket */
    snprintf(ticket, sizeof ticket, "t-%s", match);
    char *players[] = {player}, *tickets[] = {ticket};
    assert_true(fleet_key("eu", id, key));
    for (int attempt = 0; attempt < 20; attempt++) {
        kvEntry *en = NULL;
        assert_int_equal(kvStore_Get(&en, e->fleet, key), NATS_OK);
        uint64_t rev = kvEntry_Revision(en);
        Gamefn__V1__ServerRecord *r = gamefn__v1__server_record__unpack(
            NULL, (size_t)kvEntry_ValueLen(en), kvEntry_Value(en));
        kvEntry_Destroy(en);
        assert_non_null(r);
        fleet_next next;
        fleet_apply_allocate(r, match, players, 1, tickets, 1, gf_clock_unix_ms() - age_ms, &next);
        uint8_t buf[4096];
        assert_true(gamefn__v1__server_record__get_packed_size(&next.rec) <= sizeof buf);
        size_t len = gamefn__v1__server_record__pack(&next.rec, buf);
        gamefn__v1__server_record__free_unpacked(r, NULL);
        if (kvStore_Update(NULL, e->fleet, key, buf, (int)len, rev) == NATS_OK)
            return;
    }
    fail_msg("could not allocate %s by hand", id);
}

/* matches/<match> COMMITTED on sim-eu-<k>. */
static void commit_on(fleet_env *e, const char *match, int k)
{
    char id[32];
    snprintf(id, sizeof id, "sim-eu-%d", k);
    Gamefn__V1__Assignment a = GAMEFN__V1__ASSIGNMENT__INIT, *as[] = {&a};
    a.match_id = (char *)(uintptr_t)match;
    char ticket[48];
    snprintf(ticket, sizeof ticket, "t-%s", match);
    a.ticket_id = ticket;
    a.server_id = id;
    a.datacenter = "eu";
    a.address = "127.0.0.1";
    a.port = 7000;
    a.assigned_unix_ms = gf_clock_unix_ms();
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(
        gf_outcome_commit_pack(match, as, 1, "test", gf_clock_unix_ms(), &buf, &len, NULL), GF_OK);
    assert_int_equal(kvStore_Create(NULL, e->matches, match, buf, (int)len), NATS_OK);
    free(buf);
}

static void abort_record(fleet_env *e, const char *match)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(
        gf_outcome_abort_pack(match, GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_NO_SERVER,
                              NULL, NULL, "test", gf_clock_unix_ms(), &buf, &len, NULL),
        GF_OK);
    assert_int_equal(kvStore_Create(NULL, e->matches, match, buf, (int)len), NATS_OK);
    free(buf);
}

/* The match sim-eu-<k> is allocated to ("" when free). */
static void allocation_of(fleet_env *e, int k, char *match, size_t size)
{
    char id[32];
    snprintf(id, sizeof id, "sim-eu-%d", k);
    Gamefn__V1__ServerRecord *r = fleet_record(e, "eu", id);
    assert_non_null(r);
    snprintf(match, size, "%s", r->allocated_match_id ? r->allocated_match_id : "");
    gamefn__v1__server_record__free_unpacked(r, NULL);
}

static bool is_free(fleet_env *e, int k)
{
    char m[80];
    allocation_of(e, k, m, sizeof m);
    return m[0] == '\0';
}

static void backstop_frees_what_nobody_will(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0};
    gf_gamesim *sim = fleet_up(&e, &fleet, "    allocation_grace: 1s\n");

    commit_on(&e, "m-spare", 3);
    abort_record(&e, "m-aborted");
    allocate_by_hand(&e, 1, "m-none", 0);
    allocate_by_hand(&e, 2, "m-aborted", 0);
    allocate_by_hand(&e, 3, "m-spare", 0); /* the committed one */
    allocate_by_hand(&e, 4, "m-spare", 0); /* the spare */

    for (int64_t end = gf_clock_mono_ms() + 10000; gf_clock_mono_ms() < end;) {
        if (is_free(&e, 1) && is_free(&e, 2) && is_free(&e, 4))
            break;
        gf_clock_sleep_ms(100);
    }
    assert_true(is_free(&e, 1));
    assert_true(is_free(&e, 2));
    assert_true(is_free(&e, 4));
    assert_int_equal(fleet_outcome_state(&e, "m-none"), ABORTED);
    assert_int_equal(fleet_outcome_state(&e, "m-aborted"), ABORTED);
    assert_int_equal(fleet_outcome_state(&e, "m-spare"), COMMITTED);
    assert_true(fleet_log_has(&fleet, "spare server of a committed match freed", 1000));

    /* The running game is kept, sweep after sweep (a tick every second). */
    gf_clock_sleep_ms(3 * GRACE_MS);
    char m[80];
    allocation_of(&e, 3, m, sizeof m);
    assert_string_equal(m, "m-spare");

    fleet_down(&e, &fleet, sim);
}

/* The player of `match` queued into it: players/p-<match> names ticket t-<match>. */
static void player_in(fleet_env *e, const char *match)
{
    char player[48], ticket[48];
    snprintf(player, sizeof player, "p-%s", match);
    snprintf(ticket, sizeof ticket, "t-%s", match);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_players_pack(player, ticket, gf_clock_unix_ms(), &buf, &len), GF_OK);
    assert_int_equal(kvStore_Create(NULL, e->players, player, buf, (int)len), NATS_OK);
    free(buf);
}

static void spare_game_over_keeps_players(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0};
    gf_gamesim *sim = fleet_up(&e, &fleet, "    allocation_grace: 1m\n"); /* no backstop */

    commit_on(&e, "m-g", 1);
    player_in(&e, "m-g");
    allocate_by_hand(&e, 1, "m-g", 0); /* the game */
    allocate_by_hand(&e, 2, "m-g", 0); /* a spare */
    allocate_by_hand(&e, 3, "m-g", 0); /* another, that leaves */
    Gamefn__V1__DeregisterServerRequest d = GAMEFN__V1__DEREGISTER_SERVER_REQUEST__INIT;
    d.server_id = "sim-eu-3";
    d.datacenter = "eu";
    assert_int_equal(
        fleet_call(&e, GF_WIRE_SUBJ_FLEET_DEREGISTER, &d.base, NULL, NULL, NULL, NULL, 0), GF_OK);
    assert_true(fleet_log_has(&fleet, "a spare server of a committed match removed", 1000));
    assert_true(fleet_player_exists(&e, "p-m-g"));
    assert_int_equal(fleet_heartbeat(&e, "eu", "sim-eu-2", "m-g"), GF_OK);
    assert_true(is_free(&e, 2));
    assert_true(fleet_player_exists(&e, "p-m-g")); /* still in the game on sim-eu-1 */
    assert_true(fleet_log_has(&fleet, "game over from a spare server of a committed match", 1000));
    char m[80];
    allocation_of(&e, 1, m, sizeof m);
    assert_string_equal(m, "m-g");

    /* The real game over releases them. */
    assert_int_equal(fleet_heartbeat(&e, "eu", "sim-eu-1", "m-g"), GF_OK);
    assert_true(is_free(&e, 1));
    assert_false(fleet_player_exists(&e, "p-m-g"));

    fleet_down(&e, &fleet, sim);
}

int main(void)
{
    gf_log_set_level(GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backstop_frees_what_nobody_will),
        cmocka_unit_test(spare_game_over_keeps_players),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
