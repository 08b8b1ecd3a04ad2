/*
 * check_read_int.h — private to the reader (gamefn/check/check_read.h): the state of one
 * gf_check_read and the machinery its files share.
 *
 * - check_read.c: gf_check_read, the notes and errors, message gets on a stream's leader
 *   and the ordered read of a stream up to its leader's last sequence.
 * - check_read_mirror.c: the matchmaking audit: the AUDIT_* mirrors (catching up, a
 *   stalled mirror's tail from its bucket, a shifted mirror) and what is left in MATCHES.
 * - check_read_events.c: EVENTS, the DLQ's dead letters of EVENTS, the boards' scores.
 *
 * Everything runs on the caller's thread of gf_check_read (sync subscriptions and
 * requests); everything a ck_reader points to is borrowed from that call.
 */
#ifndef GAMEFN_CHECK_READ_INT_H
#define GAMEFN_CHECK_READ_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <nats/nats.h>

#include "gamefn/check/check_read.h"

typedef struct ck_reader {
    natsConnection *nc;
    jsCtx *js;
    gf_check *c;
    const gf_check_read_opts *o;
    gf_check_read_notes *notes;
    char *why;
    size_t why_size;
} ck_reader;

/* Feeds one message of a read to r->c; prefix is the one the read was given. m and meta
 * stay the reader's. */
typedef gf_err (*ck_read_msg_fn)(ck_reader *r, natsMsg *m, const jsMsgMetaData *meta,
                                 const char *prefix);

/* What the read could not do: the report is incomplete. */
void ck_read_note(ck_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What the read left out on purpose, without loss to any count. */
void ck_read_remark(ck_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Describes a failed NATS call in r->why ("<fmt>: <status>") and returns its gf_err:
 * GF_ERR_TIMEOUT, GF_ERR_UNAVAILABLE (no responders, connection gone) or GF_ERR_NATS. */
gf_err ck_read_fail(ck_reader *r, natsStatus s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Stream info (the caller's, jsStreamInfo_Destroy); GF_ERR_NOT_FOUND when the stream does
 * not exist. */
gf_err ck_read_info(ck_reader *r, const char *stream, jsStreamInfo **out);

/* Calls the progress callback, at most every 250 ms (*last: when it last did). */
void ck_read_progress(ck_reader *r, const char *stream, uint64_t done, uint64_t total,
                      int64_t *last);

/* A message get of `stream` (STREAM.MSG.GET: only its leader answers it; a direct get may
 * be answered by a lagging copy, and nats.c 3.4.1 has no call for next_by_subj): the
 * message at `seq`, or with `next` the first it holds at or after `seq`. *root receives
 * the answer (the caller's, json_decref) and *msg its "message" object: NULL when the
 * stream holds none there. */
gf_err ck_read_msg_get(ck_reader *r, const char *stream, uint64_t seq, bool next, json_t **root,
                       json_t **msg);

/* The sequence of a message ck_read_msg_get returned. */
uint64_t ck_read_msg_seq(const json_t *msg);

/* Every message of `stream` with sequence first..last (first 0: from its first message)
 * stored at or after since_ms, in order, through fn. *got (may be NULL): how many of
 * first..last the stream still held, whatever their time, the first of them in *seen.
 * The read ends at `last` or the leader's last sequence in `si`, whichever is lower, or
 * earlier where the leader no longer holds the messages up to there (design notes of
 * check_read.c). */
gf_err ck_read_ordered(ck_reader *r, const char *stream, const jsStreamInfo *si, uint64_t first,
                       uint64_t last, ck_read_msg_fn fn, const char *prefix, uint64_t *got,
                       uint64_t *seen);

/* check_read_mirror.c: AUDIT_TICKETS, AUDIT_MATCHES, AUDIT_PLAYERS, then MATCHES. */
gf_err ck_read_audit(ck_reader *r);

/* check_read_events.c: EVENTS, the DLQ's dead letters of EVENTS, then (unless no_scores)
 * the boards' scores. */
gf_err ck_read_events(ck_reader *r);

#endif
