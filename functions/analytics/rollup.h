/*
 * rollup.h — per-minute event counts for analytics: how many events of each type,
 * from each datacenter and for each queue, in one UTC minute.
 *
 * Where the dimensions come from (gf_rollup_add_event): the type is
 * GameEvent.event_type; datacenter and queue are GenericEvent attributes
 * "datacenter" and "queue" when present and valid name tokens. Typed payloads (kill,
 * score, zone_change, crash) carry neither today, so they count by type only; the
 * three dimensions are counted separately (marginals), not as combinations, which
 * keeps a minute small and bounded. The minute is the event's occurred_unix_ms:
 * a late event counts in the minute it happened, and because rollups merge by
 * addition, the consumer adds it to that minute's stored rollup.
 *
 * Mergeable: partitions (and replicas) count separately and gf_rollup_merge adds
 * their rollups of the same minute. Counts and the total are exact sums. Each
 * dimension keeps at most max_keys distinct names a minute; beyond that, gf_rollup_add
 * counts the event under the dimension's "other" (first come keeps its slot), and
 * gf_rollup_merge keeps the largest counts (ties: the smaller name) and folds the
 * rest into "other". So the merged result is the same in any order as long as no
 * dimension overflows; past the bound the totals stay exact and only the split
 * between named keys and "other" can depend on the order.
 *
 * Encoding: MinuteRollup (schemas/gamefn/v1/state.proto); the decoder validates
 * names, order, bounds and that the counts add up to the total.
 *
 * Ownership: gf_rollup_alloc / gf_rollup_decode allocate, gf_rollup_free frees (NULL
 * is fine); names are copied; gf_rollup_encode's buffer is malloc'd for the caller.
 * Threads: one thread at a time; no global state.
 */
#ifndef GAMEFN_ROLLUP_H
#define GAMEFN_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/v1/event.pb-c.h"

enum {
    GF_ROLLUP_NAME_MAX = 32, /* name tokens: event type, datacenter, queue */
    GF_ROLLUP_KEYS_DEFAULT = 256,
    GF_ROLLUP_KEYS_MAX = 4096,
};
#define GF_ROLLUP_MINUTE_MS INT64_C(60000)

typedef enum gf_rollup_dim {
    GF_ROLLUP_TYPE = 0,
    GF_ROLLUP_DATACENTER,
    GF_ROLLUP_QUEUE,
    GF_ROLLUP_DIMS,
} gf_rollup_dim;

typedef struct gf_rollup gf_rollup;

/* minute_unix_ms: >= 0 and a multiple of 60000. max_keys: per dimension,
 * 1..GF_ROLLUP_KEYS_MAX, 0 = default. */
gf_err gf_rollup_alloc(int64_t minute_unix_ms, uint32_t max_keys, gf_rollup **out);
void gf_rollup_free(gf_rollup *r);

/* The start of the minute holding unix_ms (>= 0). */
int64_t gf_rollup_minute_of(int64_t unix_ms);
int64_t gf_rollup_minute(const gf_rollup *r);

/* Counts `count` (>= 1) events of event_type; datacenter and queue may be NULL
 * (absent). GF_ERR_INVALID for a name that is not a token of 1..32 bytes or a total
 * that would overflow. */
gf_err gf_rollup_add(gf_rollup *r, const char *event_type, const char *datacenter,
                     const char *queue, uint64_t count);

/* Counts one event (see above for the dimensions). GF_ERR_INVALID if its minute is
 * not r's or its event_type is not a name token. */
gf_err gf_rollup_add_event(gf_rollup *r, const Gamefn__V1__GameEvent *ev);

/* Adds from into `into` (same minute, else GF_ERR_INVALID). */
gf_err gf_rollup_merge(gf_rollup *into, const gf_rollup *from);

uint64_t gf_rollup_total(const gf_rollup *r);
uint64_t gf_rollup_count(const gf_rollup *r, gf_rollup_dim dim, const char *name);
uint64_t gf_rollup_other(const gf_rollup *r, gf_rollup_dim dim);
size_t gf_rollup_keys(const gf_rollup *r, gf_rollup_dim dim);

/* The i-th key of dim in name order; *name borrowed until r changes. */
gf_err gf_rollup_key(const gf_rollup *r, gf_rollup_dim dim, size_t i, const char **name,
                     uint64_t *count);

gf_err gf_rollup_encode(const gf_rollup *r, uint8_t **out, size_t *len);

/* max_keys bounds what is accepted and what later adds may hold (0 = default). */
gf_err gf_rollup_decode(const uint8_t *buf, size_t len, uint32_t max_keys, gf_rollup **out);

#endif
