/*
 * producer_check.h — what the producer's integration tests share: servers with the
 * event subject mapping and stream EVENTS, and an independent check of what the
 * stream holds (read back message by message, not from the producer's counters).
 *
 * The check reads every message of the stream and requires of each: the body decodes
 * and validates (gamefn/event_check.h), its subject is the player's partition
 * (gf_event_check_subject), and the headers agree with the body (Nats-Msg-Id =
 * event_id, Gamefn-Source = source_id, Gamefn-Source-Seq = source_seq). It then
 * counts how often each (source, seq) was stored.
 *
 * The asserts use cmocka and fail the calling test. Main thread only.
 */
#ifndef GAMEFN_TEST_PRODUCER_CHECK_H
#define GAMEFN_TEST_PRODUCER_CHECK_H

#include <nats/nats.h>
#include <stddef.h>
#include <stdint.h>

#include "natsd.h"

/* The server config that maps gamefn.v1.event.*.* to its partition (PROTOCOL.md §9). */
extern const char pcx_mapping[];

/* Stream EVENTS on gamefn.v1.evp.> (file storage, 10 min duplicate window, `replicas`),
 * retried while a new cluster settles; max_msgs 0 = unlimited, else discard new. */
void pcx_add_events(jsCtx *js, int replicas, int64_t max_msgs);

typedef struct pcx_source {
    char id[65];
    uint8_t *count; /* count[seq]: how often seq was stored (saturates at 255) */
    uint64_t cap, max_seq;
} pcx_source;

typedef struct pcx_stored {
    uint64_t messages;
    pcx_source *sources;
    size_t nsources;
} pcx_stored;

/* Reads every message of `stream` (asserting each one as above). */
void pcx_read(jsCtx *js, const char *stream, pcx_stored *out);
void pcx_free(pcx_stored *s);

/* `source` is the source id, or the producer's cfg.source_id: then the one source
 * "<source>-<8 hex>" (the spool's incarnation) is meant.
 * Fails unless `source` stored every seq of first..last exactly once, except the
 * `nabsent` seqs of `absent` (sorted), which must not be stored at all, and nothing
 * above last. */
void pcx_expect(const pcx_stored *s, const char *source, uint64_t first, uint64_t last,
                const uint64_t *absent, size_t nabsent);

#endif
