/* fleet_support.c — see fleet_support.h. */
#include "fleet_support.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/subjects.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/players.h"
#include "gamefn/wire_error.h"
#include "gamesim.h"
#include "mm_support.h"
#include "simstack.h"

const char fleet_duel_functions[] = "  intake:\n"
                                    "    pending_grace: 2s\n"
                                    "  ticker:\n"
                                    "    interval: 100ms\n"
                                    "  matcher:\n"
                                    "    matchmaking:\n"
                                    "      datacenters:\n"
                                    "        - {name: eu, region: eu}\n"
                                    "        - {name: us, region: na}\n"
                                    "      queues:\n"
                                    "        - {name: duel, mode: hybrid, shape: 1v1}\n";

void fleet_duel_functions_with(char *out, size_t size, const char *matcher_keys)
{
    static const char at[] = "  matcher:\n";
    const char *cut = strstr(fleet_duel_functions, at) + strlen(at);
    int n = snprintf(out, size, "%.*s%s%s", (int)(cut - fleet_duel_functions), fleet_duel_functions,
                     matcher_keys, cut);
    assert_true(n > 0 && (size_t)n < size);
}

void fleet_env_start(fleet_env *e, const fleet_env_opts *o)
{
    static const fleet_env_opts none = {0};
    if (!o)
        o = &none;
    memset(e, 0, sizeof *e);
    gf_fnenv_opts fo = {0};
    if (o->shipped_users) {
        fo.server_config = gf_fnenv_shipped_accounts();
        fo.client_user = "admin";
        fo.client_password = "pw-ADMIN";
    }
    assert_int_equal(gf_fnenv_start_opts(&e->fn, &fo), 0);
    e->shipped_users = o->shipped_users;
    gf_simstack_opts so = {
        .url = gf_natsd_url(e->fn.natsd),
        .dir = e->fn.dir,
        .datacenters = o->datacenters,
        .fleet_extra = o->fleet_extra,
        .allocator_extra = o->allocator_extra,
        .backoff = o->backoff,
        .functions_extra = o->functions_extra,
        .heartbeat = o->heartbeat,
        .heartbeat_timeout = o->heartbeat_timeout,
        .deadline = o->deadline,
        .max_in_flight = o->max_in_flight,
        .fetch_expiry = o->fetch_expiry,
        .scale_interval = o->scale_interval,
    };
    assert_int_equal(gf_simstack_write(&so, e->fn.config_path, e->pk), 0);
    /* Every asset, as `gamefn provision` makes them. */
    char build[512], log[400];
    gf_fnenv_binary("", build, sizeof build);
    snprintf(log, sizeof log, "%s/provision.log", e->fn.dir);
    if (o->shipped_users) { /* as the operator; the functions get their own users */
        setenv("GAMEFN_NATS_USER", "admin", 1);
        setenv("GAMEFN_NATS_PASSWORD", "pw-ADMIN", 1);
    }
    assert_int_equal(gf_simstack_provision(build, e->fn.config_path, log), 0);
    unsetenv("GAMEFN_NATS_USER");
    unsetenv("GAMEFN_NATS_PASSWORD");
    assert_int_equal(gf_kv_open(e->fn.js, "tickets", &e->tickets), GF_OK);
    assert_int_equal(gf_kv_open(e->fn.js, "fleet", &e->fleet), GF_OK);
    assert_int_equal(gf_kv_open(e->fn.js, "players", &e->players), GF_OK);
    assert_int_equal(gf_kv_open(e->fn.js, "matches", &e->matches), GF_OK);
}

void fleet_env_free(fleet_env *e)
{
    kvStore_Destroy(e->tickets);
    kvStore_Destroy(e->fleet);
    kvStore_Destroy(e->players);
    kvStore_Destroy(e->matches);
    gf_fnenv_free(&e->fn);
}

void fleet_env_spawn(fleet_env *e, gf_proc *p, const char *bin, const char *name,
                     const char *instance, char *const extra_env[])
{
    assert_int_equal(gf_fnenv_spawn(&e->fn, p, bin, instance, extra_env), 0);
    if (!gf_fnenv_wait_ping(&e->fn, name, instance, 15000)) {
        gf_proc_dump_log(p, 30);
        fail_msg("%s %s did not start", name, instance);
    }
}

/* One request; the reply classified (gf_wire_reply_check) and, on success, decoded as
 * reply_desc into *out when both are given. */
static int call(fleet_env *e, const char *subject, const void *data, size_t len,
                const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **out, int *code,
                char *field, size_t field_size)
{
    natsMsg *reply = NULL;
    if (out)
        *out = NULL;
    if (natsConnection_Request(&reply, e->fn.nc, subject, data, (int)len, 5000) != NATS_OK)
        return GF_ERR_TIMEOUT;
    const char *hc = NULL, *ht = NULL;
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR_CODE, &hc);
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR, &ht);
    gf_wire_error w;
    const uint8_t *body = (const uint8_t *)natsMsg_GetData(reply);
    size_t body_len = (size_t)natsMsg_GetDataLength(reply);
    gf_err err = gf_wire_reply_check(hc, ht, body, body_len, &w);
    if (code)
        *code = err == GF_OK ? 0 : w.code;
    if (field)
        snprintf(field, field_size, "%s", err == GF_OK ? "" : w.field);
    if (err == GF_OK && out && reply_desc) {
        *out = protobuf_c_message_unpack(reply_desc, NULL, body_len, body);
        assert_non_null(*out);
    }
    natsMsg_Destroy(reply);
    return err;
}

int fleet_call_raw(fleet_env *e, const char *subject, const void *data, size_t len, int *code,
                   char *field, size_t field_size)
{
    return call(e, subject, data, len, NULL, NULL, code, field, field_size);
}

int fleet_call(fleet_env *e, const char *subject, const ProtobufCMessage *req,
               const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **out, int *code,
               char *field, size_t field_size)
{
    uint8_t buf[65536];
    size_t len = protobuf_c_message_pack(req, buf);
    int err = call(e, subject, buf, len, reply_desc, out, code, field, field_size);
    assert_int_not_equal(err, GF_ERR_TIMEOUT);
    return err;
}

void fleet_register(fleet_env *e, const char *dc, const char *id)
{
    fleet_register_at(e, dc, id, "127.0.0.1");
}

void fleet_register_at(fleet_env *e, const char *dc, const char *id, const char *address)
{
    Gamefn__V1__RegisterServerRequest r = GAMEFN__V1__REGISTER_SERVER_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = (char *)(uintptr_t)dc;
    r.address = (char *)(uintptr_t)address;
    r.port = 7777;
    r.capacity = 10;
    ProtobufCMessage *out = NULL;
    assert_int_equal(fleet_call(e, GF_WIRE_SUBJ_FLEET_REGISTER, &r.base,
                                &gamefn__v1__register_server_reply__descriptor, &out, NULL, NULL,
                                0),
                     GF_OK);
    protobuf_c_message_free_unpacked(out, NULL);
}

int fleet_heartbeat(fleet_env *e, const char *dc, const char *id, const char *finished)
{
    Gamefn__V1__HeartbeatRequest r = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)id;
    r.datacenter = (char *)(uintptr_t)dc;
    if (finished)
        r.finished_match_id = (char *)(uintptr_t)finished;
    return fleet_call(e, GF_WIRE_SUBJ_FLEET_HEARTBEAT, &r.base, NULL, NULL, NULL, NULL, 0);
}

Gamefn__V1__ServerRecord *fleet_record(fleet_env *e, const char *dc, const char *id)
{
    char key[160];
    kvEntry *en = NULL;
    snprintf(key, sizeof key, "%s.%s", dc, id);
    if (gf_kv_get(e->fleet, key, &en) != GF_OK)
        return NULL;
    Gamefn__V1__ServerRecord *r =
        gamefn__v1__server_record__unpack(NULL, (size_t)kvEntry_ValueLen(en), kvEntry_Value(en));
    kvEntry_Destroy(en);
    assert_non_null(r);
    return r;
}

size_t fleet_count(fleet_env *e)
{
    kvKeysList l = {0};
    size_t n = 0;
    if (kvStore_Keys(&l, e->fleet, NULL) == NATS_OK)
        for (int i = 0; i < l.Count; i++)
            n += strncmp(l.Keys[i], "ids/", 4) != 0;
    kvKeysList_Destroy(&l);
    return n;
}

int fleet_allocated_to(fleet_env *e, const char *dc, int sims, const char *match)
{
    int n = 0;
    for (int k = 1; k <= sims; k++) {
        char id[32];
        snprintf(id, sizeof id, "sim-%s-%d", dc, k);
        Gamefn__V1__ServerRecord *r = fleet_record(e, dc, id);
        if (!r)
            continue; /* fewer simulated servers */
        bool taken = r->allocated_match_id && r->allocated_match_id[0];
        n += taken && (!match || strcmp(r->allocated_match_id, match) == 0);
        gamefn__v1__server_record__free_unpacked(r, NULL);
    }
    return n;
}

/* Creates the ticket `r` (now_ms set here) and its player's record. */
static void put_ticket(fleet_env *e, gf_simstack_rec *r)
{
    char player[80];
    uint8_t buf[4096];
    int64_t now = gf_clock_unix_ms();
    const char *ticket_id = r->ticket_id;
    r->now_ms = now;
    size_t len = gf_simstack_record(r, buf);
    assert_int_equal(gf_kv_create(e->tickets, ticket_id, buf, len, NULL), GF_OK);
    uint8_t *pb = NULL;
    size_t plen = 0;
    snprintf(player, sizeof player, "p-%s", ticket_id);
    assert_int_equal(gf_players_pack(player, ticket_id, now, &pb, &plen), GF_OK);
    assert_int_equal(gf_kv_create(e->players, player, pb, plen, NULL), GF_OK);
    free(pb);
}

void fleet_claim_ticket(fleet_env *e, const char *ticket_id, const char *match_id,
                        int64_t queued_ms)
{
    gf_simstack_rec r = {.ticket_id = ticket_id,
                         .rating = 1500,
                         .state = GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED,
                         .match_id = match_id,
                         .queued_ms = queued_ms};
    put_ticket(e, &r);
}

void fleet_queue_ticket(fleet_env *e, const char *ticket_id, int64_t queued_ms)
{
    gf_simstack_rec r = {.ticket_id = ticket_id,
                         .rating = 1500,
                         .state = GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED,
                         .queued_ms = queued_ms};
    put_ticket(e, &r);
}

void fleet_publish_match(fleet_env *e, const char *match_id, char *const *tickets, size_t n,
                         const char *datacenters)
{
    fleet_publish_match_at(e, match_id, tickets, n, datacenters, gf_clock_unix_ms());
}

void fleet_publish_match_at(fleet_env *e, const char *match_id, char *const *tickets, size_t n,
                            const char *datacenters, int64_t created_ms)
{
    fleet_publish_match_as(e, match_id, match_id, tickets, n, datacenters, created_ms);
}

void fleet_publish_match_as(fleet_env *e, const char *match_id, const char *msg_id,
                            char *const *tickets, size_t n, const char *datacenters,
                            int64_t created_ms)
{
    uint8_t buf[8192];
    assert_true(n <= 16);
    size_t len = gf_simstack_match(match_id, tickets, n, datacenters, created_ms, buf);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = msg_id;
    assert_int_equal(
        js_Publish(NULL, e->fn.js, GF_WIRE_SUBJ_MATCH_FOUND ".duel", buf, (int)len, &po, NULL),
        NATS_OK);
}

Gamefn__V1__TicketRecord *fleet_ticket(fleet_env *e, const char *ticket_id)
{
    kvEntry *en = NULL;
    if (gf_kv_get(e->tickets, ticket_id, &en) != GF_OK)
        return NULL;
    Gamefn__V1__TicketRecord *t =
        gamefn__v1__ticket_record__unpack(NULL, (size_t)kvEntry_ValueLen(en), kvEntry_Value(en));
    kvEntry_Destroy(en);
    return t;
}

Gamefn__V1__TicketRecord *fleet_wait_ticket(fleet_env *e, const char *ticket_id, int state,
                                            int timeout_ms)
{
    for (int waited = 0;; waited += 50) {
        Gamefn__V1__TicketRecord *t = fleet_ticket(e, ticket_id);
        if (t && (int)t->state == state)
            return t;
        if (waited >= timeout_ms)
            fail_msg("ticket %s in state %d, not %d after %d ms", ticket_id, t ? (int)t->state : -1,
                     state, timeout_ms);
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
        gf_clock_sleep_ms(50);
    }
}

int fleet_outcome_state(fleet_env *e, const char *match_id)
{
    kvEntry *en = NULL;
    if (gf_kv_get(e->matches, match_id, &en) != GF_OK)
        return 0;
    Gamefn__V1__MatchOutcome *o = NULL;
    assert_int_equal(
        gf_outcome_decode(kvEntry_Value(en), (size_t)kvEntry_ValueLen(en), match_id, &o, NULL),
        GF_OK);
    int state = (int)o->state;
    gf_outcome_free(o);
    kvEntry_Destroy(en);
    return state;
}

bool fleet_player_exists(fleet_env *e, const char *player_id)
{
    kvEntry *en = NULL;
    bool found = gf_kv_get(e->players, player_id, &en) == GF_OK;
    kvEntry_Destroy(en);
    return found;
}

size_t fleet_log_count(const gf_proc *p, const char *text)
{
    int n = gf_fnenv_log_count(p, text);
    return n > 0 ? (size_t)n : 0;
}

bool fleet_log_has(const gf_proc *p, const char *text, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 50) {
        if (fleet_log_count(p, text) > 0)
            return true;
        gf_clock_sleep_ms(50);
    }
    return false;
}

void fleet_wait_matches_drained(fleet_env *e, int timeout_ms)
{
    for (int waited = 0;; waited += 100) {
        jsStreamInfo *si = NULL;
        assert_int_equal(js_GetStreamInfo(&si, e->fn.js, "MATCHES", NULL, NULL), NATS_OK);
        uint64_t msgs = si->State.Msgs;
        jsStreamInfo_Destroy(si);
        if (msgs == 0)
            return;
        if (waited >= timeout_ms)
            fail_msg("MATCHES still holds %llu messages after %d ms", (unsigned long long)msgs,
                     timeout_ms);
        gf_clock_sleep_ms(100);
    }
}

static uint64_t kv_revision(kvStore *kv, const char *key)
{
    kvEntry *en = NULL;
    if (gf_kv_get(kv, key, &en) != GF_OK)
        return 0;
    uint64_t rev = kvEntry_Revision(en);
    kvEntry_Destroy(en);
    return rev;
}

uint64_t fleet_ticket_revision(fleet_env *e, const char *ticket_id)
{
    return kv_revision(e->tickets, ticket_id);
}

uint64_t fleet_key_revision(fleet_env *e, const char *key)
{
    return kv_revision(e->fleet, key);
}

gf_gamesim *fleet_sim_start(fleet_env *e, const char *dc, int n, int64_t play_ms)
{
    gf_gamesim_dc dcs[] = {{.name = dc, .initial = n, .max = n}};
    gf_gamesim_opts o = {.dcs = dcs, .n_dcs = 1, .play_ms = play_ms};
    gf_gamesim *sim = NULL;
    assert_int_equal(gf_gamesim_start(e->fn.nc, &o, &sim), GF_OK);
    /* Registered once the fleet holds them. */
    for (int waited = 0; fleet_count(e) < (size_t)n; waited += 50) {
        assert_true(waited < 10000);
        gf_clock_sleep_ms(50);
    }
    return sim;
}

void fleet_service_spawn_one(fleet_env *e, gf_proc p[FLEET_SERVICE_N], size_t i)
{
    static const char *const names[FLEET_SERVICE_N] = {"fleet", "allocator", "intake", "ticker",
                                                       "matcher"};
    char bin[128], instance[32];
    snprintf(bin, sizeof bin, "functions/%s/gamefn-%s", names[i], names[i]);
    snprintf(instance, sizeof instance, "%c1", names[i][0]);
    gf_fnenv_login login; /* the shipped user of the function's name */
    gf_fnenv_shipped_login(names[i], &login);
    char *as_user[] = {login.user, login.password, NULL};
    memset(&p[i], 0, sizeof p[i]);
    fleet_env_spawn(e, &p[i], bin, names[i], instance, e->shipped_users ? as_user : NULL);
}

void fleet_duel_service_start(fleet_env *e, gf_proc p[FLEET_SERVICE_N], const char *matcher_keys,
                              size_t held)
{
    char functions[1024];
    fleet_duel_functions_with(functions, sizeof functions, matcher_keys);
    fleet_env_opts o = {.functions_extra = functions};
    fleet_env_start(e, &o);
    for (size_t i = 0; i < FLEET_SERVICE_N; i++)
        if (i != held)
            fleet_service_spawn_one(e, p, i);
}

void fleet_service_spawn(fleet_env *e, gf_proc p[FLEET_SERVICE_N])
{
    for (size_t i = 0; i < FLEET_SERVICE_N; i++)
        fleet_service_spawn_one(e, p, i);
}

void fleet_service_stop(gf_proc p[FLEET_SERVICE_N])
{
    for (size_t i = FLEET_SERVICE_N; i-- > 0;)
        assert_true(gf_fnenv_stop(&p[i], 15000));
}

void fleet_create_pair(fleet_env *e, const char *a, const char *b, char id[2][80],
                       int64_t queued[2])
{
    const char *players[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        char key[32];
        snprintf(key, sizeof key, "k-%s", players[i]);
        mm_ticket t = mm_solo(key, players[i]);
        t.pings = "eu:20,us:90";
        mm_create_new(&e->fn, &t, id[i], 80);
        if (!queued)
            continue;
        Gamefn__V1__TicketRecord *r = fleet_ticket(e, id[i]);
        assert_non_null(r);
        queued[i] = r->queued_unix_ms;
        gamefn__v1__ticket_record__free_unpacked(r, NULL);
    }
}

void fleet_both_assigned(fleet_env *e, char id[2][80], char *match, size_t size)
{
    Gamefn__V1__TicketRecord *t[2];
    for (int i = 0; i < 2; i++)
        t[i] = fleet_wait_ticket(e, id[i], GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED, 30000);
    assert_string_equal(t[0]->assignment->match_id, t[1]->assignment->match_id);
    assert_string_equal(t[0]->assignment->server_id, t[1]->assignment->server_id);
    snprintf(match, size, "%s", t[0]->assignment->match_id);
    for (int i = 0; i < 2; i++)
        gamefn__v1__ticket_record__free_unpacked(t[i], NULL);
}
