/*
 * Tick endpoints end to end: two test workers compete for the tick lease; exactly one
 * publishes ticks (one lease token; no (token, seq) pair twice), one
 * group member handles each tick, and the other instance takes over when the leader
 * is SIGKILLed (after the lease expires) or stops cleanly (it releases the lease).
 * The same split in two functions: tickers (GF_TICK_PUBLISH, two tick groups) and
 * handlers (GF_TICK_HANDLE on a wildcard): one ticker active, handlers only handle,
 * failover, and a tick from a deposed tenure (older token) is dropped.
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

#include "fn_support.h"

#define WORKER    "tests/gamefn-test-worker"
#define LEASE_KEY "tick.test-worker.tick"

static char *const tick_env[] = {"GAMEFN_TEST_MODE=tick", NULL};

/* The holder's instance id of lease `key`, from the KV value "<expires> <holder>". */
static bool lease_holder_of(gf_fnenv *env, const char *key, char *holder, size_t size)
{
    kvStore *kv = NULL;
    kvEntry *e = NULL;
    bool ok = false;
    if (js_KeyValue(&kv, env->js, "TEST_LEASES") == NATS_OK &&
        kvStore_Get(&e, kv, key) == NATS_OK) {
        const char *v = kvEntry_ValueString(e);
        const char *space = v ? strchr(v, ' ') : NULL;
        if (space) {
            snprintf(holder, size, "%s", space + 1);
            ok = true;
        }
    }
    kvEntry_Destroy(e);
    kvStore_Destroy(kv);
    return ok;
}

static bool lease_holder(gf_fnenv *env, char *holder, size_t size)
{
    return lease_holder_of(env, LEASE_KEY, holder, size);
}

/* What the handlers recorded on test.results.ticks, "<seq> <token> <who> <subject>". */
typedef struct ticks {
    size_t count;
    uint64_t tokens[8]; /* distinct lease tokens (tenures) seen, in order of appearance */
    size_t ntokens;
    bool duplicate;         /* a (token, seq, subject) published twice */
    size_t per_subject[2];  /* test.tick.g2, and every other subject */
    bool handled_by_ticker; /* an instance named t* (a ticker) handled a tick */
    bool saw_forged;        /* seq 999999: the test's own tick of an older token */
} ticks;

typedef struct tick_line {
    long long seq;
    unsigned long long token;
    char who[96], subject[96];
} tick_line;

static tick_line parse_line(const char *text)
{
    tick_line l;
    assert_int_equal(sscanf(text, "%lld %llu %95s %95s", &l.seq, &l.token, l.who, l.subject), 4);
    return l;
}

static void read_ticks(gf_fnenv *env, ticks *t)
{
    gf_lines lines;
    memset(t, 0, sizeof *t);
    assert_int_equal(gf_fnenv_results(env, "test.results.ticks", &lines), 0);
    for (size_t i = 0; i < lines.count; i++) {
        tick_line l = parse_line(lines.lines[i]);
        assert_true(l.seq >= 1);
        assert_true(l.token >= 1);
        t->handled_by_ticker |= l.who[0] == 't';
        t->saw_forged |= l.seq == 999999;
        t->per_subject[strcmp(l.subject, "test.tick.g2") != 0]++;
        bool known = false;
        for (size_t k = 0; k < t->ntokens; k++)
            known |= t->tokens[k] == l.token;
        if (!known && t->ntokens < 8)
            t->tokens[t->ntokens++] = l.token;
        for (size_t j = 0; j < i; j++) {
            tick_line o = parse_line(lines.lines[j]);
            t->duplicate |= o.seq == l.seq && o.token == l.token && !strcmp(o.subject, l.subject);
        }
    }
    t->count = lines.count;
    gf_fnenv_lines_free(&lines);
}

struct more {
    size_t after;
};

static bool ticks_beyond(gf_fnenv *env, void *arg)
{
    struct more *m = arg;
    ticks t;
    read_ticks(env, &t);
    return t.count >= m->after;
}

struct holder_not {
    const char *id;
};

static bool holder_changed(gf_fnenv *env, void *arg)
{
    struct holder_not *h = arg;
    char now[96];
    return lease_holder(env, now, sizeof now) && strcmp(now, h->id) != 0;
}

static gf_proc *by_id(gf_proc *a, gf_proc *b, const char *id)
{
    return strcmp(id, "a") == 0 ? a : b;
}

static void one_leader_and_failover(void **state)
{
    gf_fnenv env;
    gf_proc a = {0}, b = {0};
    ticks t;
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, WORKER, "a", tick_env), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &b, WORKER, "b", tick_env), 0);
    /* 30 s: the two provision at once, and under a sanitizer on a loaded machine a
     * JetStream API call may time out and be retried with backoff (CI saw 10 s pass). */
    assert_true(gf_fnenv_wait_ready(&env, &a, "test-worker", "a", 30000));
    assert_true(gf_fnenv_wait_ready(&env, &b, "test-worker", "b", 30000));

    struct more m = {20};
    assert_true(gf_fnenv_eventually(ticks_beyond, &env, &m, 15000));
    read_ticks(&env, &t);
    assert_false(t.duplicate);
    assert_int_equal(t.ntokens, 1); /* one leader all along */

    /* SIGKILL the leader: the lease (ttl 1 s) expires and the other takes over. */
    char leader[96];
    assert_true(lease_holder(&env, leader, sizeof leader));
    gf_proc *dead = by_id(&a, &b, leader);
    gf_proc *alive = dead == &a ? &b : &a;
    gf_proc_signal(dead, SIGKILL);
    assert_int_equal(gf_proc_wait(dead, 5000), 0);
    struct holder_not h = {leader};
    assert_true(gf_fnenv_eventually(holder_changed, &env, &h, 10000));
    read_ticks(&env, &t);
    m.after = t.count + 10;
    assert_true(gf_fnenv_eventually(ticks_beyond, &env, &m, 10000));
    read_ticks(&env, &t);
    assert_false(t.duplicate);
    assert_int_equal(t.ntokens, 2); /* exactly one new tenure, with a larger token */
    assert_true(t.tokens[1] > t.tokens[0]);

    assert_true(gf_fnenv_stop(alive, 15000));
    gf_fnenv_free(&env);
}

static bool lease_gone(gf_fnenv *env, void *arg)
{
    char holder[96];
    return !lease_holder(env, holder, sizeof holder);
}

static void clean_stop_releases_the_lease(void **state)
{
    gf_fnenv env;
    gf_proc a = {0};
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, WORKER, "a", tick_env), 0);
    assert_true(gf_fnenv_wait_ready(&env, &a, "test-worker", "a", 30000));
    struct more m = {3};
    assert_true(gf_fnenv_eventually(ticks_beyond, &env, &m, 10000));
    char holder[96];
    assert_true(lease_holder(&env, holder, sizeof holder));
    assert_string_equal(holder, "a");

    assert_true(gf_fnenv_stop(&a, 15000));
    /* Released (a delete marker), not left to expire. */
    assert_true(lease_gone(&env, NULL));
    gf_fnenv_free(&env);
}

/* ---- a ticker function and separate handlers ------------------------------- */

#define TICKER_KEY "tick.test-worker.ticks"

static bool ticker_changed(gf_fnenv *env, void *arg)
{
    char now[96];
    return lease_holder_of(env, TICKER_KEY, now, sizeof now) && strcmp(now, arg) != 0;
}

/* A tick as a deposed leader would still send it: an older token. */
static void publish_forged_tick(gf_fnenv *env, uint64_t token)
{
    natsMsg *m = NULL;
    char buf[32];
    assert_int_equal(natsMsg_Create(&m, "test.tick.g1", NULL, NULL, 0), NATS_OK);
    natsMsgHeader_Set(m, "Gamefn-Tick-Seq", "999999");
    natsMsgHeader_Set(m, "Gamefn-Tick-Time", "1");
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)token);
    natsMsgHeader_Set(m, "Gamefn-Lease-Token", buf);
    assert_int_equal(natsConnection_PublishMsg(env->nc, m), NATS_OK);
    natsMsg_Destroy(m);
}

static void ticker_and_handlers_apart(void **state)
{
    char *const ticker_env[] = {"GAMEFN_TEST_MODE=ticker", NULL};
    char *const handler_env[] = {"GAMEFN_TEST_MODE=tick-handler", NULL};
    gf_fnenv env;
    gf_proc t1 = {0}, t2 = {0}, h1 = {0}, h2 = {0};
    ticks t;
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &h1, WORKER, "test-worker", "h1", handler_env), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &h2, WORKER, "test-worker", "h2", handler_env), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &t1, WORKER, "t1", ticker_env), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &t2, WORKER, "t2", ticker_env), 0);

    struct more m = {30};
    assert_true(gf_fnenv_eventually(ticks_beyond, &env, &m, 15000));
    read_ticks(&env, &t);
    assert_false(t.handled_by_ticker); /* tickers publish, handlers handle */
    assert_false(t.duplicate);
    assert_int_equal(t.ntokens, 1);                                /* one ticker active */
    assert_true(t.per_subject[0] >= 10 && t.per_subject[1] >= 10); /* g2 and g1 */
    uint64_t first_token = t.tokens[0];

    /* SIGKILL the active ticker: the other takes over with a larger token. */
    char leader[96];
    assert_true(lease_holder_of(&env, TICKER_KEY, leader, sizeof leader));
    gf_proc *dead = strcmp(leader, "t1") == 0 ? &t1 : &t2;
    gf_proc *alive = dead == &t1 ? &t2 : &t1;
    gf_proc_signal(dead, SIGKILL);
    assert_int_equal(gf_proc_wait(dead, 5000), 0);
    assert_true(gf_fnenv_eventually(ticker_changed, &env, leader, 10000));
    m.after = t.count + 40;
    assert_true(gf_fnenv_eventually(ticks_beyond, &env, &m, 15000));
    read_ticks(&env, &t);
    assert_int_equal(t.ntokens, 2);
    assert_true(t.tokens[1] > first_token);
    assert_false(t.duplicate);

    /* Both handlers have seen the new token by now: a tick of the old tenure is dropped. */
    for (int i = 0; i < 4; i++)
        publish_forged_tick(&env, first_token);
    m.after = t.count + 10;
    assert_true(gf_fnenv_eventually(ticks_beyond, &env, &m, 10000));
    read_ticks(&env, &t);
    assert_false(t.saw_forged);

    assert_true(gf_fnenv_stop(alive, 15000));
    assert_true(gf_fnenv_stop(&h1, 15000));
    assert_true(gf_fnenv_stop(&h2, 15000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_leader_and_failover),
        cmocka_unit_test(clean_stop_releases_the_lease),
        cmocka_unit_test(ticker_and_handlers_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
