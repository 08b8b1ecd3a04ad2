/*
 * test_join_token.c — gamefn/join_token.h: what gf_join_token_verify() refuses and
 * accepts beyond the signature (the signature itself: test_join_sign.c). The test
 * vector token (join_vectors.h) is for server "gs-7" and player "p-alice" and expires
 * at 1767225660000; other claims are signed here with the vector's key.
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

static const int64_t expires_ms = 1767225660000;

typedef struct vector {
    uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
    uint8_t *token;
    size_t token_len;
} vector;

static int setup(void **state)
{
    vector *v = calloc(1, sizeof *v);
    size_t seed_len, claims_len, sig_len;
    assert_true(sodium_init() >= 0);
    uint8_t *seed = hex(golden_seed, &seed_len);
    uint8_t *claims = hex(golden_claims, &claims_len), *sig = hex(golden_sig, &sig_len);
    assert_int_equal(crypto_sign_seed_keypair(v->pk, v->sk, seed), 0);
    v->token_len = claims_len + sig_len;
    v->token = malloc(v->token_len);
    memcpy(v->token, claims, claims_len);
    memcpy(v->token + claims_len, sig, sig_len);
    free(seed);
    free(claims);
    free(sig);
    *state = v;
    return 0;
}

static int teardown(void **state)
{
    vector *v = *state;
    free(v->token);
    free(v);
    return 0;
}

static void test_verify_accepts_the_vector(void **state)
{
    vector *v = *state;
    Gamefn__V1__JoinTokenClaims *c = NULL;
    assert_int_equal(
        gf_join_token_verify(v->token, v->token_len, v->pk, expires_ms - 1, "gs-7", "p-alice", &c),
        GF_OK);
    assert_non_null(c);
    assert_string_equal(c->match_id, "m-42");
    assert_string_equal(c->ticket_id, "t-9");
    assert_int_equal(c->port, 7777);
    gf_join_token_claims_free(c);
    /* Claims not wanted, ids not checked. */
    assert_int_equal(
        gf_join_token_verify(v->token, v->token_len, v->pk, expires_ms - 1, NULL, NULL, NULL),
        GF_OK);
    gf_join_token_claims_free(NULL);
}

static void test_verify_refuses(void **state)
{
    vector *v = *state;
    static const struct {
        int64_t now;
        const char *server, *player;
        gf_err want;
    } rows[] = {
        {1767225660000, "gs-7", "p-alice", GF_ERR_PERMANENT}, /* at expiry */
        {INT64_MAX, "gs-7", "p-alice", GF_ERR_PERMANENT},
        {1767225659999, "gs-8", "p-alice", GF_ERR_CONFLICT}, /* another server */
        {1767225659999, "gs-7", "p-bob", GF_ERR_CONFLICT},   /* another player */
        {1767225659999, "", NULL, GF_ERR_CONFLICT},
        {1767225659999, NULL, "p-alic", GF_ERR_CONFLICT},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Gamefn__V1__JoinTokenClaims *c = (Gamefn__V1__JoinTokenClaims *)1;
        gf_err err = gf_join_token_verify(v->token, v->token_len, v->pk, rows[i].now,
                                          rows[i].server, rows[i].player, &c);
        if (err != rows[i].want)
            fail_msg("row %zu: got %d, want %d", i, (int)err, (int)rows[i].want);
        assert_null(c);
    }
    /* A bad signature is INVALID before anything else is looked at. */
    v->token[0] ^= 1;
    assert_int_equal(gf_join_token_verify(v->token, v->token_len, v->pk, 0, "gs-8", "p-bob", NULL),
                     GF_ERR_INVALID);
    v->token[0] ^= 1;
}

/* Signed with the right key, but not claims this build accepts. */
static void test_verify_refuses_bad_claims(void **state)
{
    vector *v = *state;
    Gamefn__V1__JoinTokenClaims c = GAMEFN__V1__JOIN_TOKEN_CLAIMS__INIT;
    c.version = 2;
    c.server_id = "gs-7";
    c.player_id = "p-alice";
    c.expires_unix_ms = expires_ms;
    uint8_t buf[256];
    size_t n = gamefn__v1__join_token_claims__pack(&c, buf);
    static const uint8_t junk[] = {0xff, 0xff, 0xff};
    const struct {
        const uint8_t *claims;
        size_t len;
    } cases[] = {{buf, n}, {junk, sizeof junk}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *token = NULL;
        size_t token_len = 0;
        assert_int_equal(
            gf_join_token_sign(cases[i].claims, cases[i].len, v->sk, &token, &token_len), GF_OK);
        const uint8_t *opened = NULL;
        size_t opened_len = 0;
        assert_int_equal(gf_join_token_open(token, token_len, v->pk, &opened, &opened_len), GF_OK);
        Gamefn__V1__JoinTokenClaims *got = NULL;
        assert_int_equal(gf_join_token_verify(token, token_len, v->pk, 0, "gs-7", "p-alice", &got),
                         GF_ERR_INVALID);
        assert_null(got);
        free(token);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_accepts_the_vector),
        cmocka_unit_test(test_verify_refuses),
        cmocka_unit_test(test_verify_refuses_bad_claims),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
