/*
 * test_fleet_full.c — the fleet and the allocator when the `fleet` bucket has no room, on
 * the whole duel service (fleet, allocator, intake, ticker, matcher) with simulated
 * servers. Its stream KV_fleet at its max_bytes (discard new, as every KV bucket) refuses
 * writes with 10077; nothing may be half done meanwhile, and once there is room the
 * service must recover by itself:
 *
 *  - the shipped bucket (history 1) at its max_bytes: nats-server 2.9.10 still takes a
 *    write that replaces a key's only revision with one no larger (heartbeats go on), and
 *    refuses a new key or a larger record: a register is RESOURCE_EXHAUSTED and writes
 *    nothing; the allocator cannot take a server, logs that (rate-bounded) and at the
 *    match's deadline returns its tickets to QUEUED (NO_SERVER, queue time kept); no
 *    ticket is ASSIGNED. With room again the tickets are assigned.
 *  - a bucket that refuses every write (keys far below their history limit; as
 *    an account at its JetStream limit, 10002): heartbeats, deregisters and game overs are
 *    RESOURCE_EXHAUSTED and change nothing; a server whose heartbeats were refused is not
 *    removed as stale, then or in the heartbeat_timeout after there is room again.
 *
 * Each ends with new matches assigned and the independent checker clean.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_support.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/error.pb-c.h"
#include "mm_support.h"

#define QUEUED    GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED
#define ASSIGNED  GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED
#define NO_SERVER GAMEFN__V1__TICKET_REASON__TICKET_REASON_NO_SERVER
#define EXHAUSTED GAMEFN__V1__ERROR_CODE__ERROR_CODE_RESOURCE_EXHAUSTED

/* Messages per subject far above any key's revisions in a test. It was 64, the most a KV
 * bucket's history can be: a slow run (ASan on a loaded machine) let a simulated server's
 * key reach 64 revisions, so its next heartbeat dropped its oldest revision, and a smaller
 * new record left room for a write the test expected refused. */
#define EVERY_WRITE_REFUSED 1000000
#define ALLOCATED           GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED

enum { SIMS = 2 };

static const char refused_log[] = "fleet bucket full: write refused";
static const char not_taken_log[] = "server not taken: the fleet bucket is full";

/* The duel service with a 1-s heartbeat (3-s timeout) and SIMS simulated servers in eu
 * running every game until the test ends. */
static gf_gamesim *service_start(fleet_env *e, gf_proc p[FLEET_SERVICE_N])
{
    fleet_env_opts o = {.functions_extra = fleet_duel_functions, .heartbeat = "1s"};
    fleet_env_start(e, &o);
    fleet_service_spawn(e, p);
    return fleet_sim_start(e, "eu", SIMS, -1);
}

static void service_stop(fleet_env *e, gf_proc p[FLEET_SERVICE_N], gf_gamesim *sim)
{
    gf_gamesim_stop(sim);
    fleet_service_stop(p);
    fleet_env_free(e);
}

/* KV_fleet at exactly the bytes it holds (full) or unlimited. history > 0 sets the
 * stream's messages per subject first (EVERY_WRITE_REFUSED: every write refused while
 * the keys are below it). */
static void fleet_full(fleet_env *e, bool full, int history)
{
    if (history > 0) {
        jsStreamInfo *si = NULL;
        assert_int_equal(js_GetStreamInfo(&si, e->fn.js, "KV_fleet", NULL, NULL), NATS_OK);
        si->Config->MaxMsgsPerSubject = history;
        assert_int_equal(js_UpdateStream(NULL, e->fn.js, si->Config, NULL, NULL), NATS_OK);
        jsStreamInfo_Destroy(si);
    }
    assert_int_equal(gf_fnenv_stream_full(&e->fn, "KV_fleet", full), NATS_OK);
}

/* A register of a server that has no record: its error code. */
static int register_new(fleet_env *e, const char *id)
{
    Gamefn__V1__RegisterServerRequest r = GAMEFN__V1__REGISTER_SERVER_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = "eu";
    r.address = "127.0.0.1";
    r.port = 7777;
    r.capacity = 10;
    int code = 0;
    fleet_call(e, GF_WIRE_SUBJ_FLEET_REGISTER, &r.base, NULL, NULL, &code, NULL, 0);
    return code;
}

/* A heartbeat (a game over when finished is set): its error code. */
static int heartbeat(fleet_env *e, const char *id, const char *finished)
{
    Gamefn__V1__HeartbeatRequest r = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = "eu";
    r.finished_match_id = (char *)(uintptr_t)(finished ? finished : "");
    int code = 0;
    fleet_call(e, GF_WIRE_SUBJ_FLEET_HEARTBEAT, &r.base, NULL, NULL, &code, NULL, 0);
    return code;
}

static int deregister(fleet_env *e, const char *id)
{
    Gamefn__V1__DeregisterServerRequest r = GAMEFN__V1__DEREGISTER_SERVER_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = "eu";
    int code = 0;
    fleet_call(e, GF_WIRE_SUBJ_FLEET_DEREGISTER, &r.base, NULL, NULL, &code, NULL, 0);
    return code;
}

static bool key_exists(fleet_env *e, const char *key)
{
    kvEntry *en = NULL;
    bool found = kvStore_Get(&en, e->fleet, key) == NATS_OK;
    kvEntry_Destroy(en);
    return found;
}

/* The record of eu.<id>: revision (0 = none) and stale_unix_ms. */
static uint64_t record_revision(fleet_env *e, const char *id, int64_t *stale_ms)
{
    char key[64];
    kvEntry *en = NULL;
    snprintf(key, sizeof key, "eu.%s", id);
    if (kvStore_Get(&en, e->fleet, key) != NATS_OK)
        return 0;
    uint64_t rev = kvEntry_Revision(en);
    Gamefn__V1__ServerRecord *r =
        gamefn__v1__server_record__unpack(NULL, (size_t)kvEntry_ValueLen(en), kvEntry_Value(en));
    kvEntry_Destroy(en);
    assert_non_null(r);
    if (stale_ms)
        *stale_ms = r->stale_unix_ms;
    gamefn__v1__server_record__free_unpacked(r, NULL);
    return rev;
}

static void full_register_and_allocation(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N] = {0};
    gf_gamesim *sim = service_start(&e, p);
    const gf_proc *fleet = &p[0], *alloc = &p[FLEET_SERVICE_ALLOCATOR];

    fleet_full(&e, true, 0);
    /* A new server: refused with the code of a full bucket, and nothing written (neither
     * its record nor its id's index). */
    assert_int_equal(register_new(&e, "gs-new"), EXHAUSTED);
    assert_false(key_exists(&e, "eu.gs-new"));
    assert_false(key_exists(&e, "ids/gs-new"));
    assert_int_equal(register_new(&e, "gs-new"), EXHAUSTED);
    assert_true(fleet_log_has(fleet, refused_log, 2000));

    /* A match: the allocator cannot take a server; at its deadline the tickets return to
     * the pool, NO_SERVER, with their queue time. */
    char id[2][80], match[80];
    int64_t queued[2];
    fleet_create_pair(&e, "ann", "ben", id, queued);
    assert_true(fleet_log_has(alloc, not_taken_log, 10000));
    for (int i = 0; i < 2; i++) {
        int64_t end = gf_clock_mono_ms() + 10000;
        Gamefn__V1__TicketRecord *t = NULL;
        for (;;) {
            t = fleet_ticket(&e, id[i]);
            assert_non_null(t);
            assert_int_not_equal(t->state, ASSIGNED);
            if ((t->state == QUEUED && t->reason == NO_SERVER) || gf_clock_mono_ms() > end)
                break;
            gamefn__v1__ticket_record__free_unpacked(t, NULL);
            gf_clock_sleep_ms(20);
        }
        assert_int_equal(t->state, QUEUED);
        assert_int_equal(t->reason, NO_SERVER);
        assert_int_equal(t->queued_unix_ms, queued[i]);
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
    }
    gf_clock_sleep_ms(2000); /* a few more rounds of matching and refused allocations */
    assert_int_equal(fleet_allocated_to(&e, "eu", SIMS, NULL), 0);
    for (int i = 0; i < 2; i++) {
        Gamefn__V1__TicketRecord *t = fleet_ticket(&e, id[i]);
        assert_int_not_equal(t->state, ASSIGNED);
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
    }
    /* Rate-bounded: one line per 10 s, not one per refused write (hundreds here). */
    assert_int_equal(fleet_log_count(alloc, "server allocation write failed"), 0);
    assert_int_equal(fleet_log_count(alloc, not_taken_log), 1);
    assert_int_equal(fleet_log_count(fleet, refused_log), 1);

    fleet_full(&e, false, 0);
    fleet_both_assigned(&e, id, match, sizeof match);
    assert_int_equal(fleet_allocated_to(&e, "eu", SIMS, match), 1);
    assert_int_equal(register_new(&e, "gs-new"), 0);
    assert_int_equal(deregister(&e, "gs-new"), 0);
    mm_check_clean(&e.fn, 0);
    service_stop(&e, p, sim);
}

static void full_heartbeats_keep_servers(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N] = {0};
    gf_gamesim *sim = service_start(&e, p);
    const gf_proc *fleet = &p[0];
    char id[2][80], running[80], match[80];
    int64_t queued[2];
    fleet_create_pair(&e, "cat", "dan", id, queued);
    fleet_both_assigned(&e, id, running, sizeof running);
    fleet_register(&e, "eu", "gs-t"); /* heartbeats only when the test sends them */
    Gamefn__V1__ServerRecord *r = NULL;
    char on[64] = "";
    for (int k = 1; k <= SIMS && !on[0]; k++) {
        char sid[32];
        snprintf(sid, sizeof sid, "sim-eu-%d", k);
        r = fleet_record(&e, "eu", sid);
        if (r && r->allocated_match_id && strcmp(r->allocated_match_id, running) == 0)
            snprintf(on, sizeof on, "%s", sid);
        gamefn__v1__server_record__free_unpacked(r, NULL);
    }
    assert_true(on[0]);
    assert_int_equal(heartbeat(&e, "gs-t", NULL), 0);

    fleet_full(&e, true, EVERY_WRITE_REFUSED);
    int64_t stale_ms = 0;
    uint64_t rev = record_revision(&e, "gs-t", &stale_ms);
    assert_int_equal(heartbeat(&e, "gs-t", NULL), EXHAUSTED);
    assert_int_equal(deregister(&e, "gs-t"), EXHAUSTED);
    assert_int_equal(record_revision(&e, "gs-t", NULL), rev);
    /* A game over the fleet cannot write: the server keeps its match (its retry frees it),
     * and the players are released all the same — the game is over, and they are released
     * before the server's write so that no refused or lost write holds them. */
    assert_int_equal(heartbeat(&e, on, running), EXHAUSTED);
    r = fleet_record(&e, "eu", on);
    assert_int_equal(r->state, ALLOCATED);
    assert_string_equal(r->allocated_match_id, running);
    gamefn__v1__server_record__free_unpacked(r, NULL);
    assert_false(fleet_player_exists(&e, "cat"));
    assert_false(fleet_player_exists(&e, "dan"));

    /* Past its stale time, and a sweep or two after: still there. */
    while (gf_clock_unix_ms() < stale_ms + 1500)
        gf_clock_sleep_ms(100);
    assert_int_equal(record_revision(&e, "gs-t", NULL), rev);
    gf_gamesim_stats gs;
    gf_gamesim_stats_get(sim, &gs);
    assert_true(gs.heartbeat_failures > 0); /* the simulated servers' were refused too */
    uint64_t registers = gs.registers;

    /* Room again: a server gets a whole heartbeat timeout (3 s) to heartbeat again before
     * the sweep judges it; gs-t does so after 2 s. */
    fleet_full(&e, false, 0);
    int64_t end = gf_clock_mono_ms() + 2000;
    while (gf_clock_mono_ms() < end) {
        if (!record_revision(&e, "gs-t", NULL))
            fail_msg("gs-t removed as stale right after the fleet bucket had room again");
        gf_clock_sleep_ms(50);
    }
    assert_int_equal(heartbeat(&e, "gs-t", NULL), 0);
    assert_true(fleet_log_has(fleet, "stale servers kept", 1000));
    assert_int_equal(deregister(&e, "gs-t"), 0);

    /* Recovered: the simulated servers heartbeat again (never registered anew), and a new
     * match is assigned to the free one. */
    fleet_create_pair(&e, "eve", "fay", id, queued);
    fleet_both_assigned(&e, id, match, sizeof match);
    assert_int_equal(fleet_allocated_to(&e, "eu", SIMS, match), 1);
    assert_int_equal(fleet_allocated_to(&e, "eu", SIMS, running), 1);
    gf_gamesim_stats_get(sim, &gs);
    assert_int_equal(gs.registers, registers);
    assert_true(fleet_log_count(fleet, refused_log) <= 2);
    assert_int_equal(fleet_log_count(fleet, "server removed: missed its heartbeats"), 0);
    mm_check_clean(&e.fn, 0);
    service_stop(&e, p, sim);
}

int main(void)
{
    gf_log_set_level(GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_register_and_allocation),
        cmocka_unit_test(full_heartbeats_keep_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
