/*
 * spool_scan.c — finding and validating segment files when a spool opens.
 *
 * Design notes. A segment is read whole and walked record by record. The walk stops
 * at the first record that is not valid for this segment (bad magic, length or
 * check, or a seq not above the one before). What follows decides what it was:
 *
 *   - no valid record starts anywhere after it: a torn tail, what a crash in the
 *     middle of an append leaves (a prefix of the record, or garbage where the file
 *     system extended the file first). The file is truncated to the valid prefix.
 *   - a valid record starts after it: the damage is in the middle, which no crash
 *     of ours produces. It is logged at error level and the rest of the segment is
 *     skipped: records behind damage are not replayed, because a resynchronised
 *     walk could take any payload that happens to contain a frame for a record.
 *     The walk over the rest still reads their seqs, so the highest seq ever used
 *     is known and never handed out again.
 *
 * Searching for a valid record after the damage costs a pass over the rest of the
 * segment; it happens only when something is wrong.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gamefn/log.h"
#include "gamefn/util.h"
#include "spool_internal.h"

enum { NAME_DIGITS = 20, NAME_LEN = 4 + NAME_DIGITS + 4 };

void gf_spool_seg_name(uint64_t first, char *name, size_t size)
{
    snprintf(name, size, "seg-%020" PRIu64 ".log", first);
}

/* "seg-<20 digits>.log" -> first seq (>= 1); false for any other name. */
static bool parse_name(const char *name, uint64_t *first)
{
    if (strlen(name) != NAME_LEN || strncmp(name, "seg-", 4) != 0 ||
        strcmp(name + 4 + NAME_DIGITS, ".log") != 0)
        return false;
    uint64_t v = 0;
    for (int i = 4; i < 4 + NAME_DIGITS; i++) {
        unsigned d = (unsigned)(name[i] - '0');
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *first = v;
    return v > 0;
}

static int seg_cmp(const void *a, const void *b)
{
    uint64_t x = ((const gf_spool_seg *)a)->first, y = ((const gf_spool_seg *)b)->first;
    return x < y ? -1 : x > y;
}

gf_err gf_spool_seg_push(gf_spool_seg **segs, size_t *n, size_t *cap, uint64_t first)
{
    gf_spool_seg *p = gf_grow(*segs, cap, *n + 1, sizeof *p);
    if (p == NULL)
        return GF_ERR_NOMEM;
    *segs = p;
    p[(*n)++] = (gf_spool_seg){.first = first};
    return GF_OK;
}

gf_err gf_spool_seg_list(int dirfd, gf_spool_seg **segs, size_t *n)
{
    *segs = NULL;
    *n = 0;
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return GF_ERR_IO;
    }
    rewinddir(d);
    size_t cap = 0;
    gf_err err = GF_OK;
    struct dirent *e;
    uint64_t first;
    while (err == GF_OK && (e = readdir(d)) != NULL)
        if (parse_name(e->d_name, &first))
            err = gf_spool_seg_push(segs, n, &cap, first);
    closedir(d);
    if (err != GF_OK) {
        free(*segs);
        *segs = NULL;
        *n = 0;
        return err;
    }
    if (*n > 1)
        qsort(*segs, *n, sizeof **segs, seg_cmp);
    return GF_OK;
}

gf_err gf_spool_buf_reserve(gf_spool_buf *buf, size_t need)
{
    uint8_t *p = gf_grow(buf->p, &buf->cap, need, 1);
    if (p == NULL)
        return GF_ERR_NOMEM;
    buf->p = p;
    return GF_OK;
}

void gf_spool_buf_fini(gf_spool_buf *buf)
{
    free(buf->p);
    *buf = (gf_spool_buf){0};
}

static gf_err read_fd(int fd, uint64_t len, gf_spool_buf *buf)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return GF_ERR_IO;
    uint64_t want = (uint64_t)sb.st_size < len ? (uint64_t)sb.st_size : len;
    if (want > SIZE_MAX / 2)
        return GF_ERR_NOMEM;
    buf->len = 0;
    gf_err err = gf_spool_buf_reserve(buf, (size_t)want + 1);
    return err == GF_OK ? gf_spool_read_all(fd, buf->p, (size_t)want, &buf->len) : err;
}

gf_err gf_spool_seg_read(int dirfd, const gf_spool_seg *seg, uint64_t len, gf_spool_buf *buf)
{
    char name[32];
    gf_spool_seg_name(seg->first, name, sizeof name);
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return GF_ERR_IO;
    gf_err err = read_fd(fd, len, buf);
    close(fd);
    return err;
}

/* The offset of the first valid frame at or after `from` whose seq is above
 * min_seq, or buf->len if none. (A copy of an earlier frame of this segment in the
 * garbage behind a torn record is not "a valid record after it".) */
static size_t resync(const gf_spool_buf *buf, size_t from, uint64_t seg_first, uint64_t min_seq)
{
    gf_spool_record rec;
    size_t size;
    for (size_t p = from; p < buf->len; p++)
        if (buf->p[p] == 'G' &&
            gf_spool_frame_decode(buf->p + p, buf->len - p, seg_first, &rec, &size) ==
                GF_SPOOL_FRAME_OK &&
            rec.seq > min_seq)
            return p;
    return buf->len;
}

/* Walks the valid records from offset 0; returns where the walk stopped. Counts the
 * records above ack_floor in *pending. */
static size_t walk_valid(const gf_spool_buf *buf, gf_spool_seg *seg, uint64_t prev_seq,
                         uint64_t ack_floor, uint64_t *pending)
{
    size_t off = 0, size;
    gf_spool_record rec;
    uint64_t floor = prev_seq >= seg->first ? prev_seq : seg->first - 1;
    while (off < buf->len &&
           gf_spool_frame_decode(buf->p + off, buf->len - off, seg->first, &rec, &size) ==
               GF_SPOOL_FRAME_OK &&
           rec.seq > floor) {
        floor = rec.seq;
        seg->last_seq = rec.seq;
        seg->records++;
        *pending += rec.seq > ack_floor;
        off += size;
    }
    return off;
}

/* Behind corruption: counts the valid frames from `off` and notes their highest seq. */
static uint64_t walk_skipped(const gf_spool_buf *buf, gf_spool_seg *seg, size_t off)
{
    uint64_t skipped = 0;
    gf_spool_record rec;
    size_t size;
    while (off < buf->len) {
        if (gf_spool_frame_decode(buf->p + off, buf->len - off, seg->first, &rec, &size) !=
            GF_SPOOL_FRAME_OK) {
            off = resync(buf, off + 1, seg->first, 0);
            continue;
        }
        skipped++;
        if (rec.seq > seg->last_seq)
            seg->last_seq = rec.seq;
        off += size;
    }
    return skipped;
}

static gf_err truncate_to(int dirfd, const char *name, uint64_t len)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return GF_ERR_IO;
    gf_err err = ftruncate(fd, (off_t)len) == 0 && fsync(fd) == 0 ? GF_OK : GF_ERR_IO;
    close(fd);
    return err;
}

gf_err gf_spool_seg_scan(int dirfd, gf_spool_seg *seg, uint64_t prev_seq, uint64_t ack_floor,
                         gf_spool_buf *buf, gf_spool_scan_stats *st)
{
    gf_err err = gf_spool_seg_read(dirfd, seg, UINT64_MAX, buf);
    if (err != GF_OK)
        return err;
    seg->bytes = buf->len;
    seg->last_seq = 0;
    seg->records = 0;
    seg->valid = walk_valid(buf, seg, prev_seq, ack_floor, &st->pending);
    if (seg->valid == buf->len)
        return GF_OK;

    char name[32];
    gf_spool_seg_name(seg->first, name, sizeof name);
    uint64_t above = seg->last_seq > prev_seq ? seg->last_seq : prev_seq;
    size_t next = resync(buf, (size_t)seg->valid + 1, seg->first, above);
    if (next == buf->len) {
        gf_log_warn("spool: torn record at end of segment truncated",
                    "segment=%s offset=%" PRIu64 " bytes=%" PRIu64, name, seg->valid,
                    seg->bytes - seg->valid);
        st->torn++;
        seg->bytes = seg->valid;
        return truncate_to(dirfd, name, seg->valid);
    }
    uint64_t skipped = walk_skipped(buf, seg, next);
    gf_log_error("spool: corrupt record, rest of segment skipped",
                 "segment=%s offset=%" PRIu64 " skipped_records=%" PRIu64, name, seg->valid,
                 skipped);
    st->corrupt++;
    st->skipped += skipped;
    seg->sealed = true;
    return GF_OK;
}
