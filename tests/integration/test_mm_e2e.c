/*
 * test_mm_e2e.c — the whole matchmaking service with a simulated game server: tickets
 * created through intake are matched by the matcher, allocated by the allocator on a
 * server registered with the fleet, which verifies every player's join token, plays,
 * reports game over and is FREE again; the players, released, queue again and are
 * matched a second time on the same server. Then once more under the shipped
 * least-privilege users (deploy/nats/accounts.conf): every function as its own user,
 * the tickets from a gateway, the game server as a game server, and not one publish or
 * subscription refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_support.h"
#include "natsd.h"
#include "gamefn/clock.h"
#include "gamesim.h"
#include "mm_support.h"

#define ASSIGNED GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED

/* Creates a ticket for `player` under `key` (duel, eu 20 ms) through env's client; its
 * id into id. */
static void create(gf_fnenv *env, const char *key, const char *player, char *id, size_t size)
{
    mm_ticket t = mm_solo(key, player);
    t.pings = "eu:20,us:90";
    mm_create_new(env, &t, id, size);
}

static void wait_assigned(gf_fnenv *env, const char *id)
{
    for (int waited = 0; mm_state(env, id) != ASSIGNED; waited += 100) {
        if (waited > 15000)
            fail_msg("ticket %s not assigned (state %d)", id, mm_state(env, id));
        gf_clock_sleep_ms(100);
    }
}

/* Waits until the simulated server has finished `games` games (10 s at most); its stats. */
static gf_gamesim_stats wait_games(gf_gamesim *sim, uint64_t games)
{
    gf_gamesim_stats st;
    for (int waited = 0;; waited += 100) {
        gf_gamesim_stats_get(sim, &st);
        if (st.games_finished >= games || waited > 10000)
            return st;
        gf_clock_sleep_ms(100);
    }
}

static void tickets_to_game_and_back(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc procs[FLEET_SERVICE_N];
    fleet_env_opts o = {.functions_extra = fleet_duel_functions};
    fleet_env_start(&e, &o);
    fleet_service_spawn(&e, procs);
    gf_gamesim_dc dcs[] = {{.name = "eu", .initial = 1, .max = 1}};
    gf_gamesim_opts so = {.dcs = dcs, .n_dcs = 1, .play_ms = 300};
    gf_gamesim *sim = NULL;
    assert_int_equal(gf_gamesim_start(e.fn.nc, &so, &sim), GF_OK);

    char a[80], b[80];
    create(&e.fn, "k-alice-1", "alice", a, sizeof a);
    create(&e.fn, "k-bob-1", "bob", b, sizeof b);
    wait_assigned(&e.fn, a);
    wait_assigned(&e.fn, b);
    Gamefn__V1__TicketRecord *t = fleet_ticket(&e, a);
    assert_string_equal(t->assignment->server_id, "sim-eu-1");
    assert_string_equal(t->assignment->datacenter, "eu");
    gamefn__v1__ticket_record__free_unpacked(t, NULL);

    /* The server verified both tokens, played, reported game over. */
    gf_gamesim_stats st = wait_games(sim, 1);
    assert_int_equal(st.tokens_ok, 2);
    assert_int_equal(st.tokens_bad, 0);
    assert_int_equal(st.games_finished, 1);
    for (int waited = 0; fleet_player_exists(&e, "alice") && waited < 5000; waited += 50)
        gf_clock_sleep_ms(50);
    assert_false(fleet_player_exists(&e, "alice"));

    /* Released, they queue again and play again on the same, now free, server. */
    create(&e.fn, "k-alice-2", "alice", a, sizeof a);
    create(&e.fn, "k-bob-2", "bob", b, sizeof b);
    wait_assigned(&e.fn, a);
    wait_assigned(&e.fn, b);
    st = wait_games(sim, 2);
    assert_int_equal(st.games_finished, 2);
    assert_int_equal(st.tokens_ok, 4);

    gf_gamesim_stop(sim);
    fleet_service_stop(procs);
    fleet_env_free(&e);
}

static void under_the_shipped_users(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc procs[FLEET_SERVICE_N];
    fleet_env_opts o = {.functions_extra = fleet_duel_functions, .shipped_users = true};
    fleet_env_start(&e, &o);
    fleet_service_spawn(&e, procs);

    natsConnection *gs = gf_fnenv_connect_as(&e.fn, "gameserver", "pw-GAMESERVER", "_INBOX.gs");
    assert_non_null(gs);
    gf_gamesim_dc dcs[] = {{.name = "eu", .initial = 1, .max = 1}};
    gf_gamesim_opts so = {.dcs = dcs, .n_dcs = 1, .play_ms = 300};
    gf_gamesim *sim = NULL;
    assert_int_equal(gf_gamesim_start(gs, &so, &sim), GF_OK);
    gf_fnenv gateway = e.fn; /* the same helpers, through the gateway's connection */
    gateway.nc = gf_fnenv_connect_as(&e.fn, "gateway", "pw-GATEWAY", "_INBOX.gw");
    assert_non_null(gateway.nc);

    char a[80], b[80];
    create(&gateway, "k-alice-1", "alice", a, sizeof a);
    create(&gateway, "k-bob-1", "bob", b, sizeof b);
    wait_assigned(&gateway, a);
    wait_assigned(&gateway, b);
    gf_gamesim_stats st = wait_games(sim, 1);
    assert_int_equal(st.tokens_ok, 2);
    assert_int_equal(st.games_finished, 1);

    gf_gamesim_stop(sim);
    fleet_service_stop(procs);
    /* One is expected: the simulated servers also take joins on gamefn.sim.join.* (a
     * test-only door, not a game server's). */
    int refused = gf_fnenv_server_log_count(&e.fn, "Violation") -
                  gf_fnenv_server_log_count(&e.fn, "\"gamefn.sim.join.*\"");
    if (refused)
        gf_natsd_dump_log(e.fn.natsd, 20);
    assert_int_equal(refused, 0);
    natsConnection_Destroy(gateway.nc);
    natsConnection_Destroy(gs);
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tickets_to_game_and_back),
        cmocka_unit_test(under_the_shipped_users),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
