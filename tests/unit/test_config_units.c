/* Durations and sizes: gf_config_parse_duration_ms / _size and the formatters. */
#include "test_config_util.h"

typedef struct unit_case {
    const char *text;
    gf_err rc;
    int64_t want;
} unit_case;

static const unit_case durations[] = {
    {"0", GF_OK, 0},
    {"0ms", GF_OK, 0},
    {"0s", GF_OK, 0},
    {"1ms", GF_OK, 1},
    {"250ms", GF_OK, 250},
    {"5s", GF_OK, 5000},
    {"2m", GF_OK, 120000},
    {"1h", GF_OK, 3600000},
    {"7d", GF_OK, 604800000},
    {"1h30m", GF_OK, 5400000},
    {"1m30s", GF_OK, 90000},
    {"1d2h3m4s5ms", GF_OK, 93784005},
    {"0010s", GF_OK, 10000},
    /* the largest value: INT64_MAX ms */
    {"9223372036854775807ms", GF_OK, INT64_MAX},
    {"106751991167d", GF_OK, 106751991167LL * 86400000LL},
    /* bad */
    {"", GF_ERR_INVALID, 0},
    {"5", GF_ERR_INVALID, 0},   /* bare number other than 0 */
    {"00", GF_ERR_INVALID, 0},  /* only "0" itself is unit-less */
    {"-5s", GF_ERR_INVALID, 0}, /* negative */
    {"-0", GF_ERR_INVALID, 0},
    {"+5s", GF_ERR_INVALID, 0},
    {"5 s", GF_ERR_INVALID, 0},
    {" 5s", GF_ERR_INVALID, 0},
    {"5s ", GF_ERR_INVALID, 0},
    {"1.5s", GF_ERR_INVALID, 0}, /* fractions are not taken */
    {"5sec", GF_ERR_INVALID, 0},
    {"5us", GF_ERR_INVALID, 0},
    {"5S", GF_ERR_INVALID, 0},
    {"5min", GF_ERR_INVALID, 0},
    {"s", GF_ERR_INVALID, 0},
    {"30s1m", GF_ERR_INVALID, 0}, /* units out of order */
    {"1s1s", GF_ERR_INVALID, 0},  /* unit twice */
    {"5s5", GF_ERR_INVALID, 0},
    {"9223372036854775808ms", GF_ERR_INVALID, 0},       /* overflow in digits */
    {"106751991168d", GF_ERR_INVALID, 0},               /* overflow in the multiply */
    {"106751991167d1d", GF_ERR_INVALID, 0},             /* order, and would overflow */
    {"106751991167d23h59m59s999ms", GF_ERR_INVALID, 0}, /* overflow in the add */
    {"99999999999999999999999s", GF_ERR_INVALID, 0},
};

static const unit_case sizes[] = {
    {"0", GF_OK, 0},
    {"512", GF_OK, 512},
    {"1B", GF_OK, 1},
    {"1KB", GF_OK, 1000},
    {"1kb", GF_OK, 1000},
    {"64KiB", GF_OK, 65536},
    {"64kib", GF_OK, 65536},
    {"1MiB", GF_OK, 1048576},
    {"8MiB", GF_OK, 8388608},
    {"1MB", GF_OK, 1000000},
    {"10GiB", GF_OK, 10737418240LL},
    {"2GB", GF_OK, 2000000000LL},
    {"1TiB", GF_OK, 1099511627776LL},
    {"3TB", GF_OK, 3000000000000LL},
    {"9223372036854775807", GF_OK, INT64_MAX},
    {"8388607TiB", GF_OK, 8388607LL * 1099511627776LL},
    /* bad */
    {"", GF_ERR_INVALID, 0},
    {"-1", GF_ERR_INVALID, 0},
    {"1.5MiB", GF_ERR_INVALID, 0},
    {"1K", GF_ERR_INVALID, 0},
    {"1 MiB", GF_ERR_INVALID, 0},
    {"MiB", GF_ERR_INVALID, 0},
    {"1MiBs", GF_ERR_INVALID, 0},
    {"1PiB", GF_ERR_INVALID, 0},
    {"0x10", GF_ERR_INVALID, 0},
    {"9223372036854775808", GF_ERR_INVALID, 0},
    {"8388608TiB", GF_ERR_INVALID, 0},
};

static void durations_parse(void **state)
{
    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
        int64_t v = -42;
        gf_err rc = gf_config_parse_duration_ms(durations[i].text, &v);
        if (rc != durations[i].rc)
            fail_msg("duration '%s': rc %d, want %d", durations[i].text, rc, durations[i].rc);
        if (rc == GF_OK && v != durations[i].want)
            fail_msg("duration '%s': %lld, want %lld", durations[i].text, (long long)v,
                     (long long)durations[i].want);
        if (rc != GF_OK && v != -42)
            fail_msg("duration '%s': output written on error", durations[i].text);
    }
    int64_t v = 0;
    assert_int_equal(gf_config_parse_duration_ms(NULL, &v), GF_ERR_INVALID);
    assert_int_equal(gf_config_parse_duration_ms("5s", NULL), GF_ERR_INVALID);
}

static void sizes_parse(void **state)
{
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int64_t v = -42;
        gf_err rc = gf_config_parse_size(sizes[i].text, &v);
        if (rc != sizes[i].rc)
            fail_msg("size '%s': rc %d, want %d", sizes[i].text, rc, sizes[i].rc);
        if (rc == GF_OK && v != sizes[i].want)
            fail_msg("size '%s': %lld, want %lld", sizes[i].text, (long long)v,
                     (long long)sizes[i].want);
        if (rc != GF_OK && v != -42)
            fail_msg("size '%s': output written on error", sizes[i].text);
    }
    int64_t v = 0;
    assert_int_equal(gf_config_parse_size(NULL, &v), GF_ERR_INVALID);
}

static void format_picks_largest_exact_unit(void **state)
{
    static const struct {
        int64_t v;
        const char *dur, *size;
    } cases[] = {
        {0, "0", "0"},
        {1, "1ms", "1"},
        {999, "999ms", "999"},
        {1000, "1s", "1KB"},
        {1024, "1024ms", "1KiB"},
        {1500, "1500ms", "1500"},
        {60000, "1m", "60KB"},
        {90000, "90s", "90KB"},
        {3600000, "1h", "3600KB"},
        {86400000, "1d", "84375KiB"},
        {604800000, "7d", "590625KiB"},
        {8388608, "8388608ms", "8MiB"},
        {-5, "-5", "-5"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_string_equal(gf_config_format_duration(cases[i].v, buf, sizeof(buf)), cases[i].dur);
        assert_string_equal(gf_config_format_size(cases[i].v, buf, sizeof(buf)), cases[i].size);
    }
    /* Truncation is safe. */
    assert_string_equal(gf_config_format_duration(604800000, buf, 2), "7");
}

/* Every non-negative value formats to text that parses back to itself. */
static void format_round_trips(void **state)
{
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t v = (int64_t)(x >> (1 + x % 63));
        if (i % 3 == 0)
            v = (v % 1000) * (i % 2 ? 1024 : 60000); /* exercise the units */
        char buf[64];
        int64_t back = -1;
        gf_config_format_duration(v, buf, sizeof(buf));
        assert_int_equal(gf_config_parse_duration_ms(buf, &back), GF_OK);
        assert_true(back == v);
        gf_config_format_size(v, buf, sizeof(buf));
        assert_int_equal(gf_config_parse_size(buf, &back), GF_OK);
        assert_true(back == v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations_parse),
        cmocka_unit_test(sizes_parse),
        cmocka_unit_test(format_picks_largest_exact_unit),
        cmocka_unit_test(format_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
