/*
 * test_mm_forged.c — well-formed Matches on MATCHES that no matcher formed (anyone who
 * may publish on gamefn.v1.match.found.>, or a replay of an old one), against the
 * allocator, the fleet and simulated servers on a real nats-server:
 *   - naming QUEUED tickets, tickets claimed by another match, tickets that do not
 *     exist, and a real match's id with one of its tickets and a foreign one: each is
 *     terminated, nothing is written (no ticket, no commit record, no server), and the
 *     real match is then assigned as if nothing had happened;
 *   - the real match replayed once ASSIGNED (another Nats-Msg-Id), alone and mixed with
 *     a foreign ticket: terminated, no ticket rewritten, no second server, no token.
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
#include "gamefn/subjects.h"

#define QUEUED    GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED
#define CLAIMED   GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED
#define ASSIGNED  GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED
#define COMMITTED 1

enum { N_WATCHED = 3 };
static const char *const watched[N_WATCHED] = {"t-q1", "t-r1", "t-r2"};

/* The servers allocated to `match` (NULL: to any match). */
static int allocated_to(fleet_env *e, const char *match)
{
    int n = 0;
    for (int k = 1; k <= 2; k++) {
        char id[16];
        snprintf(id, sizeof id, "sim-eu-%d", k);
        Gamefn__V1__ServerRecord *r = fleet_record(e, "eu", id);
        assert_non_null(r);
        bool taken = r->allocated_match_id && r->allocated_match_id[0];
        n += taken && (!match || strcmp(r->allocated_match_id, match) == 0);
        gamefn__v1__server_record__free_unpacked(r, NULL);
    }
    return n;
}

/* Publishes a forged Match and waits until the allocator refused it: terminated, the
 * reason logged, and not one write to tickets or matches. */
static void refused(fleet_env *e, const gf_proc *alloc, const char *match, const char *msg_id,
                    char *const *tickets, size_t n, const char *why)
{
    uint64_t revs[N_WATCHED];
    for (size_t i = 0; i < N_WATCHED; i++)
        revs[i] = fleet_ticket_revision(e, watched[i]);
    int outcome = fleet_outcome_state(e, match);
    char want[160];
    snprintf(want, sizeof want, "%s\" match=%s ", why, match);
    size_t before = fleet_log_count(alloc, want);
    fleet_publish_match_as(e, match, msg_id, tickets, n, "eu", gf_clock_unix_ms());
    for (int waited = 0; fleet_log_count(alloc, want) == before; waited += 50) {
        if (waited > 10000) {
            gf_proc_dump_log(alloc, 20);
            fail_msg("no \"%s\" in the allocator's log", want);
        }
        gf_clock_sleep_ms(50);
    }
    fleet_wait_matches_drained(e, 5000);
    for (size_t i = 0; i < N_WATCHED; i++)
        assert_int_equal(fleet_ticket_revision(e, watched[i]), revs[i]);
    assert_null(fleet_ticket(e, "t-none"));
    assert_int_equal(fleet_outcome_state(e, match), outcome);
}

static void forged_matches_change_nothing(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    fleet_env_start(&e, NULL);
    fleet_env_spawn(&e, &fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 2, -1);
    int64_t queued = gf_clock_unix_ms() - 3000;
    fleet_queue_ticket(&e, "t-q1", queued);
    fleet_claim_ticket(&e, "t-r1", "m-real", queued); /* the real match, not published yet */
    fleet_claim_ticket(&e, "t-r2", "m-real", queued);
    static const char not_claimed[] = "match refused: its tickets are not claimed by it";

    char *queued_ids[] = {"t-q1"};
    refused(&e, &alloc, "m-f-queued", "f1", queued_ids, 1, not_claimed);
    char *others[] = {"t-r1", "t-r2"}; /* claimed by m-real */
    refused(&e, &alloc, "m-f-other", "f2", others, 2, not_claimed);
    char *absent[] = {"t-none", "t-q1"};
    refused(&e, &alloc, "m-f-absent", "f3", absent, 2, not_claimed);
    /* The real match's id, one of its tickets and a foreign one: aborting it would let
     * any publisher kill a real match. */
    char *mixed[] = {"t-r1", "t-q1"};
    refused(&e, &alloc, "m-real", "f4", mixed, 2, not_claimed);
    assert_int_equal(allocated_to(&e, NULL), 0);
    Gamefn__V1__TicketRecord *t = fleet_ticket(&e, "t-r1");
    assert_int_equal(t->state, CLAIMED);
    gamefn__v1__ticket_record__free_unpacked(t, NULL);

    /* The real match is untouched: assigned on one server. */
    fleet_publish_match(&e, "m-real", others, 2, "eu");
    Gamefn__V1__TicketRecord *a = fleet_wait_ticket(&e, "t-r1", ASSIGNED, 10000);
    Gamefn__V1__TicketRecord *b = fleet_wait_ticket(&e, "t-r2", ASSIGNED, 10000);
    assert_string_equal(a->assignment->server_id, b->assignment->server_id);
    assert_int_equal(fleet_outcome_state(&e, "m-real"), COMMITTED);
    fleet_wait_matches_drained(&e, 5000);
    assert_int_equal(allocated_to(&e, "m-real"), 1);
    assert_int_equal(allocated_to(&e, NULL), 1);

    /* Replays of the assigned match (past the duplicate window: another Msg-Id), alone
     * and mixed with a foreign ticket: no ticket rewritten (no new token), no server. */
    static const char replay[] = "match refused: committed already (a replay)";
    refused(&e, &alloc, "m-real", "r1", others, 2, replay);
    char *replay_mixed[] = {"t-r2", "t-q1"};
    refused(&e, &alloc, "m-real", "r2", replay_mixed, 2, replay);
    assert_int_equal(allocated_to(&e, "m-real"), 1);
    assert_int_equal(allocated_to(&e, NULL), 1);
    Gamefn__V1__TicketRecord *q = fleet_ticket(&e, "t-q1");
    assert_int_equal(q->state, QUEUED);
    assert_null(q->assignment);
    gamefn__v1__ticket_record__free_unpacked(q, NULL);
    gamefn__v1__ticket_record__free_unpacked(a, NULL);
    gamefn__v1__ticket_record__free_unpacked(b, NULL);

    gf_gamesim_stop(sim);
    assert_true(gf_fnenv_stop(&alloc, 15000));
    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forged_matches_change_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
