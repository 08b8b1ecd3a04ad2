/* problem.c — the library's typed error (see gamefn/tickets/problem.h). */
#include "gamefn/tickets/problem.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
