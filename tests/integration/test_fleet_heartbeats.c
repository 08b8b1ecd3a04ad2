/*
 * test_fleet_heartbeats.c — the heartbeat refresh against a real nats-server
 * (docs/PROTOCOL.md §8 "Heartbeat"): with heartbeat_interval 500 ms and heartbeat_timeout
 * 3.5 s the refresh period is 1.25 s, and
 *   - heartbeats that change nothing within it leave the record's KV revision as it is and
 *     answer with the record as stored; the first one past it writes; a changed `players`
 *     or `draining` writes at once, and so does any heartbeat naming a finished match;
 *   - a server heartbeating at its interval for longer than the timeout is rewritten at
 *     most once per refresh period (every heartbeat was a write before), is never swept,
 *     and is allocated; its reply shows the allocation; its game over frees it at once and
 *     releases its players;
 *   - simulated game servers (support/gamesim) play match after match with it.
 * Each "unchanged revision" assertion fails when every heartbeat writes.
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
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/subjects.h"
#include "gamesim.h"

#define FREE      GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE
#define ALLOCATED GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED
#define DRAINING  GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING
#define ASSIGNED  GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED

enum {
    INTERVAL_MS = 500,
    REFRESH_MS = 1250,
    TIMEOUT_MS = 3500
}; /* refresh: timeout/2 - interval */

static const fleet_env_opts opts = {.heartbeat = "500ms", .heartbeat_timeout = "3500ms"};

/* The fleet function, and an allocator unless alloc is NULL, on a fresh server. */
static void stack_up(fleet_env *e, gf_proc *fleet, gf_proc *alloc)
{
    fleet_env_start(e, &opts);
    fleet_env_spawn(e, fleet, FLEET_BIN, "fleet", "f1", NULL);
    if (alloc)
        fleet_env_spawn(e, alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
}

/* No server was ever swept as stale; each process exits 0. */
static void stack_down(fleet_env *e, gf_proc *fleet, gf_proc *alloc)
{
    assert_int_equal(fleet_log_count(fleet, "missed its heartbeats"), 0);
    if (alloc)
        assert_true(gf_fnenv_stop(alloc, 15000));
    assert_true(gf_fnenv_stop(fleet, 15000));
    fleet_env_free(e);
}

/* The KV revision of <dc>.<id>, 0 when absent. */
static uint64_t revision(fleet_env *e, const char *dc, const char *id)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", dc, id);
    return fleet_key_revision(e, key);
}

typedef struct beat_req {
    uint32_t players;
    bool draining;
    const char *finished;
} beat_req;

/* A heartbeat of eu.<id>; asserts success and returns the reply's record (caller frees). */
static Gamefn__V1__ServerRecord *beat(fleet_env *e, const char *id, beat_req b)
{
    Gamefn__V1__HeartbeatRequest r = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = "eu";
    r.players = b.players;
    r.draining = b.draining;
    r.finished_match_id = (char *)(uintptr_t)(b.finished ? b.finished : "");
    Gamefn__V1__HeartbeatReply *rep = NULL;
    assert_int_equal(fleet_call(e, GF_WIRE_SUBJ_FLEET_HEARTBEAT, &r.base,
                                &gamefn__v1__heartbeat_reply__descriptor, (ProtobufCMessage **)&rep,
                                NULL, NULL, 0),
                     GF_OK);
    assert_non_null(rep->record);
    assert_true(rep->n_join_keys >= 1);
    Gamefn__V1__ServerRecord *rec = rep->record;
    rep->record = NULL;
    gamefn__v1__heartbeat_reply__free_unpacked(rep, NULL);
    return rec;
}

/* A heartbeat expected to write (want_write) or not: the revision before and after. */
static uint64_t beat_expect(fleet_env *e, const char *id, beat_req b, bool want_write,
                            const char *what)
{
    uint64_t before = revision(e, "eu", id);
    Gamefn__V1__ServerRecord *rec = beat(e, id, b);
    uint64_t after = revision(e, "eu", id);
    assert_true(before != 0 && after != 0);
    if ((after != before) != want_write)
        fail_msg("%s: revision %llu -> %llu, want %s", what, (unsigned long long)before,
                 (unsigned long long)after, want_write ? "a write" : "none");
    Gamefn__V1__ServerRecord *stored = fleet_record(e, "eu", id);
    /* The reply is the record as stored, skipped or not. */
    assert_int_equal(rec->last_heartbeat_unix_ms, stored->last_heartbeat_unix_ms);
    assert_int_equal(rec->players, stored->players);
    assert_int_equal(rec->state, stored->state);
    gamefn__v1__server_record__free_unpacked(stored, NULL);
    gamefn__v1__server_record__free_unpacked(rec, NULL);
    return after;
}

static void unchanged_heartbeats_skip_the_write(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0};
    stack_up(&e, &fleet, NULL);
    assert_true(fleet_log_has(&fleet, "refresh_ms=1250", 5000));
    fleet_register(&e, "eu", "gs-1");
    Gamefn__V1__ServerRecord *reg = fleet_record(&e, "eu", "gs-1");
    int64_t stamp = reg->last_heartbeat_unix_ms;
    gamefn__v1__server_record__free_unpacked(reg, NULL);

    /* Heartbeats within the refresh period of the register's write: nothing written. Only
     * those sent well inside it are judged (a slow machine may take long to send them). */
    int judged = 0;
    for (int i = 0; i < 3 && gf_clock_unix_ms() - stamp < REFRESH_MS - 300; i++, judged++)
        beat_expect(&e, "gs-1", (beat_req){0}, false, "unchanged, within the refresh period");
    assert_true(judged >= 1);

    /* Past it: written, the stamps moved. */
    gf_clock_sleep_ms(stamp + REFRESH_MS + 100 - gf_clock_unix_ms());
    beat_expect(&e, "gs-1", (beat_req){0}, true, "unchanged, past the refresh period");
    Gamefn__V1__ServerRecord *rec = fleet_record(&e, "eu", "gs-1");
    assert_true(rec->last_heartbeat_unix_ms >= stamp + REFRESH_MS);
    assert_int_equal(rec->stale_unix_ms, rec->last_heartbeat_unix_ms + TIMEOUT_MS);
    gamefn__v1__server_record__free_unpacked(rec, NULL);

    /* A change writes at once, whatever the stamps' age; repeating it does not. */
    beat_expect(&e, "gs-1", (beat_req){.players = 3}, true, "players 0 -> 3");
    beat_expect(&e, "gs-1", (beat_req){.players = 3}, false, "players 3 again");
    beat_expect(&e, "gs-1", (beat_req){.players = 3, .draining = true}, true, "draining");
    beat_expect(&e, "gs-1", (beat_req){.players = 3, .draining = true}, false, "draining again");
    rec = fleet_record(&e, "eu", "gs-1");
    assert_int_equal(rec->state, DRAINING);
    assert_int_equal(rec->players, 3);
    gamefn__v1__server_record__free_unpacked(rec, NULL);
    /* A game over is never skipped, even one naming a match the server does not run. */
    beat_expect(&e, "gs-1", (beat_req){.players = 3, .draining = true, .finished = "m-old"}, true,
                "game over of another match");
    stack_down(&e, &fleet, NULL);
}

static void live_server_stays_allocatable(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    stack_up(&e, &fleet, &alloc);
    fleet_register(&e, "eu", "gs-live");

    /* 5 s of heartbeats at the interval (the timeout is 3.5 s): never NOT_FOUND, never stale,
     * and rewritten at most once a refresh period (each heartbeat wrote before). */
    uint64_t last = revision(&e, "eu", "gs-live");
    int64_t start = gf_clock_mono_ms();
    long beats = 0, writes = 0;
    while (gf_clock_mono_ms() - start < 5000) {
        int64_t at = start + (beats + 1) * INTERVAL_MS;
        if (at > gf_clock_mono_ms())
            gf_clock_sleep_ms(at - gf_clock_mono_ms());
        Gamefn__V1__ServerRecord *rep = beat(&e, "gs-live", (beat_req){0});
        assert_int_equal(rep->state, FREE);
        gamefn__v1__server_record__free_unpacked(rep, NULL);
        beats++;
        uint64_t rev = revision(&e, "eu", "gs-live");
        assert_int_not_equal(rev, 0);
        writes += rev != last;
        last = rev;
        Gamefn__V1__ServerRecord *rec = fleet_record(&e, "eu", "gs-live");
        assert_true(rec->stale_unix_ms > gf_clock_unix_ms() + INTERVAL_MS);
        gamefn__v1__server_record__free_unpacked(rec, NULL);
    }
    long elapsed = (long)(gf_clock_mono_ms() - start);
    print_message("%ld heartbeats in %ld ms, %ld written\n", beats, elapsed, writes);
    assert_true(writes >= 2);                        /* it is kept alive */
    assert_true(writes <= elapsed / REFRESH_MS + 1); /* and no more often than that */
    assert_true(beats > elapsed / REFRESH_MS + 1);   /* which every heartbeat writing breaks */

    /* Allocated, heartbeating meanwhile. */
    int64_t queued = gf_clock_unix_ms() - 5000;
    fleet_claim_ticket(&e, "t-a", "m-1", queued);
    fleet_claim_ticket(&e, "t-b", "m-1", queued);
    char *tickets[] = {"t-a", "t-b"};
    fleet_publish_match(&e, "m-1", tickets, 2, "eu");
    Gamefn__V1__TicketRecord *t = NULL;
    for (int waited = 0; waited < 15000; waited += INTERVAL_MS) {
        gamefn__v1__server_record__free_unpacked(beat(&e, "gs-live", (beat_req){0}), NULL);
        t = fleet_ticket(&e, "t-a");
        if (t && t->state == ASSIGNED)
            break;
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
        t = NULL;
        gf_clock_sleep_ms(INTERVAL_MS);
    }
    assert_non_null(t);
    assert_string_equal(t->assignment->server_id, "gs-live");
    gamefn__v1__ticket_record__free_unpacked(t, NULL);

    /* Its heartbeat reply shows the allocation (the mirror's copy when nothing is written;
     * within a refresh period whatever the watcher's lag). */
    bool shown = false;
    for (int waited = 0; !shown && waited <= REFRESH_MS + INTERVAL_MS; waited += INTERVAL_MS) {
        Gamefn__V1__ServerRecord *rep = beat(&e, "gs-live", (beat_req){0});
        shown = rep->state == ALLOCATED && strcmp(rep->allocated_match_id, "m-1") == 0;
        gamefn__v1__server_record__free_unpacked(rep, NULL);
        if (!shown)
            gf_clock_sleep_ms(INTERVAL_MS);
    }
    assert_true(shown);

    /* Game over: FREE at once, its players released; its retry writes again. */
    uint64_t before = revision(&e, "eu", "gs-live");
    Gamefn__V1__ServerRecord *rep = beat(&e, "gs-live", (beat_req){.finished = "m-1"});
    assert_int_equal(rep->state, FREE);
    gamefn__v1__server_record__free_unpacked(rep, NULL);
    assert_true(revision(&e, "eu", "gs-live") > before);
    Gamefn__V1__ServerRecord *rec = fleet_record(&e, "eu", "gs-live");
    assert_int_equal(rec->state, FREE);
    gamefn__v1__server_record__free_unpacked(rec, NULL);
    assert_false(fleet_player_exists(&e, "p-t-a"));
    assert_false(fleet_player_exists(&e, "p-t-b"));
    beat_expect(&e, "gs-live", (beat_req){.finished = "m-1"}, true, "game over again");
    stack_down(&e, &fleet, &alloc);
}

static void simulated_servers_play_on(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    stack_up(&e, &fleet, &alloc);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 1, 200);
    enum { MATCHES = 4 };
    gf_gamesim_stats st = {0};
    for (int m = 0; m < MATCHES; m++) {
        char match[32], ta[32], tb[32];
        snprintf(match, sizeof match, "m-%d", m);
        snprintf(ta, sizeof ta, "t-%d-a", m);
        snprintf(tb, sizeof tb, "t-%d-b", m);
        int64_t queued = gf_clock_unix_ms() - 5000;
        fleet_claim_ticket(&e, ta, match, queued);
        fleet_claim_ticket(&e, tb, match, queued);
        char *tickets[] = {ta, tb};
        fleet_publish_match(&e, match, tickets, 2, "eu");
        gamefn__v1__ticket_record__free_unpacked(fleet_wait_ticket(&e, ta, ASSIGNED, 15000), NULL);
        for (int waited = 0; waited < 15000; waited += 50) {
            gf_gamesim_stats_get(sim, &st);
            if (st.games_finished > (uint64_t)m && fleet_allocated_to(&e, "eu", 1, NULL) == 0)
                break;
            gf_clock_sleep_ms(50);
        }
        assert_int_equal(st.games_finished, (uint64_t)m + 1);
    }
    /* A few seconds more of heartbeats: still registered once, never swept. */
    gf_clock_sleep_ms(4000);
    gf_gamesim_stats_get(sim, &st);
    print_message("sim: %llu heartbeats, %llu registers, %llu allocations\n",
                  (unsigned long long)st.heartbeats, (unsigned long long)st.registers,
                  (unsigned long long)st.allocations);
    assert_int_equal(st.registers, 1);
    assert_int_equal(st.allocations, MATCHES);
    assert_int_equal(st.allocations_gone, 0);
    assert_int_equal(st.heartbeat_failures, 0);
    assert_int_equal(st.tokens_bad, 0);
    gf_gamesim_stop(sim);
    stack_down(&e, &fleet, &alloc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unchanged_heartbeats_skip_the_write),
        cmocka_unit_test(live_server_stays_allocatable),
        cmocka_unit_test(simulated_servers_play_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
