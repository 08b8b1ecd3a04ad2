/* The producer's encoding (producer_emit.c): the body encoded before the seq is known
 * plus the id fields written in front of it under the spool lock must be exactly
 * what protobuf-c writes for the whole message, at every seq length; and what it
 * builds validates, with the defaults (player = the source, now) filled in. No NATS. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/event_check.h"
#include "producer_internal.h"

static gf_producer *fake_producer(const char *source)
{
    gf_producer *p = calloc(1, sizeof *p);
    assert_non_null(p);
    snprintf(p->source_id, sizeof p->source_id, "%s", source);
    return p;
}

/* Builds, stamps with seq, and checks the bytes against protobuf-c's own encoding of
 * the decoded message. Returns the decoded event (caller frees). */
static Gamefn__V1__GameEvent *round_trip(gf_producer *p, const gf_event *ev, uint64_t seq)
{
    pr_entry *e = NULL;
    gf_producer_receipt r;
    gf_err err = gf__producer_build(p->source_id, strlen(p->source_id), ev, &e, &r);
    if (err != GF_OK)
        fail_msg("build: %s %s %s", gf_err_str(err), r.field, r.why);
    gf__producer_stamp(p, e, seq);
    Gamefn__V1__GameEvent *got = NULL;
    gf_event_problem why;
    if (gf_event_decode(e->data, e->data_len, &got, &why) != GF_OK)
        fail_msg("decode: %s %s", why.field, why.why);
    size_t len = gamefn__v1__game_event__get_packed_size(got);
    uint8_t *canon = malloc(len);
    gamefn__v1__game_event__pack(got, canon);
    assert_int_equal(len, e->data_len);
    assert_memory_equal(canon, e->data, len);
    char id[100];
    snprintf(id, sizeof id, "%s-%" PRIu64, p->source_id, seq);
    assert_string_equal(e->msg_id, id);
    assert_string_equal(got->event_id, id);
    assert_string_equal(got->source_id, p->source_id);
    assert_int_equal(got->source_seq, seq);
    char subject[200];
    snprintf(subject, sizeof subject, "gamefn.v1.event.%s.%s", got->player_id, got->event_type);
    assert_string_equal(e->subject, subject);
    free(canon);
    free(e);
    return got;
}

static void prefix_plus_body_is_the_canonical_encoding(void **state)
{
    gf_producer *p = fake_producer("gs-eu-west-1_a");
    static const uint64_t seqs[] = {1, 127, 128, 16384, UINT64_C(1) << 35, UINT64_MAX};
    gf_event_attr attrs[] = {{"level", "7"}, {"mode", "ranked"}};
    static const uint8_t blob[] = {0, 1, 2, 255};
    gf_event events[] = {
        {.player_id = "p-alice", .type = "kill", .kill = {"p-bob", "bow", true, 31.5f}},
        {.player_id = "p-alice", .type = "score", .score = {-42, "weekly", "flag"}},
        {.player_id = "p-alice", .type = "zone_change", .zone_change = {"", "harbour"}},
        {.player_id = "p-alice",
         .type = "crash",
         .crash = {"sig", "boom", "frame 1\nframe 2", "1.2.3", "linux"}},
        {.player_id = "p-alice",
         .type = "level_up",
         .match_id = "m-1",
         .occurred_unix_ms = 1796083200000,
         .generic = {attrs, 2, blob, sizeof blob, "application/x-test"}},
        {.type = "server_crash"}, /* no player: the source's id */
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        for (size_t k = 0; k < sizeof seqs / sizeof seqs[0]; k++) {
            Gamefn__V1__GameEvent *got = round_trip(p, &events[i], seqs[k]);
            gamefn__v1__game_event__free_unpacked(got, NULL);
        }
    free(p);
}

static void defaults_are_filled(void **state)
{
    gf_producer *p = fake_producer("gs-1");
    gf_event ev = {.type = "match_end"};
    int64_t before = gf_clock_unix_ms();
    Gamefn__V1__GameEvent *got = round_trip(p, &ev, 9);
    assert_string_equal(got->player_id, "gs-1");
    assert_true(got->occurred_unix_ms >= before && got->occurred_unix_ms <= gf_clock_unix_ms());
    assert_int_equal(got->payload_case, GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC);
    gamefn__v1__game_event__free_unpacked(got, NULL);
    free(p);
}

static void the_prefix_alone(void **state)
{
    uint8_t out[PR_PREFIX_MAX];
    size_t n = gf__producer_prefix("s-300", "s", 300, out);
    static const uint8_t want[] = {0x0a, 5, 's', '-',  '3',  '0', '0',
                                   0x12, 1, 's', 0x18, 0xac, 0x02};
    assert_int_equal(n, sizeof want);
    assert_memory_equal(out, want, sizeof want);
    char id[GF_PRODUCER_EVENT_ID_MAX], source[65];
    memset(source, 'x', 64);
    source[64] = '\0';
    snprintf(id, sizeof id, "%s-%" PRIu64, source, UINT64_MAX);
    assert_true(gf__producer_prefix(id, source, UINT64_MAX, out) <= PR_PREFIX_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prefix_plus_body_is_the_canonical_encoding),
        cmocka_unit_test(defaults_are_filled),
        cmocka_unit_test(the_prefix_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
