/* problem.c — the library's typed error (see gamefn/tickets/problem.h). */
#include "gamefn/tickets/problem.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

gf_err gf_tickets_refuse(gf_tickets_problem *p, gf_err err, int code, const char *field,
                         const char *fmt, ...)
{
    if (!p)
        return err;
    char what[GF_WIRE_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    p->code = code;
    snprintf(p->field, sizeof p->field, "%s", field ? field : "");
    if (p->field[0]) /* a field of at most 127 bytes, ": " and 126 bytes of text fit */
        snprintf(p->message, sizeof p->message, "%.127s: %.126s", p->field, what);
    else
        snprintf(p->message, sizeof p->message, "%s", what);
    return err;
}

void gf_tickets_problem_clear(gf_tickets_problem *p)
{
    if (p)
        memset(p, 0, sizeof *p);
}

gf_err gf_tk_decode_stored(const ProtobufCMessageDescriptor *desc, gf_tk_check_fn problem,
                           const char *what, const uint8_t *buf, size_t len, const char *key,
                           ProtobufCMessage **out, gf_tickets_problem *p)
{
    *out = protobuf_c_message_unpack(desc, NULL, len, buf);
    if (!*out)
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INTERNAL, NULL, "stored %s %s is not a %s",
                                 what, key ? key : "", desc->short_name);
    const char *why = problem(*out, key);
    if (why) {
        protobuf_c_message_free_unpacked(*out, NULL);
        *out = NULL;
        return gf_tickets_refuse(p, GF_ERR_INVALID, C_INTERNAL, NULL, "stored %s %s: %s", what,
                                 key ? key : "", why);
    }
    return GF_OK;
}
