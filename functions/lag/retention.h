/*
 * retention.h — can a stream hold a consumer outage at the peak rate? Pure.
 *
 * The reference design sizes the event buffer as peak rate x the longest outage to
 * absorb: 2,400 events/s x 5 min = 720,000 events (x 200 bytes = 144 MB). A stream
 * holds that only if every limit it has allows it:
 *   max_msgs  >= peak x outage                      (events)
 *   max_bytes >= peak x outage x avg_event_size      (bytes)
 *   max_age   >= outage                             (an event must outlive the outage)
 * A limit of 0 is unlimited. Each limit that falls short is one warning, in words an
 * operator can act on. With discard `new` the stream refuses events once full instead of
 * dropping the oldest: nothing stored is lost, but producers spool (or fail) until the
 * consumers catch up, which the warning says.
 *
 * `gamefn check-config` and `gamefn provision` check the configured stream (functions.lag:
 * retention_stream, peak_events_per_s, outage, avg_event_size); the lag monitor checks the
 * stream as the server has it at start and lists the warnings in its report.
 * Reentrant, no allocation.
 */
#ifndef GAMEFN_LAG_RETENTION_H
#define GAMEFN_LAG_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lag_retention_input {
    const char *stream;
    int64_t max_msgs, max_bytes, max_age_ms; /* 0 = unlimited */
    bool discard_new;
    int64_t peak_events_per_s; /* >= 1 */
    int64_t outage_ms;         /* >= 1 */
    int64_t avg_event_size;    /* bytes, >= 1 */
} lag_retention_input;

/* Events an outage needs: peak x outage (rounded up), saturating. */
uint64_t lag_retention_needed(const lag_retention_input *in);

/* Calls warn(ctx, text) once per limit that cannot hold the outage; returns how many.
 * text is borrowed for the call. */
size_t lag_retention_check(const lag_retention_input *in, void (*warn)(void *ctx, const char *text),
                           void *ctx);

#endif
