/* Errors of gf_config_load / gf_config_load_string: the exact file:line:column, the
 * dotted key and the text, for every kind of mistake; nothing is returned on error. */
#include <errno.h>
#include <unistd.h>

#include "test_config_util.h"

typedef struct err_case {
    const char *yaml;
    size_t len; /* 0 = strlen */
    gf_err rc;
    int line, col;
    const char *key;  /* err.key, exactly */
    const char *text; /* substring of err.text */
} err_case;

static const char streams_yaml[] = "jetstream:\n"
                                   "  streams:\n"
                                   "    - name: A\n"
                                   "      subjects: [a.>]\n"
                                   "    - name: B\n"
                                   "      subjects: [b.>]\n"
                                   "      maxage: 1h\n";

static const err_case cases[] = {
    /* unknown keys, with and without a suggestion */
    {"nats:\n  servers: [\"nats://127.0.0.1:4222\"]\n  conect_timeout: 2s\n", 0, GF_ERR_CONFIG, 3,
     3, "nats.conect_timeout", "unknown key 'conect_timeout' (did you mean 'connect_timeout'?)"},
    {streams_yaml, 0, GF_ERR_CONFIG, 7, 7, "jetstream.streams[1].maxage",
     "unknown key 'maxage' (did you mean 'max_age'?)"},
    {"jetstream:\n  consumers:\n    - {stream: S, name: c, ack_wait_ms: 5}\n", 0, GF_ERR_CONFIG, 3,
     28, "jetstream.consumers[0].ack_wait_ms", "did you mean 'ack_wait'?"},
    {"natz: {}\n", 0, GF_ERR_CONFIG, 1, 1, "natz", "did you mean 'nats'?"},
    {"function: {}\n", 0, GF_ERR_CONFIG, 1, 1, "function", "did you mean 'functions'?"},
    {"nats:\n  zzzzzz: 1\n", 0, GF_ERR_CONFIG, 2, 3, "nats.zzzzzz", "unknown key 'zzzzzz' in nats"},
    {"log:\n  LEVEL: info\n", 0, GF_ERR_CONFIG, 2, 3, "log.LEVEL", "did you mean 'level'?"},
    /* wrong types */
    {"nats: [a]\n", 0, GF_ERR_CONFIG, 1, 7, "nats", "wrong type: expected mapping, got a list"},
    {"nats:\n  servers: nats://x:4222\n", 0, GF_ERR_CONFIG, 2, 12, "nats.servers",
     "expected list of strings, got a scalar"},
    {"runtime:\n  max_in_flight: {a: 1}\n", 0, GF_ERR_CONFIG, 2, 18, "runtime.max_in_flight",
     "wrong type: expected integer, got a mapping"},
    {"jetstream:\n  streams: {name: A}\n", 0, GF_ERR_CONFIG, 2, 12, "jetstream.streams",
     "expected list of mappings, got a mapping"},
    /* out of range */
    {"jetstream:\n  streams:\n    - name: A\n      subjects: [a]\n      replicas: 6\n", 0,
     GF_ERR_CONFIG, 5, 17, "jetstream.streams[0].replicas", "'6' is out of range (1..5)"},
    {"jetstream:\n  buckets:\n    - name: b\n      history: 65\n", 0, GF_ERR_CONFIG, 4, 16,
     "jetstream.buckets[0].history", "'65' is out of range (1..64)"},
    {"runtime:\n  fetch_expiry: 2h\n", 0, GF_ERR_CONFIG, 2, 17, "runtime.fetch_expiry",
     "'2h' is out of range (10ms..1h)"},
    {"log:\n  level: verbose\n", 0, GF_ERR_CONFIG, 2, 10, "log.level",
     "'verbose' is not one of: debug, info, warn, error, off"},
    {"nats:\n  flush: never\n", 0, GF_ERR_CONFIG, 2, 10, "nats.flush",
     "'never' is not one of: immediate, batched"},
    /* missing required keys point at the mapping that lacks them */
    {"jetstream:\n  streams:\n    - subjects: [a]\n", 0, GF_ERR_CONFIG, 3, 7,
     "jetstream.streams[0].name", "required key is missing"},
    {"jetstream:\n  streams:\n    - name: A\n", 0, GF_ERR_CONFIG, 3, 7,
     "jetstream.streams[0].subjects", "a stream needs subjects, sources or a mirror"},
    {"jetstream:\n  streams:\n    - {name: A, subjects: [a], mirror: B}\n", 0, GF_ERR_CONFIG, 3, 40,
     "jetstream.streams[0].mirror", "no subjects or sources of its own"},
    {"jetstream:\n  streams:\n    - {name: A, sources: [A]}\n", 0, GF_ERR_CONFIG, 3, 26,
     "jetstream.streams[0].sources", "is the stream itself"},
    {"jetstream:\n  streams:\n    - {name: A, sources: [B, B]}\n", 0, GF_ERR_CONFIG, 3, 26,
     "jetstream.streams[0].sources", "repeats entry 0"},
    {"jetstream:\n  streams:\n    - {name: A, sources: [KV_nope]}\n", 0, GF_ERR_CONFIG, 3, 26,
     "jetstream.streams[0].sources", "neither a stream in jetstream.streams nor KV_<bucket>"},
    {"jetstream:\n  streams:\n    - {name: A, mirror: KV_b}\n  buckets:\n    - {name: c}\n", 0,
     GF_ERR_CONFIG, 3, 25, "jetstream.streams[0].mirror", "KV_<bucket>"},
    {"jetstream:\n  streams:\n    - name:\n      subjects: [a]\n", 0, GF_ERR_CONFIG, 3, 7,
     "jetstream.streams[0].name", "required key is missing"},
    /* duplicate keys */
    {"log:\n  level: info\n  level: warn\n", 0, GF_ERR_CONFIG, 3, 3, "log.level",
     "duplicate key (first at line 2)"},
    {"log: {}\nnats: {}\nlog: {}\n", 0, GF_ERR_CONFIG, 3, 1, "log",
     "duplicate key (first at line 1)"},
    {"functions: {}\nfunctions: {}\n", 0, GF_ERR_CONFIG, 2, 1, "functions",
     "duplicate key (first at line 1)"},
    {"functions:\n  echo: {}\n  other: {}\n  echo: {}\n", 0, GF_ERR_CONFIG, 4, 3, "functions.echo",
     "duplicate key (first at line 2)"},
    /* broken YAML: libyaml's problem at its mark */
    {"a: b: c\n", 0, GF_ERR_CONFIG, 1, 5, "", "mapping values are not allowed"},
    {"nats:\n  servers: [a, b\nlog: {}\n", 0, GF_ERR_CONFIG, 3, 4, "",
     "did not find expected ',' or ']' (while parsing a flow sequence at 2:12)"},
    {"nats:\n\tservers: []\n", 0, GF_ERR_CONFIG, 2, 1, "", "cannot start any token"},
    {"log:\n  level: 'info\n", 0, GF_ERR_CONFIG, 3, 1, "", "unexpected end of stream"},
    {"log: \xff\n", 0, GF_ERR_CONFIG, 1, 6, "", "invalid leading UTF-8 octet"},
    {"log:\n  x\0y: 1\n", 10, GF_ERR_CONFIG, 2, 4, "", "control characters are not allowed"},
    /* empty and multi-document files */
    {"", 0, GF_ERR_CONFIG, 0, 0, "", "the configuration is empty"},
    {"# nothing but a comment\n\n", 0, GF_ERR_CONFIG, 0, 0, "", "the configuration is empty"},
    {"---\n", 0, GF_ERR_CONFIG, 2, 1, "", "the configuration is empty"},
    {"log: {}\n---\nlog: {}\n", 0, GF_ERR_CONFIG, 2, 1, "", "more than one YAML document"},
    /* the top level must be a mapping */
    {"- a\n", 0, GF_ERR_CONFIG, 1, 1, "", "expected a mapping of sections"},
    {"hello\n", 0, GF_ERR_CONFIG, 1, 1, "", "expected a mapping of sections"},
    /* anchors, aliases and tags are refused */
    {"log: &x {level: info}\n", 0, GF_ERR_CONFIG, 1, 6, "", "anchors (&name) and aliases"},
    {"log:\n  level: *lvl\n", 0, GF_ERR_CONFIG, 2, 10, "", "anchors (&name) and aliases"},
    {"log:\n  level: &l info\n", 0, GF_ERR_CONFIG, 2, 10, "", "anchors"},
    {"log: !!map {level: info}\n", 0, GF_ERR_CONFIG, 1, 6, "", "explicit tags"},
    {"log:\n  level: !!str info\n", 0, GF_ERR_CONFIG, 2, 10, "", "explicit tags"},
    {"nats:\n  servers: !urls [a]\n", 0, GF_ERR_CONFIG, 2, 12, "", "explicit tags"},
    /* keys must be scalars; NUL bytes in values are refused */
    {"log:\n  ? [a]\n  : 1\n", 0, GF_ERR_CONFIG, 2, 5, "log", "a key must be a scalar"},
    {"runtime:\n  instance_id: \"a\\0b\"\n", 0, GF_ERR_CONFIG, 2, 16, "runtime.instance_id",
     "NUL byte"},
    /* functions: must be a mapping */
    {"functions: [echo]\n", 0, GF_ERR_CONFIG, 1, 12, "functions",
     "expected a mapping of function names"},
};

static int setup(void **state)
{
    unset_gamefn_env();
    return 0;
}

static void table_of_cases(void **state)
{
    int failures = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const err_case *c = &cases[i];
        gf_config *cfg = (gf_config *)&failures; /* must come back NULL */
        gf_config_error err;
        size_t len = c->len ? c->len : strlen(c->yaml);
        gf_err rc = gf_config_load_string("t.yaml", c->yaml, len, NULL, &cfg, &err);
        if (rc != c->rc || cfg != NULL || err.line != c->line || err.column != c->col ||
            strcmp(err.key, c->key) != 0 || !strstr(err.text, c->text)) {
            print_error("case %zu: got rc %d '%s' (key '%s' %d:%d)\n      want rc %d '%s' "
                        "(key '%s' %d:%d)\n",
                        i, rc, err.message, err.key, err.line, err.column, c->rc, c->text, c->key,
                        c->line, c->col);
            failures++;
        }
        gf_config_free(cfg != (gf_config *)&failures ? cfg : NULL);
    }
    assert_int_equal(failures, 0);
}

static void message_is_file_line_column_key_text(void **state)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    assert_int_equal(gf_config_load_string("deploy/gamefn.yaml", streams_yaml, strlen(streams_yaml),
                                           NULL, &cfg, &err),
                     GF_ERR_CONFIG);
    assert_null(cfg);
    assert_string_equal(err.message, "deploy/gamefn.yaml:7:7: key 'jetstream.streams[1].maxage': "
                                     "unknown key 'maxage' (did you mean 'max_age'?)");
    assert_string_equal(err.file, "deploy/gamefn.yaml");

    /* Without a place or a key, those parts are left out. */
    assert_int_equal(gf_config_load_string("e.yaml", "", 0, NULL, &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.message, "e.yaml: the configuration is empty");
}

static void control_bytes_never_reach_the_message(void **state)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    const char *yaml = "log:\n  \"bad\\x1b[31mkey\": 1\n";
    assert_int_equal(gf_config_load_string("t.yaml", yaml, strlen(yaml), NULL, &cfg, &err),
                     GF_ERR_CONFIG);
    assert_null(strchr(err.message, '\x1b'));
    assert_has(err.message, "unknown key 'bad?[31mkey'");
}

static void load_reads_files_and_reports_io_errors(void **state)
{
    char dir[] = "/tmp/gamefn-config-XXXXXX";
    char path[256];
    gf_config *cfg = NULL;
    gf_config_error err;
    assert_non_null(mkdtemp(dir));

    /* missing file */
    snprintf(path, sizeof(path), "%s/missing.yaml", dir);
    assert_int_equal(gf_config_load(path, NULL, &cfg, &err), GF_ERR_IO);
    assert_null(cfg);
    assert_string_equal(err.file, path);
    assert_has(err.message, path);
    assert_has(err.message, strerror(ENOENT));

    /* a directory */
    assert_int_equal(gf_config_load(dir, NULL, &cfg, &err), GF_ERR_IO);
    assert_has(err.message, strerror(EISDIR));

    /* a file with an error: the path is the file name in the message */
    snprintf(path, sizeof(path), "%s/bad.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("log:\n  level: loud\n", f);
    fclose(f);
    assert_int_equal(gf_config_load(path, NULL, &cfg, &err), GF_ERR_CONFIG);
    char want[300];
    snprintf(want, sizeof(want), "%s:2:10: key 'log.level': ", path);
    assert_true(strncmp(err.message, want, strlen(want)) == 0);

    /* a good file loads, and remembers its path */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("log:\n  level: warn\n", f);
    fclose(f);
    assert_int_equal(gf_config_load(path, NULL, &cfg, &err), GF_OK);
    assert_string_equal(cfg->path, path);
    assert_int_equal(cfg->log.level, GF_LOG_WARN);
    gf_config_free(cfg);
    unlink(path);
    rmdir(dir);

    /* bad arguments */
    assert_int_equal(gf_config_load(NULL, NULL, &cfg, &err), GF_ERR_INVALID);
    assert_int_equal(gf_config_load("x", NULL, NULL, &err), GF_ERR_INVALID);
    assert_int_equal(gf_config_load_string("t", "log: {}", 7, NULL, NULL, NULL), GF_ERR_INVALID);
    gf_config_section no_table = {.name = "echo", .table = NULL};
    assert_int_equal(gf_config_load_string("t", "log: {}", 7, &no_table, &cfg, &err),
                     GF_ERR_INVALID);
    assert_null(cfg);
    gf_config_free(NULL);
}

/* A table with a validate hook: lo <= hi. */
typedef struct range_cfg {
    int64_t lo, hi;
} range_cfg;

static bool range_validate(const void *obj, gf_cfg_problem *p)
{
    const range_cfg *r = obj;
    if (r->lo > r->hi) {
        p->key = r->hi == 99 ? NULL : "hi";
        snprintf(p->text, sizeof(p->text), "hi must not be below lo");
        return false;
    }
    return true;
}

static const gf_cfg_field range_rows[] = {
    {.key = "lo", .type = GF_CFG_INT, .offset = offsetof(range_cfg, lo), .def = "0"},
    {.key = "hi", .type = GF_CFG_INT, .offset = offsetof(range_cfg, hi), .def = "10"},
};
static const gf_cfg_table range_table = {"range", sizeof(range_cfg), range_rows, 2, range_validate};

static void validate_hook_points_at_the_key(void **state)
{
    range_cfg out;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    const char *good = "lo: 1\nhi: 2\n";
    assert_int_equal(
        gf_config_parse_table("r.yaml", good, strlen(good), &range_table, &out, &arena, &err),
        GF_OK);
    gf_config_arena_free(arena);

    const char *bad = "lo: 5\nhi: 2\n";
    assert_int_equal(
        gf_config_parse_table("r.yaml", bad, strlen(bad), &range_table, &out, &arena, &err),
        GF_ERR_CONFIG);
    assert_string_equal(err.message, "r.yaml:2:5: key 'hi': hi must not be below lo");

    /* The key is absent (default applied): the error points at the mapping. */
    const char *absent = "\nlo: 50\n";
    assert_int_equal(
        gf_config_parse_table("r.yaml", absent, strlen(absent), &range_table, &out, &arena, &err),
        GF_ERR_CONFIG);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.column, 1);
    assert_string_equal(err.key, "hi");

    /* No key named: the object's own place. */
    const char *whole = "lo: 100\nhi: 99\n";
    assert_int_equal(
        gf_config_parse_table("r.yaml", whole, strlen(whole), &range_table, &out, &arena, &err),
        GF_ERR_CONFIG);
    assert_int_equal(err.line, 1);
    assert_string_equal(err.key, "");
}

/* The shared name checks of validate hooks: the key they point at and one wording. */
static void bucket_and_stream_names_are_worded_once(void **state)
{
    gf_cfg_problem p = {0};
    assert_true(gf_cfg_bucket_ok("dlq_reasons", "bucket", &p));
    assert_true(gf_cfg_stream_ok("EVENTS", "streams", &p));
    assert_null(p.key);
    assert_false(gf_cfg_bucket_ok("a.b", "lease_bucket", &p));
    assert_string_equal(p.key, "lease_bucket");
    assert_has(p.text, "bucket name may hold only letters, digits, '_' and '-'");
    assert_false(gf_cfg_stream_ok("", "streams", &p));
    assert_string_equal(p.key, "streams");
    assert_string_equal(p.text, "stream name is empty");
    assert_false(gf_cfg_stream_ok(NULL, "gaps", &p));
    assert_string_equal(p.text, "stream name is empty");
}

static void bad_default_in_a_table_is_reported(void **state)
{
    typedef struct one {
        int64_t t;
    } one;
    static const gf_cfg_field rows[] = {
        {.key = "t", .type = GF_CFG_DURATION, .offset = offsetof(one, t), .def = "5x"},
    };
    static const gf_cfg_table table = {"one", sizeof(one), rows, 1, NULL};
    one out;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    assert_int_equal(gf_config_parse_table("o.yaml", "", 0, &table, &out, &arena, &err),
                     GF_ERR_CONFIG);
    assert_has(err.text, "invalid default in the table");
    assert_has(err.text, "5x");
    assert_string_equal(err.key, "t");
    /* A value in the file replaces the default, which is then never read. */
    assert_int_equal(gf_config_parse_table("o.yaml", "t: 1s", 5, &table, &out, &arena, &err),
                     GF_OK);
    assert_int_equal(out.t, 1000);
    gf_config_arena_free(arena);
}

static void nesting_is_bounded(void **state)
{
    enum { DEPTH = 5000 };
    char *deep = malloc(2 * DEPTH + 8);
    assert_non_null(deep);
    memcpy(deep, "x: ", 3);
    memset(deep + 3, '[', DEPTH);
    memset(deep + 3 + DEPTH, ']', DEPTH);
    deep[3 + 2 * DEPTH] = '\0';
    gf_config *cfg = NULL;
    gf_config_error err;
    assert_int_equal(gf_config_load_string("t.yaml", deep, strlen(deep), NULL, &cfg, &err),
                     GF_ERR_CONFIG);
    assert_has(err.text, "nested too deeply");
    free(deep);

    /* Just inside the limit is only refused for its meaning, not its depth. */
    char ok[300];
    snprintf(ok, sizeof(ok), "x: ");
    for (int i = 0; i < 62; i++)
        strcat(ok, "[");
    for (int i = 0; i < 62; i++)
        strcat(ok, "]");
    assert_int_equal(gf_config_load_string("t.yaml", ok, strlen(ok), NULL, &cfg, &err),
                     GF_ERR_CONFIG);
    assert_has(err.text, "unknown key 'x'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(table_of_cases, setup),
        cmocka_unit_test_setup(message_is_file_line_column_key_text, setup),
        cmocka_unit_test_setup(control_bytes_never_reach_the_message, setup),
        cmocka_unit_test_setup(load_reads_files_and_reports_io_errors, setup),
        cmocka_unit_test(validate_hook_points_at_the_key),
        cmocka_unit_test(bucket_and_stream_names_are_worded_once),
        cmocka_unit_test(bad_default_in_a_table_is_reported),
        cmocka_unit_test_setup(nesting_is_bounded, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
