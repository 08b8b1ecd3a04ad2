/*
 * gamefn/match/group.h — the two decisions made once a group of tickets is chosen:
 * which datacenters it may play in, and how its parties split into teams.
 * Also the packing test the candidate search uses (can these parties fill the shape?).
 *
 * Pure functions working on small arrays the caller owns; no allocation; reentrant.
 */
#ifndef GAMEFN_MATCH_GROUP_H
#define GAMEFN_MATCH_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

#define GF_MATCH_PING_NONE UINT16_MAX /* datacenter not measured by this ticket */

/* ---- datacenter choice --------------------------------------------------- */

/* One member (ticket) of a group: its ping to each datacenter (ms rounded up,
 * GF_MATCH_PING_NONE when not measured), its own current ping limit, its players (the
 * weight of its ping in the totals; 0 counts as 1) and, optionally, its unrounded pings
 * (NULL: the rounded ones are exact, as they are for whole-millisecond pings). */
typedef struct gf_match_dc_member {
    const uint16_t *ping; /* [ndcs] */
    int64_t limit_ms;
    uint32_t players;
    const double *exact; /* [ndcs] or NULL; read only where ping[] is measured */
} gf_match_dc_member;

typedef struct gf_match_dc_choice {
    uint32_t dc;
    uint32_t max_ping_ms;   /* worst member ping (rounded up) */
    uint32_t total_ping_ms; /* sum over players: each ticket's ping (rounded up) x its players */
} gf_match_dc_choice;

/* Every datacenter that every member measured and accepts (ping <= own limit), best
 * first: lowest total ping over all players, then lowest worst ping, then lowest index —
 * compared on the exact pings, so with fractional pings two entries within a millisecond
 * per player of each other may come in the other order than their rounded totals.
 * ndcs is at most 32 (GF_MATCH_MAX_DCS; further ones are not looked at). Writes at most
 * ndcs entries to out and returns their count; 0 = no common datacenter. */
size_t gf_match_dc_rank(const gf_match_dc_member *members, size_t k, size_t ndcs,
                        gf_match_dc_choice *out);

/* ---- packing and teams --------------------------------------------------- */

/* True if parties of these sizes (each 1..team_size) fit into `teams` teams of
 * `team_size` players without splitting any party (they need not fill them).
 * count_by_size[s] = number of parties of size s, s = 1..team_size. Exact for every
 * shape the engine accepts (a bounded search; see group.c). */
bool gf_match_pack_feasible(const uint32_t *count_by_size, uint32_t teams, uint32_t team_size);

/* Splits k tickets (skills[i] = aggregated skill, sizes[i] = players) into `teams` teams
 * of exactly `team_size` players, never splitting a ticket, minimising the difference
 * between the highest and lowest team total (total = sum of skill x size). Exhaustive
 * when the search fits its budget (always for 1v1, 2v2, 5v5 and free-for-all), a greedy
 * assignment improved by swaps otherwise. Writes team_out[i] in 0..teams-1 and the
 * resulting difference to *diff_out (may be NULL).
 * GF_ERR_INVALID if the sizes do not fill the shape exactly. */
gf_err gf_match_teams_balance(const double *skills, const uint8_t *sizes, size_t k, uint32_t teams,
                              uint32_t team_size, uint16_t *team_out, double *diff_out);

#endif
