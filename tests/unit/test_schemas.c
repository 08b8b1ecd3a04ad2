/*
 * test_schemas.c — the gamefn.v1 wire messages.
 *
 * Design notes:
 *  - Every message is filled from its protobuf-c descriptor (schema_fill.c): every
 *    field gets a distinct non-default value, repeated fields two elements, and each
 *    member of each oneof is taken in turn. So a field added to a .proto is covered
 *    without touching this file, and test_every_message_listed fails if a new
 *    message is missing from the table below.
 *  - Decoding runs on buffers that end exactly at a PROT_NONE page, so reading one
 *    byte past the input crashes instead of passing silently (as picohttpparser's
 *    tests do).
 *  - A prefix of a valid encoding that ends between two top-level fields is itself a
 *    valid message; any other prefix cuts a varint, a fixed value or a length-delimited
 *    field short, and protobuf requires the decoder to refuse it.
 *  - Golden encodings come from protobufjs (schemas/compat/vectors.mjs): protobuf-c
 *    must decode them and encode the same values to the same bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guard_page.h"
#include "schema_fill.h"

/* Every message of gamefn.v1, in .proto order. */
static const ProtobufCMessageDescriptor *const all_messages[] = {
    &gamefn__v1__datacenter_ping__descriptor,
    &gamefn__v1__error__descriptor,
    &gamefn__v1__match_ticket__descriptor,
    &gamefn__v1__team__descriptor,
    &gamefn__v1__datacenter_choice__descriptor,
    &gamefn__v1__match__descriptor,
    &gamefn__v1__assignment__descriptor,
    &gamefn__v1__join_token__descriptor,
    &gamefn__v1__join_token_claims__descriptor,
    &gamefn__v1__player_match_record__descriptor,
    &gamefn__v1__match_outcome__descriptor,
    &gamefn__v1__party_member__descriptor,
    &gamefn__v1__create_ticket_request__descriptor,
    &gamefn__v1__create_ticket_reply__descriptor,
    &gamefn__v1__cancel_ticket_request__descriptor,
    &gamefn__v1__cancel_ticket_reply__descriptor,
    &gamefn__v1__get_ticket_request__descriptor,
    &gamefn__v1__get_ticket_reply__descriptor,
    &gamefn__v1__ticket_limits__descriptor,
    &gamefn__v1__ticket_status__descriptor,
    &gamefn__v1__claim__descriptor,
    &gamefn__v1__ticket_record__descriptor,
    &gamefn__v1__server_record__descriptor,
    &gamefn__v1__register_server_request__descriptor,
    &gamefn__v1__join_key__descriptor,
    &gamefn__v1__register_server_reply__descriptor,
    &gamefn__v1__heartbeat_request__descriptor,
    &gamefn__v1__heartbeat_reply__descriptor,
    &gamefn__v1__deregister_server_request__descriptor,
    &gamefn__v1__deregister_server_reply__descriptor,
    &gamefn__v1__fleet_keys_request__descriptor,
    &gamefn__v1__fleet_keys_reply__descriptor,
    &gamefn__v1__fleet_scale_request__descriptor,
    &gamefn__v1__fleet_demand__descriptor,
    &gamefn__v1__kill_event__descriptor,
    &gamefn__v1__score_event__descriptor,
    &gamefn__v1__zone_change_event__descriptor,
    &gamefn__v1__crash_event__descriptor,
    &gamefn__v1__generic_event__descriptor,
    &gamefn__v1__game_event__descriptor,
    &gamefn__v1__dedup_record__descriptor,
    &gamefn__v1__top_query__descriptor,
    &gamefn__v1__around_query__descriptor,
    &gamefn__v1__page_query__descriptor,
    &gamefn__v1__rank_query__descriptor,
    &gamefn__v1__leaderboard_query_request__descriptor,
    &gamefn__v1__leaderboard_entry__descriptor,
    &gamefn__v1__leaderboard_query_reply__descriptor,
    &gamefn__v1__dead_letter__descriptor,
    &gamefn__v1__dead_reason__descriptor,
    &gamefn__v1__list_queues_request__descriptor,
    &gamefn__v1__queue_rules__descriptor,
    &gamefn__v1__queue_info__descriptor,
    &gamefn__v1__datacenter_info__descriptor,
    &gamefn__v1__list_queues_reply__descriptor,
};
#define N_MESSAGES (sizeof all_messages / sizeof all_messages[0])

static const char *const proto_files[] = {"common", "error",       "match", "ticket", "fleet",
                                          "event",  "leaderboard", "dlq",   "queue"};

/* Every top-level `message X {` of every .proto is in all_messages. */
static void test_every_message_listed(void **state)
{
    (void)state;
    const char *src = getenv("GAMEFN_SOURCE_DIR");
    if (src == NULL)
        skip();
    size_t seen = 0;
    for (size_t f = 0; f < sizeof proto_files / sizeof proto_files[0]; f++) {
        char path[1024], line[512], name[128], full[160];
        snprintf(path, sizeof path, "%s/schemas/gamefn/v1/%s.proto", src, proto_files[f]);
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        while (fgets(line, sizeof line, fp)) {
            if (sscanf(line, "message %127[A-Za-z0-9_] {", name) != 1)
                continue;
            snprintf(full, sizeof full, "gamefn.v1.%s", name);
            bool found = false;
            for (size_t i = 0; i < N_MESSAGES; i++)
                found = found || strcmp(all_messages[i]->name, full) == 0;
            if (!found)
                fail_msg("%s is not in all_messages", full);
            seen++;
        }
        fclose(fp);
    }
    assert_int_equal(seen, N_MESSAGES);
}

static void test_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_MESSAGES; i++) {
        const ProtobufCMessageDescriptor *d = all_messages[i];
        for (unsigned variant = 0; variant < sf_variants(d); variant++) {
            ProtobufCMessage *m = sf_new(d, variant);
            size_t len = 0;
            uint8_t *buf = sf_pack(m, &len);
            assert_true(len > 0);

            ProtobufCMessage *u = protobuf_c_message_unpack(d, NULL, len, buf);
            assert_non_null(u);
            if (!sf_equal(m, u))
                fail_msg("%s variant %u: fields differ after decode", d->name, variant);

            /* Encoding is deterministic: the decoded copy packs to the same bytes. */
            size_t len2 = 0;
            uint8_t *buf2 = sf_pack(u, &len2);
            assert_int_equal(len2, len);
            assert_memory_equal(buf2, buf, len);

            free(buf2);
            free(buf);
            protobuf_c_message_free_unpacked(u, NULL);
            protobuf_c_message_free_unpacked(m, NULL);
        }
    }
}

/* A message with only default values encodes to nothing and decodes back. */
static void test_empty_messages(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_MESSAGES; i++) {
        const ProtobufCMessageDescriptor *d = all_messages[i];
        ProtobufCMessage *m = calloc(1, d->sizeof_message);
        assert_non_null(m);
        protobuf_c_message_init(d, m);
        assert_int_equal(protobuf_c_message_get_packed_size(m), 0);
        ProtobufCMessage *u = protobuf_c_message_unpack(d, NULL, 0, (const uint8_t *)"");
        assert_non_null(u);
        assert_true(sf_equal(m, u));
        protobuf_c_message_free_unpacked(u, NULL);
        free(m);
    }
}

static void test_truncated_prefixes(void **state)
{
    (void)state;
    guard_page *g = guard_page_new(64 * 1024);
    for (size_t i = 0; i < N_MESSAGES; i++) {
        const ProtobufCMessageDescriptor *d = all_messages[i];
        for (unsigned variant = 0; variant < sf_variants(d); variant++) {
            ProtobufCMessage *m = sf_new(d, variant);
            size_t len = 0;
            uint8_t *buf = sf_pack(m, &len);
            bool *boundary = sf_field_boundaries(buf, len);
            size_t valid = 0, refused = 0;
            for (size_t k = 0; k <= len; k++) {
                const uint8_t *p = guard_page_place(g, buf, k);
                ProtobufCMessage *u = protobuf_c_message_unpack(d, NULL, k, p);
                if (boundary[k]) {
                    if (u == NULL)
                        fail_msg("%s: prefix %zu of %zu ends between fields but was refused",
                                 d->name, k, len);
                    valid++;
                } else {
                    if (u != NULL)
                        fail_msg("%s: prefix %zu of %zu cuts a field but was accepted", d->name, k,
                                 len);
                    refused++;
                }
                protobuf_c_message_free_unpacked(u, NULL);
            }
            assert_true(valid >= 2);   /* the empty prefix and the whole message */
            assert_true(refused >= 1); /* every filled field takes at least 2 bytes */
            free(boundary);
            free(buf);
            protobuf_c_message_free_unpacked(m, NULL);
        }
    }
    guard_page_free(g);
}

typedef struct junk_case {
    const char *name;
    uint8_t bytes[16];
    size_t len;
} junk_case;

/* Inputs every protobuf decoder must refuse, whatever the message type. */
static const junk_case must_fail[] = {
    {"truncated varint value", {0x08, 0x80}, 2},
    {"truncated tag", {0x80}, 1},
    {"truncated tag, 2 bytes", {0xc0, 0x80}, 2},
    {"length past the end", {0x0a, 0x05, 'a'}, 3},
    {"truncated length", {0x0a, 0x80}, 2},
    {"length of 2^32-1", {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, 6},
    {"varint of 11 bytes",
     {0xc0, 0x3e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
     13},
    {"start group (wire type 3)", {0x0b}, 1},
    {"end group (wire type 4)", {0x0c}, 1},
    {"wire type 6", {0x0e, 0x00}, 2},
    {"wire type 7", {0x0f, 0x00}, 2},
    {"field number 0", {0x00, 0x00}, 2},
    {"unknown field, truncated fixed64", {0xc1, 0x3e, 1, 2, 3}, 5},
    {"unknown field, truncated fixed32", {0xc5, 0x3e, 1, 2}, 4},
    {"unknown field, truncated bytes", {0xc2, 0x3e, 0x04, 1, 2}, 5},
};

static void test_junk_refused(void **state)
{
    (void)state;
    guard_page *g = guard_page_new(4096);
    for (size_t i = 0; i < N_MESSAGES; i++) {
        for (size_t c = 0; c < sizeof must_fail / sizeof must_fail[0]; c++) {
            const uint8_t *p = guard_page_place(g, must_fail[c].bytes, must_fail[c].len);
            ProtobufCMessage *u =
                protobuf_c_message_unpack(all_messages[i], NULL, must_fail[c].len, p);
            if (u != NULL)
                fail_msg("%s accepted %s", all_messages[i]->name, must_fail[c].name);
        }
    }
    guard_page_free(g);
}

/* A known field sent with another wire type is refused (type confusion). The one
 * exception, measured on protobuf-c 1.4.1: a bool field is read from any wire type
 * (any non-zero byte is true). Harmless, as the value is still only 0 or 1, but
 * other decoders refuse it, so writers must send bools as varints. */
static void test_wrong_wire_type_refused(void **state)
{
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < N_MESSAGES; i++) {
        const ProtobufCMessageDescriptor *d = all_messages[i];
        for (unsigned f = 0; f < d->n_fields; f++) {
            uint8_t buf[16];
            size_t len = sf_wrong_wire_type(&d->fields[f], buf);
            ProtobufCMessage *u = protobuf_c_message_unpack(d, NULL, len, buf);
            if (d->fields[f].type == PROTOBUF_C_TYPE_BOOL) {
                protobuf_c_message_free_unpacked(u, NULL);
                continue;
            }
            if (u != NULL)
                fail_msg("%s.%s accepted a wrong wire type", d->name, d->fields[f].name);
            checked++;
        }
    }
    assert_true(checked > N_MESSAGES);
}

/* Fields this build does not know are skipped, so old readers accept new writers. */
static void test_unknown_fields_ignored(void **state)
{
    (void)state;
    static const uint8_t unknown[] = {
        0xc0, 0x3e, 0x96, 0x01,                     /* field 1000, varint 150 */
        0xc2, 0x3e, 0x02, 'h',  'i',                /* field 1000, bytes "hi" */
        0xc5, 0x3e, 1,    2,    3,   4,             /* field 1000, fixed32 */
        0xc1, 0x3e, 1,    2,    3,   4, 5, 6, 7, 8, /* field 1000, fixed64 */
    };
    for (size_t i = 0; i < N_MESSAGES; i++) {
        const ProtobufCMessageDescriptor *d = all_messages[i];
        ProtobufCMessage *m = sf_new(d, 0);
        size_t len = 0;
        uint8_t *buf = sf_pack(m, &len);
        uint8_t *ext = malloc(len + sizeof unknown);
        assert_non_null(ext);
        memcpy(ext, unknown, sizeof unknown); /* before and after the known fields */
        memcpy(ext + sizeof unknown, buf, len);
        ProtobufCMessage *u = protobuf_c_message_unpack(d, NULL, len + sizeof unknown, ext);
        assert_non_null(u);
        assert_true(sf_equal(m, u));
        protobuf_c_message_free_unpacked(u, NULL);
        memcpy(ext, buf, len);
        memcpy(ext + len, unknown, sizeof unknown);
        u = protobuf_c_message_unpack(d, NULL, len + sizeof unknown, ext);
        assert_non_null(u);
        assert_true(sf_equal(m, u));
        protobuf_c_message_free_unpacked(u, NULL);
        free(ext);
        free(buf);
        protobuf_c_message_free_unpacked(m, NULL);
    }
}

/* Random bytes and randomly damaged encodings: decode or refuse, never crash or leak. */
static void test_random_input(void **state)
{
    (void)state;
    guard_page *g = guard_page_new(64 * 1024);
    uint64_t rng = 0x9e3779b97f4a7c15u;
    uint8_t junk[512];
    for (size_t i = 0; i < N_MESSAGES; i++) {
        const ProtobufCMessageDescriptor *d = all_messages[i];
        for (int n = 0; n < 300; n++) {
            size_t len = sf_rand(&rng) % sizeof junk;
            for (size_t k = 0; k < len; k++)
                junk[k] = (uint8_t)sf_rand(&rng);
            const uint8_t *p = guard_page_place(g, junk, len);
            protobuf_c_message_free_unpacked(protobuf_c_message_unpack(d, NULL, len, p), NULL);
        }
        ProtobufCMessage *m = sf_new(d, 0);
        size_t len = 0;
        uint8_t *buf = sf_pack(m, &len);
        uint8_t *copy = malloc(len);
        assert_non_null(copy);
        for (int n = 0; n < 300; n++) {
            memcpy(copy, buf, len);
            for (int flips = 1 + (int)(sf_rand(&rng) % 3); flips > 0; flips--)
                copy[sf_rand(&rng) % len] ^= (uint8_t)(1u << (sf_rand(&rng) % 8));
            const uint8_t *p = guard_page_place(g, copy, len);
            protobuf_c_message_free_unpacked(protobuf_c_message_unpack(d, NULL, len, p), NULL);
        }
        free(copy);
        free(buf);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    guard_page_free(g);
}

/* ---- golden encodings from protobufjs 8.8.1 (schemas/compat/vectors.mjs) ---- */

static const char golden_create_ticket_request[] =
    "0a2437663163306135322d336630652d346238652d396135312d306336663564326538623131120a72616e"
    "6b65645f3576351a1b0a07702d616c696365110000000000c297401900000000005055401a100a05702d62"
    "6f621100000000000008c0220b0a0765752d776573741020220f0a0a65752d63656e7472616c1084202a0e"
    "0a08706c6174666f726d1202706332026575";
static const char golden_game_event[] =
    "0a1967732d372d3138343436373434303733373039353531363135120467732d3718ffffffffffffffffff"
    "012207702d616c6963652a046b696c6c30fbd0eab6b7333a046d2d343252170a05702d626f6212077261"
    "696c67756e18012500001642";
static const char golden_leaderboard_query[] = "0a06676c6f62616c1a0b0a05702d626f6210021832";

static uint8_t *hex_decode(const char *hex, size_t *len)
{
    size_t n = strlen(hex) / 2;
    uint8_t *out = malloc(n);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    *len = n;
    return out;
}

/* Packs m and compares with the golden bytes. */
static void assert_packs_to(const ProtobufCMessage *m, const uint8_t *golden, size_t len)
{
    size_t n = 0;
    uint8_t *buf = sf_pack(m, &n);
    assert_int_equal(n, len);
    assert_memory_equal(buf, golden, len);
    free(buf);
}

static void test_golden_create_ticket(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *bin = hex_decode(golden_create_ticket_request, &len);
    Gamefn__V1__CreateTicketRequest *r = gamefn__v1__create_ticket_request__unpack(NULL, len, bin);
    assert_non_null(r);
    assert_string_equal(r->idempotency_key, "7f1c0a52-3f0e-4b8e-9a51-0c6f5d2e8b11");
    assert_string_equal(r->queue, "ranked_5v5");
    assert_int_equal(r->n_members, 2);
    assert_string_equal(r->members[0]->player_id, "p-alice");
    assert_true(r->members[0]->rating == 1520.5 && r->members[0]->sigma == 85.25);
    assert_string_equal(r->members[1]->player_id, "p-bob");
    assert_true(r->members[1]->rating == -3.0 && r->members[1]->sigma == 0.0);
    assert_int_equal(r->n_pings, 2);
    assert_string_equal(r->pings[0]->datacenter, "eu-west");
    assert_int_equal(r->pings[0]->ping_ms, 32);
    assert_string_equal(r->pings[1]->datacenter, "eu-central");
    assert_int_equal(r->pings[1]->ping_ms, 4100);
    assert_int_equal(r->n_attributes, 1);
    assert_string_equal(r->attributes[0]->key, "platform");
    assert_string_equal(r->attributes[0]->value, "pc");
    assert_string_equal(r->region, "eu");

    /* The same values built in C encode to the same bytes. */
    Gamefn__V1__PartyMember alice = GAMEFN__V1__PARTY_MEMBER__INIT;
    Gamefn__V1__PartyMember bob = GAMEFN__V1__PARTY_MEMBER__INIT;
    alice.player_id = "p-alice";
    alice.rating = 1520.5;
    alice.sigma = 85.25;
    bob.player_id = "p-bob";
    bob.rating = -3.0;
    Gamefn__V1__DatacenterPing west = GAMEFN__V1__DATACENTER_PING__INIT;
    Gamefn__V1__DatacenterPing central = GAMEFN__V1__DATACENTER_PING__INIT;
    west.datacenter = "eu-west";
    west.ping_ms = 32;
    central.datacenter = "eu-central";
    central.ping_ms = 4100;
    Gamefn__V1__CreateTicketRequest__AttributesEntry platform =
        GAMEFN__V1__CREATE_TICKET_REQUEST__ATTRIBUTES_ENTRY__INIT;
    platform.key = "platform";
    platform.value = "pc";
    Gamefn__V1__PartyMember *members[] = {&alice, &bob};
    Gamefn__V1__DatacenterPing *pings[] = {&west, &central};
    Gamefn__V1__CreateTicketRequest__AttributesEntry *attrs[] = {&platform};
    Gamefn__V1__CreateTicketRequest c = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    c.idempotency_key = "7f1c0a52-3f0e-4b8e-9a51-0c6f5d2e8b11";
    c.queue = "ranked_5v5";
    c.n_members = 2;
    c.members = members;
    c.n_pings = 2;
    c.pings = pings;
    c.n_attributes = 1;
    c.attributes = attrs;
    c.region = "eu";
    assert_packs_to(&c.base, bin, len);

    gamefn__v1__create_ticket_request__free_unpacked(r, NULL);
    free(bin);
}

static void test_golden_game_event(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *bin = hex_decode(golden_game_event, &len);
    Gamefn__V1__GameEvent *e = gamefn__v1__game_event__unpack(NULL, len, bin);
    assert_non_null(e);
    assert_string_equal(e->event_id, "gs-7-18446744073709551615");
    assert_string_equal(e->source_id, "gs-7");
    assert_true(e->source_seq == UINT64_MAX);
    assert_string_equal(e->player_id, "p-alice");
    assert_string_equal(e->event_type, "kill");
    assert_true(e->occurred_unix_ms == 1767225600123);
    assert_string_equal(e->match_id, "m-42");
    assert_int_equal(e->payload_case, GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL);
    assert_string_equal(e->kill->victim_player_id, "p-bob");
    assert_string_equal(e->kill->weapon, "railgun");
    assert_true(e->kill->headshot);
    assert_true(e->kill->distance_m == 37.5f);
    assert_packs_to(&e->base, bin, len);
    gamefn__v1__game_event__free_unpacked(e, NULL);
    free(bin);
}

static void test_golden_leaderboard_query(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *bin = hex_decode(golden_leaderboard_query, &len);
    Gamefn__V1__LeaderboardQueryRequest *q =
        gamefn__v1__leaderboard_query_request__unpack(NULL, len, bin);
    assert_non_null(q);
    assert_string_equal(q->board, "global");
    assert_int_equal(q->query_case, GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_AROUND);
    assert_string_equal(q->around->player_id, "p-bob");
    assert_int_equal(q->around->before, 2);
    assert_int_equal(q->around->after, 50);
    assert_packs_to(&q->base, bin, len);
    gamefn__v1__leaderboard_query_request__free_unpacked(q, NULL);
    free(bin);
}

/* `test_schemas --dump`: one line "<message name> <hex>" per message and variant,
 * for the by-hand cross-language check in schemas/compat/roundtrip.mjs. */
static int dump_vectors(void)
{
    for (size_t i = 0; i < N_MESSAGES; i++) {
        for (unsigned variant = 0; variant < sf_variants(all_messages[i]); variant++) {
            ProtobufCMessage *m = sf_new(all_messages[i], variant);
            size_t len = 0;
            uint8_t *buf = sf_pack(m, &len);
            printf("%s ", all_messages[i]->name);
            for (size_t k = 0; k < len; k++)
                printf("%02x", buf[k]);
            printf("\n");
            free(buf);
            protobuf_c_message_free_unpacked(m, NULL);
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--dump") == 0)
        return dump_vectors();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_message_listed),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_empty_messages),
        cmocka_unit_test(test_truncated_prefixes),
        cmocka_unit_test(test_junk_refused),
        cmocka_unit_test(test_wrong_wire_type_refused),
        cmocka_unit_test(test_unknown_fields_ignored),
        cmocka_unit_test(test_random_input),
        cmocka_unit_test(test_golden_create_ticket),
        cmocka_unit_test(test_golden_game_event),
        cmocka_unit_test(test_golden_leaderboard_query),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
