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
 * Broken keys: a value that is not a usable record — it does not decode, fails
 * fleet_check_record, is stored under another key than its own "<datacenter>.<server_id>",
 * or names a datacenter the table was not told of (fleet_table_set_datacenters) — is no
 * entry: nothing reads it, so no allocator can take it. It is kept aside as a
 * fleet_broken (key, revision, why, since when) for the fleet's sweep, which removes it
 * once it has been broken and unchanged for the heartbeat timeout.
 *
 * The server-id index keys (FLEET_ID_PREFIX, fleet_record.h) share the bucket: they are
 * no entries (no candidate, not counted, not in fleet_table_each), but each one whose
 * value parses (fleet_id_parse) is held as a fleet_id_entry, so the fleet's sweep finds
 * an index whose record is gone without reading the bucket (fleet_table_orphan_ids). A
 * value that does not parse is not held. About 80 bytes a server.
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

/* A key of the bucket whose value is not a usable record (above). */
typedef struct fleet_broken {
    char key[FLEET_KEY_MAX];
    uint64_t revision;
    int64_t since_unix_ms; /* when this table first held this revision */
    char why[GF_WIRE_TEXT_MAX];
    uint64_t generation; /* last resync that saw it */
} fleet_broken;

/* An index key "ids/<server_id>" as the table holds it. */
typedef struct fleet_id_entry {
    char key[FLEET_KEY_MAX];
    uint64_t revision;
    char datacenter[GF_WIRE_NAME_MAX + 1];
    int64_t claimed_unix_ms;
    uint64_t generation; /* last resync that saw it */
} fleet_id_entry;

gf_err fleet_table_new(fleet_table **out);
void fleet_table_free(fleet_table *t); /* NULL is fine */

/* From now on a record whose datacenter `cfg` does not list is broken (borrowed; it
 * must outlive the table). Without it any datacenter is accepted. */
void fleet_table_set_datacenters(fleet_table *t, const fleet_config *cfg);

/* A put of `key` at `rev`, seen at now_unix_ms. GF_ERR_INVALID when the value is not a
 * usable record: the key leaves the entries and is held as broken (fleet_broken) from
 * now_unix_ms, or from when this revision was first seen. Index keys: GF_OK, ignored. */
gf_err fleet_table_put(fleet_table *t, const char *key, uint64_t rev, const uint8_t *data,
                       size_t len, int64_t now_unix_ms);
/* A delete (or purge) of `key` at `rev`: the entry, broken key or index key goes. */
void fleet_table_delete(fleet_table *t, const char *key, uint64_t rev);

/* A compare-and-set on `key` at `rev` lost its race: until the newer revision arrives,
 * the entry is no candidate (so concurrent allocators move on to other servers instead
 * of trying the same record again). No-op unless the entry is at `rev`. */
void fleet_table_superseded(fleet_table *t, const char *key, uint64_t rev);

void fleet_table_resync_begin(fleet_table *t);
/* Returns how many keys (entries, broken and index keys) were dropped. */
size_t fleet_table_resync_end(fleet_table *t);

size_t fleet_table_count(const fleet_table *t); /* entries, broken keys not counted */
size_t fleet_table_broken_count(const fleet_table *t);
/* The broken key `key`, or NULL. */
const fleet_broken *fleet_table_broken_get(const fleet_table *t, const char *key);
/* Calls fn for every broken key. */
void fleet_table_broken_each(const fleet_table *t, void (*fn)(const fleet_broken *b, void *arg),
                             void *arg);
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

size_t fleet_table_id_count(const fleet_table *t); /* index keys held */
/* Calls fn for every index key claimed at least older_than_ms before now_unix_ms whose
 * record "<datacenter>.<server_id>" the table holds neither as an entry nor as broken:
 * maybe orphaned, to be confirmed against the bucket (the table may lag it). */
void fleet_table_orphan_ids(const fleet_table *t, int64_t now_unix_ms, int64_t older_than_ms,
                            void (*fn)(const fleet_id_entry *id, void *arg), void *arg);

#endif
