/*
 * schema_fill.h — descriptor-driven helpers for the schema tests: build a message
 * with every field set, compare two messages field by field, find the top-level
 * field boundaries of an encoding, and place input right before a guard page.
 *
 * Ownership: sf_new() and sf_pack() return malloc'd memory (free with
 * protobuf_c_message_free_unpacked(m, NULL) / free()). Test code: failures abort
 * through cmocka's assertions.
 */
#ifndef GAMEFN_TEST_SCHEMA_FILL_H
#define GAMEFN_TEST_SCHEMA_FILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "gamefn/v1/common.pb-c.h"
#include "gamefn/v1/dlq.pb-c.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamefn/v1/event.pb-c.h"
#include "gamefn/v1/fleet.pb-c.h"
#include "gamefn/v1/leaderboard.pb-c.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/queue.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

/* How many fill variants cover every member of every oneof of `d` (at least 1). */
unsigned sf_variants(const ProtobufCMessageDescriptor *d);

/* A message of type d with every field set to a distinct non-default value:
 * repeated fields (and maps) get two elements; of each oneof, member
 * `variant % members` is set. */
ProtobufCMessage *sf_new(const ProtobufCMessageDescriptor *d, unsigned variant);

/* Packs m into a malloc'd buffer; asserts the packed size is what pack wrote. */
uint8_t *sf_pack(const ProtobufCMessage *m, size_t *len);

/* Field-by-field equality (oneof cases, repeated counts, strings, bytes, nested
 * messages). Prints the first difference to stderr. */
bool sf_equal(const ProtobufCMessage *a, const ProtobufCMessage *b);

/* For a valid encoding of `len` bytes: a malloc'd array of len + 1 flags, true at
 * every offset that lies between two top-level fields (0 and len included). */
bool *sf_field_boundaries(const uint8_t *buf, size_t len);

/* A field's tag with a wire type that does not match its type, plus a payload for
 * that wire type. Writes at most 16 bytes; returns the length. */
size_t sf_wrong_wire_type(const ProtobufCFieldDescriptor *fd, uint8_t *out);

/* xorshift64: deterministic pseudo-random numbers for junk input. */
uint64_t sf_rand(uint64_t *state);

#endif
