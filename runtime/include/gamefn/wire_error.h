/*
 * gamefn/wire_error.h — error replies: gf_err <-> gamefn.v1.ErrorCode, and the
 * headers and Error body of a reply (docs/PROTOCOL.md §3).
 *
 * A responder builds a gf_wire_error and sets the headers itself, e.g.
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
 * (Request endpoints do this for their handlers.) Pure: no NATS, no libsodium; links
 * gamefn_wire (protobuf-c for the Error body).
 * Threads: every function is reentrant; nothing here keeps state.
 * Ownership: gf_wire_error.body is malloc'd and owned by the caller
 * (gf_wire_error_fini()). Everything else writes into caller buffers.
 */
#ifndef GAMEFN_WIRE_ERROR_H
#define GAMEFN_WIRE_ERROR_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/limits.h"
#include "gamefn/subjects.h"

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

/* The one message format of PROTOCOL.md §3: "<field>: <what is wrong>" when there is a
 * field, else "<what is wrong>". `text` (may be NULL or empty: then `fallback`) is the
 * what; it is used as it is when it already starts with "<field>: ". */
gf_err gf_wire_error_text(gf_wire_error *out, int code, const char *field, uint32_t retry_after_ms,
                          const char *text, const char *fallback);

/* Same, for a gf_err: code = gf_wire_code_from_err(err), the text as above (the gf_err's
 * name, e.g. "timeout", when text is NULL or empty). */
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

#endif
