/*
 * test_mm_forged.c — well-formed Matches on MATCHES that no matcher formed (anyone who
 * may publish on gamefn.v1.match.found.>, or a replay of an old one), against the
 * allocator, the fleet and simulated servers on a real nats-server:
 *   - naming QUEUED tickets, tickets claimed by another match, tickets that do not
 *     exist, and a real match's id with one of its tickets and a foreign one: each is
 *     terminated, nothing is written (no ticket, no commit record, no server), and the
 *     real match is then assigned as if nothing had happened;
 *   - the real match replayed once ASSIGNED (another Nats-Msg-Id), alone and mixed with
 *     a foreign ticket: terminated, no ticket rewritten, no second server, no token;
 *   - with the whole service: a copy of a real Match naming one of its two tickets,
 *     allocated first (it cannot be told from the real one: the claims do not say how
 *     many tickets their match has), commits that ticket alone; the one left out is back
 *     in the pool (MATCH_DROPPED, its queue time kept) once its claim's lease ends, is
 *     matched again, and the checker finds nothing wrong.
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
#include "gamefn/subjects.h"
#include "mm_support.h"

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

/* The Match the matcher stored for `match`, taken off MATCHES before any allocator saw
 * it (so the forged copy is allocated first: the order a forger racing it could win). */
static Gamefn__V1__Match *take_real_match(fleet_env *e, const char *match)
{
    natsMsg *m = NULL;
    assert_int_equal(
        js_GetLastMsg(&m, e->fn.js, "MATCHES", GF_WIRE_SUBJ_MATCH_FOUND ".duel", NULL, NULL),
        NATS_OK);
    Gamefn__V1__Match *real = gamefn__v1__match__unpack(NULL, (size_t)natsMsg_GetDataLength(m),
                                                        (const uint8_t *)natsMsg_GetData(m));
    assert_non_null(real);
    assert_string_equal(real->match_id, match);
    assert_int_equal(js_DeleteMsg(e->fn.js, "MATCHES", natsMsg_GetSequence(m), NULL, NULL),
                     NATS_OK);
    natsMsg_Destroy(m);
    return real;
}

static void create(fleet_env *e, const char *key, const char *player, char *id, size_t size)
{
    mm_ticket t = mm_solo(key, player);
    t.pings = "eu:20,us:90";
    mm_create_new(&e->fn, &t, id, size);
}

/* A real match of two new tickets, and a copy of its Match naming the first team's
 * ticket only, allocated first: that ticket ASSIGNED by the match's COMMITTED record. */
typedef struct subset {
    char match[80], keep[80], left[80];
    Gamefn__V1__TicketRecord *was; /* the left-out ticket as claimed */
} subset;

static void forge_subset(fleet_env *e, gf_proc p[FLEET_SERVICE_N], const char *const players[2],
                         subset *out)
{
    char id[2][80], key[2][32];
    Gamefn__V1__TicketRecord *t[2];
    for (int i = 0; i < 2; i++) {
        snprintf(key[i], sizeof key[i], "k-%s", players[i]);
        create(e, key[i], players[i], id[i], sizeof id[i]);
    }
    for (int i = 0; i < 2; i++)
        t[i] = fleet_wait_ticket(e, id[i], CLAIMED, 10000);
    snprintf(out->match, sizeof out->match, "%s", t[0]->claim->match_id);
    assert_string_equal(t[1]->claim->match_id, out->match);
    Gamefn__V1__Match *real = take_real_match(e, out->match);
    assert_int_equal(real->n_teams, 2);
    int k = strcmp(real->teams[0]->tickets[0]->ticket_id, id[0]) == 0 ? 0 : 1;
    snprintf(out->keep, sizeof out->keep, "%s", id[k]);
    snprintf(out->left, sizeof out->left, "%s", id[1 - k]);
    out->was = t[1 - k];
    gamefn__v1__ticket_record__free_unpacked(t[k], NULL);

    uint8_t buf[8192];
    real->n_teams = 1;
    size_t len = gamefn__v1__match__pack(real, buf);
    real->n_teams = 2;
    gamefn__v1__match__free_unpacked(real, NULL);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = key[0]; /* not the real one's (that id is still in the duplicate window) */
    assert_int_equal(
        js_Publish(NULL, e->fn.js, GF_WIRE_SUBJ_MATCH_FOUND ".duel", buf, (int)len, &po, NULL),
        NATS_OK);
    fleet_service_spawn_one(e, p, FLEET_SERVICE_ALLOCATOR);
    Gamefn__V1__TicketRecord *tk = fleet_wait_ticket(e, out->keep, ASSIGNED, 10000);
    assert_string_equal(tk->assignment->match_id, out->match);
    assert_int_equal(fleet_outcome_state(e, out->match), COMMITTED);
    gamefn__v1__ticket_record__free_unpacked(tk, NULL);
}

static void subset_match_returns_the_rest(void **state)
{
    (void)state;
    /* The duel service with a 3 s claim lease; the allocator starts in forge_subset. */
    static const char at[] = "  matcher:\n";
    const char *cut = strstr(fleet_duel_functions, at) + strlen(at);
    char functions[1024];
    snprintf(functions, sizeof functions, "%.*s    claim_lease: 3s\n%s",
             (int)(cut - fleet_duel_functions), fleet_duel_functions, cut);
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N] = {0};
    fleet_env_opts o = {.functions_extra = functions};
    fleet_env_start(&e, &o);
    for (size_t i = 0; i < FLEET_SERVICE_N; i++)
        if (i != FLEET_SERVICE_ALLOCATOR)
            fleet_service_spawn_one(&e, p, i);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 3, -1);

    /* The one left out is back in the pool within its claim's lease and a tick or two
     * (the matcher finds the record COMMITTED without it), with its queue time ... */
    subset s;
    forge_subset(&e, p, (const char *const[]){"alice", "bob"}, &s);
    int64_t due = s.was->claim->lease_expires_unix_ms + 1000 - gf_clock_unix_ms();
    Gamefn__V1__TicketRecord *tl = fleet_wait_ticket(&e, s.left, QUEUED, due > 0 ? (int)due : 0);
    assert_int_equal(tl->reason, GAMEFN__V1__TICKET_REASON__TICKET_REASON_MATCH_DROPPED);
    assert_int_equal(tl->queued_unix_ms, s.was->queued_unix_ms);
    assert_int_equal(tl->returns, s.was->returns + 1);
    gamefn__v1__ticket_record__free_unpacked(tl, NULL);
    gamefn__v1__ticket_record__free_unpacked(s.was, NULL);

    /* ... and matched again, with a new player, on another server. */
    char c[80];
    create(&e, "k-carol", "carol", c, sizeof c);
    Gamefn__V1__TicketRecord *t2 = fleet_wait_ticket(&e, s.left, ASSIGNED, 10000);
    Gamefn__V1__TicketRecord *tc = fleet_wait_ticket(&e, c, ASSIGNED, 10000);
    Gamefn__V1__TicketRecord *tk = fleet_ticket(&e, s.keep);
    assert_string_equal(t2->assignment->match_id, tc->assignment->match_id);
    assert_string_not_equal(t2->assignment->match_id, s.match);
    assert_string_not_equal(t2->assignment->server_id, tk->assignment->server_id);
    gamefn__v1__ticket_record__free_unpacked(t2, NULL);
    gamefn__v1__ticket_record__free_unpacked(tc, NULL);
    gamefn__v1__ticket_record__free_unpacked(tk, NULL);

    /* A cancel of the one left out, before its lease ends, cancels it (the COMMITTED
     * record does not hold it) instead of calling it ASSIGNED. */
    assert_true(gf_fnenv_stop(&p[FLEET_SERVICE_ALLOCATOR], 15000));
    forge_subset(&e, p, (const char *const[]){"dave", "erin"}, &s);
    Gamefn__V1__TicketStatus *st = NULL;
    assert_int_equal(mm_cancel(&e.fn, s.left, &st), 0);
    assert_int_equal(st->state, GAMEFN__V1__TICKET_STATE__TICKET_STATE_CANCELLED);
    protobuf_c_message_free_unpacked(&st->base, NULL);
    assert_false(fleet_player_exists(&e, s.was->members[0]->player_id));
    gamefn__v1__ticket_record__free_unpacked(s.was, NULL);
    mm_check_clean(&e.fn, 0);

    gf_gamesim_stop(sim);
    fleet_service_stop(p);
    fleet_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forged_matches_change_nothing),
        cmocka_unit_test(subset_match_returns_the_rest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
