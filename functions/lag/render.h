/*
 * render.h — a LagReport for people (`gamefn lag`) and for scripts (`gamefn lag --json`).
 * Pure: writes to a FILE, never NATS.
 *
 * Text: one header line (who polled, when, how long it took, the thresholds), one row per
 * consumer (pending, in flight, redelivered, lag, oldest unacked age, retention, level
 * and why), then the gap observer's counters and open suspected gaps, retention
 * warnings and errors. JSON: one object with the report's fields in snake_case, levels as
 * their names ("ok", "warning", "critical", "emergency"), times as Unix ms.
 */
#ifndef GAMEFN_LAG_RENDER_H
#define GAMEFN_LAG_RENDER_H

#include <stdint.h>
#include <stdio.h>

#include "gamefn/err.h"
#include "gamefn/v1/lag.pb-c.h"

/* now_unix_ms: for "as of 3.2s ago". */
void lag_render_text(FILE *f, const Gamefn__V1__LagReport *r, int64_t now_unix_ms);

/* One JSON object and a newline. GF_ERR_NOMEM / GF_ERR_IO on failure. */
gf_err lag_render_json(FILE *f, const Gamefn__V1__LagReport *r);

#endif
