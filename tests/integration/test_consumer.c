/*
 * The consumer framework (gamefn/consumer.h) end to end on a real nats-server, through
 * its smallest consumer (tests/fixtures/test_consumer.c: count and sum of ScoreEvent
 * deltas per player): two replicas, one SIGKILLed mid-stream; producer retries
 * (same Msg-Id) and spool replays after the duplicate window (same source/seq, a new
 * Msg-Id); malformed messages (garbage bytes, a missing player id, an unknown type with
 * a typed payload, a payload that does not match its type, oversized) dead-lettered with
 * their reason in `dlq_reasons` while the consumer keeps going; a poison event
 * dead-lettered, then — fixed — re-driven twice and applied once. And SIGKILL at the two
 * worst moments of a batch, decided by the fixture itself rather than by timing: halfway
 * through applying it, and after its effects are stored but before its ack — and SIGSTOP
 * at the same two moments, the replica woken after its partitions moved on. Each test
 * runs twice: with explicit acks, and with ack_policy all plus a linger (one ack per
 * batch, which also acks what precedes it — the poison's termination included).
 * And the effects bucket full: the events wait, unacked and not dead-lettered, and are
 * applied exactly once when it has room.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "event_support.h"
#include "harness_util.h"
#include "gamefn/clock.h"
#include "gamefn/util.h"
#include "gamefn/v1/dlq.pb-c.h"
#include "gamefn/v1/event.pb-c.h"

#define CONSUMER "tests/gamefn-test-consumer"

enum { PLAYERS = 40, EVENTS = 3000 };
#define LINGER "1s"

static void options(gf_fnenv_opts *o, bool ack_all, const char *linger)
{
    memset(o, 0, sizeof *o);
    o->server_config = gf_ev_mapping;
    o->streams = gf_ev_stream;
    o->runtime = "  drain_timeout: 5s\n"
                 "  fetch_batch: 64\n"
                 "  fetch_expiry: 1s\n"
                 "  heartbeat: 250ms\n";
    static const char group[] = GF_EV_SUMS_GROUP "      max_ack_pending: 5000\n";
    o->consumers = group;
    if (ack_all) { /* the same group, acked once per batch, with larger lingering batches */
        static char batched[1024];
        snprintf(batched, sizeof batched,
                 "%s      ack_policy: all\n      fetch_batch: 500\n      linger: %s\n", group,
                 linger);
        o->consumers = batched;
    }
    o->buckets = GF_EV_SUMS_BUCKETS;
}

typedef struct expect {
    uint64_t count[PLAYERS];
    int64_t sum[PLAYERS];
} expect;

typedef struct want {
    const expect *x;
    int bad; /* first player that differs, for the failure message */
} want;

static bool all_applied(gf_fnenv *env, void *arg)
{
    want *w = arg;
    for (int p = 0; p < PLAYERS; p++) {
        char key[16], got[64], exp[64];
        snprintf(key, sizeof key, "p%d", p);
        snprintf(exp, sizeof exp, "%" PRIu64 " %" PRId64, w->x->count[p], w->x->sum[p]);
        if (gf_ev_sums(env->js, key, got, sizeof got) < 0 || strcmp(got, exp) != 0) {
            w->bad = p;
            return false;
        }
    }
    return true;
}

static void publish_score(jsCtx *js, expect *x, const char *source, uint64_t seq, int p,
                          int64_t delta, const char *msg_id, bool count)
{
    char player[16];
    uint8_t *data = NULL;
    size_t len = 0;
    snprintf(player, sizeof player, "p%d", p);
    assert_int_equal(gf_ev_score(source, seq, player, delta, NULL, 0, &data, &len), 0);
    assert_int_equal(gf_ev_publish(js, player, "score", data, len, source, seq, msg_id, true), 0);
    free(data);
    if (count) {
        x->count[p]++;
        x->sum[p] += delta;
    }
}

/* The DeadReason stored for the message at `seq` of partition `part`, or false. */
static bool reason_of(gf_fnenv *env, unsigned part, uint64_t seq, char *why, size_t size)
{
    char key[128];
    uint8_t buf[2048];
    snprintf(key, sizeof key, "EVENTS.sums-p%02u.%" PRIu64, part, seq);
    int n = gf_ev_kv_get(env->js, "dlq_reasons", key, buf, sizeof buf);
    if (n < 0)
        return false;
    Gamefn__V1__DeadReason *r = gamefn__v1__dead_reason__unpack(NULL, (size_t)n, buf);
    if (!r)
        return false;
    snprintf(why, size, "%s", r->error);
    gamefn__v1__dead_reason__free_unpacked(r, NULL);
    return true;
}

/* Publishes raw bytes for player p1 (partition known) and returns its stream seq. */
static uint64_t publish_bad(gf_fnenv *env, const char *type, const void *data, size_t len,
                            const char *id)
{
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id;
    jsPubAck *ack = NULL;
    char subject[64];
    snprintf(subject, sizeof subject, "gamefn.v1.event.p1.%s", type);
    assert_int_equal(js_Publish(&ack, env->js, subject, data, (int)len, &po, NULL), NATS_OK);
    uint64_t seq = ack->Sequence;
    jsPubAck_Destroy(ack);
    return seq;
}

typedef struct reason_want {
    uint64_t seq;
    const char *part;
} reason_want;

static bool reason_is(gf_fnenv *env, void *arg)
{
    reason_want *r = arg;
    char why[300];
    return reason_of(env, gf_ev_partition("p1"), r->seq, why, sizeof why) && strstr(why, r->part);
}

/* A server with the consumer's streams and buckets, a JetStream context, the expectations. */
typedef struct cenv {
    gf_fnenv env;
    jsCtx *js;
    expect *x;
    bool ack_all;
} cenv;

/* The durables were created with the configured ack policy (checked once the replicas
 * have provisioned them). */
static void assert_ack_policy(const cenv *c)
{
    jsConsumerInfo *ci = NULL;
    assert_int_equal(js_GetConsumerInfo(&ci, c->js, "EVENTS", "sums-p00", NULL, NULL), NATS_OK);
    assert_int_equal(ci->Config->AckPolicy, c->ack_all ? js_AckAll : js_AckExplicit);
    jsConsumerInfo_Destroy(ci);
}

static int setup_with(void **state, bool ack_all, const char *linger)
{
    cenv *c = calloc(1, sizeof *c);
    gf_fnenv_opts o;
    options(&o, ack_all, linger);
    if (!c || gf_fnenv_start_opts(&c->env, &o) != 0)
        return -1;
    c->js = gf_ev_js(c->env.nc);
    c->x = calloc(1, sizeof *c->x);
    c->ack_all = ack_all;
    *state = c;
    return c->js && c->x ? 0 : -1;
}

static int setup(void **state)
{
    return setup_with(state, false, NULL);
}

static int setup_ack_all(void **state)
{
    return setup_with(state, true, "200ms");
}

static int setup_linger(void **state)
{
    return setup_with(state, true, LINGER);
}

static int teardown(void **state)
{
    cenv *c = *state;
    jsCtx_Destroy(c->js);
    free(c->x);
    gf_fnenv_free(&c->env);
    free(c);
    return 0;
}

/* Every player's count and sum as expected within timeout_ms, or the test fails naming one. */
static void assert_all_applied(cenv *c, int timeout_ms)
{
    want w = {c->x, -1};
    if (!gf_fnenv_eventually(all_applied, &c->env, &w, timeout_ms)) {
        char got[64] = "";
        char key[16];
        snprintf(key, sizeof key, "p%d", w.bad);
        gf_ev_sums(c->env.js, key, got, sizeof got);
        fail_msg("player p%d: '%s', want %" PRIu64 " %" PRId64, w.bad, got, c->x->count[w.bad],
                 c->x->sum[w.bad]);
    }
}

static void exactly_once_through_kills_replays_poison_and_redrives(void **state)
{
    cenv *ce = *state;
    gf_fnenv *env = &ce->env;
    jsCtx *js = ce->js;
    expect *x = ce->x;
    gf_proc a = {0}, b = {0}, c = {0};
    char *window[] = {"TEST_CONSUMER_WINDOW=8", NULL};
    assert_int_equal(gf_fnenv_spawn_ready(env, &a, CONSUMER, "test-consumer", "a", window), 0);
    assert_int_equal(gf_fnenv_spawn_ready(env, &b, CONSUMER, "test-consumer", "b", window), 0);

    assert_ack_policy(ce);
    uint64_t seq[2] = {0, 0};
    const char *sources[2] = {"gs-a", "gs-b"};
    for (int i = 0; i < EVENTS; i++) {
        int s = i % 2;
        int p = (i * 7) % PLAYERS;
        publish_score(js, x, sources[s], ++seq[s], p, 1 + i % 9, NULL, true);
        if (i % 50 == 0) /* a producer retry: same Msg-Id, deduplicated by the stream */
            publish_score(js, x, sources[s], seq[s], p, 1 + i % 9, NULL, false);
        if (i % 97 == 0) { /* a spool replay after the duplicate window: new Msg-Id */
            char id[64];
            snprintf(id, sizeof id, "replay-%d", i);
            publish_score(js, x, sources[s], seq[s], p, 1 + i % 9, id, false);
        }
        if (i == EVENTS / 2) { /* a replica dies mid-stream */
            assert_int_equal(gf_ev_flush(js), 0);
            gf_proc_signal(&b, SIGKILL);
            assert_int_equal(gf_proc_wait(&b, 5000), 0);
        }
    }
    assert_int_equal(gf_ev_flush(js), 0);
    assert_all_applied(ce, 60000);

    /* Malformed messages: each dead-lettered with its reason, the consumer goes on. */
    uint8_t *data = NULL;
    size_t len = 0;
    static const char garbage[] = "\xff\xfe not protobuf";
    reason_want bad[5];
    bad[0] = (reason_want){publish_bad(env, "score", garbage, sizeof garbage - 1, "bad-1"),
                           "not a GameEvent"};
    assert_int_equal(gf_ev_score("gs-x", 1, "p1", 5, NULL, 0, &data, &len), 0);
    Gamefn__V1__GameEvent *ev = gamefn__v1__game_event__unpack(NULL, len, data);
    free(data);
    ev->player_id[0] = '\0'; /* missing player id */
    assert_int_equal(gf_pack(&ev->base, &data, &len), GF_OK);
    bad[1] = (reason_want){publish_bad(env, "score", data, len, "bad-2"), "player_id: is empty"};
    free(data);
    gamefn__v1__game_event__free_unpacked(ev, NULL);
    assert_int_equal(gf_ev_score("gs-x", 2, "p1", 5, NULL, 0, &data, &len), 0);
    ev = gamefn__v1__game_event__unpack(NULL, len, data);
    free(data);
    snprintf(ev->event_type, 6, "%s", "tele"); /* unknown type carrying a score payload */
    assert_int_equal(gf_pack(&ev->base, &data, &len), GF_OK);
    bad[2] = (reason_want){publish_bad(env, "tele", data, len, "bad-3"),
                           "is score, but event_type 'tele' carries generic"};
    free(data);
    gamefn__v1__game_event__free_unpacked(ev, NULL);
    assert_int_equal(gf_ev_score("gs-x", 3, "p1", 5, NULL, 0, &data, &len), 0);
    ev = gamefn__v1__game_event__unpack(NULL, len, data);
    free(data);
    snprintf(ev->event_type, 6, "%s", "kill"); /* a kill with a score payload */
    assert_int_equal(gf_pack(&ev->base, &data, &len), GF_OK);
    bad[3] = (reason_want){publish_bad(env, "kill", data, len, "bad-4"),
                           "is score, but event_type 'kill' carries kill"};
    free(data);
    gamefn__v1__game_event__free_unpacked(ev, NULL);
    uint8_t *big = calloc(1, 70000);
    big[0] = 0x0a; /* field 1, length-delimited: a 69,997-byte event id */
    big[1] = 0xed;
    big[2] = 0xa2;
    big[3] = 0x04;
    bad[4] = (reason_want){publish_bad(env, "score", big, 70000, "bad-5"), "exceeds 65536"};
    free(big);
    for (int i = 0; i < 5; i++) {
        if (!gf_fnenv_eventually(reason_is, env, &bad[i], 20000)) {
            char why[300] = "(none)";
            reason_of(env, gf_ev_partition("p1"), bad[i].seq, why, sizeof why);
            fail_msg("malformed %d (seq %" PRIu64 "): reason '%s', want '%s'", i, bad[i].seq, why,
                     bad[i].part);
        }
    }

    /* Poison: refused (dead-lettered with its dead mark), the partition moves on, and
     * the source goes more than W = 8 past it on that key. */
    uint64_t pseq = ++seq[0];
    publish_score(js, x, sources[0], pseq, 1, 666, NULL, false);
    for (int i = 0; i < 40; i++) /* enough later events of the same source and player */
        publish_score(js, x, sources[0], ++seq[0], 1, 2, NULL, true);
    assert_int_equal(gf_ev_flush(js), 0);
    assert_all_applied(ce, 30000);

    /* Fixed: a replica that accepts 666 takes over, and the poison is re-driven twice. */
    assert_true(gf_fnenv_stop(&a, 15000));
    char *accept[] = {"TEST_CONSUMER_ACCEPT_666=1", "TEST_CONSUMER_WINDOW=8", NULL};
    assert_int_equal(gf_fnenv_spawn_ready(env, &c, CONSUMER, "test-consumer", "c", accept), 0);
    assert_int_equal(gf_ev_score(sources[0], pseq, "p1", 666, NULL, 0, &data, &len), 0);
    char durable[32];
    snprintf(durable, sizeof durable, "sums-p%02u", gf_ev_partition("p1"));
    for (int i = 0; i < 2; i++) {
        char id[64];
        snprintf(id, sizeof id, "redrive-%d", i);
        natsMsg *m = NULL;
        char subject[64];
        snprintf(subject, sizeof subject, "gamefn.v1.evp.%u.p1.score", gf_ev_partition("p1"));
        assert_int_equal(natsMsg_Create(&m, subject, NULL, (const char *)data, (int)len), NATS_OK);
        natsMsgHeader_Set(m, "Nats-Msg-Id", id);
        natsMsgHeader_Set(m, "Gamefn-Redrive", durable);
        jsPubAck *ack = NULL;
        assert_int_equal(js_PublishMsg(&ack, env->js, m, NULL, NULL), NATS_OK);
        jsPubAck_Destroy(ack);
        natsMsg_Destroy(m);
    }
    free(data);
    x->count[1]++;
    x->sum[1] += 666;
    assert_all_applied(ce, 30000);
    gf_clock_sleep_ms(1500); /* the second re-drive has been handled too */
    want w = {x, -1};
    assert_true(all_applied(env, &w));

    assert_true(gf_fnenv_stop(&c, 15000));
    gf_proc_cleanup(&b);
}

/* 100 score events from `source` (seq counting on), spread over the players, flushed. */
static void wave(jsCtx *js, expect *x, const char *source, uint64_t *seq)
{
    for (int i = 0; i < 100; i++) {
        ++*seq;
        publish_score(js, x, source, *seq, (int)(*seq * 7 % PLAYERS), 1 + (int)(*seq % 9), NULL,
                      true);
    }
    assert_int_equal(gf_ev_flush(js), 0);
}

/* Two replicas that SIGKILL themselves mid-batch (one in apply, one between the stored
 * effect and the ack) and one that survives; waves of events until both have died, then
 * every player's count and sum must be exact: nothing lost, nothing applied twice. */
static void sigkill_mid_batch_loses_and_doubles_nothing(void **state)
{
    cenv *ce = *state;
    gf_fnenv *env = &ce->env;
    jsCtx *js = ce->js;
    expect *x = ce->x;
    gf_proc a = {0}, b = {0}, c = {0};
    char *after_store[] = {"TEST_CONSUMER_KILL_AFTER_STORE=3", NULL};
    char *in_apply[] = {"TEST_CONSUMER_KILL_IN_APPLY=150", NULL};
    assert_int_equal(gf_fnenv_spawn_ready(env, &a, CONSUMER, "test-consumer", "a", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(env, &b, CONSUMER, "test-consumer", "b", after_store), 0);
    assert_int_equal(gf_fnenv_spawn_ready(env, &c, CONSUMER, "test-consumer", "c", in_apply), 0);
    gf_clock_sleep_ms(1000); /* the partitions spread over the three */
    assert_ack_policy(ce);

    uint64_t seq = 0;
    int waves = 0;
    for (; waves < 60 && (gf_proc_running(&b) || gf_proc_running(&c)); waves++) {
        wave(js, x, "gs-k", &seq);
        gf_clock_sleep_ms(200);
    }
    printf("sigkill: %d waves, %" PRIu64 " events; after-store replica %s, in-apply replica %s\n",
           waves, seq, gf_proc_running(&b) ? "alive" : "killed",
           gf_proc_running(&c) ? "alive" : "killed");
    assert_false(gf_proc_running(&b)); /* each fault did happen */
    assert_false(gf_proc_running(&c));
    assert_all_applied(ce, 60000);
    gf_clock_sleep_ms(1500); /* a late redelivery would have landed */
    want w = {x, -1};
    assert_true(all_applied(env, &w));

    assert_true(gf_fnenv_stop(&a, 15000));
    gf_proc_cleanup(&b);
    gf_proc_cleanup(&c);
}

/* The same two moments as above, but the replicas stop (SIGSTOP) instead of dying and
 * wake 6 s later — past their partition leases (3 s) and ack waits (2 s), after the
 * survivor has taken their partitions and applied the same events. A woken replica
 * still holds its batch in memory (one half applied, one stored and not acked) and goes
 * on as if nothing happened: every player's count and sum must still be exact. */
static void sigstop_mid_batch_then_wake_doubles_nothing(void **state)
{
    cenv *ce = *state;
    gf_fnenv *env = &ce->env;
    jsCtx *js = ce->js;
    expect *x = ce->x;
    gf_proc a = {0}, b = {0}, c = {0};
    char *after_store[] = {"TEST_CONSUMER_PAUSE_AFTER_STORE=3", NULL};
    char *in_apply[] = {"TEST_CONSUMER_PAUSE_IN_APPLY=150", NULL};
    assert_int_equal(gf_fnenv_spawn_ready(env, &a, CONSUMER, "test-consumer", "a", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(env, &b, CONSUMER, "test-consumer", "b", after_store), 0);
    assert_int_equal(gf_fnenv_spawn_ready(env, &c, CONSUMER, "test-consumer", "c", in_apply), 0);
    gf_clock_sleep_ms(1000); /* the partitions spread over the three */

    uint64_t seq = 0;
    int64_t both_stopped_at = 0;
    for (int waves = 0; waves < 150; waves++) {
        wave(js, x, "gs-p", &seq);
        gf_clock_sleep_ms(100);
        if (!both_stopped_at && gf_proc_pid_stopped(b.pid) && gf_proc_pid_stopped(c.pid))
            both_stopped_at = gf_clock_mono_ms();
        if (both_stopped_at && gf_clock_mono_ms() - both_stopped_at >= 6000)
            break;
    }
    printf("sigstop: %" PRIu64 " events; after-store replica %s, in-apply replica %s\n", seq,
           gf_proc_pid_stopped(b.pid) ? "stopped" : "running",
           gf_proc_pid_stopped(c.pid) ? "stopped" : "running");
    assert_true(both_stopped_at > 0); /* each fault did happen */
    assert_int_equal(kill(b.pid, SIGCONT), 0);
    assert_int_equal(kill(c.pid, SIGCONT), 0);
    for (int waves = 0; waves < 10; waves++) { /* the woken ones take work again */
        wave(js, x, "gs-p", &seq);
        gf_clock_sleep_ms(200);
    }
    assert_all_applied(ce, 60000);
    gf_clock_sleep_ms(3000); /* a woken replica's late store would have landed */
    want w = {x, -1};
    assert_true(all_applied(env, &w));
    assert_true(gf_proc_running(&b) && gf_proc_running(&c)); /* woken, not dead */

    assert_true(gf_fnenv_stop(&a, 15000));
    assert_true(gf_fnenv_stop(&b, 15000));
    assert_true(gf_fnenv_stop(&c, 15000));
}

/* Takes what a stranger's pull requests got from sub (the owner's connection is another
 * one): the number of messages, status replies not counted. */
static int drain_thief(natsSubscription *sub, int64_t wait_ms)
{
    int got = 0;
    natsMsg *m = NULL;
    while (natsSubscription_NextMsg(&m, sub, wait_ms) == NATS_OK) {
        got += natsMsg_GetDataLength(m) > 0;
        natsMsg_Destroy(m); /* never acked: they stay pending until their ack wait */
        m = NULL;
    }
    return got;
}

/* A pull request to every partition's durable from a connection that holds no lease,
 * as a replica stopped between its deadline check and the send would make when it wakes
 * after its tenure (or a forged one): each takes up to 5 messages the owner never sees
 * and never acks them. The owner is stopped meanwhile (300 ms, well within its lease),
 * so the messages are stored and ready, and each request takes its 5 at once. The owner
 * must see the gap in the server's delivery numbers, hand its batch back and wait until
 * the taken messages come back: every event applied once and, per player, in stream
 * order (the fixture counts any applied out of order). Without that check, an ack of a
 * later message covers the taken ones under ack_policy all (lost), and they come back
 * after newer ones otherwise. */
static void stolen_deliveries_come_back_in_order(void **state)
{
    cenv *ce = *state;
    gf_fnenv *env = &ce->env;
    gf_proc a = {0};
    assert_int_equal(gf_fnenv_spawn_ready(env, &a, CONSUMER, "test-consumer", "a", NULL), 0);
    gf_clock_sleep_ms(1000); /* every partition taken */
    assert_ack_policy(ce);
    natsSubscription *thief = NULL;
    assert_int_equal(natsConnection_SubscribeSync(&thief, env->nc, "thief.>"), NATS_OK);
    static const char request[] = "{\"batch\":5,\"no_wait\":true,\"expires\":1000000000}";
    uint64_t seq = 0;
    int stolen = 0;
    for (int w = 0; w < 20; w++) {
        if (w != 5) {
            wave(ce->js, ce->x, "gs-s", &seq);
            gf_clock_sleep_ms(100);
            continue;
        }
        assert_int_equal(kill(a.pid, SIGSTOP), 0);
        for (int i = 0; i < 100 && !gf_proc_pid_stopped(a.pid); i++)
            gf_clock_sleep_ms(10);
        wave(ce->js, ce->x, "gs-s", &seq);
        for (unsigned p = 0; p < 16; p++) {
            char subject[96], reply[32];
            snprintf(subject, sizeof subject, "$JS.API.CONSUMER.MSG.NEXT.EVENTS.sums-p%02u", p);
            snprintf(reply, sizeof reply, "thief.%u", p);
            assert_int_equal(natsConnection_PublishRequest(env->nc, subject, reply, request,
                                                           (int)sizeof request - 1),
                             NATS_OK);
        }
        stolen += drain_thief(thief, 300);
        assert_int_equal(kill(a.pid, SIGCONT), 0);
    }
    stolen += drain_thief(thief, 500);
    printf("stranger's pull requests: %d of %" PRIu64 " events taken\n", stolen, seq);
    assert_true(stolen > 0); /* the fault did happen */
    assert_all_applied(ce, 60000);
    gf_clock_sleep_ms(1500); /* nothing applied twice late */
    want w = {ce->x, -1};
    assert_true(all_applied(env, &w));
    assert_true(gf_fnenv_wait_log(&a, "delivered to another reader", 1000));
    natsSubscription_Destroy(thief);
    assert_true(gf_fnenv_stop(&a, 15000));
}

/* Messages in the effects bucket's stream: every effect write is one. */
static uint64_t effect_writes(const cenv *c)
{
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, c->js, "KV_test_sums", NULL, NULL), NATS_OK);
    uint64_t n = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return n;
}

/* linger: a trickle (800 events over about 2 s, 40 players over 16 partitions) gathers
 * into a few batches per partition, so a player's events share one effect write. Without
 * it each fetch takes the one or two events that arrived since the last: about one
 * write per event. */
static void linger_gathers_a_trickle_into_fewer_writes(void **state)
{
    cenv *ce = *state;
    gf_proc a = {0};
    assert_int_equal(gf_fnenv_spawn_ready(&ce->env, &a, CONSUMER, "test-consumer", "a", NULL), 0);
    uint64_t before = effect_writes(ce);
    enum { TRICKLE = 800 };
    for (int i = 0; i < TRICKLE; i++) {
        publish_score(ce->js, ce->x, "gs-t", (uint64_t)i + 1, i % PLAYERS, 1 + i % 5, NULL, true);
        if (i % 40 == 39) {
            assert_int_equal(gf_ev_flush(ce->js), 0);
            gf_clock_sleep_ms(100);
        }
    }
    assert_int_equal(gf_ev_flush(ce->js), 0);
    assert_all_applied(ce, 30000);
    uint64_t writes = effect_writes(ce) - before;
    printf("linger %s: %d events, %" PRIu64 " effect writes\n", LINGER, TRICKLE, writes);
    assert_true(writes * 3 < TRICKLE);
    assert_true(gf_fnenv_stop(&a, 15000));
}

/* KV_test_sums' max_bytes: 1 leaves no room (the bucket is discard new), -1 none. */
static void sums_max_bytes(cenv *ce, int64_t max_bytes)
{
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, ce->js, "KV_test_sums", NULL, NULL), NATS_OK);
    assert_int_equal(si->Config->Discard, js_DiscardNew);
    si->Config->MaxBytes = max_bytes;
    assert_int_equal(js_UpdateStream(NULL, ce->js, si->Config, NULL, NULL), NATS_OK);
    jsStreamInfo_Destroy(si);
}

/* The effects bucket full (10077): nothing is applied, acked or dead-lettered meanwhile
 * (longer than the group's backoff and max_deliver allow for a failing message), and
 * once it has room every event is applied exactly once. */
static void effects_bucket_full_holds_the_events(void **state)
{
    cenv *ce = *state;
    gf_proc a = {0};
    assert_int_equal(gf_fnenv_spawn_ready(&ce->env, &a, CONSUMER, "test-consumer", "a", NULL), 0);
    sums_max_bytes(ce, 1);
    enum { N = 400 };
    for (int i = 0; i < N; i++)
        publish_score(ce->js, ce->x, "gs-f", (uint64_t)i + 1, i % PLAYERS, 1 + i % 7, NULL, true);
    assert_int_equal(gf_ev_flush(ce->js), 0);
    assert_true(gf_fnenv_wait_log(&a, "effect write not confirmed", 10000));
    gf_clock_sleep_ms(3000);
    assert_int_equal(th_stream_msgs(ce->js, "KV_test_sums"), 0);
    assert_int_equal(th_stream_msgs(ce->js, "KV_dlq_reasons"), 0);
    sums_max_bytes(ce, -1);
    assert_all_applied(ce, 30000);
    assert_int_equal(th_stream_msgs(ce->js, "KV_dlq_reasons"), 0);
    assert_true(gf_fnenv_stop(&a, 15000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(exactly_once_through_kills_replays_poison_and_redrives,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(sigstop_mid_batch_then_wake_doubles_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(sigkill_mid_batch_loses_and_doubles_nothing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(exactly_once_through_kills_replays_poison_and_redrives,
                                        setup_ack_all, teardown),
        cmocka_unit_test_setup_teardown(sigstop_mid_batch_then_wake_doubles_nothing, setup_ack_all,
                                        teardown),
        cmocka_unit_test_setup_teardown(sigkill_mid_batch_loses_and_doubles_nothing, setup_ack_all,
                                        teardown),
        cmocka_unit_test_setup_teardown(stolen_deliveries_come_back_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(stolen_deliveries_come_back_in_order, setup_ack_all,
                                        teardown),
        cmocka_unit_test_setup_teardown(effects_bucket_full_holds_the_events, setup, teardown),
        cmocka_unit_test_setup_teardown(linger_gathers_a_trickle_into_fewer_writes, setup_linger,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
