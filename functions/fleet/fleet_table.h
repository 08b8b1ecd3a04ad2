/*
 * fleet_table.h — an in-memory copy of the `fleet` bucket: key -> (revision, record),
 * fed by a KV watcher (fleet_mirror.h), read by the allocator (which server to try)
 * and the fleet's sweep and warm pool.
 *
 * Entries are kept sorted by key, "<datacenter>.<server_id>", so one datacenter's
 * servers are one contiguous run. A write older than the revision held is ignored
 * (watcher and own writes may arrive in either order). A resync (after a reconnect the
 * watcher is re-created and replays every key) is bracketed by resync_begin/end: keys
 * the replay did not mention are dropped at the end.
 *
 * Allocation order: among a datacenter's FREE, fresh servers with room, the most
 * recently freed first (so long-idle servers are the ones the warm pool hibernates),
 * and among the first 16 of those an offset taken from the match id, so allocators
 * working on different matches at once rarely race for the same record.
 *
 * Pure (protobuf-c only). Not thread-safe: the mirror locks around every call.
 * Ownership: the table owns its entries (decoded records and packed bytes); entries
 * handed to callbacks are borrowed for the call; candidates are copies (free with
 * fleet_candidates_free()).
 */
#ifndef GAMEFN_FLEET_TABLE_H
#define GAMEFN_FLEET_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet_record.h"
#include "gamefn/err.h"
#include "gamefn/v1/fleet.pb-c.h"

typedef struct fleet_table fleet_table;

typedef struct fleet_entry {
    char key[FLEET_KEY_MAX];
    uint64_t revision;
    Gamefn__V1__ServerRecord *rec; /* decoded, owned by the table */
    uint8_t *data;                 /* the packed value, owned by the table */
    size_t len;
    uint64_t generation; /* last resync that saw it */
    bool superseded;     /* a compare-and-set on this revision lost: a newer one exists */
} fleet_entry;

/* A copy of one entry, for acting on it outside the lock. */
typedef struct fleet_candidate {
    char key[FLEET_KEY_MAX];
    uint64_t revision;
    Gamefn__V1__ServerRecord *rec; /* owned by the candidate */
} fleet_candidate;

gf_err fleet_table_new(fleet_table **out);
void fleet_table_free(fleet_table *t); /* NULL is fine */

/* A put of `key` at `rev`. GF_ERR_INVALID (table unchanged, key dropped) when the
 * value is not a well-formed ServerRecord stored under its own key. */
gf_err fleet_table_put(fleet_table *t, const char *key, uint64_t rev, const uint8_t *data,
                       size_t len);
/* A delete (or purge) of `key` at `rev`. */
void fleet_table_delete(fleet_table *t, const char *key, uint64_t rev);

/* A compare-and-set on `key` at `rev` lost its race: until the newer revision arrives,
 * the entry is no candidate (so concurrent allocators move on to other servers instead
 * of trying the same record again). No-op unless the entry is at `rev`. */
void fleet_table_superseded(fleet_table *t, const char *key, uint64_t rev);

void fleet_table_resync_begin(fleet_table *t);
size_t fleet_table_resync_end(fleet_table *t); /* returns how many keys were dropped */

size_t fleet_table_count(const fleet_table *t);
/* Grows whenever a server becomes FREE (a FREE record that is new or replaces a record
 * in another state): what an allocator waiting for a server waits for. Heartbeats that
 * keep a FREE server FREE, allocations and deletes leave it. */
uint64_t fleet_table_version(const fleet_table *t);
const fleet_entry *fleet_table_get(const fleet_table *t, const char *key);

/* Calls fn for every entry (of `datacenter` only, unless NULL), in key order. */
void fleet_table_each(const fleet_table *t, const char *datacenter,
                      void (*fn)(const fleet_entry *e, void *arg), void *arg);

/* Up to `max` servers of `datacenter` the allocator may take for a match of `players`
 * players at `now` (superseded entries left out), in allocation order (above). Returns how many
 * were copied; fewer than found only when memory runs out. */
size_t fleet_table_candidates(const fleet_table *t, const char *datacenter, size_t players,
                              int64_t now_unix_ms, const char *match_id, fleet_candidate *out,
                              size_t max);

/* The server ALLOCATED (or DRAINING) with `match_id`, copied into *out; false if none. */
bool fleet_table_find_match(const fleet_table *t, const char *match_id, fleet_candidate *out);

void fleet_candidates_free(fleet_candidate *c, size_t n);

#endif
