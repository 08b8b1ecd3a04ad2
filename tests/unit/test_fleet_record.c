/*
 * test_fleet_record.c — the fleet's request checks and ServerRecord transitions
 * (functions/fleet/fleet_record.h): tables of good, boundary and malformed requests,
 * and every transition of the state machine in PROTOCOL.md §8.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_config.h"
#include "fleet_record.h"

static fleet_dc_config dcs[] = {{.name = "eu-west", .floor = 1, .ceiling = 10},
                                {.name = "us-east", .floor = 0, .ceiling = 5}};
static const fleet_config cfg = {.heartbeat_interval_ms = 2000,
                                 .heartbeat_timeout_ms = 10000,
                                 .datacenters = dcs,
                                 .datacenters_len = 2};

static Gamefn__V1__RegisterServerRequest good_register(void)
{
    Gamefn__V1__RegisterServerRequest r = GAMEFN__V1__REGISTER_SERVER_REQUEST__INIT;
    r.server_id = "gs-7";
    r.datacenter = "eu-west";
    r.address = "203.0.113.7";
    r.port = 7777;
    r.capacity = 10;
    r.version = "1.2.3";
    return r;
}

typedef struct reg_case {
    const char *name;
    void (*mutate)(Gamefn__V1__RegisterServerRequest *r);
    gf_err want;
    const char *field;
} reg_case;

static char long_id[66], long_addr[256], long_value[130], long_version[66];

static void m_none(Gamefn__V1__RegisterServerRequest *r)
{
    (void)r;
}
static void m_id_empty(Gamefn__V1__RegisterServerRequest *r)
{
    r->server_id = "";
}
static void m_id_long(Gamefn__V1__RegisterServerRequest *r)
{
    r->server_id = long_id;
}
static void m_id_dot(Gamefn__V1__RegisterServerRequest *r)
{
    r->server_id = "gs.7";
}
static void m_id_64(Gamefn__V1__RegisterServerRequest *r)
{
    long_id[64] = '\0';
    r->server_id = long_id;
}
static void m_dc_unknown(Gamefn__V1__RegisterServerRequest *r)
{
    r->datacenter = "mars-1";
}
static void m_dc_wild(Gamefn__V1__RegisterServerRequest *r)
{
    r->datacenter = "eu*";
}
static void m_addr_empty(Gamefn__V1__RegisterServerRequest *r)
{
    r->address = "";
}
static void m_addr_space(Gamefn__V1__RegisterServerRequest *r)
{
    r->address = "a b";
}
static void m_addr_long(Gamefn__V1__RegisterServerRequest *r)
{
    r->address = long_addr;
}
static void m_addr_host(Gamefn__V1__RegisterServerRequest *r)
{
    r->address = "gs-7.eu-west.example.com";
}
static void m_addr_v6(Gamefn__V1__RegisterServerRequest *r)
{
    r->address = "2001:db8::7";
}
static void m_addr_dash(Gamefn__V1__RegisterServerRequest *r)
{
    r->address = "-bad.example";
}
static void m_port_0(Gamefn__V1__RegisterServerRequest *r)
{
    r->port = 0;
}
static void m_port_big(Gamefn__V1__RegisterServerRequest *r)
{
    r->port = 65536;
}
static void m_port_max(Gamefn__V1__RegisterServerRequest *r)
{
    r->port = 65535;
}
static void m_cap_0(Gamefn__V1__RegisterServerRequest *r)
{
    r->capacity = 0;
}
static void m_cap_max(Gamefn__V1__RegisterServerRequest *r)
{
    r->capacity = 1024;
}
static void m_cap_absurd(Gamefn__V1__RegisterServerRequest *r)
{
    r->capacity = 4000000000u;
}
static void m_version_long(Gamefn__V1__RegisterServerRequest *r)
{
    r->version = long_version;
}
static void m_version_ctl(Gamefn__V1__RegisterServerRequest *r)
{
    r->version = "1.0\n";
}
static void m_version_utf8(Gamefn__V1__RegisterServerRequest *r)
{
    r->version = "1.0\xc3";
}

static Gamefn__V1__RegisterServerRequest__AttributesEntry attr_store[20];
static Gamefn__V1__RegisterServerRequest__AttributesEntry *attr_ptrs[20];

static void set_attrs(Gamefn__V1__RegisterServerRequest *r, size_t n)
{
    static char keys[20][8];
    for (size_t i = 0; i < n; i++) {
        Gamefn__V1__RegisterServerRequest__AttributesEntry e =
            GAMEFN__V1__REGISTER_SERVER_REQUEST__ATTRIBUTES_ENTRY__INIT;
        snprintf(keys[i], sizeof keys[i], "k%zu", i);
        e.key = keys[i];
        e.value = "v";
        attr_store[i] = e;
        attr_ptrs[i] = &attr_store[i];
    }
    r->attributes = attr_ptrs;
    r->n_attributes = n;
}
static void m_attrs_16(Gamefn__V1__RegisterServerRequest *r)
{
    set_attrs(r, 16);
}
static void m_attrs_17(Gamefn__V1__RegisterServerRequest *r)
{
    set_attrs(r, 17);
}
static void m_attrs_dup(Gamefn__V1__RegisterServerRequest *r)
{
    set_attrs(r, 2);
    attr_store[1].key = "k0";
}
static void m_attrs_long(Gamefn__V1__RegisterServerRequest *r)
{
    set_attrs(r, 1);
    attr_store[0].value = long_value;
}
static void m_attrs_badkey(Gamefn__V1__RegisterServerRequest *r)
{
    set_attrs(r, 1);
    attr_store[0].key = "a.b";
}

static void register_validation_table(void **state)
{
    (void)state;
    memset(long_id, 'a', 65);
    memset(long_addr, 'a', 254);
    memset(long_value, 'v', 129);
    memset(long_version, 'v', 65);
    const reg_case cases[] = {
        {"good", m_none, GF_OK, ""},
        {"id empty", m_id_empty, GF_ERR_INVALID, "server_id"},
        {"id 65 bytes", m_id_long, GF_ERR_INVALID, "server_id"},
        {"id with a dot", m_id_dot, GF_ERR_INVALID, "server_id"},
        {"id 64 bytes", m_id_64, GF_OK, ""},
        {"unknown datacenter", m_dc_unknown, GF_ERR_INVALID, "datacenter"},
        {"wildcard datacenter", m_dc_wild, GF_ERR_INVALID, "datacenter"},
        {"address empty", m_addr_empty, GF_ERR_INVALID, "address"},
        {"address with space", m_addr_space, GF_ERR_INVALID, "address"},
        {"address 254 bytes", m_addr_long, GF_ERR_INVALID, "address"},
        {"host name", m_addr_host, GF_OK, ""},
        {"IPv6", m_addr_v6, GF_OK, ""},
        {"label starting with -", m_addr_dash, GF_ERR_INVALID, "address"},
        {"port 0", m_port_0, GF_ERR_INVALID, "port"},
        {"port 65536", m_port_big, GF_ERR_INVALID, "port"},
        {"port 65535", m_port_max, GF_OK, ""},
        {"capacity 0", m_cap_0, GF_ERR_INVALID, "capacity"},
        {"capacity 1024", m_cap_max, GF_OK, ""},
        {"capacity 4e9", m_cap_absurd, GF_ERR_INVALID, "capacity"},
        {"version 65 bytes", m_version_long, GF_ERR_INVALID, "version"},
        {"version control char", m_version_ctl, GF_ERR_INVALID, "version"},
        {"version bad UTF-8", m_version_utf8, GF_ERR_INVALID, "version"},
        {"16 attributes", m_attrs_16, GF_OK, ""},
        {"17 attributes", m_attrs_17, GF_ERR_INVALID, "attributes"},
        {"duplicate attribute", m_attrs_dup, GF_ERR_INVALID, "attributes[k0]"},
        {"attribute value 129 bytes", m_attrs_long, GF_ERR_INVALID, "attributes[k0]"},
        {"attribute key with a dot", m_attrs_badkey, GF_ERR_INVALID, "attributes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        Gamefn__V1__RegisterServerRequest r = good_register();
        memset(long_id, 'a', 65);
        long_id[65] = '\0';
        cases[i].mutate(&r);
        fleet_problem p = {0};
        gf_err err = fleet_check_register(&r, &cfg, &p);
        if (err != cases[i].want || strcmp(p.field, cases[i].field) != 0)
            fail_msg("%s: got %s field '%s' (%s)", cases[i].name, gf_err_str(err), p.field, p.text);
        if (err != GF_OK)
            assert_true(strncmp(p.text, p.field, strlen(p.field)) == 0); /* "<field>: ..." */
    }
}

static void heartbeat_and_deregister_checks(void **state)
{
    (void)state;
    fleet_problem p;
    Gamefn__V1__HeartbeatRequest h = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    h.server_id = "gs-7";
    h.datacenter = "eu-west";
    assert_int_equal(fleet_check_heartbeat(&h, &cfg, &p), GF_OK);
    h.finished_match_id = "m.1";
    assert_int_equal(fleet_check_heartbeat(&h, &cfg, &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "finished_match_id");
    h.finished_match_id = "";
    h.players = 1025;
    assert_int_equal(fleet_check_heartbeat(&h, &cfg, &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "players");
    h.players = 0;
    h.datacenter = "";
    assert_int_equal(fleet_check_heartbeat(&h, &cfg, &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "datacenter");

    Gamefn__V1__DeregisterServerRequest d = GAMEFN__V1__DEREGISTER_SERVER_REQUEST__INIT;
    d.server_id = "gs-7";
    d.datacenter = "us-east";
    assert_int_equal(fleet_check_deregister(&d, &cfg, &p), GF_OK);
    d.reason = 99;
    assert_int_equal(fleet_check_deregister(&d, &cfg, &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "reason");
}

/* Packs and unpacks a record, as the KV would store it. */
static Gamefn__V1__ServerRecord *round_trip(const Gamefn__V1__ServerRecord *r)
{
    uint8_t buf[65536];
    size_t len = gamefn__v1__server_record__pack(r, buf);
    Gamefn__V1__ServerRecord *out = gamefn__v1__server_record__unpack(NULL, len, buf);
    assert_non_null(out);
    fleet_problem p;
    if (fleet_check_record(out, &p) != GF_OK)
        fail_msg("record does not check: %s", p.text);
    return out;
}

static void register_then_allocate_then_finish(void **state)
{
    (void)state;
    fleet_next next;
    fleet_problem p;
    Gamefn__V1__RegisterServerRequest req = good_register();
    set_attrs(&req, 2);
    fleet_apply_register(NULL, &req, 1000, 10000, &next);
    Gamefn__V1__ServerRecord *r = round_trip(&next.rec);
    assert_int_equal(r->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    assert_int_equal(r->registered_unix_ms, 1000);
    assert_int_equal(r->free_since_unix_ms, 1000);
    assert_int_equal(r->stale_unix_ms, 11000);
    assert_int_equal(r->n_attributes, 2);
    assert_true(fleet_allocatable(r, 10, 10999));
    assert_false(fleet_allocatable(r, 11, 10999)); /* capacity */
    assert_false(fleet_allocatable(r, 1, 11000));  /* stale from stale_unix_ms on */

    char *players[] = {"p1", "p2"}, *tickets[] = {"t1"};
    fleet_apply_allocate(r, "m-1", players, 2, tickets, 1, 2000, &next);
    Gamefn__V1__ServerRecord *a = round_trip(&next.rec);
    assert_int_equal(a->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED);
    assert_string_equal(a->allocated_match_id, "m-1");
    assert_int_equal(a->n_expected_player_ids, 2);
    assert_int_equal(a->n_allocated_ticket_ids, 1);
    assert_int_equal(a->free_since_unix_ms, 0);
    assert_false(fleet_allocatable(a, 1, 2000));

    /* Re-register keeps the running allocation. */
    req.address = "198.51.100.1";
    fleet_apply_register(a, &req, 3000, 10000, &next);
    Gamefn__V1__ServerRecord *rr = round_trip(&next.rec);
    assert_int_equal(rr->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED);
    assert_string_equal(rr->allocated_match_id, "m-1");
    assert_string_equal(rr->address, "198.51.100.1");
    assert_int_equal(rr->registered_unix_ms, 1000);

    /* A heartbeat for another match changes nothing but the heartbeat (whatever is
     * known of that match). */
    fleet_game_over g = {.decided = "m-0", .released = (const char *)1};
    Gamefn__V1__HeartbeatRequest h = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    h.server_id = "gs-7";
    h.datacenter = "eu-west";
    h.players = 2;
    h.finished_match_id = "m-0";
    assert_int_equal(fleet_apply_heartbeat(rr, &h, 4000, 10000, &next, &g, &p), GF_OK);
    assert_null(g.released);
    assert_false(g.undecided);
    Gamefn__V1__ServerRecord *hb = round_trip(&next.rec);
    assert_string_equal(hb->allocated_match_id, "m-1");
    assert_int_equal(hb->players, 2);
    assert_int_equal(hb->stale_unix_ms, 14000);

    /* Game over for the running match while its commit record is not known (none, or
     * another match's): the allocation stays, the caller must decide the match first. */
    h.finished_match_id = "m-1";
    h.players = 0;
    for (int i = 0; i < 2; i++) {
        g.decided = i ? "m-0" : NULL;
        assert_int_equal(fleet_apply_heartbeat(hb, &h, 4500, 10000, &next, &g, &p), GF_OK);
        assert_true(g.undecided);
        assert_null(g.released);
        assert_int_equal(next.rec.state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED);
        assert_string_equal(next.rec.allocated_match_id, "m-1");
        assert_int_equal(next.rec.stale_unix_ms, 14500);
    }

    /* Game over once the match is decided: FREE again, the match released. */
    g.decided = "m-1";
    assert_int_equal(fleet_apply_heartbeat(hb, &h, 5000, 10000, &next, &g, &p), GF_OK);
    assert_false(g.undecided);
    assert_non_null(g.released);
    assert_string_equal(g.released, "m-1");
    Gamefn__V1__ServerRecord *fr = round_trip(&next.rec);
    assert_int_equal(fr->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    assert_string_equal(fr->allocated_match_id, "");
    assert_int_equal(fr->n_expected_player_ids, 0);
    assert_int_equal(fr->free_since_unix_ms, 5000);

    /* Players above the capacity are refused. */
    h.finished_match_id = "";
    h.players = 11;
    assert_int_equal(fleet_apply_heartbeat(fr, &h, 6000, 10000, &next, &g, &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "players");

    gamefn__v1__server_record__free_unpacked(r, NULL);
    gamefn__v1__server_record__free_unpacked(a, NULL);
    gamefn__v1__server_record__free_unpacked(rr, NULL);
    gamefn__v1__server_record__free_unpacked(hb, NULL);
    gamefn__v1__server_record__free_unpacked(fr, NULL);
}

static void draining_and_removal(void **state)
{
    (void)state;
    fleet_next next;
    fleet_problem p;
    const char *released;
    Gamefn__V1__RegisterServerRequest req = good_register();
    fleet_apply_register(NULL, &req, 1000, 10000, &next);
    Gamefn__V1__ServerRecord *r = round_trip(&next.rec);
    char *players[] = {"p1"}, *tickets[] = {"t1"};
    fleet_apply_allocate(r, "m-1", players, 1, tickets, 1, 2000, &next);
    Gamefn__V1__ServerRecord *a = round_trip(&next.rec);

    /* HIBERNATE is refused while a match runs; SHUTDOWN releases it. */
    assert_int_equal(fleet_check_removal(a,
                                         GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_HIBERNATE,
                                         &released, &p),
                     GF_ERR_CONFLICT);
    assert_int_equal(p.code, 7); /* FAILED_PRECONDITION */
    assert_int_equal(fleet_check_removal(a,
                                         GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_SHUTDOWN,
                                         &released, &p),
                     GF_OK);
    assert_string_equal(released, "m-1");
    assert_int_equal(fleet_check_removal(r,
                                         GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_HIBERNATE,
                                         &released, &p),
                     GF_OK);
    assert_null(released);

    /* Draining keeps the match; finishing it leaves the server DRAINING, not FREE. */
    Gamefn__V1__HeartbeatRequest h = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    h.server_id = "gs-7";
    h.datacenter = "eu-west";
    h.draining = true;
    fleet_game_over g = {.decided = "m-1"};
    assert_int_equal(fleet_apply_heartbeat(a, &h, 3000, 10000, &next, &g, &p), GF_OK);
    Gamefn__V1__ServerRecord *d = round_trip(&next.rec);
    assert_int_equal(d->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING);
    assert_string_equal(d->allocated_match_id, "m-1");
    h.draining = false; /* one-way: a later heartbeat without it stays DRAINING */
    h.finished_match_id = "m-1";
    assert_int_equal(fleet_apply_heartbeat(d, &h, 4000, 10000, &next, &g, &p), GF_OK);
    Gamefn__V1__ServerRecord *df = round_trip(&next.rec);
    assert_int_equal(df->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING);
    assert_string_equal(df->allocated_match_id, "");
    assert_false(fleet_allocatable(df, 1, 4000));
    /* Re-registering is how it comes back. */
    fleet_apply_register(df, &req, 5000, 10000, &next);
    Gamefn__V1__ServerRecord *back = round_trip(&next.rec);
    assert_int_equal(back->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    assert_true(fleet_allocatable(back, 1, 5000));

    /* The sweep's release of an aborted allocation. */
    fleet_apply_release(a, 6000, &next);
    Gamefn__V1__ServerRecord *rel = round_trip(&next.rec);
    assert_int_equal(rel->state, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    assert_int_equal(rel->free_since_unix_ms, 6000);
    assert_int_equal(rel->last_heartbeat_unix_ms, a->last_heartbeat_unix_ms);

    Gamefn__V1__ServerRecord *all[] = {r, a, d, df, back, rel};
    for (size_t i = 0; i < 6; i++)
        gamefn__v1__server_record__free_unpacked(all[i], NULL);
}

static void stored_record_checks(void **state)
{
    (void)state;
    fleet_problem p;
    Gamefn__V1__ServerRecord r = GAMEFN__V1__SERVER_RECORD__INIT;
    r.server_id = "gs-1";
    r.datacenter = "eu-west";
    assert_int_equal(fleet_check_record(&r, &p), GF_ERR_INVALID); /* state UNSPECIFIED */
    r.state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED;
    assert_int_equal(fleet_check_record(&r, &p), GF_ERR_INVALID); /* no match */
    r.allocated_match_id = "m-1";
    assert_int_equal(fleet_check_record(&r, &p), GF_OK);
    r.state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE;
    assert_int_equal(fleet_check_record(&r, &p), GF_ERR_INVALID); /* FREE with a match */
    r.state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING;
    assert_int_equal(fleet_check_record(&r, &p), GF_OK);
    r.allocated_match_id = "";
    assert_int_equal(fleet_check_record(&r, &p), GF_OK);
    r.state = 9;
    assert_int_equal(fleet_check_record(&r, &p), GF_ERR_INVALID);

    char key[FLEET_KEY_MAX];
    assert_true(fleet_key("eu-west", "gs-1", key));
    assert_string_equal(key, "eu-west.gs-1");
    assert_false(fleet_key("eu.west", "gs-1", key));
    assert_false(fleet_key("eu-west", "", key));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(register_validation_table),
        cmocka_unit_test(heartbeat_and_deregister_checks),
        cmocka_unit_test(register_then_allocate_then_finish),
        cmocka_unit_test(draining_and_removal),
        cmocka_unit_test(stored_record_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
