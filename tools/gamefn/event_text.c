/*
 * event_text.c — GameEvent as a line or JSON (see event_text.h).
 */
#include "event_text.h"

#include <inttypes.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/v1/event.pb-c.h"

enum { TEXT_CUT = 80 };

/* s quoted and escaped, cut at TEXT_CUT bytes. */
static const char *quoted(const char *s, char *buf, size_t size)
{
    char cut[TEXT_CUT + 4];
    size_t n = strlen(s);
    if (n > TEXT_CUT) {
        memcpy(cut, s, TEXT_CUT);
        memcpy(cut + TEXT_CUT, "...", 4);
        s = cut;
    }
    return gf_log_quote(buf, size, s);
}

static void payload_line(FILE *f, const Gamefn__V1__GameEvent *ev)
{
    char q[4][256];
    switch (ev->payload_case) {
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL: {
        const Gamefn__V1__KillEvent *k = ev->kill;
        fprintf(f, " victim=%s weapon=%s%s distance=%.1fm", k->victim_player_id,
                quoted(k->weapon, q[0], sizeof q[0]), k->headshot ? " headshot" : "",
                (double)k->distance_m);
        break;
    }
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE: {
        const Gamefn__V1__ScoreEvent *s = ev->score;
        fprintf(f, " delta=%+" PRId64 " board=%s reason=%s", s->delta,
                s->board[0] ? s->board : "global", quoted(s->reason, q[0], sizeof q[0]));
        break;
    }
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE:
        fprintf(f, " from=%s to=%s", quoted(ev->zone_change->from_zone, q[0], sizeof q[0]),
                quoted(ev->zone_change->to_zone, q[1], sizeof q[1]));
        break;
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH: {
        const Gamefn__V1__CrashEvent *c = ev->crash;
        fprintf(f, " signature=%s build=%s platform=%s message=%s stack=%zuB",
                quoted(c->signature, q[0], sizeof q[0]), quoted(c->build, q[1], sizeof q[1]),
                quoted(c->platform, q[2], sizeof q[2]), quoted(c->message, q[3], sizeof q[3]),
                strlen(c->stack));
        break;
    }
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC: {
        const Gamefn__V1__GenericEvent *g = ev->generic;
        for (size_t i = 0; i < g->n_attributes; i++)
            fprintf(f, " %s=%s", g->attributes[i]->key,
                    quoted(g->attributes[i]->value, q[0], sizeof q[0]));
        if (g->data.len)
            fprintf(f, " data=%zuB", g->data.len);
        break;
    }
    default:
        fprintf(f, " (no payload)");
        break;
    }
}

void gf_cli_event_line(FILE *f, const gf_cli_stored *at, const uint8_t *data, size_t len)
{
    char when[GF_CLOCK_RFC3339_MAX];
    gf_clock_rfc3339(at->stored_unix_ms * 1000000, 3, when, sizeof when);
    Gamefn__V1__GameEvent *ev = gamefn__v1__game_event__unpack(NULL, len, data);
    if (!ev) {
        fprintf(f, "%s #%" PRIu64 " %s: undecodable payload, %zu bytes\n", when, at->stream_seq,
                at->subject, len);
        return;
    }
    fprintf(f, "%s #%" PRIu64 " %-11s %s#%" PRIu64, when, at->stream_seq, ev->event_type,
            ev->source_id, ev->source_seq);
    payload_line(f, ev);
    if (ev->match_id[0])
        fprintf(f, " match=%s", ev->match_id);
    if (ev->occurred_unix_ms && ev->occurred_unix_ms != at->stored_unix_ms) {
        char occurred[GF_CLOCK_RFC3339_MAX];
        fprintf(f, " occurred=%s",
                gf_clock_rfc3339(ev->occurred_unix_ms * 1000000, 3, occurred, sizeof occurred));
    }
    fputc('\n', f);
    gamefn__v1__game_event__free_unpacked(ev, NULL);
}

static json_t *payload_json(const Gamefn__V1__GameEvent *ev)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = 0;
    switch (ev->payload_case) {
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL:
        rc = json_object_set_new(o, "victim_player_id", json_string(ev->kill->victim_player_id)) |
             json_object_set_new(o, "weapon", json_string(ev->kill->weapon)) |
             json_object_set_new(o, "headshot", json_boolean(ev->kill->headshot)) |
             json_object_set_new(o, "distance_m", json_real(ev->kill->distance_m));
        break;
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE:
        rc = json_object_set_new(o, "delta", json_integer(ev->score->delta)) |
             json_object_set_new(o, "board", json_string(ev->score->board)) |
             json_object_set_new(o, "reason", json_string(ev->score->reason));
        break;
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE:
        rc = json_object_set_new(o, "from_zone", json_string(ev->zone_change->from_zone)) |
             json_object_set_new(o, "to_zone", json_string(ev->zone_change->to_zone));
        break;
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH:
        rc = json_object_set_new(o, "signature", json_string(ev->crash->signature)) |
             json_object_set_new(o, "message", json_string(ev->crash->message)) |
             json_object_set_new(o, "stack", json_string(ev->crash->stack)) |
             json_object_set_new(o, "build", json_string(ev->crash->build)) |
             json_object_set_new(o, "platform", json_string(ev->crash->platform));
        break;
    case GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC: {
        json_t *attrs = json_object();
        for (size_t i = 0; attrs && i < ev->generic->n_attributes; i++)
            rc |= json_object_set_new(attrs, ev->generic->attributes[i]->key,
                                      json_string(ev->generic->attributes[i]->value));
        rc |=
            json_object_set_new(o, "attributes", attrs) |
            json_object_set_new(o, "data_bytes", json_integer((json_int_t)ev->generic->data.len)) |
            json_object_set_new(o, "content_type", json_string(ev->generic->content_type));
        break;
    }
    default:
        break;
    }
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *gf_cli_event_json(const gf_cli_stored *at, const uint8_t *data, size_t len)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = json_object_set_new(o, "stream_seq", json_integer((json_int_t)at->stream_seq)) |
             json_object_set_new(o, "stored_unix_ms", json_integer(at->stored_unix_ms)) |
             json_object_set_new(o, "subject", json_string(at->subject));
    Gamefn__V1__GameEvent *ev = gamefn__v1__game_event__unpack(NULL, len, data);
    if (!ev) {
        rc |= json_object_set_new(o, "undecodable_bytes", json_integer((json_int_t)len));
    } else {
        /* json_string refuses invalid UTF-8 (NULL): such a field is left out */
        rc |= json_object_set_new(o, "event_id", json_string(ev->event_id)) |
              json_object_set_new(o, "source_id", json_string(ev->source_id)) |
              json_object_set_new(o, "source_seq", json_integer((json_int_t)ev->source_seq)) |
              json_object_set_new(o, "player_id", json_string(ev->player_id)) |
              json_object_set_new(o, "event_type", json_string(ev->event_type)) |
              json_object_set_new(o, "occurred_unix_ms", json_integer(ev->occurred_unix_ms)) |
              json_object_set_new(o, "match_id", json_string(ev->match_id)) |
              json_object_set_new(o, "payload", payload_json(ev));
        gamefn__v1__game_event__free_unpacked(ev, NULL);
    }
    (void)rc; /* a field that could not be built is left out; the rest stands */
    return o;
}
