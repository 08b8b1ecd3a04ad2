/*
 * gamefn/gap_tracker.h — loss detection on the per-source sequence.
 *
 * Every source numbers its events 1, 2, 3... without gaps, so a seq that never
 * arrives is a lost event. Partitioned consumers cannot see that (a source's events
 * are spread over every partition), so the observer is one non-partitioned reader
 * of the whole stream: the lag monitor, reading headers only, feeds every
 * (source_id, source_seq, stored time) in stream order.
 *
 * Per source the tracker keeps the contiguous floor (every seq <= floor seen) and
 * the holes above it. A hole is not yet a gap: events arrive out of order (retries,
 * several in flight) and late (spool replays). A hole is reported once as a
 * suspected gap (GF_GAP_SUSPECTED, with its range)
 *   - when it is still open grace_ms after it opened, on the tracker's clock: the
 *     latest stored time seen, or gf_gap_tick's now; or
 *   - at once when window (the producers' sequence window W, 0 = not used) is set
 *     and the source has already sent seq >= hole's last + W: by the window
 *     guarantee (gamefn/dedup_window.h) the hole's events were stored before that
 *     one, so in a reading in stream order they are missing, not late
 *     (report->definite). Seqs a producer skipped on purpose (refused by a full
 *     spool, skipped after a crash) are reported too: they are lost events.
 * A reported hole that fills up later (a late spool replay) is reported once more,
 * as GF_GAP_CLOSED with the range first reported. Duplicates and reordering that
 * resolves within the grace period are counted, never reported.
 *
 * The first event seen of a source sets its floor just below it: a tracker started
 * in the middle of the stream (a monitor restart) raises no alarm about the past.
 * A source with more than max_holes open holes gives up its oldest (reported as
 * suspected if it was not yet; counted as abandoned); later events in it count as old.
 *
 * Cost: O(log holes) per event for the source's hole search; a sweep over open
 * holes only when one is due.
 * Ownership: gf_gap_alloc allocates, gf_gap_free frees (NULL is fine); reports
 * borrow their strings for the duration of the callback. Threads: one thread; the
 * callback runs on it, inside gf_gap_observe or gf_gap_tick, and must not call back
 * into the tracker.
 */
#ifndef GAMEFN_GAP_TRACKER_H
#define GAMEFN_GAP_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"

typedef enum gf_gap_kind {
    GF_GAP_SUSPECTED = 1,
    GF_GAP_CLOSED,
} gf_gap_kind;

typedef struct gf_gap_report {
    gf_gap_kind kind;
    const char *source_id;
    uint64_t first, last; /* the hole's range when it was reported as suspected */
    int64_t opened_unix_ms;
    int64_t at_unix_ms; /* the tracker's clock when reported */
    bool definite;      /* suspected because the source went W past it */
} gf_gap_report;

typedef void (*gf_gap_report_fn)(void *ctx, const gf_gap_report *r);

/* Zero fields take the default. */
typedef struct gf_gap_config {
    int64_t grace_ms;   /* default 60000; 1..86400000 */
    uint32_t window;    /* W; 0 = grace only; at most 1048576 */
    uint32_t max_holes; /* per source; default 4096; 1..1048576 */
    gf_gap_report_fn report;
    void *ctx;
} gf_gap_config;

typedef struct gf_gap_stats {
    uint64_t events;         /* observed */
    uint64_t old;            /* at or below the floor, or in no hole: duplicates, pre-start */
    uint64_t sources;        /* tracked now */
    uint64_t open_holes;     /* now */
    uint64_t missing;        /* seqs in open holes now */
    uint64_t suspected;      /* reports */
    uint64_t suspected_seqs; /* seqs in them */
    uint64_t closed;         /* reports */
    uint64_t abandoned;      /* holes given up for max_holes */
} gf_gap_stats;

typedef struct gf_gap_tracker gf_gap_tracker;

gf_err gf_gap_alloc(const gf_gap_config *cfg, gf_gap_tracker **out);
void gf_gap_free(gf_gap_tracker *t);

/* GF_ERR_INVALID: source_id not a token of 1..64 bytes, or seq 0. */
gf_err gf_gap_observe(gf_gap_tracker *t, const char *source_id, uint64_t seq,
                      int64_t stored_unix_ms);

/* Advances the clock without an event (call it when caught up with the stream, e.g.
 * every second; a reader far behind would call holes overdue that are not). */
void gf_gap_tick(gf_gap_tracker *t, int64_t now_unix_ms);

/* Forgets sources with no event since cutoff (open holes included); returns how many. */
size_t gf_gap_prune(gf_gap_tracker *t, int64_t cutoff_unix_ms);

void gf_gap_stats_get(const gf_gap_tracker *t, gf_gap_stats *out);

#endif
