/*
 * alloc_plan.h — the allocator's pure steps: checking and flattening a Match, and
 * building its assignments with one signed join token per player.
 *
 * Pure (protobuf-c, libsodium, gamefn_core). Ownership: alloc_match borrows every
 * string from the Match and owns only its arrays; alloc_assignments borrows strings
 * from the match and the server record (keep both alive while it is used) and owns its
 * structs and token bytes. Both have a _fini that accepts a zeroed struct.
 */
#ifndef GAMEFN_ALLOC_PLAN_H
#define GAMEFN_ALLOC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/limits.h"
#include "gamefn/v1/fleet.pb-c.h"
#include "gamefn/v1/match.pb-c.h"

enum {
    ALLOC_TICKETS_MAX = 128,  /* tickets per match (the commit record's limit) */
    ALLOC_PLAYERS_MAX = 1024, /* players per match (a server's largest capacity) */
};

typedef struct alloc_match {
    const Gamefn__V1__Match *m;
    size_t n_tickets, n_players;
    const Gamefn__V1__MatchTicket **tickets; /* in team order */
    uint32_t *team;                          /* team index of each ticket */
    char **ticket_ids;                       /* per ticket */
    char **player_ids;                       /* every player, ticket by ticket */
} alloc_match;

/* Checks a decoded Match (ids are tokens, 1..64 teams, every team has tickets, ticket
 * and player ids unique, 1..32 datacenters, at most 128 tickets and 1024 players) and
 * flattens it. GF_ERR_INVALID with `why`. */
gf_err alloc_match_check(const Gamefn__V1__Match *m, alloc_match *out, char *why, size_t why_size);
void alloc_match_fini(alloc_match *am);

typedef struct alloc_assignments {
    Gamefn__V1__Assignment **v; /* one per ticket, in alloc_match order */
    size_t n;
    Gamefn__V1__Assignment *store;
    Gamefn__V1__JoinToken *tokens, **token_ptrs;
    uint8_t **token_bytes;
    size_t n_tokens;
} alloc_assignments;

typedef struct alloc_signer {
    const uint8_t *sk; /* GF_WIRE_JOIN_SK_LEN bytes */
    const char *key_id;
    int64_t lifetime_ms;
} alloc_signer;

/* The assignments of `am` on `server` at now_ms (assigned = issued = now, expires = now +
 * lifetime), each token signed over fresh claims with a random nonce. */
gf_err alloc_assignments_build(const alloc_match *am, const Gamefn__V1__ServerRecord *server,
                               const alloc_signer *signer, int64_t now_ms, alloc_assignments *out);
void alloc_assignments_fini(alloc_assignments *a);

#endif
