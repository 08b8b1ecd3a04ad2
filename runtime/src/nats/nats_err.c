/*
 * nats_err.c — translation of nats.c statuses into gf_err, the one place it happens
 * (gf_nats_err is public: gamefn/conn.h).
 *
 * Folder runtime/src/nats/: everything that talks to nats.c directly for the rest of
 * the runtime: the connection (conn.c), status translation (here), nkeys (nkey.c), KV
 * compare-and-set (kv.c) and leases (lease.c). It may use core/ and config/. What it
 * relies on in nats.c 3.4.1 is in docs/NATS-FACTS.md.
 */
#include "nats_err.h"

gf_err gf_nats_err(natsStatus s)
{
    switch (s) {
    case NATS_OK:
        return GF_OK;
    case NATS_TIMEOUT:
        return GF_ERR_TIMEOUT;
    case NATS_NOT_FOUND:
        return GF_ERR_NOT_FOUND;
    case NATS_NO_RESPONDERS:
    case NATS_CONNECTION_CLOSED:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_DRAINING:
    case NATS_NO_SERVER:
    case NATS_STALE_CONNECTION:
        return GF_ERR_UNAVAILABLE;
    case NATS_NO_MEMORY:
        return GF_ERR_NOMEM;
    case NATS_INVALID_ARG:
    case NATS_INVALID_SUBJECT:
        return GF_ERR_INVALID;
    default:
        return GF_ERR_NATS;
    }
}

gf_err gf__nats_js_err(natsStatus s, jsErrCode jerr)
{
    if (s != NATS_OK && jerr == JSStreamWrongLastSequenceErr)
        return GF_ERR_CONFLICT;
    return gf_nats_err(s);
}

const char *gf__nats_last_error(natsStatus s)
{
    const char *text = nats_GetLastError(NULL);
    if (text && text[0])
        return text;
    return natsStatus_GetText(s);
}
