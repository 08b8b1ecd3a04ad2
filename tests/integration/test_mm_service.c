/*
 * test_mm_service.c — the whole matchmaking service under load and faults: real intake,
 * ticker, matcher, allocator and fleet processes on a real nats-server, simulated game
 * servers (support/gamesim) that verify every join token. The invariants are recomputed
 * from the AUDIT_* mirrors by the independent checker (support/mmcheck), never from the
 * functions' own counters.
 *
 *  - Three matchers and two allocators over 5,000 tickets: solos and parties in a 1v1
 *    and a 2v2 queue, some in a queue whose TTL they cannot outlive, some cancelled
 *    right after their creation (racing their claims); one matcher and one allocator are
 *    SIGKILLed while tickets flow and started again later. Every ticket ends ASSIGNED,
 *    CANCELLED or TIMED_OUT (each of the three happens), every token verified, and the
 *    checker finds no double claim, no player in two matches, no lost ticket, no limit
 *    violation, no half-assigned match (mm_check_clean).
 *  - nats-server restarted while tickets flow: clients retry with the same idempotency
 *    key (what PROTOCOL.md §3 asks), the functions reconnect, and the same holds.
 *  - A ticker, a matcher and an allocator paused (SIGSTOP) past their leases, then
 *    woken: the same holds, and no server is left ALLOCATED once the games are over.
 *
 * Under the sanitizers the ticket counts are divided (GAMEFN_SCALE_DIVISOR): the same
 * scenarios, slower processes.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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
#include "gamefn/tickets/record.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamesim.h"
#include "mm_support.h"

#ifndef GAMEFN_SCALE_DIVISOR
#define GAMEFN_SCALE_DIVISOR 1
#endif

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define E(x)  GAMEFN__V1__ERROR_CODE__ERROR_CODE_##x

static const char matchmaking[] =
    "  intake:\n"
    "    pending_grace: 2s\n"
    "  ticker:\n"
    "    interval: 100ms\n"
    "  matcher:\n"
    "    claim_lease: 4s\n"
    "    matchmaking:\n"
    "      datacenters:\n"
    "        - {name: eu, region: eu}\n"
    "        - {name: us, region: na}\n"
    "      queues:\n"
    "        - {name: duel, mode: hybrid, shape: 1v1, ticket_ttl: 20s}\n"
    "        - {name: pair, mode: hybrid, shape: 2v2, ticket_ttl: 20s}\n"
    "        - {name: short, mode: hybrid, shape: 1v1, ticket_ttl: 2s}\n";

/* ---- the stack ------------------------------------------------------------------------ */

enum { MATCHERS = 3, ALLOCATORS = 2 };

typedef struct stack {
    fleet_env e;
    gf_proc fleet, intake, ticker, matcher[MATCHERS], allocator[ALLOCATORS], spare[2];
    gf_gamesim *sim;
} stack;

static void up(stack *s, int matchers, int allocators)
{
    memset(s, 0, sizeof *s);
    fleet_env_opts o = {.functions_extra = matchmaking,
                        .datacenters = "{name: eu, floor: 0}, {name: us, floor: 0}",
                        .heartbeat = "2s",
                        .deadline = "1500ms",
                        .backoff = "[3s, 5s, 10s]",
                        .max_in_flight = 16};
    fleet_env_start(&s->e, &o);
    fleet_env_spawn(&s->e, &s->fleet, FLEET_BIN, "fleet", "f1", NULL);
    for (int i = 0; i < allocators; i++)
        fleet_env_spawn(&s->e, &s->allocator[i], ALLOCATOR_BIN, "allocator", i ? "a2" : "a1", NULL);
    assert_true(mm_spawn(&s->e.fn, &s->intake, "intake", "i1"));
    for (int i = 0; i < matchers; i++) {
        char id[8];
        snprintf(id, sizeof id, "m%d", i + 1);
        assert_true(mm_spawn(&s->e.fn, &s->matcher[i], "matcher", id));
    }
    assert_true(mm_spawn(&s->e.fn, &s->ticker, "ticker", "t1"));
    gf_gamesim_dc dcs[] = {{.name = "eu", .initial = 120, .max = 120},
                           {.name = "us", .initial = 80, .max = 80}};
    gf_gamesim_opts so = {.dcs = dcs, .n_dcs = 2, .capacity = 4, .play_ms = 300, .workers = 8};
    assert_int_equal(gf_gamesim_start(s->e.fn.nc, &so, &s->sim), GF_OK);
    gf_gamesim_stats st;
    for (int waited = 0;; waited += 100) {
        gf_gamesim_stats_get(s->sim, &st);
        if (st.free >= 200 || waited > 30000)
            break;
        gf_clock_sleep_ms(100);
    }
    assert_int_equal(st.free, 200);
    gf_clock_sleep_ms(500); /* the allocators' fleet mirrors see them */
}

static void down(stack *s)
{
    gf_gamesim_stop(s->sim);
    gf_proc *procs[] = {&s->ticker,       &s->matcher[0], &s->matcher[1], &s->matcher[2],
                        &s->spare[0],     &s->spare[1],   &s->intake,     &s->allocator[0],
                        &s->allocator[1], &s->fleet};
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
        if (procs[i]->pid > 0)
            assert_true(gf_fnenv_stop(procs[i], 15000));
    fleet_env_free(&s->e);
}

/* ---- what every ticket became ------------------------------------------------------------ */

/* Ticket ids and their terminal state as the status pushes told it (0: not yet). */
typedef struct book {
    pthread_mutex_t mu;
    size_t n, cap;
    char (*id)[40];
    int *state;
    natsSubscription *sub;
} book;

static int find(book *b, const char *id)
{
    for (size_t i = b->n; i-- > 0;) /* recent ones are the likely ones */
        if (strcmp(b->id[i], id) == 0)
            return (int)i;
    return -1;
}

static void on_push(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    book *b = closure;
    Gamefn__V1__TicketStatus *st = gamefn__v1__ticket_status__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    if (st && gf_ticket_terminal(st->state)) {
        pthread_mutex_lock(&b->mu);
        int i = find(b, st->ticket_id);
        if (i >= 0)
            b->state[i] = st->state;
        pthread_mutex_unlock(&b->mu);
    }
    gamefn__v1__ticket_status__free_unpacked(st, NULL);
    natsMsg_Destroy(m);
}

static void book_start(book *b, gf_fnenv *env, size_t cap)
{
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->mu, NULL);
    b->cap = cap;
    b->id = calloc(cap, sizeof *b->id);
    b->state = calloc(cap, sizeof *b->state);
    assert_non_null(b->id);
    assert_non_null(b->state);
    assert_int_equal(
        natsConnection_Subscribe(&b->sub, env->nc, "gamefn.v1.ticket.status.>", on_push, b),
        NATS_OK);
    natsSubscription_SetPendingLimits(b->sub, -1, -1);
    assert_int_equal(natsConnection_Flush(env->nc), NATS_OK);
}

static void book_add(book *b, const char *id)
{
    pthread_mutex_lock(&b->mu);
    if (find(b, id) < 0) {
        assert_true(b->n < b->cap);
        snprintf(b->id[b->n++], sizeof b->id[0], "%s", id);
    }
    pthread_mutex_unlock(&b->mu);
}

static void book_free(book *b)
{
    natsSubscription_Destroy(b->sub);
    pthread_mutex_destroy(&b->mu);
    free(b->id);
    free(b->state);
}

/* Waits until every ticket is terminal (pushes are at most once: the stragglers are read
 * with ticket.get), then checks it; counts the three endings. */
static void all_terminal(book *b, gf_fnenv *env, int timeout_ms, size_t ends[3])
{
    size_t open = 0;
    for (int waited = 0;; waited += 500) {
        open = 0;
        pthread_mutex_lock(&b->mu);
        for (size_t i = 0; i < b->n; i++)
            open += b->state[i] == 0;
        pthread_mutex_unlock(&b->mu);
        if (open == 0 || waited >= timeout_ms)
            break;
        if (waited % 5000 == 0)
            fprintf(stderr, "%zu of %zu tickets not ended yet\n", open, b->n);
        gf_clock_sleep_ms(500);
    }
    memset(ends, 0, 3 * sizeof ends[0]);
    for (size_t i = 0; i < b->n; i++) {
        int state = b->state[i] ? b->state[i] : mm_state(env, b->id[i]);
        if (!gf_ticket_terminal(state))
            fail_msg("ticket %s ended %s", b->id[i], gf_ticket_state_name(state));
        ends[state == ST(ASSIGNED) ? 0 : state == ST(CANCELLED) ? 1 : 2]++;
    }
    fprintf(stderr, "tickets: %zu assigned, %zu cancelled, %zu timed out\n", ends[0], ends[1],
            ends[2]);
}

/* ---- the load -------------------------------------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

/* Ticket i: 1 in 20 in `short` (ratings 250 apart: nobody within reach, so it times
 * out), otherwise 60 % `duel` solos, 40 % `pair` solos or duos, players in eu or na. */
static void ticket_of(size_t i, rng *r, char *key, size_t ksize, char players[2][32], mm_ticket *t)
{
    snprintf(key, ksize, "svc-%zu", i);
    snprintf(players[0], 32, "p%zu-a", i);
    snprintf(players[1], 32, "p%zu-b", i);
    bool eu = next(r) % 100 < 60;
    *t = (mm_ticket){.key = key,
                     .players = {players[0], players[1]},
                     .nplayers = 1,
                     .rating = 1300 + (double)(next(r) % 400),
                     .pings = eu ? "eu:20,us:90" : "us:25,eu:95"};
    if (i % 20 == 0) {
        t->queue = "short";
        t->rating = 250.0 * (double)(i / 20);
    } else if (next(r) % 100 < 60) {
        t->queue = "duel";
    } else {
        t->queue = "pair";
        t->nplayers = next(r) % 2 ? 2 : 1;
    }
}

/* ticket.create until a definite answer: a timeout, UNAVAILABLE or TIMEOUT is retried
 * with the same request (the same idempotency key) after a pause. The ticket id, or
 * fails the test. */
static void create_retrying(gf_fnenv *env, const mm_ticket *t, char *id, size_t size)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        Gamefn__V1__CreateTicketReply *r = NULL;
        int code = mm_create(env, t, &r, NULL, 0);
        if (code == 0) {
            snprintf(id, size, "%s", r->ticket_id);
            gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
            return;
        }
        if (code != -1 && code != E(UNAVAILABLE) && code != E(TIMEOUT) && code != E(CONFLICT))
            fail_msg("create %s: code %d", t->key, code);
        gf_clock_sleep_ms(200);
    }
    fail_msg("create %s: no answer after 100 attempts", t->key);
}

/* ticket.cancel: success or FAILED_PRECONDITION (its match was committed first, or it
 * timed out); retried on no answer. */
static void cancel_retrying(gf_fnenv *env, const char *id)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        Gamefn__V1__TicketStatus *st = NULL;
        int code = mm_cancel(env, id, &st);
        if (st)
            gamefn__v1__ticket_status__free_unpacked(st, NULL);
        if (code == 0 || code == E(FAILED_PRECONDITION))
            return;
        if (code != -1 && code != E(UNAVAILABLE) && code != E(TIMEOUT) && code != E(CONFLICT))
            fail_msg("cancel %s: code %d", id, code);
        gf_clock_sleep_ms(200);
    }
    fail_msg("cancel %s: no answer after 100 attempts", id);
}

/* A fault at ticket `at` of the load. */
typedef struct fault {
    size_t at;
    void (*run)(stack *s);
} fault;

/* Creates n tickets (every 25th cancelled a few tickets later, racing its claim) and
 * runs the faults when their ticket comes. */
static void submit(stack *s, book *b, size_t n, const fault *faults, size_t nfaults)
{
    rng r = {.s = 0x9e3779b97f4a7c15ull};
    char pending[4][40] = {{0}}; /* tickets to cancel, a few creates later */
    for (size_t i = 0; i < n; i++) {
        char key[32], players[2][32], id[40];
        mm_ticket t;
        for (size_t f = 0; f < nfaults; f++)
            if (faults[f].at == i)
                faults[f].run(s);
        ticket_of(i, &r, key, sizeof key, players, &t);
        create_retrying(&s->e.fn, &t, id, sizeof id);
        book_add(b, id);
        if (pending[i % 4][0])
            cancel_retrying(&s->e.fn, pending[i % 4]);
        pending[i % 4][0] = '\0';
        if (i % 25 == 3)
            snprintf(pending[i % 4], sizeof pending[0], "%s", id);
    }
    for (size_t k = 0; k < 4; k++)
        if (pending[k][0])
            cancel_retrying(&s->e.fn, pending[k]);
}

/* ---- faults ---------------------------------------------------------------------------- */

static void kill_matcher(stack *s)
{
    fprintf(stderr, "fault: SIGKILL matcher m1\n");
    gf_proc_signal(&s->matcher[0], SIGKILL);
    assert_int_equal(gf_proc_wait(&s->matcher[0], 5000), 0);
}

static void restart_matcher(stack *s)
{
    fprintf(stderr, "fault: matcher m1 started again (as m1b)\n");
    assert_true(mm_spawn(&s->e.fn, &s->spare[0], "matcher", "m1b"));
}

static void kill_allocator(stack *s)
{
    fprintf(stderr, "fault: SIGKILL allocator a1\n");
    gf_proc_signal(&s->allocator[0], SIGKILL);
    assert_int_equal(gf_proc_wait(&s->allocator[0], 5000), 0);
}

static void restart_allocator(stack *s)
{
    fprintf(stderr, "fault: allocator a1 started again (as a1b)\n");
    fleet_env_spawn(&s->e, &s->spare[1], ALLOCATOR_BIN, "allocator", "a1b", NULL);
}

static void restart_nats(stack *s)
{
    fprintf(stderr, "fault: nats-server restarted\n");
    assert_int_equal(gf_natsd_restart(s->e.fn.natsd), 0);
}

/* A pause (SIGSTOP) is the fault a kill is not: the process wakes up later believing
 * it still holds what it held — a matcher its claims, an allocator its fetched Matches
 * and the server it took, a ticker its lease — after each has passed to another replica
 * (claim_lease 4 s, the first redelivery 3 s, the tick lease 3 ticks). */
enum { PAUSE_MS = 6000 };
static int64_t paused_at_ms;

static void pause_replicas(stack *s)
{
    fprintf(stderr, "fault: SIGSTOP ticker t1, matcher m1, allocator a1\n");
    paused_at_ms = gf_clock_mono_ms();
    assert_int_equal(gf_proc_signal(&s->ticker, SIGSTOP), 0);
    assert_int_equal(gf_proc_signal(&s->matcher[0], SIGSTOP), 0);
    assert_int_equal(gf_proc_signal(&s->allocator[0], SIGSTOP), 0);
}

static void resume_replicas(stack *s)
{
    int64_t left = PAUSE_MS - (gf_clock_mono_ms() - paused_at_ms);
    if (left > 0)
        gf_clock_sleep_ms(left);
    fprintf(stderr, "fault: SIGCONT after %lld ms\n",
            (long long)(gf_clock_mono_ms() - paused_at_ms));
    assert_int_equal(gf_proc_signal(&s->ticker, SIGCONT), 0);
    assert_int_equal(gf_proc_signal(&s->matcher[0], SIGCONT), 0);
    assert_int_equal(gf_proc_signal(&s->allocator[0], SIGCONT), 0);
}

/* Fleet records (keys <datacenter>.<server_id>, not the ids/ index) still ALLOCATED;
 * `say`: print each with its match's commit record state (what a leak looks like). */
static size_t servers_allocated(stack *s, bool say)
{
    kvKeysList l = {0};
    assert_int_equal(kvStore_Keys(&l, s->e.fleet, NULL), NATS_OK);
    size_t n = 0;
    for (int i = 0; i < l.Count; i++) {
        kvEntry *en = NULL;
        if (strncmp(l.Keys[i], "ids/", 4) == 0 || gf_kv_get(s->e.fleet, l.Keys[i], &en) != GF_OK)
            continue; /* removed meanwhile */
        Gamefn__V1__ServerRecord *r = gamefn__v1__server_record__unpack(
            NULL, (size_t)kvEntry_ValueLen(en), kvEntry_Value(en));
        assert_non_null(r);
        bool allocated = r->state == GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED;
        n += allocated;
        if (allocated && say)
            fprintf(stderr, "  %s ALLOCATED to %s (revision %llu), its match's record: state %d\n",
                    l.Keys[i], r->allocated_match_id, (unsigned long long)kvEntry_Revision(en),
                    fleet_outcome_state(&s->e, r->allocated_match_id));
        gamefn__v1__server_record__free_unpacked(r, NULL);
        kvEntry_Destroy(en);
    }
    kvKeysList_Destroy(&l);
    return n;
}

/* ---- the scenarios ----------------------------------------------------------------------- */

static void check_ends(stack *s, book *b, size_t n)
{
    size_t ends[3];
    all_terminal(b, &s->e.fn, 120000, ends);
    assert_int_equal(b->n, n);
    assert_true(ends[0] > n / 2); /* most are played */
    assert_true(ends[1] > 0);     /* some cancels won their race */
    assert_true(ends[2] > 0);     /* the short queue's tickets time out */
    gf_gamesim_stats st;
    gf_gamesim_stats_get(s->sim, &st);
    fprintf(stderr, "servers: %llu allocations, %llu games, tokens ok %llu, bad %llu\n",
            (unsigned long long)st.allocations, (unsigned long long)st.games_finished,
            (unsigned long long)st.tokens_ok, (unsigned long long)st.tokens_bad);
    assert_int_equal(st.tokens_bad, 0);
    assert_true(st.tokens_ok > 0);
    mm_check_clean(&s->e.fn, 0);
}

static void three_matchers_two_allocators(void **state)
{
    (void)state;
    enum { N = 5000 / GAMEFN_SCALE_DIVISOR };
    static stack s;
    static book b;
    up(&s, MATCHERS, ALLOCATORS);
    book_start(&b, &s.e.fn, N);
    const fault faults[] = {
        {N * 3 / 10, kill_matcher},
        {N * 4 / 10, kill_allocator},
        {N * 5 / 10, restart_matcher},
        {N * 6 / 10, restart_allocator},
    };
    submit(&s, &b, N, faults, sizeof faults / sizeof faults[0]);
    check_ends(&s, &b, N);
    book_free(&b);
    down(&s);
}

static void nats_restart_under_load(void **state)
{
    (void)state;
    enum { N = 1500 / GAMEFN_SCALE_DIVISOR };
    static stack s;
    static book b;
    up(&s, 2, 2);
    book_start(&b, &s.e.fn, N);
    const fault faults[] = {{N / 3, restart_nats}};
    submit(&s, &b, N, faults, 1);
    check_ends(&s, &b, N);
    book_free(&b);
    down(&s);
}

/* A ticker, a matcher and an allocator paused past their leases while tickets flow, a
 * second ticker standing by: the others carry on, the paused ones wake to find their
 * claims, Matches and lease gone, and nothing they do then may break an invariant or
 * keep a server: once every game is over no server is left ALLOCATED. */
static void paused_replicas_wake_up(void **state)
{
    (void)state;
    enum { N = 2000 / GAMEFN_SCALE_DIVISOR };
    static stack s;
    static book b;
    up(&s, 2, 2);
    assert_true(mm_spawn(&s.e.fn, &s.spare[0], "ticker", "t2"));
    book_start(&b, &s.e.fn, N);
    const fault faults[] = {{N / 4, pause_replicas}, {N / 2, resume_replicas}};
    submit(&s, &b, N, faults, 2);
    check_ends(&s, &b, N);
    size_t allocated = 0;
    for (int waited = 0; waited < 30000; waited += 200) {
        if ((allocated = servers_allocated(&s, false)) == 0)
            break;
        gf_clock_sleep_ms(200);
    }
    fprintf(stderr,
            "woken allocator a1: %zu matches aborted, %zu refused; woken matcher m1: %zu "
            "matches left to their lease\n",
            fleet_log_count(&s.allocator[0], "match aborted"),
            fleet_log_count(&s.allocator[0], "match refused"),
            fleet_log_count(&s.matcher[0], "match left to its claims' lease"));
    if (allocated) {
        fprintf(stderr, "%zu servers still ALLOCATED with every ticket ended\n", allocated);
        servers_allocated(&s, true);
        gf_proc_dump_log(&s.allocator[0], 20);
        gf_proc_dump_log(&s.fleet, 20);
    }
    assert_int_equal(allocated, 0);
    book_free(&b);
    down(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(three_matchers_two_allocators),
        cmocka_unit_test(nats_restart_under_load),
        cmocka_unit_test(paused_replicas_wake_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
