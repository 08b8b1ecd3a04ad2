/* The reference printer and the table self-check: every runtime table passes
 * gf_config_table_check, prints through gf_config_write_reference, and docs/CONFIG.md
 * holds exactly what the tables print (run with --print to regenerate the blocks). */
#include "test_config_util.h"

typedef struct doc_section {
    const char *id;     /* marker name in docs/CONFIG.md */
    const char *schema; /* gf_config_schema() name */
    const char *prefix;
} doc_section;

static const doc_section doc_sections[] = {
    {"nats", "nats", "nats"},
    {"log", "log", "log"},
    {"runtime", "runtime", "runtime"},
    {"streams", "stream", "jetstream.streams[]"},
    {"consumers", "consumer", "jetstream.consumers[]"},
    {"buckets", "bucket", "jetstream.buckets[]"},
};
enum { NSECTIONS = sizeof(doc_sections) / sizeof(doc_sections[0]) };

/* The reference of one table as a malloc'd string. */
static char *reference(const gf_cfg_table *t, const char *prefix)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(gf_config_write_reference(f, t, prefix), GF_OK);
    fclose(f);
    return buf;
}

static void print_blocks(FILE *out)
{
    for (size_t i = 0; i < NSECTIONS; i++) {
        char *text = reference(gf_config_schema(doc_sections[i].schema), doc_sections[i].prefix);
        fprintf(out, "<!-- BEGIN GENERATED %s -->\n%s<!-- END GENERATED %s -->\n\n",
                doc_sections[i].id, text, doc_sections[i].id);
        free(text);
    }
}

static void runtime_tables_pass_the_check(void **state)
{
    static const char *const names[] = {"",       "nats",     "log",    "runtime", "jetstream",
                                        "stream", "consumer", "bucket", "nats.tls"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const gf_cfg_table *t = gf_config_schema(names[i]);
        gf_config_error err;
        assert_non_null(t);
        if (gf_config_table_check(t, &err) != GF_OK)
            fail_msg("table '%s': %s", names[i], err.message);
    }
    assert_ptr_equal(gf_config_schema(NULL), gf_config_schema(""));
    assert_null(gf_config_schema("nope"));
    gf_config_error err;
    assert_int_equal(gf_config_table_check(&sink_table, &err), GF_OK);
}

static void every_key_is_printed(void **state)
{
    /* The whole tree from the top: nested objects and lists of objects flattened. */
    char *text = reference(gf_config_schema(""), NULL);
    assert_has(text, "| key | type | default | range | description |\n|---|---|---|---|---|\n");
    assert_has(text, "| `nats` | mapping |");
    assert_has(text, "| `nats.servers` | list of strings | `[\"nats://127.0.0.1:4222\"]` | "
                     "at least 1 entry |");
    assert_has(text, "| `nats.tls.key_file` | string | unset |");
    assert_has(text, "| `nats.connect_timeout` | duration | `2s` | 10ms..10m |");
    assert_has(text, "| `nats.reconnect_buffer` | size | `8MiB` | 0..1GiB |");
    assert_has(text, "| `log.level` | enum: `debug`, `info`, `warn`, `error`, `off` | `info` |");
    assert_has(text, "| `jetstream.streams[].name` | string | **required** |");
    assert_has(text, "| `jetstream.streams[].replicas` | integer | `1` | 1..5 |");
    assert_has(text,
               "| `jetstream.consumers[].backoff` | list of durations | `[]` | 0..64 entries |");
    assert_has(text, "| `jetstream.buckets[].history` | integer | `1` | 1..64 |");
    for (size_t s = 0; s < NSECTIONS; s++) {
        const gf_cfg_table *t = gf_config_schema(doc_sections[s].schema);
        for (size_t i = 0; i < t->nfields; i++) {
            char want[128];
            snprintf(want, sizeof(want), "| `%s.%s` |", doc_sections[s].prefix, t->fields[i].key);
            assert_has(text, want);
        }
    }
    /* No row is split: every line is a table row. */
    for (const char *p = text; *p; p = strchr(p, '\n') + 1)
        assert_true(*p == '|');
    free(text);

    /* A function's table, with a prefix, and '|' in help escaped. */
    static const gf_cfg_field rows[] = {
        {.key = "mode", .type = GF_CFG_STRING, .offset = 0, .help = "a|b"},
    };
    static const gf_cfg_table t = {"fn", sizeof(char *), rows, 1, NULL};
    text = reference(&t, "functions.echo");
    assert_has(text, "| `functions.echo.mode` | string | unset |  | a\\|b |\n");
    free(text);
    text = reference(&sink_table, "");
    assert_has(text, "| `kids[].n` | integer | `1` | 1..9 | kid number |");
    assert_has(text, "| `d` | number | `1.5` | 0..10 | a double |");
    free(text);

    assert_int_equal(gf_config_write_reference(NULL, &t, NULL), GF_ERR_INVALID);
    assert_int_equal(gf_config_write_reference(stdout, NULL, NULL), GF_ERR_INVALID);
}

static void docs_match_the_tables(void **state)
{
    const char *root = source_dir();
    if (!root)
        skip();
    char path[1024];
    snprintf(path, sizeof(path), "%s/docs/CONFIG.md", root);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *doc = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&doc, &cap, '\0', f);
    fclose(f);
    assert_true(n > 0);
    for (size_t i = 0; i < NSECTIONS; i++) {
        char begin[96], end[96];
        snprintf(begin, sizeof(begin), "<!-- BEGIN GENERATED %s -->\n", doc_sections[i].id);
        snprintf(end, sizeof(end), "<!-- END GENERATED %s -->", doc_sections[i].id);
        const char *b = strstr(doc, begin);
        const char *e = b ? strstr(b, end) : NULL;
        if (!b || !e)
            fail_msg("docs/CONFIG.md lacks the block '%s'", doc_sections[i].id);
        b += strlen(begin);
        char *want = reference(gf_config_schema(doc_sections[i].schema), doc_sections[i].prefix);
        if (strlen(want) != (size_t)(e - b) || memcmp(want, b, strlen(want)) != 0)
            fail_msg("docs/CONFIG.md block '%s' is stale: regenerate it with "
                     "test_config_reference --print",
                     doc_sections[i].id);
        free(want);
    }
    free(doc);
}

typedef struct bad_struct {
    int64_t a;
    const char **list;
    size_t list_len;
    int e;
} bad_struct;

static void table_check_catches_mistakes(void **state)
{
    static const gf_cfg_enum_value none[] = {{NULL, 0}};
    static const gf_cfg_table empty_sub = {"sub", 0, NULL, 0, NULL};
    static const struct {
        gf_cfg_field row;
        const char *text;
    } cases[] = {
        {{.key = "a", .type = GF_CFG_DURATION, .offset = 0, .def = "5x"}, "invalid default"},
        {{.key = "a", .type = GF_CFG_INT, .offset = 0, .def = "50", .min = 1, .max = 10},
         "out of range"},
        {{.key = "a", .type = GF_CFG_INT, .offset = 0, .def = "[1"}, "not valid YAML"},
        {{.key = "a", .type = GF_CFG_INT, .offset = 0, .required = true, .def = "1"},
         "required and has a default"},
        {{.key = "a", .type = GF_CFG_INT, .offset = 0, .min = 5, .max = 1}, "min is above max"},
        {{.key = "a", .type = GF_CFG_INT, .offset = sizeof(bad_struct)}, "outside"},
        {{.key = "a.b", .type = GF_CFG_INT, .offset = 0}, "malformed key"},
        {{.key = "", .type = GF_CFG_INT, .offset = 0}, "malformed key"},
        {{.key = "e", .type = GF_CFG_ENUM, .offset = offsetof(bad_struct, e), .enums = none},
         "enum without values"},
        {{.key = "e", .type = GF_CFG_ENUM, .offset = offsetof(bad_struct, e)},
         "enum without values"},
        {{.key = "list",
          .type = GF_CFG_STRING_LIST,
          .offset = offsetof(bad_struct, list),
          .count_offset = offsetof(bad_struct, list)},
         "count_offset"},
        {{.key = "list",
          .type = GF_CFG_STRING_LIST,
          .offset = offsetof(bad_struct, list),
          .count_offset = 4096},
         "count_offset"},
        {{.key = "o", .type = GF_CFG_OBJECT, .offset = 0}, "without a sub-table"},
        {{.key = "o",
          .type = GF_CFG_OBJECT_LIST,
          .offset = offsetof(bad_struct, list),
          .count_offset = offsetof(bad_struct, list_len),
          .sub = &empty_sub},
         "without a sub-table"},
        {{.key = "o", .type = GF_CFG_OBJECT, .offset = 0, .sub = &sink_obj_table, .def = "{}"},
         "not def"},
        {{.key = "o", .type = (gf_cfg_type)99, .offset = 0}, "unknown type"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const gf_cfg_table t = {"bad", sizeof(bad_struct), &cases[i].row, 1, NULL};
        gf_config_error err;
        if (gf_config_table_check(&t, &err) != GF_ERR_INVALID || !strstr(err.text, cases[i].text))
            fail_msg("case %zu: '%s', want '%s'", i, err.message, cases[i].text);
    }
    /* Duplicate keys, and a bad row inside a sub-table (path named). */
    static const gf_cfg_field dup[] = {
        {.key = "a", .type = GF_CFG_INT, .offset = 0},
        {.key = "a", .type = GF_CFG_INT, .offset = 0},
    };
    const gf_cfg_table dup_table = {"dup", sizeof(bad_struct), dup, 2, NULL};
    gf_config_error err;
    assert_int_equal(gf_config_table_check(&dup_table, &err), GF_ERR_INVALID);
    assert_has(err.text, "twice");
    static const gf_cfg_field inner_bad[] = {
        {.key = "x", .type = GF_CFG_INT, .offset = 0, .def = "abc"},
    };
    static const gf_cfg_table inner = {"inner", sizeof(int64_t), inner_bad, 1, NULL};
    static const gf_cfg_field outer_rows[] = {
        {.key = "in", .type = GF_CFG_OBJECT, .offset = 0, .sub = &inner},
    };
    const gf_cfg_table outer = {"outer", sizeof(int64_t), outer_rows, 1, NULL};
    assert_int_equal(gf_config_table_check(&outer, &err), GF_ERR_INVALID);
    assert_string_equal(err.key, "in.x");
    assert_int_equal(gf_config_table_check(NULL, &err), GF_ERR_INVALID);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--print") == 0) {
        print_blocks(stdout);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtime_tables_pass_the_check),
        cmocka_unit_test(every_key_is_printed),
        cmocka_unit_test(docs_match_the_tables),
        cmocka_unit_test(table_check_catches_mistakes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
