/* test_utf8.c — gamefn/utf8.h: every code point, and the malformed sequences RFC 3629 forbids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gamefn/utf8.h"

/* Encodes code point cp as UTF-8 without any checks (surrogates included). */
static size_t encode_cp(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static void test_utf8(void **state)
{
    (void)state;
    /* Every code point: valid unless it is a surrogate. */
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        char buf[4];
        size_t n = encode_cp(cp, buf);
        bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
        if (gf_utf8_valid(buf, n) == surrogate)
            fail_msg("U+%04X judged wrongly", (unsigned)cp);
        if (n > 1 && gf_utf8_valid(buf, n - 1))
            fail_msg("U+%04X cut short accepted", (unsigned)cp);
    }
    static const struct {
        const char *s;
        size_t len;
    } bad[] = {
        /* clang-format off */
        {"\xC0\x80", 2},             /* overlong NUL */
        {"\xC1\xBF", 2},             /* overlong */
        {"\xE0\x80\x80", 3},         /* overlong */
        {"\xE0\x9F\xBF", 3},         /* overlong U+07FF */
        {"\xF0\x8F\xBF\xBF", 4},     /* overlong U+FFFF */
        {"\xF4\x90\x80\x80", 4},     /* U+110000 */
        {"\xF5\x80\x80\x80", 4},
        {"\xFF", 1},
        {"\x80", 1},                 /* lone continuation */
        {"a\xC3", 2},                /* cut */
        {"\xE2\x28\xA1", 3},         /* bad continuation */
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (gf_utf8_valid(bad[i].s, bad[i].len))
            fail_msg("bad UTF-8 case %zu accepted", i);
    }
    assert_true(gf_utf8_valid("", 0));
    assert_true(gf_utf8_valid(NULL, 0));
    assert_false(gf_utf8_valid(NULL, 1));
}

/* The length of each character, and 0 where none starts. */
static void test_char_len(void **state)
{
    (void)state;
    assert_int_equal(gf_utf8_char_len("a", 1), 1);
    assert_int_equal(gf_utf8_char_len("\xC3\xA9", 2), 2);
    assert_int_equal(gf_utf8_char_len("\xE2\x82\xAC", 3), 3);
    assert_int_equal(gf_utf8_char_len("\xF0\x9F\x98\x80", 4), 4);
    assert_int_equal(gf_utf8_char_len("\xF0\x9F\x98\x80", 3), 0); /* cut short */
    assert_int_equal(gf_utf8_char_len("\x80", 1), 0);
    assert_int_equal(gf_utf8_char_len("a", 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_char_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
