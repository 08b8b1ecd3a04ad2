/* `gamefn emit`'s event parser (tools/gamefn/emit_event.h): flags' keys, logfmt lines
 * with quotes and escapes, blank and comment lines, and every malformed form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "emit_event.h"

static void keys_fill_the_event(void **state)
{
    gf_emit_event e;
    gf_emit_event_init(&e);
    char why[200];
    char v1[] = "p-alice", v2[] = "kill", v3[] = "12.5", v4[] = "true", v5[] = "-42",
         v6[] = "level=7", v7[] = "1796083200000";
    assert_int_equal(gf_emit_set(&e, "player", v1, why, sizeof why), 0);
    assert_int_equal(gf_emit_set(&e, "type", v2, why, sizeof why), 0);
    assert_int_equal(gf_emit_set(&e, "distance", v3, why, sizeof why), 0);
    assert_int_equal(gf_emit_set(&e, "headshot", v4, why, sizeof why), 0);
    assert_int_equal(gf_emit_set(&e, "delta", v5, why, sizeof why), 0);
    assert_int_equal(gf_emit_set(&e, "attr", v6, why, sizeof why), 0);
    assert_int_equal(gf_emit_set(&e, "occurred", v7, why, sizeof why), 0);
    assert_string_equal(e.ev.player_id, "p-alice");
    assert_string_equal(e.ev.type, "kill");
    assert_true(e.ev.kill.distance_m == 12.5f);
    assert_true(e.ev.kill.headshot);
    assert_int_equal(e.ev.score.delta, -42);
    assert_int_equal(e.ev.generic.attributes_len, 1);
    assert_string_equal(e.ev.generic.attributes[0].key, "level");
    assert_string_equal(e.ev.generic.attributes[0].value, "7");
    assert_int_equal(e.ev.occurred_unix_ms, 1796083200000);

    static const struct {
        const char *key, *value, *why;
    } bad[] = {
        {"delta", "1.5", "not an integer"},
        {"delta", "", "not an integer"},
        {"delta", "99999999999999999999", "not an integer"},
        {"distance", "nan", "not a number"},
        {"distance", "1e999", "not a number"},
        {"headshot", "yes", "not true or false"},
        {"attr", "novalue", "not KEY=VALUE"},
        {"colour", "red", "unknown key"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char value[64];
        snprintf(value, sizeof value, "%s", bad[i].value);
        assert_int_equal(gf_emit_set(&e, bad[i].key, value, why, sizeof why), -1);
        if (strstr(why, bad[i].why) == NULL)
            fail_msg("%s=%s: '%s'", bad[i].key, bad[i].value, why);
    }
    /* One attribute more than the wire allows is still parsed: validation refuses it. */
    gf_emit_event_init(&e);
    char attrs[GF_EMIT_ATTRS_MAX + 1][16];
    for (int i = 0; i < GF_EMIT_ATTRS_MAX; i++) {
        snprintf(attrs[i], sizeof attrs[i], "k%d=v", i);
        assert_int_equal(gf_emit_set(&e, "attr", attrs[i], why, sizeof why), 0);
    }
    snprintf(attrs[GF_EMIT_ATTRS_MAX], sizeof attrs[0], "k=v");
    assert_int_equal(gf_emit_set(&e, "attr", attrs[GF_EMIT_ATTRS_MAX], why, sizeof why), -1);
}

static void lines(void **state)
{
    gf_emit_event e;
    char why[200];
    char l1[] = "player=p-alice type=kill victim=p-bob weapon=\"rocket launcher\" headshot=true\n";
    assert_int_equal(gf_emit_line(l1, &e, why, sizeof why), 0);
    assert_string_equal(e.ev.kill.weapon, "rocket launcher");
    assert_string_equal(e.ev.kill.victim_player_id, "p-bob");
    assert_true(e.ev.kill.headshot);

    char l2[] =
        "  type=server_crash\tsignature=0xdead stack=\"frame 1\\nframe \\\"2\\\"\\t\\\\\"\r\n";
    assert_int_equal(gf_emit_line(l2, &e, why, sizeof why), 0);
    assert_string_equal(e.ev.crash.stack, "frame 1\nframe \"2\"\t\\");
    assert_null(e.ev.player_id);

    char l3[] = "player=p2 type=level_up attr=level=7 attr=mode=ranked data=\"\"";
    assert_int_equal(gf_emit_line(l3, &e, why, sizeof why), 0);
    assert_int_equal(e.ev.generic.attributes_len, 2);
    assert_string_equal(e.ev.generic.attributes[1].value, "ranked");
    assert_string_equal((const char *)e.ev.generic.data, "");

    char blank[] = "   \n", comment[] = "# player=p1 type=kill\n", empty[] = "";
    assert_int_equal(gf_emit_line(blank, &e, why, sizeof why), 1);
    assert_int_equal(gf_emit_line(comment, &e, why, sizeof why), 1);
    assert_int_equal(gf_emit_line(empty, &e, why, sizeof why), 1);

    static const struct {
        const char *line, *why;
    } bad[] = {
        {"player", "not key=value"},
        {"player=p1 kill", "not key=value"},
        {"weapon=\"open", "unterminated"},
        {"weapon=\"a\"b", "followed by a space"},
        {"weapon=\"a\\qb\"", "unknown escape"},
        {"delta=1x", "not an integer"},
        {"shape=round", "unknown key"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "%s", bad[i].line);
        assert_int_equal(gf_emit_line(line, &e, why, sizeof why), -1);
        if (strstr(why, bad[i].why) == NULL)
            fail_msg("'%s': '%s'", bad[i].line, why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_fill_the_event),
        cmocka_unit_test(lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
