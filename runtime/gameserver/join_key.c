/*
 * join_key.c — key files and key-set verification (see gamefn/join_key.h).
 *
 * Design notes: the claims' key_id is read before the signature is checked, but only
 * as a hint for which key to try first; nothing else in the claims is looked at until
 * a key verified the exact bytes received. Time checks come after the signature, so
 * an attacker learns nothing about the window from a forged token.
 */
#include "gamefn/join_key.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "gamefn/join_token.h"
#include "gamefn/names.h"

enum { KEY_HEX = 64 };

static void say(char *why, size_t size, const char *text, const char *path)
{
    if (why && size)
        snprintf(why, size, "%s: %s", path, text);
}

gf_err gf_join_key_read(const char *path, bool secret, uint8_t out[32], char *why, size_t why_size)
{
    char buf[KEY_HEX + 4];
    struct stat st;
    if (!path || !out)
        return GF_ERR_INVALID;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        say(why, why_size, strerror(errno), path);
        return GF_ERR_IO;
    }
    if (fstat(fd, &st) != 0) {
        say(why, why_size, strerror(errno), path);
        close(fd);
        return GF_ERR_IO;
    }
    if (secret && (st.st_mode & 077)) {
        if (why && why_size)
            snprintf(why, why_size,
                     "%s: secret key file has mode %03o; allow the owner only (0600)", path,
                     (unsigned)(st.st_mode & 0777));
        close(fd);
        return GF_ERR_CONFIG;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0) {
        say(why, why_size, "cannot read", path);
        return GF_ERR_IO;
    }
    size_t len = (size_t)n;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    size_t bin_len = 0;
    if (len != KEY_HEX || sodium_hex2bin(out, 32, buf, len, NULL, &bin_len, NULL) != 0 ||
        bin_len != 32) {
        sodium_memzero(buf, sizeof buf);
        say(why, why_size, "not a key file (want one line of 64 hex digits)", path);
        return GF_ERR_INVALID;
    }
    sodium_memzero(buf, sizeof buf);
    return GF_OK;
}

gf_err gf_join_key_write(const char *path, bool secret, const uint8_t key[32])
{
    char line[KEY_HEX + 2];
    if (!path || !key)
        return GF_ERR_INVALID;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, secret ? 0600 : 0644);
    if (fd < 0)
        return errno == EEXIST ? GF_ERR_CONFLICT : GF_ERR_IO;
    sodium_bin2hex(line, sizeof line - 1, key, 32);
    line[KEY_HEX] = '\n';
    line[KEY_HEX + 1] = '\0';
    /* The umask narrows the public file's 0644 as the caller wants (the local stack keeps
     * everything private); the secret file is 0600 or narrower either way. */
    bool ok = write(fd, line, KEY_HEX + 1) == KEY_HEX + 1 && fsync(fd) == 0;
    sodium_memzero(line, sizeof line);
    if (close(fd) != 0)
        ok = false;
    if (!ok) {
        unlink(path);
        return GF_ERR_IO;
    }
    return GF_OK;
}

gf_err gf_join_keys_from_wire(Gamefn__V1__JoinKey *const *wire, size_t wire_len, gf_join_key *keys,
                              size_t max, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < wire_len && *n < max; i++) {
        const Gamefn__V1__JoinKey *w = wire[i];
        if (!w || !gf_name_id_ok(w->key_id, GF_WIRE_NAME_MAX, NULL, 0) ||
            w->public_key.len != GF_WIRE_JOIN_PK_LEN)
            return GF_ERR_INVALID;
        gf_join_key *k = &keys[(*n)++];
        snprintf(k->key_id, sizeof k->key_id, "%s", w->key_id);
        memcpy(k->pk, w->public_key.data, GF_WIRE_JOIN_PK_LEN);
        k->not_after_unix_ms = w->not_after_unix_ms;
    }
    return GF_OK;
}

/* The index of the key the claims name, or n when none (or undecodable). */
static size_t hinted_key(const uint8_t *token, size_t token_len, const gf_join_key *keys, size_t n)
{
    if (token_len <= GF_WIRE_JOIN_SIG_LEN)
        return n;
    Gamefn__V1__JoinTokenClaims *c =
        gamefn__v1__join_token_claims__unpack(NULL, token_len - GF_WIRE_JOIN_SIG_LEN, token);
    size_t found = n;
    for (size_t i = 0; c && c->key_id && i < n && found == n; i++)
        if (strcmp(keys[i].key_id, c->key_id) == 0)
            found = i;
    gf_join_token_claims_free(c);
    return found;
}

gf_err gf_join_token_verify_keys(const uint8_t *token, size_t token_len, const gf_join_key *keys,
                                 size_t n_keys, int64_t now_unix_ms, int64_t skew_ms,
                                 const char *server_id, const char *player_id,
                                 Gamefn__V1__JoinTokenClaims **claims, size_t *used)
{
    const uint8_t *bytes = NULL;
    size_t len = 0, key = n_keys;
    if (claims)
        *claims = NULL;
    if (!keys || n_keys == 0)
        return GF_ERR_INVALID;
    size_t first = hinted_key(token, token_len, keys, n_keys);
    /* The hinted key first, then every other one. */
    for (size_t k = 0; k <= n_keys && key == n_keys; k++) {
        size_t i = k == 0 ? first : k - 1;
        if (i >= n_keys || (k > 0 && i == first))
            continue;
        if (gf_join_token_open(token, token_len, keys[i].pk, &bytes, &len) == GF_OK)
            key = i;
    }
    if (key == n_keys)
        return GF_ERR_INVALID;
    /* Signature good: now the meaning, with the plain verifier's checks at a clock
     * moved by the skew, then the not-before and the key's retirement. */
    Gamefn__V1__JoinTokenClaims *c = NULL;
    gf_err err = gf_join_token_verify(token, token_len, keys[key].pk, now_unix_ms - skew_ms,
                                      server_id, player_id, &c);
    if (err == GF_OK &&
        (c->issued_unix_ms - skew_ms > now_unix_ms ||
         (keys[key].not_after_unix_ms != 0 && now_unix_ms >= keys[key].not_after_unix_ms)))
        err = GF_ERR_PERMANENT;
    if (err != GF_OK || !claims)
        gf_join_token_claims_free(c);
    else
        *claims = c;
    if (err == GF_OK && used)
        *used = key;
    return err;
}
