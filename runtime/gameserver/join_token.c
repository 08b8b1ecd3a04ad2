/*
 * join_token.c — join-token verification (see gamefn/join_token.h).
 *
 * Design notes: the signed message is the context string followed by the claims, so
 * a signature made with the same key for anything else can never pass as a join
 * token. The order of checks follows docs/PROTOCOL.md: length, signature, decode,
 * version, then the claims' meaning; nothing from the claims is trusted before the
 * signature verified.
 */
#include "gamefn/join_token.h"

#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#define CONTEXT_LEN (sizeof GF_WIRE_JOIN_CONTEXT - 1)

gf_err gf_join_token_open(const uint8_t *token, size_t token_len,
                          const uint8_t pk[GF_WIRE_JOIN_PK_LEN], const uint8_t **claims,
                          size_t *claims_len)
{
    uint8_t signed_msg[CONTEXT_LEN + GF_WIRE_JOIN_CLAIMS_MAX];
    if (claims == NULL || claims_len == NULL)
        return GF_ERR_INVALID;
    *claims = NULL;
    *claims_len = 0;
    if (token == NULL || pk == NULL || token_len <= GF_WIRE_JOIN_SIG_LEN ||
        token_len > GF_WIRE_JOIN_CLAIMS_MAX + GF_WIRE_JOIN_SIG_LEN)
        return GF_ERR_INVALID;
    if (sodium_init() < 0)
        return GF_ERR_IO;

    size_t n = token_len - GF_WIRE_JOIN_SIG_LEN;
    memcpy(signed_msg, GF_WIRE_JOIN_CONTEXT, CONTEXT_LEN);
    memcpy(signed_msg + CONTEXT_LEN, token, n);
    if (crypto_sign_verify_detached(token + n, signed_msg, CONTEXT_LEN + n, pk) != 0)
        return GF_ERR_INVALID;
    *claims = token;
    *claims_len = n;
    return GF_OK;
}

static bool same(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

gf_err gf_join_token_verify(const uint8_t *token, size_t token_len,
                            const uint8_t pk[GF_WIRE_JOIN_PK_LEN], int64_t now_unix_ms,
                            const char *server_id, const char *player_id,
                            Gamefn__V1__JoinTokenClaims **claims)
{
    const uint8_t *bytes = NULL;
    size_t len = 0;
    Gamefn__V1__JoinTokenClaims *c = NULL;
    if (claims)
        *claims = NULL;
    gf_err err = gf_join_token_open(token, token_len, pk, &bytes, &len);
    if (err != GF_OK)
        return err;
    c = gamefn__v1__join_token_claims__unpack(NULL, len, bytes);
    if (c == NULL || c->version != GF_JOIN_TOKEN_VERSION)
        err = GF_ERR_INVALID;
    else if (c->expires_unix_ms <= now_unix_ms)
        err = GF_ERR_PERMANENT;
    else if ((server_id && !same(c->server_id, server_id)) ||
             (player_id && !same(c->player_id, player_id)))
        err = GF_ERR_CONFLICT;
    if (err != GF_OK || claims == NULL) {
        gf_join_token_claims_free(c);
        return err;
    }
    *claims = c;
    return GF_OK;
}

void gf_join_token_claims_free(Gamefn__V1__JoinTokenClaims *claims)
{
    if (claims)
        gamefn__v1__join_token_claims__free_unpacked(claims, NULL);
}
