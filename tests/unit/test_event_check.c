/* The GameEvent validator (gamefn/event_check.h): a valid event of every payload kind,
 * then one broken field at a time (just inside and just outside each bound), the
 * payload/type agreement, decoding of malformed bytes, the problem's text and the
 * subject check. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/event_check.h"
#include "gamefn/limits.h"

/* A valid event; each test case changes one thing in its copy. */
typedef struct fixture {
    Gamefn__V1__GameEvent ev;
    Gamefn__V1__KillEvent kill;
    Gamefn__V1__ScoreEvent score;
    Gamefn__V1__ZoneChangeEvent zone;
    Gamefn__V1__CrashEvent crash;
    Gamefn__V1__GenericEvent generic;
    Gamefn__V1__GenericEvent__AttributesEntry attr[GF_WIRE_ATTRS_MAX + 1];
    Gamefn__V1__GenericEvent__AttributesEntry *attrs[GF_WIRE_ATTRS_MAX + 1];
    char type[40];
    char buf[40000];
} fixture;

static void init(fixture *f, const char *type)
{
    memset(f, 0, sizeof *f);
    f->ev = (Gamefn__V1__GameEvent)GAMEFN__V1__GAME_EVENT__INIT;
    f->ev.event_id = "gs-1-42";
    f->ev.source_id = "gs-1";
    f->ev.source_seq = 42;
    f->ev.player_id = "p-alice";
    snprintf(f->type, sizeof f->type, "%s", type);
    f->ev.event_type = f->type;
    f->ev.occurred_unix_ms = 1796083200000;
    f->kill = (Gamefn__V1__KillEvent)GAMEFN__V1__KILL_EVENT__INIT;
    f->kill.victim_player_id = "p-bob";
    f->kill.weapon = "rocket launcher";
    f->kill.distance_m = 12.5f;
    f->score = (Gamefn__V1__ScoreEvent)GAMEFN__V1__SCORE_EVENT__INIT;
    f->score.delta = 10;
    f->zone = (Gamefn__V1__ZoneChangeEvent)GAMEFN__V1__ZONE_CHANGE_EVENT__INIT;
    f->zone.to_zone = "harbour";
    f->crash = (Gamefn__V1__CrashEvent)GAMEFN__V1__CRASH_EVENT__INIT;
    f->crash.signature = "0xdeadbeef";
    f->crash.stack = "frame 1\n\tframe 2\r\n";
    f->generic = (Gamefn__V1__GenericEvent)GAMEFN__V1__GENERIC_EVENT__INIT;
    for (int i = 0; i <= GF_WIRE_ATTRS_MAX; i++) {
        f->attr[i] = (Gamefn__V1__GenericEvent__AttributesEntry)
            GAMEFN__V1__GENERIC_EVENT__ATTRIBUTES_ENTRY__INIT;
        f->attrs[i] = &f->attr[i];
    }
    f->generic.attributes = f->attrs;
    if (strcmp(type, "kill") == 0) {
        f->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL;
        f->ev.kill = &f->kill;
    } else if (strcmp(type, "score") == 0) {
        f->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE;
        f->ev.score = &f->score;
    } else if (strcmp(type, "zone_change") == 0) {
        f->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE;
        f->ev.zone_change = &f->zone;
    } else if (strcmp(type, "crash") == 0) {
        f->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH;
        f->ev.crash = &f->crash;
    } else {
        f->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC;
        f->ev.generic = &f->generic;
    }
}

/* A string of n copies of c in f->buf (one at a time per fixture). */
static char *rep(fixture *f, char c, size_t n)
{
    assert_true(n < sizeof f->buf);
    memset(f->buf, c, n);
    f->buf[n] = '\0';
    return f->buf;
}

static void expect_bad(const fixture *f, const char *field)
{
    gf_event_problem p;
    memset(&p, 0, sizeof p);
    assert_int_equal(gf_event_check(&f->ev, &p), GF_ERR_INVALID);
    if (strcmp(p.field, field) != 0)
        fail_msg("field '%s' (%s), want '%s'", p.field, p.why, field);
    assert_true(p.why[0] != '\0');
}

static void expect_ok(const fixture *f)
{
    gf_event_problem p;
    memset(&p, 0, sizeof p);
    if (gf_event_check(&f->ev, &p) != GF_OK)
        fail_msg("refused: %s: %s", p.field, p.why);
}

static void every_payload_kind_is_accepted(void **state)
{
    static const char *types[] = {"kill", "score", "zone_change", "crash", "level_up"};
    fixture *f = malloc(sizeof *f);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        init(f, types[i]);
        expect_ok(f);
    }
    /* A type of its own may carry no payload at all. */
    init(f, "match_started");
    f->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD__NOT_SET;
    f->ev.generic = NULL;
    expect_ok(f);
    assert_int_equal(gf_event_payload_for("kill"), GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL);
    assert_int_equal(gf_event_payload_for("other"), GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC);
    free(f);
}

static void ids_and_common_fields(void **state)
{
    fixture *f = malloc(sizeof *f);
    init(f, "kill");
    f->ev.event_id = rep(f, 'e', GF_WIRE_EVENT_ID_MAX);
    expect_ok(f);
    f->ev.event_id = rep(f, 'e', GF_WIRE_EVENT_ID_MAX + 1);
    expect_bad(f, "event_id");
    f->ev.event_id = "";
    expect_bad(f, "event_id");
    f->ev.event_id = NULL;
    expect_bad(f, "event_id");
    f->ev.event_id = "a.b";
    expect_bad(f, "event_id");

    init(f, "kill");
    f->ev.source_id = rep(f, 's', GF_WIRE_ID_MAX + 1);
    expect_bad(f, "source_id");
    init(f, "kill");
    f->ev.source_seq = 0;
    expect_bad(f, "source_seq");
    /* The body check leaves the producer-assigned ids alone. */
    f->ev.event_id = "";
    f->ev.source_id = "";
    assert_int_equal(gf_event_check_body(&f->ev, NULL), GF_OK);

    init(f, "kill");
    f->ev.player_id = rep(f, 'p', GF_WIRE_ID_MAX);
    expect_ok(f);
    f->ev.player_id = rep(f, 'p', GF_WIRE_ID_MAX + 1);
    expect_bad(f, "player_id");
    f->ev.player_id = "p*";
    expect_bad(f, "player_id");
    f->ev.player_id = "";
    expect_bad(f, "player_id");

    init(f, "kill");
    f->ev.event_type = rep(f, 't', GF_WIRE_NAME_MAX + 1);
    expect_bad(f, "event_type");
    f->ev.event_type = "a b";
    expect_bad(f, "event_type");

    init(f, "kill");
    f->ev.occurred_unix_ms = 0;
    expect_bad(f, "occurred_unix_ms");
    f->ev.occurred_unix_ms = -5;
    expect_bad(f, "occurred_unix_ms");

    init(f, "kill");
    f->ev.match_id = rep(f, 'm', GF_WIRE_ID_MAX);
    expect_ok(f);
    f->ev.match_id = rep(f, 'm', GF_WIRE_ID_MAX + 1);
    expect_bad(f, "match_id");
    f->ev.match_id = "m>";
    expect_bad(f, "match_id");
    free(f);
}

static void payload_must_match_the_type(void **state)
{
    fixture *f = malloc(sizeof *f);
    init(f, "kill");
    f->ev.event_type = "score";
    expect_bad(f, "payload");
    init(f, "kill");
    f->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD__NOT_SET;
    expect_bad(f, "payload");
    init(f, "level_up");
    f->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL;
    f->ev.kill = &f->kill;
    expect_bad(f, "payload");
    init(f, "crash");
    f->ev.crash = NULL;
    expect_bad(f, "crash");
    free(f);
}

static void typed_payload_bounds(void **state)
{
    fixture *f = malloc(sizeof *f);
    init(f, "kill");
    f->kill.victim_player_id = "";
    expect_bad(f, "kill.victim_player_id");
    init(f, "kill");
    f->kill.weapon = rep(f, 'w', 64);
    expect_ok(f);
    f->kill.weapon = rep(f, 'w', 65);
    expect_bad(f, "kill.weapon");
    f->kill.weapon = "bad\x01";
    expect_bad(f, "kill.weapon");
    f->kill.weapon = "caf\xc3";
    expect_bad(f, "kill.weapon");
    f->kill.weapon = "caf\xc3\xa9";
    expect_ok(f);
    static const float distances[] = {-0.5f, 100001.0f, NAN, INFINITY};
    for (size_t i = 0; i < 4; i++) {
        init(f, "kill");
        f->kill.distance_m = distances[i];
        expect_bad(f, "kill.distance_m");
    }
    f->kill.distance_m = 100000.0f;
    expect_ok(f);

    init(f, "score");
    f->score.delta = 0;
    expect_bad(f, "score.delta");
    f->score.delta = GF_EVENT_DELTA_MAX;
    expect_ok(f);
    f->score.delta = -GF_EVENT_DELTA_MAX - 1;
    expect_bad(f, "score.delta");
    init(f, "score");
    f->score.board = "season.1";
    expect_bad(f, "score.board");
    f->score.board = rep(f, 'b', 32);
    expect_ok(f);
    init(f, "score");
    f->score.reason = "tab\tnot allowed";
    expect_bad(f, "score.reason");

    init(f, "zone_change");
    f->zone.to_zone = "";
    expect_bad(f, "zone_change.to_zone");
    init(f, "zone_change");
    f->zone.from_zone = rep(f, 'z', 65);
    expect_bad(f, "zone_change.from_zone");

    init(f, "crash");
    f->crash.signature = "";
    expect_bad(f, "crash.signature");
    init(f, "crash");
    f->crash.stack = rep(f, 's', GF_EVENT_STACK_MAX);
    expect_ok(f);
    f->crash.stack = rep(f, 's', GF_EVENT_STACK_MAX + 1);
    expect_bad(f, "crash.stack");
    init(f, "crash");
    f->crash.message = "line\x1b[31m";
    expect_bad(f, "crash.message");
    init(f, "crash");
    f->crash.platform = rep(f, 'x', 33);
    expect_bad(f, "crash.platform");
    free(f);
}

static void generic_payload_bounds(void **state)
{
    fixture *f = malloc(sizeof *f);
    init(f, "level_up");
    for (int i = 0; i < GF_WIRE_ATTRS_MAX; i++) {
        static char keys[GF_WIRE_ATTRS_MAX][8];
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        f->attr[i].key = keys[i];
        f->attr[i].value = "v";
    }
    f->generic.n_attributes = GF_WIRE_ATTRS_MAX;
    expect_ok(f);
    f->attr[GF_WIRE_ATTRS_MAX].key = "extra";
    f->generic.n_attributes = GF_WIRE_ATTRS_MAX + 1;
    expect_bad(f, "generic.attributes");

    f->generic.n_attributes = 2;
    f->attr[1].key = "k0";
    expect_bad(f, "generic.attributes[k0]");
    f->attr[1].key = "a.b";
    expect_bad(f, "generic.attributes[1]");
    f->attr[1].key = "k1";
    f->attr[1].value = rep(f, 'v', GF_WIRE_ATTR_VALUE_MAX + 1);
    expect_bad(f, "generic.attributes[k1]");
    f->attr[1].value = "ok";
    expect_ok(f);

    f->generic.data.len = GF_EVENT_DATA_MAX + 1;
    f->generic.data.data = (uint8_t *)rep(f, 'd', GF_EVENT_DATA_MAX + 1);
    expect_bad(f, "generic.data");
    f->generic.data.len = GF_EVENT_DATA_MAX;
    expect_ok(f);
    f->generic.content_type = rep(f, 'c', 65);
    expect_bad(f, "generic.content_type");
    free(f);
}

static void decode_refuses_bad_bytes(void **state)
{
    fixture *f = malloc(sizeof *f);
    init(f, "score");
    size_t len = gamefn__v1__game_event__get_packed_size(&f->ev);
    uint8_t *buf = malloc(len);
    gamefn__v1__game_event__pack(&f->ev, buf);
    Gamefn__V1__GameEvent *ev = NULL;
    gf_event_problem p;
    assert_int_equal(gf_event_decode(buf, len, &ev, &p), GF_OK);
    assert_string_equal(ev->event_id, "gs-1-42");
    assert_int_equal(ev->score->delta, 10);
    gamefn__v1__game_event__free_unpacked(ev, NULL);

    /* Every truncation either fails to decode or fails the check: never accepted. */
    for (size_t cut = 0; cut < len; cut++) {
        gf_err err = gf_event_decode(buf, cut, &ev, &p);
        assert_int_equal(err, GF_ERR_INVALID);
        assert_null(ev);
    }
    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    assert_int_equal(gf_event_decode(garbage, sizeof garbage, &ev, &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "bytes");
    assert_int_equal(gf_event_decode(buf, GF_WIRE_EVENT_MAX + 1, &ev, &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "bytes");
    /* The DeadLetter's error text, and gf_event_free of what decode returned. */
    char text[GF_EVENT_FIELD_MAX + GF_EVENT_WHY_MAX];
    gf_event_problem_format(&p, text, sizeof text);
    assert_true(strncmp(text, "bytes: ", 7) == 0);
    p.field[0] = '\0';
    gf_event_problem_format(&p, text, sizeof text);
    assert_string_equal(text, p.why);
    assert_int_equal(gf_event_decode(buf, len, &ev, &p), GF_OK);
    gf_event_free(ev);
    gf_event_free(NULL);
    free(buf);
    free(f);
}

/* Packs f's event; *len its size (the caller frees). */
static uint8_t *packed(const fixture *f, size_t *len)
{
    *len = gamefn__v1__game_event__get_packed_size(&f->ev);
    uint8_t *buf = malloc(*len + 16);
    assert_non_null(buf);
    gamefn__v1__game_event__pack(&f->ev, buf);
    return buf;
}

/* Decodes buf after turning the byte at `mark` (which must occur once) into a NUL. */
static gf_err decode_with_nul(uint8_t *buf, size_t len, char mark, gf_event_problem *p)
{
    uint8_t *at = memchr(buf, mark, len);
    assert_non_null(at);
    assert_null(memchr(at + 1, mark, len - (size_t)(at + 1 - buf)));
    *at = 0;
    Gamefn__V1__GameEvent *ev = NULL;
    gf_err err = gf_event_decode(buf, len, &ev, p);
    gf_event_free(ev);
    return err;
}

/* A string whose bytes hold a NUL would read as its part before the NUL in C (a valid
 * token, here): refused with its field, at any depth. Non-canonical encodings and
 * NULs in bytes fields are fine. */
static void decode_refuses_a_nul_inside_a_string(void **state)
{
    fixture *f = malloc(sizeof *f);
    gf_event_problem p;
    size_t len;
    init(f, "kill");
    f->ev.player_id = "p-Zlice";
    uint8_t *buf = packed(f, &len);
    assert_int_equal(decode_with_nul(buf, len, 'Z', &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "player_id");
    assert_string_equal(p.why, "holds a NUL byte");
    free(buf);

    f->kill.victim_player_id = "p-Qob";
    f->ev.player_id = "p-alice";
    buf = packed(f, &len);
    assert_int_equal(decode_with_nul(buf, len, 'Q', &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "kill.victim_player_id");
    free(buf);

    init(f, "level_up");
    f->attr[0].key = "lvl";
    f->attr[0].value = "1W";
    f->generic.n_attributes = 1;
    buf = packed(f, &len);
    assert_int_equal(decode_with_nul(buf, len, 'W', &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "generic.attributes.value");
    free(buf);

    /* Bytes may hold NULs; an explicit empty match_id (proto3 writers omit it, others
     * may not) is the same event. */
    static const uint8_t data[] = {'X', 1, 2};
    f->generic.data.data = (uint8_t *)(uintptr_t)data;
    f->generic.data.len = sizeof data;
    buf = packed(f, &len);
    const ProtobufCFieldDescriptor *match_id = protobuf_c_message_descriptor_get_field_by_name(
        &gamefn__v1__game_event__descriptor, "match_id");
    assert_non_null(match_id);
    buf[len++] = (uint8_t)(match_id->id << 3 | 2);
    buf[len++] = 0;
    assert_int_equal(decode_with_nul(buf, len, 'X', &p), GF_OK);
    free(buf);
    free(f);
}

static void subject_agrees_with_the_event(void **state)
{
    fixture *f = malloc(sizeof *f);
    init(f, "kill");
    gf_event_problem p;
    /* p-alice maps to partition 14 (PROTOCOL.md §9 test vectors). */
    assert_int_equal(gf_event_check_subject("gamefn.v1.evp.14.p-alice.kill", &f->ev, &p), GF_OK);
    assert_int_equal(gf_event_check_subject("gamefn.v1.event.p-alice.kill", &f->ev, &p), GF_OK);
    static const char *bad_subjects[] = {
        "gamefn.v1.evp.3.p-alice.kill",
        "gamefn.v1.evp.14.p-bob.kill",
        "gamefn.v1.evp.14.p-alice.score",
        "gamefn.v1.evp.14.p-alice.kill.x",
        "gamefn.v1.evp.14.p-alice",
        "gamefn.v1.evp..p-alice.kill",
        "other.p-alice.kill",
        "",
    };
    for (size_t i = 0; i < sizeof bad_subjects / sizeof bad_subjects[0]; i++) {
        assert_int_equal(gf_event_check_subject(bad_subjects[i], &f->ev, &p), GF_ERR_INVALID);
        assert_string_equal(p.field, "subject");
    }
    assert_int_equal(gf_event_check_subject(NULL, &f->ev, &p), GF_ERR_INVALID);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_payload_kind_is_accepted),
        cmocka_unit_test(ids_and_common_fields),
        cmocka_unit_test(payload_must_match_the_type),
        cmocka_unit_test(typed_payload_bounds),
        cmocka_unit_test(generic_payload_bounds),
        cmocka_unit_test(decode_refuses_bad_bytes),
        cmocka_unit_test(decode_refuses_a_nul_inside_a_string),
        cmocka_unit_test(subject_agrees_with_the_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
