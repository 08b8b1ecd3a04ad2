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
#include "gamefn/join_key.h"
#include "gamefn/limits.h"

/* `claims` is a serialized gamefn.v1.JoinTokenClaims, 1..GF_WIRE_JOIN_CLAIMS_MAX bytes;
 * `sk` a libsodium Ed25519 secret key (seed || public key). GF_ERR_INVALID for bad
 * lengths or NULL arguments (then *token is NULL), GF_ERR_NOMEM. */
gf_err gf_join_token_sign(const uint8_t *claims, size_t claims_len,
                          const uint8_t sk[GF_WIRE_JOIN_SK_LEN], uint8_t **token,
                          size_t *token_len);

/* Loads the signing key from a secret key file (gamefn/join_key.h: the seed as hex,
 * mode 0600) into `sk` and its public half into `pk` (may be NULL). Errors as
 * gf_join_key_read(), with `why` for the log. */
gf_err gf_join_secret_load(const char *path, uint8_t sk[GF_WIRE_JOIN_SK_LEN],
                           uint8_t pk[GF_WIRE_JOIN_PK_LEN], char *why, size_t why_size);

/* Makes a new key pair: the secret key file (mode 0600) and the public key file. Refuses
 * to overwrite either (GF_ERR_CONFLICT; nothing written). The seed never leaves this
 * call. */
gf_err gf_join_keygen(const char *secret_path, const char *public_path,
                      uint8_t pk[GF_WIRE_JOIN_PK_LEN]);

#endif
