/*
 * test_wire.c — gamefn/wire_error.h, partition.h and limits.h: error replies,
 * ErrorCode mapping, the event partition, and limits that fit each other.
 *
 * Golden values: the Error body was produced by protobufjs 8.8.1
 * (schemas/compat/vectors.mjs); the partitions were read back from a real
 * nats-server 2.9.10 with the mapping of docs/PROTOCOL.md. Join tokens are tested in
 * test_join_sign.c and test_join_token.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "gamefn/limits.h"
#include "gamefn/partition.h"
#include "gamefn/utf8.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "gamefn/wire_error.h"
#include "test_hex.h"

enum {
    C_INVALID = GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT,
    C_NOT_FOUND = GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND,
    C_CONFLICT = GAMEFN__V1__ERROR_CODE__ERROR_CODE_CONFLICT,
    C_UNAVAILABLE = GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNAVAILABLE,
    C_TIMEOUT = GAMEFN__V1__ERROR_CODE__ERROR_CODE_TIMEOUT,
    C_INTERNAL = GAMEFN__V1__ERROR_CODE__ERROR_CODE_INTERNAL,
    C_PRECONDITION = GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION,
    C_EXHAUSTED = GAMEFN__V1__ERROR_CODE__ERROR_CODE_RESOURCE_EXHAUSTED,
};

static void test_code_mapping(void **state)
{
    (void)state;
    static const struct {
        gf_err err;
        int code;
        gf_err back;
    } rows[] = {
        {GF_ERR_INVALID, C_INVALID, GF_ERR_INVALID},
        {GF_ERR_NOT_FOUND, C_NOT_FOUND, GF_ERR_NOT_FOUND},
        {GF_ERR_CONFLICT, C_CONFLICT, GF_ERR_CONFLICT},
        {GF_ERR_UNAVAILABLE, C_UNAVAILABLE, GF_ERR_UNAVAILABLE},
        {GF_ERR_RETRY, C_UNAVAILABLE, GF_ERR_UNAVAILABLE},
        {GF_ERR_NATS, C_UNAVAILABLE, GF_ERR_UNAVAILABLE},
        {GF_ERR_TIMEOUT, C_TIMEOUT, GF_ERR_TIMEOUT},
        {GF_ERR_PERMANENT, C_INVALID, GF_ERR_INVALID},
        {GF_ERR_NOMEM, C_INTERNAL, GF_ERR_PERMANENT},
        {GF_ERR_IO, C_INTERNAL, GF_ERR_PERMANENT},
        {GF_ERR_CONFIG, C_INTERNAL, GF_ERR_PERMANENT},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        assert_int_equal(gf_wire_code_from_err(rows[i].err), rows[i].code);
        assert_int_equal(gf_wire_err_from_code(rows[i].code), rows[i].back);
    }
    assert_int_equal(gf_wire_code_from_err(GF_OK), 0);
    assert_int_equal(gf_wire_code_from_err((gf_err)999), C_INTERNAL);
    assert_int_equal(gf_wire_err_from_code(C_EXHAUSTED), GF_ERR_UNAVAILABLE);
    assert_int_equal(gf_wire_err_from_code(C_PRECONDITION), GF_ERR_PERMANENT);
    assert_int_equal(gf_wire_err_from_code(0), GF_ERR_PERMANENT);
    assert_int_equal(gf_wire_err_from_code(12345), GF_ERR_PERMANENT);

    /* Every ErrorCode of error.proto has its name here, and nothing else does. */
    const ProtobufCEnumDescriptor *e = &gamefn__v1__error_code__descriptor;
    for (unsigned i = 0; i < e->n_values; i++) {
        const char *want = e->values[i].name + strlen("ERROR_CODE_");
        assert_string_equal(gf_wire_code_name(e->values[i].value), want);
    }
    assert_string_equal(gf_wire_code_name((int)e->n_values), "UNKNOWN");
    assert_string_equal(gf_wire_code_name(-1), "UNKNOWN");
}

static Gamefn__V1__Error *decode_body(const gf_wire_error *e)
{
    Gamefn__V1__Error *m = gamefn__v1__error__unpack(NULL, e->body_len, e->body);
    assert_non_null(m);
    return m;
}

static void test_error_build(void **state)
{
    (void)state;
    gf_wire_error e;
    assert_int_equal(
        gf_wire_error_build(&e, C_NOT_FOUND, "ticket_id", 0, "ticket %s: %d", "t-9", 404), GF_OK);
    assert_string_equal(e.code_header, "2");
    assert_string_equal(e.message, "ticket t-9: 404");
    Gamefn__V1__Error *m = decode_body(&e);
    assert_int_equal(m->code, C_NOT_FOUND);
    assert_string_equal(m->message, "ticket t-9: 404");
    assert_string_equal(m->field, "ticket_id");
    assert_int_equal(m->retry_after_ms, 0);
    gamefn__v1__error__free_unpacked(m, NULL);
    gf_wire_error_fini(&e);
    assert_null(e.body);

    /* Header-safe and valid UTF-8 whatever the handler wrote. */
    assert_int_equal(
        gf_wire_error_build(&e, C_INVALID, "a\nb", 250, "%s", "line1\r\nline2\t\xff\xC3(\x7f end"),
        GF_OK);
    assert_string_equal(e.message, "line1  line2 ?"
                                   "?(  end"); /* split: no trigraph */
    assert_string_equal(e.field, "a b");
    assert_int_equal(e.retry_after_ms, 250);
    m = decode_body(&e);
    assert_string_equal(m->message, e.message);
    assert_int_equal(m->retry_after_ms, 250);
    gamefn__v1__error__free_unpacked(m, NULL);
    gf_wire_error_fini(&e);

    /* Long text is cut to the limit on a character boundary. */
    char longtext[1200] = "x";
    for (size_t i = 1; i + 2 < sizeof longtext; i += 2)
        memcpy(longtext + i, "\xC3\xA9", 2);
    longtext[sizeof longtext - 1] = '\0';
    assert_int_equal(gf_wire_error_build(&e, C_INVALID, NULL, 0, "%s", longtext), GF_OK);
    size_t n = strlen(e.message);
    assert_true(n <= GF_WIRE_TEXT_MAX && n >= GF_WIRE_TEXT_MAX - 1);
    assert_true(gf_utf8_valid(e.message, n));
    assert_string_equal(e.field, "");
    gf_wire_error_fini(&e);

    /* Not an error code: refused, nothing allocated. */
    assert_int_equal(gf_wire_error_build(&e, 0, NULL, 0, "x"), GF_ERR_INVALID);
    assert_null(e.body);
    assert_int_equal(gf_wire_error_build(&e, 99, NULL, 0, "x"), GF_ERR_INVALID);
    assert_null(e.body);
    gf_wire_error_fini(&e);
    gf_wire_error_fini(NULL);
}

/* protobufjs wrote the same Error: the bytes must be identical. */
static void test_error_golden(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *golden = hex("0801121d6d656d626572735b315d2e726174696e673a206e6f742066696e69746"
                          "51a116d656d626572735b315d2e726174696e6720fa01",
                          &len);
    gf_wire_error e;
    assert_int_equal(gf_wire_error_build(&e, C_INVALID, "members[1].rating", 250,
                                         "members[1].rating: not finite"),
                     GF_OK);
    assert_int_equal(e.body_len, len);
    assert_memory_equal(e.body, golden, len);
    gf_wire_error_fini(&e);
    free(golden);
}

static void test_error_from_err(void **state)
{
    (void)state;
    gf_wire_error e;
    assert_int_equal(gf_wire_error_from_err(&e, GF_ERR_CONFLICT, NULL, "claim lost"), GF_OK);
    assert_int_equal(e.code, C_CONFLICT);
    assert_string_equal(e.message, "claim lost"); /* the one format: no gf_err name */
    gf_wire_error_fini(&e);
    assert_int_equal(gf_wire_error_from_err(&e, GF_ERR_TIMEOUT, NULL, NULL), GF_OK);
    assert_string_equal(e.message, "timeout");
    gf_wire_error_fini(&e);
    /* With a field: "<field>: <what>", never the field twice. */
    assert_int_equal(gf_wire_error_from_err(&e, GF_ERR_INVALID, "queue", "unknown queue x"), GF_OK);
    assert_string_equal(e.message, "queue: unknown queue x");
    assert_string_equal(e.field, "queue");
    gf_wire_error_fini(&e);
    assert_int_equal(gf_wire_error_from_err(&e, GF_ERR_INVALID, "queue", "queue: unknown"), GF_OK);
    assert_string_equal(e.message, "queue: unknown");
    gf_wire_error_fini(&e);
    assert_int_equal(gf_wire_error_from_err(&e, GF_OK, NULL, "x"), GF_ERR_INVALID);
    assert_null(e.body);
}

static void test_reply_check(void **state)
{
    (void)state;
    gf_wire_error out;
    /* success: no headers, whatever the body */
    assert_int_equal(gf_wire_reply_check(NULL, NULL, (const uint8_t *)"\x0a\x01x", 3, &out), GF_OK);
    assert_int_equal(out.code, 0);

    /* a full error reply, as a responder builds it */
    gf_wire_error sent;
    assert_int_equal(gf_wire_error_build(&sent, C_EXHAUSTED, "queue", 1500, "queue full"), GF_OK);
    assert_int_equal(
        gf_wire_reply_check(sent.code_header, sent.message, sent.body, sent.body_len, &out),
        GF_ERR_UNAVAILABLE);
    assert_int_equal(out.code, C_EXHAUSTED);
    assert_string_equal(out.message, "queue full");
    assert_string_equal(out.field, "queue");
    assert_int_equal(out.retry_after_ms, 1500);
    assert_null(out.body);

    /* the body wins over the headers; a junk body falls back to them */
    assert_int_equal(gf_wire_reply_check("4", "other", sent.body, sent.body_len, &out),
                     GF_ERR_UNAVAILABLE);
    assert_int_equal(out.code, C_EXHAUSTED);
    assert_int_equal(gf_wire_reply_check("3", "lost\r\nrace", (const uint8_t *)"\x08\x80", 2, &out),
                     GF_ERR_CONFLICT);
    assert_int_equal(out.code, C_CONFLICT);
    assert_string_equal(out.message, "lost  race");
    assert_string_equal(out.code_header, "3");
    gf_wire_error_fini(&sent);

    /* headers only, or a broken code: still an error */
    static const char *const broken[] = {NULL, "", "abc", "0", "-4", "4x", "99999999999"};
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        assert_int_equal(gf_wire_reply_check(broken[i], "boom", NULL, 0, &out), GF_ERR_PERMANENT);
        assert_int_equal(out.code, C_INTERNAL);
        assert_string_equal(out.message, "boom");
    }
    assert_int_equal(gf_wire_reply_check("5", NULL, NULL, 0, &out), GF_ERR_TIMEOUT);
    assert_int_equal(gf_wire_reply_check("77", NULL, NULL, 0, &out), GF_ERR_PERMANENT);
    assert_int_equal(out.code, 77); /* a newer server's code is kept for the caller */
}

static void test_partition(void **state)
{
    (void)state;
    /* Published FNV-1a 32-bit test vectors. */
    assert_int_equal(gf_partition_fnv1a32("", 0), 0x811c9dc5u);
    assert_int_equal(gf_partition_fnv1a32("a", 1), 0xe40c292cu);
    assert_int_equal(gf_partition_fnv1a32("foobar", 6), 0xbf9cf968u);
    /* Read back from nats-server 2.9.10 with {{partition(16,1)}} (docs/PROTOCOL.md). */
    static const struct {
        const char *player;
        uint32_t hash, partition;
    } rows[] = {
        {"p-alice", 0x61e52dee, 14},
        {"p-bob", 0xc71f9aa1, 1},
        {"player-1", 0xd56e9712, 2},
        {"player-2", 0xd46e957f, 15},
        {"42", 0x87e38583, 3},
        {"0", 0x350ca8af, 15},
        {"Z", 0xdf0c214d, 13},
        {"7f1c0a52-3f0e-4b8e-9a51-0c6f5d2e8b11", 0x29d8a2da, 10},
        {"steam_76561198000000000", 0xf126f0cb, 11},
        {"a_very-long_player-id_0123456789_abcdefghijklmnopqrstuvwxyzABCDE", 0x0261d223, 3},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        assert_int_equal(gf_partition_fnv1a32(rows[i].player, strlen(rows[i].player)),
                         rows[i].hash);
        assert_int_equal(gf_partition_of(rows[i].player, GF_WIRE_EVENT_PARTITIONS),
                         rows[i].partition);
    }
    assert_int_equal(gf_partition_of("p-alice", 0), 0);
    assert_int_equal(gf_partition_of(NULL, 16), 0);
    assert_int_equal(gf_partition_of("p-alice", 1), 0);
}

static char *repeat(char c, size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* The documented limits fit each other: the largest valid claims fit a token, the
 * largest valid ticket request fits the request limit. */
static void test_limits_consistent(void **state)
{
    (void)state;
    char *id = repeat('i', GF_WIRE_ID_MAX), *name = repeat('n', GF_WIRE_NAME_MAX);
    char *addr = repeat('a', GF_WIRE_ADDRESS_MAX), *value = repeat('v', GF_WIRE_ATTR_VALUE_MAX);
    uint8_t nonce[GF_WIRE_JOIN_NONCE_LEN] = {0};

    Gamefn__V1__JoinTokenClaims c = GAMEFN__V1__JOIN_TOKEN_CLAIMS__INIT;
    c.version = 1;
    c.key_id = name;
    c.match_id = c.ticket_id = c.player_id = c.server_id = id;
    c.datacenter = name;
    c.address = addr;
    c.port = 65535;
    c.team = GF_WIRE_TEAMS_MAX - 1;
    c.issued_unix_ms = c.expires_unix_ms = INT64_MAX;
    c.nonce.data = nonce;
    c.nonce.len = sizeof nonce;
    assert_true(gamefn__v1__join_token_claims__get_packed_size(&c) <= GF_WIRE_JOIN_CLAIMS_MAX);

    Gamefn__V1__PartyMember member = GAMEFN__V1__PARTY_MEMBER__INIT;
    member.player_id = id;
    member.rating = -GF_WIRE_RATING_ABS_MAX;
    member.sigma = GF_WIRE_RATING_ABS_MAX;
    Gamefn__V1__DatacenterPing ping = GAMEFN__V1__DATACENTER_PING__INIT;
    ping.datacenter = name;
    ping.ping_ms = GF_WIRE_PING_MS_MAX;
    Gamefn__V1__CreateTicketRequest__AttributesEntry attr =
        GAMEFN__V1__CREATE_TICKET_REQUEST__ATTRIBUTES_ENTRY__INIT;
    attr.key = name;
    attr.value = value;
    Gamefn__V1__PartyMember *members[GF_WIRE_PARTY_MAX];
    Gamefn__V1__DatacenterPing *pings[GF_WIRE_PINGS_MAX];
    Gamefn__V1__CreateTicketRequest__AttributesEntry *attrs[GF_WIRE_ATTRS_MAX];
    for (size_t i = 0; i < GF_WIRE_PARTY_MAX; i++)
        members[i] = &member;
    for (size_t i = 0; i < GF_WIRE_PINGS_MAX; i++)
        pings[i] = &ping;
    for (size_t i = 0; i < GF_WIRE_ATTRS_MAX; i++)
        attrs[i] = &attr;
    Gamefn__V1__CreateTicketRequest r = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    r.idempotency_key = id;
    r.queue = r.region = name;
    r.n_members = GF_WIRE_PARTY_MAX;
    r.members = members;
    r.n_pings = GF_WIRE_PINGS_MAX;
    r.pings = pings;
    r.n_attributes = GF_WIRE_ATTRS_MAX;
    r.attributes = attrs;
    assert_true(gamefn__v1__create_ticket_request__get_packed_size(&r) <= GF_WIRE_REQUEST_MAX);

    free(id);
    free(name);
    free(addr);
    free(value);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_code_mapping),      cmocka_unit_test(test_error_build),
        cmocka_unit_test(test_error_golden),      cmocka_unit_test(test_error_from_err),
        cmocka_unit_test(test_reply_check),       cmocka_unit_test(test_partition),
        cmocka_unit_test(test_limits_consistent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
