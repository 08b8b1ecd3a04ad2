/*
 * test_fn_permissions.c — the shipped least-privilege users (deploy/nats/accounts.conf)
 * against a real nats-server: the file passes `nats-server -t`; echo runs under its
 * user; a gateway with its own inbox prefix gets answers but cannot reach discovery or
 * the JetStream API; a function user (the FUNCTION block) can create a stream but not
 * delete one, nor a durable of EVENTS or DLQ (lag alone may delete EVENTS consumers); a hostile
 * reply subject changes nothing, through either layer; a game server's events are stored in their
 * player's partition (the account's own mapping); and the auditor runs `gamefn check` over
 * thousands of audit records with read access only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_support.h"
#include "fn_support.h"
#include "gamefn/clock.h"
#include "gamefn/partition.h"
#include "gamefn/v1/ticket.pb-c.h"

#define ECHO "functions/echo/gamefn-echo"

static char accounts_path[512];

/* A durable pull consumer `name` on `stream`, created by the admin client. */
static void durable(jsCtx *js, const char *stream, const char *name)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = name;
    cc.AckPolicy = js_AckExplicit;
    assert_int_equal(js_AddConsumer(NULL, js, stream, &cc, NULL, NULL), NATS_OK);
}

/* `user` with its password as gf_fnenv_shipped_accounts sets it ("pw-<USER>"). */
static natsConnection *connect_as(gf_fnenv *env, const char *user, const char *inbox_prefix)
{
    char password[80];
    gf_fnenv_shipped_password(user, password, sizeof password);
    natsConnection *nc = gf_fnenv_connect_as(env, user, password, inbox_prefix);
    assert_non_null(nc);
    return nc;
}

static void the_file_passes_nats_server_t(void **state)
{
    char bin[512], log[300];
    const char *server = getenv("GAMEFN_NATS_SERVER");
    snprintf(bin, sizeof bin, "%s", server && server[0] ? server : "/usr/sbin/nats-server");
    snprintf(log, sizeof log, "/tmp/gamefn-accounts-t-%d.log", (int)getpid());
    char *argv[] = {bin, "-t", "-c", accounts_path, NULL};
    gf_proc p = {0};
    assert_int_equal(gf_proc_spawn(&p, argv, NULL, log), 0);
    assert_int_equal(gf_proc_wait(&p, 10000), 0);
    if (!gf_proc_exited_with(&p, 0))
        gf_proc_dump_log(&p, 20);
    assert_true(gf_proc_exited_with(&p, 0));
    remove(log);
}

static void roles_under_the_shipped_users(void **state)
{
    gf_fnenv_opts opts = {
        .server_config = gf_fnenv_shipped_accounts(),
        .nats = "  user: echo\n  password: pw-ECHO\n",
        .client_user = "admin", /* the test's client inspects streams */
        .client_password = "pw-ADMIN",
    };
    gf_fnenv env;
    gf_proc echo = {0};
    assert_int_equal(gf_fnenv_start_opts(&env, &opts), 0);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 1000;

    assert_int_equal(gf_fnenv_spawn_ready(&env, &echo, ECHO, "echo", "e1", NULL), 0);
    assert_int_equal(gf_fnenv_log_count(&echo, "Permissions Violation"), 0);

    /* A gateway, on its own inbox prefix, is answered by echo. */
    natsConnection *gw = connect_as(&env, "gateway", "_INBOX.gw");
    natsMsg *reply = NULL;
    assert_int_equal(natsConnection_Request(&reply, gw, "gamefn.v1.echo", "hi", 2, 3000), NATS_OK);
    assert_int_equal(natsMsg_GetDataLength(reply), 2);
    natsMsg_Destroy(reply);
    /* ... but reaches neither discovery nor the JetStream API. */
    assert_int_not_equal(natsConnection_Request(&reply, gw, "$SRV.PING", NULL, 0, 500), NATS_OK);
    assert_int_not_equal(natsConnection_Request(&reply, gw, "$JS.API.INFO", NULL, 0, 500), NATS_OK);

    /* A function user (the FUNCTION block) creates what it declares, deletes nothing. */
    natsConnection *fn = connect_as(&env, "allocator", NULL);
    jsCtx *fjs = NULL;
    assert_int_equal(natsConnection_JetStream(&fjs, fn, &jo), NATS_OK);
    assert_int_equal(gf_fnenv_add_stream(fjs, "VICTIM", "victim.>"), NATS_OK);
    assert_int_not_equal(js_DeleteStream(fjs, "VICTIM", NULL, NULL), NATS_OK);

    /* ... nor a durable whose position is state: a consumer group's on EVENTS, a reader's
     * on DLQ. Only lag may delete consumers of EVENTS (its gap tracker's ephemeral). */
    assert_int_equal(gf_fnenv_add_stream(env.js, "EVENTS", "gamefn.v1.evp.>"), NATS_OK);
    assert_int_equal(gf_fnenv_add_stream(env.js, "DLQ", "gamefn.v1.dlq.>"), NATS_OK);
    durable(env.js, "EVENTS", "leaderboard-p00");
    durable(env.js, "EVENTS", "lag-probe");
    durable(env.js, "DLQ", "inspector");
    assert_int_not_equal(js_DeleteConsumer(fjs, "EVENTS", "leaderboard-p00", NULL, NULL), NATS_OK);
    assert_int_not_equal(js_DeleteConsumer(fjs, "DLQ", "inspector", NULL, NULL), NATS_OK);
    natsConnection *lag = connect_as(&env, "lag", NULL);
    jsCtx *ljs = NULL;
    assert_int_equal(natsConnection_JetStream(&ljs, lag, &jo), NATS_OK);
    assert_int_not_equal(js_DeleteConsumer(ljs, "DLQ", "inspector", NULL, NULL), NATS_OK);
    assert_int_equal(js_DeleteConsumer(ljs, "EVENTS", "lag-probe", NULL, NULL), NATS_OK);
    jsConsumerInfo *ci = NULL;
    assert_int_equal(js_GetConsumerInfo(&ci, env.js, "EVENTS", "leaderboard-p00", NULL, NULL),
                     NATS_OK);
    jsConsumerInfo_Destroy(ci);
    assert_int_equal(js_GetConsumerInfo(&ci, env.js, "DLQ", "inspector", NULL, NULL), NATS_OK);
    jsConsumerInfo_Destroy(ci);
    jsCtx_Destroy(ljs);
    natsConnection_Destroy(lag);

    /* The confused deputy through echo, from the gateway: refused twice over. */
    assert_int_equal(natsConnection_PublishRequest(gw, "gamefn.v1.echo",
                                                   "$JS.API.STREAM.DELETE.VICTIM", NULL, 0),
                     NATS_OK);
    assert_int_equal(natsConnection_Request(&reply, gw, "gamefn.v1.echo", "ok", 2, 3000), NATS_OK);
    natsMsg_Destroy(reply);
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, env.js, "VICTIM", NULL, NULL), NATS_OK);
    jsStreamInfo_Destroy(si);

    jsCtx_Destroy(fjs);
    natsConnection_Destroy(fn);
    natsConnection_Destroy(gw);
    assert_true(gf_fnenv_stop(&echo, 10000));
    gf_fnenv_free(&env);
}

/* A game server publishes events as gamefn.v1.event.<player>.<type>; the account the
 * shipped users live in maps them to their partition, where EVENTS stores them. Both
 * halves of the shipped file are needed: a top-level mapping maps only the global
 * account (the publish finds no stream, "no responders"), and 2.9.10 checks the publish
 * against the mapped subject (without gamefn.v1.evp.> it is a permissions violation). */
static void game_server_events_reach_their_partition(void **state)
{
    gf_fnenv_opts opts = {
        .server_config = gf_fnenv_shipped_accounts(),
        .client_user = "admin",
        .client_password = "pw-ADMIN",
    };
    gf_fnenv env;
    assert_int_equal(gf_fnenv_start_opts(&env, &opts), 0);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 3000;
    assert_int_equal(gf_fnenv_add_stream(env.js, "EVENTS", "gamefn.v1.evp.>"), NATS_OK);

    natsConnection *gs = connect_as(&env, "gameserver", "_INBOX.gs");
    jsCtx *gjs = NULL;
    assert_int_equal(natsConnection_JetStream(&gjs, gs, &jo), NATS_OK);
    const char *players[] = {"p-7", "alice", "0x1f"};
    for (size_t i = 0; i < sizeof players / sizeof players[0]; i++) {
        char subject[128], stored[160];
        snprintf(subject, sizeof subject, "gamefn.v1.event.%s.kill", players[i]);
        jsPubAck *ack = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_Publish(&ack, gjs, subject, "e", 1, NULL, &jerr);
        if (s != NATS_OK) {
            gf_natsd_dump_log(env.natsd, 5); /* a permissions violation shows there */
            fail_msg("publish of %s as the game server: %s (error %d)", subject,
                     natsStatus_GetText(s), (int)jerr);
        }
        assert_string_equal(ack->Stream, "EVENTS");
        jsPubAck_Destroy(ack);
        snprintf(stored, sizeof stored, "gamefn.v1.evp.%u.%s.kill",
                 (unsigned)gf_partition_of(players[i], 16), players[i]);
        natsMsg *m = NULL;
        assert_int_equal(js_GetLastMsg(&m, env.js, "EVENTS", stored, NULL, NULL), NATS_OK);
        natsMsg_Destroy(m);
    }
    jsCtx_Destroy(gjs);
    natsConnection_Destroy(gs);
    gf_fnenv_free(&env);
}

/* A QUEUED ticket record, live for an hour, published to $KV.tickets.<id>. */
static void queued_ticket(jsCtx *js, int i, int64_t now)
{
    char id[32], player[32], subject[64];
    snprintf(id, sizeof id, "t%d", i);
    snprintf(player, sizeof player, "p%d", i);
    Gamefn__V1__TicketRecord r = GAMEFN__V1__TICKET_RECORD__INIT;
    Gamefn__V1__PartyMember m = GAMEFN__V1__PARTY_MEMBER__INIT, *mp = &m;
    m.player_id = player;
    r.ticket_id = id;
    r.queue = "duel";
    r.n_members = 1;
    r.members = &mp;
    r.state = GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED;
    r.created_unix_ms = r.queued_unix_ms = now;
    r.expires_unix_ms = now + 3600000;
    uint8_t buf[256];
    size_t len = gamefn__v1__ticket_record__pack(&r, buf);
    snprintf(subject, sizeof subject, "$KV.tickets.%s", id);
    assert_int_equal(js_PublishAsync(js, subject, buf, (int)len, NULL), NATS_OK);
}

/* `gamefn check` as the auditor: read-only access is enough, flow control included (the
 * mirror holds more than an ordered consumer receives before its first flow-control
 * request); the gateway, without JetStream access, gets a clear failure. */
static void auditor_runs_gamefn_check(void **state)
{
    enum { N = 20000 };
    gf_fnenv_opts opts = {
        .server_config = gf_fnenv_shipped_accounts(),
        .nats = "  user: auditor\n  password: pw-AUDITOR\n",
        .no_client = true,
    };
    gf_fnenv env;
    assert_int_equal(gf_fnenv_start_opts(&env, &opts), 0);
    /* A function user creates the bucket, its mirror and EVENTS, and writes the records. */
    natsConnection *fn = connect_as(&env, "allocator", NULL);
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 5000;
    jo.PublishAsync.MaxPending = 4096;
    jo.PublishAsync.StallWait = 10000;
    assert_int_equal(natsConnection_JetStream(&js, fn, &jo), NATS_OK);
    kvConfig kc;
    kvStore *kv = NULL;
    kvConfig_Init(&kc);
    kc.Bucket = "tickets";
    kc.History = 5;
    assert_int_equal(js_CreateKeyValue(&kv, js, &kc), NATS_OK);
    kvStore_Destroy(kv);
    jsStreamConfig sc;
    jsStreamSource src;
    jsStreamConfig_Init(&sc);
    jsStreamSource_Init(&src);
    src.Name = "KV_tickets";
    sc.Name = "AUDIT_TICKETS";
    sc.Mirror = &src;
    assert_int_equal(js_AddStream(NULL, js, &sc, NULL, NULL), NATS_OK);
    assert_int_equal(gf_fnenv_add_stream(js, "EVENTS", "gamefn.v1.evp.>"), NATS_OK);
    int64_t now = gf_clock_unix_ms();
    for (int i = 0; i < N; i++)
        queued_ticket(js, i, now);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 30000;
    assert_int_equal(js_PublishAsyncComplete(js, &po), NATS_OK);
    /* No wait for the mirror: the checker waits until it holds what its bucket does. */
    cli_result r = cli_run(&env, NULL, "check", "--json", "--settle", "1s", NULL);
    if (r.code != 0)
        fail_msg("check as the auditor exited %d:\n%s", r.code, r.out);
    json_t *j = cli_json(&r); /* only the JSON: no permission error on stderr either */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "totals"), "tickets")),
                     N);
    json_decref(j);
    cli_result_free(&r);

    char *gateway[] = {"GAMEFN_NATS_USER=gateway", "GAMEFN_NATS_PASSWORD=pw-GATEWAY", NULL};
    r = cli_run(&env, gateway, "check", NULL);
    if (r.code == 0 || !strstr(r.out, "JetStream"))
        fail_msg("check as the gateway exited %d:\n%s", r.code, r.out);
    cli_result_free(&r);
    /* The ticket commands' inbox prefix, _INBOX.gw, is the gateway's: the answer (here "no
     * responders", no intake runs) reaches it; another prefix hears nothing. */
    r = cli_run(&env, gateway, "ticket", "get", "t1", NULL);
    if (r.code != 6)
        fail_msg("ticket get as the gateway exited %d:\n%s", r.code, r.out);
    cli_result_free(&r);
    r = cli_run(&env, gateway, "--inbox-prefix", "_INBOX.other", "ticket", "get", "t1", "--timeout",
                "1s", NULL);
    if (r.code != 5)
        fail_msg("ticket get on another inbox prefix exited %d:\n%s", r.code, r.out);
    cli_result_free(&r);

    jsCtx_Destroy(js);
    natsConnection_Destroy(fn);
    gf_fnenv_free(&env);
}

int main(void)
{
    const char *src = getenv("GAMEFN_SOURCE_DIR");
    snprintf(accounts_path, sizeof accounts_path, "%s/deploy/nats/accounts.conf",
             src && src[0] ? src : ".");
    gf_fnenv_shipped_accounts(); /* the passwords nats-server -t reads too */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_file_passes_nats_server_t),
        cmocka_unit_test(roles_under_the_shipped_users),
        cmocka_unit_test(game_server_events_reach_their_partition),
        cmocka_unit_test(auditor_runs_gamefn_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
