/*
 * period.h — the period a board's scores belong to: none (all time), daily or
 * weekly, in UTC. Weeks are ISO 8601 weeks: they start Monday 00:00 UTC and belong
 * to the year of their Thursday, so 2021-01-03 is in 2020-W53 and 2024-12-30 in
 * 2025-W01.
 *
 *   kind    id            start .. end (end exclusive)
 *   none    "all"         0 .. INT64_MAX
 *   daily   "2026-11-30"  that day 00:00 .. the next day 00:00
 *   weekly  "2026-W49"    Monday 00:00 .. the next Monday 00:00
 *
 * The id names the board's period in keys and subjects (a token). Computed with
 * integer civil-calendar arithmetic (no time zone, no locale, reentrant).
 */
#ifndef GAMEFN_PERIOD_H
#define GAMEFN_PERIOD_H

#include <stdint.h>

#include "gamefn/err.h"

typedef enum gf_period_kind {
    GF_PERIOD_NONE = 0,
    GF_PERIOD_DAILY,
    GF_PERIOD_WEEKLY,
} gf_period_kind;

typedef struct gf_period {
    char id[16];
    int64_t start_unix_ms;
    int64_t end_unix_ms;
} gf_period;

#define GF_PERIOD_MAX_UNIX_MS INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */

/* unix_ms: 0..GF_PERIOD_MAX_UNIX_MS; GF_ERR_INVALID otherwise or for an unknown kind. */
gf_err gf_period_of(gf_period_kind kind, int64_t unix_ms, gf_period *out);

#endif
