/*
 * gamefn/match/tick.h — one matchmaking tick: a pool of tickets in, matches and the
 * reason every other ticket stayed out.
 *
 * Input: the whole pool (all queues; every ticket carries its queue index and queue
 * time), `now`, and a prepared config. The engine:
 *   1. validates every ticket (refused ones are reported INVALID with a gf_match_bad),
 *      refuses duplicate ticket ids and players held by several tickets (the oldest
 *      ticket keeps the player), reports tickets past their queue's TTL as EXPIRED;
 *   2. counts players per (queue, region) and merges a playlist's queues into one pool
 *      for a region's tickets while any of them is below its population floor there;
 *   3. partitions the pool by (queue or merged playlist, match attributes) and sorts each
 *      partition by skill (by queue time for pure ping_first partitions); regions are
 *      population units, not matching boundaries;
 *   4. takes the tickets oldest first as seeds and walks outward from each over its
 *      nearest compatible neighbours (a bounded window), growing a group that stays valid
 *      for every member; a full group becomes a match (search.c has the details);
 *   5. says, for every ticket left, what bound it (see gf_match_why) and its nearest miss.
 * O(N log N) in the pool size (in practice O(N): radix sorts and bounded walks), never
 * all pairs.
 *
 * Validity (checked per member, against its own limits at `now`): for every member i
 * and every other member j, |skill_i - skill_j| <= gap_i, and ping_i(dc) <= ping_limit_i
 * for the chosen datacenter and for every fallback datacenter.
 *
 * Determinism: the same (config, tickets in the same order, now) gives the same result.
 * No global state; safe to run concurrently on different inputs.
 *
 * Ownership: tickets and config are borrowed for the call. The result is allocated by the
 * engine, owned by the caller and released with gf_match_result_free(); it refers to
 * tickets by their index in the input array and to datacenters, queues and regions by
 * their config index, never by pointer.
 */
#ifndef GAMEFN_MATCH_TICK_H
#define GAMEFN_MATCH_TICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/match/config.h"
#include "gamefn/match/group.h"
#include "gamefn/match/ticket.h"

#define GF_MATCH_NONE UINT32_MAX

#define GF_MATCH_MAX_POOL (1u << 24) /* tickets per tick */

/* Why a ticket was not matched in this tick. */
typedef enum gf_match_why {
    GF_MATCH_WHY_INVALID = 0,  /* refused; see gf_match_unmatched.bad */
    GF_MATCH_WHY_EXPIRED,      /* older than its queue's TTL */
    GF_MATCH_WHY_POPULATION,   /* fewer waiting players in its pool than the shape needs */
    GF_MATCH_WHY_SKILL,        /* candidates exist, but outside someone's skill limit */
    GF_MATCH_WHY_PING,         /* a datacenter they all measured exists, over someone's limit */
    GF_MATCH_WHY_NO_COMMON_DC, /* no datacenter that enough candidates measured */
    GF_MATCH_WHY_SHAPE,        /* party sizes do not fit the remaining team slots */
    GF_MATCH_WHY__COUNT
} gf_match_why;

const char *gf_match_why_str(gf_match_why why); /* "invalid", "expired", ...; static */

/* One ticket of a match, with its limits at decision time. */
typedef struct gf_match_member {
    uint32_t ticket;          /* index into the input tickets */
    uint16_t team;            /* 0..teams-1 */
    uint16_t ping_ms;         /* to the chosen datacenter, rounded up */
    uint16_t allowed_ping_ms; /* its own ping limit at `now` */
    double skill;             /* aggregated skill the engine used */
    double allowed_skill_gap; /* its own gap at `now`; +INFINITY if its mode ignores skill */
} gf_match_member;

typedef struct gf_match {
    uint32_t queue;           /* queue of the seed ticket (members may come from its playlist) */
    uint32_t region;          /* region of the chosen datacenter, dcs[0] */
    bool merged;              /* formed in a merged (low-population) pool */
    bool starved;             /* formed by the exact search for a seed whose limits no
                                 longer widen, after the nearest-first walk fell short */
    uint32_t seed;            /* input index of the ticket whose turn formed it */
    gf_match_member *members; /* grouped by team, team 0 first */
    uint32_t members_len;
    gf_match_dc_choice *dcs; /* every acceptable datacenter, best first; dcs[0] chosen */
    uint32_t dcs_len;
    double skill_spread;    /* max - min member skill */
    double team_skill_diff; /* highest minus lowest team total (skill x players) */
} gf_match;

/* The nearest miss: what it would have taken to match this ticket. */
typedef struct gf_match_miss {
    uint32_t other;           /* input index of the ticket concerned, or GF_MATCH_NONE */
    uint32_t dc;              /* datacenter concerned, or GF_MATCH_NONE */
    double skill_gap;         /* SKILL: actual gap to `other` */
    double allowed_gap;       /* SKILL: the limit that refused it */
    uint32_t ping_ms;         /* PING: the ping that was too high */
    uint32_t allowed_ping_ms; /* PING: the limit it broke */
    bool own_limit;           /* the limit broken is this ticket's own (else `other`'s) */
    uint32_t players_short;   /* POPULATION/SKILL/PING/NO_COMMON_DC: players missing */
} gf_match_miss;

typedef struct gf_match_unmatched {
    uint32_t ticket; /* index into the input tickets */
    uint8_t why;     /* gf_match_why */
    uint8_t bad;     /* gf_match_bad when why == INVALID */
    /* Its turn as a seed came after matches[0, turn) were formed: the tickets waiting then
     * were the pool less their members (for audits). GF_MATCH_NONE if it had no turn
     * (invalid, expired, or no datacenter within its own ping limit). */
    uint32_t turn;
    gf_match_miss miss;
} gf_match_unmatched;

#define GF_MATCH_PHASES 6
extern const char *const gf_match_phase_names[GF_MATCH_PHASES];

/* Population and merge state of one (queue, region). */
typedef struct gf_match_pool_stat {
    uint32_t queue;
    uint32_t region;
    uint32_t tickets; /* valid, unexpired */
    uint32_t players;
    bool merged; /* its playlist is merged in this region this tick */
} gf_match_pool_stat;

typedef struct gf_match_stats {
    size_t tickets, invalid, expired, matched_tickets, matched_players;
    size_t partitions;
    size_t seeds_tried;     /* walks: one per seed (per seed and datacenter, ping_first) */
    size_t candidates_seen; /* tickets looked at by the walks */
    /* The exact search of seeds whose limits no longer widen (docs/MATCHMAKING.md): seeds
     * searched, matches it formed, searches that a bound cut short (candidates or words
     * per side, the fill search's nodes, or the tick's budget: only then can a valid
     * group around such a seed have been missed), and the budget's steps used. */
    size_t exact_searches, exact_matches, exact_cut, exact_steps;
    size_t bytes_peak;  /* most engine memory live at once during the tick */
    size_t bytes_total; /* everything the tick allocated, summed */
    /* Thread CPU time per phase, ms (for benchmarks; not part of the decision):
     * ingest (validation), dedup, partition, layout (sorts), search, diagnose. */
    double phase_ms[GF_MATCH_PHASES];
} gf_match_stats;

typedef struct gf_match_result {
    gf_match *matches; /* oldest seed first */
    size_t matches_len;
    gf_match_unmatched *unmatched; /* in input order */
    size_t unmatched_len;
    gf_match_pool_stat *pools; /* queues_len x regions, queue-major */
    size_t pools_len;
    gf_match_stats stats;
} gf_match_result;

/* Runs one tick. GF_ERR_INVALID if the config fails gf_match_config_check(), n exceeds
 * GF_MATCH_MAX_POOL or tickets is NULL with n > 0 (bad tickets are not an error: they
 * are reported). GF_ERR_NOMEM on allocation failure. *out is NULL on error. */
gf_err gf_match_tick(const gf_match_config *cfg, const gf_match_ticket *tickets, size_t n,
                     int64_t now_ms, gf_match_result **out);

/* A workspace keeps the tick's buffers between ticks, so a long-running matcher does not
 * ask the OS for fresh (zeroed) pages every tick; at 100k tickets that is a large part of
 * a cold tick. It holds no state that affects decisions: a tick with a workspace gives
 * exactly the result of one without. A result of gf_match_tick_ws() borrows its arrays
 * from the workspace and gives them back in gf_match_result_free(); the workspace stays
 * alive (after gf_match_workspace_free()) until its last result is freed.
 * Owned by the caller; not thread-safe: its ticks, and the freeing of their results, must
 * not run concurrently. */
typedef struct gf_match_workspace gf_match_workspace;

gf_err gf_match_workspace_create(gf_match_workspace **out);
void gf_match_workspace_free(gf_match_workspace *ws);
/* Bytes the workspace holds between ticks. */
size_t gf_match_workspace_bytes(const gf_match_workspace *ws);

/* gf_match_tick() with scratch from `ws` (NULL = plain malloc/free). */
gf_err gf_match_tick_ws(gf_match_workspace *ws, const gf_match_config *cfg,
                        const gf_match_ticket *tickets, size_t n, int64_t now_ms,
                        gf_match_result **out);

void gf_match_result_free(gf_match_result *res);

#endif
