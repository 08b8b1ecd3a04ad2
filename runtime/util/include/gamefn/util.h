/*
 * gamefn/util.h — three small helpers the pure event-log libraries share (spool,
 * dedup window, gap tracker, leaderboard, rollups). No NATS, no state.
 *
 * gf_token_len: the wire's token rule (docs/PROTOCOL.md §1: 1..max bytes of
 * [A-Za-z0-9_-]) for libraries that must not link the NATS runtime where
 * gf_wire_token_valid lives.
 * gf_grow: growable arrays. gf_pack: a protobuf-c message into a malloc'd buffer.
 * Ownership: gf_grow reallocs the caller's array; gf_pack's *out is the caller's to
 * free().
 */
#ifndef GAMEFN_UTIL_H
#define GAMEFN_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "gamefn/err.h"

/* Length of s if it is a NUL-terminated token of 1..max bytes, else 0 (NULL too). */
size_t gf_token_len(const char *s, size_t max);

/* Returns `items` (capacity *cap elements of `size` bytes) grown to hold at least
 * `need` (>= 1) elements, doubling from 8; the old pointer is then invalid. NULL when
 * memory runs out or the size overflows: `items` and *cap are left as they were. */
void *gf_grow(void *items, size_t *cap, size_t need, size_t size);

/* Packs m; *out malloc'd (at least 1 byte), *len its packed size. */
gf_err gf_pack(const ProtobufCMessage *m, uint8_t **out, size_t *len);

#endif
