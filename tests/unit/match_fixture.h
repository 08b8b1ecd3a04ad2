/*
 * match_fixture.h — small builders for the matchmaking engine's unit tests.
 *
 * A fixture owns a config (datacenters "a".."d" in regions r1, r1, r2, r3; queues set up
 * by each test) and a pool of up to FX_MAX tickets whose strings and arrays live inside
 * the fixture. Nothing is allocated; a fixture is a plain value (large: keep it static or
 * heap-allocate it). Single-threaded.
 */
#ifndef GAMEFN_TEST_MATCH_FIXTURE_H
#define GAMEFN_TEST_MATCH_FIXTURE_H

#include <stdint.h>

#include "gamefn/match/config.h"
#include "gamefn/match/tick.h"

#define FX_MAX     512
#define FX_PLAYERS 64 /* a 64v64 shape takes parties of 64 */
#define FX_NOW     INT64_C(1700000000000)

typedef struct fx {
    gf_match_dc dcs[GF_MATCH_MAX_DCS];
    gf_match_queue queues[8];
    gf_match_config cfg;
    gf_match_ticket t[FX_MAX];
    gf_match_player players[FX_MAX][FX_PLAYERS];
    gf_match_ping pings[FX_MAX][GF_MATCH_MAX_DCS];
    char ids[FX_MAX][FX_PLAYERS + 1][24];
    size_t n;
} fx;

/* Four datacenters a, b, c, d (regions r1, r1, r2, r3) and one queue "q" of the given
 * mode and shape with the reference constants. */
void fx_init(fx *f, gf_match_mode mode, const char *shape);

/* Adds a queue; returns its index. */
uint32_t fx_queue(fx *f, const char *name, gf_match_mode mode, const char *shape,
                  const char *playlist);

/* Adds a ticket "t<index>" of queue q, queued age_ms before FX_NOW, with `party` players
 * "p<index>-<k>" all of skill `skill`, and pings given as a string "a:20 b:45"
 * (datacenter letter : ms). Returns its index. */
uint32_t fx_add(fx *f, uint32_t q, int64_t age_ms, double skill, int party, const char *pings);

/* Runs a tick at FX_NOW; fails the test on error. */
gf_match_result *fx_tick(fx *f);

/* The match that holds ticket i, or NULL. */
const gf_match *fx_match_of(const gf_match_result *r, uint32_t i);
/* The unmatched entry of ticket i, or NULL. */
const gf_match_unmatched *fx_unmatched(const gf_match_result *r, uint32_t i);

#endif
