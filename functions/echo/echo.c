/* echo.c — the echo function's logic and config table. */
#include "echo.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const gf_cfg_field echo_fields[] = {
    {.key = "max_payload",
     .type = GF_CFG_SIZE,
     .offset = offsetof(echo_config, max_payload),
     .def = "64KiB",
     .min = 1,
     .max = 1048576,
     .help = "largest request accepted"},
    {.key = "delay",
     .type = GF_CFG_DURATION,
     .offset = offsetof(echo_config, delay_ms),
     .def = "0",
     .min = 0,
     .max = 60000,
     .help = "artificial processing time per request"},
    {.key = "prefix",
     .type = GF_CFG_STRING,
     .offset = offsetof(echo_config, prefix),
     .def = NULL,
     .help = "text prepended to every answer"},
};

const gf_cfg_table echo_config_table = {
    .name = "echo",
    .size = sizeof(echo_config),
    .fields = echo_fields,
    .nfields = sizeof echo_fields / sizeof echo_fields[0],
};

gf_err echo_answer(const echo_config *cfg, const uint8_t *payload, size_t len, uint8_t **out,
                   size_t *out_len, char *why, size_t why_size)
{
    *out = NULL;
    *out_len = 0;
    if (len > (size_t)cfg->max_payload) {
        snprintf(why, why_size, "payload of %zu bytes exceeds max_payload %lld", len,
                 (long long)cfg->max_payload);
        return GF_ERR_INVALID;
    }
    size_t plen = cfg->prefix ? strlen(cfg->prefix) : 0;
    uint8_t *buf = malloc(plen + len + 1);
    if (!buf)
        return GF_ERR_NOMEM;
    if (plen)
        memcpy(buf, cfg->prefix, plen);
    if (len)
        memcpy(buf + plen, payload, len);
    *out = buf;
    *out_len = plen + len;
    return GF_OK;
}
