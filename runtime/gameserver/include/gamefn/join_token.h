/*
 * gamefn/join_token.h — join-token verification, for game servers (library
 * gamefn_gameserver: links libsodium and the schemas only, no NATS).
 *
 * A join token is `claims || signature` (docs/PROTOCOL.md, "Join token byte layout"):
 * claims is a serialized gamefn.v1.JoinTokenClaims (1..GF_WIRE_JOIN_CLAIMS_MAX bytes),
 * signature is Ed25519 over GF_WIRE_JOIN_CONTEXT || claims. The allocator signs
 * (functions/allocator/join_sign.h); the game server the match was allocated to
 * verifies, when the player connects:
 *
 *   Gamefn__V1__JoinTokenClaims *c = NULL;
 *   gf_err err = gf_join_token_verify(token, len, pk, now_ms, my_server_id, player, &c);
 *   if (err == GF_OK) { ... c->match_id, c->team ...; gf_join_token_claims_free(c); }
 *
 * The signature is checked over the exact bytes received: protobuf encodings are not
 * canonical across languages, so claims are never re-serialized.
 *
 * Threads: reentrant (sodium_init() is thread-safe). Ownership: see each function.
 */
#ifndef GAMEFN_JOIN_TOKEN_H
#define GAMEFN_JOIN_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/limits.h"
#include "gamefn/v1/match.pb-c.h"

/* The layout version gf_join_token_verify() accepts (JoinTokenClaims.version). */
enum { GF_JOIN_TOKEN_VERSION = 1 };

/* Checks the length and the signature of `token` with `pk`, nothing else. On GF_OK,
 * *claims / *claims_len point into `token` (borrowed). A bad length or signature is
 * GF_ERR_INVALID and leaves *claims NULL. */
gf_err gf_join_token_open(const uint8_t *token, size_t token_len,
                          const uint8_t pk[GF_WIRE_JOIN_PK_LEN], const uint8_t **claims,
                          size_t *claims_len);

/* Everything a game server checks before admitting a player:
 *   GF_ERR_INVALID    bad length, bad signature, undecodable claims, version != 1;
 *   GF_ERR_PERMANENT  expired: expires_unix_ms <= now_unix_ms (to allow for clock
 *                     skew, pass a `now` a few seconds early);
 *   GF_ERR_CONFLICT   issued for another server (server_id) or another player
 *                     (player_id); either id may be NULL to skip that check.
 * On GF_OK, *claims (when claims is not NULL) is the decoded claims, owned by the
 * caller: free with gf_join_token_claims_free(). On error *claims is NULL.
 * The caller still accepts each player_id at most once per match_id. */
gf_err gf_join_token_verify(const uint8_t *token, size_t token_len,
                            const uint8_t pk[GF_WIRE_JOIN_PK_LEN], int64_t now_unix_ms,
                            const char *server_id, const char *player_id,
                            Gamefn__V1__JoinTokenClaims **claims);

/* NULL is fine. */
void gf_join_token_claims_free(Gamefn__V1__JoinTokenClaims *claims);

#endif
