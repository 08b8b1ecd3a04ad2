/*
 * Request/reply functions end to end: the echo binary against a real nats-server.
 * Load sharing across replicas, typed error replies, drain on SIGTERM, starting
 * before NATS is up, and config errors.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "fn_support.h"
#include "gamefn/clock.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamefn/wire_error.h"

#define ECHO "functions/echo/gamefn-echo"

static const char echo_section[] = "  echo:\n    max_payload: 16\n    prefix: \"re:\"\n";

static int64_t stats_requests(gf_fnenv *env, const char *id)
{
    char subject[128], *text = NULL;
    snprintf(subject, sizeof subject, "$SRV.STATS.echo.%s", id);
    if (gf_fnenv_srv(env, subject, &text) != 0)
        return -1;
    json_t *root = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "type")),
                        "io.nats.micro.v1.stats_response");
    json_t *ep = json_array_get(json_object_get(root, "endpoints"), 0);
    int64_t n = json_integer_value(json_object_get(ep, "num_requests"));
    json_decref(root);
    return n;
}

static void two_replicas_share_the_load(void **state)
{
    gf_fnenv env;
    gf_proc a = {0}, b = {0};
    assert_int_equal(gf_fnenv_start(&env, echo_section), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, ECHO, "a", NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &b, ECHO, "b", NULL), 0);
    assert_true(gf_fnenv_wait_ping(&env, "echo", "a", 10000));
    assert_true(gf_fnenv_wait_ping(&env, "echo", "b", 10000));

    enum { N = 300 };
    for (int i = 0; i < N; i++) {
        char body[16];
        int len = snprintf(body, sizeof body, "m%d", i);
        natsMsg *reply = NULL;
        assert_int_equal(natsConnection_Request(&reply, env.nc, "gamefn.v1.echo", body, len, 2000),
                         NATS_OK);
        char want[32];
        snprintf(want, sizeof want, "re:%s", body);
        assert_int_equal(natsMsg_GetDataLength(reply), (int)strlen(want));
        assert_memory_equal(natsMsg_GetData(reply), want, strlen(want));
        natsMsg_Destroy(reply);
    }
    int64_t na = stats_requests(&env, "a"), nb = stats_requests(&env, "b");
    /* Queue groups pick a member at random per request: with 300 requests a replica
     * below 50 would be a 1-in-10^30 event, so this only fails if sharing is broken. */
    assert_int_equal(na + nb, N);
    assert_true(na >= 50);
    assert_true(nb >= 50);

    /* The operator CLI sees both instances and their counts. */
    gf_proc cli = {0};
    char bin[512], log[400], line[256];
    gf_fnenv_binary("tools/gamefn", bin, sizeof bin);
    snprintf(log, sizeof log, "%s/cli.log", env.dir);
    char *argv[] = {bin, "--config", env.config_path, "services", NULL};
    assert_int_equal(gf_proc_spawn(&cli, argv, NULL, log), 0);
    assert_int_equal(gf_proc_wait(&cli, 10000), 0);
    assert_true(gf_proc_exited_with(&cli, 0));
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    int instances = -1, rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "echo ", 5) == 0)
            rows++;
        sscanf(line, "%d instance(s)", &instances);
    }
    fclose(f);
    assert_int_equal(instances, 2);
    assert_int_equal(rows, 2);

    gf_proc_signal(&a, SIGTERM);
    gf_proc_signal(&b, SIGTERM);
    assert_int_equal(gf_proc_wait(&a, 15000), 0);
    assert_int_equal(gf_proc_wait(&b, 15000), 0);
    assert_true(gf_proc_exited_with(&a, 0));
    assert_true(gf_proc_exited_with(&b, 0));
    gf_fnenv_free(&env);
}

static void bad_request_gets_typed_error_and_process_goes_on(void **state)
{
    gf_fnenv env;
    gf_proc a = {0};
    assert_int_equal(gf_fnenv_start(&env, echo_section), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, ECHO, "a", NULL), 0);
    assert_true(gf_fnenv_wait_ping(&env, "echo", "a", 10000));

    natsMsg *reply = NULL;
    const char *big = "this payload is longer than sixteen bytes";
    assert_int_equal(
        natsConnection_Request(&reply, env.nc, "gamefn.v1.echo", big, (int)strlen(big), 2000),
        NATS_OK);
    const char *code = NULL, *text = NULL;
    assert_int_equal(natsMsgHeader_Get(reply, "Nats-Service-Error-Code", &code), NATS_OK);
    assert_string_equal(code, "1");
    assert_int_equal(natsMsgHeader_Get(reply, "Nats-Service-Error", &text), NATS_OK);
    assert_non_null(strstr(text, "max_payload"));
    Gamefn__V1__Error *e = gamefn__v1__error__unpack(NULL, (size_t)natsMsg_GetDataLength(reply),
                                                     (const uint8_t *)natsMsg_GetData(reply));
    assert_non_null(e);
    assert_int_equal(e->code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT);
    gamefn__v1__error__free_unpacked(e, NULL);
    natsMsg_Destroy(reply);

    /* Still serving. */
    assert_int_equal(natsConnection_Request(&reply, env.nc, "gamefn.v1.echo", "ok", 2, 2000),
                     NATS_OK);
    assert_int_equal(natsMsgHeader_Get(reply, "Nats-Service-Error-Code", &code), NATS_NOT_FOUND);
    natsMsg_Destroy(reply);
    assert_true(gf_proc_running(&a));

    assert_true(gf_fnenv_stop(&a, 15000));
    gf_fnenv_free(&env);
}

static Gamefn__V1__Error *ask(gf_fnenv *env, const char *payload, const char **code_header)
{
    natsMsg *reply = NULL;
    assert_int_equal(natsConnection_Request(&reply, env->nc, "test.request", payload,
                                            (int)strlen(payload), 2000),
                     NATS_OK);
    static char code[16];
    const char *v = NULL;
    assert_int_equal(natsMsgHeader_Get(reply, "Nats-Service-Error-Code", &v), NATS_OK);
    snprintf(code, sizeof code, "%s", v);
    *code_header = code;
    Gamefn__V1__Error *e = gamefn__v1__error__unpack(NULL, (size_t)natsMsg_GetDataLength(reply),
                                                     (const uint8_t *)natsMsg_GetData(reply));
    natsMsg_Destroy(reply);
    assert_non_null(e);
    return e;
}

static void handler_chooses_its_wire_code(void **state)
{
    gf_fnenv env;
    gf_proc w = {0};
    char *const env_vars[] = {"GAMEFN_TEST_MODE=request", NULL};
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, "tests/gamefn-test-worker", "r1", env_vars), 0);
    assert_true(gf_fnenv_wait_ping(&env, "test-worker", "r1", 10000));

    const char *code = NULL;
    Gamefn__V1__Error *e = ask(&env, "code:7", &code);
    assert_string_equal(code, "7");
    assert_int_equal(e->code, 7); /* FAILED_PRECONDITION, as the handler asked */
    assert_string_equal(e->field, "payload");
    assert_int_equal(e->retry_after_ms, 250);
    assert_non_null(strstr(e->message, "asked for code 7"));
    gamefn__v1__error__free_unpacked(e, NULL);

    /* A code the wire does not know falls back to the gf_err's own code. */
    e = ask(&env, "code:999", &code);
    char want[16];
    snprintf(want, sizeof want, "%d", gf_wire_code_from_err(GF_ERR_PERMANENT));
    assert_string_equal(code, want);
    assert_int_equal(e->code, gf_wire_code_from_err(GF_ERR_PERMANENT));
    assert_string_equal(e->field, "payload");
    gamefn__v1__error__free_unpacked(e, NULL);

    assert_true(gf_fnenv_stop(&w, 15000));
    gf_fnenv_free(&env);
}

/* nats_extra: more of the echo's nats section (e.g. its flush mode). */
static void sigterm_case(const char *nats_extra)
{
    gf_fnenv env;
    gf_proc a = {0};
    gf_fnenv_opts o = {.nats = nats_extra, .functions = "  echo:\n    delay: 800ms\n"};
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, ECHO, "slow", NULL), 0);
    assert_true(gf_fnenv_wait_ping(&env, "echo", "slow", 10000));

    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;
    assert_int_equal(natsInbox_Create(&inbox), NATS_OK);
    assert_int_equal(natsConnection_SubscribeSync(&sub, env.nc, inbox), NATS_OK);
    assert_int_equal(natsConnection_PublishRequest(env.nc, "gamefn.v1.echo", inbox, "x", 1),
                     NATS_OK);
    gf_clock_sleep_ms(200); /* the handler is now sleeping inside the request */
    gf_proc_signal(&a, SIGTERM);

    natsMsg *reply = NULL;
    assert_int_equal(natsSubscription_NextMsg(&reply, sub, 5000), NATS_OK);
    assert_int_equal(natsMsg_GetDataLength(reply), 1);
    natsMsg_Destroy(reply);
    assert_int_equal(gf_proc_wait(&a, 15000), 0);
    assert_true(gf_proc_exited_with(&a, 0));

    /* Nobody serves the subject any more. */
    assert_int_equal(natsConnection_Request(&reply, env.nc, "gamefn.v1.echo", "x", 1, 500),
                     NATS_NO_RESPONDERS);
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    gf_fnenv_free(&env);
}

static void sigterm_answers_the_request_in_flight(void **state)
{
    (void)state;
    sigterm_case(NULL);
}

/* nats.flush batched: the reply sits in nats.c's buffer until the flusher writes it;
 * the drain at SIGTERM must still get it out before the connection closes. */
static void sigterm_answers_the_request_in_flight_batched(void **state)
{
    (void)state;
    sigterm_case("  flush: batched\n");
}

static void starts_before_nats_and_connects_when_it_comes(void **state)
{
    gf_fnenv env;
    gf_proc a = {0}, b = {0};
    assert_int_equal(gf_fnenv_start(&env, NULL), 0);
    assert_int_equal(gf_natsd_stop(env.natsd), 0);

    assert_int_equal(gf_fnenv_spawn(&env, &a, ECHO, "early", NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &b, ECHO, "quitter", NULL), 0);
    gf_clock_sleep_ms(700);
    assert_true(gf_proc_running(&a));
    /* SIGTERM while NATS is away is a clean stop. */
    assert_true(gf_fnenv_stop(&b, 5000));

    assert_int_equal(gf_natsd_restart(env.natsd), 0);
    assert_true(gf_fnenv_wait_ping(&env, "echo", "early", 15000));
    natsMsg *reply = NULL;
    assert_int_equal(natsConnection_Request(&reply, env.nc, "gamefn.v1.echo", "hi", 2, 2000),
                     NATS_OK);
    natsMsg_Destroy(reply);
    assert_true(gf_fnenv_stop(&a, 15000));
    gf_fnenv_free(&env);
}

static void broken_config_exits_2_with_file_line_column(void **state)
{
    gf_fnenv env;
    gf_proc a = {0};
    assert_int_equal(gf_fnenv_start(&env, "  echo:\n    max_payload: lots\n"), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, ECHO, "bad", NULL), 0);
    assert_int_equal(gf_proc_wait(&a, 10000), 0);
    assert_true(gf_proc_exited_with(&a, 2));
    /* Where the bad value really is in the file we wrote. */
    char line[1024], where[64] = "";
    FILE *f = fopen(env.config_path, "r");
    assert_non_null(f);
    for (int n = 1; fgets(line, sizeof line, f); n++) {
        char *value = strstr(line, "lots");
        if (value)
            snprintf(where, sizeof where, "gamefn.yaml:%d:%d:", n, (int)(value - line) + 1);
    }
    fclose(f);
    assert_true(where[0] != '\0');

    char path[400];
    snprintf(path, sizeof path, "%s/bad.log", env.dir);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_non_null(strstr(line, where));
    assert_non_null(strstr(line, "functions.echo.max_payload"));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_replicas_share_the_load),
        cmocka_unit_test(bad_request_gets_typed_error_and_process_goes_on),
        cmocka_unit_test(handler_chooses_its_wire_code),
        cmocka_unit_test(sigterm_answers_the_request_in_flight),
        cmocka_unit_test(sigterm_answers_the_request_in_flight_batched),
        cmocka_unit_test(starts_before_nats_and_connects_when_it_comes),
        cmocka_unit_test(broken_config_exits_2_with_file_line_column),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
