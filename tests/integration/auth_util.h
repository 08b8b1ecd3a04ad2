/*
 * auth_util.h — what test_conn_auth.c needs besides the server: nkey users,
 * operator/account/user JWTs and .creds files, certificates made with the
 * openssl command-line tool, and a capture of the runtime's log lines.
 *
 * Everything is written under au_dir, a directory made in $TMPDIR by
 * au_setup() and removed with its contents by au_teardown(). Functions assert
 * (cmocka) on failure, so they fail the calling test. Test-only; main thread only.
 */
#ifndef GAMEFN_TEST_AUTH_UTIL_H
#define GAMEFN_TEST_AUTH_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "nats/nkey.h"

extern char au_dir[256];

void au_setup(void);
void au_teardown(void);

/* au_dir/<name>; the buffer is static and reused: copy it if kept. */
const char *au_path(const char *name);
/* Writes `text` to au_dir/<name> (mode 0600) and returns its path (static, see au_path). */
const char *au_write(const char *name, const char *text);

/* ---- nkeys and JWTs ---------------------------------------------------------- */

typedef struct au_key {
    gf__nkey_type type;
    unsigned char raw[GF__NKEY_RAW_LEN];
    char seed[GF__NKEY_SEED_LEN + 1];
    char pub[GF__NKEY_PUBLIC_LEN + 1];
} au_key;

/* A fresh random key of `type`. */
void au_key_new(au_key *k, gf__nkey_type type);

/* NATS v2 JWTs (header {"typ":"JWT","alg":"ed25519-nkey"}, Ed25519 signature of
 * "header.claims" by the issuer, all base64url without padding). Limits are
 * unlimited (-1) so the server accepts connections and subscriptions. The
 * caller frees the strings. */
char *au_operator_jwt(const au_key *op);
char *au_account_jwt(const au_key *op, const au_key *account);
char *au_user_jwt(const au_key *account, const au_key *user);

/* Writes a .creds file the way nsc does (JWT block, then seed block). */
const char *au_write_creds(const char *name, const char *jwt, const au_key *user);

/* ---- certificates -------------------------------------------------------------- */

/* true if an `openssl` program is on PATH. */
bool au_have_openssl(void);
/* A self-signed CA: au_dir/<name>.pem and <name>.key. */
void au_make_ca(const char *name);
/* A leaf certificate signed by CA `ca`: <name>.pem, <name>.key, with
 * subjectAltName `san` (e.g. "IP:127.0.0.1, DNS:localhost"; NULL for none, as
 * for a client certificate). */
void au_make_cert(const char *name, const char *ca, const char *san);

/* ---- log capture ---------------------------------------------------------------- */

/* Sends the process's stderr (where gf_log writes) to a file until au_capture_end(),
 * which restores it, echoes the captured lines to the real stderr, and returns
 * them (static buffer, NUL-terminated, truncated to its size). Do not assert in
 * between: cmocka reports failures on stderr. */
void au_capture_begin(void);
const char *au_capture_end(void);

/* Number of lines in `log` that contain `needle`. */
int au_count_lines(const char *log, const char *needle);

/* Fails unless no 8-character piece of `secret` appears in `log`. */
void au_assert_no_secret(const char *log, const char *secret);

#endif
