/*
 * event_check.c — the GameEvent validator (see gamefn/event_check.h).
 *
 * Design notes. One table-free walk in the documented field order, each check a
 * small helper that fills the problem and returns GF_ERR_INVALID, so the first
 * failing field wins. protobuf-c leaves absent strings as "" but a hand-built
 * message may hold NULL: both count as empty.
 *
 * Embedded NULs. protobuf-c copies a string's wire bytes and appends a NUL, so a string
 * whose bytes hold a NUL reads, in C, as its part before the NUL: "p1\0x" would pass as
 * the token "p1" while the stored event (and every other language) says otherwise, and
 * two sources "gs\0a" and "gs\0b" would share one dedup window. So gf_event_decode walks
 * the bytes once more and refuses a NUL inside any string field, nested ones included.
 * Not by comparing the re-packed size with what was read: encodings are not canonical
 * across languages (explicit defaults, field order, map entries written in full), and a
 * valid event from another producer must not be refused for its encoding.
 */
#include "gamefn/event_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gamefn/limits.h"
#include "gamefn/names.h"
#include "gamefn/partition.h"
#include "gamefn/subjects.h"
#include "gamefn/utf8.h"

typedef Gamefn__V1__GameEvent event;

static gf_err bad(gf_event_problem *p, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static gf_err bad(gf_event_problem *p, const char *field, const char *fmt, ...)
{
    if (p) {
        snprintf(p->field, sizeof p->field, "%s", field);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->why, sizeof p->why, fmt, ap);
        va_end(ap);
    }
    return GF_ERR_INVALID;
}

static const char *str(const char *s)
{
    return s ? s : "";
}

/* A token of 1..max bytes ([A-Za-z0-9_-]); empty allowed when optional. */
static gf_err token(gf_event_problem *p, const char *field, const char *s, size_t max,
                    bool optional)
{
    char why[GF_NAME_WHY_MAX];
    s = str(s);
    if (optional && s[0] == '\0')
        return GF_OK;
    if (!gf_name_id_ok(s, max, why, sizeof why))
        return bad(p, field, "%s", why);
    return GF_OK;
}

/* UTF-8 text of min..max bytes without control characters (tab, LF, CR allowed when
 * multi_line). */
static gf_err text(gf_event_problem *p, const char *field, const char *s, size_t min, size_t max,
                   bool multi_line)
{
    s = str(s);
    size_t n = strlen(s);
    if (n < min)
        return bad(p, field, "is empty");
    if (n > max)
        return bad(p, field, "is longer than %zu bytes (%zu)", max, n);
    if (!gf_utf8_valid(s, n))
        return bad(p, field, "is not valid UTF-8");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool allowed = multi_line && (c == '\t' || c == '\n' || c == '\r');
        if ((c < 0x20 || c == 0x7f) && !allowed)
            return bad(p, field, "holds a control character (byte %zu)", i);
    }
    return GF_OK;
}

Gamefn__V1__GameEvent__PayloadCase gf_event_payload_for(const char *event_type)
{
    static const struct {
        const char *type;
        Gamefn__V1__GameEvent__PayloadCase payload;
    } typed[] = {
        {GF_EVENT_TYPE_KILL, GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL},
        {GF_EVENT_TYPE_SCORE, GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE},
        {GF_EVENT_TYPE_ZONE_CHANGE, GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE},
        {GF_EVENT_TYPE_CRASH, GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH},
    };
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++)
        if (strcmp(str(event_type), typed[i].type) == 0)
            return typed[i].payload;
    return GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC;
}

static const char *payload_name(Gamefn__V1__GameEvent__PayloadCase c)
{
    switch (c) {
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL:
        return "kill";
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE:
        return "score";
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE:
        return "zone_change";
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH:
        return "crash";
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC:
        return "generic";
    default:
        return "none";
    }
}

static gf_err check_kill(const Gamefn__V1__KillEvent *k, gf_event_problem *p)
{
    gf_err err = token(p, "kill.victim_player_id", k->victim_player_id, GF_WIRE_ID_MAX, false);
    if (err == GF_OK)
        err = text(p, "kill.weapon", k->weapon, 0, GF_EVENT_TEXT_MAX, false);
    if (err == GF_OK &&
        !(isfinite(k->distance_m) && k->distance_m >= 0 && k->distance_m <= GF_EVENT_DISTANCE_MAX))
        err = bad(p, "kill.distance_m", "must be finite, 0..100000");
    return err;
}

static gf_err check_score(const Gamefn__V1__ScoreEvent *s, gf_event_problem *p)
{
    if (s->delta == 0)
        return bad(p, "score.delta", "must not be 0");
    if (s->delta > GF_EVENT_DELTA_MAX || s->delta < -GF_EVENT_DELTA_MAX)
        return bad(p, "score.delta", "must be within -1e12..1e12");
    gf_err err = token(p, "score.board", s->board, GF_WIRE_NAME_MAX, true);
    return err == GF_OK ? text(p, "score.reason", s->reason, 0, GF_EVENT_TEXT_MAX, false) : err;
}

static gf_err check_zone(const Gamefn__V1__ZoneChangeEvent *z, gf_event_problem *p)
{
    gf_err err = text(p, "zone_change.from_zone", z->from_zone, 0, GF_EVENT_TEXT_MAX, false);
    return err == GF_OK ? text(p, "zone_change.to_zone", z->to_zone, 1, GF_EVENT_TEXT_MAX, false)
                        : err;
}

static gf_err check_crash(const Gamefn__V1__CrashEvent *c, gf_event_problem *p)
{
    gf_err err = text(p, "crash.signature", c->signature, 1, GF_EVENT_SIGNATURE_MAX, false);
    if (err == GF_OK)
        err = text(p, "crash.message", c->message, 0, GF_EVENT_MESSAGE_MAX, true);
    if (err == GF_OK)
        err = text(p, "crash.stack", c->stack, 0, GF_EVENT_STACK_MAX, true);
    if (err == GF_OK)
        err = text(p, "crash.build", c->build, 0, GF_EVENT_TEXT_MAX, false);
    if (err == GF_OK)
        err = text(p, "crash.platform", c->platform, 0, GF_EVENT_PLATFORM_MAX, false);
    return err;
}

static gf_err check_generic(const Gamefn__V1__GenericEvent *g, gf_event_problem *p)
{
    if (g->n_attributes > GF_WIRE_ATTRS_MAX)
        return bad(p, "generic.attributes", "has %zu entries (max %d)", g->n_attributes,
                   GF_WIRE_ATTRS_MAX);
    for (size_t i = 0; i < g->n_attributes; i++) {
        const Gamefn__V1__GenericEvent__AttributesEntry *a = g->attributes[i];
        char field[GF_EVENT_FIELD_MAX];
        snprintf(field, sizeof field, "generic.attributes[%zu]", i);
        if (token(p, field, a ? a->key : NULL, GF_WIRE_NAME_MAX, false) != GF_OK)
            return GF_ERR_INVALID;
        snprintf(field, sizeof field, "generic.attributes[%s]", a->key);
        for (size_t j = 0; j < i; j++)
            if (strcmp(g->attributes[j]->key, a->key) == 0)
                return bad(p, field, "is given twice");
        if (text(p, field, a->value, 0, GF_WIRE_ATTR_VALUE_MAX, false) != GF_OK)
            return GF_ERR_INVALID;
    }
    if (g->data.len > GF_EVENT_DATA_MAX)
        return bad(p, "generic.data", "is longer than %d bytes (%zu)", GF_EVENT_DATA_MAX,
                   g->data.len);
    return text(p, "generic.content_type", g->content_type, 0, GF_EVENT_TEXT_MAX, false);
}

static gf_err check_payload(const event *ev, gf_event_problem *p)
{
    Gamefn__V1__GameEvent__PayloadCase want = gf_event_payload_for(ev->event_type);
    Gamefn__V1__GameEvent__PayloadCase got = ev->payload_case;
    bool generic_none = want == GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC &&
                        got == GAMEFN__V1__GAME_EVENT__PAYLOAD__NOT_SET;
    if (got != want && !generic_none)
        return bad(p, "payload", "is %s, but event_type '%s' carries %s", payload_name(got),
                   str(ev->event_type), payload_name(want));
    switch (got) {
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL:
        return ev->kill ? check_kill(ev->kill, p) : bad(p, "kill", "is missing");
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE:
        return ev->score ? check_score(ev->score, p) : bad(p, "score", "is missing");
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE:
        return ev->zone_change ? check_zone(ev->zone_change, p)
                               : bad(p, "zone_change", "is missing");
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH:
        return ev->crash ? check_crash(ev->crash, p) : bad(p, "crash", "is missing");
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC:
        return ev->generic ? check_generic(ev->generic, p) : bad(p, "generic", "is missing");
    default:
        return GF_OK;
    }
}

gf_err gf_event_check_body(const event *ev, gf_event_problem *problem)
{
    gf_err err = token(problem, "player_id", ev->player_id, GF_WIRE_ID_MAX, false);
    if (err == GF_OK)
        err = token(problem, "event_type", ev->event_type, GF_WIRE_NAME_MAX, false);
    if (err == GF_OK && ev->occurred_unix_ms <= 0)
        err = bad(problem, "occurred_unix_ms", "must be > 0 (Unix ms)");
    if (err == GF_OK)
        err = token(problem, "match_id", ev->match_id, GF_WIRE_ID_MAX, true);
    return err == GF_OK ? check_payload(ev, problem) : err;
}

gf_err gf_event_check(const event *ev, gf_event_problem *problem)
{
    gf_err err = token(problem, "event_id", ev->event_id, GF_WIRE_EVENT_ID_MAX, false);
    if (err == GF_OK)
        err = token(problem, "source_id", ev->source_id, GF_WIRE_ID_MAX, false);
    if (err == GF_OK && ev->source_seq == 0)
        err = bad(problem, "source_seq", "must be >= 1");
    return err == GF_OK ? gf_event_check_body(ev, problem) : err;
}

/* A base-128 varint at *p (before end) into *v; false when it runs past end or 10 bytes. */
static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; *p < end && shift < 70; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The length of a field's value of wire type `type` at *p, after its length prefix if it
 * has one (a varint is skipped: 0). false for an encoding that cannot be read. */
static bool value_len(unsigned type, const uint8_t **p, const uint8_t *end, uint64_t *n)
{
    uint64_t skipped;
    *n = type == 1 ? 8 : type == 5 ? 4 : 0;
    if (type == 0)
        return varint(p, end, &skipped);
    if (type == 2)
        return varint(p, end, n);
    return type == 1 || type == 5; /* not groups: protobuf-c would not have unpacked them */
}

enum { NESTING_MAX = 8 }; /* GameEvent > GenericEvent > AttributesEntry is 3 */

/* No string field of the message `d` encoded in [p, end), nor of its nested messages,
 * holds a NUL byte (see the design notes). `path` names the message ("" at the top). */
static gf_err no_nul_in_strings(const ProtobufCMessageDescriptor *d, const uint8_t *p,
                                const uint8_t *end, const char *path, int depth,
                                gf_event_problem *problem)
{
    if (depth > NESTING_MAX)
        return bad(problem, "bytes", "nested too deeply");
    while (p < end) {
        uint64_t tag, n;
        if (!varint(&p, end, &tag) || !value_len((unsigned)(tag & 7), &p, end, &n) ||
            n > (uint64_t)(end - p))
            return bad(problem, "bytes", "not a GameEvent encoding");
        const ProtobufCFieldDescriptor *f =
            (tag & 7) == 2 && tag >> 3 <= UINT32_MAX
                ? protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3))
                : NULL; /* only length-delimited values hold strings or messages */
        char field[GF_EVENT_FIELD_MAX];
        if (f)
            snprintf(field, sizeof field, "%s%s%s", path, path[0] ? "." : "", f->name);
        if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, (size_t)n))
            return bad(problem, field, "holds a NUL byte");
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
            gf_err err = no_nul_in_strings(f->descriptor, p, p + n, field, depth + 1, problem);
            if (err != GF_OK)
                return err;
        }
        p += n;
    }
    return GF_OK;
}

gf_err gf_event_decode(const uint8_t *data, size_t len, event **out, gf_event_problem *problem)
{
    *out = NULL;
    if (len > GF_WIRE_EVENT_MAX)
        return bad(problem, "bytes", "event of %zu bytes exceeds %d", len, GF_WIRE_EVENT_MAX);
    event *ev = gamefn__v1__game_event__unpack(NULL, len, data);
    if (ev == NULL)
        return bad(problem, "bytes", "not a GameEvent encoding");
    gf_err err =
        no_nul_in_strings(&gamefn__v1__game_event__descriptor, data, data + len, "", 0, problem);
    if (err == GF_OK)
        err = gf_event_check(ev, problem);
    if (err != GF_OK) {
        gamefn__v1__game_event__free_unpacked(ev, NULL);
        return err;
    }
    *out = ev;
    return GF_OK;
}

void gf_event_free(event *ev)
{
    if (ev)
        gamefn__v1__game_event__free_unpacked(ev, NULL);
}

void gf_event_problem_format(const gf_event_problem *problem, char *buf, size_t size)
{
    if (size == 0)
        return;
    if (problem->field[0])
        snprintf(buf, size, "%s: %s", problem->field, problem->why);
    else
        snprintf(buf, size, "%s", problem->why);
}

/* The next dot-separated token of *s into tok (NUL-terminated); false if none fits. */
static bool next_token(const char **s, char *tok, size_t size)
{
    const char *dot = strchr(*s, '.');
    size_t n = dot ? (size_t)(dot - *s) : strlen(*s);
    if (n == 0 || n >= size)
        return false;
    memcpy(tok, *s, n);
    tok[n] = '\0';
    *s += n + (dot != NULL);
    return true;
}

gf_err gf_event_check_subject(const char *subject, const event *ev, gf_event_problem *problem)
{
    static const char stored[] = GF_WIRE_SUBJ_EVENT_PARTITIONED ".";
    static const char produced[] = GF_WIRE_SUBJ_EVENT ".";
    const char *s = str(subject);
    char part[8] = "", player[GF_WIRE_ID_MAX + 2], type[GF_WIRE_NAME_MAX + 2];
    bool is_stored = strncmp(s, stored, sizeof stored - 1) == 0;
    if (is_stored)
        s += sizeof stored - 1;
    else if (strncmp(s, produced, sizeof produced - 1) == 0)
        s += sizeof produced - 1;
    else
        return bad(problem, "subject", "is not an event subject (%s.> or %s.>)",
                   GF_WIRE_SUBJ_EVENT_PARTITIONED, GF_WIRE_SUBJ_EVENT);
    if ((is_stored && !next_token(&s, part, sizeof part)) ||
        !next_token(&s, player, sizeof player) || !next_token(&s, type, sizeof type) || *s)
        return bad(problem, "subject", "does not have the event subject's tokens");
    if (strcmp(player, str(ev->player_id)) != 0)
        return bad(problem, "subject", "names player '%s', the event '%s'", player,
                   str(ev->player_id));
    if (strcmp(type, str(ev->event_type)) != 0)
        return bad(problem, "subject", "names type '%s', the event '%s'", type,
                   str(ev->event_type));
    if (is_stored) {
        char want[8];
        snprintf(want, sizeof want, "%u",
                 (unsigned)gf_partition_of(ev->player_id, GF_WIRE_EVENT_PARTITIONS));
        if (strcmp(part, want) != 0)
            return bad(problem, "subject", "names partition %s, the player maps to %s", part, want);
    }
    return GF_OK;
}
