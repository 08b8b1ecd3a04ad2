/*
 * test_alloc_stop.c — SIGTERM stops the allocator promptly, against a real nats-server,
 * with config/gamefn.yaml's timing: runtime.fetch_expiry 5 s, allocation deadline 1.5 s,
 * MATCHES/allocator backoff [5s, 15s, 30s]:
 *   - idle, signalled right after it became ready (its first fetch has just begun):
 *     exit 0 within STOP_BOUND_MS;
 *   - holding a match for which no server is free: it finishes the match as it would
 *     have anyway (ABORTED at its deadline, the tickets back to QUEUED with reason
 *     NO_SERVER, the Match acked), never half assigned, and exits 0 within STOP_BOUND_MS.
 * The bound is a correctness property (a SIGTERM must not hang a deployment), kept
 * generous for a loaded 2-core machine: before the fix an idle fetch was two waits of
 * fetch_expiry each and the fetcher saw the stop only after both (up to 10 s).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "fleet_support.h"
#include "gamefn/clock.h"

#define QUEUED  GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED
#define ABORTED 2

enum { STOP_BOUND_MS = 4000 };

static const fleet_env_opts production_timing = {
    .fetch_expiry = "5s", .deadline = "1500ms", .backoff = "[5s, 15s, 30s]"};

/* SIGTERM, then how long until it exited 0 (fails the test otherwise). */
static int64_t stop_ms(gf_proc *p)
{
    int64_t start = gf_clock_mono_ms();
    assert_true(gf_fnenv_stop(p, 15000));
    return gf_clock_mono_ms() - start;
}

/* Messages of MATCHES/allocator delivered and not acked yet. */
static int64_t held(fleet_env *e)
{
    jsConsumerInfo *ci = NULL;
    int64_t n = -1;
    if (js_GetConsumerInfo(&ci, e->fn.js, "MATCHES", "allocator", NULL, NULL) == NATS_OK)
        n = ci->NumAckPending;
    jsConsumerInfo_Destroy(ci);
    return n;
}

static void idle_allocator_stops_promptly(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc alloc = {0};
    fleet_env_start(&e, &production_timing);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
    int64_t took = stop_ms(&alloc);
    printf("idle allocator stopped in %lld ms\n", (long long)took);
    assert_true(took < STOP_BOUND_MS);
    fleet_env_free(&e);
}

static void allocator_with_a_match_in_flight_finishes_it_and_stops(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    fleet_env_start(&e, &production_timing);
    fleet_env_spawn(&e, &fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
    /* No game server anywhere: the allocator holds the match until its deadline. */
    int64_t queued = gf_clock_unix_ms() - 5000;
    fleet_claim_ticket(&e, "t-1", "m-stop", queued);
    fleet_claim_ticket(&e, "t-2", "m-stop", queued);
    char *tickets[] = {"t-1", "t-2"};
    fleet_publish_match(&e, "m-stop", tickets, 2, "eu,us");
    for (int64_t until = gf_clock_mono_ms() + 5000; held(&e) != 1; gf_clock_sleep_ms(10))
        assert_true(gf_clock_mono_ms() < until);
    assert_int_equal(fleet_outcome_state(&e, "m-stop"), 0); /* not decided yet */

    int64_t took = stop_ms(&alloc);
    printf("allocator holding a match stopped in %lld ms\n", (long long)took);
    assert_true(took < STOP_BOUND_MS);
    /* Finished, not abandoned: decided, both tickets back, the Match acked. */
    assert_int_equal(fleet_outcome_state(&e, "m-stop"), ABORTED);
    for (size_t i = 0; i < 2; i++) {
        Gamefn__V1__TicketRecord *t = fleet_ticket(&e, tickets[i]);
        assert_non_null(t);
        assert_int_equal(t->state, QUEUED);
        assert_int_equal(t->reason, GAMEFN__V1__TICKET_REASON__TICKET_REASON_NO_SERVER);
        assert_null(t->claim);
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
    }
    assert_int_equal(held(&e), 0);
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, e.fn.js, "MATCHES", NULL, NULL), NATS_OK);
    assert_int_equal(si->State.Msgs, 0); /* a work queue: acked = removed */
    jsStreamInfo_Destroy(si);

    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_allocator_stops_promptly),
        cmocka_unit_test(allocator_with_a_match_in_flight_finishes_it_and_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
