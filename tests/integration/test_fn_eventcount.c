/*
 * The example function eventcount (examples/eventcount/) end to end on a single
 * nats-server with the event partition mapping of deploy/local/nats.conf.in: events
 * published as gamefn.v1.event.<player>.<type> are counted per player and type by two
 * replicas of its partitioned endpoint, exactly once even when a replica is killed; a
 * reset through its pull endpoint zeroes a player's counts; an event whose subject does
 * not parse is dead-lettered without holding its partition back.
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
#include "gamefn/clock.h"

#define EVENTCOUNT "examples/eventcount/gamefn-eventcount"

static void options(gf_fnenv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->server_config = GF_NATSD_EVENT_MAPPING;
    o->streams = "    - name: EVENTS\n"
                 "      subjects: [\"gamefn.v1.evp.>\"]\n"
                 "    - name: EVENTCOUNT_RESETS\n"
                 "      subjects: [\"gamefn.v1.eventcount.reset.>\"]\n"
                 "      retention: workqueue\n";
    o->consumers = "    - stream: EVENTS\n"
                   "      name: eventcount\n"
                   "      partitions: 16\n"
                   "      filter_subject: \"gamefn.v1.evp.{partition}.>\"\n"
                   "      lease_ttl: 3s\n"
                   "      ack_wait: 2s\n"
                   "    - stream: EVENTCOUNT_RESETS\n"
                   "      name: eventcount\n"
                   "      ack_wait: 2s\n";
    o->buckets = "    - name: event_counts\n";
}

/* The player's record as "total kill=n ..." (its counts), or "" when none. */
static void counts_of(gf_fnenv *env, const char *player, char *out, size_t size)
{
    natsMsg *reply = NULL;
    out[0] = '\0';
    if (natsConnection_Request(&reply, env->nc, "gamefn.v1.eventcount.get", player,
                               (int)strlen(player), 2000) != NATS_OK)
        return;
    const char *text = natsMsg_GetData(reply);
    unsigned long long seq = 0, token = 0;
    int used = 0;
    const char *err = NULL;
    if (natsMsgHeader_Get(reply, "Nats-Service-Error-Code", &err) != NATS_OK &&
        sscanf(text, "v1 %llu %llu %n", &seq, &token, &used) == 2)
        snprintf(out, size, "%.*s", natsMsg_GetDataLength(reply) - used, text + used);
    natsMsg_Destroy(reply);
}

struct want {
    const char *player, *counts;
};

static bool counted(gf_fnenv *env, void *arg)
{
    const struct want *w = arg;
    char got[256];
    counts_of(env, w->player, got, sizeof got);
    return strcmp(got, w->counts) == 0;
}

static void publish(gf_fnenv *env, const char *subject)
{
    assert_int_equal(js_Publish(NULL, env->js, subject, "{}", 2, NULL, NULL), NATS_OK);
}

static void counts_each_event_once_and_resets(void **state)
{
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc a = {0}, b = {0};
    options(&o);
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, EVENTCOUNT, "a", NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &b, EVENTCOUNT, "b", NULL), 0);
    assert_true(gf_fnenv_wait_ping(&env, "eventcount", "a", 10000));
    assert_true(gf_fnenv_wait_ping(&env, "eventcount", "b", 10000));

    /* 40 players, each 5 kills and 3 scores, interleaved. */
    for (int round = 0; round < 8; round++) {
        for (int p = 0; p < 40; p++) {
            char subject[96];
            snprintf(subject, sizeof subject, "gamefn.v1.event.p%d.%s", p,
                     round < 5 ? "kill" : "score");
            publish(&env, subject);
        }
        if (round == 3) { /* a replica dies mid-stream: its partitions move to the other */
            gf_proc_signal(&b, SIGKILL);
            assert_int_equal(gf_proc_wait(&b, 5000), 0);
        }
    }
    /* Not a valid player id: dead-lettered, the partition goes on. */
    publish(&env, "gamefn.v1.evp.3.bad*id.kill");
    publish(&env, "gamefn.v1.event.p7.kill");

    for (int p = 0; p < 40; p++) {
        char player[16];
        snprintf(player, sizeof player, "p%d", p);
        struct want w = {player, p == 7 ? "9 kill=6 score=3" : "8 kill=5 score=3"};
        if (!gf_fnenv_eventually(counted, &env, &w, 30000)) {
            char got[256];
            counts_of(&env, player, got, sizeof got);
            fail_msg("player %s: counts '%s', want '%s'", player, got, w.counts);
        }
    }

    assert_int_equal(js_Publish(NULL, env.js, "gamefn.v1.eventcount.reset.p1", NULL, 0, NULL, NULL),
                     NATS_OK);
    struct want zero = {"p1", "0"};
    assert_true(gf_fnenv_eventually(counted, &env, &zero, 10000));
    publish(&env, "gamefn.v1.event.p1.zone");
    struct want after = {"p1", "1 zone=1"};
    assert_true(gf_fnenv_eventually(counted, &env, &after, 10000));

    assert_true(gf_fnenv_stop(&a, 15000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_each_event_once_and_resets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
