/*
 * join_sign.h — signing join tokens, for the allocator (library gamefn_join_sign:
 * libsodium only, no NATS).
 *
 * token = claims || Ed25519-sign(sk, GF_WIRE_JOIN_CONTEXT || claims), the layout of
 * docs/PROTOCOL.md ("Join token byte layout"); game servers verify it with
 * gamefn/join_token.h. Ed25519 is deterministic: the same key and claims always give
 * the same token, which the golden vector in tests/unit/test_join_sign.c pins down.
 *
 * Threads: reentrant. Ownership: *token is malloc'd, the caller frees it; the secret
 * key is borrowed and never copied.
 */
#ifndef GAMEFN_JOIN_SIGN_H
#define GAMEFN_JOIN_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/limits.h"

/* `claims` is a serialized gamefn.v1.JoinTokenClaims, 1..GF_WIRE_JOIN_CLAIMS_MAX bytes;
 * `sk` a libsodium Ed25519 secret key (seed || public key). GF_ERR_INVALID for bad
 * lengths or NULL arguments (then *token is NULL), GF_ERR_NOMEM. */
gf_err gf_join_token_sign(const uint8_t *claims, size_t claims_len,
                          const uint8_t sk[GF_WIRE_JOIN_SK_LEN], uint8_t **token,
                          size_t *token_len);

#endif
