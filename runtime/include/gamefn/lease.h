/*
 * gamefn/lease.h — a leadership lease in a KV bucket, with a fencing token.
 *
 * One key per lease. Its value is "<expires_unix_ms> <holder_id>". Every change is a
 * compare-and-set on the revision last read, so at most one holder can succeed for
 * a given revision. A holder renews before expiry; anyone may take over a lease
 * whose expiry has passed. The fencing token is the KV revision at which the current
 * tenure began: it only grows, so a resource can refuse work from a stale holder by
 * remembering the highest token it has seen.
 *
 * Clocks: expiry is wall-clock Unix ms, so hosts' clocks must agree to well within
 * the ttl (NTP does this). A paused holder (GC, SIGSTOP) may believe it still holds
 * an expired lease until its next renew fails: fence side effects with the token.
 *
 * Ownership: gf_lease borrows the kvStore and jsCtx; it holds no allocated memory.
 * Threads: one gf_lease is used from one thread.
 */
#ifndef GAMEFN_LEASE_H
#define GAMEFN_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

typedef struct gf_lease {
    jsCtx *js;
    kvStore *kv;
    char key[128];
    char holder[96];
    int64_t ttl_ms;
    bool held;
    uint64_t revision; /* latest revision we wrote while holding */
    uint64_t token;    /* fencing token of the current tenure (0 when not held) */
    int64_t expires_unix_ms;
} gf_lease;

/* Pure: "<expires> <holder>" <-> fields. Returns GF_ERR_INVALID on malformed values. */
gf_err gf_lease_encode(int64_t expires_unix_ms, const char *holder, char *buf, size_t size);
gf_err gf_lease_decode(const char *value, size_t len, int64_t *expires_unix_ms, char *holder,
                       size_t holder_size);

void gf_lease_init(gf_lease *l, jsCtx *js, kvStore *kv, const char *key, const char *holder,
                   int64_t ttl_ms);

/* Acquires, renews (if held) or takes over (if expired). GF_OK: we hold it now
 * (l->held, l->token). GF_ERR_CONFLICT: someone else holds it. Other errors: unknown,
 * and l->held is cleared so the caller stops acting as leader. */
gf_err gf_lease_tick(gf_lease *l, int64_t now_unix_ms);

/* Gives the lease up (deletes the key by CAS) so another instance takes over at once. */
gf_err gf_lease_release(gf_lease *l);

#endif
