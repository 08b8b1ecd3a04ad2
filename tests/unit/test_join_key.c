/*
 * test_join_key.c — gamefn/join_key.h and the key files of join_sign.h: verification
 * against a key set with the PROTOCOL.md §7 rules (key hint, clock skew, issued as
 * not-before, retired keys), key files (modes, refusal to overwrite, malformed
 * content), and the test vector's length (158 bytes = 94 of claims + 64).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "gamefn/join_key.h"
#include "gamefn/join_token.h"
#include "join_sign.h"
#include "join_vectors.h"
#include "test_hex.h"

static const int64_t issued = 1767225600000, expires = 1767225660000;
enum { SKEW = GF_WIRE_JOIN_SKEW_MS };

typedef struct fixture {
    uint8_t *token;
    size_t token_len;
    gf_join_key keys[2]; /* [0] another key, [1] the vector's key "k2026" */
    char dir[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    size_t seed_len, claims_len, sig_len;
    uint8_t sk[64], other_seed[32] = {9};
    assert_true(sodium_init() >= 0);
    uint8_t *seed = hex(golden_seed, &seed_len);
    uint8_t *claims = hex(golden_claims, &claims_len), *sig = hex(golden_sig, &sig_len);
    assert_int_equal(crypto_sign_seed_keypair(f->keys[1].pk, sk, seed), 0);
    snprintf(f->keys[1].key_id, sizeof f->keys[1].key_id, "k2026");
    assert_int_equal(crypto_sign_seed_keypair(f->keys[0].pk, sk, other_seed), 0);
    snprintf(f->keys[0].key_id, sizeof f->keys[0].key_id, "k2025");
    f->token_len = claims_len + sig_len;
    f->token = malloc(f->token_len);
    memcpy(f->token, claims, claims_len);
    memcpy(f->token + claims_len, sig, sig_len);
    free(seed);
    free(claims);
    free(sig);
    snprintf(f->dir, sizeof f->dir, "/tmp/gamefn-join-key-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f->token);
    free(f);
    return 0;
}

static void vector_is_158_bytes(void **state)
{
    fixture *f = *state;
    assert_int_equal(f->token_len, 158);
    assert_int_equal(f->token_len - GF_WIRE_JOIN_SIG_LEN, 94);
}

static gf_err verify_at(fixture *f, int64_t now, size_t *used)
{
    return gf_join_token_verify_keys(f->token, f->token_len, f->keys, 2, now, SKEW, "gs-7",
                                     "p-alice", NULL, used);
}

static void time_window_with_skew(void **state)
{
    fixture *f = *state;
    size_t used = 99;
    assert_int_equal(verify_at(f, issued, &used), GF_OK);
    assert_int_equal(used, 1); /* the hinted key */
    /* issued is a not-before, with the skew. */
    assert_int_equal(verify_at(f, issued - SKEW, NULL), GF_OK);
    assert_int_equal(verify_at(f, issued - SKEW - 1, NULL), GF_ERR_PERMANENT);
    /* expires, with the skew. */
    assert_int_equal(verify_at(f, expires + SKEW - 1, NULL), GF_OK);
    assert_int_equal(verify_at(f, expires + SKEW, NULL), GF_ERR_PERMANENT);
    /* Server and player. */
    assert_int_equal(gf_join_token_verify_keys(f->token, f->token_len, f->keys, 2, issued, SKEW,
                                               "gs-8", NULL, NULL, NULL),
                     GF_ERR_CONFLICT);
    assert_int_equal(gf_join_token_verify_keys(f->token, f->token_len, f->keys, 2, issued, SKEW,
                                               NULL, "p-bob", NULL, NULL),
                     GF_ERR_CONFLICT);
    Gamefn__V1__JoinTokenClaims *c = NULL;
    assert_int_equal(gf_join_token_verify_keys(f->token, f->token_len, f->keys, 2, issued, SKEW,
                                               NULL, NULL, &c, NULL),
                     GF_OK);
    assert_string_equal(c->match_id, "m-42");
    gf_join_token_claims_free(c);
}

static void keys_hint_retirement_and_forgery(void **state)
{
    fixture *f = *state;
    /* The claims name k2026; under another id the key is still tried. */
    gf_join_key renamed[2];
    memcpy(renamed, f->keys, sizeof renamed);
    snprintf(renamed[1].key_id, sizeof renamed[1].key_id, "other");
    size_t used = 99;
    assert_int_equal(gf_join_token_verify_keys(f->token, f->token_len, renamed, 2, issued, SKEW,
                                               NULL, NULL, NULL, &used),
                     GF_OK);
    assert_int_equal(used, 1);
    /* Only the wrong key: refused. */
    assert_int_equal(gf_join_token_verify_keys(f->token, f->token_len, f->keys, 1, issued, SKEW,
                                               NULL, NULL, NULL, NULL),
                     GF_ERR_INVALID);
    assert_int_equal(gf_join_token_verify_keys(f->token, f->token_len, f->keys, 0, issued, SKEW,
                                               NULL, NULL, NULL, NULL),
                     GF_ERR_INVALID);
    /* Retiring the key invalidates its tokens from not_after on, before their expiry. */
    f->keys[1].not_after_unix_ms = issued + 10000;
    assert_int_equal(verify_at(f, issued + 9999, NULL), GF_OK);
    assert_int_equal(verify_at(f, issued + 10000, NULL), GF_ERR_PERMANENT);
    f->keys[1].not_after_unix_ms = 0;
    /* One flipped bit anywhere: refused. */
    for (size_t i = 0; i < f->token_len; i += 7) {
        f->token[i] ^= 0x10;
        assert_int_equal(verify_at(f, issued, NULL), GF_ERR_INVALID);
        f->token[i] ^= 0x10;
    }
    assert_int_equal(
        gf_join_token_verify_keys(f->token, 64, f->keys, 2, issued, SKEW, NULL, NULL, NULL, NULL),
        GF_ERR_INVALID);
}

static void key_files(void **state)
{
    fixture *f = *state;
    char sk_path[128], pk_path[128], path[128];
    uint8_t pk[32], read_pk[32], sk[64], derived[32];
    mode_t mask = umask(0);
    umask(mask);
    snprintf(sk_path, sizeof sk_path, "%s/k.key", f->dir);
    snprintf(pk_path, sizeof pk_path, "%s/k.pub", f->dir);
    assert_int_equal(gf_join_keygen(sk_path, pk_path, pk), GF_OK);
    struct stat st;
    assert_int_equal(stat(sk_path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stat(pk_path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644 & ~mask); /* 0644, as narrowed by the umask */
    assert_int_equal(st.st_size, 65);                  /* 64 hex digits and a newline */
    /* Refuses to overwrite either file, and writes nothing then. */
    assert_int_equal(gf_join_keygen(sk_path, pk_path, NULL), GF_ERR_CONFLICT);
    snprintf(path, sizeof path, "%s/new.pub", f->dir);
    assert_int_equal(gf_join_keygen(sk_path, path, NULL), GF_ERR_CONFLICT);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(gf_join_key_write(pk_path, false, pk), GF_ERR_CONFLICT);
    /* The public file reads back; the secret loads and derives the same public key. */
    char why[256];
    assert_int_equal(gf_join_key_read(pk_path, false, read_pk, why, sizeof why), GF_OK);
    assert_memory_equal(read_pk, pk, 32);
    assert_int_equal(gf_join_secret_load(sk_path, sk, derived, why, sizeof why), GF_OK);
    assert_memory_equal(derived, pk, 32);
    /* A secret readable by others is refused, naming the mode. */
    assert_int_equal(chmod(sk_path, 0640), 0);
    assert_int_equal(gf_join_secret_load(sk_path, sk, derived, why, sizeof why), GF_ERR_CONFIG);
    assert_non_null(strstr(why, "640"));
    /* Missing and malformed files. */
    snprintf(path, sizeof path, "%s/missing", f->dir);
    assert_int_equal(gf_join_key_read(path, false, read_pk, why, sizeof why), GF_ERR_IO);
    FILE *fp = fopen(path, "w");
    fputs("not hex at all\n", fp);
    fclose(fp);
    assert_int_equal(gf_join_key_read(path, false, read_pk, why, sizeof why), GF_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vector_is_158_bytes),
        cmocka_unit_test(time_window_with_skew),
        cmocka_unit_test(keys_hint_retirement_and_forgery),
        cmocka_unit_test(key_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
