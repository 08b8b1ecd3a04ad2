/*
 * join_sign.c — signing join tokens (see join_sign.h).
 *
 * Design notes: the context string is signed before the claims so that no other
 * signature made with the allocator's key can pass as a join token; the claims bytes
 * are copied into the token as they are, since verifiers check the bytes they get.
 */
#include "join_sign.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#define CONTEXT_LEN (sizeof GF_WIRE_JOIN_CONTEXT - 1)

gf_err gf_join_token_sign(const uint8_t *claims, size_t claims_len,
                          const uint8_t sk[GF_WIRE_JOIN_SK_LEN], uint8_t **token, size_t *token_len)
{
    uint8_t signed_msg[CONTEXT_LEN + GF_WIRE_JOIN_CLAIMS_MAX];
    if (token == NULL || token_len == NULL)
        return GF_ERR_INVALID;
    *token = NULL;
    *token_len = 0;
    if (claims == NULL || claims_len == 0 || claims_len > GF_WIRE_JOIN_CLAIMS_MAX || sk == NULL)
        return GF_ERR_INVALID;
    if (sodium_init() < 0)
        return GF_ERR_IO;

    uint8_t *t = malloc(claims_len + GF_WIRE_JOIN_SIG_LEN);
    if (t == NULL)
        return GF_ERR_NOMEM;
    memcpy(signed_msg, GF_WIRE_JOIN_CONTEXT, CONTEXT_LEN);
    memcpy(signed_msg + CONTEXT_LEN, claims, claims_len);
    memcpy(t, claims, claims_len);
    crypto_sign_detached(t + claims_len, NULL, signed_msg, CONTEXT_LEN + claims_len, sk);
    *token = t;
    *token_len = claims_len + GF_WIRE_JOIN_SIG_LEN;
    return GF_OK;
}

gf_err gf_join_secret_load(const char *path, uint8_t sk[GF_WIRE_JOIN_SK_LEN],
                           uint8_t pk[GF_WIRE_JOIN_PK_LEN], char *why, size_t why_size)
{
    uint8_t seed[crypto_sign_SEEDBYTES], public_key[GF_WIRE_JOIN_PK_LEN];
    if (sodium_init() < 0)
        return GF_ERR_IO;
    gf_err err = gf_join_key_read(path, true, seed, why, why_size);
    if (err == GF_OK && crypto_sign_seed_keypair(public_key, sk, seed) != 0)
        err = GF_ERR_IO;
    if (err == GF_OK && pk)
        memcpy(pk, public_key, sizeof public_key);
    sodium_memzero(seed, sizeof seed);
    return err;
}

gf_err gf_join_keygen(const char *secret_path, const char *public_path,
                      uint8_t pk[GF_WIRE_JOIN_PK_LEN])
{
    uint8_t seed[crypto_sign_SEEDBYTES], sk[crypto_sign_SECRETKEYBYTES];
    uint8_t public_key[GF_WIRE_JOIN_PK_LEN];
    struct stat st;
    if (!secret_path || !public_path || strcmp(secret_path, public_path) == 0)
        return GF_ERR_INVALID;
    if (sodium_init() < 0)
        return GF_ERR_IO;
    /* Check both first, so a refusal writes nothing. */
    if (stat(secret_path, &st) == 0 || stat(public_path, &st) == 0)
        return GF_ERR_CONFLICT;
    randombytes_buf(seed, sizeof seed);
    crypto_sign_seed_keypair(public_key, sk, seed);
    gf_err err = gf_join_key_write(secret_path, true, seed);
    if (err == GF_OK) {
        err = gf_join_key_write(public_path, false, public_key);
        if (err != GF_OK)
            unlink(secret_path);
    }
    if (err == GF_OK && pk)
        memcpy(pk, public_key, sizeof public_key);
    sodium_memzero(seed, sizeof seed);
    sodium_memzero(sk, sizeof sk);
    return err;
}
