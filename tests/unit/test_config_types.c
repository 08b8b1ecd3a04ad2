/* Every value type of the table walker: good, boundary and bad values, defaults,
 * lists, nested objects and lists of objects (gf_config_parse_table + sink_table). */
#include <math.h>

#include "test_config_util.h"

typedef struct type_case {
    const char *yaml;
    size_t off; /* field checked on success */
    char kind;  /* 'i' int64, 'd' double, 'b' bool, 'e' enum int, 's' string, 'n' no check */
    int64_t i;
    double d;
    const char *s;
    const char *err; /* substring of err.text; NULL = must succeed */
    const char *key; /* err.key */
    int line, col;   /* err position */
} type_case;

/* clang-format off */
#define OK_I(y, f, v) {y, offsetof(sink, f), 'i', v, 0, NULL, NULL, NULL, 0, 0}
#define OK_D(y, f, v) {y, offsetof(sink, f), 'd', 0, v, NULL, NULL, NULL, 0, 0}
#define OK_B(y, f, v) {y, offsetof(sink, f), 'b', v, 0, NULL, NULL, NULL, 0, 0}
#define OK_E(y, f, v) {y, offsetof(sink, f), 'e', v, 0, NULL, NULL, NULL, 0, 0}
#define OK_S(y, f, v) {y, offsetof(sink, f), 's', 0, 0, v, NULL, NULL, 0, 0}
#define BAD(y, k, l, c, e) {y, 0, 'n', 0, 0, NULL, e, k, l, c}
/* clang-format on */

static const type_case cases[] = {
    /* string */
    OK_S("s: abc", s, "abc"),
    OK_S("s: \"a b: c\"", s, "a b: c"),
    OK_S("s: ''", s, ""),
    OK_S("s: 123", s, "123"),
    OK_S("s: true", s, "true"),
    OK_S("s: \"null\"", s, "null"),
    OK_S("s: \"tab\\there\"", s, "tab\there"),
    OK_S("s:", s, "hello"),
    OK_S("s: ~", s, "hello"),
    OK_S("s: null", s, "hello"),
    BAD("s: [a]", "s", 1, 4, "wrong type: expected string, got a list"),
    BAD("s: {a: 1}", "s", 1, 4, "wrong type: expected string, got a mapping"),
    BAD("s: \"a\\0b\"", "s", 1, 4, "NUL byte"),
    /* int */
    OK_I("i: 0", i, 0),
    OK_I("i: -10", i, -10),
    OK_I("i: 100", i, 100),
    OK_I("i: +7", i, 7),
    OK_I("i: 007", i, 7),
    OK_I("i: \"42\"", i, 42),
    OK_I("i:", i, 5),
    BAD("i: -11", "i", 1, 4, "'-11' is out of range (-10..100)"),
    BAD("i: 101", "i", 1, 4, "'101' is out of range (-10..100)"),
    BAD("i: 1.5", "i", 1, 4, "'1.5' is not an integer"),
    BAD("i: 1e3", "i", 1, 4, "not an integer"),
    BAD("i: 0x10", "i", 1, 4, "not an integer"),
    BAD("i: 1_000", "i", 1, 4, "not an integer"),
    BAD("i: ''", "i", 1, 4, "not an integer"),
    BAD("i: \"-\"", "i", 1, 4, "not an integer"),
    BAD("i: 99999999999999999999", "i", 1, 4, "not an integer"),
    BAD("i: [1]", "i", 1, 4, "wrong type: expected integer, got a list"),
    /* double */
    OK_D("d: 0", d, 0),
    OK_D("d: 10", d, 10),
    OK_D("d: 2.5", d, 2.5),
    OK_D("d: 1e0", d, 1),
    OK_D("d: .5", d, 0.5),
    OK_D("d:", d, 1.5),
    BAD("d: 10.0001", "d", 1, 4, "out of range (0..10)"),
    BAD("d: -1", "d", 1, 4, "out of range (0..10)"),
    BAD("d: .nan", "d", 1, 4, "not a finite number"),
    BAD("d: NaN", "d", 1, 4, "not a finite number"),
    BAD("d: .inf", "d", 1, 4, "not a finite number"),
    BAD("d: -.Inf", "d", 1, 4, "not a finite number"),
    BAD("d: infinity", "d", 1, 4, "not a finite number"),
    BAD("d: 1e999", "d", 1, 4, "not a finite number"),
    BAD("d: 0x1p3", "d", 1, 4, "not a number"),
    BAD("d: 1,5", "d", 1, 4, "not a number"),
    BAD("d: e", "d", 1, 4, "not a number"),
    BAD("d: info", "d", 1, 4, "'info' is not a number"),
    BAD("d: -nan", "d", 1, 4, "not a finite number"),
    BAD("d: 1.2.3", "d", 1, 4, "not a number"),
    /* bool */
    OK_B("b: true", b, true),
    OK_B("b: false", b, false),
    OK_B("b: \"true\"", b, true),
    OK_B("b:", b, false),
    BAD("b: yes", "b", 1, 4, "'yes' is not a boolean"),
    BAD("b: on", "b", 1, 4, "not a boolean"),
    BAD("b: True", "b", 1, 4, "not a boolean"),
    BAD("b: 1", "b", 1, 4, "not a boolean"),
    BAD("b: {}", "b", 1, 4, "wrong type: expected boolean, got a mapping"),
    /* duration */
    OK_I("dur: 1ms", dur, 1),
    OK_I("dur: 1h", dur, 3600000),
    OK_I("dur: \"5s\"", dur, 5000),
    OK_I("dur: 59m59s999ms", dur, 3599999),
    OK_I("dur:", dur, 250),
    BAD("dur: 0", "dur", 1, 6, "'0' is out of range (1ms..1h)"),
    BAD("dur: 1h1ms", "dur", 1, 6, "out of range (1ms..1h)"),
    BAD("dur: 5", "dur", 1, 6, "has no unit"),
    BAD("dur: -5s", "dur", 1, 6, "negative"),
    BAD("dur: 1.5s", "dur", 1, 6, "has a fraction"),
    BAD("dur: 5sec", "dur", 1, 6, "unknown unit"),
    BAD("dur: s", "dur", 1, 6, "not a duration"),
    BAD("dur: 5 s", "dur", 1, 6, "unknown unit"),
    /* size */
    OK_I("size: 0", size, 0),
    OK_I("size: 1MiB", size, 1048576),
    OK_I("size: 512", size, 512),
    OK_I("size: 1KB", size, 1000),
    OK_I("size:", size, 1024),
    BAD("size: 1048577", "size", 1, 7, "out of range (0..1MiB)"),
    BAD("size: -1", "size", 1, 7, "negative"),
    BAD("size: 1K", "size", 1, 7, "unknown unit"),
    /* enum */
    OK_E("e: red", e, SINK_RED),
    OK_E("e: blue", e, SINK_BLUE),
    OK_E("e:", e, SINK_GREEN),
    BAD("e: Red", "e", 1, 4, "'Red' is not one of: red, green, blue"),
    BAD("e: [red]", "e", 1, 4, "wrong type"),
    /* string list (bounds are on the length) */
    OK_I("list: []", list_len, 0),
    OK_I("list: [x, y, z]", list_len, 3),
    OK_I("list:", list_len, 2),
    BAD("list: [w, x, y, z]", "list", 1, 7, "list has 4 entries; allowed: 0..3 entries"),
    BAD("list: x", "list", 1, 7, "wrong type: expected list of strings, got a scalar"),
    BAD("list: [a, [b]]", "list[1]", 1, 11, "wrong type: expected string"),
    BAD("list:\n  - a\n  -\n", "list[1]", 3, 4, "list entry is empty"),
    /* duration list */
    OK_I("durs: [1s, 5s, 30s]", durs_len, 3),
    OK_I("durs: [0]", durs_len, 1),
    OK_I("durs:", durs_len, 0),
    BAD("durs: [1s, 5]", "durs[1]", 1, 12, "has no unit"),
    BAD("durs: [1s, 1s, 1s, 1s, 1s]", "durs", 1, 7, "5 entries; allowed: 0..4 entries"),
    BAD("durs: 1s", "durs", 1, 7, "expected list of durations"),
    /* object */
    OK_I("obj: {x: 3, y: hi}", obj.x, 3),
    OK_S("obj: {x: 3, y: hi}", obj.y, "hi"),
    OK_I("obj: {}", obj.x, 7),
    OK_I("obj:", obj.x, 7),
    OK_I("i: 1", obj.x, 7),
    BAD("obj: 5", "obj", 1, 6, "wrong type: expected mapping, got a scalar"),
    BAD("obj:\n  z: 1\n", "obj.z", 2, 3, "unknown key 'z'"),
    BAD("obj:\n  x: 1\n  x: 2\n", "obj.x", 3, 3, "duplicate key (first at line 2)"),
    /* list of objects */
    OK_I("kids: [{name: a}, {name: b, n: 9}]", kids_len, 2),
    OK_I("kids: []", kids_len, 0),
    BAD("kids:\n  - name: a\n  - n: 2\n", "kids[1].name", 3, 5, "required key is missing"),
    BAD("kids:\n  - name: a\n  - name:\n", "kids[1].name", 3, 5, "required key is missing"),
    BAD("kids:\n  - name: a\n    n: 10\n", "kids[0].n", 3, 8, "out of range (1..9)"),
    BAD("kids: [5]", "kids[0]", 1, 8, "wrong type: expected mapping, got a scalar"),
    BAD("kids: {name: a}", "kids", 1, 7, "expected list of mappings, got a mapping"),
    BAD("kids: [~]", "kids[0].name", 1, 8, "required key is missing"),
    BAD("kids: [{name: a}, {name: b}, {name: c}, {name: d}, {name: e}, {name: f}]", "kids", 1, 7,
        "6 entries; allowed: 0..5 entries"),
    /* structure */
    BAD("nope: 1", "nope", 1, 1, "unknown key 'nope'"),
    BAD("[1, 2]", "", 1, 1, "wrong type: expected mapping, got a list"),
    BAD("? [a]\n: 1\n", "", 1, 3, "a key must be a scalar"),
};

static void check_case(const type_case *c)
{
    sink out;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    gf_err rc = sink_parse(c->yaml, &out, &arena, &err);
    if (!c->err) {
        if (rc != GF_OK)
            fail_msg("'%s': unexpected error: %s", c->yaml, err.message);
        const unsigned char *p = (const unsigned char *)&out + c->off;
        if (c->kind == 'i') {
            int64_t v;
            if (c->off == offsetof(sink, list_len) || c->off == offsetof(sink, durs_len) ||
                c->off == offsetof(sink, kids_len)) {
                size_t n;
                memcpy(&n, p, sizeof(n));
                v = (int64_t)n;
            } else {
                memcpy(&v, p, sizeof(v));
            }
            if (v != c->i)
                fail_msg("'%s': got %lld, want %lld", c->yaml, (long long)v, (long long)c->i);
        } else if (c->kind == 'd') {
            double v;
            memcpy(&v, p, sizeof(v));
            if (v != c->d)
                fail_msg("'%s': got %g, want %g", c->yaml, v, c->d);
        } else if (c->kind == 'b') {
            bool v;
            memcpy(&v, p, sizeof(v));
            assert_int_equal(v, c->i);
        } else if (c->kind == 'e') {
            int v;
            memcpy(&v, p, sizeof(v));
            assert_int_equal(v, c->i);
        } else if (c->kind == 's') {
            const char *v;
            memcpy(&v, p, sizeof(v));
            assert_non_null(v);
            assert_string_equal(v, c->s);
        }
        gf_config_arena_free(arena);
        return;
    }
    if (rc != GF_ERR_CONFIG)
        fail_msg("'%s': rc %d, want GF_ERR_CONFIG", c->yaml, rc);
    if (!strstr(err.text, c->err) || strcmp(err.key, c->key) != 0 || err.line != c->line ||
        err.column != c->col)
        fail_msg("'%s': got %s (key '%s', %d:%d); want '%s' at key '%s' %d:%d", c->yaml,
                 err.message, err.key, err.line, err.column, c->err, c->key, c->line, c->col);
    assert_string_equal(err.file, "t.yaml");
}

static void table_of_cases(void **state)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_case(&cases[i]);
}

static void empty_input_gives_every_default(void **state)
{
    static const char *const inputs[] = {"", "{}", "# only a comment\n", "---\n", "~"};
    for (size_t k = 0; k < sizeof(inputs) / sizeof(inputs[0]); k++) {
        sink out;
        struct gf_config_arena *arena = NULL;
        gf_config_error err;
        assert_int_equal(sink_parse(inputs[k], &out, &arena, &err), GF_OK);
        assert_string_equal(out.s, "hello");
        assert_int_equal(out.i, 5);
        assert_true(out.d == 1.5);
        assert_false(out.b);
        assert_int_equal(out.dur, 250);
        assert_int_equal(out.size, 1024);
        assert_int_equal(out.e, SINK_GREEN);
        assert_int_equal(out.list_len, 2);
        assert_string_equal(out.list[0], "a");
        assert_string_equal(out.list[1], "b");
        assert_null(out.durs);
        assert_int_equal(out.durs_len, 0);
        assert_int_equal(out.obj.x, 7);
        assert_null(out.obj.y);
        assert_null(out.kids);
        assert_int_equal(out.kids_len, 0);
        gf_config_arena_free(arena);
    }
}

static void lists_hold_their_values(void **state)
{
    const char *yaml = "list:\n  - one\n  - \"two words\"\n"
                       "durs: [1s, 5s, 30s]\n"
                       "kids:\n  - name: a\n  - name: b\n    n: 9\n";
    sink out;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    assert_int_equal(sink_parse(yaml, &out, &arena, &err), GF_OK);
    assert_int_equal(out.list_len, 2);
    assert_string_equal(out.list[0], "one");
    assert_string_equal(out.list[1], "two words");
    assert_int_equal(out.durs_len, 3);
    assert_int_equal(out.durs[0], 1000);
    assert_int_equal(out.durs[1], 5000);
    assert_int_equal(out.durs[2], 30000);
    assert_int_equal(out.kids_len, 2);
    assert_string_equal(out.kids[0].name, "a");
    assert_int_equal(out.kids[0].n, 1); /* default inside a list item */
    assert_string_equal(out.kids[1].name, "b");
    assert_int_equal(out.kids[1].n, 9);
    gf_config_arena_free(arena);
}

static void message_has_the_documented_shape(void **state)
{
    sink out;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    assert_int_equal(sink_parse("s: x\ni: 101\n", &out, &arena, &err), GF_ERR_CONFIG);
    assert_string_equal(err.message, "t.yaml:2:4: key 'i': '101' is out of range (-10..100)");
    assert_string_equal(err.text, "'101' is out of range (-10..100)");
}

static void parse_table_refuses_bad_arguments(void **state)
{
    sink out;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    assert_int_equal(gf_config_parse_table("t", "", 0, NULL, &out, &arena, &err), GF_ERR_INVALID);
    assert_int_equal(gf_config_parse_table("t", "", 0, &sink_table, NULL, &arena, &err),
                     GF_ERR_INVALID);
    assert_int_equal(gf_config_parse_table("t", "", 0, &sink_table, &out, NULL, &err),
                     GF_ERR_INVALID);
    assert_int_equal(gf_config_parse_table("t", NULL, 3, &sink_table, &out, &arena, &err),
                     GF_ERR_INVALID);
    /* err may be NULL */
    assert_int_equal(gf_config_parse_table(NULL, "i: 500", 6, &sink_table, &out, &arena, NULL),
                     GF_ERR_CONFIG);
    assert_null(arena);
    gf_config_arena_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_of_cases),
        cmocka_unit_test(empty_input_gives_every_default),
        cmocka_unit_test(lists_hold_their_values),
        cmocka_unit_test(message_has_the_documented_shape),
        cmocka_unit_test(parse_table_refuses_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
