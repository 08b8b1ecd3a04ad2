/*
 * test_mm_skew.c — the matchmaking service with one replica's wall clock wrong: real
 * fleet, two allocators, intake, two matchers and a ticker on a real nats-server,
 * simulated game servers that verify every join token, and one process run under
 * Debian's libfaketime (LD_PRELOAD, FAKETIME="+30s"), which shifts every clock the
 * process reads by that offset (checked from the ts= of its own log lines).
 *
 * Wall-clock times cross processes (claim leases, the allocation deadline, ticket TTLs,
 * fleet records' stale_unix_ms): a skewed replica misjudges them. Safety must hold
 * anyway (every decision is a compare-and-set, `matches/<m>` decides a match): the
 * independent checker (mm_check_clean, from the AUDIT_* mirrors) must find nothing.
 * Liveness may suffer: each case prints how long 200 solo tickets took to be all
 * ASSIGNED and the matches committed and aborted by reason, next to baselines without
 * skew, and asserts only that every ticket ends ASSIGNED. docs/OPERATIONS.md "Clocks"
 * says what each case means for an operator.
 *
 *  - baseline (and baseline-no-hold, the allocator case's reference);
 *  - modest-2s: m2 +2 s, a2 +2 s, the fleet -2 s at once (the documented tolerance);
 *  - matcher m2 +30 s: it takes m1's in-flight claims for expired and aborts them;
 *  - matcher m2 -30 s: every ticket is queued in its future (beyond the engine's
 *    clock_skew): it forms no matches, m1 does the work;
 *  - allocator a2 +30 s: every Match it fetches is past its claims' lease: aborted;
 *  - fleet -30 s: every record it writes is stale to the allocators, so nothing is
 *    allocated (NO_SERVER) until the fleet runs with a right clock again (restarted
 *    unskewed here); then every ticket is assigned;
 *  - intake 10 s ahead of another that is between its players record and its ticket:
 *    a create for the same player under another key is CONFLICT, not a second live
 *    ticket (it was, before intake counted pending_grace on its own clock too).
 *
 * Why libfaketime and no clock hook in the product: a maintained Debian library fakes
 * every clock call of the unmodified binaries, which a hand-written hook in
 * gf_clock_unix_ms would not (nats.c's own calls). FAKETIME_DONT_FAKE_MONOTONIC is
 * not used: with it, Debian 12's 0.9.10 returns at once from a pthread_cond_timedwait
 * on a CLOCK_MONOTONIC condition (the runtime's publisher waits on those; fixed
 * upstream in 2025, libfaketime PR #503). Without it the monotonic clock is shifted by
 * a constant too, which no process compares with another's: timed waits on both clocks
 * and sleeps keep their length.
 *
 * Skipped under the sanitizers: the preloaded libfaketime would come before the
 * sanitizer's runtime in the library list, which ASan refuses; the clock logic is the
 * same code either way.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fleet_support.h"
#include "gamefn/clock.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamesim.h"
#include "mm_support.h"

#ifndef GAMEFN_FAKETIME_LIB
#define GAMEFN_FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
#endif

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define E(x)  GAMEFN__V1__ERROR_CODE__ERROR_CODE_##x

/* Servers enough that the baseline never waits for one (every player prefers eu). */
enum { N = 200, SERVERS_EU = 60, SERVERS_US = 4 };

/* The clock offsets of one case, in seconds: the second matcher (m2), the second
 * allocator (a2) and the fleet; the others run with the right clock. */
typedef struct skew {
    int matcher, allocator, fleet;
    /* Every allocator holds each Match this long after its fencing check (the test pause
     * GAMEFN_TEST_ALLOCATOR_PAUSE=fenced:<ms>), as a busy one waiting for a server does:
     * claims stay in flight long enough for the other matcher's ticks to judge them. */
    int hold_ms;
} skew;

typedef struct stack {
    fleet_env e;
    gf_proc fleet, allocator[2], intake, matcher[2], ticker, fleet_fixed;
    gf_gamesim *sim;
    int hold_ms;
    char ids[N][40];
} stack;

/* The first ts= of the process's log, as Unix ms (0 when none yet). */
static int64_t log_first_ts(const gf_proc *p)
{
    FILE *f = fopen(p->log_path, "r");
    char line[1024];
    int64_t ns = 0;
    while (f && ns == 0 && fgets(line, sizeof line, f)) {
        char *ts = strstr(line, "ts="), *end = ts ? strchr(ts, ' ') : NULL;
        if (end) {
            *end = '\0';
            if (gf_clock_parse_rfc3339(ts + 3, &ns) != GF_OK)
                ns = 0;
        }
    }
    if (f)
        fclose(f);
    return ns / 1000000;
}

/* Spawns `bin` as `instance`, its clocks shifted by offset_s (0: not shifted), and
 * checks from its own log lines that the shift took. */
static void spawn(stack *s, gf_proc *p, const char *bin, const char *name, const char *instance,
                  int offset_s)
{
    char faketime[32], hold[64];
    snprintf(faketime, sizeof faketime, "FAKETIME=%+ds", offset_s);
    snprintf(hold, sizeof hold, "GAMEFN_TEST_ALLOCATOR_PAUSE=fenced:%d", s->hold_ms);
    char *env[4] = {NULL}, **e = env;
    if (s->hold_ms)
        *e++ = hold;
    if (offset_s) {
        *e++ = "LD_PRELOAD=" GAMEFN_FAKETIME_LIB;
        *e++ = faketime;
    }
    int64_t before = gf_clock_unix_ms();
    fleet_env_spawn(&s->e, p, bin, name, instance, env);
    int64_t logged = log_first_ts(p), after = gf_clock_unix_ms();
    assert_true(logged != 0);
    if (logged < before + offset_s * 1000LL - 1000 || logged > after + offset_s * 1000LL + 1000)
        fail_msg("%s logs ts %lld, expected %d s off [%lld, %lld]", instance, (long long)logged,
                 offset_s, (long long)before, (long long)after);
}

static void up(stack *s, const skew *k)
{
    memset(s, 0, sizeof *s);
    s->hold_ms = k->hold_ms;
    /* fleet_duel_functions: the shipped claim_lease (10 s) and ticket_ttl (5 m). */
    fleet_env_opts o = {.functions_extra = fleet_duel_functions,
                        .datacenters = "{name: eu, floor: 0}, {name: us, floor: 0}",
                        .heartbeat = "2s",
                        .deadline = "1500ms",
                        .backoff = "[3s, 5s, 10s]",
                        .max_in_flight = 8};
    fleet_env_start(&s->e, &o);
    spawn(s, &s->fleet, FLEET_BIN, "fleet", "f1", k->fleet);
    spawn(s, &s->allocator[0], ALLOCATOR_BIN, "allocator", "a1", 0);
    spawn(s, &s->allocator[1], ALLOCATOR_BIN, "allocator", "a2", k->allocator);
    spawn(s, &s->intake, "functions/intake/gamefn-intake", "intake", "i1", 0);
    spawn(s, &s->matcher[0], "functions/matcher/gamefn-matcher", "matcher", "m1", 0);
    spawn(s, &s->matcher[1], "functions/matcher/gamefn-matcher", "matcher", "m2", k->matcher);
    spawn(s, &s->ticker, "functions/ticker/gamefn-ticker", "ticker", "t1", 0);
    gf_gamesim_dc dcs[] = {{.name = "eu", .initial = SERVERS_EU, .max = SERVERS_EU},
                           {.name = "us", .initial = SERVERS_US, .max = SERVERS_US}};
    gf_gamesim_opts so = {.dcs = dcs, .n_dcs = 2, .capacity = 2, .play_ms = 200, .workers = 2};
    assert_int_equal(gf_gamesim_start(s->e.fn.nc, &so, &s->sim), GF_OK);
    gf_gamesim_stats st;
    for (int waited = 0;; waited += 100) {
        gf_gamesim_stats_get(s->sim, &st);
        if (st.free >= SERVERS_EU + SERVERS_US || waited > 15000)
            break;
        gf_clock_sleep_ms(100);
    }
    assert_int_equal(st.free, SERVERS_EU + SERVERS_US);
    gf_clock_sleep_ms(300); /* the allocators' fleet mirrors see them */
}

static void down(stack *s)
{
    gf_gamesim_stop(s->sim);
    gf_proc *procs[] = {&s->ticker,       &s->matcher[1],   &s->matcher[0], &s->intake,
                        &s->allocator[1], &s->allocator[0], &s->fleet,      &s->fleet_fixed};
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++)
        if (procs[i]->pid > 0)
            assert_true(gf_fnenv_stop(procs[i], 15000));
    fleet_env_free(&s->e);
}

/* N solo tickets in duel, players of one skill in eu, created one after the other. */
static void submit(stack *s, const char *tag)
{
    for (size_t i = 0; i < N; i++) {
        char key[48], player[48];
        snprintf(key, sizeof key, "skew-%s-%zu", tag, i);
        snprintf(player, sizeof player, "p-%s-%zu", tag, i);
        mm_ticket t = mm_solo(key, player);
        t.pings = "eu:20,us:90";
        mm_create_new(&s->e.fn, &t, s->ids[i], sizeof s->ids[i]);
    }
}

/* Tickets ASSIGNED now, one KV read each (the audit mirror is read once, at the end). */
static size_t assigned_now(stack *s)
{
    size_t n = 0;
    for (size_t i = 0; i < N; i++) {
        Gamefn__V1__TicketRecord *t = fleet_ticket(&s->e, s->ids[i]);
        n += t && t->state == ST(ASSIGNED);
        if (t)
            gamefn__v1__ticket_record__free_unpacked(t, NULL);
    }
    return n;
}

/* Waits up to timeout_ms for every ticket to be ASSIGNED; the ms it took since
 * `since_ms`, -1 if not. */
static int64_t wait_all_assigned(stack *s, int64_t since_ms, int timeout_ms)
{
    for (;;) {
        if (assigned_now(s) == N)
            return gf_clock_mono_ms() - since_ms;
        if (gf_clock_mono_ms() - since_ms > timeout_ms)
            return -1;
        gf_clock_sleep_ms(100);
    }
}

static void report(const char *name, int64_t all_ms, const mm_audit *a, const stack *s)
{
    gf_gamesim_stats st;
    gf_gamesim_stats_get(s->sim, &st);
    fprintf(stderr,
            "skew %-19s: %d tickets all ASSIGNED %5lld ms after the first create; matches "
            "committed %zu, aborted CLAIM_EXPIRED %zu, other (NO_SERVER) %zu; tokens ok %llu "
            "bad %llu\n",
            name, N, (long long)all_ms, a->committed, a->aborted_expired, a->aborted_other,
            (unsigned long long)st.tokens_ok, (unsigned long long)st.tokens_bad);
    assert_int_equal(st.tokens_bad, 0);
}

/* One case: the stack with the clocks of `k`, the load, the figures, the checker. With
 * `fix_fleet` the fleet is restarted with a right clock 3 s after the first create. */
static void run_case(const char *name, const skew *k, bool fix_fleet)
{
    if (GAMEFN_SANITIZED)
        skip();
    static stack s;
    up(&s, k);
    int64_t start = gf_clock_mono_ms();
    submit(&s, name);
    int64_t all = wait_all_assigned(&s, start, fix_fleet ? 3000 : 30000);
    if (fix_fleet) {
        fprintf(stderr,
                "skew %s: %zu of %d assigned in 3 s; the fleet restarted with a right "
                "clock\n",
                name, assigned_now(&s), N);
        assert_true(gf_fnenv_stop(&s.fleet, 15000));
        spawn(&s, &s.fleet_fixed, FLEET_BIN, "fleet", "f2", 0);
        all = wait_all_assigned(&s, start, 30000);
    }
    mm_audit a;
    mm_audit_run(&s.e.fn, &a);
    report(name, all, &a, &s);
    if (all < 0)
        fail_msg("%s: %zu of %d tickets assigned after 30 s", name, a.assigned, N);
    mm_check_clean(&s.e.fn, 0);
    down(&s);
}

static void baseline(void **state)
{
    (void)state;
    run_case("baseline", &(skew){.hold_ms = 300}, false);
}

/* The reference of the allocator's case: with a 300 ms hold, the skewed allocator (whose
 * aborts cost nothing) takes most Matches and the run takes minutes (docs/OPERATIONS.md
 * "Clocks"). */
static void baseline_no_hold(void **state)
{
    (void)state;
    run_case("baseline-no-hold", &(skew){0}, false);
}

/* The documented tolerance, every way at once: nothing may change. */
static void modest_skews(void **state)
{
    (void)state;
    run_case("modest-2s", &(skew){.matcher = 2, .allocator = 2, .fleet = -2, .hold_ms = 300},
             false);
}

static void matcher_ahead(void **state)
{
    (void)state;
    run_case("matcher-ahead-30s", &(skew){.matcher = 30, .hold_ms = 300}, false);
}

static void matcher_behind(void **state)
{
    (void)state;
    run_case("matcher-behind-30s", &(skew){.matcher = -30, .hold_ms = 300}, false);
}

static void allocator_ahead(void **state)
{
    (void)state;
    run_case("allocator-ahead-30s", &(skew){.allocator = 30}, false);
}

static void fleet_behind(void **state)
{
    (void)state;
    run_case("fleet-behind-30s", &(skew){.fleet = -30, .hold_ms = 300}, true);
}

/* The place safety depended on a clock: intake ia writes players/p for a create under
 * key one and is held before its ticket (GAMEFN_TEST_INTAKE_PAUSE=players: the few ms
 * between the two writes, made long); intake ib, 10 s ahead, reads a record 10 s old by
 * its clock. It used to take it for the leftover of a dead create and serve a create
 * for p under key two; ia then wrote its ticket: p held two live tickets and the
 * checker said so. Now ib also counts pending_grace from its own first sight of the
 * record (functions/intake/pending.h), on its monotonic clock: CONFLICT, and clean. */
static void intake_ahead_pending_grace(void **state)
{
    (void)state;
    if (GAMEFN_SANITIZED)
        skip();
    gf_fnenv env;
    assert_int_equal(mm_env_start(&env, NULL), 0);
    gf_proc a = {0}, b = {0};
    char *held[] = {"GAMEFN_TEST_INTAKE_PAUSE=players:3000", NULL};
    char *ahead[] = {"LD_PRELOAD=" GAMEFN_FAKETIME_LIB, "FAKETIME=+10s", NULL};
    assert_int_equal(gf_fnenv_spawn(&env, &a, "functions/intake/gamefn-intake", "ia", held), 0);
    assert_true(gf_fnenv_wait_ping(&env, "intake", "ia", 15000));
    mm_ticket one = mm_solo("pending-one", "p-pending"), two = mm_solo("pending-two", "p-pending");
    Gamefn__V1__CreateTicketReply *out = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&env, &one, 300, &out, &e), -1); /* ia is held */
    assert_true(fleet_log_has(&a, "paused for a test", 2000));
    assert_int_equal(gf_proc_signal(&a, SIGSTOP), 0); /* only ib answers now */
    assert_int_equal(gf_fnenv_spawn(&env, &b, "functions/intake/gamefn-intake", "ib", ahead), 0);
    assert_true(gf_fnenv_wait_ping(&env, "intake", "ib", 15000));
    int code = -1;
    for (int i = 0; i < 20 && code == -1; i++)
        code = mm_create_err(&env, &two, 500, &out, &e); /* a copy ia holds times out */
    if (out)
        gamefn__v1__create_ticket_reply__free_unpacked(out, NULL);
    assert_int_equal(gf_proc_signal(&a, SIGCONT), 0);
    gf_clock_sleep_ms(3500); /* ia writes its ticket */
    fprintf(stderr, "create under key two with key one's create in progress: code %d\n", code);
    assert_int_equal(code, E(CONFLICT));
    mm_check_clean(&env, 0);
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(baseline),       cmocka_unit_test(baseline_no_hold),
        cmocka_unit_test(modest_skews),   cmocka_unit_test(matcher_ahead),
        cmocka_unit_test(matcher_behind), cmocka_unit_test(allocator_ahead),
        cmocka_unit_test(fleet_behind),   cmocka_unit_test(intake_ahead_pending_grace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
