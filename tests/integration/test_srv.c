/*
 * test_srv.c — $SRV discovery against a real nats-server (support/natsd/natsd.h).
 *
 * Three services on two connections: "matcher" twice (ids m-1 and m-2) and
 * "intake" once. A third connection plays the `nats micro` client: it publishes
 * to $SRV.<VERB>[.<name>[.<id>]] with an inbox as reply subject and collects
 * every answer from a sync subscription, waiting a little past the expected
 * count so that an extra (wrong) answer would be seen.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nats/nats.h>

#include "gamefn/log.h"
#include "gamefn/srv.h"
#include "natsd.h"

enum { MAX_REPLIES = 8, QUIET_MS = 300, FIRST_MS = 3000 };

typedef struct fixture {
    gf_natsd *server;
    natsConnection *nc1, *nc2, *client;
    gf_srv *m1, *m2, *intake;
} fixture;

static const gf_srv_endpoint matcher_eps[] = {
    {"tick", "gamefn.v1.tick.matcher", "matcher"},
};
static const gf_srv_endpoint intake_eps[] = {
    {"create", "gamefn.v1.ticket.create", "intake"},
    {"cancel", "gamefn.v1.ticket.cancel", "intake"},
    {"get", "gamefn.v1.ticket.get", "intake"},
};

static natsConnection *connect_to(const char *url)
{
    natsConnection *nc = NULL;
    natsStatus s = natsConnection_ConnectTo(&nc, url);
    if (s != NATS_OK)
        fail_msg("connect %s: %s", url, natsStatus_GetText(s));
    return nc;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    gf_natsd_opts opts = {.no_jetstream = true};
    assert_int_equal(gf_natsd_start(&opts, &f->server), 0);
    f->nc1 = connect_to(gf_natsd_url(f->server));
    f->nc2 = connect_to(gf_natsd_url(f->server));
    f->client = connect_to(gf_natsd_url(f->server));

    gf_srv_info m = {.name = "matcher",
                     .version = "0.3.1",
                     .id = "m-1",
                     .description = "matchmaking ticks",
                     .endpoints = matcher_eps,
                     .endpoints_len = 1};
    assert_int_equal(gf_srv_start(f->nc1, &m, &f->m1, NULL, 0), GF_OK);
    m.id = "m-2";
    assert_int_equal(gf_srv_start(f->nc2, &m, &f->m2, NULL, 0), GF_OK);
    gf_srv_info in = {.name = "intake",
                      .version = "1.0.0-rc.1",
                      .id = "i-1",
                      .description = NULL,
                      .endpoints = intake_eps,
                      .endpoints_len = 3};
    assert_int_equal(gf_srv_start(f->nc1, &in, &f->intake, NULL, 0), GF_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gf_srv_stop(f->m1);
    gf_srv_stop(f->m2);
    gf_srv_stop(f->intake);
    natsConnection_Destroy(f->nc1);
    natsConnection_Destroy(f->nc2);
    natsConnection_Destroy(f->client);
    gf_natsd_free(f->server);
    free(f);
    return 0;
}

typedef struct replies {
    json_t *msg[MAX_REPLIES];
    int n;
} replies;

static void replies_free(replies *r)
{
    for (int i = 0; i < r->n; i++)
        json_decref(r->msg[i]);
    r->n = 0;
}

/* Publishes an empty request to `subject` and collects every answer: up to
 * FIRST_MS for the first `expect`, then QUIET_MS more for any extra. */
static void ask(natsConnection *nc, const char *subject, int expect, replies *r)
{
    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;

    memset(r, 0, sizeof *r);
    assert_int_equal(natsInbox_Create(&inbox), NATS_OK);
    assert_int_equal(natsConnection_SubscribeSync(&sub, nc, inbox), NATS_OK);
    assert_int_equal(natsConnection_PublishRequest(nc, subject, inbox, NULL, 0), NATS_OK);
    assert_int_equal(natsConnection_Flush(nc), NATS_OK);
    for (;;) {
        natsMsg *m = NULL;
        int wait = r->n < expect ? FIRST_MS : QUIET_MS;
        natsStatus s = natsSubscription_NextMsg(&m, sub, wait);
        if (s == NATS_TIMEOUT)
            break;
        if (s == NATS_NO_RESPONDERS && r->n == 0)
            break; /* the server says nobody subscribes to `subject` */
        assert_int_equal(s, NATS_OK);
        json_error_t jerr;
        json_t *j = json_loadb(natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m), 0, &jerr);
        if (j == NULL)
            fail_msg("answer on %s is not JSON: %s", subject, jerr.text);
        natsMsg_Destroy(m);
        if (r->n == MAX_REPLIES)
            fail_msg("too many answers on %s", subject);
        r->msg[r->n++] = j;
    }
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
}

static const char *sfield(const json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    if (v == NULL)
        fail_msg("missing string field %s", k);
    return v;
}

static json_int_t ifield(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v))
        fail_msg("missing integer field %s", k);
    return json_integer_value(v);
}

/* True when the answers are exactly from these ids (any order). */
static void assert_ids(const replies *r, const char *const *ids, int n)
{
    assert_int_equal(r->n, n);
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int k = 0; k < r->n; k++)
            found += strcmp(sfield(r->msg[k], "id"), ids[i]) == 0;
        if (found != 1)
            fail_msg("id %s answered %d times", ids[i], found);
    }
}

static void test_ping_all(void **state)
{
    fixture *f = *state;
    replies r;
    ask(f->client, "$SRV.PING", 3, &r);
    assert_ids(&r, (const char *const[]){"m-1", "m-2", "i-1"}, 3);
    for (int i = 0; i < r.n; i++) {
        assert_string_equal(sfield(r.msg[i], "type"), "io.nats.micro.v1.ping_response");
        assert_true(json_is_object(json_object_get(r.msg[i], "metadata")));
        const char *name = sfield(r.msg[i], "name");
        assert_string_equal(sfield(r.msg[i], "version"),
                            strcmp(name, "matcher") == 0 ? "0.3.1" : "1.0.0-rc.1");
    }
    replies_free(&r);
}

static void test_ping_by_name_and_id(void **state)
{
    fixture *f = *state;
    replies r;

    ask(f->client, "$SRV.PING.matcher", 2, &r);
    assert_ids(&r, (const char *const[]){"m-1", "m-2"}, 2);
    replies_free(&r);

    ask(f->client, "$SRV.PING.matcher.m-2", 1, &r);
    assert_ids(&r, (const char *const[]){"m-2"}, 1);
    assert_string_equal(sfield(r.msg[0], "name"), "matcher");
    replies_free(&r);

    ask(f->client, "$SRV.PING.intake.i-1", 1, &r);
    assert_ids(&r, (const char *const[]){"i-1"}, 1);
    replies_free(&r);

    /* the wrong pairing, and an unknown name: nobody answers */
    ask(f->client, "$SRV.PING.intake.m-1", 0, &r);
    assert_int_equal(r.n, 0);
    ask(f->client, "$SRV.PING.nobody", 0, &r);
    assert_int_equal(r.n, 0);
}

static void test_info(void **state)
{
    fixture *f = *state;
    replies r;

    ask(f->client, "$SRV.INFO", 3, &r);
    assert_int_equal(r.n, 3);
    for (int i = 0; i < r.n; i++)
        assert_string_equal(sfield(r.msg[i], "type"), "io.nats.micro.v1.info_response");
    replies_free(&r);

    ask(f->client, "$SRV.INFO.intake", 1, &r);
    assert_ids(&r, (const char *const[]){"i-1"}, 1);
    json_t *eps = json_object_get(r.msg[0], "endpoints");
    assert_int_equal(json_array_size(eps), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *ep = json_array_get(eps, i);
        assert_string_equal(sfield(ep, "name"), intake_eps[i].name);
        assert_string_equal(sfield(ep, "subject"), intake_eps[i].subject);
        assert_string_equal(sfield(ep, "queue_group"), "intake");
    }
    assert_string_equal(sfield(r.msg[0], "description"), "");
    replies_free(&r);

    ask(f->client, "$SRV.INFO.matcher.m-1", 1, &r);
    assert_ids(&r, (const char *const[]){"m-1"}, 1);
    assert_string_equal(sfield(r.msg[0], "description"), "matchmaking ticks");
    replies_free(&r);
}

static void test_stats(void **state)
{
    fixture *f = *state;
    replies r;

    gf_srv_record(f->intake, 0, 1000, NULL);
    gf_srv_record(f->intake, 0, 3000, "4:bad request");
    gf_srv_record(f->intake, 2, 500, NULL);

    ask(f->client, "$SRV.STATS.intake.i-1", 1, &r);
    assert_ids(&r, (const char *const[]){"i-1"}, 1);
    assert_string_equal(sfield(r.msg[0], "type"), "io.nats.micro.v1.stats_response");
    assert_non_null(json_string_value(json_object_get(r.msg[0], "started")));
    json_t *eps = json_object_get(r.msg[0], "endpoints");
    assert_int_equal(json_array_size(eps), 3);
    json_t *create = json_array_get(eps, 0);
    assert_int_equal(ifield(create, "num_requests"), 2);
    assert_int_equal(ifield(create, "num_errors"), 1);
    assert_string_equal(sfield(create, "last_error"), "4:bad request");
    assert_int_equal(ifield(create, "processing_time"), 4000);
    assert_int_equal(ifield(create, "average_processing_time"), 2000);
    assert_int_equal(ifield(json_array_get(eps, 1), "num_requests"), 0);
    assert_int_equal(ifield(json_array_get(eps, 2), "num_requests"), 1);
    replies_free(&r);

    /* the two matchers keep separate counters */
    gf_srv_record(f->m2, 0, 10, NULL);
    ask(f->client, "$SRV.STATS.matcher", 2, &r);
    assert_ids(&r, (const char *const[]){"m-1", "m-2"}, 2);
    for (int i = 0; i < r.n; i++) {
        json_t *ep = json_array_get(json_object_get(r.msg[i], "endpoints"), 0);
        json_int_t want = strcmp(sfield(r.msg[i], "id"), "m-2") == 0 ? 1 : 0;
        assert_int_equal(ifield(ep, "num_requests"), want);
    }
    replies_free(&r);
}

static void test_invalid_start_subscribes_nothing(void **state)
{
    fixture *f = *state;
    gf_srv *srv = NULL;
    replies r;
    gf_srv_info bad = {.name = "ghost",
                       .version = "1.0",
                       .id = "g-1",
                       .description = NULL,
                       .endpoints = NULL,
                       .endpoints_len = 0};

    gf_log_level saved = gf_log_get_level();
    gf_log_set_level(GF_LOG_OFF);
    assert_int_equal(gf_srv_start(f->nc1, &bad, &srv, NULL, 0), GF_ERR_INVALID);
    bad.version = "1.0.0";
    bad.name = "gh.ost";
    assert_int_equal(gf_srv_start(f->nc1, &bad, &srv, NULL, 0), GF_ERR_INVALID);
    gf_log_set_level(saved);
    assert_null(srv);
    ask(f->client, "$SRV.PING.ghost", 0, &r);
    assert_int_equal(r.n, 0);
}

typedef struct pinger {
    natsConnection *nc;
    atomic_int stop;
    atomic_int sent;
} pinger;

static void *ping_loop(void *p)
{
    pinger *pg = p;
    while (!pg->stop) {
        natsConnection_PublishRequest(pg->nc, "$SRV.STATS.matcher", "_INBOX.nobody", NULL, 0);
        natsConnection_Flush(pg->nc);
        pg->sent++;
    }
    return NULL;
}

/* Stopping a service while requests keep arriving: its responders finish before
 * it is freed (ASan would see the use after free), and afterwards only the
 * other instance answers. */
static void test_stop_under_load(void **state)
{
    fixture *f = *state;
    pinger pg = {.nc = f->client};
    atomic_init(&pg.stop, 0);
    atomic_init(&pg.sent, 0);
    pthread_t th;
    replies r;

    assert_int_equal(pthread_create(&th, NULL, ping_loop, &pg), 0);
    while (pg.sent < 200)
        nats_Sleep(1);
    gf_srv_stop(f->m2);
    f->m2 = NULL;
    pg.stop = 1;
    pthread_join(th, NULL);

    ask(f->client, "$SRV.PING.matcher", 1, &r);
    assert_ids(&r, (const char *const[]){"m-1"}, 1);
    replies_free(&r);
}

/* The connection closed under a running service (e.g. the server went away for
 * good): stop still completes and frees everything (LeakSanitizer checks that
 * the give-up path, which leaks on purpose, was not taken). */
static void test_stop_after_connection_closed(void **state)
{
    fixture *f = *state;
    natsConnection *nc = connect_to(gf_natsd_url(f->server));
    gf_srv *srv = NULL;
    gf_srv_info info = {.name = "closing",
                        .version = "0.0.1",
                        .id = "c-1",
                        .description = NULL,
                        .endpoints = NULL,
                        .endpoints_len = 0};
    replies r;

    assert_int_equal(gf_srv_start(nc, &info, &srv, NULL, 0), GF_OK);
    ask(f->client, "$SRV.PING.closing", 1, &r);
    assert_ids(&r, (const char *const[]){"c-1"}, 1);
    replies_free(&r);
    natsConnection_Close(nc);
    gf_srv_stop(srv);
    natsConnection_Destroy(nc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping_all),
        cmocka_unit_test(test_ping_by_name_and_id),
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_invalid_start_subscribes_nothing),
        cmocka_unit_test(test_stop_under_load),
        cmocka_unit_test(test_stop_after_connection_closed),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    nats_CloseAndWait(2000);
    return rc;
}
