/*
 * test_config_util.h — shared by the test_config_*.c files: cmocka includes, a
 * table with one row of every type (the "sink"), and small helpers.
 */
#ifndef GAMEFN_TEST_CONFIG_UTIL_H
#define GAMEFN_TEST_CONFIG_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/config.h"

typedef struct sink_kid {
    const char *name;
    int64_t n;
} sink_kid;

typedef struct sink_obj {
    int64_t x;
    const char *y;
} sink_obj;

typedef struct sink {
    const char *s;
    int64_t i;
    double d;
    bool b;
    int64_t dur;
    int64_t size;
    int e;
    const char **list;
    size_t list_len;
    int64_t *durs;
    size_t durs_len;
    sink_obj obj;
    sink_kid *kids;
    size_t kids_len;
} sink;

enum { SINK_RED = 10, SINK_GREEN = 20, SINK_BLUE = 30 };

static const gf_cfg_enum_value sink_colors[] = {
    {"red", SINK_RED}, {"green", SINK_GREEN}, {"blue", SINK_BLUE}, {NULL, 0}};

static const gf_cfg_field sink_kid_rows[] = {
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = offsetof(sink_kid, name),
     .required = true,
     .help = "kid name"},
    {.key = "n",
     .type = GF_CFG_INT,
     .offset = offsetof(sink_kid, n),
     .def = "1",
     .min = 1,
     .max = 9,
     .help = "kid number"},
};
static const gf_cfg_table sink_kid_table = {"kid", sizeof(sink_kid), sink_kid_rows, 2, NULL};

static const gf_cfg_field sink_obj_rows[] = {
    {.key = "x", .type = GF_CFG_INT, .offset = offsetof(sink_obj, x), .def = "7", .help = "x"},
    {.key = "y", .type = GF_CFG_STRING, .offset = offsetof(sink_obj, y), .help = "y"},
};
static const gf_cfg_table sink_obj_table = {"obj", sizeof(sink_obj), sink_obj_rows, 2, NULL};

static const gf_cfg_field sink_rows[] = {
    {.key = "s",
     .type = GF_CFG_STRING,
     .offset = offsetof(sink, s),
     .def = "\"hello\"",
     .help = "a string"},
    {.key = "i",
     .type = GF_CFG_INT,
     .offset = offsetof(sink, i),
     .def = "5",
     .min = -10,
     .max = 100,
     .help = "an int"},
    {.key = "d",
     .type = GF_CFG_DOUBLE,
     .offset = offsetof(sink, d),
     .def = "1.5",
     .min = 0,
     .max = 10,
     .help = "a double"},
    {.key = "b",
     .type = GF_CFG_BOOL,
     .offset = offsetof(sink, b),
     .def = "false",
     .help = "a bool"},
    {.key = "dur",
     .type = GF_CFG_DURATION,
     .offset = offsetof(sink, dur),
     .def = "250ms",
     .min = 1,
     .max = 3600000,
     .help = "a duration"},
    {.key = "size",
     .type = GF_CFG_SIZE,
     .offset = offsetof(sink, size),
     .def = "1KiB",
     .min = 0,
     .max = 1048576,
     .help = "a size"},
    {.key = "e",
     .type = GF_CFG_ENUM,
     .offset = offsetof(sink, e),
     .def = "green",
     .enums = sink_colors,
     .help = "an enum"},
    {.key = "list",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(sink, list),
     .count_offset = offsetof(sink, list_len),
     .def = "[a, b]",
     .min = 0,
     .max = 3,
     .help = "strings"},
    {.key = "durs",
     .type = GF_CFG_DURATION_LIST,
     .offset = offsetof(sink, durs),
     .count_offset = offsetof(sink, durs_len),
     .min = 0,
     .max = 4,
     .help = "durations"},
    {.key = "obj",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(sink, obj),
     .sub = &sink_obj_table,
     .help = "an object"},
    {.key = "kids",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(sink, kids),
     .count_offset = offsetof(sink, kids_len),
     .min = 0,
     .max = 5,
     .sub = &sink_kid_table,
     .help = "objects"},
};
static const gf_cfg_table sink_table = {"sink", sizeof(sink), sink_rows,
                                        sizeof(sink_rows) / sizeof(sink_rows[0]), NULL};

/* Parses yaml with sink_table into *out; on failure checks that *out is unchanged. */
static inline gf_err sink_parse(const char *yaml, sink *out, struct gf_config_arena **arena,
                                gf_config_error *err)
{
    sink before;
    memset(out, 0xA5, sizeof(*out));
    memcpy(&before, out, sizeof(before));
    gf_err rc = gf_config_parse_table("t.yaml", yaml, strlen(yaml), &sink_table, out, arena, err);
    if (rc != GF_OK) {
        assert_memory_equal(out, &before, sizeof(before));
        assert_null(*arena);
        assert_true(err->message[0] != '\0');
    }
    return rc;
}

/* Prints the message when a substring is missing, then fails. */
static inline void assert_has(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle)) {
        print_error("'%s' not found in '%s'\n", needle, haystack);
        fail();
    }
}

static inline void unset_gamefn_env(void)
{
    static const char *const vars[] = {
        "GAMEFN_NATS_URL",      "GAMEFN_NATS_CREDS", "GAMEFN_NATS_NKEY_SEED", "GAMEFN_NATS_USER",
        "GAMEFN_NATS_PASSWORD", "GAMEFN_LOG_LEVEL",  "GAMEFN_INSTANCE_ID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
}

/* The repository root, from the environment ctest sets; NULL outside ctest. */
static inline const char *source_dir(void)
{
    const char *d = getenv("GAMEFN_SOURCE_DIR");
    return d && *d ? d : NULL;
}

#endif
