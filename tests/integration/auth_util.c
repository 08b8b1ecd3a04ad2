/*
 * auth_util.c — nkey users, JWTs, .creds files, certificates and log capture for
 * test_conn_auth.c (see auth_util.h).
 *
 * Design notes:
 * - JWTs are built the way nats-io/jwt v2 writes them: JSON claims with jti, iat,
 *   iss, name, sub and a "nats" object holding type and version 2; the server
 *   checks the issuer's Ed25519 signature over "header.claims" and the issuer's
 *   place in the chain operator -> account -> user. jti is random (the server
 *   does not recompute it).
 * - Certificates come from the openssl command-line tool, run by pid through the
 *   harness's gf_proc_spawn (no shell). EC P-256 keys keep it to a few ms each.
 * - The log capture swaps file descriptor 2, because gf_log writes to stderr
 *   and offers no other sink.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "auth_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sodium.h>

#include "proc.h"

char au_dir[256];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void au_setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(au_dir, sizeof au_dir, "%s/gf-test-auth-XXXXXX", base && *base ? base : "/tmp");
    assert_non_null(mkdtemp(au_dir));
    assert_true(sodium_init() >= 0);
}

void au_teardown(void)
{
    if (au_dir[0])
        assert_int_equal(nftw(au_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS), 0);
    au_dir[0] = '\0';
}

const char *au_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", au_dir, name);
    return path;
}

const char *au_write(const char *name, const char *text)
{
    const char *path = au_path(name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(close(fd), 0);
    return path;
}

/* ---- nkeys and JWTs ---------------------------------------------------------- */

void au_key_new(au_key *k, gf__nkey_type type)
{
    k->type = type;
    randombytes_buf(k->raw, sizeof k->raw);
    assert_int_equal(gf__nkey_seed_encode(type, k->raw, k->seed), GF_OK);
    assert_int_equal(gf__nkey_public_from_raw(type, k->raw, k->pub), GF_OK);
}

static char *b64url(const void *data, size_t len)
{
    size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *out = malloc(cap);
    assert_non_null(out);
    sodium_bin2base64(out, cap, data, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return out;
}

/* Adds jti, iat, iss, sub and name to `claims` (consumed), signs it with the
 * issuer's key and returns "header.claims.signature". */
static char *sign_jwt(const au_key *issuer, const char *subject, const char *name, json_t *claims)
{
    unsigned char id[20], pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
    unsigned char sig[crypto_sign_BYTES];
    char jti[sizeof id * 2 + 1];
    randombytes_buf(id, sizeof id);
    sodium_bin2hex(jti, sizeof jti, id, sizeof id);
    assert_int_equal(json_object_set_new(claims, "jti", json_string(jti)), 0);
    assert_int_equal(json_object_set_new(claims, "iat", json_integer((json_int_t)time(NULL))), 0);
    assert_int_equal(json_object_set_new(claims, "iss", json_string(issuer->pub)), 0);
    assert_int_equal(json_object_set_new(claims, "sub", json_string(subject)), 0);
    assert_int_equal(json_object_set_new(claims, "name", json_string(name)), 0);

    static const char header[] = "{\"typ\":\"JWT\",\"alg\":\"ed25519-nkey\"}";
    char *body = json_dumps(claims, JSON_COMPACT);
    json_decref(claims);
    assert_non_null(body);
    char *h64 = b64url(header, strlen(header));
    char *c64 = b64url(body, strlen(body));
    free(body);

    size_t signed_len = strlen(h64) + 1 + strlen(c64);
    char *jwt =
        malloc(signed_len + 1 +
               sodium_base64_ENCODED_LEN(sizeof sig, sodium_base64_VARIANT_URLSAFE_NO_PADDING));
    assert_non_null(jwt);
    sprintf(jwt, "%s.%s", h64, c64);
    free(h64);
    free(c64);

    assert_int_equal(crypto_sign_seed_keypair(pk, sk, issuer->raw), 0);
    crypto_sign_detached(sig, NULL, (const unsigned char *)jwt, signed_len, sk);
    sodium_memzero(sk, sizeof sk);
    char *s64 = b64url(sig, sizeof sig);
    sprintf(jwt + signed_len, ".%s", s64);
    free(s64);
    return jwt;
}

char *au_operator_jwt(const au_key *op)
{
    json_t *c = json_pack("{s:{s:s,s:i}}", "nats", "type", "operator", "version", 2);
    assert_non_null(c);
    return sign_jwt(op, op->pub, "gamefn-test-operator", c);
}

char *au_account_jwt(const au_key *op, const au_key *account)
{
    json_t *c = json_pack("{s:{s:{s:i,s:i,s:i,s:i,s:i,s:b,s:i,s:i},s:{s:{},s:{}},s:s,s:i}}", "nats",
                          "limits", "subs", -1, "data", -1, "payload", -1, "imports", -1, "exports",
                          -1, "wildcards", 1, "conn", -1, "leaf", -1, "default_permissions", "pub",
                          "sub", "type", "account", "version", 2);
    assert_non_null(c);
    return sign_jwt(op, account->pub, "gamefn-test-account", c);
}

char *au_user_jwt(const au_key *account, const au_key *user)
{
    json_t *c = json_pack("{s:{s:{},s:{},s:i,s:i,s:i,s:s,s:i}}", "nats", "pub", "sub", "subs", -1,
                          "data", -1, "payload", -1, "type", "user", "version", 2);
    assert_non_null(c);
    return sign_jwt(account, user->pub, "gamefn-test-user", c);
}

const char *au_write_creds(const char *name, const char *jwt, const au_key *user)
{
    size_t cap = strlen(jwt) + 1024;
    char *text = malloc(cap);
    assert_non_null(text);
    snprintf(text, cap,
             "-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
             "************************* IMPORTANT *************************\n"
             "NKEY Seed printed below can be used to sign and prove identity.\n"
             "NKEYs are sensitive and should be treated as secrets.\n\n"
             "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n\n"
             "*************************************************************\n",
             jwt, user->seed);
    const char *path = au_write(name, text);
    sodium_memzero(text, cap);
    free(text);
    return path;
}

/* ---- certificates -------------------------------------------------------------- */

bool au_have_openssl(void)
{
    const char *path = getenv("PATH");
    char candidate[512];
    while (path && *path) {
        size_t len = strcspn(path, ":");
        if (len > 0 &&
            snprintf(candidate, sizeof candidate, "%.*s/openssl", (int)len, path) <
                (int)sizeof candidate &&
            access(candidate, X_OK) == 0)
            return true;
        path += len;
        if (*path == ':')
            path++;
    }
    return false;
}

/* Runs openssl with the given arguments (NULL-terminated) and asserts exit 0. */
static void openssl(const char *first, ...)
{
    char *argv[32];
    int n = 0;
    va_list ap;
    argv[n++] = strdup("openssl");
    va_start(ap, first);
    for (const char *a = first; a && n < 31; a = va_arg(ap, const char *))
        argv[n++] = strdup(a);
    va_end(ap);
    argv[n] = NULL;
    for (int i = 0; i < n; i++)
        assert_non_null(argv[i]);
    gf_proc p = {0};
    char log[512];
    snprintf(log, sizeof log, "%s/openssl.log", au_dir);
    assert_int_equal(gf_proc_spawn(&p, argv, NULL, log), 0);
    assert_int_equal(gf_proc_wait(&p, 20000), 0);
    if (!gf_proc_exited_with(&p, 0)) {
        gf_proc_dump_log(&p, 20);
        fail_msg("openssl %s failed", argv[1]);
    }
    for (int i = 0; i < n; i++)
        free(argv[i]);
    unlink(log);
}

void au_make_ca(const char *name)
{
    char key[512], pem[512], subj[128];
    snprintf(key, sizeof key, "%s/%s.key", au_dir, name);
    snprintf(pem, sizeof pem, "%s/%s.pem", au_dir, name);
    snprintf(subj, sizeof subj, "/CN=gamefn-test-%s", name);
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", pem, "-days", "2", "-subj", subj, (const char *)NULL);
}

void au_make_cert(const char *name, const char *ca, const char *san)
{
    char key[512], csr[512], pem[512], ca_pem[512], ca_key[512], ext[512], subj[128];
    char ext_text[256];
    snprintf(key, sizeof key, "%s/%s.key", au_dir, name);
    snprintf(csr, sizeof csr, "%s/%s.csr", au_dir, name);
    snprintf(pem, sizeof pem, "%s/%s.pem", au_dir, name);
    snprintf(ca_pem, sizeof ca_pem, "%s/%s.pem", au_dir, ca);
    snprintf(ca_key, sizeof ca_key, "%s/%s.key", au_dir, ca);
    snprintf(subj, sizeof subj, "/CN=%s", name);
    snprintf(ext_text, sizeof ext_text, "[leaf]\nbasicConstraints = critical, CA:FALSE\n%s%s\n",
             san ? "subjectAltName = " : "", san ? san : "");
    snprintf(ext, sizeof ext, "%s", au_write("ext.cnf", ext_text));
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            key, "-out", csr, "-subj", subj, (const char *)NULL);
    openssl("x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial", "-out",
            pem, "-days", "2", "-extfile", ext, "-extensions", "leaf", (const char *)NULL);
    unlink(csr);
    unlink(ext);
}

/* ---- log capture ---------------------------------------------------------------- */

static int saved_stderr = -1;
static char capture_path[512];

void au_capture_begin(void)
{
    snprintf(capture_path, sizeof capture_path, "%s/capture.log", au_dir);
    fflush(stderr);
    int fd = open(capture_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    saved_stderr = dup(2);
    assert_true(saved_stderr >= 0);
    assert_true(dup2(fd, 2) == 2);
    close(fd);
}

const char *au_capture_end(void)
{
    static char buf[65536];
    fflush(stderr);
    if (saved_stderr >= 0) {
        dup2(saved_stderr, 2);
        close(saved_stderr);
        saved_stderr = -1;
    }
    size_t n = 0;
    FILE *f = fopen(capture_path, "r");
    if (f) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    unlink(capture_path);
    fputs(buf, stderr);
    return buf;
}

int au_count_lines(const char *log, const char *needle)
{
    int count = 0;
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit && hit < line + len)
            count++;
        line = end ? end + 1 : NULL;
    }
    return count;
}

void au_assert_no_secret(const char *log, const char *secret)
{
    size_t n = strlen(secret);
    for (size_t i = 0; i + 8 <= n; i++) {
        char piece[9];
        memcpy(piece, secret + i, 8);
        piece[8] = '\0';
        if (strstr(log, piece))
            fail_msg("the log holds part of a secret: '%s'", piece);
    }
}
