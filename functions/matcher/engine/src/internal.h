/*
 * internal.h — private state of one tick, shared by the engine's modules.
 *
 * Layout (see tick.c for the order in which the pieces are built):
 *   input order  bad[n]            validation verdict per input ticket
 *                rec[n], ...       compact records of valid tickets (ingest.c)
 *   rank order   hot[nv], cold[nv],  valid tickets sorted by (partition, skill or age):
 *                ping[]              neighbours in a partition are neighbours in memory
 *                                    (a ping row is padded to a multiple of 8 datacenters)
 *   alive[nv bits]                 the unmatched ranks: a walk finds the next one left or
 *                                  right with a bit scan (12.5 KB at 100k tickets: it stays
 *                                  in the L1 cache), so it never revisits a matched ticket
 *   seeds[nseeds]                  ranks oldest first (those accepting a datacenter)
 *
 * Every allocation goes through gf_mt_alloc/gf_mt_free so the tick can report its
 * memory honestly (peak live bytes and total). One thread owns a context.
 */
#ifndef GAMEFN_MATCH_INTERNAL_H
#define GAMEFN_MATCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gamefn/match/config.h"
#include "gamefn/match/group.h"
#include "gamefn/match/rules.h"
#include "gamefn/match/tick.h"
#include "gamefn/match/ticket.h"

#define GF_MT_MAX_NOW   (INT64_C(1) << 62)
#define GF_MT_NONE      UINT32_MAX
#define GF_MT_EXPIRED   0xFE /* bad[] value: valid but past its TTL */
#define GF_MT_IN_MATCH  0xFD /* bad[] value: valid and matched in this tick */
#define GF_MT_PART_BITS 20   /* partition ids in a sort key */
#define GF_MT_SLOT_BITS 7    /* id references: input index << 7 | slot */
#define GF_MT_LANES     8    /* datacenters per vector of 16-bit lanes (diag.c) */

/* ---- counting allocator ----------------------------------------------------- */

typedef struct gf_mt_mem {
    size_t live, peak, total;
    gf_match_workspace *ws; /* NULL: plain malloc/free */
} gf_mt_mem;

/* count * size bytes of tick scratch, uninitialised (zeroed with gf_mt_zalloc); taken from
 * the workspace's cached blocks when there is one. NULL on overflow or failure.
 * gf_mt_free takes the same count and size; NULL is fine. */
void *gf_mt_alloc(gf_mt_mem *m, size_t count, size_t size);
void *gf_mt_zalloc(gf_mt_mem *m, size_t count, size_t size);
void gf_mt_free(gf_mt_mem *m, void *p, size_t count, size_t size);
/* Memory that outlives the tick (the result), uninitialised, counted: from the workspace
 * when there is one (returned by gf_mt_ws_give when the result is freed), else malloc. */
void *gf_mt_alloc_result(gf_mt_mem *m, size_t count, size_t size);
void gf_mt_ws_give(gf_match_workspace *ws, void *p);
void gf_mt_ws_ref(gf_match_workspace *ws);
void gf_mt_ws_unref(gf_match_workspace *ws);

/* ---- tick state ---------------------------------------------------------------- */

/* What the search reads for every candidate and member: 24 bytes, so a window of
 * neighbours spans few cache lines. Rank order. */
typedef struct gf_mt_hot {
    double skill;    /* aggregated */
    double gap;      /* allowed skill gap now; +INFINITY = skill ignored */
    uint32_t dcmask; /* datacenters it accepts now */
    uint16_t plimit; /* allowed ping now, ms */
    uint8_t size;    /* players */
} gf_mt_hot;

/* The rest of a valid ticket's state, in rank order: read once per seed and member. */
typedef struct gf_mt_cold {
    int64_t queued; /* queue time, at most now */
    uint32_t in;    /* input index */
    uint32_t part;
    uint16_t best; /* lowest measured ping, ms (rounded up) */
    uint8_t queue;
    uint8_t bestdc; /* the datacenter of its lowest exact ping */
    bool frac;      /* a ping has a fraction of a ms (c->in holds the exact values) */
    bool copy;      /* the second rank of a ticket (its queue's partition, merge.c) */
} gf_mt_cold;

/* A valid ticket's full record, as the ingest pass derives it (input order: rec[i] is
 * input ticket i). */
typedef struct gf_mt_tk {
    double skill;   /* aggregated */
    double gap;     /* allowed skill gap now; +INFINITY = skill ignored */
    int64_t queued; /* queue time, at most now */
    uint32_t twin;  /* the partition of its copy (merge.c), or GF_MT_NONE */
    uint32_t part;
    uint32_t dcmask; /* datacenters it accepts now */
    uint16_t plimit; /* allowed ping now, ms */
    uint16_t best;   /* lowest measured ping, ms (rounded up) */
    uint8_t size;    /* players */
    uint8_t queue;
    uint8_t bestdc; /* the datacenter of its lowest exact ping */
    uint8_t region; /* population region (named, or that of bestdc) */
    bool frac;      /* a ping has a fraction of a ms */
} gf_mt_tk;

typedef struct gf_mt_part {
    uint32_t first, count; /* rank range */
    uint32_t pool;         /* < queues_len: that queue; else a merged playlist */
    uint32_t players;      /* valid players */
    uint16_t teams, team_size;
    bool by_time; /* every queue in it is ping_first: FIFO order */
    bool attrs;   /* members must share match attributes */
    bool merged;
    uint32_t queue; /* a queue of the pool (for shape and attribute keys) */
} gf_mt_part;

typedef struct gf_mt_ctx {
    const gf_match_config *cfg;
    const gf_match_ticket *in;
    size_t n;
    int64_t now;
    gf_mt_mem mem;
    uint32_t ndc, nreg, nq;
    uint8_t dc_region[GF_MATCH_MAX_DCS];
    int64_t gap_capped_ms[GF_MATCH_MAX_QUEUES]; /* from this age on, a queue's skill gap is
                                                   its cap (skips pow); INT64_MAX = never */

    uint32_t *hist;     /* radix sort histograms (gf_mt_radix_scratch()) */
    uint8_t *bad;       /* [n] */
    gf_mt_tk *rec;      /* [n] ingest records, input order (valid tickets only) */
    uint16_t *rec_ping; /* [n * ndc] */
    uint64_t *ids;      /* [nids] the ids of valid tickets, input order, each as
                           hash << 32 | input index << GF_MT_SLOT_BITS | slot (0: the
                           ticket id, 1..64: a player) */
    size_t ids_cap;
    size_t nids;

    uint32_t nv;      /* valid tickets; from the partition step on, ranks: the valid
                         tickets and the copies of merged ones (merge.c) */
    uint32_t ncopies; /* of which copies */
    uint32_t *twin;   /* [nv] the other rank of a ticket with two, else GF_MT_NONE; NULL
                         when no ticket has two (layout.c) */
    gf_mt_hot *hot;   /* [nv] rank order */
    gf_mt_cold *cold; /* [nv] rank order */
    int64_t minq;     /* oldest queue time among valid tickets */
    uint16_t *ping;   /* [nv * pstride], GF_MATCH_PING_NONE = not measured (and in the
                         padding: a row is a whole number of 8-lane vectors, diag.c) */
    uint32_t pstride; /* ndc rounded up to a multiple of GF_MT_LANES */
    gf_mt_part *parts;
    uint32_t nparts;
    uint64_t *keys; /* [nv] rank-order keys of the valid tickets, input order, each
                       followed by its copy's if it has one (merge.c) */

    uint64_t *alive; /* [alive_words]: bit r = rank r is not matched yet */
    size_t alive_words;
    uint32_t *seeds; /* [nseeds] ranks that accept a datacenter, oldest first */
    uint32_t *turn;  /* [nv] by rank: matches formed before its turn as a seed (search.c),
                        GF_MT_NONE if it had none */
    uint32_t nseeds;
    uint32_t window; /* candidates per seed and datacenter */

    gf_match_result *res;
    size_t matches_cap;
    gf_match_member *members_buf, *members_next; /* owned by the result */
    size_t members_cap;
    gf_match_dc_choice *dcs_buf, *dcs_next; /* owned by the result */
    size_t dcs_cap, dcs_len;
} gf_mt_ctx;

/* config.c: the per-object checks behind gf_match_config_check() and the YAML hooks.
 * On failure *key names the offending key and why says what is wrong. */
bool gf_mt_dc_check(const gf_match_dc *dc, const char **key, char *why, size_t size);
bool gf_mt_queue_check(const gf_match_queue *q, const char **key, char *why, size_t size);

/* config_table.c: writes the default of the row named key of table t into obj (every
 * row with a default when key is NULL): numbers, durations and enums. False if the row
 * is missing or its default does not parse (a broken table; a unit test runs it). */
bool gf_mt_table_default(const gf_cfg_table *t, const char *key, void *obj);

/* ingest.c: validation, expiry, records and id hashes, in one pass over the input. */
gf_err gf_mt_ingest(gf_mt_ctx *c);

/* What reading a ticket yields besides its verdict (ticket.c). */
typedef struct gf_mt_read {
    uint32_t hash[1 + GF_MATCH_MAX_TEAM_SIZE]; /* ticket id, then each player id */
    double skill, sigma;                       /* aggregated as gf_match_ticket_skill() */
    int64_t age;                               /* ms in queue at now */
    uint32_t dcmask;                           /* datacenters within plimit */
    uint16_t plimit;                           /* its ping limit at now (its mode's) */
    uint16_t best;                             /* lowest ping, ms rounded up */
    uint8_t bestdc; /* its datacenter: the lowest exact ping, lowest index on ties */
    bool frac;      /* some ping has a fraction of a ms: the rounded row is not exact */
} gf_mt_read;

/* ticket.c: the checks of gf_match_ticket_check(), in the same order with the same
 * verdict, and for a valid ticket also *out and row[0..ndc) (pings rounded up, or
 * GF_MATCH_PING_NONE). On a refusal *out and row hold partial values. */
gf_match_bad gf_mt_ticket_read(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now_ms,
                               size_t nregions, gf_mt_read *out, uint16_t *row);

/* dup.c: refuses repeated ticket ids and players held by several tickets (the oldest
 * holder keeps them), from the id hashes ingest stored in c->ids; frees them. */
gf_err gf_mt_dedup(gf_mt_ctx *c);

/* sort.c: stable LSD radix sorts; tmp arrays of n entries; hist: gf_mt_radix_scratch()
 * bytes (c->hist). n < 2^32.
 * _packed: a[] by bits [lo, lo + bits) of each word (the rest is payload);
 * the other: keys[] (all 64 bits) carrying vals[]. */
size_t gf_mt_radix_scratch(void);
void gf_mt_radix_sort_packed(uint64_t *a, uint64_t *tmp, size_t n, unsigned lo, unsigned bits,
                             uint32_t *hist);
void gf_mt_radix_sort(uint64_t *keys, uint32_t *vals, uint64_t *tmp_keys, uint32_t *tmp_vals,
                      size_t n, uint32_t *hist);

/* merge.c: populations, merge decisions, partitions -> rec[].part, parts, pools. */
gf_err gf_mt_partition(gf_mt_ctx *c);

/* layout.c: rank order, the unmatched list, seeds. */
gf_err gf_mt_layout(gf_mt_ctx *c);

/* search.c: seeds oldest first, forms matches into c->res. */
gf_err gf_mt_search(gf_mt_ctx *c);

/* diag.c: fills c->res->unmatched for every ticket not in a match. */
gf_err gf_mt_diagnose(gf_mt_ctx *c);

/* Mutual skill test of two tickets, and attribute equality when the partition asks. */
bool gf_mt_attrs_equal(const gf_mt_ctx *c, const gf_mt_part *p, uint32_t in_a, uint32_t in_b);

static inline bool gf_mt_alive(const gf_mt_ctx *c, uint32_t r)
{
    return (c->alive[r >> 6] >> (r & 63)) & 1;
}

/* The first unmatched rank in (r, hi), or GF_MT_NONE. */
static inline uint32_t gf_mt_next_alive(const gf_mt_ctx *c, uint32_t r, uint32_t hi)
{
    uint32_t from = r + 1;
    if (from >= hi)
        return GF_MT_NONE;
    size_t w = from >> 6, last = (size_t)(hi - 1) >> 6;
    uint64_t bits = c->alive[w] & (~0ull << (from & 63));
    while (!bits) {
        if (++w > last)
            return GF_MT_NONE;
        bits = c->alive[w];
    }
    uint32_t found = (uint32_t)(w << 6) + (uint32_t)__builtin_ctzll(bits);
    return found < hi ? found : GF_MT_NONE;
}

/* The last unmatched rank in [lo, r), or GF_MT_NONE. */
static inline uint32_t gf_mt_prev_alive(const gf_mt_ctx *c, uint32_t r, uint32_t lo)
{
    if (r <= lo)
        return GF_MT_NONE;
    uint32_t from = r - 1;
    size_t w = from >> 6, first = lo >> 6;
    uint64_t bits = c->alive[w] & (~0ull >> (63 - (from & 63)));
    while (!bits) {
        if (w-- == first)
            return GF_MT_NONE;
        bits = c->alive[w];
    }
    uint32_t found = (uint32_t)(w << 6) + 63 - (uint32_t)__builtin_clzll(bits);
    return found >= lo ? found : GF_MT_NONE;
}

/* The rank order of a valid ticket in partition `part` (its own, or its copy's): the
 * partition in the top GF_MT_PART_BITS bits, then the order-preserving bits of its skill
 * double (truncated: ties only between skills within ~1e-10 of each other), or its queue
 * time in a FIFO partition. */
static inline uint64_t gf_mt_order_key(const gf_mt_ctx *c, const gf_mt_tk *k, uint32_t part,
                                       bool by_time)
{
    uint64_t order = 0;
    if (by_time) {
        order = (uint64_t)(k->queued - c->minq); /* < 2^40 */
    } else {
        double skill = k->skill;
        memcpy(&order, &skill, sizeof order);
        /* IEEE-754 to an unsigned integer with the same order. */
        order = (order & 0x8000000000000000ull) ? ~order : (order | 0x8000000000000000ull);
        order >>= GF_MT_PART_BITS;
    }
    return ((uint64_t)part << (64 - GF_MT_PART_BITS)) | order;
}

/* Layout entries (layout.c): an input index, with this bit for a ticket's copy. */
#define GF_MT_COPY (1u << 31)

static inline uint16_t gf_mt_ping(const gf_mt_ctx *c, uint32_t rank, uint32_t dc)
{
    return c->ping[(size_t)rank * c->pstride + dc];
}

#endif
