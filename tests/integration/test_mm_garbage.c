/*
 * test_mm_garbage.c — records that are not what their bucket holds, written straight
 * into KV (someone with write access to the buckets, or a corrupted value): bytes that
 * are no protobuf, and a protobuf of another message type, under tickets/<id>,
 * players/<id> and the fleet's <datacenter>.<server_id>. The whole service (intake,
 * ticker, matcher, allocator, fleet, a simulated server) runs over them: ticket.get
 * answers an error for such a ticket, a create for such a player gets its ticket, and
 * the players are matched and assigned; a server may register over a broken fleet key;
 * nobody crashes or loops (every function exits 0, the broken keys are logged a few
 * times at most), and the independent checker counts the broken records it can tell
 * as bad_records and finds nothing else wrong.
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
#include "gamefn/kv.h"
#include "gamefn/subjects.h"
#include "mm_support.h"

#define ASSIGNED GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED

static const char junk[] = "\xff\xfe\x01 not a protobuf";

static void put(kvStore *kv, const char *key, const void *data, size_t len)
{
    assert_int_equal(gf_kv_create(kv, key, data, len, NULL), GF_OK);
}

/* A well-formed message of the wrong type whose first field (a string) is `key`, so it
 * even decodes as the bucket's own type. */
static size_t wrong_type(const char *key, uint8_t *buf)
{
    Gamefn__V1__ServerRecord r = GAMEFN__V1__SERVER_RECORD__INIT;
    r.server_id = (char *)(uintptr_t)key;
    r.datacenter = "eu";
    r.address = "10.0.0.1";
    return gamefn__v1__server_record__pack(&r, buf);
}

static void create(fleet_env *e, const char *key, const char *player, char *id, size_t size)
{
    mm_ticket t = mm_solo(key, player);
    t.pings = "eu:20,us:90";
    mm_create_new(&e->fn, &t, id, size);
}

static void garbage_records_are_skipped(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc procs[FLEET_SERVICE_N];
    fleet_env_opts o = {.functions_extra = fleet_duel_functions};
    fleet_env_start(&e, &o);
    fleet_service_spawn(&e, procs);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 1, -1);
    uint8_t buf[512];
    put(e.tickets, "t-junk", junk, sizeof junk - 1);
    put(e.tickets, "t-wrong", buf, wrong_type("t-wrong", buf));
    put(e.players, "p-junk", junk, sizeof junk - 1);
    put(e.players, "p-wrong", buf, wrong_type("p-wrong", buf));
    put(e.fleet, "eu.junk", junk, sizeof junk - 1);
    Gamefn__V1__TicketRecord tr = GAMEFN__V1__TICKET_RECORD__INIT;
    tr.ticket_id = "wrong";
    put(e.fleet, "eu.wrong", buf, gamefn__v1__ticket_record__pack(&tr, buf));

    /* ticket.get: an error reply, not a timeout, not a status made up. */
    Gamefn__V1__TicketStatus *st = NULL;
    assert_true(mm_get(&e.fn, "t-junk", &st) > 0);
    assert_null(st);
    assert_true(mm_get(&e.fn, "t-wrong", &st) > 0);
    assert_null(st);

    /* The players whose records are broken queue, are matched together and assigned. */
    char a[80], b[80];
    create(&e, "k-junk", "p-junk", a, sizeof a);
    create(&e, "k-wrong", "p-wrong", b, sizeof b);
    Gamefn__V1__TicketRecord *ta = fleet_wait_ticket(&e, a, ASSIGNED, 15000);
    Gamefn__V1__TicketRecord *tb = fleet_wait_ticket(&e, b, ASSIGNED, 15000);
    assert_string_equal(ta->assignment->server_id, "sim-eu-1");
    assert_string_equal(ta->assignment->match_id, tb->assignment->match_id);
    gamefn__v1__ticket_record__free_unpacked(ta, NULL);
    gamefn__v1__ticket_record__free_unpacked(tb, NULL);

    /* A server registers over a broken fleet key; a heartbeat for the other is refused
     * as a record that is not there (register again). */
    fleet_register(&e, "eu", "junk");
    Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", "junk");
    assert_int_equal(r->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    gamefn__v1__server_record__free_unpacked(r, NULL);
    assert_int_equal(fleet_heartbeat(&e, "eu", "wrong", NULL), GF_ERR_NOT_FOUND);

    /* A few ticks later nobody is busy with them: each broken key is in a log a few
     * times at most (no retry loop), and everyone stops cleanly. */
    gf_clock_sleep_ms(2000);
    static const char *const keys[] = {"t-junk", "t-wrong", "p-junk", "p-wrong", "eu.wrong"};
    for (size_t i = 0; i < FLEET_SERVICE_N; i++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            assert_true(fleet_log_count(&procs[i], keys[k]) <= 4);
    /* The checker: both broken tickets and p-junk. p-wrong decodes as a well-formed
     * players record (a player naming a ticket that does not exist: stale, and replaced
     * by the player's create), so neither intake nor the checker can tell it apart. */
    mm_check_clean_but(&e.fn, 0, 3);

    gf_gamesim_stop(sim);
    fleet_service_stop(procs);
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(garbage_records_are_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
