/*
 * internal.h — shared by the tickets library's files only.
 */
#ifndef GAMEFN_TICKETS_INTERNAL_H
#define GAMEFN_TICKETS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gamefn/err.h"
#include "gamefn/limits.h"
#include "gamefn/match/config.h"
#include "gamefn/match/ticket.h"
#include "gamefn/tickets/problem.h"
#include "gamefn/util.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

#define C_INVALID      GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT
#define C_NOT_FOUND    GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND
#define C_CONFLICT     GAMEFN__V1__ERROR_CODE__ERROR_CODE_CONFLICT
#define C_INTERNAL     GAMEFN__V1__ERROR_CODE__ERROR_CODE_INTERNAL
#define C_PRECONDITION GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x

/* protobuf-c's structs hold `char *` even where we only read: a borrowed const string
 * goes in through this (no -Wcast-qual warning, no copy). */
static inline char *gf_tk_unconst(const char *s)
{
    return (char *)(uintptr_t)s;
}

static inline bool gf_tk_streq(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* A token of 1..max bytes of [A-Za-z0-9_-] (gamefn/names.h). */
bool gf_tk_token_ok(const char *s, size_t max);

/* Region name of region index `r`, or NULL. */
const char *gf_tk_region_name(const gf_match_config *cfg, int r);

/* The parts of a request or a record the engine reads (attributes are converted by
 * the caller: the two messages have distinct map entry types). */
typedef struct gf_tk_parts {
    const char *queue;
    const char *region; /* "" = AUTO */
    int64_t queued_ms;
    size_t n_members;
    Gamefn__V1__PartyMember *const *members;
    size_t n_pings;
    Gamefn__V1__DatacenterPing *const *pings;
} gf_tk_parts;

/* Fills out (queue, region, queued time, players, pings; attrs left empty) from parts.
 * players and pings hold n_members and n_pings entries. A ping naming an unknown
 * datacenter gets dc = UINT32_MAX when keep_unknown (the engine then refuses it), else
 * is left out. GF_ERR_NOT_FOUND for an unknown queue (out->queue = UINT32_MAX) or, with
 * !keep_unknown, when no ping is left. Unknown regions become AUTO when !keep_unknown,
 * else UINT32_MAX - 1 (refused by the engine). */
gf_err gf_tk_engine_parts(const gf_match_config *cfg, const gf_tk_parts *parts, bool keep_unknown,
                          gf_match_player *players, gf_match_ping *pings, gf_match_ticket *out);

/* A stored value decoded as `desc` and checked by `problem` (NULL = fine, else why not):
 * GF_OK with *out, or GF_ERR_INVALID (INTERNAL: stored data this library did not write)
 * naming `what` and the key. *out is freed with protobuf_c_message_free_unpacked. */
typedef const char *(*gf_tk_check_fn)(const ProtobufCMessage *m, const char *key);
gf_err gf_tk_decode_stored(const ProtobufCMessageDescriptor *desc, gf_tk_check_fn problem,
                           const char *what, const uint8_t *buf, size_t len, const char *key,
                           ProtobufCMessage **out, gf_tickets_problem *p);

/* The parts of a request the engine reads, queued at now_ms. */
gf_tk_parts gf_tk_request_parts(const Gamefn__V1__CreateTicketRequest *req, int64_t now_ms);

#endif
