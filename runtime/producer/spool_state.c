/*
 * spool_state.c — the spool's small state file: ack floor and highest seq used.
 *
 * Design notes. 52 bytes, integers little-endian:
 *
 *   0  8  magic "GFSPOOL1"
 *   8  4  version 2
 *   12 8  ack_floor
 *   20 8  seq_used      (ack_floor <= seq_used)
 *   28 16 boot: BLAKE2b-128 of the kernel's boot id when written; zeros = unknown
 *   44 8  check: BLAKE2b-128 of bytes 0..44, first 8 bytes
 *
 * Version 1 (36 bytes: no boot field, check at 28) is still read, as boot unknown.
 *
 * It is replaced, never edited: write "state.tmp", fsync it, rename it over "state",
 * fsync the directory. rename() is atomic, so a reader sees the old file or the new
 * one, never a mix; the check catches what a crash of the storage itself leaves.
 * A leftover state.tmp is an unfinished replacement and is ignored (spool.c removes
 * it on open).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "spool_internal.h"

enum {
    STATE_SIZE = 52,
    STATE_BODY = 44,
    STATE_VERSION = 2,
    STATE_V1_SIZE = 36,
    STATE_V1_BODY = 28,
};

static const char state_magic[8] = {'G', 'F', 'S', 'P', 'O', 'O', 'L', '1'};

static void state_encode(const gf_spool_state *st, uint8_t out[STATE_SIZE])
{
    memcpy(out, state_magic, 8);
    gf_spool_put_le(out + 8, STATE_VERSION, 4);
    gf_spool_put_le(out + 12, st->ack_floor, 8);
    gf_spool_put_le(out + 20, st->seq_used, 8);
    memcpy(out + 28, st->boot, sizeof st->boot);
    gf_spool_check(out, STATE_BODY, NULL, 0, out + STATE_BODY);
}

static gf_err state_decode(const uint8_t *in, size_t len, gf_spool_state *st)
{
    uint8_t check[8];
    if (len < 12 || memcmp(in, state_magic, 8) != 0)
        return GF_ERR_INVALID;
    uint64_t version = gf_spool_get_le(in + 8, 4);
    size_t body = version == STATE_VERSION ? STATE_BODY : STATE_V1_BODY;
    if ((version != STATE_VERSION || len != STATE_SIZE) && (version != 1 || len != STATE_V1_SIZE))
        return GF_ERR_INVALID;
    gf_spool_check(in, body, NULL, 0, check);
    if (memcmp(check, in + body, 8) != 0)
        return GF_ERR_INVALID;
    st->ack_floor = gf_spool_get_le(in + 12, 8);
    st->seq_used = gf_spool_get_le(in + 20, 8);
    memset(st->boot, 0, sizeof st->boot);
    if (version == STATE_VERSION)
        memcpy(st->boot, in + 28, sizeof st->boot);
    return st->ack_floor <= st->seq_used ? GF_OK : GF_ERR_INVALID;
}

gf_err gf_spool_state_read(int dirfd, gf_spool_state *st, bool *found)
{
    *found = false;
    int fd = openat(dirfd, "state", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? GF_OK : GF_ERR_IO;
    uint8_t buf[STATE_SIZE + 1]; /* one byte more: a longer file is malformed */
    size_t len = 0;
    gf_err err = gf_spool_read_all(fd, buf, sizeof buf, &len);
    close(fd);
    if (err != GF_OK)
        return err;
    *found = true;
    return state_decode(buf, len, st);
}

gf_err gf_spool_read_all(int fd, uint8_t *p, size_t len, size_t *got)
{
    *got = 0;
    while (*got < len) {
        ssize_t n = read(fd, p + *got, len - *got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return GF_ERR_IO;
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    return GF_OK;
}

gf_err gf_spool_write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return GF_ERR_IO;
        p += n;
        len -= (size_t)n;
    }
    return GF_OK;
}

gf_err gf_spool_state_write(int dirfd, const gf_spool_state *st)
{
    uint8_t buf[STATE_SIZE];
    state_encode(st, buf);
    int fd = openat(dirfd, "state.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return GF_ERR_IO;
    gf_err err = gf_spool_write_all(fd, buf, sizeof buf);
    if (err == GF_OK && fsync(fd) != 0)
        err = GF_ERR_IO;
    if (close(fd) != 0 && err == GF_OK)
        err = GF_ERR_IO;
    if (err == GF_OK && renameat(dirfd, "state.tmp", dirfd, "state") != 0)
        err = GF_ERR_IO;
    if (err == GF_OK && fsync(dirfd) != 0)
        err = GF_ERR_IO;
    return err;
}

void gf_spool_boot_hash(const char *boot_id, uint8_t out[16])
{
    char kernel[64] = "";
    memset(out, 0, 16);
    if (boot_id == NULL) {
        int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        size_t got = 0;
        if (fd >= 0) {
            gf_spool_read_all(fd, (uint8_t *)kernel, sizeof kernel - 1, &got);
            close(fd);
        }
        kernel[got] = '\0';
        kernel[strcspn(kernel, "\n")] = '\0';
        boot_id = kernel;
    }
    if (boot_id[0] != '\0')
        crypto_generichash(out, 16, (const uint8_t *)boot_id, strlen(boot_id), NULL, 0);
}
