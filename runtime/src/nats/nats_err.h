/*
 * nats_err.h — the one place nats.c statuses become gf_err (private to the runtime).
 */
#ifndef GAMEFN_NATS_ERR_H
#define GAMEFN_NATS_ERR_H

#include <nats/nats.h>

#include "gamefn/err.h"

/* NATS_OK -> GF_OK; NATS_TIMEOUT -> GF_ERR_TIMEOUT; NATS_NOT_FOUND -> GF_ERR_NOT_FOUND;
 * NATS_NO_RESPONDERS / connection closed / draining -> GF_ERR_UNAVAILABLE;
 * NATS_NO_MEMORY -> GF_ERR_NOMEM; NATS_INVALID_ARG -> GF_ERR_INVALID; else GF_ERR_NATS. */
gf_err gf__nats_err(natsStatus s);

/* Same, but a JetStream "wrong last sequence" (jsErrCode 10071, docs/NATS-FACTS.md §7)
 * is GF_ERR_CONFLICT. */
gf_err gf__nats_js_err(natsStatus s, jsErrCode jerr);

/* nats_GetLastError() text for the calling thread, or natsStatus_GetText(s). Never NULL. */
const char *gf__nats_last_error(natsStatus s);

#endif
