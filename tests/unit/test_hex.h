/*
 * test_hex.h — hex text -> bytes for the golden vectors of unit tests (asserted with
 * cmocka; the caller frees the result). Include after <cmocka.h>; link libsodium.
 */
#ifndef GAMEFN_TEST_HEX_H
#define GAMEFN_TEST_HEX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

static inline uint8_t *hex(const char *h, size_t *len)
{
    size_t cap = strlen(h) / 2 + 1;
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    assert_int_equal(sodium_hex2bin(out, cap, h, strlen(h), NULL, len, NULL), 0);
    return out;
}

#endif
