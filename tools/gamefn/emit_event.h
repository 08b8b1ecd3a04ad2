/*
 * emit_event.h — `gamefn emit`'s events from flags or from lines (emit_cmd.c runs
 * them through the producer). Pure: no NATS, no files.
 *
 * One vocabulary for both: a key and a value, the key being the long flag's name.
 *
 *   player, type, match, occurred (Unix ms)             every event
 *   victim, weapon, headshot (true/false), distance     type kill
 *   delta, board, reason                                type score
 *   from, to                                            type zone_change
 *   signature, message, stack, build, platform          type crash
 *   attr (KEY=VALUE, repeatable), data, content-type    any other type
 *
 * A line is logfmt: space-separated key=value pairs, a value in double quotes when
 * it holds spaces, with \" \\ \n \t escapes inside the quotes:
 *
 *   player=p-alice type=kill victim=p-bob weapon="rocket launcher" headshot=true
 *   player=p-alice type=level_up attr=level=7 attr=mode=ranked
 *   type=server_crash signature=0xdead stack="frame 1\nframe 2"
 *
 * Empty lines and lines starting with '#' are skipped (gf_emit_line returns 1).
 *
 * Ownership: an event's strings point into the caller's buffers (the line, which
 * gf_emit_line unescapes in place, or argv); a gf_emit_event allocates nothing.
 */
#ifndef GAMEFN_CLI_EMIT_EVENT_H
#define GAMEFN_CLI_EMIT_EVENT_H

#include <stddef.h>

#include "gamefn/producer.h"

enum { GF_EMIT_ATTRS_MAX = 17 }; /* one more than the wire allows: validation says why */

typedef struct gf_emit_event {
    gf_event ev;
    gf_event_attr attrs[GF_EMIT_ATTRS_MAX];
    size_t nattrs;
} gf_emit_event;

void gf_emit_event_init(gf_emit_event *e);

/* Sets one key. 0, or -1 with the reason in why ("unknown key 'x'", "delta: not an
 * integer"). `value` must outlive the event; attr's value is split in place at its
 * first '='. */
int gf_emit_set(gf_emit_event *e, const char *key, char *value, char *why, size_t why_size);

/* Parses one line (modified in place). 0 = an event, 1 = nothing (blank or comment),
 * -1 = malformed (why says what). */
int gf_emit_line(char *line, gf_emit_event *e, char *why, size_t why_size);

#endif
