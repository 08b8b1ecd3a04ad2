/*
 * spool_internal.h — what spool.c, spool_frame.c, spool_state.c and spool_scan.c
 * share. Private to the spool library.
 */
#ifndef GAMEFN_SPOOL_INTERNAL_H
#define GAMEFN_SPOOL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/spool.h"

/* ---- little-endian integers on disk ---------------------------------------- */

static inline void gf_spool_put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t gf_spool_get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* The first 8 bytes of BLAKE2b-128 over a || b (b may be NULL with blen 0). */
void gf_spool_check(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, uint8_t out[8]);

/* ---- record frames (spool_frame.c) ----------------------------------------- */

enum {
    GF_SPOOL_FRAME_HEADER = 16,
    /* seq, two lengths and NULs, data length, and the largest fields */
    GF_SPOOL_PAYLOAD_MAX =
        8 + 2 + GF_SPOOL_SUBJECT_MAX + 1 + 2 + GF_SPOOL_MSG_ID_MAX + 1 + 4 + GF_SPOOL_DATA_MAX,
};

typedef enum gf_spool_frame_result {
    GF_SPOOL_FRAME_OK = 0,
    GF_SPOOL_FRAME_SHORT, /* a plausible header, but the bytes end before the record */
    GF_SPOOL_FRAME_BAD,   /* not a record of this segment */
} gf_spool_frame_result;

/* GF_ERR_INVALID if a field is out of bounds; else the frame's size in *size. */
gf_err gf_spool_frame_size(const gf_spool_record *rec, size_t *size);

/* Writes the frame of rec (gf_spool_frame_size bytes) into out. The check covers
 * seg_first, so a stale record of another segment never passes as one of this. */
void gf_spool_frame_encode(const gf_spool_record *rec, uint64_t seg_first, uint8_t *out);

/* Reads the frame at buf[0..avail). On GF_SPOOL_FRAME_OK, rec points into buf
 * (subject and msg_id NUL-terminated there) and *size is the frame's size. */
gf_spool_frame_result gf_spool_frame_decode(const uint8_t *buf, size_t avail, uint64_t seg_first,
                                            gf_spool_record *rec, size_t *size);

/* ---- state file (spool_state.c) ------------------------------------------- */

typedef struct gf_spool_state {
    uint64_t ack_floor; /* every seq <= ack_floor is acknowledged */
    uint64_t seq_used;  /* no seq above it was ever handed out */
    uint8_t boot[16];   /* the boot it was written in (gf_spool_boot_hash); zeros = unknown */
} gf_spool_state;

/* BLAKE2b-128 of boot_id, or of the kernel's boot id (/proc/sys/kernel/random/boot_id)
 * when boot_id is NULL. Zeros when boot_id is "" or the kernel's cannot be read:
 * unknown, which never equals a stored boot. */
void gf_spool_boot_hash(const char *boot_id, uint8_t out[16]);

/* *found = false (and GF_OK) when there is no state file. GF_ERR_INVALID when it is
 * malformed; GF_ERR_IO when it cannot be read. */
gf_err gf_spool_state_read(int dirfd, gf_spool_state *st, bool *found);

/* read() until len bytes or the end of the file (*got: how many). */
gf_err gf_spool_read_all(int fd, uint8_t *p, size_t len, size_t *got);

/* write() until done; GF_ERR_IO on failure. */
gf_err gf_spool_write_all(int fd, const uint8_t *p, size_t len);

/* Replaces the state file: write "state.tmp", fsync, rename, fsync the directory. */
gf_err gf_spool_state_write(int dirfd, const gf_spool_state *st);

/* ---- segments (spool_scan.c) ---------------------------------------------- */

typedef struct gf_spool_seg {
    uint64_t first;    /* from the file name: every record's seq >= first */
    uint64_t last_seq; /* highest seq in the file, skipped records included; 0 = none */
    uint64_t bytes;    /* file size */
    uint64_t valid;    /* length of the prefix of valid records (= bytes unless corrupt) */
    uint64_t records;  /* valid records in that prefix */
    bool sealed;       /* never appended to again (corruption, I/O error) */
} gf_spool_seg;

/* A growable read buffer. */
typedef struct gf_spool_buf {
    uint8_t *p;
    size_t len, cap;
} gf_spool_buf;

/* What scanning found, added up over segments. */
typedef struct gf_spool_scan_stats {
    uint64_t torn, corrupt, skipped;
    uint64_t pending; /* valid records above the ack floor */
} gf_spool_scan_stats;

/* "seg-<first, 20 digits>.log" into name (at least 32 bytes). */
void gf_spool_seg_name(uint64_t first, char *name, size_t size);

/* The segments in dirfd, sorted by first seq: a malloc'd array the caller frees. */
gf_err gf_spool_seg_list(int dirfd, gf_spool_seg **segs, size_t *n);

/* Reads the segment's first `len` bytes (all of it when len is UINT64_MAX). */
gf_err gf_spool_seg_read(int dirfd, const gf_spool_seg *seg, uint64_t len, gf_spool_buf *buf);

/* Validates the segment, whose records must all have seq > prev_seq: fills last_seq,
 * bytes, valid, records, sealed; truncates a torn tail; adds its valid records above
 * ack_floor to st->pending. */
gf_err gf_spool_seg_scan(int dirfd, gf_spool_seg *seg, uint64_t prev_seq, uint64_t ack_floor,
                         gf_spool_buf *buf, gf_spool_scan_stats *st);

void gf_spool_buf_fini(gf_spool_buf *buf);
gf_err gf_spool_buf_reserve(gf_spool_buf *buf, size_t need);

/* Appends an entry {first} to a growable segment array. */
gf_err gf_spool_seg_push(gf_spool_seg **segs, size_t *n, size_t *cap, uint64_t first);

#endif
