/*
 * gamefn/tickets/claim_digest.h — what a claim says its match is.
 *
 * The matcher writes into every claim of a match the digest of the Match it is about to
 * publish (Claim.match_digest); the allocator recomputes it from the Match it received
 * and acts only if every claim carries that digest. So a Match on MATCHES that names a
 * real match's id and only tickets claimed by it, but not what the matcher formed (a
 * subset of the tickets, other teams, players or datacenters), is told from the real
 * one and refused: the claims, not the publish permission, say what the match is.
 *
 * The digest is BLAKE2b-256 (libsodium crypto_generichash, 32 bytes, no key) of this
 * encoding (docs/PROTOCOL.md "The match digest" is the reference for other languages):
 *
 *   "gamefn.v1.match-digest"          22 ASCII bytes, no terminator
 *   str(match_id) str(queue)
 *   i64(created_unix_ms) i64(claim_expires_unix_ms)
 *   u32(number of teams)
 *   u32(number of tickets), then per ticket, in ascending bytewise order of ticket_id:
 *     str(ticket_id) u32(index of its team in Match.teams)
 *     u32(number of player_ids) str(player_id) ... (in the ticket's order)
 *   u32(number of datacenters) str(datacenter) ... (in Match.datacenters order)
 *
 *   u32 = 4 bytes, i64 = 8 bytes two's complement, both big-endian;
 *   str(s) = u32(byte length of s) || the bytes of s.
 *
 * That is everything the allocator acts on: which tickets, which players get tokens, on
 * which team, which datacenters in which order, the queue, and the times that bound the
 * allocation (deadline from created, the claims' lease). The order of tickets within a
 * team changes nothing the allocator does and does not change the digest; everything
 * else listed does. Not covered: claim_revision (known only after the claims are
 * written), and what only audits read (ratings, limits, pings, region, tick, flags).
 *
 * Pure, reentrant, allocates nothing.
 */
#ifndef GAMEFN_TICKETS_CLAIM_DIGEST_H
#define GAMEFN_TICKETS_CLAIM_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

enum {
    GF_CLAIM_DIGEST_LEN = 32,          /* bytes */
    GF_CLAIM_DIGEST_TICKETS_MAX = 128, /* tickets per match (the commit record's limit) */
};

/* The digest of `m` into out. GF_ERR_INVALID when m has more than 128 tickets or a
 * ticket's team cannot be told (never for a Match the matcher built or the allocator
 * accepted). */
gf_err gf_claim_digest_of(const Gamefn__V1__Match *m, uint8_t out[GF_CLAIM_DIGEST_LEN]);

typedef enum gf_claim_digest_verdict {
    GF_CLAIM_DIGEST_SAME = 0, /* the claim names this Match */
    GF_CLAIM_DIGEST_NONE,     /* no digest: written by a matcher older than the field */
    GF_CLAIM_DIGEST_DIFFERS,  /* another Match (or a digest of the wrong length) */
} gf_claim_digest_verdict;

/* How claim `c` (not NULL) relates to a Match whose digest is `digest`. Constant time
 * in the digest bytes (sodium_memcmp), although nothing secret is compared. */
gf_claim_digest_verdict gf_claim_digest_verdict_of(const Gamefn__V1__Claim *c,
                                                   const uint8_t digest[GF_CLAIM_DIGEST_LEN]);

#endif
