/*
 * level.h — how far behind a consumer is, and when that is worth an alert. Pure.
 *
 * The definitions (docs/EVENTS.md, "Lag"; the reference design's, taken literally):
 *   lag = pending + in flight (num_pending + num_ack_pending): the events the consumer
 *   has not acknowledged yet;
 *   OK        lag < warning                       (default 1,000)
 *   WARNING   warning <= lag <= critical           (default 10,000)
 *   CRITICAL  lag > critical
 *   EMERGENCY the oldest unacked event is past half of what the stream keeps: older
 *             than max_age / 2, or more than max_msgs / 2 events (max_bytes / 2 bytes,
 *             at the stream's average size) were stored from it on. A consumer that
 *             far behind loses events to retention if it stays down as long again.
 * EMERGENCY wins over the counts, whatever the lag.
 *
 * Debouncing (lag_debounce_step): a higher level is published at once; a lower one only
 * once every poll for clear_after has been at or below it (the published level is the
 * highest level of the trailing clear_after), so a consumer hovering around a
 * threshold does not flap. clear_after 0 publishes every change.
 *
 * Reentrant, no allocation.
 */
#ifndef GAMEFN_LAG_LEVEL_H
#define GAMEFN_LAG_LEVEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The numbers of gamefn.v1.LagLevel. */
typedef enum lag_level {
    LAG_OK = 0,
    LAG_WARNING = 1,
    LAG_CRITICAL = 2,
    LAG_EMERGENCY = 3,
    LAG_LEVELS
} lag_level;

const char *lag_level_name(lag_level l); /* "ok", "warning", "critical", "emergency" */

typedef struct lag_thresholds {
    uint64_t warning, critical; /* 1 <= warning <= critical */
} lag_thresholds;

/* One consumer at one poll, with its stream's limits and state. */
typedef struct lag_input {
    uint64_t pending, ack_pending;
    uint64_t oldest_seq;   /* the oldest unacked event's stream sequence; 0 = none */
    int64_t oldest_age_ms; /* its age at the poll */
    uint64_t stream_last_seq, stream_msgs, stream_bytes;
    int64_t max_age_ms, max_msgs, max_bytes; /* 0 = unlimited */
} lag_input;

typedef struct lag_verdict {
    lag_level level;
    uint64_t lag;         /* pending + ack_pending (saturating) */
    uint64_t behind_msgs; /* events stored from the oldest unacked on (0 = none) */
    char reason[160];     /* "lag 12000 > critical 10000" */
} lag_verdict;

void lag_classify(const lag_thresholds *t, const lag_input *in, lag_verdict *out);

/* The published level of one consumer and the trailing state that lowers it. */
typedef struct lag_debounce {
    lag_level level;
    bool below[LAG_LEVELS]; /* every poll since below_since[k] was <= k */
    int64_t below_since[LAG_LEVELS];
} lag_debounce;

/* Starts at `level` (the last one published, e.g. read back from the alert stream). */
void lag_debounce_init(lag_debounce *d, lag_level level);

/* Feeds one poll's level. Returns true when the published level changes; d->level is
 * then the new one. now_ms is any clock that does not go back (monotonic). */
bool lag_debounce_step(lag_debounce *d, lag_level computed, int64_t now_ms, int64_t clear_after_ms);

/* "4.2s", "12m", "3.5h", "850ms": an age for people. Always NUL-terminates; returns buf. */
char *lag_format_age(int64_t ms, char *buf, size_t size);

#endif
