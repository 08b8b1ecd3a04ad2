/*
 * gamefn/check/check_read.h — feeds a gf_check from a live deployment over NATS: the
 * AUDIT_* mirrors, what is left in MATCHES, EVENTS, DLQ, and the boards' scores (through
 * gamefn.v1.leaderboard.query). Used by `gamefn check`, the e2e bench and the run script.
 *
 * Read access is enough: stream and consumer info, ordered (ephemeral) consumers on the
 * AUDIT_* mirrors, their buckets' streams and EVENTS, message gets on MATCHES (a work queue admits
 * no second consumer), on any stream whose copy read reports its end before its leader's
 * last sequence and on a few sequences of each AUDIT_* mirror and its bucket (a mirror that
 * holds other messages than its bucket at the same sequences is shifted: it is not read,
 * and noted), requests to the leaderboard. Nothing is written.
 *
 * Each stream is read with one ordered push consumer (flow controlled), from its first
 * message (or the first at or after since_ms) up to its last sequence when the read
 * starts: a consistent cut, at stream speed (100,000s of messages per second), never one
 * request per message. Before reading a mirror it waits until the mirror holds every
 * revision its bucket had, for as long as the mirror keeps taking revisions (catch_up_ms
 * is the longest it may stand still); the revisions a mirror that stood still longer
 * lacks are read from the bucket's own stream (KV_<bucket>), so that read needs
 * consumer creation on the KV_* streams as well. Before reading scores it waits until the
 * leaderboard's consumers have nothing pending (settle_ms at most).
 *
 * In a bench or a test (gamefn-bench check does this; link gamefn_check_read):
 *
 *   gf_check_params p;
 *   gf_check_params_default(&p);
 *   p.queues = &tables.cfg;              // the queue table: limits are checked with it
 *   p.now_ms = gf_clock_unix_ms();
 *   gf_check *c = NULL;
 *   const gf_check_report *r = NULL;
 *   gf_check_read_notes notes;
 *   gf_check_read_opts o = {.no_events = true};
 *   if (gf_check_new(&p, &c) == GF_OK &&
 *       gf_check_read(nc, js, c, &o, &notes, why, sizeof why) == GF_OK &&
 *       gf_check_finish(c, &r) == GF_OK)
 *       printf("%llu double claims\n", gf_check_report_find(r, "double_claims")->count);
 *   gf_check_free(c);
 *
 * Ownership: everything is borrowed for the call. Threads: one call at a time per
 * gf_check; progress is called on the caller's thread.
 */
#ifndef GAMEFN_CHECK_READ_H
#define GAMEFN_CHECK_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/check/check.h"
#include "gamefn/err.h"

typedef struct gf_check_board_spec {
    const char *name;
    gf_check_board_op op;
    bool ascending;
} gf_check_board_spec;

typedef struct gf_check_read_opts {
    int64_t since_ms;    /* read from this wall-clock time; 0 = everything */
    int64_t catch_up_ms; /* the longest a mirror behind its bucket may take no revision
                            before it counts as stalled; default 10 s */
    int64_t settle_ms;   /* wait for leaderboard consumers to drain; default 10 s */
    bool no_events;      /* skip EVENTS, DLQ and scores */
    bool no_scores;      /* skip the boards' scores */
    /* How boards fold their events; a board not listed is incr, descending. */
    const gf_check_board_spec *boards;
    size_t boards_len;
    int64_t request_timeout_ms; /* leaderboard queries, a stream leader asked for its next
                                   message (design notes of check_read.c); default 2 s */
    /* Called at most every 250 ms while a stream is read: the stream, messages read,
     * messages in it. May be NULL. */
    void (*progress)(void *closure, const char *stream, uint64_t done, uint64_t total);
    void *closure;
} gf_check_read_opts;

/* What the read could not do: a missing stream, revisions a stalled mirror lacks that its
 * bucket no longer holds either, a shifted mirror, no leaderboard answering (each sets
 * `incomplete`); and what it did otherwise than planned, which does not (a MATCHES
 * backlog too long to read: the claims give those matches' formation times; a stalled
 * mirror whose missing revisions were all read from its bucket). One line each,
 * ";"-separated, in `text`. */
typedef struct gf_check_read_notes {
    char text[1024];
    bool incomplete;     /* some count cannot be trusted as read */
    bool missing_audit;  /* an AUDIT_* mirror does not exist */
    bool stalled_mirror; /* an AUDIT_* mirror stopped following its bucket */
    bool shifted_mirror; /* an AUDIT_* mirror holds messages at other sequences than its
                            bucket: not read (incomplete) */
} gf_check_read_notes;

/* Reads everything into c (which must not be finished). GF_ERR_UNAVAILABLE when the
 * connection is gone, or when the copy of a stream a consumer was placed on stays behind
 * the stream's leader (a node catching up after a restart: try again), GF_ERR_TIMEOUT when the
 * JetStream API does not answer (disabled, or not permitted), GF_ERR_NOMEM, GF_ERR_NATS otherwise;
 * `why` says what failed. A missing stream is not an error: it is noted and the counts that need it
 * are then reported not checked by the caller. */
gf_err gf_check_read(natsConnection *nc, jsCtx *js, gf_check *c, const gf_check_read_opts *o,
                     gf_check_read_notes *notes, char *why, size_t why_size);

#endif
