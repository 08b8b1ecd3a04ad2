/* Lease value codec: the pure part of gamefn/lease.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lease_round_trip),
        cmocka_unit_test(lease_rejects_bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
