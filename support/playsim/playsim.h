/*
 * support/playsim/playsim.h — the simulated game's shared state (gamefn-playsim).
 *
 * The program drives the real stack over NATS the way a game does:
 *
 *   players   arrive per the population model (arrivals.h) and ask for a match: a
 *             ticket client per ticket (tickets.c) creates it (retrying with the same
 *             idempotency key), follows it on the status subject like a gateway (one
 *             subscription on gamefn.v1.ticket.status.>, a ticket.get after 10 s of
 *             silence), cancels it when the player's patience runs out, and sometimes
 *             submits twice (which must return the same ticket);
 *   merge A/B the low-population region's players are submitted twice: into their
 *             queue (merge on) and, as other players with the same skills, pings and
 *             timing, into its "-nomerge" twin (a queue of a playlist that never merges),
 *             so the region's wait with and without the merge is measured in one run;
 *   matches   every Match the matcher publishes is seen on gamefn.v1.match.found.>
 *             (matches.c): merged or not, its region, skill spread, allocation time;
 *   servers   simulated game servers (support/gamesim, one simulator per datacenter, on
 *             its own connection) register, heartbeat, follow the warm pool, verify the
 *             join tokens, play, and emit gameplay events (events.c: through the
 *             producer library, one producer per datacenter, and the producers' events
 *             log for the checker);
 *   record    the run directory of docs/REPORT.md (record.c, figures.c), a progress
 *             block every second and the summary lines on stdout for gamefn-local.
 *
 * Threads: the main thread runs the loop (arrivals, timers, samples); nats.c delivers
 * replies, statuses, matches and acks on its threads; the simulators' workers call
 * on_event. Every field below `mu` is guarded by it. Ownership: main.c allocates and
 * frees the one gf_play; tables grow, entries are never removed during a run.
 */
#ifndef GAMEFN_PLAYSIM_H
#define GAMEFN_PLAYSIM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>
#include <nats/nats.h>

#include "arrivals.h"
#include "gamesim.h"

enum {
    PLAY_MAX_QUEUES = 64,
    PLAY_MAX_DCS = 32,
    PLAY_MAX_REGIONS = 16,
    PLAY_MAX_PARTY = 5,
    PLAY_NAME = 33,
    PLAY_ID = 65,
};

typedef enum play_state {
    PT_NEW = 0, /* not sent yet */
    PT_SENT,    /* create sent, no answer yet */
    PT_QUEUED,
    PT_CLAIMED,
    PT_ASSIGNED,  /* terminal */
    PT_CANCELLED, /* terminal */
    PT_TIMED_OUT, /* terminal */
    PT_FAILED,    /* terminal: refused by intake (a bug: counted and shown) */
} play_state;

typedef struct play_queue {
    char name[PLAY_NAME];
    char mode[16]; /* sbmm, ping_first, hybrid */
    char shape[16];
    uint32_t team_size;
    int twin; /* the "-nomerge" twin of this queue, or -1 */
    bool is_twin;
} play_queue;

typedef struct play_ticket {
    char id[33];     /* BLAKE2b-128 hex of the key (docs/PROTOCOL.md §6) */
    char key[40];    /* idempotency key */
    uint64_t serial; /* the arrival's */
    uint16_t queue;
    int8_t region; /* matchmaking region of its best datacenter */
    bool twin;     /* merge-off copy */
    uint8_t players;
    uint8_t state; /* play_state */
    bool cancel_sent, recorded, resubmitted;
    float skill[PLAY_MAX_PARTY], sigma[PLAY_MAX_PARTY];
    uint16_t ping[PLAY_MAX_DCS]; /* ms, 0xffff = not measured */
    uint16_t best_ping;
    int8_t dc;           /* assigned datacenter, -1 */
    int64_t submit_ms;   /* mono: first create sent */
    int64_t resend_ms;   /* mono: resend the pending request after this */
    int64_t patience_at; /* mono: cancel after this */
    int64_t resubmit_at; /* mono, 0 = never */
    int64_t heard_ms;    /* mono: last status */
    int64_t end_ms;      /* mono */
    uint64_t revision;
    uint32_t match; /* 1 + index into matches, 0 = none */
} play_ticket;

typedef struct play_match {
    char id[PLAY_ID];
    int queue; /* the Match's queue, -1 if unknown */
    int8_t region;
    bool seen; /* the Match itself was seen (not only a status naming it) */
    bool merged, recorded, aborted;
    int64_t created_unix_ms;
    int64_t assigned_unix_ms; /* its first ticket's assignment, 0 until then */
    uint32_t tix[16];         /* our tickets in it (indices), as their statuses named it */
    uint8_t n_tix;
    uint16_t expected;          /* tickets, from the Match */
    float rating_lo, rating_hi; /* the tickets' ratings as the matcher used them */
    uint16_t assigned;
    int8_t dc;
} play_match;

/* An open-addressing index: 64-bit key -> 1 + table index. */
typedef struct play_index {
    uint64_t *keys;
    uint32_t *vals;
    size_t mask, used;
} play_index;

typedef struct play_events play_events; /* events.c */

typedef struct gf_play {
    /* fixed after start */
    natsConnection *nc;
    jsCtx *js;
    char nonce[16]; /* makes this run's ids unique */
    char run_dir[1024];
    int seconds;
    uint64_t seed;
    char population[8];
    int64_t t0_mono, t0_unix; /* the run's start */
    play_queue queues[PLAY_MAX_QUEUES];
    size_t n_queues;
    gf_arr_queue arr_queues[PLAY_MAX_QUEUES]; /* the queues players pick (no twins) */
    size_t arr_to_queue[PLAY_MAX_QUEUES];
    size_t n_arr_queues;
    char dcs[PLAY_MAX_DCS][PLAY_NAME];
    int dc_region[PLAY_MAX_DCS];
    size_t n_dcs;
    char regions[PLAY_MAX_REGIONS][PLAY_NAME];
    size_t n_regions;
    int low_region; /* index into regions: the merge A/B region, -1 */
    gf_arrivals *arrivals;
    gf_gamesim *sims[PLAY_MAX_DCS];
    struct gf_conn *sim_conns[PLAY_MAX_DCS]; /* each simulator's own connection */
    play_events *events;
    natsSubscription *replies, *statuses, *tap;
    FILE *tickets_tsv, *matches_tsv, *queues_tsv, *fleet_tsv, *events_tsv, *lag_tsv;
    atomic_int stop; /* SIGTERM/SIGINT */

    pthread_mutex_t mu;
    play_ticket *t; /* under mu */
    size_t n_t, cap_t;
    play_index t_index;
    play_match *m;
    size_t n_m, cap_m;
    play_index m_index;
    size_t next_send; /* tickets before it were sent */
    size_t live_from; /* tickets before it are terminal */
    size_t in_flight; /* creates sent and not answered */
    uint64_t created, replayed, resubmits, resubmit_same, resubmit_other, refused, resends, gets,
        status_msgs, unknown_status, id_mismatch, matches_seen;
    char last_refusal[300];
    double *waits; /* wait_ms of every assigned ticket, in order */
    size_t n_waits, cap_waits;
    int64_t merged_at[PLAY_MAX_QUEUES][PLAY_MAX_REGIONS]; /* mono: last merged Match */
    uint64_t last_matches;                                /* matches_seen at the previous sample */
    uint64_t last_produced;
    int64_t last_sample;
    uint64_t lag_max; /* highest consumer lag sampled */
    char lag_max_name[64];
    gf_gamesim_stats fleet; /* the simulators' counters, summed when they stop */
    json_t *dlq_before;     /* the DLQ stream's messages per subject at the start */
    uint64_t events_base;   /* EVENTS' last sequence at the start */
    uint64_t applied_last;  /* events.tsv's applied: the last value written */
} gf_play;

/* ---- tickets.c ---------------------------------------------------------------------- */
gf_err gf_play_tickets_start(gf_play *p); /* the reply and status subscriptions */
/* One arrival: its ticket (and its twin for the low-population region). */
void gf_play_tickets_arrive(gf_play *p, const gf_arrival *a);
/* Timers: due sends and resends, cancels, resubmits, gets after silence. */
void gf_play_tickets_tick(gf_play *p, int64_t now, bool arrivals_over);
/* Tickets not yet in a terminal state. */
size_t gf_play_tickets_live(gf_play *p);
/* The end: cancels every live ticket ("the game closes"). */
void gf_play_tickets_cancel_all(gf_play *p, int64_t now);
/* Writes a tickets.tsv row for a terminal ticket (under mu). */
void gf_play_ticket_record(gf_play *p, play_ticket *t, int64_t now);

/* ---- matches.c ---------------------------------------------------------------------- */
gf_err gf_play_matches_start(gf_play *p); /* the tap on gamefn.v1.match.found.> */
/* The match named by a status (created on first sight), under mu: 1 + index, 0 on ENOMEM. */
uint32_t gf_play_match_ref(gf_play *p, const char *match_id);
/* A ticket of match mi+1 was assigned / went back to the pool (under mu). */
void gf_play_match_assigned(gf_play *p, uint32_t mi, int64_t assigned_unix_ms, int dc);
void gf_play_match_dropped(gf_play *p, uint32_t mi);
/* Rows for every match not written yet (the end). */
void gf_play_matches_flush(gf_play *p);
/* The mode of a match: its tickets' common mode, or "mixed" (under mu). */
const char *gf_play_match_mode(gf_play *p, const play_match *m);
/* Highest minus lowest ticket rating of the match (a party counts as one member, with
 * its aggregated skill, as the matcher compares them); -1 before the Match is seen. */
double gf_play_match_spread(gf_play *p, const play_match *m);

/* ---- events.c ----------------------------------------------------------------------- */
gf_err gf_play_events_start(gf_play *p);
void gf_play_events_on_event(void *arg, const gf_gamesim_event *e); /* gamesim's callback */
void gf_play_events_counts(gf_play *p, uint64_t *produced, uint64_t *stored, uint64_t *failed);
/* Events the producers took, per type: {"kill": n, "score": n, "zone_change": n,
 * "crash": n} (new reference). */
json_t *gf_play_events_by_type(gf_play *p);
/* After the simulators stopped: waits up to timeout_ms for the producers' acks, writes
 * events.log, closes the producers. Returns the events left unacknowledged. */
uint64_t gf_play_events_stop(gf_play *p, int64_t timeout_ms);
void gf_play_events_free(gf_play *p);

/* ---- record.c ----------------------------------------------------------------------- */
gf_err gf_play_record_open(gf_play *p); /* the TSV files with their headers */
void gf_play_record_close(gf_play *p);
/* Once a second: queues, fleet, events, lag rows, and the progress block on stdout. */
void gf_play_sample(gf_play *p, int64_t now, bool draining);
double gf_play_t(const gf_play *p, int64_t mono_ms); /* seconds since the start */

/* ---- figures.c ---------------------------------------------------------------------- */
/* The summary lines ("S ...") on stdout and sim.json in the run directory;
 * stored_unix_ms: when every event of the run was stored. */
void gf_play_figures(gf_play *p, int64_t stored_unix_ms);
/* Nearest-rank percentile of v[0..n) (sorts v). */
double gf_play_pct(double *v, size_t n, double pct);

/* ---- observers.c -------------------------------------------------------------------- */
void gf_play_observers_start(gf_play *p);       /* the DLQ's counts, EVENTS' last seq */
uint64_t gf_play_events_last_seq(gf_play *p);   /* 0 when it cannot be read */
bool gf_play_durable(const jsConsumerInfo *ci); /* a durable, not a reader's ephemeral one */
/* Waits until no consumer of EVENTS has anything pending or in flight; false on timeout. */
bool gf_play_observers_settle(gf_play *p, int64_t timeout_ms);
/* Adds "dlq", "leaderboard", "gaps", "analytics" and "crashes" (docs/REPORT.md
 * summary.json) to root, each where something answered; the gaps from a lag report made
 * after stored_unix_ms (a poll on demand), else {"not_counted": why}. */
void gf_play_observers_json(gf_play *p, json_t *root, int64_t stored_unix_ms);
void gf_play_observers_free(gf_play *p);

/* ---- record.c: "leaderboard-p07" -> "leaderboard" (a partitioned group is one) ---------- */
void gf_play_group_name(const char *consumer, char *buf, size_t size);

/* ---- index.c ------------------------------------------------------------------------ */
uint64_t gf_play_key(const char *id);
gf_err gf_play_index_put(play_index *x, uint64_t key, uint32_t val);
uint32_t gf_play_index_get(const play_index *x, uint64_t key); /* 0 = absent */
void gf_play_index_free(play_index *x);

#endif
