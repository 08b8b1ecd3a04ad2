/*
 * bench/match_ref.h — what `gamefn-bench match` measures the engine against:
 *   - an independent checker: recomputes every member's limits from the rule formulas
 *     (its own code, not the engine's) and counts violations and quality figures;
 *   - a naive reference matcher: oldest first, for each seed a scan of ALL other tickets
 *     (all pairs), candidates sorted by skill distance, greedy.
 * Both work on the same flat description of matches.
 *
 * Ownership: gf_ref_matches arrays are malloc'd by whoever fills them and released by
 * gf_ref_matches_free(). Single-threaded.
 */
#ifndef GAMEFN_BENCH_MATCH_REF_H
#define GAMEFN_BENCH_MATCH_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/match/config.h"
#include "gamefn/match/tick.h"
#include "gamefn/match/ticket.h"

typedef struct gf_ref_match {
    uint32_t first, len;       /* members[first .. first + len) */
    uint32_t dc_first, dc_len; /* dcs[dc_first ..): chosen first, then fallbacks */
    bool starved;              /* the engine's starvation fallback formed it */
} gf_ref_match;

typedef struct gf_ref_matches {
    gf_ref_match *m;
    size_t n;
    uint32_t *member; /* ticket index */
    uint16_t *team;
    size_t members;
    uint32_t *dcs;
    size_t ndcs;
} gf_ref_matches;

typedef struct gf_ref_quality {
    size_t matches, tickets, players;
    size_t violations;              /* matches breaking any rule (limits, shape, reuse) */
    double spread_mean, spread_p95; /* max - min aggregated skill per match */
    double dping_mean, dping_p95;   /* chosen ping - own best ping, per ticket, ms */
    double team_diff_mean;          /* highest - lowest team total per match */
    /* The same without the matches the engine's starvation fallback formed (gf_match
     * .starved: a seed whose limits are at their caps, matched in a wider group where the
     * naive reference, which has no such fallback, leaves it waiting): the matches both
     * form by the same nearest-first rule. */
    size_t plain_matches;
    double plain_spread_mean, plain_spread_p95;
    double plain_dping_p95;
    /* Matches none of whose members is starving (skill gap and ping limit at their caps),
     * as a second view; few in free-for-all shapes, whose seeds are the oldest tickets. */
    size_t below_matches;
} gf_ref_quality;

/* A ticket's aggregated skill and own limits now, from the formulas (the checker's own
 * code, not the engine's). */
typedef struct gf_ref_lim {
    double skill, gap, ping_limit;
} gf_ref_lim;

gf_ref_lim gf_ref_limits(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now);
/* Its limits no longer widen: at their caps, or on curves that do not widen. */
bool gf_ref_settled(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now);

/* The tickets of a tick for the oracle below: every ticket by skill, and when each left
 * the pool (gone[i]: 1 + the index of the match that took it, UINT32_MAX if none, 0 if
 * it never was in it: invalid or expired; at turn k it is there iff gone[i] > k). Built
 * by gf_ref_pool_make from a result; gf_ref_pool_free releases it. */
typedef struct gf_ref_pool {
    uint32_t *order; /* [n] ticket indexes by aggregated skill */
    double *skill;   /* [n] by ticket index */
    uint32_t *gone;  /* [n] by ticket index */
    size_t n;
} gf_ref_pool;

int gf_ref_pool_make(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                     const gf_match_result *res, gf_ref_pool *out);
void gf_ref_pool_free(gf_ref_pool *p);

enum { GF_REF_NO_GROUP = 0, GF_REF_GROUP = 1, GF_REF_UNDECIDED = 2 };

/* Is there a valid group holding ticket `who` among the tickets still in the pool at
 * turn `turn` (gone[i] > turn) and, when cls is given, with cls[i] == cls[who] (the
 * caller's partner classes: every two tickets of a class may share a match)? Independent
 * of the engine (match_exists.c). Each step of work takes one from *budget; GF_REF_
 * UNDECIDED when it runs out first. */
int gf_ref_group_exists(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now,
                        uint32_t who, const gf_ref_pool *pool, uint32_t turn, const uint32_t *cls,
                        long *budget);

/* The starvation audit of one tick: every unmatched ticket that had a turn as a seed,
 * checked with the oracle against the pool at its turn (one queue, no attributes: the
 * benchmark's pools). */
typedef struct gf_ref_turns {
    size_t capped, capped_group, capped_undecided; /* limits no longer widen */
    size_t below, below_group, below_undecided;    /* limits still widen */
    /* of below_group: a group lay among the tickets the engine's walk looks at (the
     * 4 x search_window nearest); the others were beyond it */
    size_t below_in_window;
} gf_ref_turns;

void gf_ref_check_turns(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                        const gf_match_result *res, gf_ref_turns *out);

/* Converts an engine result (copies). */
int gf_ref_from_result(const gf_match_result *res, gf_ref_matches *out);
void gf_ref_matches_free(gf_ref_matches *m);

/* Checks every match against the rules, recomputed from the config and tickets.
 * Prints the first few violations to stderr. */
void gf_ref_check(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                  const gf_ref_matches *m, gf_ref_quality *q);

/* The naive matcher. `progress` (may be NULL) is called every ~2 s with seeds done.
 * Returns 0, or -1 on allocation failure. */
int gf_ref_naive(const gf_match_config *cfg, const gf_match_ticket *t, size_t n, int64_t now,
                 gf_ref_matches *out, void (*progress)(size_t done, size_t total));

#endif
