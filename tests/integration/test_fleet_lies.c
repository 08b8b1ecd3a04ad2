/*
 * test_fleet_lies.c — game servers that lie to the fleet, against the fleet and the
 * allocator on a real nats-server. Game servers share one NATS role (PROTOCOL.md §8,
 * "Trust"): the fleet cannot tell which server sends a request, so what it guarantees
 * is what a request's own fields allow:
 *   - a game over for a match the named server is not running changes nothing (another
 *     match id, or another server's match sent under its own id);
 *   - a heartbeat naming a server in a datacenter it is not registered in is NOT_FOUND
 *     and creates nothing: a heartbeat never moves a server;
 *   - a register again with a new address changes the address and keeps the running
 *     match (as documented);
 *   - a game over naming another server's id and its running match frees that server
 *     and releases its players: the documented limit of one shared role.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_support.h"
#include "gamefn/clock.h"

#define ASSIGNED  GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED
#define FREE      GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE
#define ALLOCATED GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED

/* State and match of <dc>.<id>; the match is copied into match (64 bytes). */
static int server_state(fleet_env *e, const char *dc, const char *id, char match[64])
{
    Gamefn__V1__ServerRecord *r = fleet_record(e, dc, id);
    assert_non_null(r);
    int state = (int)r->state;
    snprintf(match, 64, "%s", r->allocated_match_id ? r->allocated_match_id : "");
    gamefn__v1__server_record__free_unpacked(r, NULL);
    return state;
}

static void lying_servers(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    fleet_env_opts o = {.heartbeat = "2s"}; /* timeout 6 s: the test heartbeats by hand */
    fleet_env_start(&e, &o);
    fleet_env_spawn(&e, &fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
    /* gs-b runs match m-b; gs-a is FREE. */
    fleet_register(&e, "eu", "gs-b");
    fleet_claim_ticket(&e, "t-b1", "m-b", gf_clock_unix_ms());
    char *tickets[] = {"t-b1"};
    fleet_publish_match(&e, "m-b", tickets, 1, "eu");
    gamefn__v1__ticket_record__free_unpacked(fleet_wait_ticket(&e, "t-b1", ASSIGNED, 10000), NULL);
    fleet_register(&e, "eu", "gs-a");
    char match[64];
    assert_int_equal(server_state(&e, "eu", "gs-b", match), ALLOCATED);
    assert_string_equal(match, "m-b");

    /* Game over for a match gs-b is not running; gs-a claiming gs-b's match. */
    assert_int_equal(fleet_heartbeat(&e, "eu", "gs-b", "m-other"), GF_OK);
    assert_int_equal(fleet_heartbeat(&e, "eu", "gs-a", "m-b"), GF_OK);
    assert_int_equal(server_state(&e, "eu", "gs-b", match), ALLOCATED);
    assert_string_equal(match, "m-b");
    assert_int_equal(server_state(&e, "eu", "gs-a", match), FREE);
    assert_true(fleet_player_exists(&e, "p-t-b1"));

    /* gs-b's id in another datacenter: NOT_FOUND, nothing created, nothing moved. */
    assert_int_equal(fleet_heartbeat(&e, "us", "gs-b", "m-b"), GF_ERR_NOT_FOUND);
    assert_null(fleet_record(&e, "us", "gs-b"));
    assert_int_equal(server_state(&e, "eu", "gs-b", match), ALLOCATED);

    /* Registering again with a new address keeps the running match. */
    fleet_register_at(&e, "eu", "gs-b", "127.0.0.9");
    Gamefn__V1__ServerRecord *b = fleet_record(&e, "eu", "gs-b");
    assert_string_equal(b->address, "127.0.0.9");
    assert_string_equal(b->allocated_match_id, "m-b");
    gamefn__v1__server_record__free_unpacked(b, NULL);

    /* The limit: anyone in the role who names gs-b and its match ends that match. */
    assert_int_equal(fleet_heartbeat(&e, "eu", "gs-b", "m-b"), GF_OK);
    assert_int_equal(server_state(&e, "eu", "gs-b", match), FREE);
    for (int waited = 0; fleet_player_exists(&e, "p-t-b1") && waited < 5000; waited += 50)
        gf_clock_sleep_ms(50);
    assert_false(fleet_player_exists(&e, "p-t-b1"));

    assert_true(gf_fnenv_stop(&alloc, 15000));
    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lying_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
