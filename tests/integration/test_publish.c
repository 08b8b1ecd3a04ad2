/*
 * test_publish.c — gamefn/publish.h against one real nats-server: every message
 * acked exactly once and stored once; resent Msg-Ids come back as duplicates of the
 * original sequence; the window bounds what is in flight and a full window makes a
 * send wait, time out or give up on stop; flush; close with messages in flight;
 * closes while answers are still arriving; the give-up deadline; sends from inside
 * callbacks; extra headers; bad input refused with nothing sent; and the server
 * stopped for seconds and restarted on its store while messages are in flight. No
 * timing assertions: waits are bounds.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "harness_util.h"
#include "publish_util.h"

static gf_publish *open_pub(natsConnection *nc, const gf_publish_opts *o)
{
    gf_publish *p = NULL;
    assert_int_equal(gf_publish_open(nc, o, &p), GF_OK);
    return p;
}

/* Every id in the stream once, at the sequence its callback reported. */
static void assert_stored_once(jsCtx *js, const char *stream, pt_tally *t, const char *prefix,
                               uint64_t stream_msgs)
{
    char **ids = pt_read_ids(js, stream, stream_msgs);
    for (uint64_t i = 0; i < stream_msgs; i++)
        for (uint64_t j = 0; ids[i] && j < i; j++)
            if (ids[j] && strcmp(ids[i], ids[j]) == 0)
                fail_msg("%s stored twice (seq %llu and %llu)", ids[i], (unsigned long long)j + 1,
                         (unsigned long long)i + 1);
    for (int i = 0; i < t->n; i++) {
        const gf_publish_result *r = &t->items[i].res;
        if (r->err != GF_OK)
            continue;
        char want[64];
        snprintf(want, sizeof want, "%s-%d", prefix, i);
        if (r->seq < 1 || r->seq > stream_msgs || !ids[r->seq - 1] ||
            strcmp(ids[r->seq - 1], want) != 0)
            fail_msg("%s acked at seq %llu, which holds %s", want, (unsigned long long)r->seq,
                     r->seq >= 1 && r->seq <= stream_msgs && ids[r->seq - 1] ? ids[r->seq - 1]
                                                                             : "nothing");
    }
    pt_ids_free(ids, stream_msgs);
}

static void test_acked_exactly_once(void **state)
{
    (void)state;
    enum { N = 20000, AGAIN = 2000, WINDOW = 256 };
    pt_env e;
    pt_env_start(&e, 1);
    th_add_stream(e.js, "ONCE", "once.>", 1);
    gf_publish *p = open_pub(e.nc, &(gf_publish_opts){.max_in_flight = WINDOW});
    pt_tally *t = pt_tally_new(N);
    t->pub = p;
    for (int i = 0; i < N; i++) {
        pt_send(p, t, "once.e", "a", i);
        assert_true(gf_publish_in_flight(p) <= WINDOW);
    }
    assert_int_equal(gf_publish_flush(p, 60000), GF_OK);
    assert_int_equal(pt_done_count(t), N); /* flush waited for every callback */
    assert_int_equal(gf_publish_in_flight(p), 0);
    int ok = 0, dup = 0;
    pt_assert_once(t, &ok, &dup, NULL, NULL);
    assert_int_equal(ok, N);
    assert_int_equal(dup, 0);
    assert_true(t->max_in_flight_seen <= WINDOW);
    assert_int_equal(th_stream_msgs(e.js, "ONCE"), N);
    assert_stored_once(e.js, "ONCE", t, "a", N);

    /* The same ids again: duplicates of the original sequences, nothing new stored. */
    pt_tally *t2 = pt_tally_new(AGAIN);
    for (int i = 0; i < AGAIN; i++)
        pt_send(p, t2, "once.e", "a", i);
    assert_int_equal(gf_publish_flush(p, 60000), GF_OK);
    pt_assert_once(t2, &ok, &dup, NULL, NULL);
    assert_int_equal(dup, AGAIN);
    for (int i = 0; i < AGAIN; i++)
        assert_int_equal(t2->items[i].res.seq, t->items[i].res.seq);
    assert_int_equal(th_stream_msgs(e.js, "ONCE"), N);

    gf_publish_stats st;
    gf_publish_stats_get(p, &st);
    assert_int_equal(st.sent, N + AGAIN);
    assert_int_equal(st.ok, N + AGAIN);
    assert_int_equal(st.duplicates, AGAIN);
    gf_publish_close(p, 5000);
    pt_tally_free(t);
    pt_tally_free(t2);
    pt_env_stop(&e);
}

/* With no stream on the subject every attempt meets "no responders", so messages stay
 * in flight for as long as the test wants: the window is full, deterministically. */
static void test_window_backpressure_and_stop(void **state)
{
    (void)state;
    enum { WINDOW = 8 };
    pt_env e;
    pt_env_start(&e, 1);
    atomic_int stop = 0;
    gf_publish *p = open_pub(e.nc, &(gf_publish_opts){.max_in_flight = WINDOW,
                                                      .send_wait_ms = 200,
                                                      .backoff_min_ms = 20,
                                                      .backoff_max_ms = 100,
                                                      .stop = &stop});
    pt_tally *t = pt_tally_new(2 * WINDOW + 1);
    for (int i = 0; i < WINDOW; i++)
        pt_send(p, t, "later.x", "w", i);
    assert_int_equal(gf_publish_in_flight(p), WINDOW);
    gf_publish_msg extra = {.subject = "later.x",
                            .msg_id = "w-extra",
                            .done = pt_done,
                            .closure = &t->items[2 * WINDOW]};
    assert_int_equal(gf_publish_send(p, &extra), GF_ERR_TIMEOUT);
    assert_int_equal(gf_publish_flush(p, 300), GF_ERR_TIMEOUT);
    assert_int_equal(pt_done_count(t), 0);

    /* The stream appears: every waiting message lands, once. */
    th_add_stream(e.js, "LATER", "later.>", 1);
    assert_int_equal(gf_publish_flush(p, 30000), GF_OK);
    assert_int_equal(pt_done_count(t), WINDOW);
    for (int i = 0; i < WINDOW; i++) {
        assert_int_equal(t->items[i].res.err, GF_OK);
        assert_false(t->items[i].res.duplicate);
        assert_true(t->items[i].res.attempts >= 2); /* the first met no responders */
    }
    assert_int_equal(th_stream_msgs(e.js, "LATER"), WINDOW);

    /* Full again, on a subject nobody stores: a stop makes a waiting send give up at once,
     * and close ends what is still open as "unavailable" (outcome unknown). */
    for (int i = WINDOW; i < 2 * WINDOW; i++)
        pt_send(p, t, "nowhere.x", "w", i);
    atomic_store(&stop, 1);
    assert_int_equal(gf_publish_send(p, &extra), GF_ERR_UNAVAILABLE);
    gf_publish_stats st;
    gf_publish_stats_get(p, &st);
    assert_true(st.resends >= WINDOW);
    gf_publish_close(p, 0);
    assert_int_equal(pt_done_count(t), 2 * WINDOW);
    for (int i = WINDOW; i < 2 * WINDOW; i++) {
        assert_int_equal(t->items[i].calls, 1);
        assert_int_equal(t->items[i].res.err, GF_ERR_UNAVAILABLE);
    }
    assert_int_equal(t->items[2 * WINDOW].calls, 0); /* refused sends get no callback */
    pt_tally_free(t);
    pt_env_stop(&e);
}

static void test_close_with_messages_in_flight(void **state)
{
    (void)state;
    enum { N = 3000 };
    pt_env e;
    pt_env_start(&e, 1);
    th_add_stream(e.js, "CLOSE", "close.>", 1);
    gf_publish *p = open_pub(e.nc, &(gf_publish_opts){.max_in_flight = 1024});
    pt_tally *t = pt_tally_new(N);
    for (int i = 0; i < N; i++)
        pt_send(p, t, "close.e", "c", i);
    gf_publish_close(p, 0);
    assert_int_equal(pt_done_count(t), N); /* every callback ran before close returned */
    int ok = 0, dup = 0, timeout = 0, other = 0;
    pt_assert_once(t, &ok, &dup, &timeout, &other);
    for (int i = 0; i < N; i++)
        assert_true(t->items[i].res.err == GF_OK || t->items[i].res.err == GF_ERR_UNAVAILABLE);
    fprintf(stderr, "close: %d acked, %d open at close\n", ok, other);
    assert_int_equal(dup + timeout, 0);
    /* What was acked is stored; what was open may or may not be. */
    uint64_t stored = th_stream_msgs(e.js, "CLOSE");
    assert_true(stored >= (uint64_t)ok && stored <= N);
    assert_stored_once(e.js, "CLOSE", t, "c", stored);
    pt_tally_free(t);
    pt_env_stop(&e);
}

/* Close while answers are still coming in, many times on one connection. nats.c 3.4.1's
 * read loop may be handling an answer for the reply subscription that close frees
 * (docs/NATS-FACTS.md §4). Before close flushed first, this crashed in
 * natsConn_processMsg under ASan within a few hundred cycles on a loaded 2-core machine;
 * not on every run: the read loop has to be preempted at that moment. */
static void test_close_while_answers_arrive(void **state)
{
    (void)state;
    enum { CYCLES = 600, MAX_SENDS = 300 };
    pt_env e;
    pt_env_start(&e, 1);
    th_add_stream(e.js, "CYCLE", "cycle.>", 1);
    gf_log_level saved = gf_log_get_level();
    gf_log_set_level(GF_LOG_ERROR); /* every close with open messages warns */
    unsigned seed = 1;
    for (int c = 0; c < CYCLES; c++) {
        int n = 1 + (int)(rand_r(&seed) % MAX_SENDS);
        char prefix[32];
        snprintf(prefix, sizeof prefix, "y%d", c);
        gf_publish *p = open_pub(e.nc, NULL);
        pt_tally *t = pt_tally_new(n);
        for (int i = 0; i < n; i++)
            pt_send(p, t, "cycle.e", prefix, i);
        natsConnection_Flush(e.nc); /* the answers are on their way during the close */
        gf_publish_close(p, 0);
        assert_int_equal(pt_done_count(t), n);
        pt_assert_once(t, NULL, NULL, NULL, NULL);
        pt_tally_free(t);
    }
    gf_log_set_level(saved);
    pt_env_stop(&e);
}

static void test_give_up_deadline(void **state)
{
    (void)state;
    pt_env e;
    pt_env_start(&e, 1);
    gf_publish *p = open_pub(e.nc, &(gf_publish_opts){.give_up_ms = 700,
                                                      .attempt_timeout_ms = 200,
                                                      .backoff_min_ms = 20,
                                                      .backoff_max_ms = 100});
    gf_publish_result res;
    gf_publish_msg m = {.subject = "nobody.listens", .msg_id = "g-1", .data = "x", .len = 1};
    assert_int_equal(gf_publish_send_sync(p, &m, &res), GF_ERR_TIMEOUT);
    assert_int_equal(res.err, GF_ERR_TIMEOUT);
    assert_true(res.attempts >= 2);
    gf_publish_stats st;
    gf_publish_stats_get(p, &st);
    assert_int_equal(st.gave_up, 1);
    gf_publish_close(p, 1000);
    pt_env_stop(&e);
}

/* ---- callbacks that publish ---- */

enum { CHAIN_TOTAL = 2000, CHAIN_WINDOW = 4 };

typedef struct chain {
    gf_publish *p;
    pt_tally *t;
    atomic_int next;
    atomic_int inside_err; /* flush / sync from a callback: must be GF_ERR_INVALID */
    atomic_int send_err;
} chain;

static chain the_chain;

static void chain_done(const gf_publish_result *res, void *closure)
{
    pt_item *it = closure;
    chain *c = &the_chain;
    pt_done(res, closure);
    if (it->index == 0) {
        gf_publish_msg m = {.subject = "chain.e", .msg_id = "inside"};
        if (gf_publish_flush(c->p, 1000) != GF_ERR_INVALID ||
            gf_publish_send_sync(c->p, &m, NULL) != GF_ERR_INVALID)
            atomic_store(&c->inside_err, 1);
    }
    int n = atomic_fetch_add(&c->next, 1);
    if (n >= CHAIN_TOTAL)
        return;
    char id[32];
    snprintf(id, sizeof id, "k-%d", n);
    gf_publish_msg m = {.subject = "chain.e",
                        .msg_id = id,
                        .data = id,
                        .len = strlen(id),
                        .done = chain_done,
                        .closure = &c->t->items[n]};
    gf_err err = gf_publish_send(c->p, &m); /* never waits here, even on a full window */
    if (err != GF_OK)
        atomic_store(&c->send_err, (int)err);
}

static void test_callbacks_that_publish(void **state)
{
    (void)state;
    pt_env e;
    pt_env_start(&e, 1);
    th_add_stream(e.js, "CHAIN", "chain.>", 1);
    chain *c = &the_chain;
    memset(c, 0, sizeof *c);
    c->p = open_pub(e.nc, &(gf_publish_opts){.max_in_flight = CHAIN_WINDOW});
    c->t = pt_tally_new(CHAIN_TOTAL);
    atomic_store(&c->next, CHAIN_WINDOW);
    for (int i = 0; i < CHAIN_WINDOW; i++) {
        char id[32];
        snprintf(id, sizeof id, "k-%d", i);
        gf_publish_msg m = {
            .subject = "chain.e", .msg_id = id, .done = chain_done, .closure = &c->t->items[i]};
        assert_int_equal(gf_publish_send(c->p, &m), GF_OK);
    }
    assert_true(pt_wait_done(c->t, CHAIN_TOTAL, 60000));
    assert_int_equal(gf_publish_flush(c->p, 10000), GF_OK);
    assert_int_equal(atomic_load(&c->inside_err), 0);
    assert_int_equal(atomic_load(&c->send_err), 0);
    int ok = 0;
    pt_assert_once(c->t, &ok, NULL, NULL, NULL);
    assert_int_equal(ok, CHAIN_TOTAL);
    assert_int_equal(th_stream_msgs(e.js, "CHAIN"), CHAIN_TOTAL);
    gf_publish_close(c->p, 5000);
    pt_tally_free(c->t);
    pt_env_stop(&e);
}

static void test_headers_and_sync(void **state)
{
    (void)state;
    pt_env e;
    pt_env_start(&e, 1);
    th_add_stream(e.js, "HDRS", "hdrs.>", 1);
    gf_publish *p = open_pub(e.nc, NULL);
    gf_publish_header h[] = {{"Gf-Trace", "t-1 two words"}, {"Gf-Source", "test"}};
    gf_publish_msg m = {.subject = "hdrs.e",
                        .msg_id = "h-1",
                        .data = "payload",
                        .len = 7,
                        .headers = h,
                        .headers_len = 2};
    gf_publish_result res;
    assert_int_equal(gf_publish_send_sync(p, &m, &res), GF_OK);
    assert_int_equal(res.seq, 1);
    assert_false(res.duplicate);
    assert_int_equal(res.attempts, 1);
    natsMsg *got = NULL;
    assert_int_equal(js_GetMsg(&got, e.js, "HDRS", res.seq, NULL, NULL), NATS_OK);
    const char *v = NULL;
    assert_int_equal(natsMsgHeader_Get(got, "Gf-Trace", &v), NATS_OK);
    assert_string_equal(v, "t-1 two words");
    assert_int_equal(natsMsgHeader_Get(got, "Nats-Msg-Id", &v), NATS_OK);
    assert_string_equal(v, "h-1");
    assert_int_equal(natsMsg_GetDataLength(got), 7);
    natsMsg_Destroy(got);
    assert_int_equal(gf_publish_send_sync(p, &m, &res), GF_OK);
    assert_true(res.duplicate);
    assert_int_equal(res.seq, 1);
    gf_publish_close(p, 1000);
    pt_env_stop(&e);
}

static void test_bad_input(void **state)
{
    (void)state;
    pt_env e;
    pt_env_start(&e, 1);
    th_add_stream(e.js, "BAD", "bad.>", 1);
    gf_publish *p = NULL;
    gf_publish_opts bad_opts[] = {
        {.max_in_flight = -1},
        {.give_up_ms = -5},
        {.backoff_min_ms = 500, .backoff_max_ms = 100},
        {.inbox_prefix = "a b"},
        {.inbox_prefix = "_INBOX.>"},
        {.api_prefix = ""},
    };
    for (size_t i = 0; i < sizeof bad_opts / sizeof bad_opts[0]; i++) {
        assert_int_equal(gf_publish_open(e.nc, &bad_opts[i], &p), GF_ERR_INVALID);
        assert_null(p);
    }
    assert_int_equal(gf_publish_open(NULL, NULL, &p), GF_ERR_INVALID);

    p = open_pub(e.nc, NULL);
    pt_tally *t = pt_tally_new(1);
    int64_t max = natsConnection_GetMaxPayload(e.nc);
    char *big = calloc(1, (size_t)max + 1);
    assert_non_null(big);
    gf_publish_header crlf[] = {{"Gf-X", "a\r\nNats-Expected-Stream: OTHER"}};
    gf_publish_header reserved[] = {{"nats-msg-id", "other"}};
    gf_publish_header too_many[GF_PUBLISH_HEADERS_MAX + 1];
    for (int i = 0; i <= GF_PUBLISH_HEADERS_MAX; i++)
        too_many[i] = (gf_publish_header){"Gf-N", "v"};
    const gf_publish_msg bad[] = {
        {.subject = NULL, .msg_id = "b-1"},
        {.subject = "", .msg_id = "b-1"},
        {.subject = "bad.*", .msg_id = "b-1"},
        {.subject = "bad..x", .msg_id = "b-1"},
        {.subject = "bad x", .msg_id = "b-1"},
        {.subject = "bad.x", .msg_id = NULL},
        {.subject = "bad.x", .msg_id = ""},
        {.subject = "bad.x", .msg_id = "has space"},
        {.subject = "bad.x", .msg_id = "b-1", .data = NULL, .len = 3},
        {.subject = "bad.x", .msg_id = "b-1", .data = big, .len = (size_t)max + 1},
        {.subject = "bad.x", .msg_id = "b-1", .data = big, .len = (size_t)max},
        {.subject = "bad.x", .msg_id = "b-1", .headers = crlf, .headers_len = 1},
        {.subject = "bad.x", .msg_id = "b-1", .headers = reserved, .headers_len = 1},
        {.subject = "bad.x", .msg_id = "b-1", .headers = NULL, .headers_len = 1},
        {.subject = "bad.x",
         .msg_id = "b-1",
         .headers = too_many,
         .headers_len = GF_PUBLISH_HEADERS_MAX + 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gf_publish_msg m = bad[i];
        m.done = pt_done;
        m.closure = &t->items[0];
        gf_err err = gf_publish_send(p, &m);
        if (err != GF_ERR_INVALID)
            fail_msg("bad message %zu: %s", i, gf_err_str(err));
        assert_int_equal(gf_publish_in_flight(p), 0);
    }
    const gf_publish_cas bad_cas[] = {
        {.kind = GF_PUBLISH_CAS_UPDATE, .bucket = "b", .key = "k", .revision = 0},
        {.kind = GF_PUBLISH_CAS_UPDATE, .bucket = "", .key = "k", .revision = 1},
        {.kind = GF_PUBLISH_CAS_UPDATE, .bucket = "a.b", .key = "k", .revision = 1},
        {.kind = GF_PUBLISH_CAS_UPDATE, .bucket = "b", .key = "a..k", .revision = 1},
        {.kind = GF_PUBLISH_CAS_UPDATE, .bucket = "b", .key = "*", .revision = 1},
        {.kind = GF_PUBLISH_CAS_UPDATE, .bucket = "b", .key = NULL, .revision = 1},
        {.kind = GF_PUBLISH_CAS_CREATE, .bucket = "b", .key = "k", .msg_id = "a b"},
        {.kind = GF_PUBLISH_CAS_DELETE, .bucket = "b", .key = "k", .revision = 0},
        {.kind = GF_PUBLISH_CAS_DELETE,
         .bucket = "b",
         .key = "k",
         .revision = 1,
         .data = "x",
         .len = 1},
        {.kind = (gf_publish_cas_kind)7, .bucket = "b", .key = "k", .revision = 1},
        {.kind = GF_PUBLISH_CAS_CREATE, .bucket = "b", .key = "k", .data = big, .len = (size_t)max},
    };
    for (size_t i = 0; i < sizeof bad_cas / sizeof bad_cas[0]; i++) {
        gf_publish_cas c = bad_cas[i];
        c.done = pt_done;
        c.closure = &t->items[0];
        gf_err err = gf_publish_cas_send(p, &c);
        if (err != GF_ERR_INVALID)
            fail_msg("bad CAS %zu: %s", i, gf_err_str(err));
    }
    assert_int_equal(gf_publish_send(p, NULL), GF_ERR_INVALID);
    assert_int_equal(gf_publish_send_sync(p, NULL, NULL), GF_ERR_INVALID);
    assert_int_equal(gf_publish_cas_sync(p, NULL, NULL), GF_ERR_INVALID);
    assert_int_equal(gf_publish_flush(p, 5000), GF_OK);
    assert_int_equal(pt_done_count(t), 0);
    gf_publish_stats st;
    gf_publish_stats_get(p, &st);
    assert_int_equal(st.sent, 0);
    assert_int_equal(th_stream_msgs(e.js, "BAD"), 0);

    /* The largest payload that fits with its headers is accepted. */
    gf_publish_msg fits = {.subject = "bad.x", .msg_id = "b-big", .data = big};
    fits.len = (size_t)max - strlen("NATS/1.0\r\nNats-Msg-Id: b-big\r\n\r\n");
    gf_publish_result res;
    assert_int_equal(gf_publish_send_sync(p, &fits, &res), GF_OK);
    assert_int_equal(th_stream_msgs(e.js, "BAD"), 1);
    free(big);
    gf_publish_close(p, 1000);
    pt_tally_free(t);
    pt_env_stop(&e);
}

/* ---- the server stopped and restarted under load ---- */

enum { RESTART_N = 6000 };

typedef struct sender {
    gf_publish *p;
    pt_tally *t;
} sender;

static void *send_all(void *arg)
{
    sender *s = arg;
    for (int i = 0; i < RESTART_N; i++)
        pt_send(s->p, s->t, "rs.e", "r", i);
    return NULL;
}

static void test_server_restart(void **state)
{
    (void)state;
    pt_env e;
    pt_env_start(&e, 1);
    th_add_stream(e.js, "RS", "rs.>", 1);
    sender s = {.p = open_pub(e.nc, &(gf_publish_opts){.max_in_flight = 256}),
                .t = pt_tally_new(RESTART_N)};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, send_all, &s), 0);
    assert_true(pt_wait_done(s.t, 1000, 30000));
    assert_int_equal(gf_natsd_stop(e.srv), 0); /* main thread: the harness's rule */
    gf_clock_sleep_ms(3000);
    assert_int_equal(gf_natsd_restart(e.srv), 0);
    pthread_join(th, NULL);
    assert_int_equal(gf_publish_flush(s.p, 90000), GF_OK);
    int ok = 0, dup = 0, timeout = 0, other = 0;
    pt_assert_once(s.t, &ok, &dup, &timeout, &other);
    gf_publish_stats st;
    gf_publish_stats_get(s.p, &st);
    fprintf(stderr, "restart: %d ok, %d duplicate, %d timed out, %lld resends\n", ok, dup, timeout,
            st.resends);
    assert_int_equal(other, 0); /* each message: stored, or "outcome unknown" */
    uint64_t stored = th_stream_msgs(e.js, "RS");
    assert_true(stored >= (uint64_t)(ok + dup) && stored <= RESTART_N);
    assert_stored_once(e.js, "RS", s.t, "r", stored);
    gf_publish_close(s.p, 5000);
    pt_tally_free(s.t);
    pt_env_stop(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acked_exactly_once),
        cmocka_unit_test(test_window_backpressure_and_stop),
        cmocka_unit_test(test_close_with_messages_in_flight),
        cmocka_unit_test(test_close_while_answers_arrive),
        cmocka_unit_test(test_give_up_deadline),
        cmocka_unit_test(test_callbacks_that_publish),
        cmocka_unit_test(test_headers_and_sync),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_server_restart),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
