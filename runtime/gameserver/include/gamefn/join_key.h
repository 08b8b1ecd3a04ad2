/*
 * gamefn/join_key.h — join-token keys: key files, and verification against the set of
 * keys a verifier accepts (library gamefn_gameserver: libsodium and the schemas, no
 * NATS).
 *
 * Key files (written by `gamefn keygen`) are one line of 64 lowercase hex digits and a
 * newline: the 32-byte Ed25519 seed in the secret key file, the 32-byte public key in
 * the public key file. A secret key file must not be readable by group or others
 * (mode 0600), as ssh insists for its keys.
 *
 * The rules of docs/PROTOCOL.md §7 are in gf_join_token_verify_keys():
 *   - the key: the one whose key_id the claims name (an unknown key_id: every key is
 *     tried); a key with not_after_unix_ms != 0 is refused from that instant on, so
 *     retiring a key invalidates every token it signed, whatever their own expiry;
 *   - the time window, with `skew_ms` of clock skew allowed (GF_WIRE_JOIN_SKEW_MS):
 *     valid from issued_unix_ms - skew (issued is a not-before), and before
 *     expires_unix_ms + skew.
 *
 * Threads: reentrant. Ownership: see each function; keys are plain values.
 */
#ifndef GAMEFN_JOIN_KEY_H
#define GAMEFN_JOIN_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/limits.h"
#include "gamefn/v1/fleet.pb-c.h"
#include "gamefn/v1/match.pb-c.h"

/* One accepted public key (gamefn.v1.JoinKey as a C value). */
typedef struct gf_join_key {
    char key_id[GF_WIRE_NAME_MAX + 1];
    uint8_t pk[GF_WIRE_JOIN_PK_LEN];
    int64_t not_after_unix_ms; /* 0 = no end */
} gf_join_key;

/* Reads a key file into `out` (32 bytes). `secret`: the file must not be accessible
 * to group or others (GF_ERR_CONFIG otherwise, naming the mode in `why`). GF_ERR_IO
 * when it cannot be read, GF_ERR_INVALID when it is not 64 hex digits. `why` (may be
 * NULL) gets a phrase for the log. */
gf_err gf_join_key_read(const char *path, bool secret, uint8_t out[32], char *why, size_t why_size);

/* Writes the 32 bytes as a key file. Refuses to overwrite (GF_ERR_CONFLICT when the
 * path exists); `secret` files are created with mode 0600, public ones 0644, both
 * narrowed by the umask. */
gf_err gf_join_key_write(const char *path, bool secret, const uint8_t key[32]);

/* Fills `keys` (up to max) from JoinKey messages; GF_ERR_INVALID for a bad key_id or
 * a public key that is not 32 bytes. *n gets the count. */
gf_err gf_join_keys_from_wire(Gamefn__V1__JoinKey *const *wire, size_t wire_len, gf_join_key *keys,
                              size_t max, size_t *n);

/* gf_join_token_verify() (gamefn/join_token.h) against a key set, with the key's
 * retirement and the clock skew applied. Results:
 *   GF_ERR_INVALID    bad length, no key verifies the signature, undecodable claims,
 *                     version != 1;
 *   GF_ERR_PERMANENT  outside its time window (expired, not yet valid) or its key
 *                     retired at `now`;
 *   GF_ERR_CONFLICT   issued for another server or player (either may be NULL: not
 *                     checked).
 * On GF_OK, *claims (when not NULL) is owned by the caller
 * (gf_join_token_claims_free()), and *used (when not NULL) is the index of the key
 * that verified it. */
gf_err gf_join_token_verify_keys(const uint8_t *token, size_t token_len, const gf_join_key *keys,
                                 size_t n_keys, int64_t now_unix_ms, int64_t skew_ms,
                                 const char *server_id, const char *player_id,
                                 Gamefn__V1__JoinTokenClaims **claims, size_t *used);

#endif
