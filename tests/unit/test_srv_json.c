/*
 * test_srv_json.c — the $SRV JSON answers (ADR-32) and service validation, without
 * a server: services are built with gf_srv_create() and every answer is parsed
 * back with jansson.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "gamefn/log.h"
#include "gamefn/srv.h"

static const gf_srv_endpoint test_eps[] = {
    {"create", "gamefn.v1.ticket.create", "intake"},
    {"cancel", "gamefn.v1.ticket.cancel", "intake"},
    {"tick", "gamefn.v1.tick.matcher", NULL},
};

static gf_srv_info test_info(void)
{
    gf_srv_info info = {
        .name = "intake",
        .version = "0.1.0",
        .id = "inst-1",
        .description = "ticket intake",
        .endpoints = test_eps,
        .endpoints_len = sizeof test_eps / sizeof test_eps[0],
    };
    return info;
}

static json_t *parse(char *text)
{
    json_error_t jerr;
    assert_non_null(text);
    json_t *root = json_loads(text, 0, &jerr);
    if (root == NULL)
        fail_msg("not JSON (%s): %s", jerr.text, text);
    free(text);
    assert_true(json_is_object(root));
    return root;
}

static const char *str_field(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        fail_msg("field %s is not a string", key);
    return json_string_value(v);
}

static json_int_t int_field(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail_msg("field %s is not an integer", key);
    return json_integer_value(v);
}

static void check_standard(const json_t *root, const char *type)
{
    assert_string_equal(str_field(root, "type"), type);
    assert_string_equal(str_field(root, "name"), "intake");
    assert_string_equal(str_field(root, "id"), "inst-1");
    assert_string_equal(str_field(root, "version"), "0.1.0");
    json_t *md = json_object_get(root, "metadata");
    assert_true(json_is_object(md));
}

static json_t *stats_endpoint(gf_srv *srv, size_t i)
{
    char *text = NULL;
    assert_int_equal(gf_srv_stats_json(srv, &text), GF_OK);
    json_t *root = parse(text);
    json_t *eps = json_object_get(root, "endpoints");
    assert_true(json_is_array(eps));
    json_t *ep = json_incref(json_array_get(eps, i));
    json_decref(root);
    assert_non_null(ep);
    return ep;
}

static void test_ping(void **state)
{
    gf_srv_info info = test_info();
    gf_srv *srv = NULL;
    char *text = NULL;

    assert_int_equal(gf_srv_create(&info, &srv, NULL, 0), GF_OK);
    assert_int_equal(gf_srv_ping_json(srv, &text), GF_OK);
    json_t *root = parse(text);
    check_standard(root, "io.nats.micro.v1.ping_response");
    assert_null(json_object_get(root, "endpoints")); /* ping carries the standard fields only */
    json_decref(root);
    gf_srv_stop(srv);
}

static void test_info_answer(void **state)
{
    gf_srv_info info = test_info();
    gf_srv *srv = NULL;
    char *text = NULL;

    assert_int_equal(gf_srv_create(&info, &srv, NULL, 0), GF_OK);
    assert_int_equal(gf_srv_info_json(srv, &text), GF_OK);
    json_t *root = parse(text);
    check_standard(root, "io.nats.micro.v1.info_response");
    assert_string_equal(str_field(root, "description"), "ticket intake");
    json_t *eps = json_object_get(root, "endpoints");
    assert_true(json_is_array(eps));
    assert_int_equal(json_array_size(eps), info.endpoints_len);
    for (size_t i = 0; i < info.endpoints_len; i++) {
        json_t *ep = json_array_get(eps, i);
        assert_string_equal(str_field(ep, "name"), test_eps[i].name);
        assert_string_equal(str_field(ep, "subject"), test_eps[i].subject);
        assert_string_equal(str_field(ep, "queue_group"),
                            test_eps[i].queue_group ? test_eps[i].queue_group : "");
        assert_true(json_is_object(json_object_get(ep, "metadata")));
    }
    json_decref(root);
    gf_srv_stop(srv);
}

static void test_info_no_description_no_endpoints(void **state)
{
    gf_srv_info info = {.name = "x", .version = "1.0.0", .id = "i"};
    gf_srv *srv = NULL;
    char *text = NULL;

    assert_int_equal(gf_srv_create(&info, &srv, NULL, 0), GF_OK);
    assert_int_equal(gf_srv_info_json(srv, &text), GF_OK);
    json_t *root = parse(text);
    assert_string_equal(str_field(root, "description"), "");
    assert_int_equal(json_array_size(json_object_get(root, "endpoints")), 0);
    json_decref(root);
    gf_srv_stop(srv);
}

/* "2026-11-29T15:32:16.123456789Z": RFC 3339, UTC, nanoseconds, near now. */
static void check_started(const char *started)
{
    struct tm tm;
    char frac[16] = "";
    char zone = '\0';
    int consumed = 0;
    memset(&tm, 0, sizeof tm);
    int n = sscanf(started, "%4d-%2d-%2dT%2d:%2d:%2d.%15[0-9]%c%n", &tm.tm_year, &tm.tm_mon,
                   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, frac, &zone, &consumed);
    if (n != 8 || zone != 'Z' || strlen(frac) != 9 || started[consumed] != '\0')
        fail_msg("started is not RFC 3339 UTC with nanoseconds: %s", started);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    /* time() reads a coarse clock that can lag CLOCK_REALTIME by a tick, so at a second
     * boundary `started` may already be one second ahead of it. */
    time_t now = time(NULL);
    assert_true(t <= now + 1 && now - t < 600);
}

static void test_stats_initial(void **state)
{
    gf_srv_info info = test_info();
    gf_srv *srv = NULL;
    char *text = NULL;

    assert_int_equal(gf_srv_create(&info, &srv, NULL, 0), GF_OK);
    assert_int_equal(gf_srv_stats_json(srv, &text), GF_OK);
    json_t *root = parse(text);
    check_standard(root, "io.nats.micro.v1.stats_response");
    check_started(str_field(root, "started"));
    json_t *eps = json_object_get(root, "endpoints");
    assert_int_equal(json_array_size(eps), info.endpoints_len);
    for (size_t i = 0; i < info.endpoints_len; i++) {
        json_t *ep = json_array_get(eps, i);
        assert_string_equal(str_field(ep, "name"), test_eps[i].name);
        assert_string_equal(str_field(ep, "subject"), test_eps[i].subject);
        assert_true(json_is_string(json_object_get(ep, "queue_group")));
        assert_int_equal(int_field(ep, "num_requests"), 0);
        assert_int_equal(int_field(ep, "num_errors"), 0);
        assert_string_equal(str_field(ep, "last_error"), "");
        assert_int_equal(int_field(ep, "processing_time"), 0);
        assert_int_equal(int_field(ep, "average_processing_time"), 0);
    }
    json_decref(root);
    gf_srv_stop(srv);
}

static void test_stats_record(void **state)
{
    gf_srv_info info = test_info();
    gf_srv *srv = NULL;

    assert_int_equal(gf_srv_create(&info, &srv, NULL, 0), GF_OK);
    /* endpoint 0: three successes, average truncated: 601 / 3 = 200 */
    gf_srv_record(srv, 0, 100, NULL);
    gf_srv_record(srv, 0, 200, NULL);
    gf_srv_record(srv, 0, 301, NULL);
    /* endpoint 1: an error then a success: the error stays as last_error */
    gf_srv_record(srv, 1, 1000, "3:ticket not found");
    gf_srv_record(srv, 1, 500, NULL);
    /* ignored / clamped */
    gf_srv_record(srv, 3, 999, "x");
    gf_srv_record(srv, 2, -50, NULL);
    gf_srv_record(NULL, 0, 1, NULL);

    json_t *ep = stats_endpoint(srv, 0);
    assert_int_equal(int_field(ep, "num_requests"), 3);
    assert_int_equal(int_field(ep, "num_errors"), 0);
    assert_int_equal(int_field(ep, "processing_time"), 601);
    assert_int_equal(int_field(ep, "average_processing_time"), 200);
    assert_string_equal(str_field(ep, "last_error"), "");
    json_decref(ep);

    ep = stats_endpoint(srv, 1);
    assert_int_equal(int_field(ep, "num_requests"), 2);
    assert_int_equal(int_field(ep, "num_errors"), 1);
    assert_int_equal(int_field(ep, "processing_time"), 1500);
    assert_int_equal(int_field(ep, "average_processing_time"), 750);
    assert_string_equal(str_field(ep, "last_error"), "3:ticket not found");
    json_decref(ep);

    ep = stats_endpoint(srv, 2);
    assert_int_equal(int_field(ep, "num_requests"), 1);
    assert_int_equal(int_field(ep, "processing_time"), 0);
    json_decref(ep);

    /* a later error replaces last_error; a long one is truncated, still valid JSON */
    char longerr[1000];
    memset(longerr, 'e', sizeof longerr - 1);
    longerr[sizeof longerr - 1] = '\0';
    gf_srv_record(srv, 1, 0, longerr);
    ep = stats_endpoint(srv, 1);
    assert_int_equal(int_field(ep, "num_errors"), 2);
    assert_int_equal(strlen(str_field(ep, "last_error")), 255);
    json_decref(ep);
    gf_srv_stop(srv);
}

typedef struct record_arg {
    gf_srv *srv;
    size_t index;
    int n;
} record_arg;

static void *record_thread(void *p)
{
    record_arg *a = p;
    for (int i = 0; i < a->n; i++)
        gf_srv_record(a->srv, a->index, 10, (i % 10 == 0) ? "9:every tenth" : NULL);
    return NULL;
}

/* Concurrent recorders and readers: no update is lost. */
static void test_stats_concurrent(void **state)
{
    gf_srv_info info = test_info();
    gf_srv *srv = NULL;
    enum { THREADS = 4, PER_THREAD = 20000 };
    pthread_t th[THREADS];
    record_arg args[THREADS];

    assert_int_equal(gf_srv_create(&info, &srv, NULL, 0), GF_OK);
    for (int t = 0; t < THREADS; t++) {
        args[t] = (record_arg){srv, (size_t)(t % 2), PER_THREAD};
        assert_int_equal(pthread_create(&th[t], NULL, record_thread, &args[t]), 0);
    }
    for (int i = 0; i < 20; i++) { /* read while they write */
        char *text = NULL;
        assert_int_equal(gf_srv_stats_json(srv, &text), GF_OK);
        json_decref(parse(text));
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (size_t i = 0; i < 2; i++) {
        json_t *ep = stats_endpoint(srv, i);
        assert_int_equal(int_field(ep, "num_requests"), 2 * PER_THREAD);
        assert_int_equal(int_field(ep, "num_errors"), 2 * PER_THREAD / 10);
        assert_int_equal(int_field(ep, "processing_time"), 2 * PER_THREAD * 10);
        assert_int_equal(int_field(ep, "average_processing_time"), 10);
        json_decref(ep);
    }
    gf_srv_stop(srv);
}

typedef struct bad_case {
    const char *what;
    const char *name, *version, *id, *description;
    gf_srv_endpoint ep;
    size_t eps_len;
    bool null_eps;
} bad_case;

static void test_validation(void **state)
{
    static const bad_case bad[] = {
        {"null name", NULL, "1.0.0", "i", NULL, {0}, 0, false},
        {"empty name", "", "1.0.0", "i", NULL, {0}, 0, false},
        {"dot in name", "a.b", "1.0.0", "i", NULL, {0}, 0, false},
        {"space in name", "a b", "1.0.0", "i", NULL, {0}, 0, false},
        {"wildcard name", "a*", "1.0.0", "i", NULL, {0}, 0, false},
        {"non-ascii name", "caf\xc3\xa9", "1.0.0", "i", NULL, {0}, 0, false},
        {"null version", "a", NULL, "i", NULL, {0}, 0, false},
        {"two-part version", "a", "1.0", "i", NULL, {0}, 0, false},
        {"v prefix", "a", "v1.0.0", "i", NULL, {0}, 0, false},
        {"leading zero", "a", "01.0.0", "i", NULL, {0}, 0, false},
        {"empty pre-release", "a", "1.0.0-", "i", NULL, {0}, 0, false},
        {"empty build", "a", "1.0.0+", "i", NULL, {0}, 0, false},
        {"pre-release leading zero", "a", "1.0.0-01", "i", NULL, {0}, 0, false},
        {"trailing space", "a", "1.0.0 ", "i", NULL, {0}, 0, false},
        {"null id", "a", "1.0.0", NULL, NULL, {0}, 0, false},
        {"dot in id", "a", "1.0.0", "x.y", NULL, {0}, 0, false},
        {"wildcard id", "a", "1.0.0", ">", NULL, {0}, 0, false},
        {"bad utf-8 description", "a", "1.0.0", "i", "\xff\xfe", {0}, 0, false},
        {"endpoints missing", "a", "1.0.0", "i", NULL, {0}, 2, true},
        {"endpoint name with dot", "a", "1.0.0", "i", NULL, {"a.b", "s", NULL}, 1, false},
        {"endpoint without subject", "a", "1.0.0", "i", NULL, {"e", NULL, NULL}, 1, false},
        {"endpoint empty token", "a", "1.0.0", "i", NULL, {"e", "a..b", NULL}, 1, false},
        {"endpoint trailing dot", "a", "1.0.0", "i", NULL, {"e", "a.", NULL}, 1, false},
        {"endpoint bad queue", "a", "1.0.0", "i", NULL, {"e", "a.b", "q.1"}, 1, false},
        /* gamefn/names.h: a wildcard is a whole token, as config and provisioning say */
        {"endpoint wildcard inside a token",
         "a",
         "1.0.0",
         "i",
         NULL,
         {"e", "a*b.c", NULL},
         1,
         false},
    };
    gf_log_level saved = gf_log_get_level();
    gf_log_set_level(GF_LOG_OFF);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gf_srv_info info = {.name = bad[i].name,
                            .version = bad[i].version,
                            .id = bad[i].id,
                            .description = bad[i].description,
                            .endpoints = bad[i].null_eps ? NULL : &bad[i].ep,
                            .endpoints_len = bad[i].eps_len};
        gf_srv *srv = (gf_srv *)&info; /* must be reset to NULL */
        char why[256] = "";
        gf_err err = gf_srv_create(&info, &srv, why, sizeof why);
        if (err != GF_ERR_INVALID)
            fail_msg("case '%s': got %s, want invalid", bad[i].what, gf_err_str(err));
        if (why[0] == '\0')
            fail_msg("case '%s': refused without saying why", bad[i].what);
        assert_null(srv);
        /* start validates before touching the connection */
        srv = (gf_srv *)&info;
        assert_int_equal(gf_srv_start(NULL, &info, &srv, NULL, 0), GF_ERR_INVALID);
        assert_null(srv);
    }
    assert_int_equal(gf_srv_create(NULL, &(gf_srv *){NULL}, NULL, 0), GF_ERR_INVALID);
    gf_log_set_level(saved);

    static const char *const good_versions[] = {
        "0.1.0",
        "10.20.30",
        "1.2.3-rc.1+build.5",
        "1.0.0-alpha.beta",
        "1.0.0-0A.is.legal",
        "1.0.0+20130313144700",
        "99999999999.0.0",
    };
    for (size_t i = 0; i < sizeof good_versions / sizeof good_versions[0]; i++) {
        gf_srv_info info = {.name = "svc_1-a",
                            .version = good_versions[i],
                            .id = "id-1",
                            .description = NULL,
                            .endpoints = NULL,
                            .endpoints_len = 0};
        gf_srv *srv = NULL;
        char why[256] = "";
        gf_err err = gf_srv_create(&info, &srv, why, sizeof why);
        if (err != GF_OK)
            fail_msg("version '%s' refused: %s (%s)", good_versions[i], gf_err_str(err), why);
        gf_srv_stop(srv);
    }
    gf_srv_stop(NULL);
}

/* The service copies its input: the caller's strings may change after create. */
static void test_copies_input(void **state)
{
    char name[] = "copy";
    char ep_name[] = "ep";
    char subject[] = "a.b";
    gf_srv_endpoint ep = {ep_name, subject, NULL};
    gf_srv_info info = {.name = name,
                        .version = "1.0.0",
                        .id = "i",
                        .description = NULL,
                        .endpoints = &ep,
                        .endpoints_len = 1};
    gf_srv *srv = NULL;
    char *text = NULL;

    assert_int_equal(gf_srv_create(&info, &srv, NULL, 0), GF_OK);
    memset(name, 'X', sizeof name - 1);
    memset(subject, 'X', sizeof subject - 1);
    assert_int_equal(gf_srv_info_json(srv, &text), GF_OK);
    json_t *root = parse(text);
    assert_string_equal(str_field(root, "name"), "copy");
    assert_string_equal(str_field(json_array_get(json_object_get(root, "endpoints"), 0), "subject"),
                        "a.b");
    json_decref(root);
    gf_srv_stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping),
        cmocka_unit_test(test_info_answer),
        cmocka_unit_test(test_info_no_description_no_endpoints),
        cmocka_unit_test(test_stats_initial),
        cmocka_unit_test(test_stats_record),
        cmocka_unit_test(test_stats_concurrent),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_copies_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
