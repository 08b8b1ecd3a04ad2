/*
 * test_report_tsv.c — the report's TSV reader (tools/report/tsv.h): tables of good,
 * boundary and malformed files with the message each refusal gives; every prefix of a
 * good file and random junk, placed to end at a PROT_NONE page so that any read past the
 * input crashes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "guard_page.h"
#include "run.h"
#include "tsv.h"

static const gf_tsv_col *tickets(size_t *n, const gf_tsv_col **rest)
{
    return gf_run_file_spec(GF_RUN_TICKETS, n, rest);
}

static gf_err parse_file(gf_run_file f, const char *text, gf_tsv_table **t, gf_tsv_error *err)
{
    size_t n;
    const gf_tsv_col *rest;
    const gf_tsv_col *spec = gf_run_file_spec(f, &n, &rest);
    return gf_tsv_parse(text, strlen(text), gf_run_file_name(f), spec, n, rest, t, err);
}

#define H "t\tmode\tshape\tregion\toutcome\twait_ms\tdelta_ping_ms\tmerge\n"

static void test_good(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t rows;
        bool partial;
    } cases[] = {
        /* clang-format off */
        {H, 0, false},
        {H "1\thybrid\t5v5\teu\tassigned\t1200\t3.5\ton\n", 1, false},
        {H "1\thybrid\t5v5\teu\tassigned\t1200\t3.5\ton\r\n", 1, false},         /* CRLF */
        {"# a comment\n\n" H "\n# more\n1\ta\tb\tc\tcancelled\t0\t-\toff\n", 1, false},
        {H "1\ta\tb\tc\ttimed_out\t5\t\toff\n", 1, false},                      /* empty = not measured */
        {H "1e3\ta\tb\tc\tassigned\t1.5e2\t+0\toff\n", 1, false},              /* exponents, sign */
        {H "1\ta\tb\tc\tassigned\t1000000000\t100000\toff\n", 1, false},      /* at the maxima */
        {H "1\ta\tb\tc\tassigned\t5\t1\toff\n2\ta\tb\tc\tassi", 1, true},     /* half a last line */
        {H "1\ta\tb\tc\tassigned\t5\t1\toff\n2\ta\tb\tc\tassigned\t5\t1\toff", 1, true},
        /* columns in another order, extra ones ignored, optional ones missing */
        {"wait_ms\textra\toutcome\tregion\tshape\tmode\tt\n5\tx y z\tassigned\teu\t1v1\tsbmm\t0\n", 1, false},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_tsv_table *t = NULL;
        gf_tsv_error err;
        gf_err e = parse_file(GF_RUN_TICKETS, cases[i].text, &t, &err);
        if (e != GF_OK)
            fail_msg("case %zu: %s", i, err.message);
        assert_int_equal(t->nrows, cases[i].rows);
        assert_int_equal(t->partial_last, cases[i].partial);
        gf_tsv_free(t);
    }
}

static void test_values(void **state)
{
    (void)state;
    gf_tsv_table *t = NULL;
    gf_tsv_error err;
    const char *text = H "1.5\thybrid\t5v5\teu\tassigned\t1200\t3.5\ton\n"
                         "2\tsbmm\t1v1\tna\tcancelled\t800\t-\toff\n"
                         "3\thybrid\t1v1\teu\tassigned\t10\t\ton\n";
    assert_int_equal(parse_file(GF_RUN_TICKETS, text, &t, &err), GF_OK);
    const gf_tsv_column *tc = gf_tsv_find(t, "t"), *mode = gf_tsv_find(t, "mode"),
                        *dp = gf_tsv_find(t, "delta_ping_ms");
    assert_non_null(tc);
    assert_true(tc->num[0] == 1.5 && tc->num[2] == 3);
    assert_int_equal(mode->nkeys, 2);
    assert_string_equal(mode->keys[0], "hybrid");
    assert_string_equal(mode->keys[1], "sbmm");
    assert_int_equal(mode->key[2], 0);
    assert_int_equal(gf_tsv_key_index(mode, "sbmm"), 1);
    assert_int_equal(gf_tsv_key_index(mode, "ping_first"), -1);
    assert_true(dp->num[0] == 3.5 && isnan(dp->num[1]) && isnan(dp->num[2]));
    assert_null(gf_tsv_find(t, "nonesuch"));
    gf_tsv_free(t);

    /* an optional column missing from the header reads as not measured */
    const char *no_dp = "t\tmode\tshape\tregion\toutcome\twait_ms\n0\ta\tb\tc\tassigned\t5\n";
    assert_int_equal(parse_file(GF_RUN_TICKETS, no_dp, &t, &err), GF_OK);
    assert_false(gf_tsv_find(t, "delta_ping_ms")->present);
    assert_true(isnan(gf_tsv_find(t, "delta_ping_ms")->num[0]));
    assert_false(gf_tsv_find(t, "merge")->present);
    gf_tsv_free(t);

    /* events.tsv: every column after t is a counter, by its own name */
    assert_int_equal(parse_file(GF_RUN_EVENTS, "t\tproduced\tstored\n0\t5\t4\n1\t9\t-\n", &t, &err),
                     GF_OK);
    assert_int_equal(t->ncols, 3);
    assert_string_equal(t->cols[1].name, "produced");
    assert_true(t->cols[1].num[1] == 9 && isnan(t->cols[2].num[1]));
    gf_tsv_free(t);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *message; /* the whole message */
    } cases[] = {
        /* clang-format off */
        {"", "tickets.tsv: no header line"},
        {"# only a comment\n", "tickets.tsv: no header line"},
        {"t\tmode\n", "tickets.tsv:1: header: no column 'shape'"},
        {"t\tmode\tshape\tregion\toutcome\twait_ms\tt\n", "tickets.tsv:1: header: column 't' appears twice"},
        {"t\tmo de\n", "tickets.tsv:1: header: 'mo de' is not a column name"},
        {"t\t\tmode\n", "tickets.tsv:1: header: '' is not a column name"},
        {H "1\ta\tb\tc\tassigned\t5\t1\n", "tickets.tsv:2: 7 fields, the header has 8"},
        {H "1\ta\tb\tc\tassigned\t5\t1\toff\textra\n", "tickets.tsv:2: more than 8 fields, the header has 8"},
        {H "x\ta\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 't': 'x' is not a number"},
        {H "nan\ta\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 't': 'nan' is not a number"},
        {H "inf\ta\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 't': 'inf' is not a number"},
        {H "0x10\ta\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 't': '0x10' is not a number"},
        {H " 1\ta\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 't': ' 1' is not a number"},
        {H "1.2.3\ta\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 't': '1.2.3' is not a number"},
        {H "1e999\ta\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 't': '1e999' is not a number"},
        {H "-1\ta\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 't': -1 is out of range [0, 1e+07]"},
        {H "1\ta\tb\tc\tassigned\t-5\t1\toff\n", "tickets.tsv:2: column 'wait_ms': -5 is out of range [0, 1e+09]"},
        {H "1\ta\tb\tc\tassigned\t1e10\t1\toff\n", "tickets.tsv:2: column 'wait_ms': 1e10 is out of range [0, 1e+09]"},
        {H "1\ta\tb\tc\tassigned\t-\t1\toff\n", "tickets.tsv:2: column 'wait_ms': a value is required"},
        {H "1\ta\tb\tc\tassigned\t\t1\toff\n", "tickets.tsv:2: column 'wait_ms': a value is required"},
        {H "1\ta\tb\tc\tlost\t5\t1\toff\n", "tickets.tsv:2: column 'outcome': 'lost' is not one of the allowed values"},
        {H "1\ta\tb\tc\tassigned\t5\t1\tmaybe\n", "tickets.tsv:2: column 'merge': 'maybe' is not one of the allowed values"},
        {H "1\t<script>\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 'mode': '<script>' is not a name (1-64 of letters, digits, _ . : -)"},
        {H "1\t\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 'mode': '' is not a name (1-64 of letters, digits, _ . : -)"},
        {H "1\ta\tb\tc\tassigned\t5\t1\toff\n\n1\ta\tb\tc\tassigned\t5\t1\tof\n", "tickets.tsv:4: column 'merge': 'of' is not one of the allowed values"},
        {H "1\ta\x01\tb\tc\tassigned\t5\t1\toff\n", "tickets.tsv:2: column 'mode': 'a?' is not a name (1-64 of letters, digits, _ . : -)"},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_tsv_table *t = (gf_tsv_table *)1;
        gf_tsv_error err;
        gf_err e = parse_file(GF_RUN_TICKETS, cases[i].text, &t, &err);
        if (e != GF_ERR_INVALID)
            fail_msg("case %zu: accepted", i);
        assert_null(t);
        if (strcmp(err.message, cases[i].message) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, err.message, cases[i].message);
    }
}

static void test_limits(void **state)
{
    (void)state;
    gf_tsv_table *t = NULL;
    gf_tsv_error err;
    /* 64 distinct values of a KEY column are fine, 65 are not */
    char *text = malloc(70 * 64 + 64);
    assert_non_null(text);
    for (int distinct = 64; distinct <= 65; distinct++) {
        size_t len = (size_t)sprintf(text, "t\tqueue\twaiting\n");
        for (int i = 0; i < distinct; i++)
            len += (size_t)sprintf(text + len, "%d\tq%d\t1\n", i, i);
        gf_err e = parse_file(GF_RUN_QUEUES, text, &t, &err);
        if (distinct == 64) {
            assert_int_equal(e, GF_OK);
            assert_int_equal(gf_tsv_find(t, "queue")->nkeys, 64);
            gf_tsv_free(t);
        } else {
            assert_int_equal(e, GF_ERR_INVALID);
            assert_string_equal(err.message,
                                "queues.tsv:66: column 'queue': more than 64 distinct values");
        }
    }
    free(text);

    /* a 64-byte key is a name, 65 bytes are not; a line of more than 4096 bytes is refused */
    char key[70];
    memset(key, 'k', 65);
    key[64] = '\0';
    char line[5000];
    snprintf(line, sizeof line, "t\tqueue\twaiting\n0\t%s\t1\n", key);
    assert_int_equal(parse_file(GF_RUN_QUEUES, line, &t, &err), GF_OK);
    gf_tsv_free(t);
    key[64] = 'k';
    key[65] = '\0';
    snprintf(line, sizeof line, "t\tqueue\twaiting\n0\t%s\t1\n", key);
    assert_int_equal(parse_file(GF_RUN_QUEUES, line, &t, &err), GF_ERR_INVALID);
    memset(line, '#', 4200);
    strcpy(line + 4200, "\n");
    assert_int_equal(parse_file(GF_RUN_QUEUES, line, &t, &err), GF_ERR_INVALID);
    assert_string_equal(err.message, "queues.tsv:1: line longer than 4096 bytes");

    /* more than 32 columns in a header */
    char wide[400] = "t";
    for (int i = 0; i < 32; i++)
        sprintf(wide + strlen(wide), "\tc%d", i);
    strcat(wide, "\n");
    assert_int_equal(parse_file(GF_RUN_EVENTS, wide, &t, &err), GF_ERR_INVALID);
    assert_string_equal(err.message, "events.tsv:1: header: more than 32 columns");
}

/* Every prefix of a good file, as it is and with its last byte changed, and the whole file
 * with each byte changed, placed to end at a guard page: the parser must accept or refuse
 * each without reading past its end. */
static void parse_at_guard(guard_page *g, const char *text, size_t len)
{
    size_t n;
    const gf_tsv_col *rest;
    const gf_tsv_col *spec = tickets(&n, &rest);
    const char *p = (const char *)guard_page_place(g, text, len);
    gf_tsv_table *t = NULL;
    gf_tsv_error err;
    gf_err e = gf_tsv_parse(p, len, "x.tsv", spec, n, rest, &t, &err);
    assert_true(e == GF_OK || e == GF_ERR_INVALID);
    assert_true((e == GF_OK) == (t != NULL));
    if (t)
        assert_true(t->nrows <= 3);
    gf_tsv_free(t);
}

static void test_prefixes_at_guard_page(void **state)
{
    (void)state;
    const char *good = "# comment\n" H "1.5\thybrid\t5v5\teu\tassigned\t1200\t3.5\ton\r\n"
                       "2\tsbmm\t1v1\tna\tcancelled\t800\t-\toff\n"
                       "3\thybrid\t1v1\teu\tassigned\t10\t\ton\n";
    size_t len = strlen(good), n;
    const gf_tsv_col *rest;
    const gf_tsv_col *spec = tickets(&n, &rest);
    guard_page *g = guard_page_new(4096);
    char copy[512];
    static const char swaps[] = {'\t', '\n', '\r', '#', '-', 'e', '.', '\0', 'x', '9'};
    for (size_t cut = 0; cut <= len; cut++) {
        memcpy(copy, good, cut);
        parse_at_guard(g, copy, cut);
        for (size_t s = 0; cut > 0 && s < sizeof swaps; s++) {
            copy[cut - 1] = swaps[s];
            parse_at_guard(g, copy, cut);
        }
    }
    for (size_t at = 0; at < len; at++)
        for (size_t s = 0; s < sizeof swaps; s++) {
            memcpy(copy, good, len);
            copy[at] = swaps[s];
            parse_at_guard(g, copy, len);
        }
    /* random junk of every length up to 300 */
    uint64_t x = 88172645463325252ULL;
    for (size_t round = 0; round < 3000; round++) {
        size_t l = round % 300;
        for (size_t i = 0; i < l; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            static const char alphabet[] = "\t\n0123456789.-e#abc\r\x80 ";
            copy[i] = alphabet[x % (sizeof alphabet - 1)];
        }
        const char *p = (const char *)guard_page_place(g, copy, l);
        gf_tsv_table *t = NULL;
        gf_err e = gf_tsv_parse(p, l, "junk.tsv", spec, n, rest, &t, NULL);
        assert_true(e == GF_OK || e == GF_ERR_INVALID);
        gf_tsv_free(t);
    }
    guard_page_free(g);
}

static void test_tokens(void **state)
{
    (void)state;
    assert_true(gf_tsv_token_ok("ping_first", 10));
    assert_true(gf_tsv_token_ok("eu-west.1:a", 11));
    assert_false(gf_tsv_token_ok("", 0));
    assert_false(gf_tsv_token_ok("a b", 3));
    assert_false(gf_tsv_token_ok("a'b", 3));
    assert_false(gf_tsv_token_ok("caf\xc3\xa9", 5));
    assert_false(gf_tsv_token_ok("<x>", 3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_prefixes_at_guard_page),
        cmocka_unit_test(test_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
