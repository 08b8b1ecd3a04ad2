/*
 * gamefn/tickets/problem.h — the typed error of the tickets library: what a request
 * handler needs to answer (the wire code, the request field, the text).
 *
 * Every function of the library that can refuse something returns a gf_err and, when
 * given a gf_tickets_problem, fills it:
 *   code     gamefn.v1.ErrorCode number (INVALID_ARGUMENT, FAILED_PRECONDITION, ...)
 *   field    the offending field as a path ("members[2].rating"), "" when none
 *   message  "<field>: <what is wrong>" when there is a field, else "<what is wrong>";
 *            UTF-8 without control characters, at most 255 bytes
 * A request handler copies the three into gf_reply (code, field, error). The message is
 * for people: clients branch on code and field, never on the text.
 *
 * Pure; reentrant. A problem is plain data owned by the caller.
 */
#ifndef GAMEFN_TICKETS_PROBLEM_H
#define GAMEFN_TICKETS_PROBLEM_H

#include "gamefn/err.h"
#include "gamefn/limits.h"

typedef struct gf_tickets_problem {
    int code;                       /* gamefn.v1.ErrorCode number; 0 when nothing was refused */
    char field[GF_WIRE_FIELD_MAX];  /* sized as gf_reply.field: at most 127 bytes */
    char message[GF_WIRE_TEXT_MAX]; /* sized as gf_reply.error: at most 255 bytes */
} gf_tickets_problem;

/* Fills *p (NULL is fine: nothing happens) and returns `err`, so a refusal is one line:
 *   return gf_tickets_refuse(p, GF_ERR_INVALID, C_INVALID, "members[0].rating", "is NaN");
 * `field` may be NULL or "". */
gf_err gf_tickets_refuse(gf_tickets_problem *p, gf_err err, int code, const char *field,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Zeroes *p (NULL is fine). */
void gf_tickets_problem_clear(gf_tickets_problem *p);

#endif
