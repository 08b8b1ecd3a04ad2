/*
 * partition_share.h — private, pure: who should own how many partitions of a
 * partitioned consumer group. No NATS here, so it is unit-tested on its own
 * (tests/unit/test_partition_share.c).
 *
 * Membership: every replica of a group heartbeats one KV value, the member list
 * "part.<group>.members" = one line "<expires_unix_ms> <holder>" per live replica,
 * updated by compare-and-set (read, drop expired lines, refresh its own, write back
 * on the revision read). Every replica therefore sees the same list within one
 * heartbeat.
 *
 * Fair share, computed by each replica from that list alone: sort the holders; with k
 * members and P partitions, member i gets target(i) = P/k, plus one for the first P%k
 * members, and a preferred block of consecutive partitions starting at the sum of the
 * targets before it. Targets add up to P, so whenever a partition is free some member
 * is below its target and takes it; a member above its target gives back partitions
 * outside its block first. The block only decides preferences; leases decide ownership.
 *
 * Threads: none; reentrant.
 */
#ifndef GAMEFN_ENDPOINTS_PARTITION_SHARE_H
#define GAMEFN_ENDPOINTS_PARTITION_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { GF_MEMBER_HOLDER_MAX = 96, GF_MEMBERS_MAX = 256, GF_PARTITIONS_MAX = 100 };

typedef struct gf__member {
    int64_t expires_unix_ms;
    char holder[GF_MEMBER_HOLDER_MAX];
} gf__member;

typedef struct gf__members {
    gf__member m[GF_MEMBERS_MAX];
    size_t n; /* sorted by holder after gf__members_update */
} gf__members;

/* Parses a member list value (malformed lines are skipped, extra members dropped). */
void gf__members_decode(const char *value, size_t len, gf__members *out);

/* Writes the list as text; returns the length, or 0 if it does not fit. */
size_t gf__members_encode(const gf__members *ms, char *buf, size_t size);

/* Drops members expired at now_unix_ms and `self`'s old line, then (unless leaving)
 * adds `self` expiring at now_unix_ms + ttl_ms, and sorts by holder. */
void gf__members_update(gf__members *ms, const char *self, int64_t now_unix_ms, int64_t ttl_ms,
                        bool leaving);

/* `self`'s share of `partitions` among the members (self counts even if absent from
 * the list): how many it should own, and where its preferred block starts. */
void gf__share_of(const gf__members *ms, const char *self, unsigned partitions, unsigned *target,
                  unsigned *block_start);

/* The order in which to try to acquire: the preferred block first, then the others
 * from the block's end, wrapping. order[] has `partitions` entries. */
void gf__share_order(unsigned partitions, unsigned block_start, unsigned target, unsigned *order);

/* Which owned partition to give back first: one outside the preferred block if any
 * (the farthest after the block), else the last of the block. owned[] has `partitions`
 * flags; returns `partitions` when nothing is owned. */
unsigned gf__share_release_pick(unsigned partitions, unsigned block_start, unsigned target,
                                const bool *owned);

#endif
