/*
 * crash_group.h — one fingerprint's crashes: counts, first and last seen, a sample, and
 * counts by build and platform. Pure (protobuf-c, no NATS).
 *
 * A group is what one partition keeps under "<fingerprint>.p<NN>" (CrashGroup in
 * schemas/gamefn/v1/crashes.proto, inside the consumer framework's EffectRecord) and
 * what a query returns after merging the partitions' groups. Both adding a crash and
 * merging are order-independent where it matters, so any replay or merge order gives
 * the same group:
 *   - count, first/last seen: sums, minimum, maximum (occurred_unix_ms);
 *   - the sample: the crash that occurred first (ties: the lower source id, then the
 *     lower source seq);
 *   - builds and platforms: at most CR_COUNTS_MAX names each; adding keeps the first
 *     names seen and counts later ones under other (a partition's order is the stream's,
 *     fixed); merging keeps the largest counts (ties: the smaller name) and folds the
 *     rest into other. Totals stay exact either way.
 *
 * Ownership: cr_group_init / _decode fill a group whose strings are malloc'd;
 * cr_group_fini frees them. Encoded buffers are malloc'd for the caller.
 * Threads: one thread per group.
 */
#ifndef GAMEFN_CRASH_GROUP_H
#define GAMEFN_CRASH_GROUP_H

#include <stddef.h>
#include <stdint.h>

#include "fingerprint.h"
#include "gamefn/err.h"
#include "gamefn/v1/crashes.pb-c.h"
#include "gamefn/v1/event.pb-c.h"

enum {
    CR_COUNTS_MAX = 32,
    CR_NAME_MAX = 64, /* a build or platform (CrashEvent: build 0..64, platform 0..32) */
};

typedef struct cr_count {
    char name[CR_NAME_MAX + 1];
    uint64_t count;
} cr_count;

typedef struct cr_counts {
    cr_count items[CR_COUNTS_MAX]; /* sorted by name */
    size_t n;
    uint64_t other;
} cr_counts;

typedef struct cr_sample {
    int64_t occurred_unix_ms;
    char *signature, *message, *stack, *build, *platform;
    char *event_id, *player_id, *source_id;
    uint64_t source_seq;
} cr_sample;

typedef struct cr_group {
    char fingerprint[GF_FINGERPRINT_HEX_LEN + 1];
    uint64_t count;
    int64_t first_seen_unix_ms, last_seen_unix_ms;
    unsigned frames;
    char *normalized; /* the normalised frames, one per line */
    cr_sample sample;
    cr_counts builds, platforms;
} cr_group;

/* An empty group of this fingerprint (32 lowercase hex digits; GF_ERR_INVALID else). */
gf_err cr_group_init(cr_group *g, const char *fingerprint);
void cr_group_fini(cr_group *g);

/* The fingerprint of a crash event (ev->crash set) and its normalised frames (may be
 * NULL). GF_ERR_INVALID when neither a frame nor the signature gives one. */
gf_err cr_fingerprint_of(const Gamefn__V1__GameEvent *ev, unsigned max_frames, gf_fingerprint *fp,
                         char *normalized, size_t normalized_size);

/* Counts one crash event of this fingerprint (its normalised frames recorded on the
 * first). GF_ERR_INVALID if it is not a crash event. */
gf_err cr_group_add(cr_group *g, const Gamefn__V1__GameEvent *ev, unsigned max_frames);

/* Adds `from` (same fingerprint, else GF_ERR_INVALID) into `into`. */
gf_err cr_group_merge(cr_group *into, const cr_group *from);

gf_err cr_group_encode(const cr_group *g, uint8_t **out, size_t *len);
/* Validates (fingerprint, count >= 1, first <= last, names, sorted unique counts within
 * the bound) and fills g. GF_ERR_INVALID on anything malformed (g left empty). */
gf_err cr_group_decode(const uint8_t *buf, size_t len, cr_group *g);

/* g as a CrashGroup message whose strings point into g (valid while g lives); the
 * repeated fields are malloc'd: free with cr_group_msg_fini. */
gf_err cr_group_msg(const cr_group *g, Gamefn__V1__CrashGroup *m);
void cr_group_msg_fini(Gamefn__V1__CrashGroup *m);

#endif
