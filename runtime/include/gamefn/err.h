/*
 * gamefn/err.h — the one error type of the whole runtime API.
 *
 * Every runtime function returns gf_err (GF_OK == 0) and writes results through
 * out-parameters. nats.c, libyaml and protobuf-c failures are translated once, at
 * the boundary where they happen (see runtime/src/nats/nats_err.h for nats.c).
 */
#ifndef GAMEFN_ERR_H
#define GAMEFN_ERR_H

#ifdef __cplusplus
extern "C" { /* included by gamefn/producer.h, which game servers in C++ use */
#endif

typedef enum gf_err {
    GF_OK = 0,
    GF_ERR_INVALID,     /* bad argument or malformed input */
    GF_ERR_NOMEM,       /* allocation failed */
    GF_ERR_IO,          /* file or OS error */
    GF_ERR_CONFIG,      /* configuration rejected */
    GF_ERR_NATS,        /* NATS / JetStream error not covered below */
    GF_ERR_TIMEOUT,     /* no answer in time: the outcome is unknown */
    GF_ERR_CONFLICT,    /* compare-and-set lost, or existing asset differs */
    GF_ERR_NOT_FOUND,   /* key, stream or consumer does not exist */
    GF_ERR_UNAVAILABLE, /* no responders, not connected, shutting down */
    GF_ERR_RETRY,       /* handler: transient failure, redeliver later */
    GF_ERR_PERMANENT,   /* handler: will never succeed, do not redeliver */
    GF_ERR__COUNT
} gf_err;

/* Static, never NULL: "ok", "invalid", ... */
const char *gf_err_str(gf_err err);

#ifdef __cplusplus
}
#endif

#endif
