/*
 * test_alloc_stop.c — SIGTERM stops the allocator promptly, against a real nats-server,
 * with config/gamefn.yaml's timing: runtime.fetch_expiry 5 s, allocation deadline 1.5 s,
 * MATCHES/allocator backoff [5s, 15s, 30s]:
 *   - idle, signalled right after it became ready (its first fetch has just begun):
 *     exit 0 within STOP_BOUND_MS;
 *   - holding a match for which no server is free: it finishes the match as it would
 *     have anyway (ABORTED at its deadline, the tickets back to QUEUED with reason
 *     NO_SERVER, the Match acked), never half assigned, and exits 0 within STOP_BOUND_MS;
 *   - signalled as the match arrives, whether or not a handler has started it yet: the
 *     match is either finished as above or handed back untouched (undecided, tickets
 *     still CLAIMED, the Match still in the stream), and the next allocator finishes it.
 * The bound is a correctness property (a SIGTERM must not hang a deployment), kept
 * generous for a loaded 2-core machine: before the fix an idle fetch was two waits of
 * fetch_expiry each and the fetcher saw the stop only after both (up to 10 s).
 *
 * "Holding a match" means a handler has started it, which the test sees in the
 * allocator's log (the test pause GAMEFN_TEST_ALLOCATOR_PAUSE=fenced:1, a 1 ms stop after
 * the fencing check). The consumer's NumAckPending is not that: it counts the Match once
 * the server has sent it, while it may still sit in the fetch's list or the hand-over
 * queue; a SIGTERM then rightly naks it (endpoint_pull.c, "Shutdown"), which made this
 * test fail about once in 8 runs under load when it waited on NumAckPending.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
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

/* Messages stored in MATCHES (a work queue: acked = removed). */
static uint64_t stored(fleet_env *e)
{
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, e->fn.js, "MATCHES", NULL, NULL), NATS_OK);
    uint64_t n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

static char *tickets[] = {"t-1", "t-2"};

/* Two tickets CLAIMED by m-stop and its Match published; no game server anywhere, so an
 * allocator holds the match until its deadline (1.5 s from now). */
static void publish_stop_match(fleet_env *e)
{
    int64_t queued = gf_clock_unix_ms() - 5000;
    fleet_claim_ticket(e, "t-1", "m-stop", queued);
    fleet_claim_ticket(e, "t-2", "m-stop", queued);
    fleet_publish_match(e, "m-stop", tickets, 2, "eu,us");
}

/* m-stop finished: ABORTED, both tickets back in the pool, the Match acked. */
static void assert_finished(fleet_env *e)
{
    assert_int_equal(fleet_outcome_state(e, "m-stop"), ABORTED);
    for (size_t i = 0; i < 2; i++) {
        Gamefn__V1__TicketRecord *t = fleet_ticket(e, tickets[i]);
        assert_non_null(t);
        assert_int_equal(t->state, QUEUED);
        assert_int_equal(t->reason, GAMEFN__V1__TICKET_REASON__TICKET_REASON_NO_SERVER);
        assert_null(t->claim);
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
    }
    assert_int_equal(held(e), 0);
    assert_int_equal(stored(e), 0);
}

/* m-stop untouched and left for redelivery: undecided, both tickets still CLAIMED by
 * it, the Match still stored. (A nak leaves it in NumAckPending until it is delivered
 * again: 2.9.10 keeps it pending, on the redelivery queue.) */
static void assert_handed_back(fleet_env *e)
{
    assert_int_equal(fleet_outcome_state(e, "m-stop"), 0);
    for (size_t i = 0; i < 2; i++) {
        Gamefn__V1__TicketRecord *t = fleet_ticket(e, tickets[i]);
        assert_non_null(t);
        assert_int_equal(t->state, GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED);
        assert_non_null(t->claim);
        assert_string_equal(t->claim->match_id, "m-stop");
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
    }
    assert_int_equal(stored(e), 1);
}

static void allocator_with_a_match_in_flight_finishes_it_and_stops(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    char *taken_log[] = {"GAMEFN_TEST_ALLOCATOR_PAUSE=fenced:1", NULL};
    fleet_env_start(&e, &production_timing);
    fleet_env_spawn(&e, &fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", taken_log);
    publish_stop_match(&e);
    /* A handler has started the match (see the top of the file), not merely received. */
    if (!fleet_log_has(&alloc, "step=fenced match=m-stop", 5000)) {
        gf_proc_dump_log(&alloc, 30);
        fail_msg("the allocator never took m-stop");
    }
    assert_int_equal(held(&e), 1);
    assert_int_equal(fleet_outcome_state(&e, "m-stop"), 0); /* not decided yet */

    int64_t took = stop_ms(&alloc);
    printf("allocator holding a match stopped in %lld ms\n", (long long)took);
    assert_true(took < STOP_BOUND_MS);
    assert_finished(&e); /* not abandoned */

    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

static void allocator_signalled_as_its_match_arrives_finishes_or_hands_it_back(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0}, next = {0};
    fleet_env_start(&e, &production_timing);
    fleet_env_spawn(&e, &fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
    publish_stop_match(&e);
    /* No wait: the Match may be in a fetch, in the hand-over queue or in a handler. */
    int64_t took = stop_ms(&alloc);
    bool finished = fleet_outcome_state(&e, "m-stop") != 0;
    printf("allocator signalled as its match arrived stopped in %lld ms, the match %s\n",
           (long long)took, finished ? "finished" : "handed back");
    assert_true(took < STOP_BOUND_MS);
    if (finished)
        assert_finished(&e);
    else
        assert_handed_back(&e);

    /* Handed back, the next allocator finishes it (a nak: redelivered at once; were the nak
     * lost, after the ack wait, backoff[0] 5 s). */
    fleet_env_spawn(&e, &next, ALLOCATOR_BIN, "allocator", "a2", NULL);
    for (int64_t until = gf_clock_mono_ms() + 10000; stored(&e) != 0; gf_clock_sleep_ms(50))
        assert_true(gf_clock_mono_ms() < until);
    assert_finished(&e);

    assert_true(gf_fnenv_stop(&next, 15000));
    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_allocator_stops_promptly),
        cmocka_unit_test(allocator_with_a_match_in_flight_finishes_it_and_stops),
        cmocka_unit_test(allocator_signalled_as_its_match_arrives_finishes_or_hands_it_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
