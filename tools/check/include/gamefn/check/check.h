/*
 * gamefn/check/check.h — the independent invariant checker (`gamefn check`, the run
 * report's invariant section, the e2e bench's counts).
 *
 * It recomputes the invariants of docs/ARCHITECTURE.md from what JetStream recorded,
 * never from the functions' own counters, and shares no code with the functions it
 * checks: it decodes the stored records with the generated schemas, and recomputes every
 * member's limits from the queue table (the config parsing is shared) with formulas of
 * its own. The definitions of every count are in docs/OPERATIONS.md ("gamefn check").
 *
 * Input, fed in any interleaving of the three kinds (each kind in stream order):
 *   gf_check_ticket   every message of AUDIT_TICKETS  (mirror of KV_tickets)
 *   gf_check_outcome  every message of AUDIT_MATCHES  (mirror of KV_matches)
 *   gf_check_player   every message of AUDIT_PLAYERS  (mirror of KV_players)
 *   gf_check_match    optional: Match messages still in MATCHES (their creation time)
 * and for the event log:
 *   gf_check_events_log   the producers' own log (format in docs/OPERATIONS.md)
 *   gf_check_event        every message of EVENTS
 *   gf_check_dead_letter  every message of DLQ about EVENTS
 *   gf_check_board, gf_check_board_score   a board's stored scores (the effects)
 * then gf_check_finish() computes the counts.
 *
 * A record that does not decode is counted (bad_records), never fatal. The library
 * keeps a compact copy of what it needs (about 100 bytes per ticket revision), so
 * 100,000s of tickets fit in a few tens of MB.
 *
 * Pure: no NATS, no clock (the caller gives `now`), no global state. One gf_check is
 * used by one thread at a time. Ownership: gf_check_new allocates, gf_check_free frees
 * (NULL is fine); every input is copied; the report belongs to the checker and lives
 * until gf_check_free.
 */
#ifndef GAMEFN_CHECK_H
#define GAMEFN_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/match/config.h"

typedef struct gf_check gf_check;

typedef struct gf_check_params {
    /* The prepared queue table (config functions.matcher.matchmaking), borrowed until
     * gf_check_finish. NULL: limits are not checked. */
    const gf_match_config *queues;
    int64_t now_ms;        /* the end of the checked history (wall clock, Unix ms) */
    int64_t since_ms;      /* tickets created before this are skipped; 0 = every ticket */
    int64_t grace_ms;      /* a deadline counts as missed only this long after it (>= 0) */
    int64_t max_match_ms;  /* an ASSIGNED ticket holds its players at most this long (> 0) */
    int64_t ticket_ttl_ms; /* the tickets bucket's TTL: a record older is gone; 0 = none */
    size_t max_examples;   /* examples kept per count, 0..100 */
} gf_check_params;

/* Defaults: grace 5 s, max_match 2 h (functions.intake.max_match_duration), ticket TTL
 * 1 h (the shipped tickets bucket), 5 examples; queues NULL, now 0, since 0. */
void gf_check_params_default(gf_check_params *p);

gf_err gf_check_new(const gf_check_params *p, gf_check **out);
void gf_check_free(gf_check *c);

/* ---- matchmaking ---------------------------------------------------------------- */

typedef enum gf_check_op {
    GF_CHECK_PUT = 0,
    GF_CHECK_DEL,   /* header KV-Operation: DEL */
    GF_CHECK_PURGE, /* header KV-Operation: PURGE */
} gf_check_op;

/* One message of an AUDIT_* mirror: the KV write it copies. */
typedef struct gf_check_record {
    uint64_t seq;         /* stream sequence = the KV revision */
    int64_t time_ns;      /* when the server stored it (the mirror keeps the origin's) */
    const char *key;      /* the KV key: the subject's part after "$KV.<bucket>." */
    gf_check_op op;       /* from the KV-Operation header */
    const uint8_t *value; /* PUT: the value (a TicketRecord, MatchOutcome, ...) */
    size_t len;
} gf_check_record;

/* GF_OK, or GF_ERR_NOMEM (then the checker is unusable); a malformed record is counted
 * in bad_records and GF_OK is returned. */
gf_err gf_check_ticket(gf_check *c, const gf_check_record *r);
gf_err gf_check_outcome(gf_check *c, const gf_check_record *r);
gf_err gf_check_player(gf_check *c, const gf_check_record *r);
/* A Match (match.proto) as published to MATCHES: records its created_unix_ms, the
 * instant the limits are judged at (otherwise the claims' claimed_unix_ms). */
gf_err gf_check_match(gf_check *c, const uint8_t *value, size_t len);

/* ---- event log ------------------------------------------------------------------- */

/* The producers' log (the whole text; format in docs/OPERATIONS.md, "The events log").
 * GF_ERR_INVALID with `why` = "line N: what" on a malformed line (nothing is kept then);
 * GF_ERR_NOMEM. May be called once per file. */
gf_err gf_check_events_log(gf_check *c, const char *text, size_t len, char *why, size_t why_size);

/* One message of EVENTS. source_id/source_seq are the Gamefn-Source and
 * Gamefn-Source-Seq headers (NULL when absent: then they are read from the payload).
 * The payload (a GameEvent) is decoded only for score events and headerless ones. */
typedef struct gf_check_event_msg {
    uint64_t stream_seq;
    int64_t time_ns;
    const char *subject;    /* gamefn.v1.evp.<partition>.<player_id>.<event_type> */
    const char *source_id;  /* may be NULL */
    const char *source_seq; /* decimal text, may be NULL */
    const uint8_t *payload;
    size_t len;
} gf_check_event_msg;
gf_err gf_check_event(gf_check *c, const gf_check_event_msg *m);

/* A DeadLetter (dlq.proto) payload. Those of stream EVENTS taken by a consumer whose
 * name starts with "leaderboard" are left out of the recomputed scores. */
gf_err gf_check_dead_letter(gf_check *c, const uint8_t *value, size_t len);

typedef enum gf_check_board_op {
    GF_CHECK_BOARD_INCR = 0, /* score = sum of the deltas */
    GF_CHECK_BOARD_BEST,     /* score = best value (highest, lowest if ascending) */
    GF_CHECK_BOARD_SET,      /* score = the last value in stream order */
} gf_check_board_op;

/* Declares that every stored score of `board` will be fed (gf_check_board_score), and
 * how a score follows from the board's ScoreEvents. Boards not declared are not
 * compared. "" is the default board "global". */
gf_err gf_check_board(gf_check *c, const char *board, gf_check_board_op op, bool ascending);
gf_err gf_check_board_score(gf_check *c, const char *board, const char *player_id, int64_t score);
/* The boards named so far (by score events or declarations): i in 0..count-1. */
size_t gf_check_boards_count(const gf_check *c);
const char *gf_check_board_name(const gf_check *c, size_t i);

/* ---- what could not be read --------------------------------------------------------- */

typedef enum gf_check_source {
    GF_CHECK_SRC_TICKETS = 0, /* AUDIT_TICKETS */
    GF_CHECK_SRC_MATCHES,     /* AUDIT_MATCHES */
    GF_CHECK_SRC_PLAYERS,     /* AUDIT_PLAYERS */
    GF_CHECK_SRC_EVENTS,      /* EVENTS */
    GF_CHECK_SRC__COUNT
} gf_check_source;

/* The caller could not read `src` (e.g. the stream does not exist): every count that
 * needs it is reported not checked, with `why` (copied) as its detail. */
void gf_check_missing(gf_check *c, gf_check_source src, const char *why);

/* ---- the result ------------------------------------------------------------------ */

typedef struct gf_check_count {
    const char *name;        /* "double_claims", ... (static) */
    const char *explanation; /* one sentence (static) */
    bool required;           /* one of the six counts the run report expects */
    bool checked;            /* false: nothing to check it with; `detail` says why */
    uint64_t count;
    char detail[256]; /* e.g. "2 of 4,120 committed matches", or why not checked */
    char **examples;  /* at most max_examples, one line each */
    size_t examples_len;
} gf_check_count;

typedef struct gf_check_totals {
    uint64_t tickets, ticket_revisions, tickets_skipped; /* skipped: created before since */
    uint64_t matches_committed, matches_aborted;
    uint64_t players, player_revisions;
    uint64_t events, event_sources, events_logged, score_events, dead_letters;
    uint64_t events_malformed; /* score or headerless events whose payload does not decode */
    uint64_t boards, scores;
    uint64_t scores_before_since; /* stored scores with no score event after since: not judged */
    uint64_t limits_unchecked;    /* committed matches whose limits could not be recomputed */
} gf_check_totals;

typedef struct gf_check_report {
    gf_check_count *counts; /* the required six first, then the others */
    size_t counts_len;
    gf_check_totals totals;
} gf_check_report;

/* Computes every count. Call once, after all input; *out belongs to c. */
gf_err gf_check_finish(gf_check *c, const gf_check_report **out);

/* Sum of the counts that were checked (0: every invariant holds). */
uint64_t gf_check_report_broken(const gf_check_report *r);
/* The count named `name`, or NULL. */
const gf_check_count *gf_check_report_find(const gf_check_report *r, const char *name);

#endif
