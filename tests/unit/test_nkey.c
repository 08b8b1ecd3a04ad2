/*
 * test_nkey.c — runtime/src/nats/nkey.h: seed and public key encoding, seed files.
 *
 * Golden vectors: produced by nkeys.js 1.1.0 (npm; its Ed25519 is tweetnacl, not
 * libsodium) with Codec.encodeSeed(prefix, raw) and fromSeed(seed).getPublicKey(),
 * for the raw seeds listed (all zero, all 0xff, 00..1f, RFC 8032 test 1's secret
 * key, and one random key nkeys.js made itself). The RFC 8032 row's public key
 * decodes to the RFC's d75a9801...f707511a.
 *
 * Malformed inputs are built with this file's own base32/CRC16 encoder (written
 * independently of nkey.c) so that a wrong prefix or type can carry a valid
 * checksum and reach the check that must refuse it.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nats/nkey.h"

typedef struct vector {
    gf__nkey_type type;
    const char *raw_hex;
    const char *seed;
    const char *pub;
} vector;

static const vector vectors[] = {
    /* clang-format off */
    {GF__NKEY_USER, "0000000000000000000000000000000000000000000000000000000000000000",
     "SUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEQ",
     "UA5WUJ54Z23KILLCUOUNAKTPBVZWKMQVO4O6EQ5GHLAERIMLLHNCTYM5"},
    {GF__NKEY_USER, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
     "SUAP777777777777777777777777777777777777777777777777775UUA",
     "UB3KCWJAISTOJ5IREZN4U45GATMQWBJJ2HPWAK7DBIM2SJLWMDI7LRYD"},
    {GF__NKEY_USER, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
     "SUAAAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4H776Y",
     "UAB2CB576PHBBPQ5ODORRZ2LYCMWPZGWGCN2KDK7DXOIMZASKUY3RLKK"},
    {GF__NKEY_USER, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "SUAJ2YNRTXX72WTAXKCEV5ES5QWMIRCJYVUXWMTJDFYDXLADDSXH6YALCA",
     "UDLVVGABQKYQVN6VJP7NHSLEA45A5YLS6PNKMIZFV4BBU2HXA5IRUVAL"},
    {GF__NKEY_USER, "839957e84944f018dc7d13e60e0240b7b3aa3a78cbf3edb24b39e99413245ac5",
     "SUAIHGKX5BEUJ4AY3R6RHZQOAJALPM5KHJ4MX47NWJFTT2MUCMSFVRMDJI",
     "UDCGQJ7ZYGJCWOUDEWNK2M3W64SEDNN6J5C665PY2V5TEUEURC23N7QB"},
    {GF__NKEY_ACCOUNT, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
     "SAAAAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4HYMHI",
     "AAB2CB576PHBBPQ5ODORRZ2LYCMWPZGWGCN2KDK7DXOIMZASKUY3QPZV"},
    {GF__NKEY_OPERATOR, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
     "SOAAAAICAMCAKBQHBAEQUCYMBUHA6EARCIJRIFIWC4MBSGQ3DQOR4H2AJA",
     "OAB2CB576PHBBPQ5ODORRZ2LYCMWPZGWGCN2KDK7DXOIMZASKUY3QZVT"},
    /* clang-format on */
};

static const char *const user_seed = "SUAIHGKX5BEUJ4AY3R6RHZQOAJALPM5KHJ4MX47NWJFTT2MUCMSFVRMDJI";
static const char *const user_pub = "UDCGQJ7ZYGJCWOUDEWNK2M3W64SEDNN6J5C665PY2V5TEUEURC23N7QB";

static char tmpdir[256];

/* ---- an independent encoder for crafting inputs ---------------------------- */

static uint16_t t_crc16(const unsigned char *p, size_t n)
{
    /* bitwise CRC-16/XMODEM, most significant bit first */
    uint32_t crc = 0;
    for (size_t i = 0; i < n; i++)
        for (int b = 7; b >= 0; b--) {
            uint32_t top = ((crc >> 15) ^ (uint32_t)(p[i] >> b)) & 1;
            crc = ((crc << 1) & 0xffff) ^ (top ? 0x1021 : 0);
        }
    return (uint16_t)crc;
}

static void t_base32(const unsigned char *in, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    size_t bits = n * 8, o = 0;
    for (size_t bit = 0; bit < bits; bit += 5) {
        unsigned v = 0;
        for (size_t k = 0; k < 5; k++) {
            size_t pos = bit + k;
            unsigned b = pos < bits ? (in[pos / 8] >> (7 - pos % 8)) & 1 : 0;
            v = (v << 1) | b;
        }
        out[o++] = a[v];
    }
    out[o] = '\0';
}

/* 36 bytes: b0, b1, 32 bytes of `fill`, CRC (optionally wrong). */
static void craft_seed(unsigned char b0, unsigned char b1, unsigned char fill, bool bad_crc,
                       char out[GF__NKEY_SEED_LEN + 1])
{
    unsigned char buf[36];
    buf[0] = b0;
    buf[1] = b1;
    memset(buf + 2, fill, 32);
    uint16_t crc = t_crc16(buf, 34);
    if (bad_crc)
        crc ^= 0x0100;
    buf[34] = (unsigned char)(crc & 0xff);
    buf[35] = (unsigned char)(crc >> 8);
    t_base32(buf, sizeof buf, out);
}

/* ---- files -------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int group_setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/gf-test-nkey-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* Writes `len` bytes to a fresh file in tmpdir; returns its path (static). */
static const char *write_file(const char *content, size_t len)
{
    static char path[320];
    static int n;
    snprintf(path, sizeof path, "%s/seed-%d.nk", tmpdir, n++);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(content, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

static const char *write_text(const char *content)
{
    return write_file(content, strlen(content));
}

/* No 6-character piece of `secret` may appear in `text`. */
static void assert_no_secret(const char *text, const char *secret)
{
    size_t n = strlen(secret);
    for (size_t i = 0; i + 6 <= n; i++) {
        char piece[7];
        memcpy(piece, secret + i, 6);
        piece[6] = '\0';
        if (strstr(text, piece))
            fail_msg("'%s' quotes part of the seed", text);
    }
}

/* ---- tests -------------------------------------------------------------------- */

static void vectors_round_trip(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        const vector *v = &vectors[i];
        unsigned char raw[GF__NKEY_RAW_LEN], back[GF__NKEY_RAW_LEN];
        size_t len = 0;
        char seed[GF__NKEY_SEED_LEN + 1], pub[GF__NKEY_PUBLIC_LEN + 1], why[256] = "";
        assert_int_equal(
            sodium_hex2bin(raw, sizeof raw, v->raw_hex, strlen(v->raw_hex), NULL, &len, NULL), 0);
        assert_int_equal(len, sizeof raw);

        assert_int_equal(gf__nkey_seed_encode(v->type, raw, seed), GF_OK);
        assert_string_equal(seed, v->seed);
        assert_int_equal(
            gf__nkey_seed_decode(v->seed, strlen(v->seed), v->type, back, why, sizeof why), GF_OK);
        assert_memory_equal(back, raw, sizeof raw);
        assert_int_equal(gf__nkey_public_from_raw(v->type, raw, pub), GF_OK);
        assert_string_equal(pub, v->pub);
    }
}

static void rfc8032_public_key_is_inside(void **state)
{
    (void)state;
    /* Independent of nkeys.js: the RFC's public key, wrapped by the test's own
     * encoder, must equal what nkey.c derives from the RFC's secret key. */
    unsigned char raw[32], buf[35];
    char expect[GF__NKEY_PUBLIC_LEN + 1], pub[GF__NKEY_PUBLIC_LEN + 1];
    const char *sk = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const char *pk = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    assert_int_equal(sodium_hex2bin(raw, 32, sk, 64, NULL, NULL, NULL), 0);
    buf[0] = 20 << 3;
    assert_int_equal(sodium_hex2bin(buf + 1, 32, pk, 64, NULL, NULL, NULL), 0);
    uint16_t crc = t_crc16(buf, 33);
    buf[33] = (unsigned char)(crc & 0xff);
    buf[34] = (unsigned char)(crc >> 8);
    t_base32(buf, sizeof buf, expect);
    assert_int_equal(gf__nkey_public_from_raw(GF__NKEY_USER, raw, pub), GF_OK);
    assert_string_equal(pub, expect);
}

static void random_round_trips(void **state)
{
    (void)state;
    static const gf__nkey_type types[] = {GF__NKEY_USER, GF__NKEY_ACCOUNT, GF__NKEY_OPERATOR};
    static const char letters[] = "UAO";
    for (int i = 0; i < 300; i++) {
        unsigned char raw[32], back[32];
        char seed[GF__NKEY_SEED_LEN + 1], pub[GF__NKEY_PUBLIC_LEN + 1];
        randombytes_buf(raw, sizeof raw);
        gf__nkey_type t = types[i % 3];
        assert_int_equal(gf__nkey_seed_encode(t, raw, seed), GF_OK);
        assert_int_equal(strlen(seed), GF__NKEY_SEED_LEN);
        assert_int_equal(seed[0], 'S');
        assert_int_equal(seed[1], letters[i % 3]);
        assert_int_equal(gf__nkey_seed_decode(seed, strlen(seed), t, back, NULL, 0), GF_OK);
        assert_memory_equal(back, raw, sizeof raw);
        assert_int_equal(gf__nkey_public_from_raw(t, raw, pub), GF_OK);
        assert_int_equal(strlen(pub), GF__NKEY_PUBLIC_LEN);
        assert_int_equal(pub[0], letters[i % 3]);
    }
}

/* CRC16 catches every burst of up to 16 bits, so any one changed character must be
 * refused (the last one's two unused bits by the canonical check). */
static void every_single_character_change_is_refused(void **state)
{
    (void)state;
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    char s[GF__NKEY_SEED_LEN + 1];
    unsigned char raw[32];
    for (size_t pos = 0; pos < GF__NKEY_SEED_LEN; pos++)
        for (size_t k = 0; k < 32; k++) {
            memcpy(s, user_seed, sizeof s);
            if (s[pos] == a[k])
                continue;
            s[pos] = a[k];
            memset(raw, 0x5a, sizeof raw);
            assert_int_equal(
                gf__nkey_seed_decode(s, GF__NKEY_SEED_LEN, GF__NKEY_USER, raw, NULL, 0),
                GF_ERR_CONFIG);
            for (size_t j = 0; j < sizeof raw; j++) /* changes nothing */
                assert_int_equal(raw[j], 0x5a);
        }
}

static void decode_refuses_malformed(void **state)
{
    (void)state;
    char wrong_prefix[59], unknown_type[59], bad_crc[59], server_seed[59], lower[59],
        noncanonical[59], bad_char[59];
    craft_seed(15 << 3, 0, 7, false, wrong_prefix);       /* 'P' private key */
    craft_seed((18 << 3) | 5, 1, 7, false, unknown_type); /* type bits broken */
    craft_seed((18 << 3) | 5, 0, 7, true, bad_crc);       /* user, CRC off */
    craft_seed((18 << 3) | (104 >> 5), (104 & 31) << 3, 7, false, server_seed); /* 'N' = 104 */
    memcpy(lower, user_seed, 59);
    lower[10] = (char)(lower[10] - 'A' + 'a');
    memcpy(noncanonical, user_seed, 59);
    noncanonical[57] = 'J'; /* 'I' = 01000 -> 'J' = 01001: only unused bits differ */
    memcpy(bad_char, user_seed, 59);
    bad_char[20] = '1';

    static const struct {
        const char *name;
        gf__nkey_type want;
        const char *hint;
    } expect[] = {
        {"wrong prefix", GF__NKEY_USER, "not an nkey seed"},
        {"unknown type", GF__NKEY_USER, "unknown key"},
        {"bad crc", GF__NKEY_USER, "checksum"},
        {"server seed", GF__NKEY_USER, "a server key"},
        {"lower case", GF__NKEY_USER, "character 11"},
        {"non-canonical", GF__NKEY_USER, "canonical"},
        {"bad char", GF__NKEY_USER, "character 21"},
        {"account wanted", GF__NKEY_ACCOUNT, "a user key; an account seed"},
        {"too short", GF__NKEY_USER, "this one has 57"},
        {"too long", GF__NKEY_USER, "this one has 59"},
        {"public key", GF__NKEY_USER, "this one has 56"},
        {"empty", GF__NKEY_USER, "this one has 0"},
    };
    char too_long[60];
    snprintf(too_long, sizeof too_long, "%sA", user_seed);
    const char *inputs[] = {wrong_prefix, unknown_type, bad_crc,  server_seed,
                            lower,        noncanonical, bad_char, user_seed,
                            user_seed,    too_long,     user_pub, ""};
    size_t lens[] = {58, 58, 58, 58, 58, 58, 58, 58, 57, 59, 56, 0};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        unsigned char raw[32];
        char why[256] = "";
        memset(raw, 0x5a, sizeof raw);
        gf_err err = gf__nkey_seed_decode(inputs[i], lens[i], expect[i].want, raw, why, sizeof why);
        if (err != GF_ERR_CONFIG)
            fail_msg("%s: got %d", expect[i].name, (int)err);
        if (!strstr(why, expect[i].hint))
            fail_msg("%s: '%s' lacks '%s'", expect[i].name, why, expect[i].hint);
        assert_no_secret(why, user_seed);
        assert_int_equal(raw[0], 0x5a);
    }
    unsigned char raw[32];
    char out[GF__NKEY_SEED_LEN + 1];
    assert_int_equal(gf__nkey_seed_decode(NULL, 0, GF__NKEY_USER, raw, NULL, 0), GF_ERR_INVALID);
    assert_int_equal(gf__nkey_seed_decode(user_seed, 58, (gf__nkey_type)3, raw, NULL, 0),
                     GF_ERR_INVALID);
    assert_int_equal(gf__nkey_seed_encode((gf__nkey_type)(13 << 3), raw, out), GF_ERR_INVALID);
    assert_int_equal(gf__nkey_public_from_raw(GF__NKEY_USER, NULL, out), GF_ERR_INVALID);
}

static void seed_files_nats_c_can_read(void **state)
{
    (void)state;
    char text[1024];
    static const struct {
        const char *before, *after; /* around the seed */
    } forms[] = {
        {"", ""},
        {"", "\n"},
        {"\n\n", "\n\n\n"},
        {"  \t", "\n"},        /* nats.c skips blanks before a plain seed */
        {"   \n", "\n \t \n"}, /* blank lines around it */
        {"-----BEGIN USER NKEY SEED-----\n", "\n------END USER NKEY SEED------\n"},
        {"************************* IMPORTANT *************************\n"
         "NKEY Seed printed below can be used to sign and prove identity.\n\n"
         "-----BEGIN USER NKEY SEED-----\n\n",
         "\n\n------END USER NKEY SEED------\n\n"
         "*************************************************************\n"},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char pub[GF__NKEY_PUBLIC_LEN + 1] = "", why[256] = "";
        snprintf(text, sizeof text, "%s%s%s", forms[i].before, user_seed, forms[i].after);
        gf_err err = gf__nkey_seed_file_public(write_text(text), pub, why, sizeof why);
        if (err != GF_OK)
            fail_msg("form %zu: %d %s", i, (int)err, why);
        assert_string_equal(pub, user_pub);
    }
}

static void seed_files_refused(void **state)
{
    (void)state;
    char account_seed[59], too_big[GF__NKEY_FILE_MAX + 100];
    craft_seed(18 << 3, 0, 9, false, account_seed);
    memset(too_big, '\n', sizeof too_big);
    memcpy(too_big, user_seed, 58);

    static const char *const jwt =
        "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJzdWIiOiJVIn0.c2ln";
    char s[8][1024];
    snprintf(s[0], sizeof s[0], "%s \n", user_seed);
    snprintf(s[1], sizeof s[1], "%s\t\n", user_seed);
    snprintf(s[2], sizeof s[2], "%s\r\n", user_seed);
    snprintf(s[3], sizeof s[3],
             "-----BEGIN USER NKEY SEED-----\n  %s\n------END USER NKEY SEED------\n", user_seed);
    snprintf(s[4], sizeof s[4], "%s\n%s\n", user_seed, user_seed);
    snprintf(s[5], sizeof s[5],
             "-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
             "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n",
             jwt, user_seed);
    snprintf(s[6], sizeof s[6], "-----BEGIN USER NKEY SEED-----\n%s\nmore\n", user_seed);
    snprintf(s[7], sizeof s[7], "%s\n", account_seed);

    char with_nul[80];
    memcpy(with_nul, user_seed, 58);
    with_nul[58] = '\0';
    memcpy(with_nul + 59, "\n", 1);

    static const struct {
        size_t slot; /* index in s, or 100+ for the special files below */
        const char *hint;
    } cases[] = {
        {0, "blank at column 59"},
        {1, "blank at column 59"},
        {2, "CR characters"},
        {3, "blank at column 1"},
        {4, "2 lines of text"},
        {5, "JWT"},
        {6, "not closed"},
        {7, "an account key; a user seed is needed"},
        {100, "the file is empty"},
        {101, "the file is empty"}, /* blanks only */
        {102, "NUL byte"},
        {103, "larger than"},
        {104, "block is empty"},
        {105, "cannot open"},
        {106, "not a regular file"},
        {107, "this one has 56"}, /* a public key where the seed should be */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = NULL;
        switch (cases[i].slot) {
        case 100:
            path = write_text("");
            break;
        case 101:
            path = write_text(" \n\t\n\n");
            break;
        case 102:
            path = write_file(with_nul, 60);
            break;
        case 103:
            path = write_file(too_big, sizeof too_big);
            break;
        case 104:
            path = write_text("-----BEGIN USER NKEY SEED-----\n------END USER NKEY SEED------\n");
            break;
        case 105:
            path = "/nonexistent/gamefn/seed.nk";
            break;
        case 106:
            path = tmpdir;
            break;
        case 107:
            path = write_text(user_pub);
            break;
        default:
            path = write_text(s[cases[i].slot]);
            break;
        }
        char pub[GF__NKEY_PUBLIC_LEN + 1], why[256] = "";
        memset(pub, 'x', sizeof pub);
        gf_err err = gf__nkey_seed_file_public(path, pub, why, sizeof why);
        if (err != GF_ERR_CONFIG)
            fail_msg("case %zu: got %d (%s)", i, (int)err, why);
        if (!strstr(why, cases[i].hint))
            fail_msg("case %zu: '%s' lacks '%s'", i, why, cases[i].hint);
        assert_no_secret(why, user_seed);
        for (size_t j = 0; j < sizeof pub; j++) /* changes nothing */
            assert_int_equal(pub[j], 'x');
    }
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vectors_round_trip),
        cmocka_unit_test(rfc8032_public_key_is_inside),
        cmocka_unit_test(random_round_trips),
        cmocka_unit_test(every_single_character_change_is_refused),
        cmocka_unit_test(decode_refuses_malformed),
        cmocka_unit_test(seed_files_nats_c_can_read),
        cmocka_unit_test(seed_files_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
