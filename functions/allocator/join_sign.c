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
