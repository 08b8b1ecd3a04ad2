/*
 * test_join_sign.c — functions/allocator/join_sign.h: join tokens signed to exactly
 * the bytes of the test vector (join_vectors.h), lengths refused, and what is signed
 * opens with gamefn/join_token.h and nothing else (any flipped bit, another key).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "gamefn/join_token.h"
#include "gamefn/v1/match.pb-c.h"
#include "join_sign.h"
#include "join_vectors.h"
#include "test_hex.h"

static void test_join_token_golden(void **state)
{
    (void)state;
    assert_true(sodium_init() >= 0);
    size_t seed_len, pk_len, claims_len, sig_len;
    uint8_t *seed = hex(golden_seed, &seed_len), *gpk = hex(golden_pk, &pk_len);
    uint8_t *claims = hex(golden_claims, &claims_len), *sig = hex(golden_sig, &sig_len);
    uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
    assert_int_equal(crypto_sign_seed_keypair(pk, sk, seed), 0);
    assert_memory_equal(pk, gpk, sizeof pk);

    /* Ed25519 is deterministic: libsodium signs to exactly Node's token. */
    uint8_t *token = NULL;
    size_t token_len = 0;
    assert_int_equal(gf_join_token_sign(claims, claims_len, sk, &token, &token_len), GF_OK);
    assert_int_equal(token_len, claims_len + GF_WIRE_JOIN_SIG_LEN);
    assert_memory_equal(token, claims, claims_len);
    assert_memory_equal(token + claims_len, sig, sig_len);

    const uint8_t *got = NULL;
    size_t got_len = 0;
    assert_int_equal(gf_join_token_open(token, token_len, pk, &got, &got_len), GF_OK);
    assert_ptr_equal(got, token);
    assert_int_equal(got_len, claims_len);
    Gamefn__V1__JoinTokenClaims *c = gamefn__v1__join_token_claims__unpack(NULL, got_len, got);
    assert_non_null(c);
    assert_int_equal(c->version, 1);
    assert_string_equal(c->key_id, "k2026");
    assert_string_equal(c->player_id, "p-alice");
    assert_string_equal(c->server_id, "gs-7");
    assert_int_equal(c->port, 7777);
    assert_true(c->expires_unix_ms == 1767225660000);
    assert_int_equal(c->nonce.len, GF_WIRE_JOIN_NONCE_LEN);
    gamefn__v1__join_token_claims__free_unpacked(c, NULL);

    /* Any flipped bit, in the claims or the signature, is refused. */
    for (size_t i = 0; i < token_len; i++) {
        token[i] ^= 0x01;
        if (gf_join_token_open(token, token_len, pk, &got, &got_len) != GF_ERR_INVALID)
            fail_msg("bit flip at byte %zu accepted", i);
        assert_null(got);
        token[i] ^= 0x01;
    }
    /* Another key, or a shorter token, is refused. */
    uint8_t other_pk[crypto_sign_PUBLICKEYBYTES], other_sk[crypto_sign_SECRETKEYBYTES];
    crypto_sign_keypair(other_pk, other_sk);
    assert_int_equal(gf_join_token_open(token, token_len, other_pk, &got, &got_len),
                     GF_ERR_INVALID);
    assert_int_equal(gf_join_token_open(token + 1, token_len - 1, pk, &got, &got_len),
                     GF_ERR_INVALID);
    free(token);
    free(seed);
    free(gpk);
    free(claims);
    free(sig);
}

static void test_join_token_lengths(void **state)
{
    (void)state;
    uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
    assert_true(sodium_init() >= 0);
    crypto_sign_keypair(pk, sk);
    static uint8_t big[GF_WIRE_JOIN_CLAIMS_MAX + GF_WIRE_JOIN_SIG_LEN + 1];
    uint8_t *token = NULL;
    size_t token_len = 0;
    assert_int_equal(gf_join_token_sign(big, 0, sk, &token, &token_len), GF_ERR_INVALID);
    assert_int_equal(gf_join_token_sign(big, GF_WIRE_JOIN_CLAIMS_MAX + 1, sk, &token, &token_len),
                     GF_ERR_INVALID);
    assert_int_equal(gf_join_token_sign(NULL, 1, sk, &token, &token_len), GF_ERR_INVALID);
    assert_null(token);
    assert_int_equal(gf_join_token_sign(big, GF_WIRE_JOIN_CLAIMS_MAX, sk, &token, &token_len),
                     GF_OK);
    const uint8_t *got = NULL;
    size_t got_len = 0;
    assert_int_equal(gf_join_token_open(token, token_len, pk, &got, &got_len), GF_OK);
    assert_int_equal(got_len, GF_WIRE_JOIN_CLAIMS_MAX);
    free(token);
    static const size_t bad_lens[] = {0, 1, GF_WIRE_JOIN_SIG_LEN,
                                      GF_WIRE_JOIN_CLAIMS_MAX + GF_WIRE_JOIN_SIG_LEN + 1};
    for (size_t i = 0; i < sizeof bad_lens / sizeof bad_lens[0]; i++) {
        assert_int_equal(gf_join_token_open(big, bad_lens[i], pk, &got, &got_len), GF_ERR_INVALID);
        assert_null(got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_token_golden),
        cmocka_unit_test(test_join_token_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
