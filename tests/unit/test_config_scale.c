/*
 * test_config_scale.c — configuration checks stay O(n log n): duplicate names among
 * 200,000 `functions:` entries or 100,000 streams, buckets and consumers are found (at
 * the right line) as fast as the file is parsed. A quadratic check took over a minute
 * for 200,000 entries; this test's ctest timeout (60 s) is the bound, with no timing
 * assertion of its own. Sanitizer builds (10 to 40 times slower here) run a tenth of
 * the entries: they look for memory and thread errors, the plain build for the bound.
 */
#include "test_config_util.h"

#include "config/config_check.h"

#ifndef GAMEFN_SCALE_DIVISOR
#define GAMEFN_SCALE_DIVISOR 1
#endif

enum { FUNCTIONS = 200000 / GAMEFN_SCALE_DIVISOR, ASSETS = 100000 / GAMEFN_SCALE_DIVISOR };

typedef struct text {
    char *buf;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    if (t->cap - t->len < 256) {
        t->cap = t->cap ? t->cap * 2 : 1 << 20;
        t->buf = realloc(t->buf, t->cap);
        assert_non_null(t->buf);
    }
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < t->cap - t->len);
    t->len += (size_t)n;
}

static gf_err load(const text *t, gf_config **cfg, gf_config_error *err)
{
    return gf_config_load_string("big.yaml", t->buf, t->len, NULL, cfg, err);
}

static void many_functions(void **state)
{
    text t = {0};
    gf_config *cfg = NULL;
    gf_config_error err;
    put(&t, "functions:\n");
    for (int i = 0; i < FUNCTIONS; i++)
        put(&t, "  fn%d: {}\n", i);
    assert_int_equal(load(&t, &cfg, &err), GF_OK);
    gf_config_free(cfg);

    /* The same name again at the end: line 2 + FUNCTIONS, first at line 2 + 17. */
    put(&t, "  fn17: {}\n");
    assert_int_equal(load(&t, &cfg, &err), GF_ERR_CONFIG);
    assert_int_equal(err.line, FUNCTIONS + 2);
    assert_string_equal(err.key, "functions.fn17");
    assert_string_equal(err.text, "duplicate key (first at line 19)");
    free(t.buf);
}

static void many_assets(void **state)
{
    text t = {0};
    gf_config *cfg = NULL;
    gf_config_error err;
    put(&t, "jetstream:\n  streams:\n");
    for (int i = 0; i < ASSETS; i++)
        put(&t, "    - {name: S%d, subjects: [s.%d]}\n", i, i);
    put(&t, "  buckets:\n");
    for (int i = 0; i < ASSETS; i++)
        put(&t, "    - {name: b%d}\n", i);
    put(&t, "  consumers:\n");
    for (int i = 0; i < ASSETS; i++)
        put(&t, "    - {stream: S%d, name: w}\n", ASSETS - 1 - i);
    assert_int_equal(load(&t, &cfg, &err), GF_OK);
    assert_int_equal(cfg->jetstream.streams_len, ASSETS);
    assert_int_equal(cfg->jetstream.buckets_len, ASSETS);
    assert_int_equal(cfg->jetstream.consumers_len, ASSETS);
    gf_config_free(cfg);

    /* A second consumer `w` on S5 at the very end; its first one is consumers[ASSETS-6]. */
    put(&t, "    - {stream: S5, name: w}\n");
    assert_int_equal(load(&t, &cfg, &err), GF_ERR_CONFIG);
    char want[128];
    snprintf(want, sizeof want, "duplicate consumer on this stream: 'w' (first at line %d)",
             2 * ASSETS + 5 + (ASSETS - 6));
    assert_string_equal(err.text, want);
    free(t.buf);
}

/* The finder itself: the repeat that comes first in the document wins. */
static void finder_reports_the_earliest_repeat(void **state)
{
    struct {
        const char *a[6], *b[6];
        size_t n;
        bool found;
        size_t first, dup;
    } cases[] = {
        {{"a"}, {NULL}, 1, false, 0, 0},
        {{"a", "b", "c"}, {NULL}, 3, false, 0, 0},
        {{"a", "b", "b", "a"}, {NULL}, 4, true, 1, 2},
        {{"a", "b", "a", "b"}, {NULL}, 4, true, 0, 2},
        {{"x", "a", "a", "a"}, {NULL}, 4, true, 1, 2},
        {{"z", "y", "x", "y", "z"}, {NULL}, 5, true, 1, 3},
        /* pairs: same name on another stream is no repeat */
        {{"S", "T", "S"}, {"w", "w", "v"}, 3, false, 0, 0},
        {{"S", "T", "S", "T"}, {"w", "w", "v", "w"}, 4, true, 1, 3},
        {{"S", "S"}, {NULL, "w"}, 2, false, 0, 0},
        {{"S", "S"}, {NULL, NULL}, 2, true, 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cfg_key keys[6];
        size_t first = 99, dup = 99;
        for (size_t i = 0; i < cases[c].n; i++)
            keys[i] = (cfg_key){cases[c].a[i], cases[c].b[i], i};
        bool found = gf__cfg_find_duplicate(keys, cases[c].n, &first, &dup);
        if (found != cases[c].found || (found && (first != cases[c].first || dup != cases[c].dup)))
            fail_msg("case %zu: found=%d first=%zu dup=%zu", c, found, first, dup);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finder_reports_the_earliest_repeat),
        cmocka_unit_test(many_functions),
        cmocka_unit_test(many_assets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
