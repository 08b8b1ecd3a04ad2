/*
 * monitor.h — the lag monitor's leader: lease, polls, alerts, gap observer, report.
 *
 * Every replica runs one monitor thread; the holder of the lease `lag.monitor` (bucket
 * functions.lag.lease_bucket) is the leader and the only one that polls consumers,
 * reads the event stream for gaps, publishes alerts and writes the report. The others
 * wait for the lease (renewed every ttl/4; a dead leader is replaced within lease_ttl,
 * a stopped one at once because it gives the lease back).
 *
 * Each poll (every functions.lag.interval): lag_poll, then per consumer lag_classify and
 * lag_debounce_step; a change of the published level is one LagAlert on
 * gamefn.v1.alert.lag.<stream>.<consumer> in the alert stream, published with
 * Nats-Expected-Last-Subject-Sequence = that subject's last alert: the stream itself
 * is the record of every consumer's published level, so a new leader reads it back
 * (one last-message get per subject) and goes on from there instead of repeating or
 * missing a transition, and a deposed leader's stale write is refused (a conflict makes
 * the leader re-read the subject). A consumer that disappears while above OK gets one
 * last OK alert ("consumer no longer exists"). Then the report (LagReport) goes to KV
 * `<report_bucket>/report`, where gamefn.v1.lag.query reads it from any replica.
 * The leader acts only while its lease has more than ttl/5 left.
 *
 * A poll on demand: every monitor listens on gamefn.v1.lag.poll (core NATS; the query
 * endpoint publishes there for a `fresh` query, whichever replica answers it); the
 * leader polls at once, at most once per LAG_DEMAND_GAP_MS, so a flood of requests
 * costs the server no more than two polls a second.
 *
 * Ownership: lag_monitor_start copies nothing from cfg (borrowed: the function's config,
 * alive until fini) and borrows nc/js; lag_monitor_stop joins the thread, gives up the
 * lease and frees. Threads: the monitor's own thread only (lag_monitor_start and _stop
 * from the function's init / fini).
 */
#ifndef GAMEFN_LAG_MONITOR_H
#define GAMEFN_LAG_MONITOR_H

#include <nats/nats.h>

#include "gamefn/err.h"
#include "lag_config.h"

#define LAG_ALERT_SUBJECT "gamefn.v1.alert.lag" /* .<stream>.<consumer> */
#define LAG_QUERY_SUBJECT "gamefn.v1.lag.query"
#define LAG_POLL_SUBJECT  "gamefn.v1.lag.poll" /* core, no body: "leader, poll now" */
#define LAG_LEASE_KEY     "lag.monitor"
#define LAG_REPORT_KEY    "report"

enum { LAG_DEMAND_GAP_MS = 500 };

typedef struct lag_monitor lag_monitor;

gf_err lag_monitor_start(const lag_config *cfg, natsConnection *nc, jsCtx *js,
                         const char *instance_id, lag_monitor **out);
void lag_monitor_stop(lag_monitor *m);

#endif
