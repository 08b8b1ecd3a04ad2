/*
 * gamefn/event_check.h — the one validator of a GameEvent (docs/PROTOCOL.md §5 and
 * §9), shared by the producer (which refuses a bad event at emit, before it is
 * spooled) and the event consumers (which dead-letter a stored one with the reason).
 *
 * What is checked, field by field in this order (the first problem is reported):
 *   event_id     token 1..128                    (gf_event_check only)
 *   source_id    token 1..64                     (gf_event_check only)
 *   source_seq   >= 1                            (gf_event_check only)
 *   player_id    token 1..64
 *   event_type   name token 1..32
 *   occurred_unix_ms  > 0
 *   match_id     token 0..64
 *   payload      the case event_type selects: "kill" -> kill, "score" -> score,
 *                "zone_change" -> zone_change, "crash" -> crash; any other type
 *                carries generic or nothing; then the payload's own limits:
 *     kill         victim_player_id token 1..64, weapon text 0..64, distance_m
 *                  finite 0..100000
 *     score        delta -1e12..1e12 and non-zero, board name token 0..32, reason
 *                  text 0..64
 *     zone_change  from_zone text 0..64, to_zone text 1..64
 *     crash        signature text 1..128, message multi-line text 0..1024, stack
 *                  multi-line text 0..32768, build text 0..64, platform text 0..32
 *     generic      0..16 attributes, keys name tokens 1..32 and unique, values
 *                  text 0..128; data 0..32768 bytes; content_type text 0..64
 * "text" is well-formed UTF-8 without control characters; "multi-line text" may
 * also hold tab, LF and CR (stack traces). Lengths are bytes.
 *
 * Problems are reported as a field path (as Error.field is written, §3:
 * "kill.victim_player_id", "generic.attributes[level]") and a phrase
 * ("is longer than 64 bytes").
 *
 * Pure and reentrant; nothing allocates except gf_event_decode's result.
 */
#ifndef GAMEFN_EVENT_CHECK_H
#define GAMEFN_EVENT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/v1/event.pb-c.h"

enum {
    GF_EVENT_FIELD_MAX = 64, /* bytes of a field path, NUL included */
    GF_EVENT_WHY_MAX = 160,  /* bytes of a phrase, NUL included */
    GF_EVENT_TEXT_MAX = 64,  /* weapon, reason, zones, build */
    GF_EVENT_SIGNATURE_MAX = 128,
    GF_EVENT_MESSAGE_MAX = 1024,
    GF_EVENT_STACK_MAX = 32768,
    GF_EVENT_PLATFORM_MAX = 32,
    GF_EVENT_DATA_MAX = 32768,
};

#define GF_EVENT_DISTANCE_MAX 100000.0
#define GF_EVENT_DELTA_MAX    INT64_C(1000000000000) /* |ScoreEvent.delta| */

/* The types with a typed payload. */
#define GF_EVENT_TYPE_KILL        "kill"
#define GF_EVENT_TYPE_SCORE       "score"
#define GF_EVENT_TYPE_ZONE_CHANGE "zone_change"
#define GF_EVENT_TYPE_CRASH       "crash"

typedef struct gf_event_problem {
    char field[GF_EVENT_FIELD_MAX]; /* "" when the event as a whole is wrong */
    char why[GF_EVENT_WHY_MAX];
} gf_event_problem;

/* The payload case an event_type must carry: KILL, SCORE, ZONE_CHANGE, CRASH, or
 * GENERIC for any other type (which may also carry none). */
Gamefn__V1__GameEvent__PayloadCase gf_event_payload_for(const char *event_type);

/* Everything but the producer-assigned ids (event_id, source_id, source_seq).
 * GF_OK, or GF_ERR_INVALID with *problem filled (problem may be NULL). */
gf_err gf_event_check_body(const Gamefn__V1__GameEvent *ev, gf_event_problem *problem);

/* The whole event. */
gf_err gf_event_check(const Gamefn__V1__GameEvent *ev, gf_event_problem *problem);

/* For consumers: decodes `len` bytes (at most GF_WIRE_EVENT_MAX) and checks the
 * whole event. GF_OK with *out set (free with gf_event_free); GF_ERR_INVALID with
 * *problem filled ("bytes" when the size or the encoding is wrong; the string's field,
 * e.g. "player_id" or "generic.attributes.value", "holds a NUL byte" when its encoded
 * bytes hold one, which the decoded C string would silently end at). protobuf-c's
 * unpack cannot tell an allocation failure from bad bytes, so one is reported as
 * "bytes" too (and dead-lettered like them; rare enough to leave so). Any valid encoding
 * is accepted: nothing is compared with a re-encoding. */
gf_err gf_event_decode(const uint8_t *data, size_t len, Gamefn__V1__GameEvent **out,
                       gf_event_problem *problem);

/* Frees what gf_event_decode returned (NULL is fine). */
void gf_event_free(Gamefn__V1__GameEvent *ev);

/* "<field>: <why>", or just the phrase, into buf (always terminated): the text of a
 * DeadLetter's error. */
void gf_event_problem_format(const gf_event_problem *problem, char *buf, size_t size);

/* For consumers: the stored subject agrees with the event. It must be
 * gamefn.v1.evp.<partition>.<player_id>.<event_type> with the partition the player
 * maps to (gamefn/partition.h, GF_WIRE_EVENT_PARTITIONS), or the producer's
 * gamefn.v1.event.<player_id>.<event_type>. GF_OK or GF_ERR_INVALID (field
 * "subject"). */
gf_err gf_event_check_subject(const char *subject, const Gamefn__V1__GameEvent *ev,
                              gf_event_problem *problem);

#endif
