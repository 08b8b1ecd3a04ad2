/*
 * gamefn/spool.h — the producer's local write-ahead log of events.
 *
 * A game server's producer library appends every event here before it publishes it,
 * so neither a crash of the game server nor a broker outage of minutes loses an event
 * the library accepted. Once NATS is back, the producer replays the unacknowledged
 * records in order, with their original seq, subject and message id, and tells the
 * spool how far the server has acknowledged (gf_spool_ack).
 *
 * The spool also owns the source's sequence counter: gf_spool_next_seq() never goes
 * back, across restarts and crashes, even after every segment has been deleted, so a
 * restarted producer never reuses a (source_id, source_seq) pair (and so never has an
 * event silently dropped as a duplicate of an older one).
 *
 * On disk (one directory per source; see spool.c for the byte layout):
 *   seg-<first seq, 20 digits>.log   append-only segments, rotated at segment_bytes
 *   state                            ack floor + highest seq handed out, replaced by
 *                                    write, fsync, rename, fsync(dir)
 *   lock                             flock()ed while open: one process per spool
 *
 * Options (zero = default):
 *
 *   | field             | type   | default     | bounds                          |
 *   |-------------------|--------|-------------|---------------------------------|
 *   | dir               | path   | (required)  | created if missing (one level)  |
 *   | fsync             | enum   | always      | always, interval, never         |
 *   | fsync_interval_ms | int64  | 100         | 1..60000 (interval only)        |
 *   | segment_bytes     | uint64 | 8 MiB       | 4 KiB..1 GiB                    |
 *   | max_bytes         | uint64 | 1 GiB       | segment_bytes..1 TiB            |
 *   | seq_reserve       | uint32 | 1024        | 1..1048576 (interval and never) |
 *
 * fsync policies: `always` fdatasyncs after every append (nothing accepted is ever
 * lost); `interval` at most every fsync_interval_ms, from an append or gf_spool_sync
 * (a power loss loses at most that long); `never` leaves it to the OS (a process
 * crash loses nothing, a power loss an unknown tail). Under interval and never the
 * state file reserves seq_reserve seqs ahead of use, durably, so a lost tail can
 * never lead to a reused seq; after a crash of the machine (power loss, kernel
 * crash: the kernel's boot id differs from the one in the state file) the unused
 * rest of the reservation is skipped, and consumers see those seqs as a gap
 * (correctly: the lost tail may have held events). After a crash of the process
 * alone (same boot id: SIGKILL, abort) nothing written is lost, so the counter
 * continues right after the last record: no gap, under every policy. A clean
 * gf_spool_close() gives the rest back.
 *
 * Recovery on open: a torn last record (a crash mid-append, or garbage the file
 * system left behind it) is truncated away and counted in torn_records. A record
 * that fails its check while valid records follow it is corruption: it is logged at
 * error level, counted in corrupt_records, and the rest of that segment is skipped
 * (counted in skipped_records), never replayed. A malformed state file makes
 * gf_spool_open fail with GF_ERR_INVALID and changes nothing: without it the spool
 * cannot know which seqs were already used.
 *
 * Seqs without a record: a seq refused for space (GF_ERR_UNAVAILABLE below) and the
 * seqs skipped after a crash are never published. The producer must count them as
 * acknowledged (gf_ack_floor_mark) when its replay passes them, or its ack floor
 * stops there.
 *
 * Ownership: gf_spool_open allocates, gf_spool_close frees (NULL is fine). Records
 * passed to gf_spool_append are copied; records given to a replay callback borrow
 * the spool's buffer until the callback returns.
 * Threads: a gf_spool is used from one thread at a time (the producer's loop).
 */
#ifndef GAMEFN_SPOOL_H
#define GAMEFN_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

enum {
    GF_SPOOL_SUBJECT_MAX = 255,  /* bytes, no NUL */
    GF_SPOOL_MSG_ID_MAX = 255,   /* bytes, no NUL */
    GF_SPOOL_DATA_MAX = 1048576, /* bytes: NATS's default max_payload */
};

typedef enum gf_spool_fsync {
    GF_SPOOL_FSYNC_ALWAYS = 0,
    GF_SPOOL_FSYNC_INTERVAL,
    GF_SPOOL_FSYNC_NEVER,
} gf_spool_fsync;

typedef struct gf_spool_config {
    const char *dir;
    gf_spool_fsync fsync;
    int64_t fsync_interval_ms;
    uint64_t segment_bytes;
    uint64_t max_bytes;
    uint32_t seq_reserve;
    /* Which boot of the machine this is; NULL = the kernel's boot id. Tests set it to
     * simulate a reboot; "" = unknown (every open counts as after a reboot). */
    const char *boot_id;
    /* Monotonic milliseconds for the interval policy; NULL = CLOCK_MONOTONIC. */
    int64_t (*clock_ms)(void *ctx);
    void *clock_ctx;
} gf_spool_config;

/* One event. subject and msg_id are NUL-terminated, 1..255 bytes without NUL. */
typedef struct gf_spool_record {
    uint64_t seq;
    const char *subject;
    const char *msg_id;
    const uint8_t *data;
    size_t data_len; /* 0..GF_SPOOL_DATA_MAX */
} gf_spool_record;

typedef struct gf_spool_stats {
    uint64_t next_seq;        /* the seq the next append must carry */
    uint64_t acked_floor;     /* every seq <= this is acknowledged */
    uint64_t appended;        /* records appended since open */
    uint64_t dropped;         /* appends refused by max_bytes since open */
    uint64_t syncs;           /* fdatasync calls on segments since open */
    uint64_t bytes;           /* all segment files */
    uint64_t segments;        /* segment files */
    uint64_t records;         /* valid records in them (acked ones until deleted) */
    uint64_t torn_records;    /* torn tails truncated at open */
    uint64_t corrupt_records; /* corrupt records found at open (each ends its segment) */
    uint64_t skipped_records; /* valid records behind corruption, not replayed */
    uint64_t pending_at_open; /* valid records above the ack floor found at open */
} gf_spool_stats;

typedef struct gf_spool gf_spool;

/* Opens (creating if needed) and recovers the spool. GF_ERR_CONFLICT: another
 * process has it open. GF_ERR_INVALID: bad config or a malformed state file.
 * GF_ERR_IO: the file system failed. */
gf_err gf_spool_open(const gf_spool_config *cfg, gf_spool **out);

/* Syncs (unless fsync = never), records the highest seq used, frees. */
void gf_spool_close(gf_spool *sp);

uint64_t gf_spool_next_seq(const gf_spool *sp);

/* Appends rec, whose seq must be gf_spool_next_seq() (GF_ERR_INVALID otherwise).
 * GF_OK: written (and synced per the policy), next_seq advanced.
 * GF_ERR_UNAVAILABLE: the spool holds max_bytes and the record does not fit: it is
 *   not written, but its seq is used up, so consumers see the loss as a gap. The
 *   caller counts it as dropped and reports it loudly.
 * GF_ERR_IO: not written, seq not used; the segment is closed to further appends. */
gf_err gf_spool_append(gf_spool *sp, const gf_spool_record *rec);

/* Records durably that every seq <= floor is acknowledged by the server, then
 * deletes the segments holding only acknowledged records. A floor at or below the
 * current one is a no-op; above the last seq used it is GF_ERR_INVALID. Each call
 * costs a write, fsync and rename: call it in batches (every 100 ms or so). A lost
 * ack only means replaying events the server already has, which it deduplicates. */
gf_err gf_spool_ack(gf_spool *sp, uint64_t floor);

/* Interval policy: fdatasync if appends are unsynced and fsync_interval_ms has
 * passed since the last sync. A no-op under the other policies. */
gf_err gf_spool_sync(gf_spool *sp);

/* fdatasync now if anything is unsynced, whatever the policy. */
gf_err gf_spool_flush(gf_spool *sp);

/* Calls fn for every record with seq > after_seq and > the ack floor, in seq order
 * across segments. fn must not call other gf_spool functions; a non-GF_OK return
 * stops the replay and is returned (resume later with after_seq = the last seq
 * handled). */
typedef gf_err (*gf_spool_visit_fn)(void *ctx, const gf_spool_record *rec);
gf_err gf_spool_replay(gf_spool *sp, uint64_t after_seq, gf_spool_visit_fn fn, void *ctx);

void gf_spool_stats_get(const gf_spool *sp, gf_spool_stats *out);

#endif
