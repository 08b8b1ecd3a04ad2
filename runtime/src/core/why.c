/* why.c — reasons into optional caller buffers (see why.h). */
#include "core/why.h"

#include <stdio.h>

bool gf__whyv(char *why, size_t why_size, const char *fmt, va_list ap)
{
    if (why != NULL && why_size > 0)
        vsnprintf(why, why_size, fmt, ap);
    return false;
}

bool gf__why(char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gf__whyv(why, why_size, fmt, ap);
    va_end(ap);
    return false;
}
