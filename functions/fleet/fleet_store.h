/*
 * fleet_store.h — reading and writing fleet records in KV, always by compare-and-set
 * on the revision read (gamefn/kv.h), for the fleet function and the allocator.
 *
 * fleet_store_change() is the read-modify-write loop every writer uses: read the key,
 * compute the next record with a pure transition (fleet_record.h), write it by CAS,
 * and on a lost race read again and recompute (a heartbeat racing the allocator's
 * FREE -> ALLOCATED sees the allocation on its second pass and keeps it). A timeout is
 * an unknown outcome: it is returned as is, and the caller answers UNAVAILABLE so the
 * sender retries (every fleet request is idempotent).
 *
 * A full bucket: writes are published through the jsCtx (gamefn/kv.h gf_kv_put_if), so a
 * write refused for want of room — the bucket at its max_bytes or max_msgs (discard
 * new: JetStream 10077) or the account's JetStream limit (10002), gf_publish_full — is
 * told apart: GF_ERR_NATS with its code in *full (0 for any other result), the problem
 * RESOURCE_EXHAUSTED (fleet_store_full). Nothing was stored, and retrying at once
 * cannot help, so it is never retried here. nats-server 2.9.10 still takes, at the
 * limit, a write that replaces a key's only revision (history 1) with one no larger
 * (docs/NATS-FACTS.md §6): a heartbeat, a release, a delete; a new key (a register) or
 * a larger record (an allocation) is refused.
 *
 * Threads: reentrant (kvStore and jsCtx calls are thread-safe). Ownership: fleet_written
 * owns its buffers (fleet_written_fini()); the kvStore and jsCtx are borrowed.
 */
#ifndef GAMEFN_FLEET_STORE_H
#define GAMEFN_FLEET_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "fleet_record.h"
#include "gamefn/err.h"

/* A record as written (or read): its revision, packed bytes and decoded form. */
typedef struct fleet_written {
    uint64_t revision;
    uint8_t *data;
    size_t len;
    Gamefn__V1__ServerRecord *rec;
} fleet_written;

void fleet_written_fini(fleet_written *w); /* frees and zeroes; NULL is fine */

/* Reads `key`: GF_OK with *out filled, GF_ERR_NOT_FOUND, GF_ERR_INVALID (a value that
 * is not a well-formed record: the problem says why), or a NATS error. */
gf_err fleet_store_get(kvStore *kv, const char *key, fleet_written *out, fleet_problem *p);

/* The transition of a read-modify-write: `old` is the current record (NULL when the
 * key is absent). Return GF_OK with *next filled to write it, or an error to stop
 * (the error and *p are returned to the caller). */
typedef gf_err (*fleet_change_fn)(const Gamefn__V1__ServerRecord *old, void *arg, fleet_next *next,
                                  fleet_problem *p);

/* Read, change, CAS-write, retried on conflict up to 8 times (then GF_ERR_CONFLICT).
 * *out (may be NULL) gets the record written. The bucket full: GF_ERR_NATS, *p says so
 * (fleet_store_full). */
gf_err fleet_store_change(jsCtx *js, kvStore *kv, const char *key, fleet_change_fn change,
                          void *arg, fleet_written *out, fleet_problem *p);

/* The same, starting from a guess of the current record instead of a read: `guess`
 * (taken over and cleared; its revision 0 or its record NULL = no guess) is what a copy
 * of the bucket holds, e.g. the fleet mirror's. The first attempt writes on its revision
 * without reading the key; if the copy was behind, that write loses its race and the
 * loop reads the key as usual. */
gf_err fleet_store_change_from(jsCtx *js, kvStore *kv, const char *key, fleet_written *guess,
                               fleet_change_fn change, void *arg, fleet_written *out,
                               fleet_problem *p);

/* The JetStream code (10077, 10002) when *p is a write refused for want of room, else 0. */
int fleet_store_full(const fleet_problem *p);
/* Fills *p for a write refused for want of room with code `js_code`; returns GF_ERR_NATS. */
gf_err fleet_store_full_problem(fleet_problem *p, int js_code);

/* Decodes and checks packed record bytes (taken over) at `rev` into *out, as
 * fleet_store_get() does with what it read. */
gf_err fleet_written_take(uint64_t rev, uint8_t *data, size_t len, const char *key,
                          fleet_written *out, fleet_problem *p);

/* One CAS write of `next` over revision `last` (0 = create). *out may be NULL; *full
 * (may be NULL) gets the code of a refusal for want of room, else 0. */
gf_err fleet_store_put(jsCtx *js, kvStore *kv, const char *key,
                       const Gamefn__V1__ServerRecord *next, uint64_t last, fleet_written *out,
                       int *full);

/* Ends the allocation of `key` if it is still for `match_id` (game over, aborted
 * match): FREE again (or DRAINING). GF_ERR_PERMANENT when there is nothing to release
 * (gone, freed already, or allocated to another match). */
gf_err fleet_store_release(jsCtx *js, kvStore *kv, const char *key, const char *match_id,
                           fleet_written *out, int *full);

/* Deletes `key` if its revision is still `last`. *full as for fleet_store_put. */
gf_err fleet_store_delete(jsCtx *js, kvStore *kv, const char *key, uint64_t last, int *full);

#endif
