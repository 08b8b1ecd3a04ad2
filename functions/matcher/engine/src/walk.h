/*
 * walk.h — the candidate walk of the search and the group it grows (walk.c), private to
 * the engine. search.c drives them seed by seed.
 *
 * A group (gf_mt_grp) is kept valid for every member as it grows: its skill range lies
 * inside every member's own [skill - gap, skill + gap], some datacenter is accepted by
 * every member (common), and the parties still pack into the shape. One thread owns a
 * group; all memory is the caller's.
 */
#ifndef GAMEFN_MATCH_WALK_H
#define GAMEFN_MATCH_WALK_H

#include "internal.h"

/* The scalars of a group: what the walk keeps in registers. */
typedef struct gf_mt_grp_state {
    double lo, hi;       /* skill range of the members */
    double minlo, maxhi; /* intersection of the members' own windows */
    /* Two-team shapes: bit a set = the parties (2+ players) can put exactly a players in
     * team A (a <= team_size); party_sum = their players. */
    uint64_t reach;
    uint32_t party_sum;
    uint32_t len, players;
    uint32_t common;  /* datacenters every member accepts */
    uint32_t common0; /* the mask the group started from */
} gf_mt_grp_state;

typedef struct gf_mt_grp {
    gf_mt_grp_state st;
    uint32_t rank[GF_MATCH_MAX_PLAYERS]; /* [st.len] */
    uint32_t by_size[GF_MATCH_MAX_TEAM_SIZE + 1];
} gf_mt_grp;

/* Per-tick buffers sized by the window (heap, not stack: windows may be 4096). */
typedef struct gf_mt_scratch {
    uint32_t *cand; /* [window] candidates the greedy walk passed over */
    uint32_t *all;  /* [window + GF_MATCH_MAX_PLAYERS] (gf_mt_parties_first) */
} gf_mt_scratch;

typedef struct gf_mt_shape {
    uint32_t teams, team_size, players;
    bool two;       /* two teams of at most 63: the bitset packing test applies */
    uint64_t below; /* bits 0..team_size */
} gf_mt_shape;

gf_mt_shape gf_mt_shape_of(const gf_mt_part *p);

/* A group of the seed alone, accepting the seed's datacenters within mask. */
void gf_mt_grp_init(gf_mt_grp *g, const gf_mt_hot *s, uint32_t rank, const gf_mt_shape *sh,
                    uint32_t mask);

/* Walks the partition outward from seed s, closest first (by skill, or by queue time in
 * FIFO partitions), over unmatched tickets that accept one of the group's datacenters
 * and are mutually skill-compatible with s (and share its match attributes). Each one is
 * offered to the greedy group *g; the ones it does not take are kept in cand[] (up to
 * c->window) for the fallback. Stops when the group is full, when both sides are out of
 * reach, or after 4 x window entries. Returns the number kept in cand[];
 * *cand_players = their players. */
uint32_t gf_mt_walk(gf_mt_ctx *c, uint32_t s, const gf_mt_part *p, gf_mt_grp *g,
                    const gf_mt_shape *sh, uint32_t *cand, uint32_t *cand_players);

/* The walk left *g short (its members, then cand[0..n) passed over): offers the same
 * tickets again, nearest first, parties before solo players. True if that fills the
 * group; false at once if no party was passed over. all[]: window + players entries of
 * scratch. */
bool gf_mt_parties_first(gf_mt_ctx *c, uint32_t s, const gf_mt_part *p, gf_mt_grp *g,
                         const uint32_t *cand, uint32_t n, const gf_mt_shape *sh, uint32_t *all);

/* Adds k (rank `rank`) to the group if it stays valid for every member and packable. */
bool gf_mt_grp_offer(gf_mt_grp *g, const gf_mt_hot *k, uint32_t rank, const gf_mt_shape *sh);

/* What gf_mt_reach_possible() (reach.c) keeps per word of alive[] (64 ranks), built as
 * tests need it and kept current by gf_mt_reach_take(). Owned by the search, freed with
 * gf_mt_reach_free(); one thread. */
typedef struct gf_mt_reach {
    uint64_t *acc;   /* [words][ndc]: ranks of the word accepting d ... */
    uint64_t *built; /* [words bits]: ... once built */
    uint16_t *cnt;   /* [words][ndc]: players of its unmatched ranks accepting d ... */
    uint32_t *fresh; /* [words]: ... bit d: cnt is current */
    uint8_t *left;   /* [words]: its unmatched ranks */
    uint64_t *inv;   /* [words]: rank r's skill is above rank r + 1's, same partition */
    bool any_inv;
    bool solo; /* every partition is of solo players */
    bool on;   /* some partition's shape is worth testing */
    uint32_t ndc;
    size_t words;
    int64_t gain;  /* running average of the tickets a test spares, x16 */
    uint32_t idle; /* chances not tested */
} gf_mt_reach;

gf_err gf_mt_reach_init(gf_mt_ctx *c, gf_mt_reach *rc);
/* The per-word acceptance bits (acc, built), allocated if the tests did not need them;
 * then gf_mt_reach_acc(c, rc, at): word at's bits, one uint64_t per datacenter (bit b:
 * rank at * 64 + b accepts it), built on first read. Also read by the exact search. */
gf_err gf_mt_reach_acc_ready(gf_mt_ctx *c, gf_mt_reach *rc);
const uint64_t *gf_mt_reach_acc(const gf_mt_ctx *c, gf_mt_reach *rc, size_t at);
void gf_mt_reach_free(gf_mt_ctx *c, gf_mt_reach *rc);
/* Rank r was matched. */
void gf_mt_reach_take(gf_mt_reach *rc, uint32_t r);

/* False if the walk from seed s, its group starting from datacenters `mask`, cannot fill
 * the shape: then it would see *seen tickets and form nothing. True when it may, or when
 * the test cannot tell or is not worth making. */
bool gf_mt_reach_possible(const gf_mt_ctx *c, gf_mt_reach *rc, uint32_t s, const gf_mt_part *p,
                          uint32_t mask, const gf_mt_shape *sh, uint32_t *seen);

/* exact.c: the exact search for a seed whose limits no longer widen (see there). Owned
 * by the search (gf_mt_exact_create, gf_mt_exact_free); it reads rc's acceptance bits
 * (made ready by create). One thread. */
typedef struct gf_mt_exact gf_mt_exact;

gf_err gf_mt_exact_create(gf_mt_ctx *c, gf_mt_reach *rc, gf_mt_exact **out);
/* Rank r was matched (x may be NULL: not created yet). */
void gf_mt_exact_take(const gf_mt_ctx *c, gf_mt_exact *x, uint32_t r);
void gf_mt_exact_free(gf_mt_ctx *c, gf_mt_exact *x);
/* A full valid group around seed rank s in partition p, into *g, with the narrowest skill
 * range among the seed's candidates; false if there is none (or a bound cut the search
 * short: counted in stats.exact_cut). */
bool gf_mt_exact_group(gf_mt_ctx *c, gf_mt_exact *x, gf_mt_reach *rc, uint32_t s,
                       const gf_mt_part *p, const gf_mt_shape *sh, gf_mt_grp *g);

#endif
