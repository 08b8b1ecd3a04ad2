/*
 * spool.c — the producer's write-ahead log: open and recovery, append, ack, sync,
 * replay (see gamefn/spool.h for the contract).
 *
 * Design notes.
 *  - Invariants: segments are sorted by first seq and every record's seq is above
 *    every seq of the segments before it; only the last segment is ever appended to
 *    (sp->fd), and only while it is not sealed. state.ack_floor <= next_seq - 1, and
 *    no seq >= next_seq was ever published: next_seq is recomputed on open as one
 *    past the larger of state.seq_used and the highest seq in any segment.
 *  - Except after a crash in the same boot (the state file's boot equals the
 *    kernel's boot id now): the process died but the kernel did not, so every byte
 *    write() took is in the files, whatever the fsync policy. Every seq that can
 *    have been published is then either a record in a segment or at or below the
 *    persisted ack floor (a record is written before it is published, and a segment
 *    is deleted only after the floor covering it is persisted), so next_seq is one
 *    past the larger of those two, and the unused reservation is not skipped: a
 *    killed producer leaves no gap. The seqs this can hand out again were never
 *    published (a torn last record, appends refused for space at the very end).
 *  - Durability order: a segment is created (and its directory entry synced) before
 *    its first record; the state file is written before a segment it makes
 *    deletable is unlinked; a reservation (interval, never) is written before the
 *    first seq it covers is used.
 *  - An I/O failure while appending seals the segment, so a half-written record can
 *    only ever be a segment's tail, which the next open truncates as torn.
 *  - One buffer serves encoding and replay reads; it grows to the largest segment
 *    replayed and stays allocated.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gamefn/log.h"
#include "spool_internal.h"

struct gf_spool {
    gf_spool_config cfg;
    char *dir;
    int dirfd, lockfd, fd; /* fd: the last segment, open for append, or -1 */
    gf_spool_seg *segs;
    size_t nsegs, capsegs;
    gf_spool_state state;
    uint8_t boot[16]; /* this boot (gf_spool_boot_hash), written into every state */
    uint64_t next_seq;
    uint64_t bytes; /* sum of segs[].bytes */
    bool dirty;     /* appended since the last fdatasync of fd */
    int64_t last_sync_ms;
    gf_spool_buf buf;
    gf_spool_stats count; /* appended, dropped, syncs */
    gf_spool_scan_stats scan;
};

enum {
    KIB = 1024,
    DEFAULT_INTERVAL_MS = 100,
    DEFAULT_RESERVE = 1024,
};
#define DEFAULT_SEGMENT ((uint64_t)8 * KIB * KIB)
#define DEFAULT_MAX     ((uint64_t)KIB * KIB * KIB)

static int64_t monotonic_ms(void *ctx)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static gf_err config_resolve(const gf_spool_config *in, gf_spool_config *c)
{
    *c = *in;
    if (c->fsync_interval_ms == 0)
        c->fsync_interval_ms = DEFAULT_INTERVAL_MS;
    if (c->segment_bytes == 0)
        c->segment_bytes = DEFAULT_SEGMENT;
    if (c->max_bytes == 0)
        c->max_bytes = c->segment_bytes > DEFAULT_MAX ? c->segment_bytes : DEFAULT_MAX;
    if (c->seq_reserve == 0)
        c->seq_reserve = DEFAULT_RESERVE;
    if (c->clock_ms == NULL)
        c->clock_ms = monotonic_ms;
    bool ok = c->dir != NULL && c->dir[0] != '\0' && (unsigned)c->fsync <= GF_SPOOL_FSYNC_NEVER &&
              c->fsync_interval_ms >= 1 && c->fsync_interval_ms <= 60000 &&
              c->segment_bytes >= 4 * KIB && c->segment_bytes <= DEFAULT_MAX &&
              c->max_bytes >= c->segment_bytes && c->max_bytes <= DEFAULT_MAX * KIB &&
              c->seq_reserve <= 1048576;
    return ok ? GF_OK : GF_ERR_INVALID;
}

static int64_t now_ms(const gf_spool *sp)
{
    return sp->cfg.clock_ms(sp->cfg.clock_ctx);
}

/* fdatasync of the open segment; a failure seals it. */
static gf_err sync_active(gf_spool *sp)
{
    if (sp->fd < 0 || !sp->dirty)
        return GF_OK;
    sp->count.syncs++;
    sp->last_sync_ms = now_ms(sp);
    if (fdatasync(sp->fd) != 0) {
        gf_log_error("spool: fdatasync failed, segment sealed", "dir=%s errno=%d", sp->dir, errno);
        close(sp->fd);
        sp->fd = -1;
        sp->segs[sp->nsegs - 1].sealed = true;
        return GF_ERR_IO;
    }
    sp->dirty = false;
    return GF_OK;
}

/* Closes the open segment to appends; its unsynced tail is synced first unless
 * fsync = never. */
static gf_err seal_active(gf_spool *sp)
{
    gf_err err = GF_OK;
    if (sp->fd < 0)
        return GF_OK;
    if (sp->cfg.fsync != GF_SPOOL_FSYNC_NEVER)
        err = sync_active(sp);
    if (sp->fd >= 0)
        close(sp->fd);
    sp->fd = -1;
    sp->dirty = false;
    sp->segs[sp->nsegs - 1].sealed = true;
    return err;
}

static gf_err open_new_segment(gf_spool *sp, uint64_t first)
{
    char name[32];
    gf_spool_seg_name(first, name, sizeof name);
    int fd = openat(sp->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0 || (sp->cfg.fsync != GF_SPOOL_FSYNC_NEVER && fsync(sp->dirfd) != 0)) {
        gf_log_error("spool: cannot create segment", "dir=%s segment=%s errno=%d", sp->dir, name,
                     errno);
        if (fd >= 0) {
            close(fd);
            unlinkat(sp->dirfd, name, 0);
        }
        return GF_ERR_IO;
    }
    gf_err err = gf_spool_seg_push(&sp->segs, &sp->nsegs, &sp->capsegs, first);
    if (err != GF_OK) {
        close(fd);
        unlinkat(sp->dirfd, name, 0);
        return err;
    }
    sp->fd = fd;
    return GF_OK;
}

/* Deletes the oldest segments while every record in them is acknowledged. */
static gf_err drop_acked(gf_spool *sp)
{
    gf_err err = GF_OK;
    size_t k = 0;
    for (; k < sp->nsegs && sp->segs[k].last_seq <= sp->state.ack_floor; k++) {
        char name[32];
        gf_spool_seg_name(sp->segs[k].first, name, sizeof name);
        if (k == sp->nsegs - 1 && sp->fd >= 0) {
            close(sp->fd);
            sp->fd = -1;
            sp->dirty = false;
        }
        if (unlinkat(sp->dirfd, name, 0) != 0 && errno != ENOENT) {
            gf_log_error("spool: cannot delete segment", "dir=%s segment=%s errno=%d", sp->dir,
                         name, errno);
            err = GF_ERR_IO;
            break;
        }
        sp->bytes -= sp->segs[k].bytes;
    }
    if (k > 0)
        memmove(sp->segs, sp->segs + k, (sp->nsegs - k) * sizeof *sp->segs);
    sp->nsegs -= k;
    return err;
}

static gf_err open_dir(gf_spool *sp)
{
    if (mkdir(sp->dir, 0700) != 0 && errno != EEXIST)
        return GF_ERR_IO;
    sp->dirfd = open(sp->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sp->dirfd < 0)
        return GF_ERR_IO;
    sp->lockfd = openat(sp->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (sp->lockfd < 0)
        return GF_ERR_IO;
    if (flock(sp->lockfd, LOCK_EX | LOCK_NB) != 0)
        return errno == EWOULDBLOCK ? GF_ERR_CONFLICT : GF_ERR_IO;
    if (unlinkat(sp->dirfd, "state.tmp", 0) != 0 && errno != ENOENT)
        return GF_ERR_IO;
    return GF_OK;
}

/* Scans every segment in order; returns the highest seq found in *high. */
static gf_err scan_segments(gf_spool *sp, uint64_t *high)
{
    gf_err err = gf_spool_seg_list(sp->dirfd, &sp->segs, &sp->nsegs);
    sp->capsegs = sp->nsegs;
    *high = 0;
    for (size_t i = 0; err == GF_OK && i < sp->nsegs; i++) {
        gf_spool_seg *s = &sp->segs[i];
        err = gf_spool_seg_scan(sp->dirfd, s, *high, sp->state.ack_floor, &sp->buf, &sp->scan);
        if (s->last_seq > *high)
            *high = s->last_seq;
        sp->bytes += s->bytes;
    }
    return err;
}

static bool boot_unknown(const uint8_t boot[16])
{
    for (int i = 0; i < 16; i++)
        if (boot[i] != 0)
            return false;
    return true;
}

/* The state to write: floor and seq_used as given, this boot. */
static gf_spool_state state_of(const gf_spool *sp, uint64_t ack_floor, uint64_t seq_used)
{
    gf_spool_state st = {.ack_floor = ack_floor, .seq_used = seq_used};
    memcpy(st.boot, sp->boot, sizeof st.boot);
    return st;
}

static gf_err recover(gf_spool *sp)
{
    bool found = false;
    uint64_t high = 0;
    gf_err err = gf_spool_state_read(sp->dirfd, &sp->state, &found);
    if (err == GF_ERR_INVALID)
        gf_log_error("spool: state file malformed; refusing to open (the seq counter would be "
                     "unknown)",
                     "dir=%s", sp->dir);
    if (err == GF_OK)
        err = scan_segments(sp, &high);
    if (err != GF_OK)
        return err;
    if (!found)
        sp->state = (gf_spool_state){0};
    bool same_boot =
        found && !boot_unknown(sp->boot) && memcmp(sp->state.boot, sp->boot, sizeof sp->boot) == 0;
    if (high > sp->state.seq_used)
        sp->state.seq_used = high;
    sp->next_seq = sp->state.seq_used + 1;
    if (same_boot) /* see the design notes: nothing above this was published */
        sp->next_seq = (high > sp->state.ack_floor ? high : sp->state.ack_floor) + 1;
    /* seq_used may have grown: persist it before any segment it covers goes away. */
    memcpy(sp->state.boot, sp->boot, sizeof sp->boot);
    err = gf_spool_state_write(sp->dirfd, &sp->state);
    if (err == GF_OK)
        err = drop_acked(sp);
    return err;
}

static gf_err reopen_last(gf_spool *sp)
{
    if (sp->nsegs == 0 || sp->segs[sp->nsegs - 1].sealed)
        return GF_OK;
    char name[32];
    gf_spool_seg_name(sp->segs[sp->nsegs - 1].first, name, sizeof name);
    sp->fd = openat(sp->dirfd, name, O_WRONLY | O_APPEND | O_CLOEXEC);
    return sp->fd >= 0 ? GF_OK : GF_ERR_IO;
}

gf_err gf_spool_open(const gf_spool_config *cfg, gf_spool **out)
{
    *out = NULL;
    gf_spool *sp = calloc(1, sizeof *sp);
    if (sp == NULL)
        return GF_ERR_NOMEM;
    sp->dirfd = sp->lockfd = sp->fd = -1;
    gf_err err = config_resolve(cfg, &sp->cfg);
    if (err == GF_OK && (sp->dir = strdup(cfg->dir)) == NULL)
        err = GF_ERR_NOMEM;
    gf_spool_boot_hash(cfg->boot_id, sp->boot);
    if (err == GF_OK)
        err = open_dir(sp);
    if (err == GF_OK)
        err = recover(sp);
    if (err == GF_OK)
        err = reopen_last(sp);
    if (err != GF_OK) {
        gf_spool_close(sp);
        return err;
    }
    sp->last_sync_ms = now_ms(sp);
    gf_log_info("spool: opened",
                "dir=%s next_seq=%llu acked=%llu segments=%zu torn=%llu corrupt=%llu", sp->dir,
                (unsigned long long)sp->next_seq, (unsigned long long)sp->state.ack_floor,
                sp->nsegs, (unsigned long long)sp->scan.torn, (unsigned long long)sp->scan.corrupt);
    *out = sp;
    return GF_OK;
}

void gf_spool_close(gf_spool *sp)
{
    if (sp == NULL)
        return;
    if (sp->fd >= 0 && sp->cfg.fsync != GF_SPOOL_FSYNC_NEVER)
        sync_active(sp);
    if (sp->fd >= 0)
        close(sp->fd);
    /* A clean close gives back the unused rest of a reservation: no gap on restart. */
    if (sp->next_seq > 0 && sp->state.seq_used != sp->next_seq - 1) {
        gf_spool_state st = state_of(sp, sp->state.ack_floor, sp->next_seq - 1);
        gf_spool_state_write(sp->dirfd, &st);
    }
    if (sp->lockfd >= 0)
        close(sp->lockfd);
    if (sp->dirfd >= 0)
        close(sp->dirfd);
    gf_spool_buf_fini(&sp->buf);
    free(sp->segs);
    free(sp->dir);
    free(sp);
}

uint64_t gf_spool_next_seq(const gf_spool *sp)
{
    return sp->next_seq;
}

gf_err gf_spool_sync(gf_spool *sp)
{
    if (sp->cfg.fsync != GF_SPOOL_FSYNC_INTERVAL || !sp->dirty ||
        now_ms(sp) - sp->last_sync_ms < sp->cfg.fsync_interval_ms)
        return GF_OK;
    return sync_active(sp);
}

gf_err gf_spool_flush(gf_spool *sp)
{
    return sync_active(sp);
}

gf_err gf_spool_ack(gf_spool *sp, uint64_t floor)
{
    if (floor >= sp->next_seq)
        return GF_ERR_INVALID;
    if (floor <= sp->state.ack_floor)
        return GF_OK;
    gf_spool_state st = state_of(sp, floor, sp->state.seq_used);
    if (st.seq_used < sp->next_seq - 1)
        st.seq_used = sp->next_seq - 1;
    gf_err err = gf_spool_state_write(sp->dirfd, &st);
    if (err != GF_OK) {
        gf_log_error("spool: cannot write state", "dir=%s errno=%d", sp->dir, errno);
        return err;
    }
    sp->state = st;
    return drop_acked(sp);
}

void gf_spool_stats_get(const gf_spool *sp, gf_spool_stats *out)
{
    *out = sp->count;
    out->next_seq = sp->next_seq;
    out->acked_floor = sp->state.ack_floor;
    out->bytes = sp->bytes;
    out->segments = sp->nsegs;
    out->records = 0;
    for (size_t i = 0; i < sp->nsegs; i++)
        out->records += sp->segs[i].records;
    out->torn_records = sp->scan.torn;
    out->corrupt_records = sp->scan.corrupt;
    out->skipped_records = sp->scan.skipped;
    out->pending_at_open = sp->scan.pending;
}

/* Makes sure the open segment can take `size` more bytes, rotating if needed. */
static gf_err make_room(gf_spool *sp, uint64_t seq, size_t size)
{
    if (sp->fd >= 0) {
        const gf_spool_seg *s = &sp->segs[sp->nsegs - 1];
        if (s->bytes == 0 || s->bytes + size <= sp->cfg.segment_bytes)
            return GF_OK;
        gf_err err = seal_active(sp);
        if (err != GF_OK)
            return err;
    }
    return open_new_segment(sp, seq);
}

/* interval and never: the state file must cover seq before seq is used. */
static gf_err reserve(gf_spool *sp, uint64_t seq)
{
    if (sp->cfg.fsync == GF_SPOOL_FSYNC_ALWAYS || seq <= sp->state.seq_used)
        return GF_OK;
    gf_spool_state st = state_of(sp, sp->state.ack_floor, seq - 1 + sp->cfg.seq_reserve);
    gf_err err = gf_spool_state_write(sp->dirfd, &st);
    if (err == GF_OK)
        sp->state = st;
    return err;
}

/* Undoes a failed append: cut the segment back to its last good record and seal it
 * (or remove it if the failed record was its first). */
static gf_err append_failed(gf_spool *sp, const char *what)
{
    gf_spool_seg *s = &sp->segs[sp->nsegs - 1];
    gf_log_error("spool: append failed, segment sealed", "dir=%s step=%s errno=%d", sp->dir, what,
                 errno);
    if (ftruncate(sp->fd, (off_t)s->bytes) != 0)
        gf_log_error("spool: cannot cut back a failed append", "dir=%s errno=%d", sp->dir, errno);
    close(sp->fd);
    sp->fd = -1;
    sp->dirty = false;
    s->sealed = true;
    if (s->bytes == 0) {
        char name[32];
        gf_spool_seg_name(s->first, name, sizeof name);
        if (unlinkat(sp->dirfd, name, 0) == 0)
            sp->nsegs--;
    }
    return GF_ERR_IO;
}

static gf_err write_record(gf_spool *sp, const gf_spool_record *rec, size_t size)
{
    gf_spool_seg *s = &sp->segs[sp->nsegs - 1];
    gf_spool_frame_encode(rec, s->first, sp->buf.p);
    if (gf_spool_write_all(sp->fd, sp->buf.p, size) != GF_OK)
        return append_failed(sp, "write");
    sp->dirty = true;
    bool sync = sp->cfg.fsync == GF_SPOOL_FSYNC_ALWAYS ||
                (sp->cfg.fsync == GF_SPOOL_FSYNC_INTERVAL &&
                 now_ms(sp) - sp->last_sync_ms >= sp->cfg.fsync_interval_ms);
    if (sync) {
        sp->count.syncs++;
        sp->last_sync_ms = now_ms(sp);
        if (fdatasync(sp->fd) != 0)
            return append_failed(sp, "fdatasync");
        sp->dirty = false;
    }
    s->bytes += size;
    s->valid += size;
    s->records++;
    s->last_seq = rec->seq;
    sp->bytes += size;
    return GF_OK;
}

gf_err gf_spool_append(gf_spool *sp, const gf_spool_record *rec)
{
    size_t size = 0;
    if (rec->seq != sp->next_seq || gf_spool_frame_size(rec, &size) != GF_OK)
        return GF_ERR_INVALID;
    if (sp->bytes + size > sp->cfg.max_bytes) {
        sp->count.dropped++;
        sp->next_seq++;
        return GF_ERR_UNAVAILABLE;
    }
    gf_err err = reserve(sp, rec->seq);
    if (err == GF_OK)
        err = make_room(sp, rec->seq, size);
    if (err == GF_OK)
        err = gf_spool_buf_reserve(&sp->buf, size);
    if (err == GF_OK)
        err = write_record(sp, rec, size);
    if (err != GF_OK)
        return err;
    sp->next_seq++;
    sp->count.appended++;
    return GF_OK;
}

/* Calls fn for the records of one segment with seq > from. */
static gf_err replay_segment(gf_spool *sp, const gf_spool_seg *s, uint64_t from,
                             gf_spool_visit_fn fn, void *ctx)
{
    gf_err err = gf_spool_seg_read(sp->dirfd, s, s->valid, &sp->buf);
    size_t off = 0, size = 0;
    gf_spool_record rec;
    while (err == GF_OK && off < sp->buf.len) {
        if (gf_spool_frame_decode(sp->buf.p + off, sp->buf.len - off, s->first, &rec, &size) !=
            GF_SPOOL_FRAME_OK) {
            gf_log_error("spool: segment changed under the spool", "dir=%s", sp->dir);
            return GF_ERR_IO;
        }
        off += size;
        if (rec.seq > from)
            err = fn(ctx, &rec);
    }
    return err;
}

gf_err gf_spool_replay(gf_spool *sp, uint64_t after_seq, gf_spool_visit_fn fn, void *ctx)
{
    uint64_t from = after_seq > sp->state.ack_floor ? after_seq : sp->state.ack_floor;
    gf_err err = GF_OK;
    for (size_t i = 0; err == GF_OK && i < sp->nsegs; i++)
        if (sp->segs[i].last_seq > from && sp->segs[i].records > 0)
            err = replay_segment(sp, &sp->segs[i], from, fn, ctx);
    return err;
}
