/*
 * gamefn/limits.h — the limits every decoder and validator enforces
 * (docs/PROTOCOL.md §5; keep the two in step), and the join-token layout.
 *
 * Constants only: no code, no dependencies. tests/unit/test_wire.c checks that the
 * limits fit each other (the largest valid claims fit a token, the largest valid
 * ticket request fits GF_WIRE_REQUEST_MAX).
 */
#ifndef GAMEFN_LIMITS_H
#define GAMEFN_LIMITS_H

enum {
    GF_WIRE_ID_MAX = 64,        /* ticket/player/match/server/source/instance id, idem. key */
    GF_WIRE_NAME_MAX = 32,      /* queue, region, datacenter, board, event type, key id, attr key */
    GF_WIRE_EVENT_ID_MAX = 128, /* GameEvent.event_id */
    GF_WIRE_PARTY_MAX = 16,     /* members per ticket */
    GF_WIRE_PINGS_MAX = 32,     /* datacenters per ticket (and per match) */
    GF_WIRE_PING_MS_MAX = 5000, /* DatacenterPing.ping_ms */
    GF_WIRE_ATTRS_MAX = 16,     /* entries in any attributes map */
    GF_WIRE_ATTR_VALUE_MAX = 128,
    GF_WIRE_TEAMS_MAX = 64,
    GF_WIRE_ADDRESS_MAX = 253,
    GF_WIRE_CAPACITY_MAX = 1024,
    GF_WIRE_VERSION_MAX = 64,
    GF_WIRE_TEXT_MAX = 256,      /* Error.message, TicketStatus.detail, DeadLetter.error */
    GF_WIRE_FIELD_MAX = 128,     /* Error.field */
    GF_WIRE_LB_LIMIT_MAX = 100,  /* TopQuery / PageQuery limit */
    GF_WIRE_LB_AROUND_MAX = 50,  /* AroundQuery before / after */
    GF_WIRE_REQUEST_MAX = 16384, /* encoded request bodies (ticket, fleet, leaderboard) */
    GF_WIRE_EVENT_MAX = 65536,   /* encoded GameEvent */
    GF_WIRE_MATCH_MAX = 262144,  /* encoded Match */
    GF_WIRE_EVENT_PARTITIONS = 16,
    GF_WIRE_JOIN_CLAIMS_MAX = 1024, /* encoded JoinTokenClaims */
    GF_WIRE_JOIN_SIG_LEN = 64,      /* Ed25519 signature */
    GF_WIRE_JOIN_PK_LEN = 32,       /* Ed25519 public key */
    GF_WIRE_JOIN_SK_LEN = 64,       /* Ed25519 secret key (libsodium layout: seed || pk) */
    GF_WIRE_JOIN_NONCE_LEN = 16,
    GF_WIRE_JOIN_SKEW_MS = 5000, /* clock skew verifiers allow on issued and expires */
};

#define GF_WIRE_RATING_ABS_MAX 1e6                    /* |PartyMember.rating|, PartyMember.sigma */
#define GF_WIRE_JOIN_CONTEXT   "gamefn.v1.join-token" /* signed before the claims, no NUL */

#endif
