/*
 * gamefn/match/ticket.h — a matchmaking ticket as the engine reads it, and its validation.
 *
 * A ticket is one player or a party (kept whole, never larger than its queue's team
 * size). Datacenters are indices into gf_match_config.datacenters; the caller maps names
 * with gf_match_config_dc_index() and refuses unknown names itself (an index out of
 * range is refused here as "unknown datacenter"). A datacenter the client did not
 * measure is simply absent.
 *
 * A party's skill is aggregated as its queue says (average or max of the members) plus
 * premade_bonus per member beyond the first; its sigma is the root mean square of the
 * members' sigmas. The party acts as one member of a match: the skill gap of the rules is
 * measured between tickets' aggregated skills.
 *
 * Ownership: every pointer in a ticket is borrowed from the caller for the duration of the
 * call that receives it. Pure functions; reentrant.
 */
#ifndef GAMEFN_MATCH_TICKET_H
#define GAMEFN_MATCH_TICKET_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/match/config.h"

#define GF_MATCH_MAX_ID_LEN       64  /* ticket and player ids, bytes */
#define GF_MATCH_MAX_SKILL        1e6 /* |skill| */
#define GF_MATCH_MAX_SIGMA        1e6
#define GF_MATCH_MAX_PING_MS      5000.0
#define GF_MATCH_MAX_AGE_MS       (7LL * 24 * 3600 * 1000) /* older queue times are absurd */
#define GF_MATCH_MAX_TICKET_ATTRS 16
#define GF_MATCH_MAX_ATTR_LEN     128
#define GF_MATCH_REGION_AUTO      UINT32_MAX /* region = that of the lowest-ping datacenter */

typedef struct gf_match_player {
    const char *id; /* 1..64 bytes */
    double skill;   /* finite, |skill| <= 1e6 */
    double sigma;   /* finite, 0..1e6; 0 = not given */
} gf_match_player;

typedef struct gf_match_ping {
    uint32_t dc; /* index into cfg->datacenters */
    double ms;   /* finite, 0..5000 */
} gf_match_ping;

typedef struct gf_match_attr {
    const char *key;   /* 1..128 bytes */
    const char *value; /* 0..128 bytes */
} gf_match_attr;

typedef struct gf_match_ticket {
    const char *id;                 /* 1..64 bytes, unique in a pool */
    uint32_t queue;                 /* index into cfg->queues */
    uint32_t region;                /* region index, or GF_MATCH_REGION_AUTO */
    int64_t queued_ms;              /* when it entered the queue; same clock as `now` */
    const gf_match_player *players; /* 1..team_size */
    size_t players_len;
    const gf_match_ping *pings; /* 1..GF_MATCH_MAX_DCS, datacenters unique */
    size_t pings_len;
    const gf_match_attr *attrs; /* 0..16, keys unique */
    size_t attrs_len;
} gf_match_ticket;

/* Why a ticket was refused. */
typedef enum gf_match_bad {
    GF_MATCH_BAD_NONE = 0,
    GF_MATCH_BAD_ID,         /* ticket id missing, empty or longer than 64 bytes */
    GF_MATCH_BAD_QUEUE,      /* queue index out of range */
    GF_MATCH_BAD_REGION,     /* region index out of range */
    GF_MATCH_BAD_TIME,       /* queue time in the future (beyond clock skew) or absurdly old */
    GF_MATCH_BAD_NO_PLAYERS, /* no players */
    GF_MATCH_BAD_PARTY_SIZE, /* party larger than the queue's team size */
    GF_MATCH_BAD_PLAYER_ID,  /* player id missing, empty or too long */
    GF_MATCH_BAD_SKILL,      /* NaN, infinite or |skill| > 1e6 */
    GF_MATCH_BAD_SIGMA,      /* NaN, infinite, negative or > 1e6 */
    GF_MATCH_BAD_NO_DC,      /* no datacenter pings */
    GF_MATCH_BAD_UNKNOWN_DC, /* datacenter index out of range */
    GF_MATCH_BAD_DUP_DC,     /* the same datacenter twice */
    GF_MATCH_BAD_PING,       /* NaN, infinite, negative or > 5000 ms */
    GF_MATCH_BAD_ATTR,       /* attribute key/value missing, too long, repeated, too many */
    GF_MATCH_BAD_DUP_PLAYER, /* a player twice in the ticket, or also in an older ticket */
    GF_MATCH_BAD_DUP_TICKET, /* ticket id also used by an older ticket of the pool */
    GF_MATCH_BAD__COUNT
} gf_match_bad;

/* "ok", "id", "queue", ... ; static, never NULL. */
const char *gf_match_bad_str(gf_match_bad bad);
/* One human-readable sentence; static, never NULL. */
const char *gf_match_bad_text(gf_match_bad bad);

/* Checks one ticket on its own (everything but the pool-wide duplicate checks).
 * Never reads past the lengths given; never crashes on NULL pointers with zero lengths.
 * cfg must be a prepared config. */
gf_match_bad gf_match_ticket_check(const gf_match_config *cfg, const gf_match_ticket *t,
                                   int64_t now_ms);

/* The aggregated skill and sigma of a ticket under its queue's party rule.
 * The ticket must have passed gf_match_ticket_check(). */
void gf_match_ticket_skill(const gf_match_queue *q, const gf_match_ticket *t, double *skill,
                           double *sigma);

/* Age in ms at now_ms (0 for a queue time slightly in the future). */
int64_t gf_match_ticket_age(const gf_match_ticket *t, int64_t now_ms);

#endif
