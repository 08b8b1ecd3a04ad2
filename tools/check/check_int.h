/*
 * check_int.h — the checker's private state (gamefn/check/check.h).
 *
 * Design notes:
 * - Every id (ticket, match, player, datacenter, source, board, queue name) is interned
 *   once into a ck_names table and handled as a dense index, so the per-ticket history
 *   is a flat array of small ck_rev structs, sorted once at the end.
 * - Feeding only decodes and copies; every judgement happens in gf_check_finish, so the
 *   three mirrors may be fed in any interleaving.
 * Single-threaded, like the checker.
 */
#ifndef GAMEFN_CHECK_INT_H
#define GAMEFN_CHECK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/check/check.h"

#define CK_NONE UINT32_MAX

/* ---- interned strings (check_names.c) ---- */
typedef struct ck_names {
    char **str; /* index -> string (inside the arena chunks) */
    size_t n, cap;
    uint32_t *slot; /* open addressing: index + 1, 0 = empty */
    size_t nslot;
    char **chunks; /* arena */
    size_t nchunks, chunk_used, chunk_cap;
} ck_names;

/* The index of s, added if new (*added may be NULL). CK_NONE when memory runs out. */
uint32_t ck_intern(ck_names *t, const char *s, bool *added);
/* The index of s, or CK_NONE. */
uint32_t ck_lookup(const ck_names *t, const char *s);
void ck_names_free(ck_names *t);

/* qsort, for any n (qsort's base may not be NULL, even for 0 elements). */
void ck_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* Grows *items (capacity *cap) to hold need elements; false when memory runs out. */
bool ck_grow(void **items, size_t *cap, size_t need, size_t size);

/* ---- matchmaking ---- */
typedef struct ck_rev {
    uint64_t seq;
    int64_t t_ns;                 /* server time of the write */
    int64_t claimed_ms, lease_ms; /* CLAIMED */
    int64_t queued_ms, expires_ms;
    uint32_t ticket;
    uint32_t match; /* claim's or assignment's match, CK_NONE */
    uint32_t dc;    /* ASSIGNED: the assignment's datacenter (c->dcs), CK_NONE */
    uint8_t op;     /* gf_check_op */
    uint8_t state;  /* TicketState */
} ck_rev;

typedef struct ck_member {
    uint32_t player;
    double rating, sigma;
} ck_member;

typedef struct ck_ping {
    uint32_t dc;
    uint32_t ms;
} ck_ping;

typedef struct ck_ticket {
    bool known;                      /* a PUT of it decoded */
    bool skipped;                    /* created before since */
    uint32_t queue;                  /* c->queue_names */
    uint32_t first_member, nmembers; /* c->members */
    uint32_t first_ping, npings;     /* c->pings */
    int64_t created_ms;
    uint32_t first_rev, nrevs; /* c->revs after sorting */
} ck_ticket;

typedef struct ck_asg {
    uint32_t ticket;
    uint32_t dc;
} ck_asg;

typedef struct ck_outcome {
    uint8_t state;   /* MatchOutcomeState of the first write; 0 = none seen */
    uint32_t writes; /* PUTs seen */
    bool changed;    /* written again, deleted or purged after the first write */
    int64_t t_ns;    /* first write */
    uint64_t seq;
    uint32_t first_asg, nasg; /* c->asgs */
    int64_t created_ms;       /* from a Match in MATCHES; 0 = unknown */
    bool assigned_seen;       /* some ticket revision is ASSIGNED by it (ABORTED check) */
} ck_outcome;

typedef struct ck_prec {
    uint64_t seq;
    int64_t t_ns;
    uint32_t player;
    uint32_t ticket; /* the record's ticket; CK_NONE: deleted or purged */
} ck_prec;

/* ---- events ---- */
typedef struct ck_range {
    uint32_t source;
    uint8_t kind; /* CK_LOG_* */
    uint64_t first, last;
} ck_range;
enum { CK_LOG_ACK = 0, CK_LOG_EMIT, CK_LOG_DROP };

typedef struct ck_event {
    uint32_t source; /* CK_NONE: no source known */
    uint64_t seq;
    uint64_t stream_seq;
} ck_event;

typedef struct ck_score {
    uint64_t stream_seq;
    uint32_t source;
    uint64_t seq;
    uint32_t board, player;
    int64_t value;
} ck_score;

typedef struct ck_board {
    bool declared;
    uint8_t op;
    bool ascending;
} ck_board;

typedef struct ck_stored {
    uint32_t board, player;
    int64_t score;
} ck_stored;

/* ---- the result being built ---- */
enum {
    CK_DOUBLE_CLAIMS = 0,
    CK_PLAYERS_TWO_MATCHES,
    CK_TICKETS_LOST,
    CK_LIMIT_VIOLATIONS,
    CK_EVENTS_LOST,
    CK_EVENTS_DOUBLE,
    CK_PLAYERS_TWO_TICKETS,
    CK_ORPHANED_CLAIMS,
    CK_HALF_ASSIGNED,
    CK_ASSIGNED_NO_COMMIT,
    CK_TERMINAL_CHANGED,
    CK_OUTCOME_CHANGED,
    CK_EVENTS_UNDELIVERED,
    CK_EVENTS_DROPPED,
    CK_BAD_RECORDS,
    CK__COUNT
};

struct gf_check {
    gf_check_params p;
    bool finished, nomem;
    ck_names tickets, matches, players, dcs, queue_names, sources, boards;

    ck_rev *revs;
    size_t nrevs, caprevs;
    ck_ticket *tk; /* by ticket index */
    size_t captk;
    ck_member *members;
    size_t nmembers, capmembers;
    ck_ping *pings;
    size_t npings, cappings;

    ck_outcome *oc; /* by match index */
    size_t capoc;
    ck_asg *asgs;
    size_t nasgs, capasgs;

    ck_prec *precs;
    size_t nprecs, capprecs;

    bool have_log;
    ck_range *ranges;
    size_t nranges, capranges;
    ck_event *events;
    size_t nevents, capevents;
    ck_score *scores;
    size_t nscores, capscores;
    uint64_t *dead; /* EVENTS stream seqs dead-lettered by a leaderboard consumer */
    size_t ndead, capdead;
    ck_board *bd; /* by board index */
    size_t capbd;
    ck_stored *stored;
    size_t nstored, capstored;

    char missing[GF_CHECK_SRC__COUNT][160]; /* why a source could not be read; "" = read */
    gf_check_count counts[CK__COUNT];
    gf_check_report report;
    uint64_t bad_tickets, bad_outcomes, bad_players, bad_letters;
    char first_bad[200];
};

/* Per-entity arrays follow their names table (ck_ticket per ticket index, ...). */
bool ck_ensure_ticket(gf_check *c, uint32_t t);
bool ck_ensure_outcome(gf_check *c, uint32_t m);
bool ck_ensure_board(gf_check *c, uint32_t b);

/* Notes a malformed input in bad_records (keeps the first description). */
void ck_bad(gf_check *c, uint64_t *counter, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Adds one example line to count `k` (kept while fewer than max_examples). */
void ck_example(gf_check *c, int k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ns since the epoch as "2026-11-29T15:32:16.123Z" (INT64_MAX: "the end"); returns buf. */
char *ck_time(int64_t ns, char *buf, size_t size);

/* The analyses (run by gf_check_finish, in this order). */
void ck_tickets_analyse(gf_check *c); /* check_tickets.c: claims, lost, outcomes */
void ck_players_analyse(gf_check *c); /* check_players.c: overlapping tickets */
void ck_limits_analyse(gf_check *c);  /* check_limits.c */
void ck_events_analyse(gf_check *c);  /* check_events.c */
/* check_effects.c, for ck_events_analyse: adds the events whose effect is missing from a
 * declared board to *lost, those applied twice to *twice; fills totals.boards, .scores. */
void ck_effects_analyse(gf_check *c, uint64_t *lost, uint64_t *twice);

/* The last revision of ticket t with state CLAIMED by match m, or NULL. */
const ck_rev *ck_claim_of(const gf_check *c, uint32_t t, uint32_t m);

#endif
