/*
 * test_allocator.c — the allocator with the fleet and simulated game servers against a
 * real nats-server. Matches are fed the way the matcher writes them (CLAIMED tickets,
 * players records, a Match on MATCHES):
 *   - a match is assigned end to end; the game server verifies every token, plays,
 *     reports game over, becomes FREE, and the players are released;
 *   - the best datacenter has no free server: the next one is used;
 *   - no server anywhere: the tickets go back to QUEUED with their queue time, reason
 *     NO_SERVER, and the match is ABORTED; a Match whose claims' lease is over when it is
 *     picked up is aborted (CLAIM_EXPIRED) without waiting for a server;
 *   - a stale server (no heartbeat, not swept yet) is never allocated;
 *   - a server dies mid-match: it is removed and its players released;
 *   - SIGKILL of the allocator at every step, or a pause there past the redelivery
 *     (then going on with what it held while another allocator settled the match): the
 *     match ends completed or returned, never half assigned, and no second server is
 *     taken; killed after taking a server
 *     that then leaves, the match is aborted by the fleet and returned;
 *   - a game over for the allocation while the allocator holds the server uncommitted:
 *     the fleet aborts the match before it frees the server, and the allocator, going on,
 *     returns the tickets (reports naming no match or another one change nothing);
 *   - nats-server restarts: the fleet mirror is re-read and allocation goes on;
 *   - malformed Matches are terminated and change nothing.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>
#include <sys/wait.h>

#include "fleet_support.h"
#include "gamefn/clock.h"
#include "gamefn/join_key.h"
#include "gamefn/join_token.h"
#include "gamefn/subjects.h"
#include "gamesim.h"

#define QUEUED    GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED
#define ASSIGNED  GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED
#define COMMITTED 1
#define ABORTED   2

/* The fleet function and one allocator on a fresh server. */
static void stack_up(fleet_env *e, gf_proc *fleet, gf_proc *alloc)
{
    fleet_env_start(e, NULL);
    fleet_env_spawn(e, fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(e, alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
}

/* Stops what stack_up started (each must exit 0) and the simulator. */
static void stack_down(fleet_env *e, gf_gamesim *sim, gf_proc *alloc, gf_proc *fleet)
{
    gf_gamesim_stop(sim);
    assert_true(gf_fnenv_stop(alloc, 15000));
    assert_true(gf_fnenv_stop(fleet, 15000));
    fleet_env_free(e);
}

/* gamefn verify-token --keys --token HEX --server sim-eu-1 --player P: its exit code. */
static int run_cli(fleet_env *e, char *hex, char *player)
{
    char bin[512], log[400];
    gf_fnenv_binary("tools/gamefn", bin, sizeof bin);
    snprintf(log, sizeof log, "%s/verify-token.log", e->fn.dir);
    char *argv[] = {bin, "--config", e->fn.config_path, "verify-token", "--keys", "--token",
                    hex, "--server", "sim-eu-1",        "--player",     player,   NULL};
    gf_proc p = {0};
    assert_int_equal(gf_proc_spawn(&p, argv, NULL, log), 0);
    assert_int_equal(gf_proc_wait(&p, 10000), 0);
    return WIFEXITED(p.exit_status) ? WEXITSTATUS(p.exit_status) : -1;
}

static void assigned_end_to_end(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    stack_up(&e, &fleet, &alloc);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 1, 500);

    int64_t queued = gf_clock_unix_ms() - 30000;
    fleet_claim_ticket(&e, "t-a", "m-1", queued);
    fleet_claim_ticket(&e, "t-b", "m-1", queued);
    natsSubscription *status = NULL;
    assert_int_equal(
        natsConnection_SubscribeSync(&status, e.fn.nc, GF_WIRE_SUBJ_TICKET_STATUS ".t-a"), NATS_OK);
    char *tickets[] = {"t-a", "t-b"};
    fleet_publish_match(&e, "m-1", tickets, 2, "eu");

    Gamefn__V1__TicketRecord *a = fleet_wait_ticket(&e, "t-a", ASSIGNED, 10000);
    Gamefn__V1__TicketRecord *b = fleet_wait_ticket(&e, "t-b", ASSIGNED, 10000);
    assert_int_equal(fleet_outcome_state(&e, "m-1"), COMMITTED);
    assert_string_equal(a->assignment->server_id, "sim-eu-1");
    assert_string_equal(a->assignment->server_id, b->assignment->server_id);
    assert_int_equal(a->assignment->n_tokens, 1);
    assert_int_equal(a->assignment->team, 0);
    assert_int_equal(b->assignment->team, 1);
    assert_int_equal(a->queued_unix_ms, queued);
    /* The token verifies with the fleet's key, for this server and player only. */
    gf_join_key key = {.key_id = "test"};
    memcpy(key.pk, e.pk, 32);
    const Gamefn__V1__JoinToken *tok = a->assignment->tokens[0];
    assert_int_equal(gf_join_token_verify_keys(tok->token.data, tok->token.len, &key, 1,
                                               gf_clock_unix_ms(), 5000, "sim-eu-1", "p-t-a", NULL,
                                               NULL),
                     GF_OK);
    assert_int_equal(gf_join_token_verify_keys(tok->token.data, tok->token.len, &key, 1,
                                               gf_clock_unix_ms(), 5000, "sim-eu-1", "p-t-b", NULL,
                                               NULL),
                     GF_ERR_CONFLICT);
    /* `gamefn verify-token --keys` (the operator's check, keys from the fleet) agrees. */
    char hexbuf[2 * 1100 + 1];
    sodium_bin2hex(hexbuf, sizeof hexbuf, tok->token.data, tok->token.len);
    assert_int_equal(run_cli(&e, hexbuf, "p-t-a"), 0);
    assert_int_equal(run_cli(&e, hexbuf, "p-t-b"), 1);

    /* The owner was told on the status subject. */
    natsMsg *m = NULL;
    bool told = false;
    while (!told && natsSubscription_NextMsg(&m, status, 2000) == NATS_OK) {
        Gamefn__V1__TicketStatus *s = gamefn__v1__ticket_status__unpack(
            NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
        told = s && s->state == ASSIGNED && s->assignment;
        gamefn__v1__ticket_status__free_unpacked(s, NULL);
        natsMsg_Destroy(m);
    }
    assert_true(told);

    /* The simulated server verified both tokens, played 0.5 s, reported game over: it is
     * FREE again and the players may queue again. */
    gf_gamesim_stats st;
    for (int waited = 0;; waited += 100) {
        gf_gamesim_stats_get(sim, &st);
        if (st.games_finished == 1 || waited > 10000)
            break;
        gf_clock_sleep_ms(100);
    }
    assert_int_equal(st.games_finished, 1);
    assert_int_equal(st.tokens_ok, 2);
    assert_int_equal(st.tokens_bad, 0);
    for (int waited = 0; fleet_player_exists(&e, "p-t-a") && waited < 5000; waited += 50)
        gf_clock_sleep_ms(50);
    assert_false(fleet_player_exists(&e, "p-t-a"));
    assert_false(fleet_player_exists(&e, "p-t-b"));
    Gamefn__V1__ServerRecord *srv = fleet_record(&e, "eu", "sim-eu-1");
    assert_int_equal(srv->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    gamefn__v1__server_record__free_unpacked(srv, NULL);

    /* A token presented twice, or to the wrong server, is refused by the game server. */
    assert_int_equal(gf_gamesim_join(sim, "sim-eu-1", "p-t-a", tok->token.data, tok->token.len),
                     GF_ERR_NOT_FOUND); /* the match is over */

    gamefn__v1__ticket_record__free_unpacked(a, NULL);
    gamefn__v1__ticket_record__free_unpacked(b, NULL);
    natsSubscription_Destroy(status);
    stack_down(&e, sim, &alloc, &fleet);
}

static void datacenter_fallback_and_no_server(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    stack_up(&e, &fleet, &alloc);
    /* Only us has a server; the match prefers eu. */
    gf_gamesim *sim = fleet_sim_start(&e, "us", 1, -1);
    int64_t queued = gf_clock_unix_ms() - 5000;
    fleet_claim_ticket(&e, "t-1", "m-fb", queued);
    fleet_claim_ticket(&e, "t-2", "m-fb", queued);
    char *t12[] = {"t-1", "t-2"};
    fleet_publish_match(&e, "m-fb", t12, 2, "eu,us");
    Gamefn__V1__TicketRecord *t = fleet_wait_ticket(&e, "t-1", ASSIGNED, 10000);
    assert_string_equal(t->assignment->datacenter, "us");
    assert_string_equal(t->assignment->server_id, "sim-us-1");
    gamefn__v1__ticket_record__free_unpacked(t, NULL);

    /* The only server now runs m-fb forever: the next match finds none within the
     * 500 ms deadline and its tickets go back with their queue time. */
    fleet_claim_ticket(&e, "t-3", "m-none", queued);
    fleet_claim_ticket(&e, "t-4", "m-none", queued);
    char *t34[] = {"t-3", "t-4"};
    int64_t start = gf_clock_mono_ms();
    fleet_publish_match(&e, "m-none", t34, 2, "eu,us");
    t = fleet_wait_ticket(&e, "t-3", QUEUED, 10000);
    int64_t took = gf_clock_mono_ms() - start;
    assert_int_equal(t->reason, GAMEFN__V1__TICKET_REASON__TICKET_REASON_NO_SERVER);
    assert_int_equal(t->queued_unix_ms, queued);
    assert_int_equal(t->returns, 1);
    assert_null(t->claim);
    assert_true(took >= 400); /* it waited for the deadline */
    gamefn__v1__ticket_record__free_unpacked(t, NULL);
    t = fleet_wait_ticket(&e, "t-4", QUEUED, 5000);
    gamefn__v1__ticket_record__free_unpacked(t, NULL);
    assert_int_equal(fleet_outcome_state(&e, "m-none"), ABORTED);
    /* A returned ticket keeps its players record: it is still the player's ticket. */
    assert_true(fleet_player_exists(&e, "p-t-3"));

    /* A Match picked up after its claims' lease (from a backlog) is not started: aborted
     * CLAIM_EXPIRED, as a matcher would, without waiting for a server. */
    fleet_claim_ticket(&e, "t-5", "m-late", queued);
    fleet_claim_ticket(&e, "t-6", "m-late", queued);
    char *t56[] = {"t-5", "t-6"};
    start = gf_clock_mono_ms();
    fleet_publish_match_at(&e, "m-late", t56, 2, "eu,us", gf_clock_unix_ms() - 61000);
    t = fleet_wait_ticket(&e, "t-5", QUEUED, 10000);
    assert_int_equal(t->reason, GAMEFN__V1__TICKET_REASON__TICKET_REASON_CLAIM_EXPIRED);
    assert_int_equal(t->queued_unix_ms, queued);
    assert_true(gf_clock_mono_ms() - start < 400); /* no wait for a server */
    gamefn__v1__ticket_record__free_unpacked(t, NULL);
    t = fleet_wait_ticket(&e, "t-6", QUEUED, 5000);
    gamefn__v1__ticket_record__free_unpacked(t, NULL);
    assert_int_equal(fleet_outcome_state(&e, "m-late"), ABORTED);

    stack_down(&e, sim, &alloc, &fleet);
}

static void stale_server_never_allocated_and_dead_server_released(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    fleet_env_start(&e, NULL);
    fleet_env_spawn(&e, &fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_register(&e, "eu", "gs-stale");
    /* No sweep while the fleet is down: the record stays, stale after 1.5 s. */
    assert_true(gf_fnenv_stop(&fleet, 15000));
    gf_clock_sleep_ms(1700);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
    fleet_claim_ticket(&e, "t-s1", "m-stale", gf_clock_unix_ms());
    char *ts[] = {"t-s1"};
    fleet_publish_match(&e, "m-stale", ts, 1, "eu");
    Gamefn__V1__TicketRecord *t = fleet_wait_ticket(&e, "t-s1", QUEUED, 10000);
    assert_int_equal(t->reason, GAMEFN__V1__TICKET_REASON__TICKET_REASON_NO_SERVER);
    gamefn__v1__ticket_record__free_unpacked(t, NULL);
    Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", "gs-stale");
    assert_int_equal(r->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    gamefn__v1__server_record__free_unpacked(r, NULL);

    /* The fleet is back: the stale record is swept. A simulated server takes a match
     * and dies mid-game: it is removed and its players released. */
    gf_proc fleet2 = {0};
    fleet_env_spawn(&e, &fleet2, FLEET_BIN, "fleet", "f2", NULL);
    for (int waited = 0; (r = fleet_record(&e, "eu", "gs-stale")) && waited < 5000; waited += 50) {
        gamefn__v1__server_record__free_unpacked(r, NULL);
        gf_clock_sleep_ms(50);
    }
    assert_null(r);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 1, -1);
    fleet_claim_ticket(&e, "t-d1", "m-dies", gf_clock_unix_ms());
    char *td[] = {"t-d1"};
    fleet_publish_match(&e, "m-dies", td, 1, "eu");
    t = fleet_wait_ticket(&e, "t-d1", ASSIGNED, 10000);
    gamefn__v1__ticket_record__free_unpacked(t, NULL);
    assert_true(fleet_player_exists(&e, "p-t-d1"));
    assert_int_equal(gf_gamesim_kill(sim, "sim-eu-1"), GF_OK);
    for (int waited = 0; fleet_count(&e) > 0 && waited < 6000; waited += 50)
        gf_clock_sleep_ms(50);
    assert_int_equal(fleet_count(&e), 0);
    for (int waited = 0; fleet_player_exists(&e, "p-t-d1") && waited < 3000; waited += 50)
        gf_clock_sleep_ms(50);
    assert_false(fleet_player_exists(&e, "p-t-d1"));
    assert_int_equal(fleet_outcome_state(&e, "m-dies"), COMMITTED);

    gf_gamesim_stop(sim);
    assert_true(gf_fnenv_stop(&alloc, 15000));
    assert_true(gf_fnenv_stop(&fleet2, 15000));
    fleet_env_free(&e);
}

/* An allocator stopped at `step` of a match — SIGKILLed, or the whole process stopped
 * (SIGSTOP, its keeper thread too: no in-progress, so after the ack wait the Match is
 * redelivered) for PAUSE_MS and then going on with what it held — while another allocator
 * settles the match: it ends completed (every ticket ASSIGNED on one server, COMMITTED)
 * or returned (every ticket QUEUED, ABORTED, server FREE) — never mixed, and never on a
 * second server. */
enum { PAUSE_MS = 5000, STEP_MS = 1000 };

/* Matches instance <who>-<step> took from MATCHES ($SRV STATS num_requests), or -1. */
static long matches_handled(fleet_env *e, const char *who, size_t step)
{
    char subject[96];
    snprintf(subject, sizeof subject, "$SRV.STATS.allocator.%s-%zu", who, step);
    natsMsg *reply = NULL;
    if (natsConnection_RequestString(&reply, e->fn.nc, subject, "", 2000) != NATS_OK)
        return -1;
    const char *at = strstr(natsMsg_GetData(reply), "\"num_requests\":");
    long n = at ? strtol(at + strlen("\"num_requests\":"), NULL, 10) : -1;
    natsMsg_Destroy(reply);
    return n;
}

static void stopped_at_every_step(bool paused)
{
    static const char *steps[] = {"fenced", "server", "committed", "assigning", "assigned"};
    fleet_env e;
    gf_proc fleet = {0};
    fleet_env_start(&e, NULL);
    fleet_env_spawn(&e, &fleet, FLEET_BIN, "fleet", "f1", NULL);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 2, -1);
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        char match[32], ta[32], tb[32], env_pause[64], inst[32];
        snprintf(match, sizeof match, "m-kill-%zu", s);
        snprintf(ta, sizeof ta, "t-k%zu-a", s);
        snprintf(tb, sizeof tb, "t-k%zu-b", s);
        if (paused)
            snprintf(env_pause, sizeof env_pause, "GAMEFN_TEST_ALLOCATOR_PAUSE=%s:%d", steps[s],
                     STEP_MS); /* long enough to be stopped there */
        else
            snprintf(env_pause, sizeof env_pause, "GAMEFN_TEST_ALLOCATOR_PAUSE=%s", steps[s]);
        snprintf(inst, sizeof inst, "victim-%zu", s);
        char *extra[] = {env_pause, NULL};
        gf_proc victim = {0}, rescuer = {0};
        fleet_env_spawn(&e, &victim, ALLOCATOR_BIN, "allocator", inst, extra);
        int64_t queued = gf_clock_unix_ms() - 1000;
        fleet_claim_ticket(&e, ta, match, queued);
        fleet_claim_ticket(&e, tb, match, queued);
        char *tickets[] = {ta, tb};
        fleet_publish_match(&e, match, tickets, 2, "eu");
        char want[64];
        snprintf(want, sizeof want, "step=%s match=%s", steps[s], match);
        if (!fleet_log_has(&victim, want, 10000)) {
            gf_proc_dump_log(&victim, 30);
            fail_msg("allocator never reached step %s", steps[s]);
        }
        if (paused) {
            assert_true(gf_proc_pid_stop(victim.pid, 5000));
        } else {
            gf_proc_signal(&victim, SIGKILL);
            gf_proc_wait(&victim, 5000);
        }

        snprintf(inst, sizeof inst, "rescuer-%zu", s);
        fleet_env_spawn(&e, &rescuer, ALLOCATOR_BIN, "allocator", inst, NULL);
        if (paused) { /* judge what both did: the rescuer meanwhile, the victim once woken */
            gf_clock_sleep_ms(PAUSE_MS);
            gf_proc_signal(&victim, SIGCONT);
            gf_clock_sleep_ms(STEP_MS + 2000);
        }
        /* The redelivery (ack wait 2 s) settles it one way or the other. */
        int outcome = 0;
        Gamefn__V1__TicketRecord *a = NULL, *b = NULL;
        for (int waited = 0; waited < 20000; waited += 100) {
            gamefn__v1__ticket_record__free_unpacked(a, NULL);
            gamefn__v1__ticket_record__free_unpacked(b, NULL);
            a = fleet_ticket(&e, ta);
            b = fleet_ticket(&e, tb);
            outcome = fleet_outcome_state(&e, match);
            bool settled = a->state == b->state && (a->state == ASSIGNED || a->state == QUEUED);
            if (outcome && settled)
                break;
            gf_clock_sleep_ms(100);
        }
        if (outcome == COMMITTED) {
            assert_int_equal(a->state, ASSIGNED);
            assert_int_equal(b->state, ASSIGNED);
            assert_string_equal(a->assignment->server_id, b->assignment->server_id);
            Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", a->assignment->server_id);
            assert_string_equal(r->allocated_match_id, match);
            gamefn__v1__server_record__free_unpacked(r, NULL);
        } else {
            assert_int_equal(outcome, ABORTED);
            assert_int_equal(a->state, QUEUED);
            assert_int_equal(b->state, QUEUED);
            assert_int_equal(a->queued_unix_ms, queued);
        }
        /* Steps from the commit on can only complete. */
        if (s >= 2)
            assert_int_equal(outcome, COMMITTED);
        /* Never a second server for one match. */
        size_t allocated = 0;
        for (int k = 1; k <= 2; k++) {
            char id[16];
            snprintf(id, sizeof id, "sim-eu-%d", k);
            Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", id);
            allocated += r && strcmp(r->allocated_match_id, match) == 0;
            gamefn__v1__server_record__free_unpacked(r, NULL);
        }
        assert_int_equal(allocated, outcome == COMMITTED ? 1 : 0);
        fprintf(stderr, "%s at %-9s -> %s\n", paused ? "paused" : "killed", steps[s],
                outcome == COMMITTED ? "completed" : "returned");
        gamefn__v1__ticket_record__free_unpacked(a, NULL);
        gamefn__v1__ticket_record__free_unpacked(b, NULL);
        if (paused) { /* the Match was handled twice: the pause outlasted its ack wait */
            long handled = matches_handled(&e, "rescuer", s) + matches_handled(&e, "victim", s);
            assert_true(handled >= 2);
        }
        assert_true(gf_fnenv_stop(&rescuer, 15000));
        if (paused)
            assert_true(gf_fnenv_stop(&victim, 15000));
        /* Free the server again for the next step (its game "ends"). */
        if (outcome == COMMITTED) {
            for (int k = 1; k <= 2; k++) {
                char id[16];
                snprintf(id, sizeof id, "sim-eu-%d", k);
                Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", id);
                if (r && strcmp(r->allocated_match_id, match) == 0)
                    assert_int_equal(fleet_heartbeat(&e, "eu", id, match), GF_OK);
                gamefn__v1__server_record__free_unpacked(r, NULL);
            }
        }
    }
    gf_gamesim_stop(sim);
    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

static void sigkill_at_every_step(void **state)
{
    (void)state;
    stopped_at_every_step(false);
}

static void paused_past_redelivery_at_every_step(void **state)
{
    (void)state;
    stopped_at_every_step(true);
}

/* The fleet with one server registered by hand, and an allocator armed with
 * GAMEFN_TEST_ALLOCATOR_PAUSE=<pause> that took that server for `match` (two CLAIMED
 * tickets) and is paused there. Returns the tickets' queue time. */
static int64_t held_at_server(fleet_env *e, const fleet_env_opts *o, gf_proc *fleet, gf_proc *alloc,
                              const char *pause, const char *server, const char *match,
                              char *const tickets[2])
{
    char env[96], logged[128];
    snprintf(env, sizeof env, "GAMEFN_TEST_ALLOCATOR_PAUSE=%s", pause);
    char *extra[] = {env, NULL};
    fleet_env_start(e, o);
    fleet_env_spawn(e, fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_register(e, "eu", server);
    fleet_env_spawn(e, alloc, ALLOCATOR_BIN, "allocator", "a1", extra);
    int64_t queued = gf_clock_unix_ms() - 2000;
    for (int i = 0; i < 2; i++)
        fleet_claim_ticket(e, tickets[i], match, queued);
    fleet_publish_match(e, match, tickets, 2, "eu");
    snprintf(logged, sizeof logged, "step=server match=%s", match);
    assert_true(fleet_log_has(alloc, logged, 10000));
    return queued;
}

/* SIGKILL after the server was taken, then that server leaves before anyone committed:
 * the fleet aborts the match, and the redelivery returns the tickets. */
static void sigkill_then_server_lost_returns_the_match(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, victim = {0}, rescuer = {0};
    char *tickets[] = {"t-l1", "t-l2"};
    int64_t queued =
        held_at_server(&e, NULL, &fleet, &victim, "server", "gs-lost", "m-lost", tickets);
    gf_proc_signal(&victim, SIGKILL);
    gf_proc_wait(&victim, 5000);
    Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", "gs-lost");
    assert_string_equal(r->allocated_match_id, "m-lost");
    gamefn__v1__server_record__free_unpacked(r, NULL);

    Gamefn__V1__DeregisterServerRequest d = GAMEFN__V1__DEREGISTER_SERVER_REQUEST__INIT;
    d.server_id = "gs-lost";
    d.datacenter = "eu";
    d.reason = GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_HIBERNATE;
    int code = 0;
    assert_int_equal(
        fleet_call(&e, GF_WIRE_SUBJ_FLEET_DEREGISTER, &d.base, NULL, NULL, &code, NULL, 0),
        GF_ERR_PERMANENT); /* allocated: it may not hibernate */
    assert_int_equal(code, 7);
    d.reason = GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_SHUTDOWN;
    assert_int_equal(
        fleet_call(&e, GF_WIRE_SUBJ_FLEET_DEREGISTER, &d.base, NULL, NULL, NULL, NULL, 0), GF_OK);
    assert_int_equal(fleet_outcome_state(&e, "m-lost"), ABORTED);

    fleet_env_spawn(&e, &rescuer, ALLOCATOR_BIN, "allocator", "rescuer", NULL);
    Gamefn__V1__TicketRecord *a = fleet_wait_ticket(&e, "t-l1", QUEUED, 15000);
    Gamefn__V1__TicketRecord *b = fleet_wait_ticket(&e, "t-l2", QUEUED, 5000);
    assert_int_equal(a->reason, GAMEFN__V1__TICKET_REASON__TICKET_REASON_NO_SERVER);
    assert_int_equal(a->queued_unix_ms, queued);
    assert_int_equal(b->queued_unix_ms, queued);
    assert_true(fleet_player_exists(&e, "p-t-l1")); /* still the players' tickets */
    gamefn__v1__ticket_record__free_unpacked(a, NULL);
    gamefn__v1__ticket_record__free_unpacked(b, NULL);
    assert_true(gf_fnenv_stop(&rescuer, 15000));
    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

static void server_is(fleet_env *e, const char *id, int state, const char *match)
{
    Gamefn__V1__ServerRecord *r = fleet_record(e, "eu", id);
    assert_int_equal(r->state, state);
    assert_string_equal(r->allocated_match_id, match);
    gamefn__v1__server_record__free_unpacked(r, NULL);
}

/* The allocator paused (2.5 s, then on) after taking the server, before the commit: a
 * game over for that allocation must not free a server the match may be committed on. */
static void game_over_before_commit_aborts_first(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    fleet_env_opts o = {.heartbeat = "2s", .backoff = "[10s, 10s, 10s]"}; /* outlast the pause */
    char *tickets[] = {"t-g1", "t-g2"};
    int64_t queued = held_at_server(&e, &o, &fleet, &alloc, "server:2500", "gs-g", "m-g", tickets);

    /* Reports naming no match or another one change nothing. */
    assert_int_equal(fleet_heartbeat(&e, "eu", "gs-g", NULL), GF_OK);
    assert_int_equal(fleet_heartbeat(&e, "eu", "gs-g", "m-other"), GF_OK);
    server_is(&e, "gs-g", GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED, "m-g");
    assert_int_equal(fleet_outcome_state(&e, "m-g"), 0);
    /* A game over for the allocation itself: ABORTED first (the server does not run it),
     * then FREE; the players keep their records (their tickets go back to the pool). */
    assert_int_equal(fleet_heartbeat(&e, "eu", "gs-g", "m-g"), GF_OK);
    assert_int_equal(fleet_outcome_state(&e, "m-g"), ABORTED);
    server_is(&e, "gs-g", GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, "");
    assert_true(fleet_player_exists(&e, "p-t-g1"));

    /* The allocator goes on: its commit finds ABORTED, the tickets return; the server
     * stays FREE, with nothing committed on it. */
    assert_true(fleet_log_has(&alloc, "test pause over", 10000));
    for (int i = 0; i < 2; i++) {
        Gamefn__V1__TicketRecord *t = fleet_wait_ticket(&e, tickets[i], QUEUED, 10000);
        assert_int_equal(t->reason, GAMEFN__V1__TICKET_REASON__TICKET_REASON_NO_SERVER);
        assert_int_equal(t->queued_unix_ms, queued);
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
    }
    fleet_wait_matches_drained(&e, 10000);
    assert_int_equal(fleet_outcome_state(&e, "m-g"), ABORTED);
    server_is(&e, "gs-g", GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, "");
    assert_true(fleet_player_exists(&e, "p-t-g2"));
    assert_true(gf_fnenv_stop(&alloc, 15000));
    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

/* nats-server restarts: the allocator's fleet mirror (a KV watch, which nats.c 3.4.1
 * does not carry over a reconnect) is re-read, and the next match is assigned. */
static void allocation_after_nats_restart(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    stack_up(&e, &fleet, &alloc);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 1, 200);
    assert_int_equal(gf_natsd_restart(e.fn.natsd), 0);
    assert_true(fleet_log_has(&alloc, "reconnected: re-reading the bucket", 15000));
    /* The test's own KV handles reconnect by themselves (plain requests). */
    for (int waited = 0; waited < 15000; waited += 100) {
        Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", "sim-eu-1");
        bool fresh = r && r->stale_unix_ms > gf_clock_unix_ms() + 1000;
        gamefn__v1__server_record__free_unpacked(r, NULL);
        if (fresh)
            break;
        gf_clock_sleep_ms(100);
    }
    fleet_claim_ticket(&e, "t-r1", "m-restart", gf_clock_unix_ms());
    char *t[] = {"t-r1"};
    fleet_publish_match(&e, "m-restart", t, 1, "eu");
    Gamefn__V1__TicketRecord *a = fleet_wait_ticket(&e, "t-r1", ASSIGNED, 15000);
    assert_string_equal(a->assignment->server_id, "sim-eu-1");
    gamefn__v1__ticket_record__free_unpacked(a, NULL);
    stack_down(&e, sim, &alloc, &fleet);
}

static void malformed_matches_are_terminated(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    stack_up(&e, &fleet, &alloc);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 1, -1);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    assert_int_equal(
        js_Publish(NULL, e.fn.js, GF_WIRE_SUBJ_MATCH_FOUND ".duel", "\xff\xff\xff", 3, &po, NULL),
        NATS_OK);
    /* A Match whose ticket id is not a token, and one with no datacenter. */
    fleet_claim_ticket(&e, "t-ok", "m-bad", gf_clock_unix_ms());
    char *bad_ids[] = {"t.bad"};
    fleet_publish_match(&e, "m-bad1", bad_ids, 1, "eu");
    char *ok[] = {"t-ok"};
    fleet_publish_match(&e, "m-bad", ok, 1, "");
    /* All three are terminated: the work queue empties and nothing was written. */
    fleet_wait_matches_drained(&e, 10000);
    assert_true(fleet_log_has(&alloc, "match refused", 1000));
    Gamefn__V1__TicketRecord *t = fleet_ticket(&e, "t-ok");
    assert_int_equal(t->state, GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED);
    gamefn__v1__ticket_record__free_unpacked(t, NULL);
    Gamefn__V1__ServerRecord *r = fleet_record(&e, "eu", "sim-eu-1");
    assert_int_equal(r->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    gamefn__v1__server_record__free_unpacked(r, NULL);
    assert_int_equal(fleet_outcome_state(&e, "m-bad"), 0);
    stack_down(&e, sim, &alloc, &fleet);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(assigned_end_to_end),
        cmocka_unit_test(datacenter_fallback_and_no_server),
        cmocka_unit_test(stale_server_never_allocated_and_dead_server_released),
        cmocka_unit_test(sigkill_at_every_step),
        cmocka_unit_test(paused_past_redelivery_at_every_step),
        cmocka_unit_test(sigkill_then_server_lost_returns_the_match),
        cmocka_unit_test(game_over_before_commit_aborts_first),
        cmocka_unit_test(allocation_after_nats_restart),
        cmocka_unit_test(malformed_matches_are_terminated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
