/*
 * nkey.h — NATS nkeys: encoded seeds and public keys (private to the runtime).
 *
 * An nkey is an Ed25519 key pair written as RFC 4648 base32 without padding:
 *
 *   public key: [type byte][32-byte Ed25519 public key][CRC16 LE]      -> 56 chars, "U..."
 *   seed:       [seed byte | type>>5][(type&31)<<3][32-byte seed][CRC] -> 58 chars, "SU..."
 *
 * with the CRC16/XMODEM (poly 0x1021, init 0) of every byte before it. conn.c
 * uses this to derive the public key that natsOptions_SetNKeyFromSeed() needs
 * from the seed file named by nats.nkey_seed; tests use the encoders to create
 * users, accounts and operators.
 *
 * Errors: malformed input returns GF_ERR_CONFIG (the seed is configuration) and
 * writes what is wrong into `why` (may be NULL). `why` never holds any character
 * of the seed. GF_ERR_INVALID is for programmer errors (NULL, bad type).
 *
 * Secrets: every buffer that held seed bytes is wiped with sodium_memzero()
 * before return; the file is read into sodium_malloc()ed memory. Nothing here
 * logs. Ownership: callers own every buffer; nothing is allocated for them.
 * Threads: all functions are reentrant (they call sodium_init(), which is
 * thread-safe).
 */
#ifndef GAMEFN_NKEY_H
#define GAMEFN_NKEY_H

#include <stddef.h>

#include "gamefn/err.h"

enum {
    GF__NKEY_RAW_LEN = 32,    /* Ed25519 seed or public key bytes */
    GF__NKEY_SEED_LEN = 58,   /* encoded seed, without the NUL */
    GF__NKEY_PUBLIC_LEN = 56, /* encoded public key, without the NUL */
    GF__NKEY_FILE_MAX = 16384 /* a seed file larger than this is refused */
};

/* The key types gamefn deals with; values are the nkeys prefix bytes. */
typedef enum gf__nkey_type {
    GF__NKEY_ACCOUNT = 0,        /* 'A' */
    GF__NKEY_OPERATOR = 14 << 3, /* 'O' */
    GF__NKEY_USER = 20 << 3,     /* 'U' */
} gf__nkey_type;

/* Writes the encoded seed of `raw` (58 chars + NUL) into out. */
gf_err gf__nkey_seed_encode(gf__nkey_type type, const unsigned char raw[GF__NKEY_RAW_LEN],
                            char out[GF__NKEY_SEED_LEN + 1]);

/* Decodes exactly `len` characters of `text` (no whitespace allowed) as a seed of
 * type `want`: base32, length, checksum, seed prefix and key type are checked. */
gf_err gf__nkey_seed_decode(const char *text, size_t len, gf__nkey_type want,
                            unsigned char raw[GF__NKEY_RAW_LEN], char *why, size_t why_size);

/* Derives the Ed25519 key pair of `raw` and writes its encoded public key
 * (56 chars + NUL, starting with the type's letter) into out. */
gf_err gf__nkey_public_from_raw(gf__nkey_type type, const unsigned char raw[GF__NKEY_RAW_LEN],
                                char out[GF__NKEY_PUBLIC_LEN + 1]);

/* Reads the user seed file at `path` the way nats.c 3.4.1 reads it when it signs
 * (either one line holding the seed, or the first "-----BEGIN ...-----" block as
 * nsc writes it) and writes the user's public key into out. Anything nats.c
 * would fail to sign with later (CRLF line ends, whitespace after the seed, a
 * JWT block first) is refused here, with the reason. A missing or unreadable
 * file is GF_ERR_CONFIG too. */
gf_err gf__nkey_seed_file_public(const char *path, char out[GF__NKEY_PUBLIC_LEN + 1], char *why,
                                 size_t why_size);

#endif
