/*
 * err.c — names of gf_err values, for logs and error replies.
 *
 * Folder runtime/src/core/: what every other part of the runtime, and pure code
 * outside it, builds on: the error type (err.c), logging (log.c), the clock and the
 * RFC 3339 formatter (clock.c), the retry delay (backoff.c), the rules for names and
 * subjects (names.c) and the UTF-8 check (utf8.c), plus the wire constants
 * (gamefn/limits.h, gamefn/subjects.h). It uses libc only and no other folder.
 */
#include "gamefn/err.h"

static const char *const names[GF_ERR__COUNT] = {
    [GF_OK] = "ok",
    [GF_ERR_INVALID] = "invalid",
    [GF_ERR_NOMEM] = "nomem",
    [GF_ERR_IO] = "io",
    [GF_ERR_CONFIG] = "config",
    [GF_ERR_NATS] = "nats",
    [GF_ERR_TIMEOUT] = "timeout",
    [GF_ERR_CONFLICT] = "conflict",
    [GF_ERR_NOT_FOUND] = "not_found",
    [GF_ERR_UNAVAILABLE] = "unavailable",
    [GF_ERR_RETRY] = "retry",
    [GF_ERR_PERMANENT] = "permanent",
};

const char *gf_err_str(gf_err err)
{
    if ((int)err < 0 || err >= GF_ERR__COUNT || names[err] == 0)
        return "unknown";
    return names[err];
}
