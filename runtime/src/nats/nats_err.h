/*
 * nats_err.h — the one place nats.c statuses become gf_err: gf_nats_err (public, in
 * gamefn/conn.h) and the runtime's private variants.
 */
#ifndef GAMEFN_NATS_ERR_H
#define GAMEFN_NATS_ERR_H

#include <nats/nats.h>

#include "gamefn/conn.h"
#include "gamefn/err.h"

/* gf_nats_err (gamefn/conn.h), but a JetStream "wrong last sequence" (jsErrCode 10071,
 * docs/NATS-FACTS.md §7) is GF_ERR_CONFLICT. */
gf_err gf__nats_js_err(natsStatus s, jsErrCode jerr);

/* nats_GetLastError() text for the calling thread, or natsStatus_GetText(s). Never NULL. */
const char *gf__nats_last_error(natsStatus s);

#endif
