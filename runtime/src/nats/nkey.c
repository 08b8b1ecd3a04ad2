/*
 * nkey.c — NATS nkey seeds and public keys (see nkey.h).
 *
 * Design notes:
 * - base32 and CRC16/XMODEM are written here: neither libsodium nor OpenSSL has
 *   them and nats.c keeps its own private. Decoding is strict: upper-case RFC 4648
 *   alphabet, no padding, the unused low bits of the last character must be zero.
 * - The seed file is parsed the way nats.c 3.4.1 parses it when it signs the
 *   server's nonce (src/conn.c, _getJwtOrSeed; docs/NATS-FACTS.md §1): the first
 *   line of a "---...---" header pair, else a line of the seed alone after optional
 *   spaces or tabs. nats.c re-reads the file at every (re)connect and takes the line
 *   as is, so a file it would choke on (CRLF, trailing blanks, a JWT block first)
 *   must fail here, at start, with a reason, rather than at every connect with none.
 * - Secrets: the file goes into sodium_malloc() memory (guard pages, freed with
 *   zeroing); decoded bytes and the Ed25519 secret key live on the stack and are
 *   wiped with sodium_memzero() on every path. Messages in `why` describe the
 *   problem (length, position, type) and never quote the text.
 */
#include "nkey.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/why.h"

enum {
    PREFIX_SEED = 18 << 3,       /* 'S' */
    SEED_RAW_LEN = 2 + 32 + 2,   /* prefix bytes, seed, CRC */
    PUBLIC_RAW_LEN = 1 + 32 + 2, /* type byte, public key, CRC */
};

static const char b32_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/* Fills `why` and returns the error malformed input gets. */
#define problem(why, why_size, ...) (gf__why((why), (why_size), __VA_ARGS__), GF_ERR_CONFIG)

static uint16_t crc16_xmodem(const unsigned char *p, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

/* out must hold ceil(n * 8 / 5) + 1 chars. */
static void b32_encode(const unsigned char *in, size_t n, char *out)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = b32_alphabet[(acc >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits > 0)
        out[o++] = b32_alphabet[(acc << (5 - bits)) & 31];
    out[o] = '\0';
}

static int b32_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= '2' && c <= '7')
        return c - '2' + 26;
    return -1;
}

/* Decodes len chars into exactly len * 5 / 8 bytes of out. Returns 0, or the
 * 1-based position of the first bad character, or -1 if leftover bits are set. */
static long b32_decode(const char *in, size_t len, unsigned char *out)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b32_value(in[i]);
        if (v < 0)
            return (long)i + 1;
        acc = (acc << 5) | (uint32_t)v;
        bits += 5;
        if (bits >= 8) {
            out[o++] = (unsigned char)(acc >> (bits - 8));
            bits -= 8;
        }
    }
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
        return -1;
    return 0;
}

static const char *type_name(int type)
{
    switch (type) {
    case GF__NKEY_ACCOUNT:
        return "an account";
    case GF__NKEY_OPERATOR:
        return "an operator";
    case GF__NKEY_USER:
        return "a user";
    case 13 << 3:
        return "a server";
    case 2 << 3:
        return "a cluster";
    case 15 << 3:
        return "a private";
    default:
        return "an unknown";
    }
}

static bool valid_type(gf__nkey_type t)
{
    return t == GF__NKEY_ACCOUNT || t == GF__NKEY_OPERATOR || t == GF__NKEY_USER;
}

gf_err gf__nkey_seed_encode(gf__nkey_type type, const unsigned char raw[GF__NKEY_RAW_LEN],
                            char out[GF__NKEY_SEED_LEN + 1])
{
    unsigned char buf[SEED_RAW_LEN];
    if (!raw || !out || !valid_type(type))
        return GF_ERR_INVALID;
    buf[0] = (unsigned char)(PREFIX_SEED | ((unsigned)type >> 5));
    buf[1] = (unsigned char)(((unsigned)type & 31) << 3);
    memcpy(buf + 2, raw, GF__NKEY_RAW_LEN);
    uint16_t crc = crc16_xmodem(buf, SEED_RAW_LEN - 2);
    buf[SEED_RAW_LEN - 2] = (unsigned char)(crc & 0xff);
    buf[SEED_RAW_LEN - 1] = (unsigned char)(crc >> 8);
    b32_encode(buf, sizeof buf, out);
    sodium_memzero(buf, sizeof buf);
    return GF_OK;
}

gf_err gf__nkey_seed_decode(const char *text, size_t len, gf__nkey_type want,
                            unsigned char raw[GF__NKEY_RAW_LEN], char *why, size_t why_size)
{
    unsigned char buf[SEED_RAW_LEN];
    gf_err err = GF_OK;
    if (!text || !raw || !valid_type(want))
        return GF_ERR_INVALID;
    if (len != GF__NKEY_SEED_LEN)
        return problem(why, why_size, "an nkey seed has %d characters, this one has %zu",
                       GF__NKEY_SEED_LEN, len);
    long bad = b32_decode(text, len, buf);
    if (bad > 0) {
        err = problem(why, why_size,
                      "character %ld of the seed is not base32 (upper-case A-Z and 2-7)", bad);
        goto out;
    }
    if (bad < 0) {
        err = problem(why, why_size, "the seed's last character is not canonical base32");
        goto out;
    }
    uint16_t crc = (uint16_t)(buf[SEED_RAW_LEN - 2] | (buf[SEED_RAW_LEN - 1] << 8));
    if (crc != crc16_xmodem(buf, SEED_RAW_LEN - 2)) {
        err = problem(why, why_size, "the seed's checksum does not match (mistyped or damaged)");
        goto out;
    }
    if ((buf[0] & 0xf8) != PREFIX_SEED) {
        err = problem(why, why_size, "not an nkey seed (a seed starts with 'S')");
        goto out;
    }
    int type = ((buf[0] & 7) << 5) | (buf[1] >> 3);
    if ((buf[1] & 7) != 0 || type != (int)want) {
        err = problem(why, why_size, "this is the seed of %s key; %s seed is needed",
                      (buf[1] & 7) != 0 ? "an unknown" : type_name(type), type_name(want));
        goto out;
    }
    memcpy(raw, buf + 2, GF__NKEY_RAW_LEN);
out:
    sodium_memzero(buf, sizeof buf);
    return err;
}

gf_err gf__nkey_public_from_raw(gf__nkey_type type, const unsigned char raw[GF__NKEY_RAW_LEN],
                                char out[GF__NKEY_PUBLIC_LEN + 1])
{
    unsigned char pk[crypto_sign_PUBLICKEYBYTES];
    unsigned char sk[crypto_sign_SECRETKEYBYTES];
    unsigned char buf[PUBLIC_RAW_LEN];
    if (!raw || !out || !valid_type(type))
        return GF_ERR_INVALID;
    if (sodium_init() < 0)
        return GF_ERR_INVALID;
    int rc = crypto_sign_seed_keypair(pk, sk, raw);
    sodium_memzero(sk, sizeof sk);
    if (rc != 0)
        return GF_ERR_INVALID;
    buf[0] = (unsigned char)type;
    memcpy(buf + 1, pk, sizeof pk);
    uint16_t crc = crc16_xmodem(buf, PUBLIC_RAW_LEN - 2);
    buf[PUBLIC_RAW_LEN - 2] = (unsigned char)(crc & 0xff);
    buf[PUBLIC_RAW_LEN - 1] = (unsigned char)(crc >> 8);
    b32_encode(buf, sizeof buf, out);
    return GF_OK;
}

/* ---- seed files ------------------------------------------------------------ */

typedef struct span {
    const char *p;
    size_t n;
} span;

/* Next line (without its '\n') from *rest; false at the end of the text. */
static bool next_line(span *rest, span *line)
{
    if (rest->n == 0)
        return false;
    const char *nl = memchr(rest->p, '\n', rest->n);
    size_t n = nl ? (size_t)(nl - rest->p) : rest->n;
    line->p = rest->p;
    line->n = n;
    rest->p += nl ? n + 1 : n;
    rest->n -= nl ? n + 1 : n;
    return true;
}

/* Next line that is not empty (nats.c splits with strtok, which skips them). */
static bool next_nonempty(span *rest, span *line)
{
    while (next_line(rest, line))
        if (line->n > 0)
            return true;
    return false;
}

/* "-----BEGIN USER NKEY SEED-----" and its END: dashes at both ends. nats.c
 * takes any line with "---" at its end and "---" before that; every line this
 * accepts is one of those. */
static bool is_header(span l)
{
    return l.n >= 6 && memcmp(l.p, "---", 3) == 0 && memcmp(l.p + l.n - 3, "---", 3) == 0;
}

static bool is_blank(span l)
{
    for (size_t i = 0; i < l.n; i++)
        if (l.p[i] != ' ' && l.p[i] != '\t')
            return false;
    return true;
}

/* Finds the seed's text in the file's content, as nats.c would. */
static gf_err locate_seed(span text, span *seed, char *why, size_t why_size)
{
    span rest = text, line = {0}, header = {0};
    if (memchr(text.p, '\0', text.n))
        return problem(why, why_size, "the file holds a NUL byte; it is not a seed file");
    if (memchr(text.p, '\r', text.n))
        return problem(why, why_size,
                       "the file has CR characters (Windows line ends), which nats.c cannot "
                       "read; save it with LF line ends");

    bool decorated = false;
    while (next_line(&rest, &line))
        if (is_header(line)) {
            decorated = true;
            break;
        }
    if (decorated) {
        if (!next_nonempty(&rest, seed) || is_header(*seed))
            return problem(why, why_size, "the first -----BEGIN ...----- block is empty");
        if (!next_nonempty(&rest, &header) || !is_header(header))
            return problem(why, why_size,
                           "the first -----BEGIN ...----- block is not closed by an "
                           "-----END ...----- line right after the seed");
    } else {
        int lines = 0;
        rest = text;
        while (next_line(&rest, &line)) {
            if (is_blank(line))
                continue;
            if (++lines == 1)
                *seed = line;
        }
        if (lines == 0)
            return problem(why, why_size, "the file is empty");
        if (lines > 1)
            return problem(why, why_size,
                           "the file has %d lines of text; expected the seed alone on one line, "
                           "or a -----BEGIN USER NKEY SEED----- block",
                           lines);
        while (seed->n > 0 && (seed->p[0] == ' ' || seed->p[0] == '\t')) {
            seed->p++;
            seed->n--;
        }
    }
    for (size_t i = 0; i < seed->n; i++)
        if (seed->p[i] == ' ' || seed->p[i] == '\t' || seed->p[i] == '\v' || seed->p[i] == '\f')
            return problem(why, why_size,
                           "the seed's line has a blank at column %zu; nats.c reads the line as "
                           "is, so nothing but the seed may be on it",
                           i + 1);
    if (seed->n >= 3 && memcmp(seed->p, "eyJ", 3) == 0)
        return problem(why, why_size,
                       "the first block holds a JWT, not a seed (a .creds file belongs in "
                       "nats.credentials)");
    return GF_OK;
}

/* Reads a regular file of at most GF__NKEY_FILE_MAX bytes into sodium_malloc()
 * memory (NUL-terminated); the caller sodium_free()s it. */
static gf_err read_secret_file(const char *path, char **out, size_t *len, char *why,
                               size_t why_size)
{
    gf_err err = GF_OK;
    char *buf = NULL;
    size_t n = 0;
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return problem(why, why_size, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0) {
        err = problem(why, why_size, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        err = problem(why, why_size, "not a regular file");
        goto out;
    }
    if (st.st_size > GF__NKEY_FILE_MAX) {
        err = problem(why, why_size, "larger than %d bytes; not a seed file", GF__NKEY_FILE_MAX);
        goto out;
    }
    buf = sodium_malloc(GF__NKEY_FILE_MAX + 1);
    if (!buf) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, GF__NKEY_FILE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            err = problem(why, why_size, "cannot read: %s", strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > GF__NKEY_FILE_MAX) { /* it grew since fstat */
            err =
                problem(why, why_size, "larger than %d bytes; not a seed file", GF__NKEY_FILE_MAX);
            goto out;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
out:
    if (buf) {
        sodium_memzero(buf, GF__NKEY_FILE_MAX + 1);
        sodium_free(buf);
    }
    close(fd);
    return err;
}

gf_err gf__nkey_seed_file_public(const char *path, char out[GF__NKEY_PUBLIC_LEN + 1], char *why,
                                 size_t why_size)
{
    char *text = NULL;
    size_t len = 0;
    unsigned char raw[GF__NKEY_RAW_LEN];
    span seed = {0};
    if (!path || !out)
        return GF_ERR_INVALID;
    if (sodium_init() < 0)
        return GF_ERR_INVALID;
    gf_err err = read_secret_file(path, &text, &len, why, why_size);
    if (err != GF_OK)
        return err;
    err = locate_seed((span){text, len}, &seed, why, why_size);
    if (err == GF_OK)
        err = gf__nkey_seed_decode(seed.p, seed.n, GF__NKEY_USER, raw, why, why_size);
    if (err == GF_OK)
        err = gf__nkey_public_from_raw(GF__NKEY_USER, raw, out);
    sodium_memzero(raw, sizeof raw);
    sodium_memzero(text, len);
    sodium_free(text);
    return err;
}
