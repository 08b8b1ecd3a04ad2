/*
 * config_units.h — private: durations and sizes with a reason on failure, for the
 * walker's error messages. The public gf_config_parse_duration_ms/_size wrap these.
 *
 *   duration: "0", or one or more <digits><unit> terms with units in decreasing order:
 *             "250ms", "5s", "2m", "1h", "7d", "1h30m". Stored as milliseconds.
 *   size:     <digits>[unit]; unit (case-insensitive) B, KB/MB/GB/TB (1000^n) or
 *             KiB/MiB/GiB/TiB (1024^n); no unit = bytes.
 * Negative values, fractions, spaces, unknown units and int64 overflow are refused.
 */
#ifndef GAMEFN_CONFIG_UNITS_H
#define GAMEFN_CONFIG_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool gf__cfg_units_duration(const char *text, int64_t *out, char *why, size_t why_size);
bool gf__cfg_units_size(const char *text, int64_t *out, char *why, size_t why_size);

#endif
