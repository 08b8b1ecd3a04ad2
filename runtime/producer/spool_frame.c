/*
 * spool_frame.c — one spool record on disk.
 *
 * Design notes. Byte layout, integers little-endian:
 *
 *   0   4  magic "GFR1"
 *   4   4  payload length L (20 .. GF_SPOOL_PAYLOAD_MAX)
 *   8   8  check: BLAKE2b-128(segment first seq (8) || L (4) || payload), first 8 bytes
 *   16  L  payload:
 *          seq (8) | subject length (2) | subject | NUL | msg id length (2) | msg id | NUL
 *          | data length (4) | data
 *
 * The check is BLAKE2b from libsodium (already a dependency) rather than a CRC we
 * would write and test ourselves. It runs at a few cycles a byte, which is noise
 * next to the write and the fsync, and 64 bits make random garbage (a torn tail on
 * a file system that extends the file before the data lands) pass with
 * probability 2^-64 instead of 2^-32. It covers the length, so a flipped length bit
 * is caught too, and the segment's first seq, so a stale record of a deleted
 * segment that the file system hands back in a reused block never validates here.
 * The NULs let a replay hand out subject and msg id as C strings without copying.
 */
#include <string.h>

#include <sodium.h>

#include "spool_internal.h"

static const uint8_t magic[4] = {'G', 'F', 'R', '1'};

enum { PAYLOAD_MIN = 8 + 2 + 1 + 1 + 2 + 1 + 1 + 4 };

void gf_spool_check(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, uint8_t out[8])
{
    crypto_generichash_state st;
    uint8_t h[16];
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    crypto_generichash_update(&st, a, alen);
    if (blen > 0)
        crypto_generichash_update(&st, b, blen);
    crypto_generichash_final(&st, h, sizeof h);
    memcpy(out, h, 8);
}

static size_t field_len(const char *s, size_t max)
{
    if (s == NULL)
        return 0;
    size_t n = strnlen(s, max + 1);
    return n > max ? 0 : n;
}

gf_err gf_spool_frame_size(const gf_spool_record *rec, size_t *size)
{
    size_t s = field_len(rec->subject, GF_SPOOL_SUBJECT_MAX);
    size_t m = field_len(rec->msg_id, GF_SPOOL_MSG_ID_MAX);
    if (rec->seq == 0 || s == 0 || m == 0 || rec->data_len > GF_SPOOL_DATA_MAX ||
        (rec->data == NULL && rec->data_len > 0))
        return GF_ERR_INVALID;
    *size = GF_SPOOL_FRAME_HEADER + PAYLOAD_MIN - 2 + s + m + rec->data_len;
    return GF_OK;
}

/* Writes a length-prefixed, NUL-terminated string; returns the bytes written. */
static size_t put_str(uint8_t *p, const char *s)
{
    size_t n = strlen(s);
    gf_spool_put_le(p, n, 2);
    memcpy(p + 2, s, n);
    p[2 + n] = 0;
    return 3 + n;
}

void gf_spool_frame_encode(const gf_spool_record *rec, uint64_t seg_first, uint8_t *out)
{
    uint8_t *p = out + GF_SPOOL_FRAME_HEADER;
    gf_spool_put_le(p, rec->seq, 8);
    p += 8;
    p += put_str(p, rec->subject);
    p += put_str(p, rec->msg_id);
    gf_spool_put_le(p, rec->data_len, 4);
    if (rec->data_len > 0)
        memcpy(p + 4, rec->data, rec->data_len);
    p += 4 + rec->data_len;

    size_t len = (size_t)(p - out) - GF_SPOOL_FRAME_HEADER;
    uint8_t salt[12];
    gf_spool_put_le(salt, seg_first, 8);
    gf_spool_put_le(salt + 8, len, 4);
    memcpy(out, magic, 4);
    gf_spool_put_le(out + 4, len, 4);
    gf_spool_check(salt, sizeof salt, out + GF_SPOOL_FRAME_HEADER, len, out + 8);
}

/* Reads a length-prefixed, NUL-terminated string at *p (within end); advances *p. */
static const char *get_str(const uint8_t **p, const uint8_t *end, size_t max)
{
    if (end - *p < 2)
        return NULL;
    size_t n = (size_t)gf_spool_get_le(*p, 2);
    const uint8_t *s = *p + 2;
    if (n == 0 || n > max || (size_t)(end - s) < n + 1 || s[n] != 0 || memchr(s, 0, n) != NULL)
        return NULL;
    *p = s + n + 1;
    return (const char *)s;
}

static bool parse_payload(const uint8_t *p, const uint8_t *end, gf_spool_record *rec)
{
    rec->seq = gf_spool_get_le(p, 8);
    p += 8;
    rec->subject = get_str(&p, end, GF_SPOOL_SUBJECT_MAX);
    if (rec->seq == 0 || rec->subject == NULL)
        return false;
    rec->msg_id = get_str(&p, end, GF_SPOOL_MSG_ID_MAX);
    if (rec->msg_id == NULL || end - p < 4)
        return false;
    rec->data_len = (size_t)gf_spool_get_le(p, 4);
    rec->data = p + 4;
    return (size_t)(end - rec->data) == rec->data_len;
}

gf_spool_frame_result gf_spool_frame_decode(const uint8_t *buf, size_t avail, uint64_t seg_first,
                                            gf_spool_record *rec, size_t *size)
{
    if (memcmp(buf, magic, avail < 4 ? avail : 4) != 0)
        return GF_SPOOL_FRAME_BAD;
    if (avail < GF_SPOOL_FRAME_HEADER)
        return GF_SPOOL_FRAME_SHORT;
    size_t len = (size_t)gf_spool_get_le(buf + 4, 4);
    if (len < PAYLOAD_MIN || len > GF_SPOOL_PAYLOAD_MAX)
        return GF_SPOOL_FRAME_BAD;
    if (avail - GF_SPOOL_FRAME_HEADER < len)
        return GF_SPOOL_FRAME_SHORT;

    const uint8_t *payload = buf + GF_SPOOL_FRAME_HEADER;
    uint8_t salt[12], check[8];
    gf_spool_put_le(salt, seg_first, 8);
    gf_spool_put_le(salt + 8, len, 4);
    gf_spool_check(salt, sizeof salt, payload, len, check);
    if (sodium_memcmp(check, buf + 8, sizeof check) != 0)
        return GF_SPOOL_FRAME_BAD;
    if (!parse_payload(payload, payload + len, rec))
        return GF_SPOOL_FRAME_BAD;
    *size = GF_SPOOL_FRAME_HEADER + len;
    return GF_SPOOL_FRAME_OK;
}
