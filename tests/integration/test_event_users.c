/*
 * test_event_users.c — the event log as shipped, against a real nats-server: the
 * shipped config (config/gamefn.yaml) and users (deploy/nats/accounts.conf), the
 * operator provisioning, every event function (leaderboard, analytics, crashes, dlq,
 * lag) under its own NATS user, events from a game server's user and the board read by
 * a gateway's. A score reaches the board, an event that is not one is dead-lettered into
 * DLQ by the dlq function, the operator's event-log commands work as admin, and the
 * server refuses nothing on the way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_support.h"
#include "event_support.h"
#include "fn_support.h"
#include "gamefn/clock.h"
#include "lb_support.h"

static const char *const functions[] = {"leaderboard", "analytics", "crashes", "dlq", "lag"};
enum { N_FUNCTIONS = sizeof functions / sizeof functions[0] };

static uint64_t stream_msgs(gf_fnenv *env, const char *stream)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, env->js, stream, NULL, NULL) != NATS_OK)
        return 0;
    uint64_t n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

static void shipped_config_under_shipped_users(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o = {.server_config = gf_fnenv_shipped_accounts(),
                       .client_user = "admin",
                       .client_password = "pw-ADMIN"};
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    const char *src = getenv("GAMEFN_SOURCE_DIR");
    snprintf(env.config_path, sizeof env.config_path, "%s/config/gamefn.yaml",
             src && src[0] ? src : ".");
    char url[300];
    snprintf(url, sizeof url, "GAMEFN_NATS_URL=%s", gf_natsd_url(env.natsd));

    char *admin[] = {url, "GAMEFN_NATS_USER=admin", "GAMEFN_NATS_PASSWORD=pw-ADMIN", NULL};
    cli_result r = cli_run(&env, admin, "provision", NULL);
    cli_expect(&r, 0, NULL);
    gf_proc procs[N_FUNCTIONS] = {{0}};
    for (size_t i = 0; i < N_FUNCTIONS; i++) {
        char bin[128];
        snprintf(bin, sizeof bin, "functions/%s/gamefn-%s", functions[i], functions[i]);
        gf_fnenv_login login;
        gf_fnenv_shipped_login(functions[i], &login);
        char *as_user[] = {url, login.user, login.password, NULL};
        assert_int_equal(gf_fnenv_spawn(&env, &procs[i], bin, functions[i], as_user), 0);
        if (!gf_fnenv_wait_ping(&env, functions[i], functions[i], 20000)) {
            gf_proc_dump_log(&procs[i], 30);
            fail_msg("%s did not start under its own user", functions[i]);
        }
    }

    /* A game server scores alice, and publishes bytes that are no event for bob. */
    natsConnection *gs = gf_fnenv_connect_as(&env, "gameserver", "pw-GAMESERVER", "_INBOX.gs");
    assert_non_null(gs);
    jsCtx *js = NULL;
    assert_int_equal(natsConnection_JetStream(&js, gs, NULL), NATS_OK);
    uint8_t *data = NULL;
    size_t len = 0;
    assert_int_equal(gf_ev_score("gs-1", 1, "alice", 42, "", gf_clock_unix_ms(), &data, &len), 0);
    assert_int_equal(gf_ev_publish(js, "alice", "score", data, len, "gs-1", 1, NULL, false), 0);
    free(data);
    assert_int_equal(gf_ev_publish_raw(js, "gamefn.v1.event.bob.score", "\xff\xfe", 2, "junk-1"),
                     0);

    /* The gateway reads alice's score on the board. */
    gf_fnenv gateway = env;
    gateway.nc = gf_fnenv_connect_as(&env, "gateway", "pw-GATEWAY", "_INBOX.gw");
    assert_non_null(gateway.nc);
    int64_t until = gf_clock_mono_ms() + 30000;
    bool scored = false;
    while (!scored && gf_clock_mono_ms() < until) {
        int code = 0;
        Gamefn__V1__LeaderboardQueryReply *top = lb_top(&gateway, "global", NULL, 10, &code);
        scored = top && top->n_entries == 1 && strcmp(top->entries[0]->player_id, "alice") == 0 &&
                 top->entries[0]->score == 42;
        lb_reply_free(top);
        if (!scored)
            gf_clock_sleep_ms(200);
    }
    assert_true(scored);
    /* The event consumers dead-letter the garbage; the dlq function files it in DLQ. */
    while (stream_msgs(&env, "DLQ") == 0 && gf_clock_mono_ms() < until)
        gf_clock_sleep_ms(200);
    assert_true(stream_msgs(&env, "DLQ") > 0);

    /* The operator's event-log commands, as admin. */
    static const char *const commands[][5] = {
        {"lb", "top", "--board", "global", NULL},
        {"lag", NULL},
        {"analytics", NULL},
        {"crashes", NULL},
        {"dlq", "ls", NULL},
        {"history", "alice", NULL},
        {"status", NULL},
        {"services", NULL},
    };
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        r = cli_runv(&env, admin, commands[i]);
        if (r.code != 0)
            fail_msg("gamefn %s as admin exited %d:\n%s", commands[i][0], r.code, r.out);
        cli_result_free(&r);
    }

    for (size_t i = N_FUNCTIONS; i-- > 0;)
        assert_true(gf_fnenv_stop(&procs[i], 15000));
    int refused = gf_fnenv_server_log_count(&env, "Violation");
    if (refused)
        gf_natsd_dump_log(env.natsd, 20);
    assert_int_equal(refused, 0);
    jsCtx_Destroy(js);
    natsConnection_Destroy(gs);
    natsConnection_Destroy(gateway.nc);
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shipped_config_under_shipped_users),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
