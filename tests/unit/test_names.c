/*
 * test_names.c — gamefn/names.h, the one set of rules for names and subjects: a table
 * of good, boundary and bad cases per kind of name, with the phrase each refusal
 * gives (config errors and provisioning messages quote it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/limits.h"
#include "gamefn/names.h"

static void test_id_valid(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        size_t max;
        bool ok;
    } cases[] = {
        /* clang-format off */
        {"p-alice", 64, true},
        {"A_z-09", 64, true},
        {"x", 1, true},
        {"xy", 1, false},
        {"", 64, false},
        {"a.b", 64, false},   /* would split a subject */
        {"a*", 64, false},    /* wildcard */
        {"a>", 64, false},
        {"a b", 64, false},
        {"caf\xc3\xa9", 64, false}, /* non-ASCII */
        {"a/b", 64, false},
        {"a=b", 64, false},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (gf_name_id_ok(cases[i].s, cases[i].max, NULL, 0) != cases[i].ok)
            fail_msg("token \"%s\" max %zu: expected %d", cases[i].s, cases[i].max, cases[i].ok);
    }
    assert_false(gf_name_id_ok(NULL, 64, NULL, 0));
    char id[GF_WIRE_ID_MAX + 2];
    memset(id, 'a', sizeof id);
    id[GF_WIRE_ID_MAX] = '\0';
    assert_true(gf_name_id_ok(id, GF_WIRE_ID_MAX, NULL, 0));
    id[GF_WIRE_ID_MAX] = 'a';
    id[GF_WIRE_ID_MAX + 1] = '\0';
    assert_false(gf_name_id_ok(id, GF_WIRE_ID_MAX, NULL, 0));
}

typedef enum kind { ID, ASSET, BUCKET, TOKEN, SUBJECT, FILTER } kind;

static bool check(kind k, const char *s, char *why, size_t size)
{
    switch (k) {
    case ID:
        return gf_name_id_ok(s, 8, why, size);
    case ASSET:
        return gf_name_asset_ok(s, why, size);
    case BUCKET:
        return gf_name_bucket_ok(s, why, size);
    case TOKEN:
        return gf_name_token_ok(s, why, size);
    case SUBJECT: /* a publish subject */
        return gf_name_subject_ok(s, false, why, size);
    case FILTER: /* a subscription, stream subject or consumer filter */
        return gf_name_subject_ok(s, true, why, size);
    }
    return false;
}

static void test_table(void **state)
{
    (void)state;
    static const struct {
        kind k;
        const char *s;
        const char *why; /* NULL: accepted; else a part of the phrase */
    } rows[] = {
        /* clang-format off */
        {ID, "p-alice", NULL},
        {ID, "12345678", NULL},               /* exactly the max (8) */
        {ID, "123456789", "longer than 8 bytes"},
        {ID, "", "is empty"},
        {ID, NULL, "is empty"},
        {ID, "a.b", "only letters, digits"},
        {ID, "caf\xc3\xa9", "only letters, digits"},

        {ASSET, "EVENTS", NULL},
        {ASSET, "KV_tickets", NULL},
        {ASSET, "caf\xc3\xa9", NULL},         /* UTF-8 is fine in names */
        {ASSET, "a=b", NULL},
        {ASSET, "", "is empty"},
        {ASSET, "A B", "whitespace"},
        {ASSET, "A\tB", "whitespace"},
        {ASSET, "A\x7f", "control"},
        {ASSET, "A.B", "contains one of '.'"},
        {ASSET, "A*", "contains one of"},
        {ASSET, "A>", "contains one of"},
        {ASSET, "A/B", "contains one of"},
        {ASSET, "A\\B", "contains one of"},

        {BUCKET, "tickets", NULL},
        {BUCKET, "LEASES_v1-2", NULL},
        {BUCKET, "my.bucket", "may hold only letters, digits, '_' and '-'"},
        {BUCKET, "a b", "may hold only"},
        {BUCKET, "", "is empty"},

        {TOKEN, "matcher", NULL},
        {TOKEN, "q-1_\xc3\xa9", NULL},
        {TOKEN, "a.b", "one subject token"},
        {TOKEN, "*", "one subject token"},
        {TOKEN, ">", "one subject token"},
        {TOKEN, "a b", "whitespace"},
        {TOKEN, "", "is empty"},

        {SUBJECT, "gamefn.v1.echo", NULL},
        {SUBJECT, "a", NULL},
        {SUBJECT, "_INBOX.abc.1", NULL},
        {SUBJECT, "a.*", "wildcard"},
        {SUBJECT, "a.>", "wildcard"},
        {SUBJECT, "a..b", "empty token"},
        {SUBJECT, ".a", "empty token"},
        {SUBJECT, "a.", "empty token"},
        {SUBJECT, "a b", "whitespace"},
        {SUBJECT, "", "is empty"},

        {FILTER, "gamefn.v1.event.*.*", NULL},
        {FILTER, "test.results.>", NULL},
        {FILTER, ">", NULL},
        {FILTER, "*", NULL},
        {FILTER, "a*b.c", "inside a token"},  /* once accepted by provisioning and $SRV */
        {FILTER, "a.b*", "inside a token"},
        {FILTER, "a.>b", "inside a token"},
        {FILTER, "a.>.b", "'>' before the last token"},
        {FILTER, "a..b", "empty token"},
        {FILTER, "a.\r", "whitespace"},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char why[GF_NAME_WHY_MAX] = "";
        bool ok = check(rows[i].k, rows[i].s, why, sizeof why);
        if (ok != (rows[i].why == NULL))
            fail_msg("row %zu (\"%s\"): %s", i, rows[i].s ? rows[i].s : "(null)",
                     ok ? "accepted" : why);
        if (!ok && !strstr(why, rows[i].why))
            fail_msg("row %zu (\"%s\"): \"%s\" does not say \"%s\"", i, rows[i].s, why,
                     rows[i].why);
        assert_true(check(rows[i].k, rows[i].s, NULL, 0) == ok); /* why is optional */
    }
}

/* The length limits, at the boundary. */
static void test_lengths(void **state)
{
    (void)state;
    char s[GF_NAME_MAX + 2];
    memset(s, 'a', sizeof s);
    s[GF_NAME_MAX] = '\0';
    assert_true(gf_name_asset_ok(s, NULL, 0));
    s[GF_NAME_MAX] = 'a';
    s[GF_NAME_MAX + 1] = '\0';
    assert_false(gf_name_asset_ok(s, NULL, 0));
    s[GF_NAME_BUCKET_MAX] = '\0';
    assert_true(gf_name_bucket_ok(s, NULL, 0));
    s[GF_NAME_BUCKET_MAX] = 'a';
    s[GF_NAME_BUCKET_MAX + 1] = '\0';
    char why[GF_NAME_WHY_MAX];
    assert_false(gf_name_bucket_ok(s, why, sizeof why));
    assert_string_equal(why, "is longer than 252 bytes");
    /* A why buffer too small for the phrase is cut, not overrun. */
    char tiny[4] = "xyz";
    assert_false(gf_name_asset_ok("", tiny, sizeof tiny));
    assert_string_equal(tiny, "is ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_valid),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
