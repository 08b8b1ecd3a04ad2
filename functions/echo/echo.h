/*
 * echo.h — the first function: answers gamefn.v1.echo with the request's payload.
 *
 * It exists to exercise the whole path a real function takes (config -> connect ->
 * provision -> handler -> $SRV -> drain) and as the smallest example to copy.
 * Pure logic only: no NATS here (main.c wires it).
 */
#ifndef GAMEFN_ECHO_H
#define GAMEFN_ECHO_H

#include <stddef.h>
#include <stdint.h>

#include "gamefn/config.h"
#include "gamefn/err.h"

/* functions.echo in config. */
typedef struct echo_config {
    int64_t max_payload; /* bytes; larger requests get an invalid-argument error */
    int64_t delay_ms;    /* artificial processing time (demos and drain tests) */
    const char *prefix;  /* prepended to every answer */
} echo_config;

extern const gf_cfg_table echo_config_table;

/* Builds the answer: prefix + payload. *out is malloc'd (caller frees). On
 * GF_ERR_INVALID, `why` says what is wrong. */
gf_err echo_answer(const echo_config *cfg, const uint8_t *payload, size_t len, uint8_t **out,
                   size_t *out_len, char *why, size_t why_size);

#endif
