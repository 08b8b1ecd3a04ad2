/*
 * why.h — writing the reason for a refusal into an optional caller buffer (private to
 * the runtime). The validators (names.c), nkey parsing and $SRV validation report why
 * they refuse something this way, and the caller decides whether and where to log it.
 */
#ifndef GAMEFN_CORE_WHY_H
#define GAMEFN_CORE_WHY_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Formats into why[0..why_size) when why is not NULL (always NUL-terminated, cut to
 * fit). Returns false, so a check can end with `return gf__why(why, size, "...")`. */
bool gf__why(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bool gf__whyv(char *why, size_t why_size, const char *fmt, va_list ap);

#endif
