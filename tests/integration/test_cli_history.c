/*
 * `gamefn history <player>` on a real nats-server with the event partition mapping: a
 * player's events, interleaved with another player's of the same partition, come out in
 * order and alone (as lines and as JSON), --limit keeps the newest, --since filters by
 * stored time, an undecodable payload is shown as such, and bad arguments are refused
 * with a clear error and exit code 2.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "obs_support.h"

static void options(gf_fnenv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->server_config = OBS_MAPPING;
    o->streams = "    - name: EVENTS\n"
                 "      subjects: [\"gamefn.v1.evp.>\"]\n";
}

/* Event seq of a player: a kill, score, zone change, crash or generic event by kind. */
static void publish_typed(gf_fnenv *env, const char *player, uint64_t seq, int kind)
{
    static const char *types[] = {"kill", "score", "zone_change", "crash", "login"};
    Gamefn__V1__GameEvent ev;
    obs_payload payload;
    char id[64];
    obs_event_init(&ev, id, sizeof id, "gs-h", seq, player, types[kind]);
    obs_event_payload(&ev, kind, &payload);
    assert_int_equal(obs_publish(env->js, &ev, true), 0);
}

/* The source seqs ("gs-h#<n>") of the lines of out, in order. */
static size_t seqs_of(const char *text, uint64_t *seqs, size_t max)
{
    size_t n = 0;
    for (const char *p = strstr(text, "gs-h#"); p && n < max; p = strstr(p + 1, "gs-h#"))
        seqs[n++] = strtoull(p + 5, NULL, 10);
    return n;
}

static int run(gf_fnenv *env, cli_result *out, const char *a, const char *b, const char *c,
               const char *d)
{
    const char *args[] = {"history", a, b, c, d, NULL};
    *out = cli_runv(env, NULL, args);
    return out->code;
}

static void prints_one_players_events_in_order(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    options(&o);
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    obs_provision(&env);
    char alice[32], bob[32];
    obs_player_in(3, "hp", 0, alice, sizeof alice); /* same partition */
    obs_player_in(3, "hp", 1, bob, sizeof bob);
    uint64_t want[30];
    size_t nwant = 0;
    for (uint64_t s = 1; s <= 60; s++) {
        bool mine = s % 2 == 1;
        publish_typed(&env, mine ? alice : bob, s, (int)(s % 5));
        if (mine)
            want[nwant++] = s;
    }

    cli_result out;
    uint64_t got[64];
    assert_int_equal(run(&env, &out, alice, NULL, NULL, NULL), 0);
    assert_int_equal(seqs_of(out.out, got, 64), 30);
    assert_memory_equal(got, want, sizeof want);
    assert_non_null(
        strstr(out.out, "victim=p-victim weapon=\"rail \\\"gun\\\"\" headshot distance=12.5m"));
    assert_non_null(strstr(out.out, "delta=+25 board=global reason=\"capture\""));
    assert_non_null(strstr(out.out, "from=\"spawn\" to=\"mid\""));
    assert_non_null(strstr(out.out, "signature=\"SIGSEGV in render\""));
    cli_result_free(&out);

    /* JSON: the same events, each with its fields */
    assert_int_equal(run(&env, &out, alice, "--json", NULL, NULL), 0);
    json_t *root = cli_json_line(&out);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "partition")), 3);
    assert_int_equal(json_integer_value(json_object_get(root, "total")), 30);
    json_t *events = json_object_get(root, "events");
    assert_int_equal(json_array_size(events), 30);
    uint64_t last_seq = 0;
    for (size_t i = 0; i < 30; i++) {
        json_t *e = json_array_get(events, i);
        assert_string_equal(json_string_value(json_object_get(e, "player_id")), alice);
        assert_int_equal(json_integer_value(json_object_get(e, "source_seq")), want[i]);
        uint64_t seq = (uint64_t)json_integer_value(json_object_get(e, "stream_seq"));
        assert_true(seq > last_seq);
        last_seq = seq;
    }
    json_decref(root);
    cli_result_free(&out);

    /* --limit: the newest, oldest first */
    assert_int_equal(run(&env, &out, alice, "--limit", "5", NULL), 0);
    assert_int_equal(seqs_of(out.out, got, 64), 5);
    assert_memory_equal(got, want + 25, 5 * sizeof *want);
    assert_non_null(strstr(out.out, "(25 earlier events not shown: --limit)"));
    cli_result_free(&out);

    /* --since: a duration ago, and a time after everything */
    assert_int_equal(run(&env, &out, alice, "--since", "1h", NULL), 0);
    assert_int_equal(seqs_of(out.out, got, 64), 30);
    cli_result_free(&out);
    assert_int_equal(run(&env, &out, alice, "--since", "2099-01-01T00:00:00Z", NULL), 0);
    assert_non_null(strstr(out.out, "no events for player"));
    cli_result_free(&out);

    /* an undecodable payload is shown for what it is */
    char subject[96];
    snprintf(subject, sizeof subject, "gamefn.v1.event.%s.kill", alice);
    assert_int_equal(js_Publish(NULL, env.js, subject, "\xff\xff", 2, NULL, NULL), NATS_OK);
    assert_int_equal(run(&env, &out, alice, "--limit", "1", NULL), 0);
    assert_non_null(strstr(out.out, "undecodable payload, 2 bytes"));
    cli_result_free(&out);

    assert_int_equal(run(&env, &out, "nobody", NULL, NULL, NULL), 0);
    assert_non_null(strstr(out.out, "no events for player nobody"));
    cli_result_free(&out);

    static const struct {
        const char *a, *b, *c;
        int code;
        const char *says;
    } bad[] = {
        {NULL, NULL, NULL, 2, "which player?"},
        {"a.b", NULL, NULL, 2, "player id"},
        {"p1", "p2", NULL, 2, "one player id only"},
        {"p1", "--limit", "0", 2, "--limit must be an integer from 1 to 1000000"},
        {"p1", "--since", "yesterday", 2, "--since takes a duration ago"},
        {"p1", "--stream", "a*", 2, "--stream: stream name"},
        {"p1", "--stream", "NOPE", 4, "stream NOPE: not found"}, /* an unknown name */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run(&env, &out, bad[i].a, bad[i].b, bad[i].c, NULL), bad[i].code);
        if (!strstr(out.out, bad[i].says))
            fail_msg("'%s' does not say '%s'", out.out, bad[i].says);
        cli_result_free(&out);
    }
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prints_one_players_events_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
