/*
 * test_alloc_full.c — the allocator when JetStream has no room for what it writes, on
 * the whole duel service (fleet, allocator, intake, ticker, matcher) with simulated
 * servers. A bucket at its max_bytes (discard new, as every KV bucket) refuses each
 * write with 10077; nothing may be half done meanwhile, and once there is room the
 * match must finish by itself:
 *
 *  - the matches bucket full when the allocator commits: no commit record, so no ticket
 *    may be ASSIGNED; the match is redelivered on the server it took (never a second
 *    one), and assigned once there is room;
 *  - the same for longer than the claims' lease: the match is aborted once there is
 *    room (CLAIM_EXPIRED), its server freed, its tickets matched again and assigned;
 *  - the tickets bucket full after the commit (the allocator held at step `committed`):
 *    COMMITTED, so no ticket may go back to QUEUED; the ASSIGNED writes are retried and
 *    land once there is room.
 *
 * Each ends with every server but the one running the match free, and the independent
 * checker clean.
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
#include "mm_support.h"

#define CLAIMED   GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED
#define COMMITTED 1
#define ABORTED   2

enum { SIMS = 2 };

static const char not_finished[] = "match not finished: a bucket is full; it will be redelivered";

/* The duel service with a `lease` claim lease and the allocator given extra_env (may be
 * NULL), and SIMS simulated servers in eu running every game until the test ends. */
static gf_gamesim *service_start(fleet_env *e, gf_proc p[FLEET_SERVICE_N], const char *lease,
                                 char *const alloc_env[])
{
    char keys[64];
    snprintf(keys, sizeof keys, "    claim_lease: %s\n", lease);
    fleet_duel_service_start(e, p, keys, FLEET_SERVICE_ALLOCATOR);
    fleet_env_spawn(e, &p[FLEET_SERVICE_ALLOCATOR], ALLOCATOR_BIN, "allocator", "a1", alloc_env);
    return fleet_sim_start(e, "eu", SIMS, -1);
}

static void service_stop(fleet_env *e, gf_proc p[FLEET_SERVICE_N], gf_gamesim *sim)
{
    gf_gamesim_stop(sim);
    fleet_service_stop(p);
    fleet_env_free(e);
}

static void bucket_full(fleet_env *e, const char *bucket, bool full)
{
    char stream[64];
    snprintf(stream, sizeof stream, "KV_%s", bucket);
    assert_int_equal(gf_fnenv_stream_full(&e->fn, stream, full), NATS_OK);
}

/* The match both tickets are CLAIMED by now (waited for), into match. */
static void claimed_by(fleet_env *e, char id[2][80], char *match, size_t size)
{
    Gamefn__V1__TicketRecord *t[2];
    for (int i = 0; i < 2; i++)
        t[i] = fleet_wait_ticket(e, id[i], CLAIMED, 10000);
    snprintf(match, size, "%s", t[0]->claim->match_id);
    assert_string_equal(t[1]->claim->match_id, match);
    for (int i = 0; i < 2; i++)
        gamefn__v1__ticket_record__free_unpacked(t[i], NULL);
}

/* Neither ticket is ASSIGNED, and neither is back in the pool: both still CLAIMED by
 * `match`. */
static void both_held(fleet_env *e, char id[2][80], const char *match)
{
    for (int i = 0; i < 2; i++) {
        Gamefn__V1__TicketRecord *t = fleet_ticket(e, id[i]);
        assert_non_null(t);
        if (t->state != CLAIMED)
            fail_msg("ticket %s is in state %d while the bucket is full", id[i], t->state);
        assert_string_equal(t->claim->match_id, match);
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
    }
}

/* Waits (timeout_ms) until exactly one simulated server is allocated, to `match`. */
static void one_server_for(fleet_env *e, const char *match, int timeout_ms)
{
    int64_t end = gf_clock_mono_ms() + timeout_ms;
    while ((fleet_allocated_to(e, "eu", SIMS, NULL) != 1 ||
            fleet_allocated_to(e, "eu", SIMS, match) != 1) &&
           gf_clock_mono_ms() < end)
        gf_clock_sleep_ms(100);
    assert_int_equal(fleet_allocated_to(e, "eu", SIMS, match), 1);
    assert_int_equal(fleet_allocated_to(e, "eu", SIMS, NULL), 1);
}

static void matches_full_at_commit(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N] = {0};
    gf_gamesim *sim = service_start(&e, p, "30s", NULL);
    const gf_proc *alloc = &p[FLEET_SERVICE_ALLOCATOR];

    bucket_full(&e, "matches", true);
    char id[2][80], match[80], assigned[80];
    fleet_create_pair(&e, "ann", "ben", id, NULL);
    claimed_by(&e, id, match, sizeof match);
    /* It took a server, could not commit, and will be redelivered. */
    assert_true(fleet_log_has(alloc, not_finished, 10000));
    assert_int_equal(fleet_outcome_state(&e, match), 0);
    gf_clock_sleep_ms(3000); /* a redelivery or two against the full bucket */
    both_held(&e, id, match);
    assert_int_equal(fleet_outcome_state(&e, match), 0);
    /* The redeliveries reuse the server taken first: never a second one. */
    assert_int_equal(fleet_allocated_to(&e, "eu", SIMS, NULL), 1);
    assert_int_equal(fleet_allocated_to(&e, "eu", SIMS, match), 1);

    bucket_full(&e, "matches", false);
    fleet_both_assigned(&e, id, assigned, sizeof assigned);
    assert_string_equal(assigned, match);
    assert_int_equal(fleet_outcome_state(&e, match), COMMITTED);
    one_server_for(&e, match, 5000);
    mm_check_clean(&e.fn, 0);
    service_stop(&e, p, sim);
}

static void matches_full_past_the_lease(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N] = {0};
    gf_gamesim *sim = service_start(&e, p, "3s", NULL);
    const gf_proc *alloc = &p[FLEET_SERVICE_ALLOCATOR];

    bucket_full(&e, "matches", true);
    char id[2][80], match[80], assigned[80];
    fleet_create_pair(&e, "cat", "dan", id, NULL);
    claimed_by(&e, id, match, sizeof match);
    assert_true(fleet_log_has(alloc, not_finished, 10000));
    /* Past the 3-s lease: nobody can decide the match (an abort needs the bucket too),
     * so the tickets stay CLAIMED by it rather than go back to the pool undecided. */
    gf_clock_sleep_ms(5000);
    both_held(&e, id, match);
    assert_int_equal(fleet_outcome_state(&e, match), 0);

    bucket_full(&e, "matches", false);
    fleet_both_assigned(&e, id, assigned, sizeof assigned);
    /* Aborted once there was room (the allocator's redelivery or a matcher, whichever
     * came first), its server freed, the tickets matched again. */
    assert_int_equal(fleet_outcome_state(&e, match), ABORTED);
    assert_string_not_equal(assigned, match);
    assert_int_equal(fleet_outcome_state(&e, assigned), COMMITTED);
    one_server_for(&e, assigned, 15000);
    mm_check_clean(&e.fn, 0);
    service_stop(&e, p, sim);
}

static void tickets_full_after_commit(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N] = {0};
    char *alloc_env[] = {"GAMEFN_TEST_ALLOCATOR_PAUSE=committed:2000", NULL};
    gf_gamesim *sim = service_start(&e, p, "3s", alloc_env);
    const gf_proc *alloc = &p[FLEET_SERVICE_ALLOCATOR];

    char id[2][80], match[80], assigned[80];
    fleet_create_pair(&e, "eve", "fay", id, NULL);
    claimed_by(&e, id, match, sizeof match);
    /* Held for 2 s right after its commit: fill the tickets bucket meanwhile. */
    assert_true(fleet_log_has(alloc, "paused for a test", 10000));
    assert_int_equal(fleet_outcome_state(&e, match), COMMITTED);
    bucket_full(&e, "tickets", true);
    if (!fleet_log_has(alloc, not_finished, 10000)) {
        gf_proc_dump_log(alloc, 40);
        fail();
    }
    /* Past the 3-s lease too: a matcher finds a COMMITTED record behind the expired
     * claims and may not return them; its ASSIGNED writes fail like the allocator's. */
    gf_clock_sleep_ms(4000);
    both_held(&e, id, match);

    bucket_full(&e, "tickets", false);
    fleet_both_assigned(&e, id, assigned, sizeof assigned);
    assert_string_equal(assigned, match);
    one_server_for(&e, match, 5000);
    mm_check_clean(&e.fn, 0);
    service_stop(&e, p, sim);
}

int main(void)
{
    gf_log_set_level(GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_full_at_commit),
        cmocka_unit_test(matches_full_past_the_lease),
        cmocka_unit_test(tickets_full_after_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
