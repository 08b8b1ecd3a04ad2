/*
 * retention.c — the outage-capacity check (see retention.h).
 */
#include "retention.h"

#include <inttypes.h>
#include <stdio.h>

#include "gamefn/config.h"

uint64_t lag_retention_needed(const lag_retention_input *in)
{
    /* peak <= 1e7 and outage <= 30 d (2.6e9 ms) by config: the product fits in 64 bits */
    uint64_t product = (uint64_t)in->peak_events_per_s * (uint64_t)in->outage_ms;
    return product / 1000 + (product % 1000 != 0);
}

static const char *consequence(const lag_retention_input *in)
{
    return in->discard_new ? "the stream then refuses new events and producers spool them until "
                             "consumers catch up"
                           : "a consumer stopped that long loses the oldest events to retention";
}

size_t lag_retention_check(const lag_retention_input *in, void (*warn)(void *ctx, const char *text),
                           void *ctx)
{
    char text[512], outage[32], a[32];
    size_t n = 0;
    uint64_t needed = lag_retention_needed(in);
    gf_config_format_duration(in->outage_ms, outage, sizeof outage);

    if (in->max_msgs > 0 && (uint64_t)in->max_msgs < needed) {
        snprintf(text, sizeof text,
                 "stream %s keeps at most %" PRId64 " events (max_msgs), but an outage of %s at "
                 "%" PRId64 " events/s needs %" PRIu64 ": %s",
                 in->stream, in->max_msgs, outage, in->peak_events_per_s, needed, consequence(in));
        warn(ctx, text);
        n++;
    }
    double bytes = (double)needed * (double)in->avg_event_size;
    if (in->max_bytes > 0 && (double)in->max_bytes < bytes) {
        snprintf(text, sizeof text,
                 "stream %s keeps at most %s (max_bytes), but an outage of %s at %" PRId64
                 " events/s of %" PRId64 " bytes needs %.0f bytes (%.1f MB): %s",
                 in->stream, gf_config_format_size(in->max_bytes, a, sizeof a), outage,
                 in->peak_events_per_s, in->avg_event_size, bytes, bytes / 1e6, consequence(in));
        warn(ctx, text);
        n++;
    }
    if (in->max_age_ms > 0 && in->max_age_ms < in->outage_ms) {
        snprintf(text, sizeof text,
                 "stream %s keeps events %s (max_age), less than an outage of %s: a consumer "
                 "stopped that long loses the events older than %s",
                 in->stream, gf_config_format_duration(in->max_age_ms, a, sizeof a), outage, a);
        warn(ctx, text);
        n++;
    }
    return n;
}
