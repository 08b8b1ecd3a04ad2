/*
 * wire_error.c — error replies: ErrorCode <-> gf_err, the Error body and the header
 * values (see gamefn/wire_error.h).
 *
 * Design notes:
 *  - Error text goes into a NATS header and into a proto3 string. A header value
 *    must not contain CR/LF, and proto3 parsers in Go, Java or protobufjs refuse
 *    invalid UTF-8 in string fields (protobuf-c does not check). So every text is
 *    sanitized once, here: control characters become spaces, invalid UTF-8 bytes
 *    become '?', and the result is cut on a character boundary.
 *
 * Folder runtime/src/wire/: the wire conventions that are code rather than constants
 * (error replies, the event partition), for functions and clients alike. Pure: no
 * NATS, no libsodium (library gamefn_wire). It may use core/.
 */
#include "gamefn/wire_error.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/utf8.h"
#include "gamefn/v1/error.pb-c.h"

/* Copies s into out (cap bytes + NUL) as header-safe UTF-8; see the design notes. */
static void sanitize(const char *s, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t avail = strlen((const char *)p), o = 0;
    while (avail > 0) {
        size_t n = gf_utf8_char_len((const char *)p, avail);
        if (n == 0 || (n == 1 && (p[0] < 0x20 || p[0] == 0x7F))) {
            if (o + 1 > cap)
                break;
            out[o++] = n == 0 ? '?' : ' ';
            n = 1;
        } else {
            if (o + n > cap)
                break;
            memcpy(out + o, p, n);
            o += n;
        }
        p += n;
        avail -= n;
    }
    out[o] = '\0';
}

/* Names indexed by gamefn.v1.ErrorCode number. */
static const char *const code_names[] = {
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNSPECIFIED] = "UNSPECIFIED",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND] = "NOT_FOUND",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_CONFLICT] = "CONFLICT",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNAVAILABLE] = "UNAVAILABLE",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_TIMEOUT] = "TIMEOUT",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_INTERNAL] = "INTERNAL",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
    [GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNIMPLEMENTED] = "UNIMPLEMENTED",
};
#define CODE_COUNT ((int)(sizeof code_names / sizeof code_names[0]))

const char *gf_wire_code_name(int code)
{
    if (code < 0 || code >= CODE_COUNT || code_names[code] == NULL)
        return "UNKNOWN";
    return code_names[code];
}

int gf_wire_code_from_err(gf_err err)
{
    switch (err) {
    case GF_OK:
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNSPECIFIED;
    case GF_ERR_INVALID:
    case GF_ERR_PERMANENT: /* a request that can never succeed as sent */
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT;
    case GF_ERR_NOT_FOUND:
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND;
    case GF_ERR_CONFLICT:
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_CONFLICT;
    case GF_ERR_TIMEOUT:
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_TIMEOUT;
    case GF_ERR_NATS: /* the backend is having trouble: transient for the client */
    case GF_ERR_UNAVAILABLE:
    case GF_ERR_RETRY:
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNAVAILABLE;
    default: /* NOMEM, IO, CONFIG and anything new: the server's own failure */
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_INTERNAL;
    }
}

gf_err gf_wire_err_from_code(int code)
{
    switch (code) {
    case GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT:
        return GF_ERR_INVALID;
    case GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND:
        return GF_ERR_NOT_FOUND;
    case GAMEFN__V1__ERROR_CODE__ERROR_CODE_CONFLICT:
        return GF_ERR_CONFLICT;
    case GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNAVAILABLE:
    case GAMEFN__V1__ERROR_CODE__ERROR_CODE_RESOURCE_EXHAUSTED: /* retry later */
        return GF_ERR_UNAVAILABLE;
    case GAMEFN__V1__ERROR_CODE__ERROR_CODE_TIMEOUT:
        return GF_ERR_TIMEOUT;
    default: /* INTERNAL, FAILED_PRECONDITION, UNIMPLEMENTED, 0, unknown */
        return GF_ERR_PERMANENT;
    }
}

static bool code_known_error(int code)
{
    return code > 0 && code < CODE_COUNT && code_names[code] != NULL;
}

gf_err gf_wire_error_build(gf_wire_error *out, int code, const char *field, uint32_t retry_after_ms,
                           const char *fmt, ...)
{
    char text[4 * GF_WIRE_TEXT_MAX];
    Gamefn__V1__Error msg = GAMEFN__V1__ERROR__INIT;
    memset(out, 0, sizeof *out);
    if (!code_known_error(code) || fmt == NULL)
        return GF_ERR_INVALID;

    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);

    uint8_t *body = NULL;
    char message[GF_WIRE_TEXT_MAX + 1], field_clean[GF_WIRE_FIELD_MAX + 1];
    sanitize(text, message, GF_WIRE_TEXT_MAX);
    sanitize(field, field_clean, GF_WIRE_FIELD_MAX);
    msg.code = (Gamefn__V1__ErrorCode)code;
    msg.message = message;
    msg.field = field_clean;
    msg.retry_after_ms = retry_after_ms;
    size_t len = gamefn__v1__error__get_packed_size(&msg);
    body = malloc(len > 0 ? len : 1);
    if (body == NULL)
        return GF_ERR_NOMEM;
    gamefn__v1__error__pack(&msg, body);

    out->code = code;
    snprintf(out->code_header, sizeof out->code_header, "%d", code);
    memcpy(out->message, message, sizeof message);
    memcpy(out->field, field_clean, sizeof field_clean);
    out->retry_after_ms = retry_after_ms;
    out->body = body;
    out->body_len = len;
    return GF_OK;
}

gf_err gf_wire_error_text(gf_wire_error *out, int code, const char *field, uint32_t retry_after_ms,
                          const char *text, const char *fallback)
{
    const char *what = text && text[0] ? text : fallback ? fallback : "";
    size_t flen = field ? strlen(field) : 0;
    if (flen == 0 ||
        (strncmp(what, field, flen) == 0 && what[flen] == ':' && what[flen + 1] == ' '))
        return gf_wire_error_build(out, code, field, retry_after_ms, "%s", what);
    return gf_wire_error_build(out, code, field, retry_after_ms, "%s: %s", field, what);
}

gf_err gf_wire_error_from_err(gf_wire_error *out, gf_err err, const char *field, const char *text)
{
    int code = gf_wire_code_from_err(err);
    if (code == GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNSPECIFIED) {
        memset(out, 0, sizeof *out);
        return GF_ERR_INVALID; /* GF_OK is not an error */
    }
    return gf_wire_error_text(out, code, field, 0, text, gf_err_str(err));
}

void gf_wire_error_fini(gf_wire_error *e)
{
    if (e == NULL)
        return;
    free(e->body);
    memset(e, 0, sizeof *e);
}

/* Decimal code from a header value; INTERNAL when it is not a positive int. */
static int parse_code(const char *s)
{
    if (s == NULL || s[0] < '0' || s[0] > '9')
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_INTERNAL;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0 || v > INT_MAX)
        return GAMEFN__V1__ERROR_CODE__ERROR_CODE_INTERNAL;
    return (int)v;
}

gf_err gf_wire_reply_check(const char *code_header, const char *message_header, const uint8_t *body,
                           size_t body_len, gf_wire_error *out)
{
    memset(out, 0, sizeof *out);
    if (code_header == NULL && message_header == NULL)
        return GF_OK;

    out->code = parse_code(code_header);
    sanitize(message_header, out->message, GF_WIRE_TEXT_MAX);
    Gamefn__V1__Error *e = NULL;
    if (body != NULL && body_len > 0)
        e = gamefn__v1__error__unpack(NULL, body_len, body);
    if (e != NULL && e->code != GAMEFN__V1__ERROR_CODE__ERROR_CODE_UNSPECIFIED) {
        out->code = (int)e->code;
        if (e->message != NULL && e->message[0] != '\0')
            sanitize(e->message, out->message, GF_WIRE_TEXT_MAX);
        sanitize(e->field, out->field, GF_WIRE_FIELD_MAX);
        out->retry_after_ms = e->retry_after_ms;
    }
    if (e != NULL)
        gamefn__v1__error__free_unpacked(e, NULL);
    snprintf(out->code_header, sizeof out->code_header, "%d", out->code);
    return gf_wire_err_from_code(out->code);
}
