/*
 * config_error.h — private: filling gf_config_error the same way everywhere.
 *
 * The message is "file:line:column: key 'a.b': text"; the place is left out when
 * line is 0 and the key part when key is NULL or empty. Text that quotes input
 * goes through gf__cfg_error_quote() so control bytes never reach a terminal or log.
 */
#ifndef GAMEFN_CONFIG_ERROR_H
#define GAMEFN_CONFIG_ERROR_H

#include <stddef.h>

#include "gamefn/config.h"

/* err may be NULL. Overwrites whatever *err held. */
void gf__cfg_error_set(gf_config_error *err, const char *file, int line, int column,
                       const char *key, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

void gf__cfg_error_clear(gf_config_error *err);

/* Copies at most ~40 bytes of s[0..len) into buf, printable ASCII only (others as '?'),
 * with "..." when cut. Returns buf. */
char *gf__cfg_error_quote(char *buf, size_t size, const char *s, size_t len);

#endif
