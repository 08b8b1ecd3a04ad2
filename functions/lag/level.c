/*
 * level.c — lag levels and their debouncing (see level.h).
 */
#include "level.h"

#include <inttypes.h>
#include <stdio.h>

#include "gamefn/config.h"

const char *lag_level_name(lag_level l)
{
    static const char *const names[] = {"ok", "warning", "critical", "emergency"};
    return (unsigned)l < LAG_LEVELS ? names[l] : "unknown";
}

char *lag_format_age(int64_t ms, char *buf, size_t size)
{
    if (ms < 1000)
        snprintf(buf, size, "%" PRId64 "ms", ms < 0 ? 0 : ms);
    else if (ms < 60000)
        snprintf(buf, size, "%.1fs", (double)ms / 1e3);
    else if (ms < 3600000)
        snprintf(buf, size, "%.1fm", (double)ms / 6e4);
    else if (ms < 86400000)
        snprintf(buf, size, "%.1fh", (double)ms / 3.6e6);
    else
        snprintf(buf, size, "%.1fd", (double)ms / 8.64e7);
    return buf;
}

/* The retention rule: true (and the reason) when the oldest unacked event is past half of
 * what the stream keeps, by age, count or bytes. */
static bool past_half(const lag_input *in, uint64_t behind, char *reason, size_t size)
{
    char a[32], b[32];
    if (in->oldest_seq == 0)
        return false;
    if (in->max_age_ms > 0 && in->oldest_age_ms > in->max_age_ms / 2) {
        snprintf(reason, size, "oldest unacked event is %s old, over half of max_age %s",
                 lag_format_age(in->oldest_age_ms, a, sizeof a),
                 gf_config_format_duration(in->max_age_ms, b, sizeof b));
        return true;
    }
    if (in->max_msgs > 0 && behind > (uint64_t)in->max_msgs / 2) {
        snprintf(reason, size,
                 "%" PRIu64
                 " events stored since the oldest unacked, over half of max_msgs %" PRId64,
                 behind, in->max_msgs);
        return true;
    }
    if (in->max_bytes > 0 && in->stream_msgs > 0) {
        double bytes = (double)behind * ((double)in->stream_bytes / (double)in->stream_msgs);
        if (bytes > (double)in->max_bytes / 2) {
            snprintf(reason, size,
                     "about %.0f bytes stored since the oldest unacked, over half of max_bytes %s",
                     bytes, gf_config_format_size(in->max_bytes, b, sizeof b));
            return true;
        }
    }
    return false;
}

void lag_classify(const lag_thresholds *t, const lag_input *in, lag_verdict *out)
{
    uint64_t lag = in->pending + in->ack_pending;
    if (lag < in->pending)
        lag = UINT64_MAX;
    uint64_t behind = 0;
    if (in->oldest_seq > 0 && in->stream_last_seq >= in->oldest_seq) {
        behind = in->stream_last_seq - in->oldest_seq + 1;
        /* sequence numbers count deleted messages too (work queues, interest streams):
         * never more than the stream stores */
        if (behind > in->stream_msgs)
            behind = in->stream_msgs;
    }
    out->lag = lag;
    out->behind_msgs = behind;
    if (past_half(in, behind, out->reason, sizeof out->reason)) {
        out->level = LAG_EMERGENCY;
    } else if (lag > t->critical) {
        out->level = LAG_CRITICAL;
        snprintf(out->reason, sizeof out->reason, "lag %" PRIu64 " > critical %" PRIu64, lag,
                 t->critical);
    } else if (lag >= t->warning) {
        out->level = LAG_WARNING;
        snprintf(out->reason, sizeof out->reason, "lag %" PRIu64 " >= warning %" PRIu64, lag,
                 t->warning);
    } else {
        out->level = LAG_OK;
        snprintf(out->reason, sizeof out->reason, "lag %" PRIu64 " < warning %" PRIu64, lag,
                 t->warning);
    }
}

void lag_debounce_init(lag_debounce *d, lag_level level)
{
    *d = (lag_debounce){.level = level};
}

bool lag_debounce_step(lag_debounce *d, lag_level computed, int64_t now_ms, int64_t clear_after_ms)
{
    for (int k = 0; k < LAG_LEVELS; k++) {
        if ((int)computed > k) {
            d->below[k] = false;
        } else if (!d->below[k]) {
            d->below[k] = true;
            d->below_since[k] = now_ms;
        }
    }
    if (computed > d->level) {
        d->level = computed;
        return true;
    }
    /* The lowest level every poll of the trailing clear_after stayed at or below. */
    for (int k = 0; k < (int)d->level; k++) {
        if (d->below[k] && now_ms - d->below_since[k] >= clear_after_ms) {
            d->level = (lag_level)k;
            return true;
        }
    }
    return false;
}
