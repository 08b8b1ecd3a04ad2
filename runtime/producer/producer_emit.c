/*
 * producer_emit.c — an emitted event from the caller's struct to a queued, spooled
 * record: validate, encode, stamp the ids, append.
 *
 * Design notes.
 * - The body (every field but the three ids) is validated and encoded before the
 *   spool lock is taken, so the lock covers only the seq and the append. The ids
 *   depend on the seq, known only under the lock: they are fields 1, 2 and 3 of
 *   GameEvent, so their bytes simply go in front of the body (prefix || body is the
 *   same encoding protobuf-c would write for the whole message, field order included;
 *   tests/unit/test_producer_encode.c checks it byte for byte). The entry is
 *   allocated with room for the longest prefix in front of the body.
 * - The size limit (64 KiB encoded) is checked with the prefix at its longest seq
 *   (10-byte varint), so an event accepted at seq 1 would be accepted at any seq.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/event_check.h"
#include "gamefn/limits.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/event.pb-c.h"
#include "producer_internal.h"

/* protobuf-c's string fields are char *; the encoder never writes through them. */
static char *nz(const char *s)
{
    return (char *)(uintptr_t)(s ? s : "");
}

static size_t varint(uint64_t v, uint8_t *out)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static size_t field_bytes(uint8_t tag, const char *s, uint8_t *out)
{
    size_t len = strlen(s), n = 0;
    out[n++] = tag;
    n += varint(len, out + n);
    memcpy(out + n, s, len);
    return n + len;
}

size_t gf__producer_prefix(const char *event_id, const char *source_id, uint64_t seq, uint8_t *out)
{
    size_t n = field_bytes(0x0a, event_id, out); /* 1: event_id, length-delimited */
    n += field_bytes(0x12, source_id, out + n);  /* 2: source_id */
    out[n++] = 0x18;                             /* 3: source_seq, varint */
    return n + varint(seq, out + n);
}

/* The protobuf-c form of ev's body; attrs has room for ev's attributes. */
typedef struct body {
    Gamefn__V1__GameEvent ev;
    Gamefn__V1__KillEvent kill;
    Gamefn__V1__ScoreEvent score;
    Gamefn__V1__ZoneChangeEvent zone;
    Gamefn__V1__CrashEvent crash;
    Gamefn__V1__GenericEvent generic;
    Gamefn__V1__GenericEvent__AttributesEntry attr[GF_WIRE_ATTRS_MAX];
    Gamefn__V1__GenericEvent__AttributesEntry *attrs[GF_WIRE_ATTRS_MAX];
} body;

static void body_fill(const char *source_id, const gf_event *in, body *b)
{
    b->ev = (Gamefn__V1__GameEvent)GAMEFN__V1__GAME_EVENT__INIT;
    b->ev.player_id = nz(in->player_id && in->player_id[0] ? in->player_id : source_id);
    b->ev.event_type = nz(in->type);
    b->ev.occurred_unix_ms = in->occurred_unix_ms ? in->occurred_unix_ms : gf_clock_unix_ms();
    b->ev.match_id = nz(in->match_id);
    switch (gf_event_payload_for(in->type)) {
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL:
        b->kill = (Gamefn__V1__KillEvent)GAMEFN__V1__KILL_EVENT__INIT;
        b->kill.victim_player_id = nz(in->kill.victim_player_id);
        b->kill.weapon = nz(in->kill.weapon);
        b->kill.headshot = in->kill.headshot;
        b->kill.distance_m = in->kill.distance_m;
        b->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL;
        b->ev.kill = &b->kill;
        break;
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE:
        b->score = (Gamefn__V1__ScoreEvent)GAMEFN__V1__SCORE_EVENT__INIT;
        b->score.delta = in->score.delta;
        b->score.board = nz(in->score.board);
        b->score.reason = nz(in->score.reason);
        b->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE;
        b->ev.score = &b->score;
        break;
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE:
        b->zone = (Gamefn__V1__ZoneChangeEvent)GAMEFN__V1__ZONE_CHANGE_EVENT__INIT;
        b->zone.from_zone = nz(in->zone_change.from_zone);
        b->zone.to_zone = nz(in->zone_change.to_zone);
        b->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE;
        b->ev.zone_change = &b->zone;
        break;
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH:
        b->crash = (Gamefn__V1__CrashEvent)GAMEFN__V1__CRASH_EVENT__INIT;
        b->crash.signature = nz(in->crash.signature);
        b->crash.message = nz(in->crash.message);
        b->crash.stack = nz(in->crash.stack);
        b->crash.build = nz(in->crash.build);
        b->crash.platform = nz(in->crash.platform);
        b->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH;
        b->ev.crash = &b->crash;
        break;
    default: {
        const gf_event_attr *a = in->generic.attributes;
        size_t n = in->generic.attributes_len;
        b->generic = (Gamefn__V1__GenericEvent)GAMEFN__V1__GENERIC_EVENT__INIT;
        for (size_t i = 0; i < n && i < GF_WIRE_ATTRS_MAX && a; i++) {
            b->attr[i] = (Gamefn__V1__GenericEvent__AttributesEntry)
                GAMEFN__V1__GENERIC_EVENT__ATTRIBUTES_ENTRY__INIT;
            b->attr[i].key = nz(a[i].key);
            b->attr[i].value = nz(a[i].value);
            b->attrs[i] = &b->attr[i];
        }
        b->generic.n_attributes = a ? n : 0;
        b->generic.attributes = b->attrs;
        b->generic.data.data = (uint8_t *)(uintptr_t)in->generic.data;
        b->generic.data.len = in->generic.data ? in->generic.data_len : 0;
        b->generic.content_type = nz(in->generic.content_type);
        b->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC;
        b->ev.generic = &b->generic;
    }
    }
}

static gf_err refuse(gf_producer_receipt *r, const char *field, const char *why)
{
    if (r) {
        snprintf(r->field, sizeof r->field, "%s", field);
        snprintf(r->why, sizeof r->why, "%s", why);
    }
    return GF_ERR_INVALID;
}

gf_err gf__producer_build(const char *name, size_t source_len, const gf_event *ev, pr_entry **out,
                          gf_producer_receipt *r)
{
    *out = NULL;
    body *b = malloc(sizeof *b);
    if (b == NULL)
        return GF_ERR_NOMEM;
    body_fill(name, ev, b);
    gf_event_problem problem;
    gf_err err = GF_OK;
    if (ev->generic.attributes_len > GF_WIRE_ATTRS_MAX &&
        gf_event_payload_for(ev->type) == GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC) {
        char why[GF_PRODUCER_WHY_MAX];
        snprintf(why, sizeof why, "has %zu entries (max %d)", ev->generic.attributes_len,
                 GF_WIRE_ATTRS_MAX);
        err = refuse(r, "generic.attributes", why);
    } else if (gf_event_check_body(&b->ev, &problem) != GF_OK) {
        err = refuse(r, problem.field, problem.why);
    }
    size_t body_len = err == GF_OK ? gamefn__v1__game_event__get_packed_size(&b->ev) : 0;
    /* The longest prefix this source can get: its event id at a 20-digit seq. */
    size_t id_len = source_len + 1 + 20;
    size_t prefix_max = 2 + id_len + 2 + source_len + 1 + 10;
    if (err == GF_OK && body_len + prefix_max > GF_WIRE_EVENT_MAX) {
        char why[GF_PRODUCER_WHY_MAX];
        snprintf(why, sizeof why, "encoded event of %zu bytes exceeds %d", body_len + prefix_max,
                 GF_WIRE_EVENT_MAX);
        err = refuse(r, "", why);
    }
    pr_entry *e = NULL;
    if (err == GF_OK) {
        /* Exact room: subject, the longest id, the longest prefix, the body. */
        size_t subject_room =
            sizeof GF_WIRE_SUBJ_EVENT + strlen(b->ev.player_id) + 1 + strlen(b->ev.event_type) + 1;
        size_t id_room = id_len + 1;
        size_t bytes = sizeof *e + subject_room + id_room + prefix_max + body_len;
        e = malloc(bytes);
        if (e == NULL)
            err = GF_ERR_NOMEM;
        else {
            *e = (pr_entry){.bytes = bytes, .data_len = body_len};
            char *subject = e->storage;
            snprintf(subject, subject_room, "%s.%s.%s", GF_WIRE_SUBJ_EVENT, b->ev.player_id,
                     b->ev.event_type);
            e->subject = subject;
            e->msg_id = subject + subject_room;
            uint8_t *body_at = (uint8_t *)e->storage + subject_room + id_room + prefix_max;
            gamefn__v1__game_event__pack(&b->ev, body_at);
            e->data = body_at;
        }
    }
    free(b);
    *out = e;
    return err;
}

gf_err gf_producer_check_event(const char *source_id, const gf_event *ev, gf_producer_receipt *out)
{
    gf_producer_receipt ignored;
    gf_producer_receipt *r = out ? out : &ignored;
    memset(r, 0, sizeof *r);
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_id_ok(source_id, GF_PRODUCER_NAME_MAX, why, sizeof why))
        return refuse(r, "source_id", why);
    if (ev == NULL)
        return refuse(r, "", "no event");
    pr_entry *e = NULL;
    gf_err err = gf__producer_build(source_id, strlen(source_id) + 9, ev, &e, r);
    free(e);
    return err;
}

void gf__producer_stamp(const gf_producer *p, pr_entry *e, uint64_t seq)
{
    char *msg_id = (char *)(uintptr_t)e->msg_id; /* our own storage */
    snprintf(msg_id, GF_PRODUCER_EVENT_ID_MAX, "%s-%" PRIu64, p->source_id, seq); /* fits id_room */
    uint8_t prefix[PR_PREFIX_MAX];
    size_t n = gf__producer_prefix(msg_id, p->source_id, seq, prefix);
    uint8_t *at = (uint8_t *)(uintptr_t)e->data - n;
    memcpy(at, prefix, n);
    e->seq = seq;
    e->data = at;
    e->data_len += n;
}

pr_entry *gf__producer_entry_from(gf_producer *p, const gf_spool_record *rec)
{
    size_t s = strlen(rec->subject) + 1, m = strlen(rec->msg_id) + 1;
    size_t bytes = sizeof(pr_entry) + s + m + rec->data_len;
    pr_entry *e = malloc(bytes);
    if (e == NULL)
        return NULL;
    *e = (pr_entry){.p = p, .seq = rec->seq, .bytes = bytes, .data_len = rec->data_len};
    memcpy(e->storage, rec->subject, s);
    memcpy(e->storage + s, rec->msg_id, m);
    if (rec->data_len > 0)
        memcpy(e->storage + s + m, rec->data, rec->data_len);
    e->subject = e->storage;
    e->msg_id = e->storage + s;
    e->data = (const uint8_t *)e->storage + s + m;
    return e;
}
