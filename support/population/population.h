/*
 * support/population/population.h — seeded, replayable synthetic players, as
 * matchmaking tickets. The model, which the match benchmark and the engine's tests share:
 *
 *   datacenters  8 with real coordinates, in 5 regions (na, eu, asia, sa, me)
 *   players      18 home metros weighted NA 35 %, EU 35 %, Asia 15 %, SA 8 %, OCE 4 %,
 *                ME 3 %, scattered +-0.5 degrees around the metro
 *   ping         great-circle km / 100 per ms x route inflation U(1.3, 2.0) per probe
 *                + last mile lognormal (median 8 ms wired, 20 ms Wi-Fi, 45 ms mobile;
 *                connections 50/35/15 %) + |N(0, 2 ms)| jitter; each probe is missing
 *                with the ticket's miss rate U(1 %, 5 %), but never all of them
 *   skill        N(1500, 300^2) per player; party members correlated (rho = 0.8)
 *   sigma        U(25, 100)
 *   parties      1-5 players (60/20/10/6/4 %), capped at max_party
 *   attributes   platform pc 60 % / console 40 %; input kbm (85 % of pc) or pad
 *   patience     Weibull, shape 1.5, median 90 s; 2 % resubmit within 1 s
 *
 * Replayable: ticket number `serial` of seed S is a pure function of (S, serial, its
 * queue time), so generating tickets 0..N-1 in one call or one at a time gives the same
 * tickets, and a simulation can draw them at arrival times.
 *
 * Ownership: a gf_pop_batch owns everything its tickets point to; gf_pop_batch_free()
 * releases it. Tickets reference datacenters by index in gf_pop_datacenters().
 * Reentrant; no global state beyond constant tables.
 */
#ifndef GAMEFN_SUPPORT_POPULATION_H
#define GAMEFN_SUPPORT_POPULATION_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/match/config.h"
#include "gamefn/match/ticket.h"

typedef enum gf_pop_region {
    GF_POP_NA,
    GF_POP_EU,
    GF_POP_ASIA,
    GF_POP_SA,
    GF_POP_OCE,
    GF_POP_ME,
    GF_POP__REGIONS
} gf_pop_region;

typedef struct gf_pop_metro {
    const char *name;
    int region; /* gf_pop_region: where the player lives, not a datacenter region */
    double lat, lon;
    double weight; /* share of players, percent */
} gf_pop_metro;

typedef struct gf_pop_params {
    uint32_t max_party; /* 1..GF_POP_MAX_PARTY; larger draws are capped */
} gf_pop_params;

#define GF_POP_MAX_PARTY 5

/* What the simulation knows about a ticket but the engine does not. */
typedef struct gf_pop_info {
    uint32_t metro;      /* index into gf_pop_metros() */
    uint8_t connection;  /* 0 wired, 1 Wi-Fi, 2 mobile */
    int64_t patience_ms; /* cancels after this long in queue */
    int64_t resubmit_ms; /* -1, or submits again this long after the first submit */
} gf_pop_info;

typedef struct gf_pop_batch {
    size_t n;
    gf_match_ticket *tickets; /* [n] */
    gf_pop_info *info;        /* [n] */
    /* storage the tickets point into */
    gf_match_player *players;
    gf_match_ping *pings;
    gf_match_attr *attrs;
    char *strings;
} gf_pop_batch;

/* The benchmark's datacenters (8, fixed order) and metros (18). Static. */
const gf_match_dc *gf_pop_datacenters(size_t *n);
const gf_pop_metro *gf_pop_metros(size_t *n);
const char *gf_pop_region_name(int region);

/* Tickets serial first_serial .. first_serial + n - 1 of seed `seed`, ticket i entering
 * the queue at queued_ms[i], all in queue index `queue`. params may be NULL (max_party 5).
 * GF_ERR_INVALID on bad arguments, GF_ERR_NOMEM. */
gf_err gf_pop_generate(uint64_t seed, const gf_pop_params *params, uint32_t queue,
                       uint64_t first_serial, const int64_t *queued_ms, size_t n,
                       gf_pop_batch **out);
void gf_pop_batch_free(gf_pop_batch *b);

/* A small seeded generator for the benchmark's own draws (queue times, ...):
 * splitmix64. */
typedef struct gf_pop_rng {
    uint64_t state;
} gf_pop_rng;

void gf_pop_rng_seed(gf_pop_rng *r, uint64_t seed, uint64_t stream);
uint64_t gf_pop_rng_next(gf_pop_rng *r);
double gf_pop_rng_uniform(gf_pop_rng *r); /* [0, 1) */
double gf_pop_rng_normal(gf_pop_rng *r);  /* N(0, 1) */

#endif
