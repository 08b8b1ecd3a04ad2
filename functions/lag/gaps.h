/*
 * gaps.h — the gap observer: one headers-only ordered consumer over the whole event
 * stream feeding gamefn/gap_tracker.h with (Gamefn-Source, Gamefn-Source-Seq, stored
 * time).
 *
 * Why here: every source numbers its events 1, 2, 3... but its events go to every
 * partition (the partition is the player's), and each partition is consumed on its own,
 * by whichever replica owns it at the moment. No consumer sees a source's whole
 * sequence, so none can tell a lost event from one in another partition. The lag
 * monitor's leader reads the stream itself, in stream order, headers only (no payload
 * crosses the wire): it sees every source's every stored event, whatever the consumer
 * groups do, so a consumer rebalance cannot look like a gap.
 *
 * Where it starts: at (now - lookback) when a monitor becomes leader. The tracker sets
 * each source's floor just below the first event it sees, so the past raises no alarm;
 * a hole already open before the start is not seen by the new leader (it was reported
 * by the previous one, in its log and alerts-free counters). An ordered consumer
 * restarts by itself after a missed delivery (nats.c resubscribes from the next stream
 * sequence), so the observer never skips a stored event while it runs.
 *
 * Clock: stored times (the server's), advanced by lag_gaps_pump with the wall clock only
 * while caught up, so a reader far behind never calls a hole overdue early.
 *
 * Ownership: lag_gaps_start allocates, lag_gaps_stop unsubscribes (the ordered consumer is
 * ephemeral and goes with it) and frees. Threads: one thread (the monitor's).
 */
#ifndef GAMEFN_LAG_GAPS_H
#define GAMEFN_LAG_GAPS_H

#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"
#include "gamefn/v1/lag.pb-c.h"
#include "lag_config.h"

#define LAG_HDR_SOURCE     "Gamefn-Source"
#define LAG_HDR_SOURCE_SEQ "Gamefn-Source-Seq"

typedef struct lag_gaps lag_gaps;

/* Subscribes to cfg->stream from start_unix_ms on (<= 0: from its first event). */
gf_err lag_gaps_start(natsConnection *nc, jsCtx *js, const lag_gap_config *cfg,
                      int64_t start_unix_ms, lag_gaps **out, char *why, size_t why_size);

/* Handles what arrives for up to budget_ms (it is the monitor's wait between polls). */
void lag_gaps_pump(lag_gaps *g, int64_t budget_ms);

/* Fills the report's gap part: summary and up to cfg->max_listed open suspected gaps
 * (allocated with malloc into report->open_gaps; lag_report_clear frees them). */
gf_err lag_gaps_report(const lag_gaps *g, Gamefn__V1__LagReport *report);

void lag_gaps_stop(lag_gaps *g);

#endif
