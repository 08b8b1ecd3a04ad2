/* Lease value codec and reconnect backoff: pure parts of the runtime. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/conn.h"
#include "gamefn/lease.h"

static void lease_round_trip(void **state)
{
    char buf[128];
    int64_t expires = 0;
    char holder[96];
    assert_int_equal(gf_lease_encode(1732890000123LL, "matcher-abc", buf, sizeof buf), GF_OK);
    assert_string_equal(buf, "1732890000123 matcher-abc");
    assert_int_equal(gf_lease_decode(buf, strlen(buf), &expires, holder, sizeof holder), GF_OK);
    assert_int_equal(expires, 1732890000123LL);
    assert_string_equal(holder, "matcher-abc");
}

static void lease_rejects_bad_values(void **state)
{
    static const char *const bad[] = {
        "",        " ",         "123",        "123 ",  " abc",
        "abc def", "-5 holder", "12x holder", "1 a b", "99999999999999999999999 h",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t expires = 0;
        char holder[16];
        assert_int_equal(gf_lease_decode(bad[i], strlen(bad[i]), &expires, holder, sizeof holder),
                         GF_ERR_INVALID);
    }
    char buf[8];
    assert_int_equal(gf_lease_encode(1, "has space", buf, sizeof buf), GF_ERR_INVALID);
    assert_int_equal(gf_lease_encode(1, "", buf, sizeof buf), GF_ERR_INVALID);
    assert_int_equal(gf_lease_encode(-1, "h", buf, sizeof buf), GF_ERR_INVALID);
    assert_int_equal(gf_lease_encode(1, "much-too-long-holder", buf, sizeof buf), GF_ERR_INVALID);
    int64_t expires = 0;
    char small[4];
    assert_int_equal(gf_lease_decode("1 holder", 8, &expires, small, sizeof small), GF_ERR_INVALID);
}

static void backoff_doubles_to_cap_plus_jitter(void **state)
{
    gf_nats_config cfg = {
        .reconnect_wait_ms = 250, .reconnect_jitter_ms = 100, .reconnect_max_wait_ms = 5000};
    static const struct {
        int attempt;
        int64_t jitter, want;
    } rows[] = {
        {1, 0, 250},  {2, 0, 500},   {3, 0, 1000},       {4, 0, 2000},   {5, 0, 4000},
        {6, 0, 5000}, {50, 0, 5000}, {1, 100, 350},      {6, 100, 5100}, {1, 1000, 350},
        {1, -5, 250}, {0, 0, 250},   {1000000, 7, 5007},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_int_equal(gf_conn_backoff_ms(&cfg, rows[i].attempt, rows[i].jitter), rows[i].want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lease_round_trip),
        cmocka_unit_test(lease_rejects_bad_values),
        cmocka_unit_test(backoff_doubles_to_cap_plus_jitter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
