/*
 * gamefn/wire.h — wire conventions that are not protobuf messages themselves:
 * subjects, header names, limits, error replies, ErrorCode <-> gf_err, token and
 * UTF-8 checks, the event partition, and the join-token byte layout.
 * docs/PROTOCOL.md is the prose version of this header; keep the two in step.
 *
 * Pure: no NATS here. A responder builds a gf_wire_error and sets the headers
 * itself, e.g.
 *
 *   gf_wire_error e;
 *   if (gf_wire_error_build(&e, GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT,
 *                           "members[0].player_id", 0, "too long: %zu bytes", n) == GF_OK) {
 *       natsMsgHeader_Set(reply, GF_WIRE_HDR_ERROR_CODE, e.code_header);
 *       natsMsgHeader_Set(reply, GF_WIRE_HDR_ERROR, e.message);
 *       ... body = e.body, e.body_len ...
 *   }
 *   gf_wire_error_fini(&e);
 *
 * Threads: every function is reentrant; nothing here keeps state.
 * Ownership: gf_wire_error.body and *token from gf_wire_join_token_sign() are
 * malloc'd and owned by the caller (gf_wire_error_fini() / free()). Everything
 * else writes into caller buffers or borrows from its inputs.
 */
#ifndef GAMEFN_WIRE_H
#define GAMEFN_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

/* ---- subjects, queue groups, headers --------------------------------------- */

#define GF_WIRE_SUBJ_TICKET_CREATE     "gamefn.v1.ticket.create"
#define GF_WIRE_SUBJ_TICKET_CANCEL     "gamefn.v1.ticket.cancel"
#define GF_WIRE_SUBJ_TICKET_GET        "gamefn.v1.ticket.get"
#define GF_WIRE_SUBJ_TICKET_STATUS     "gamefn.v1.ticket.status" /* .<ticket_id> */
#define GF_WIRE_SUBJ_FLEET_REGISTER    "gamefn.v1.fleet.register"
#define GF_WIRE_SUBJ_FLEET_HEARTBEAT   "gamefn.v1.fleet.heartbeat"
#define GF_WIRE_SUBJ_LEADERBOARD_QUERY "gamefn.v1.leaderboard.query"
#define GF_WIRE_SUBJ_ECHO              "gamefn.v1.echo"
#define GF_WIRE_SUBJ_TICK_MATCHER      "gamefn.v1.tick.matcher"
#define GF_WIRE_SUBJ_MATCH_FOUND       "gamefn.v1.match.found" /* .<queue> */
#define GF_WIRE_SUBJ_EVENT             "gamefn.v1.event"       /* .<player_id>.<event_type> */
#define GF_WIRE_SUBJ_EVENT_PARTITIONED "gamefn.v1.evp"         /* .<partition>.<player_id>.<type> */
#define GF_WIRE_SUBJ_DLQ               "gamefn.v1.dlq"         /* .<stream>.<consumer> */

#define GF_WIRE_QUEUE_INTAKE      "intake"
#define GF_WIRE_QUEUE_FLEET       "fleet"
#define GF_WIRE_QUEUE_LEADERBOARD "leaderboard"
#define GF_WIRE_QUEUE_ECHO        "echo"
#define GF_WIRE_QUEUE_MATCHER     "matcher"

#define GF_WIRE_HDR_ERROR_CODE "Nats-Service-Error-Code"
#define GF_WIRE_HDR_ERROR      "Nats-Service-Error"
#define GF_WIRE_HDR_MSG_ID     "Nats-Msg-Id"

/* ---- limits validators enforce (docs/PROTOCOL.md, "Limits") ----------------- */

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
};

#define GF_WIRE_RATING_ABS_MAX 1e6                    /* |PartyMember.rating|, PartyMember.sigma */
#define GF_WIRE_JOIN_CONTEXT   "gamefn.v1.join-token" /* signed before the claims, no NUL */

/* ---- syntax checks ------------------------------------------------------------ */

/* A token: 1..max bytes of [A-Za-z0-9_-]. NULL is not a token. */
bool gf_wire_token_valid(const char *s, size_t max);

/* Well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), as
 * proto3 parsers in other languages require of string fields. */
bool gf_wire_utf8_valid(const char *s, size_t len);

/* ---- error replies -------------------------------------------------------------- */

/* gf_err -> gamefn.v1.ErrorCode number (GF_OK -> 0, unknown -> INTERNAL). */
int gf_wire_code_from_err(gf_err err);

/* gamefn.v1.ErrorCode number -> gf_err; 0 and unknown numbers -> GF_ERR_PERMANENT. */
gf_err gf_wire_err_from_code(int code);

/* "INVALID_ARGUMENT", ...; "UNKNOWN" for numbers this build does not know. */
const char *gf_wire_code_name(int code);

typedef struct gf_wire_error {
    int code;                           /* gamefn.v1.ErrorCode number */
    char code_header[12];               /* value of Nats-Service-Error-Code: code in decimal */
    char message[GF_WIRE_TEXT_MAX + 1]; /* value of Nats-Service-Error, and Error.message */
    char field[GF_WIRE_FIELD_MAX + 1];  /* Error.field, "" when none */
    uint32_t retry_after_ms;            /* Error.retry_after_ms */
    uint8_t *body;                      /* serialized gamefn.v1.Error (build only), malloc'd */
    size_t body_len;
} gf_wire_error;

/* Fills *out: message from fmt (printf), then sanitized so it is valid UTF-8, has
 * no control characters (so it is a legal header value) and fits
 * GF_WIRE_TEXT_MAX bytes (cut on a character boundary); field (may be NULL) the
 * same with GF_WIRE_FIELD_MAX; body = the serialized Error. `code` must be a
 * known code other than 0, else GF_ERR_INVALID and *out is left zeroed.
 * GF_ERR_NOMEM leaves *out zeroed too. Call gf_wire_error_fini() in every case. */
gf_err gf_wire_error_build(gf_wire_error *out, int code, const char *field, uint32_t retry_after_ms,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Same, for a gf_err: code = gf_wire_code_from_err(err); message = "<gf_err_str>: text". */
gf_err gf_wire_error_from_err(gf_wire_error *out, gf_err err, const char *field, const char *text);

/* Frees body and zeroes *e. NULL is fine. */
void gf_wire_error_fini(gf_wire_error *e);

/* Client side: classifies a reply by its headers' values (NULL when absent) and body.
 * No Nats-Service-Error-Code and no Nats-Service-Error header: a success, GF_OK,
 * *out zeroed. Otherwise an error: *out gets code, message, field and
 * retry_after_ms, from the body when it is a valid Error with a non-zero code,
 * else from the headers (an unparsable code counts as INTERNAL); the return is
 * gf_wire_err_from_code(out->code). out->body stays NULL. */
gf_err gf_wire_reply_check(const char *code_header, const char *message_header, const uint8_t *body,
                           size_t body_len, gf_wire_error *out);

/* ---- events -------------------------------------------------------------------- */

/* FNV-1a 32-bit of `len` bytes: offset basis 2166136261, prime 16777619. */
uint32_t gf_wire_fnv1a32(const void *data, size_t len);

/* The partition nats-server's {{partition(n,1)}} mapping gives the player id token:
 * FNV-1a-32 of its bytes mod n (n > 0; n = 0 returns 0). */
uint32_t gf_wire_partition(const char *player_id, uint32_t n);

/* ---- join tokens ---------------------------------------------------------------- */

/* token = claims || Ed25519-sign(sk, GF_WIRE_JOIN_CONTEXT || claims). `claims` is a
 * serialized gamefn.v1.JoinTokenClaims, 1..GF_WIRE_JOIN_CLAIMS_MAX bytes.
 * *token is malloc'd (caller frees). GF_ERR_INVALID for bad lengths. */
gf_err gf_wire_join_token_sign(const uint8_t *claims, size_t claims_len,
                               const uint8_t sk[GF_WIRE_JOIN_SK_LEN], uint8_t **token,
                               size_t *token_len);

/* Checks the signature of `token` with `pk`. On GF_OK, *claims / *claims_len point
 * into `token` (borrowed): the caller then unpacks JoinTokenClaims and checks
 * version, expiry, server_id and player_id. A bad length or signature is
 * GF_ERR_INVALID and leaves *claims NULL. */
gf_err gf_wire_join_token_verify(const uint8_t *token, size_t token_len,
                                 const uint8_t pk[GF_WIRE_JOIN_PK_LEN], const uint8_t **claims,
                                 size_t *claims_len);

#endif
