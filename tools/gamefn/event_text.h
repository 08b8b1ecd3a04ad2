/*
 * event_text.h — a stored GameEvent for people (one line) and for scripts (a JSON
 * object), as `gamefn history` prints them. Pure (no NATS): library gamefn_cli_format,
 * unit-tested in tests/unit/test_event_text.c.
 *
 * A body that does not decode as a GameEvent is shown as such ("undecodable payload,
 * N bytes"), never guessed at; free text (reasons, crash messages) is quoted and
 * escaped, and long texts are cut, so one event is always one line.
 */
#ifndef GAMEFN_CLI_EVENT_TEXT_H
#define GAMEFN_CLI_EVENT_TEXT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where the event was stored. */
typedef struct gf_cli_stored {
    uint64_t stream_seq;
    int64_t stored_unix_ms;
    const char *subject;
} gf_cli_stored;

/* One line (with its newline). */
void gf_cli_event_line(FILE *f, const gf_cli_stored *at, const uint8_t *data, size_t len);

/* A new JSON object (NULL when out of memory). */
json_t *gf_cli_event_json(const gf_cli_stored *at, const uint8_t *data, size_t len);

#endif
