/*
 * tally.h — eventcount's pure logic: one player's event counts by type, applied
 * exactly once per event and only by the current owner of the player's partition.
 *
 * A record is what the function keeps per player in KV bucket `event_counts`, as text:
 *
 *   "v1 <applied_seq> <token> <total> <type>=<n> <type>=<n> ..."
 *
 * applied_seq is the highest EVENTS stream sequence already counted, so an event that
 * comes again (redelivered after a crash, or a batch retried in place) is skipped:
 * effects are idempotent. token is the fencing token of the last partition owner that
 * wrote the record: a writer with a smaller one is a stale owner and must not write.
 * These two rules are what every partitioned consumer needs; the counting is the
 * example's own.
 *
 * Pure (no NATS); main.c wires it to the partitioned endpoint. Reentrant.
 */
#ifndef GAMEFN_EVENTCOUNT_TALLY_H
#define GAMEFN_EVENTCOUNT_TALLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

enum { EC_TYPES_MAX = 16, EC_TYPE_MAX = 32, EC_PLAYER_MAX = 64, EC_RECORD_MAX = 1024 };

typedef struct ec_record {
    uint64_t applied_seq;
    uint64_t token;
    uint64_t total;
    size_t ntypes;
    struct {
        char type[EC_TYPE_MAX + 1];
        uint64_t n;
    } types[EC_TYPES_MAX]; /* kinds past EC_TYPES_MAX count in total only */
} ec_record;

/* A fresh record (nothing counted). */
void ec_record_init(ec_record *r);

/* Text <-> record. Decoding refuses anything malformed (GF_ERR_INVALID); encoding
 * returns the length, or 0 if it does not fit. */
gf_err ec_record_decode(const char *text, size_t len, ec_record *r);
size_t ec_record_encode(const ec_record *r, char *buf, size_t size);

/* Takes the record for a writer holding `token`: false (and nothing changes) when a
 * newer owner has written it already. */
bool ec_record_fence(ec_record *r, uint64_t token);

/* Counts one event of `type` stored at stream sequence `seq`; false when it was
 * counted before (seq <= applied_seq). */
bool ec_record_apply(ec_record *r, uint64_t seq, const char *type);

/* Sets every count to zero; applied_seq stays, so old events are not counted again. */
void ec_record_reset(ec_record *r);

/* "gamefn.v1.evp.<partition>.<player>.<type>" -> player and type (ids of
 * [A-Za-z0-9_-]). GF_ERR_INVALID otherwise. */
gf_err ec_subject_parse(const char *subject, char *player, size_t player_size, char *type,
                        size_t type_size);

#endif
