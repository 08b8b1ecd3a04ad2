/*
 * test_matcher.c — intake, ticker and matcher against a real nats-server, with the tests'
 * fake allocator (mm_support.h) committing matches:
 *  - two tickets are claimed, published and assigned; a lonely ticket gets QUEUED pushes
 *    with the engine's reason, its limits and no estimate;
 *  - a ticket past its TTL ends TIMED_OUT and its players record is cleared;
 *  - a tick with a lease token lower than one seen (a paused former ticker) is dropped;
 *  - two matchers fed the same ticks race for the same tickets: claims decide, and
 *    every ticket still ends in exactly one match;
 *  - a matcher SIGKILLed between its claims: the claims' lease passes, another matcher
 *    aborts those matches (CLAIM_EXPIRED) and the tickets are matched later; stopped
 *    (SIGSTOP) there instead and woken once all are assigned: nothing changes;
 *  - the mirror re-syncs after a nats-server restart (tickets created afterwards match);
 *  - cancels racing claims: every cancel has exactly one outcome, and both sides agree.
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

#include "gamefn/clock.h"
#include "gamefn/tickets/record.h"
#include "gamefn/v1/error.pb-c.h"
#include "mm_support.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x
#define E(x)  GAMEFN__V1__ERROR_CODE__ERROR_CODE_##x

/* Creates a solo ticket for player `who` (key "k-<who>") and copies its id into id. */
static void create(gf_fnenv *env, const char *queue, const char *who, double rating, char *id,
                   size_t size)
{
    char key[96];
    snprintf(key, sizeof key, "k-%s", who);
    mm_ticket t = {.key = key,
                   .queue = queue,
                   .players = {who},
                   .nplayers = 1,
                   .rating = rating,
                   .pings = "eu-west:20,us-east:90"};
    Gamefn__V1__CreateTicketReply *r = NULL;
    int code = mm_create(env, &t, &r, NULL, 0);
    if (code != 0)
        fail_msg("create %s: code %d", who, code);
    snprintf(id, size, "%s", r->ticket_id);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

/* Runs the fake allocator until `id` reaches `state` or timeout_ms passes. */
static bool until_state(gf_fnenv *env, mm_alloc *a, const char *id, int state, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 100) {
        if (a)
            mm_alloc_step(a, 50);
        else
            gf_clock_sleep_ms(50);
        if (mm_state(env, id) == state)
            return true;
        gf_clock_sleep_ms(50);
    }
    return false;
}

/* Publishes one tick for `group` as a ticker holding lease token `token` would. */
static void tick_as(gf_fnenv *env, const char *group, int64_t seq, uint64_t token)
{
    char subject[128], buf[32];
    natsMsg *m = NULL;
    snprintf(subject, sizeof subject, "gamefn.v1.tick.matcher.%s", group);
    assert_int_equal(natsMsg_Create(&m, subject, NULL, NULL, 0), NATS_OK);
    snprintf(buf, sizeof buf, "%lld", (long long)seq);
    natsMsgHeader_Set(m, "Gamefn-Tick-Seq", buf);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)token);
    natsMsgHeader_Set(m, "Gamefn-Lease-Token", buf);
    assert_int_equal(natsConnection_PublishMsg(env->nc, m), NATS_OK);
    natsMsg_Destroy(m);
}

/* Publishes one tick for `group` as the ticker holding the first lease would. */
static void tick(gf_fnenv *env, const char *group, int64_t seq)
{
    tick_as(env, group, seq, 1);
}

/* The service under test: its nats-server, intake, matchers, ticker, the fake
 * allocator and a status collector. */
typedef struct stack {
    gf_fnenv env;
    gf_proc intake, matcher[2], ticker;
    mm_alloc *alloc;
    mm_pushes *pushes;
} stack;

/* Config with `opts` for functions.matcher; intake, `matchers` matchers (mt-1, mt-2) and,
 * with `ticking`, a ticker; the allocator and the pushes. */
static void up_with(stack *s, const char *opts, int matchers, bool ticking,
                    char *const first_matcher_env[])
{
    memset(s, 0, sizeof *s);
    assert_int_equal(mm_env_start(&s->env, opts), 0);
    s->pushes = mm_pushes_start(&s->env);
    assert_true(mm_spawn(&s->env, &s->intake, "intake", "in-1"));
    for (int i = 0; i < matchers; i++)
        assert_int_equal(gf_fnenv_spawn_ready(&s->env, &s->matcher[i],
                                              "functions/matcher/gamefn-matcher", "matcher",
                                              i ? "mt-2" : "mt-1", i ? NULL : first_matcher_env),
                         0);
    if (ticking)
        assert_true(mm_spawn(&s->env, &s->ticker, "ticker", "tk-1"));
    s->alloc = mm_alloc_start(&s->env);
}

static void up(stack *s, const char *opts, int matchers, bool ticking)
{
    up_with(s, opts, matchers, ticking, NULL);
}

/* Stops (SIGTERM, exit 0 expected) every process still running, frees everything. */
static void down(stack *s)
{
    mm_alloc_free(s->alloc);
    mm_pushes_free(s->pushes);
    gf_proc *procs[] = {&s->ticker, &s->matcher[1], &s->matcher[0], &s->intake};
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (procs[i]->pid > 0)
            assert_true(gf_fnenv_stop(procs[i], 15000));
    }
    gf_fnenv_free(&s->env);
}

static void test_match_and_assign(void **state)
{
    (void)state;
    static stack sk;
    up(&sk, "    status_interval: 500ms\n", 1, true);
    gf_fnenv *env = &sk.env;
    mm_pushes *pushes = sk.pushes;
    mm_alloc *alloc = sk.alloc;

    char a[80], b[80], lone[80];
    create(env, "duel", "ann", 1500, a, sizeof a);
    create(env, "duel", "ben", 1510, b, sizeof b);
    create(env, "pair", "liz", 1500, lone, sizeof lone);
    assert_true(mm_pushes_wait(pushes, a, ST(CLAIMED), RS(MATCHED), 5000));
    assert_true(mm_pushes_wait(pushes, b, ST(CLAIMED), RS(MATCHED), 5000));
    assert_true(until_state(env, alloc, a, ST(ASSIGNED), 5000));
    assert_true(until_state(env, alloc, b, ST(ASSIGNED), 5000));
    Gamefn__V1__TicketStatus *st = NULL;
    assert_int_equal(mm_get(env, a, &st), 0);
    assert_string_equal(st->assignment->server_id, "gs-test");
    assert_string_equal(st->assignment->datacenter, "eu-west");
    gamefn__v1__ticket_status__free_unpacked(st, NULL);

    /* The lonely 2v2 ticket: QUEUED pushes with the engine's reason and its limits. */
    assert_true(mm_pushes_wait(pushes, lone, ST(QUEUED), RS(POPULATION), 5000));
    size_t n1 = mm_pushes_count(pushes, lone);
    gf_clock_sleep_ms(1200);
    size_t n2 = mm_pushes_count(pushes, lone);
    assert_true(n2 > n1);      /* periodic... */
    assert_true(n2 - n1 <= 4); /* ...at most every status_interval (ticks are 100 ms) */
    assert_int_equal(mm_state(env, lone), ST(QUEUED));
    /* ...with its current limits (hybrid: both curves, from their bases up) and no wait
     * estimate (its queue has formed no match yet). */
    mm_push last;
    assert_true(mm_pushes_last(pushes, lone, &last));
    assert_int_equal(last.state, ST(QUEUED));
    assert_true(last.has_limits);
    assert_false(last.skill_ignored);
    assert_true(last.skill_gap >= 50 && last.skill_gap <= 600);
    assert_true(last.ping_ms >= 35 && last.ping_ms <= 180);
    assert_int_equal(last.estimated_wait_ms, 0);

    down(&sk);
}

static void test_ttl_expiry(void **state)
{
    (void)state;
    static stack sk;
    up(&sk, NULL, 1, true);
    gf_fnenv *env = &sk.env;
    mm_pushes *pushes = sk.pushes;
    char id[80];
    create(env, "short", "tom", 1500, id, sizeof id);
    assert_true(mm_pushes_wait(pushes, id, ST(TIMED_OUT), RS(TTL_EXPIRED), 6000));
    assert_int_equal(mm_state(env, id), ST(TIMED_OUT));
    kvStore *players = NULL;
    kvEntry *e = NULL;
    assert_int_equal(js_KeyValue(&players, env->js, "players"), NATS_OK);
    assert_int_equal(kvStore_Get(&e, players, "tom"), NATS_NOT_FOUND);
    kvStore_Destroy(players);
    /* The player may queue again at once. */
    char again[80];
    mm_ticket t = {.key = "k-tom-2",
                   .queue = "duel",
                   .players = {"tom"},
                   .nplayers = 1,
                   .rating = 1500,
                   .pings = "eu-west:20"};
    Gamefn__V1__CreateTicketReply *r = NULL;
    assert_int_equal(mm_create(env, &t, &r, NULL, 0), 0);
    assert_false(r->replayed);
    snprintf(again, sizeof again, "%s", r->ticket_id);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
    assert_string_not_equal(again, id);

    down(&sk);
}

/* The ticker's fencing: once a matcher has seen lease token 5 for a group, a tick with a
 * lower token (a former leader, paused, that resumed) is dropped; the current leader's
 * ticks are served. */
static void test_stale_lease_ticks_dropped(void **state)
{
    (void)state;
    static stack sk;
    up(&sk, NULL, 1, false);
    gf_fnenv *env = &sk.env;
    char a[80], b[80];
    tick_as(env, "duel", 1, 5); /* the current leader's token, seen first */
    create(env, "duel", "sam", 1500, a, sizeof a);
    create(env, "duel", "sue", 1505, b, sizeof b);
    gf_clock_sleep_ms(300); /* the mirror holds both */
    for (int k = 0; k < 3; k++) {
        tick_as(env, "duel", 2 + k, 4); /* the paused former leader */
        gf_clock_sleep_ms(200);
    }
    assert_int_equal(mm_state(env, a), ST(QUEUED));
    assert_int_equal(mm_state(env, b), ST(QUEUED));
    tick_as(env, "duel", 5, 5);
    assert_true(mm_pushes_wait(sk.pushes, a, ST(CLAIMED), RS(MATCHED), 5000));
    assert_true(mm_pushes_wait(sk.pushes, b, ST(CLAIMED), RS(MATCHED), 5000));
    down(&sk);
}

/* Every ticket in ids[0..n) reaches ASSIGNED within timeout_ms (the allocator runs and,
 * without a ticker, the test ticks `group` every 200 ms). */
static bool all_assigned(gf_fnenv *env, mm_alloc *a, char (*ids)[80], size_t n, const char *group,
                         int timeout_ms)
{
    size_t done = 0;
    int64_t seq = 1000;
    for (int waited = 0; waited <= timeout_ms && done < n; waited += 200) {
        if (group)
            tick(env, group, seq++);
        mm_alloc_step(a, 200);
        while (done < n && mm_state(env, ids[done]) == ST(ASSIGNED))
            done++;
    }
    if (done < n)
        fprintf(stderr, "%zu of %zu assigned\n", done, n);
    return done == n;
}

/* The tests' own audit (mm_audit.c) and the independent checker agree: nothing broken. */
static void assert_clean(gf_fnenv *env, const mm_audit *au)
{
    mm_audit_print(au);
    mm_check_clean(env, 0);
    assert_int_equal(au->double_claims, 0);
    assert_int_equal(au->assigned_twice, 0);
    assert_int_equal(au->half_assigned, 0);
}

/* Two matchers receive ticks of the same group at the same time and claim the same
 * tickets: the claims decide and everything is matched exactly once in the end. (Claims
 * go out in ticket id order, so the one behind usually loses a match whole; a match
 * with a lost claim and its rollback are forced deterministically in
 * test_matcher_tick.) */
static void test_replicas_race(void **state)
{
    (void)state;
    enum { N = 160 };
    static char ids[N][80];
    static stack sk;
    up(&sk, NULL, 2, false);
    gf_fnenv *env = &sk.env;
    mm_alloc *alloc = sk.alloc;
    mm_audit au;
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < N; i++) {
            char who[32];
            snprintf(who, sizeof who, "r%d-%zu", round, i);
            create(env, "pair", who, 1500, ids[i], sizeof ids[i]);
        }
        gf_clock_sleep_ms(300); /* both mirrors hold them */
        for (int k = 0; k < 4; k++)
            tick(env, "pair", 1 + k); /* the queue group gives them to both matchers */
        assert_true(all_assigned(env, alloc, ids, N, "pair", 20000));
        mm_audit_run(env, &au);
        assert_clean(env, &au);
        assert_int_equal(au.assigned, (size_t)N * (size_t)(round + 1));
    }
    down(&sk);
}

/* A matcher SIGKILLed while it claims: its claims expire (2 s lease), the next matcher
 * aborts those matches through the commit record and matches the tickets again.
 * `paused`: stopped whole (SIGSTOP) between its claims and its publish instead (its test
 * pause `claimed` holds it there long enough), and woken once every ticket is assigned:
 * it publishes Matches from claims that are gone, and nothing may change. */
static void claims_interrupted(bool paused)
{
    enum { N = 600 };
    static char ids[N][80];
    static stack sk;
    char *hold[] = {"GAMEFN_TEST_MATCHER_PAUSE=claimed:1000", NULL};
    up_with(&sk, "    claim_lease: 2s\n", 1, false, paused ? hold : NULL);
    gf_fnenv *env = &sk.env;
    gf_proc *m1 = &sk.matcher[0];
    for (size_t i = 0; i < N; i++) {
        char who[32];
        snprintf(who, sizeof who, "k-%zu", i);
        create(env, "duel", who, 1500, ids[i], sizeof ids[i]);
    }
    gf_clock_sleep_ms(500);
    uint64_t seq0 = mm_bucket_seq(env, "tickets");
    tick(env, "duel", 1);
    int64_t deadline = gf_clock_mono_ms() + 10000;
    while (mm_bucket_seq(env, "tickets") < seq0 + 20 && gf_clock_mono_ms() < deadline)
        ;
    if (paused) {
        assert_true(gf_fnenv_wait_log(m1, "paused for a test", 10000));
        assert_true(gf_proc_pid_stop(m1->pid, 5000));
    } else {
        gf_proc_signal(m1, SIGKILL);
        assert_int_equal(gf_proc_wait(m1, 5000), 0);
    }
    size_t claimed = 0;
    for (size_t i = 0; i < N; i++)
        claimed += mm_state(env, ids[i]) == ST(CLAIMED);
    fprintf(stderr, "claimed when %s: %zu of %d\n", paused ? "stopped" : "killed", claimed, N);

    assert_true(mm_spawn(env, &sk.matcher[1], "matcher", "mt-2"));
    assert_true(mm_spawn(env, &sk.ticker, "ticker", "tk-1"));
    assert_true(all_assigned(env, sk.alloc, ids, N, NULL, 30000));
    if (paused) {
        uint64_t seq1 = mm_bucket_seq(env, "tickets");
        gf_proc_signal(m1, SIGCONT);
        gf_clock_sleep_ms(3000); /* its claims go on, its Matches reach the allocator */
        assert_true(gf_proc_running(m1));
        size_t assigned = 0;
        for (size_t i = 0; i < N; i++)
            assigned += mm_state(env, ids[i]) == ST(ASSIGNED);
        fprintf(stderr, "woken: %llu ticket writes after waking, %zu of %d still ASSIGNED\n",
                (unsigned long long)(mm_bucket_seq(env, "tickets") - seq1), assigned, N);
        assert_int_equal(assigned, N);
    }
    mm_audit au;
    mm_audit_run(env, &au);
    assert_clean(env, &au);
    assert_int_equal(au.assigned, N);
    if (claimed > 0) /* the kill landed among the claims: released through the record */
        assert_true(au.returns_expired > 0 && au.aborted_expired > 0);
    down(&sk);
}

static void test_sigkill_between_claims(void **state)
{
    (void)state;
    claims_interrupted(false);
}

static void test_paused_between_claims_wakes(void **state)
{
    (void)state;
    claims_interrupted(true);
}

/* After a nats-server restart the functions reconnect and the matcher's mirror
 * re-syncs: tickets created afterwards are matched. */
static void test_resync_after_restart(void **state)
{
    (void)state;
    char a[80], b[80], c[80], d[80];
    static stack sk;
    up(&sk, NULL, 1, true);
    gf_fnenv *env = &sk.env;
    mm_alloc *alloc = sk.alloc;
    create(env, "duel", "sam", 1500, a, sizeof a);
    create(env, "duel", "sue", 1500, b, sizeof b);
    assert_true(until_state(env, alloc, b, ST(ASSIGNED), 10000));

    assert_int_equal(gf_natsd_restart(env->natsd), 0);
    gf_clock_sleep_ms(1500);       /* clients reconnect (100..500 ms backoff) */
    for (int i = 0; i < 50; i++) { /* intake answers again */
        Gamefn__V1__TicketStatus *st = NULL;
        if (mm_get(env, a, &st) == 0) {
            gamefn__v1__ticket_status__free_unpacked(st, NULL);
            break;
        }
        gf_clock_sleep_ms(200);
    }
    create(env, "duel", "tim", 1500, c, sizeof c);
    create(env, "duel", "tia", 1500, d, sizeof d);
    assert_true(until_state(env, alloc, c, ST(ASSIGNED), 15000));
    assert_true(until_state(env, alloc, d, ST(ASSIGNED), 5000));
    down(&sk);
}

/* Cancels racing claims: a cancel either wins (CANCELLED; if the ticket was claimed,
 * its match is aborted and the partner returns to the pool, told MATCH_DROPPED) or
 * loses to a committed match (FAILED_PRECONDITION; the ticket is ASSIGNED). */
static void test_cancel_races_claim(void **state)
{
    (void)state;
    enum { ROUNDS = 40 };
    static char a[ROUNDS][80], b[ROUNDS][80];
    int code[ROUNDS];
    static stack sk;
    up(&sk, NULL, 1, true);
    gf_fnenv *env = &sk.env;
    mm_alloc *alloc = sk.alloc;
    uint64_t rnd = 88172645463325252ull;
    for (int i = 0; i < ROUNDS; i++) {
        char who[32];
        snprintf(who, sizeof who, "ca-%d", i);
        create(env, "duel", who, 1500, a[i], sizeof a[i]);
        snprintf(who, sizeof who, "cb-%d", i);
        create(env, "duel", who, 1500, b[i], sizeof b[i]);
        rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
        gf_clock_sleep_ms((int)(rnd % 250));
        if (i % 2)
            mm_alloc_step(alloc, 10); /* sometimes the allocator commits first */
        Gamefn__V1__TicketStatus *st = NULL;
        code[i] = mm_cancel(env, a[i], &st);
        if (st)
            gamefn__v1__ticket_status__free_unpacked(st, NULL);
        assert_true(code[i] == 0 || code[i] == E(FAILED_PRECONDITION));
    }
    /* Quiet: the allocator has taken every match (a claim it never saw, or a match it
     * committed without writing the tickets, is settled by a matcher once its lease of
     * 10 s passed: wait that long in wall-clock time, not in loop steps). */
    for (int64_t until = gf_clock_mono_ms() + 15000; gf_clock_mono_ms() < until;) {
        mm_alloc_step(alloc, 100);
        bool claimed = false;
        for (int i = 0; i < ROUNDS && !claimed; i++)
            claimed = mm_state(env, a[i]) == ST(CLAIMED) || mm_state(env, b[i]) == ST(CLAIMED);
        if (!claimed)
            break;
    }
    for (int i = 0; i < ROUNDS; i++) {
        int sa = mm_state(env, a[i]);
        assert_int_equal(sa, code[i] == 0 ? ST(CANCELLED) : ST(ASSIGNED));
        assert_int_not_equal(mm_state(env, b[i]), ST(CANCELLED));
    }
    mm_audit au;
    mm_audit_run(env, &au);
    assert_clean(env, &au);
    /* Each cancel that met a claim aborted its match; the partner was told. */
    fprintf(stderr, "cancels that met a claim: %zu\n", au.aborted_cancelled);
    assert_true(au.returns_dropped >= au.aborted_cancelled);
    down(&sk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match_and_assign),
        cmocka_unit_test(test_ttl_expiry),
        cmocka_unit_test(test_stale_lease_ticks_dropped),
        cmocka_unit_test(test_replicas_race),
        cmocka_unit_test(test_sigkill_between_claims),
        cmocka_unit_test(test_paused_between_claims_wakes),
        cmocka_unit_test(test_resync_after_restart),
        cmocka_unit_test(test_cancel_races_claim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
