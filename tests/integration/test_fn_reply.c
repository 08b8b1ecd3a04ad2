/*
 * test_fn_reply.c — a function replies only to inboxes (the confused-deputy fault).
 *
 * A requester names the reply subject and the function publishes there with its own
 * credentials. These attacks used to work against echo: reply subject
 * `$JS.API.STREAM.DELETE.VICTIM` deleted stream VICTIM, reply `victim.injected` stored
 * the attacker's bytes in it, and the $SRV responders could be aimed the same way; also
 * for a user whose only publish permission is gamefn.v1.echo. Now every attempt is
 * refused, counted in $SRV STATS and logged at a bounded rate, and echo keeps serving.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fn_support.h"
#include "gamefn/clock.h"

#define ECHO "functions/echo/gamefn-echo"

static const char *const hostile_replies[] = {"$JS.API.STREAM.DELETE.VICTIM", "victim.injected"};
static const char *const srv_subjects[] = {"$SRV.PING", "$SRV.INFO.echo", "$SRV.STATS.echo.e1"};

/* A server, stream VICTIM and echo (instance e1), ready. */
static void start_echo_and_victim(gf_fnenv *env, gf_proc *echo)
{
    assert_int_equal(gf_fnenv_start(env, NULL), 0);
    assert_int_equal(gf_fnenv_add_stream(env->js, "VICTIM", "victim.>"), NATS_OK);
    assert_int_equal(gf_fnenv_spawn_ready(env, echo, ECHO, "echo", "e1", NULL), 0);
}

/* VICTIM still exists and holds no message. */
static void assert_victim_intact(jsCtx *js)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, js, "VICTIM", NULL, &jerr);
    if (s != NATS_OK)
        fail_msg("stream VICTIM is gone (status %d, js error %d)", (int)s, (int)jerr);
    assert_int_equal(si->State.Msgs, 0);
    jsStreamInfo_Destroy(si);
}

/* A normal request answers, which also means every earlier request was processed. */
static void assert_echo_serves(natsConnection *nc)
{
    natsMsg *reply = NULL;
    assert_int_equal(natsConnection_Request(&reply, nc, "gamefn.v1.echo", "ok", 2, 3000), NATS_OK);
    assert_int_equal(natsMsg_GetDataLength(reply), 2);
    natsMsg_Destroy(reply);
}

static json_t *stats(gf_fnenv *env)
{
    char *text = NULL;
    assert_int_equal(gf_fnenv_srv(env, "$SRV.STATS.echo.e1", &text), 0);
    json_t *root = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(root);
    return root;
}

static json_int_t field(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail_msg("no integer field %s", key);
    return json_integer_value(v);
}

/* `attacker` sends the hostile requests (to echo, to $SRV or both); env->nc inspects. */
static void attack(gf_fnenv *env, natsConnection *attacker, bool echo_too, bool srv_too)
{
    for (size_t i = 0; i < 2; i++) {
        /* Echo answers with the payload: empty is a valid stream-delete request. */
        const char *payload = i == 0 ? "" : "attacker bytes";
        if (echo_too)
            assert_int_equal(natsConnection_PublishRequest(attacker, "gamefn.v1.echo",
                                                           hostile_replies[i], payload,
                                                           (int)strlen(payload)),
                             NATS_OK);
        for (size_t v = 0; srv_too && v < 3; v++)
            assert_int_equal(natsConnection_PublishRequest(attacker, srv_subjects[v],
                                                           hostile_replies[i], NULL, 0),
                             NATS_OK);
    }
    assert_int_equal(natsConnection_FlushTimeout(attacker, 2000), NATS_OK);
    assert_echo_serves(env->nc);
    gf_clock_sleep_ms(200); /* $SRV responders run on their own threads */
    assert_victim_intact(env->js);
}

static void replies_go_only_to_inboxes(void **state)
{
    gf_fnenv env;
    gf_proc echo = {0};
    start_echo_and_victim(&env, &echo);

    attack(&env, env.nc, true, true);

    json_t *root = stats(&env);
    json_t *ep = json_array_get(json_object_get(root, "endpoints"), 0);
    assert_int_equal(field(ep, "num_refused"), 2);
    assert_int_equal(field(ep, "num_errors"), 2);
    assert_int_equal(field(ep, "num_requests"), 3); /* the two refused + the normal one */
    assert_non_null(strstr(json_string_value(json_object_get(ep, "last_error")), "refused"));
    assert_int_equal(field(root, "discovery_refused"), 6);
    json_decref(root);

    /* Refusals are logged, but not once each: one line per guard, then quiet. */
    int lines = gf_fnenv_log_count(&echo, "reply refused");
    assert_true(lines >= 1 && lines <= 2);
    assert_true(gf_fnenv_stop(&echo, 10000));
    gf_fnenv_free(&env);
}

/* The $SRV responders alone: their JSON answers must not reach the JetStream API or a
 * stream either. */
static void discovery_replies_go_only_to_inboxes(void **state)
{
    gf_fnenv env;
    gf_proc echo = {0};
    start_echo_and_victim(&env, &echo);

    attack(&env, env.nc, false, true);
    json_t *root = stats(&env);
    assert_int_equal(field(root, "discovery_refused"), 6);
    json_decref(root);
    assert_true(gf_fnenv_stop(&echo, 10000));
    gf_fnenv_free(&env);
}

/* The attacker may publish to gamefn.v1.echo and nothing else; the function's own user
 * is allowed everything (a deployment without least-privilege permissions). */
static void restricted_attacker_cannot_borrow_the_functions_rights(void **state)
{
    static const char auth[] =
        "authorization {\n"
        "  users = [\n"
        "    {user: fn, password: fn-secret}\n"
        "    {user: attacker, password: attacker-secret,\n"
        "     permissions: {publish: [\"gamefn.v1.echo\"], subscribe: [\"_INBOX.>\"]}}\n"
        "  ]\n"
        "}\n";
    gf_fnenv_opts opts = {
        .server_config = auth,
        .nats = "  user: fn\n  password: fn-secret\n",
        .no_client = true,
    };
    gf_fnenv env;
    gf_proc echo = {0};
    assert_int_equal(gf_fnenv_start_opts(&env, &opts), 0);
    char url[256];
    int port = gf_natsd_port(env.natsd);
    snprintf(url, sizeof url, "nats://fn:fn-secret@127.0.0.1:%d", port);
    assert_int_equal(natsConnection_ConnectTo(&env.nc, url), NATS_OK);
    assert_int_equal(natsConnection_JetStream(&env.js, env.nc, NULL), NATS_OK);
    natsConnection *attacker = NULL;
    snprintf(url, sizeof url, "nats://attacker:attacker-secret@127.0.0.1:%d", port);
    assert_int_equal(natsConnection_ConnectTo(&attacker, url), NATS_OK);

    assert_int_equal(gf_fnenv_add_stream(env.js, "VICTIM", "victim.>"), NATS_OK);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &echo, ECHO, "echo", "e1", NULL), 0);

    /* The attacker's own permissions do allow echo itself. */
    natsMsg *reply = NULL;
    assert_int_equal(natsConnection_Request(&reply, attacker, "gamefn.v1.echo", "hi", 2, 3000),
                     NATS_OK);
    natsMsg_Destroy(reply);

    attack(&env, attacker, true, false);
    json_t *root = stats(&env);
    json_t *ep = json_array_get(json_object_get(root, "endpoints"), 0);
    assert_int_equal(field(ep, "num_refused"), 2);
    json_decref(root);

    natsConnection_Destroy(attacker);
    assert_true(gf_fnenv_stop(&echo, 10000));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replies_go_only_to_inboxes),
        cmocka_unit_test(discovery_replies_go_only_to_inboxes),
        cmocka_unit_test(restricted_attacker_cannot_borrow_the_functions_rights),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
