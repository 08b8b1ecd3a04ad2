/*
 * gamefn/partition.h — the event partition of a player (docs/PROTOCOL.md §9, "Partitions").
 *
 * It must equal nats-server's {{partition(n,1)}} subject mapping, which is FNV-1a-32 of
 * the token's bytes mod n, so producers, consumers and tests can compute it
 * client-side. Pure and reentrant.
 */
#ifndef GAMEFN_PARTITION_H
#define GAMEFN_PARTITION_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 32-bit of `len` bytes: offset basis 2166136261, prime 16777619. */
uint32_t gf_partition_fnv1a32(const void *data, size_t len);

/* The partition nats-server's {{partition(n,1)}} mapping gives the player id token:
 * FNV-1a-32 of its bytes mod n (n > 0; n = 0 or a NULL id returns 0). */
uint32_t gf_partition_of(const char *player_id, uint32_t n);

#endif
