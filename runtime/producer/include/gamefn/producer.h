/*
 * gamefn/producer.h — publishing game events from a game server (C or C++) without
 * losing one. docs/EVENTS.md walks through it; examples/producer/ is a complete
 * program; docs/PROTOCOL.md §9 is the wire contract it keeps.
 *
 *   gf_producer *p;  gf_producer_open(&cfg, &p);           // once, at start
 *   gf_producer_emit(p, &ev, NULL);                        // per event, any thread
 *   gf_producer_flush(p, 2000);                            // optional: wait for acks
 *   gf_producer_close(p, 5000);                            // at exit
 *
 * What it guarantees
 * - Every event gets source_id, source_seq (1, 2, 3... per source, from the spool's
 *   persisted counter: never reused, also across restarts and crashes), event_id =
 *   Nats-Msg-Id = "<source_id>-<source_seq>", and occurred_unix_ms. Headers
 *   Gamefn-Source and Gamefn-Source-Seq repeat the first two, so observers can follow
 *   a source's sequence from headers alone.
 * - source_id is "<cfg.source_id>-<incarnation>": 8 hex digits drawn when the spool
 *   directory is created and kept in it (file "source"). The same game server on
 *   the same spool keeps its source id across restarts, so what it spooled is
 *   replayed under the original ids; a game server whose spool is gone (a new
 *   container, a wiped disk) gets a new source id and starts at seq 1 without any
 *   of its events being taken for duplicates of the old spool's (with a bare
 *   server id they would be: the stream's duplicate window and the consumers' exact
 *   dedup would both drop them, silently).
 * - emit validates the event (docs/PROTOCOL.md §5, gamefn/event_check.h): a bad
 *   event is refused with the field and the reason and is never spooled.
 * - emit returns only after the event is appended to the spool, a write-ahead log in
 *   cfg.spool_dir (gamefn/spool.h). A kill of the process loses nothing emit
 *   accepted; a power loss loses at most what the fsync policy leaves unsynced:
 *   always = nothing, interval = up to fsync_interval_ms of events (default), never =
 *   what the OS had not written back.
 * - The producer's own thread publishes the spool in seq order, asynchronously, each
 *   event with its own id, and never sends seq >= (oldest seq not yet acknowledged) +
 *   window: the sequence window W the consumers' exact idempotency relies on
 *   (gamefn/dedup_window.h, PROTOCOL.md §9). At most W events are in flight.
 * - When the stream does not take events (disconnected, no answer within give_up_ms,
 *   a full stream, any refusal) it stops sending new events, keeps accepting them
 *   into the spool, probes with one event under a backoff (retry_min_ms doubling up
 *   to retry_max_ms, jittered), and once one is acknowledged resumes in order from the
 *   oldest unacknowledged event, with the original ids, still windowed. Nothing is
 *   given up: an outage of minutes or hours ends with every event stored.
 * - An event is lost only when the spool is full (spool_max_bytes): emit then returns
 *   GF_ERR_UNAVAILABLE, the event is counted in `dropped` and logged at error level,
 *   and its seq is used up, so consumers see the loss as a gap.
 *
 * How long emit can wait (the game loop's worst case): the encode, then the spool
 * lock and one append: a write() of the record, plus under `always` an fdatasync
 * every time, under `interval` at most one fdatasync per fsync_interval_ms (its own
 * or the producer thread's), plus, once per 1024 seqs under interval and never, the
 * state file's replacement (write, fsync, rename, fsync of the directory), and once
 * per spool_segment_bytes the creation of a segment file. It never waits for NATS.
 * A refill of the memory queue from disk after a long outage holds the spool lock
 * while it reads up to memory_bytes of records (page cache speed).
 *
 * Connection: borrow one (cfg.nc: the caller keeps it open until gf_producer_close,
 * with reconnects on, e.g. natsOptions_SetMaxReconnect(o, -1)), or let the producer
 * own one (cfg.nats, else cfg.url): connected in the background, reconnected forever
 * with jittered backoff (gamefn/conn.h). open never waits for NATS.
 *
 * Threads: emit, flush and stats_get may be called from any thread, concurrently.
 * open and close from one thread, no emit during or after close. The producer runs
 * one thread of its own (two while connecting an owned connection) plus nats.c's.
 *
 * Ownership: open allocates, close frees (NULL is fine). Everything an emit takes is
 * copied before it returns. cfg strings are copied at open; cfg.nats and cfg.nc are
 * borrowed until close.
 */
#ifndef GAMEFN_PRODUCER_H
#define GAMEFN_PRODUCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gf_nats_config; /* gamefn/config.h */

enum {
    GF_PRODUCER_WINDOW_DEFAULT = 1024, /* W: the consumers must use the same */
    GF_PRODUCER_NAME_MAX = 55,         /* cfg.source_id; "-<8 hex>" makes it <= 64 */
    GF_PRODUCER_EVENT_ID_MAX = 86,     /* "<source_id>-<source_seq>" + NUL */
    GF_PRODUCER_FIELD_MAX = 64,
    GF_PRODUCER_WHY_MAX = 160,
    GF_PRODUCER_REASON_MAX = 256,
};

typedef enum gf_producer_fsync {
    GF_PRODUCER_FSYNC_INTERVAL = 0, /* default: fdatasync at most every fsync_interval_ms */
    GF_PRODUCER_FSYNC_ALWAYS,       /* fdatasync every emit */
    GF_PRODUCER_FSYNC_NEVER,        /* leave it to the OS */
} gf_producer_fsync;

/* Zero fields take the default. */
typedef struct gf_producer_config {
    const char *source_id; /* required: the game server's id, token 1..55; the events'
                              source_id is it + "-<incarnation>" (see above) */
    const char *spool_dir; /* required: this source's own directory (created, one level) */

    natsConnection *nc;                /* borrowed connection, or NULL to own one: */
    const struct gf_nats_config *nats; /* full options (credentials, TLS); borrowed */
    const char *url; /* else comma-separated URLs; NULL = "nats://127.0.0.1:4222" */

    gf_producer_fsync fsync;
    int64_t fsync_interval_ms;    /* 100; 1..60000 */
    uint64_t spool_max_bytes;     /* 1 GiB; beyond it events are dropped */
    uint64_t spool_segment_bytes; /* 1 MiB; 4 KiB..spool_max_bytes */
    uint32_t window;              /* W: 1024; 1..1048576; as the consumers' */
    uint64_t memory_bytes;        /* 16 MiB: events queued in memory; more are read
                                     back from the spool when their turn comes */
    int64_t ack_timeout_ms;       /* 2000: a publish unanswered this long is resent */
    int64_t give_up_ms;           /* 5000: unanswered this long, sending stops (spooling) */
    int64_t retry_min_ms;         /* 100: first probe delay after sending stopped */
    int64_t retry_max_ms;         /* 5000: probe delay cap */
    int64_t ack_persist_ms;       /* 100: how often the acknowledged floor is written */
} gf_producer_config;

typedef struct gf_event_attr {
    const char *key;   /* name token 1..32, unique */
    const char *value; /* UTF-8 0..128 bytes */
} gf_event_attr;

/* One event. Only the payload that `type` selects is read: "kill" -> kill, "score"
 * -> score, "zone_change" -> zone_change, "crash" -> crash, any other type ->
 * generic. Limits: docs/PROTOCOL.md §5. NULL strings count as empty. */
typedef struct gf_event {
    const char *player_id;    /* token 1..64; NULL or "" = cfg.source_id, the game
                                 server's id (an event with no player: a server crash,
                                 a match-level event) */
    const char *type;         /* name token 1..32 */
    int64_t occurred_unix_ms; /* 0 = now */
    const char *match_id;     /* token 0..64 */
    struct {
        const char *victim_player_id; /* token 1..64 */
        const char *weapon;
        bool headshot;
        float distance_m;
    } kill;
    struct {
        int64_t delta;      /* -1e12..1e12, non-zero */
        const char *board;  /* name token 0..32; empty = "global" */
        const char *reason; /* UTF-8 0..64 */
    } score;
    struct {
        const char *from_zone, *to_zone;
    } zone_change;
    struct {
        const char *signature, *message, *stack, *build, *platform;
    } crash;
    struct {
        const gf_event_attr *attributes;
        size_t attributes_len;
        const void *data;
        size_t data_len;
        const char *content_type;
    } generic;
} gf_event;

/* What happened to one emit (optional). */
typedef struct gf_producer_receipt {
    uint64_t seq;                            /* GF_OK, or the dropped seq */
    char event_id[GF_PRODUCER_EVENT_ID_MAX]; /* GF_OK: "<source_id>-<seq>" */
    char field[GF_PRODUCER_FIELD_MAX];       /* GF_ERR_INVALID: e.g. "kill.weapon" */
    char why[GF_PRODUCER_WHY_MAX];           /* any error: what is wrong */
} gf_producer_receipt;

/* Why the producer is not publishing (gf_producer_stats.state). */
typedef enum gf_producer_state {
    GF_PRODUCER_OK = 0,       /* publishing, or nothing to publish */
    GF_PRODUCER_CONNECTING,   /* owned connection: never connected yet */
    GF_PRODUCER_DISCONNECTED, /* the connection is down; nats.c reconnects */
    GF_PRODUCER_NO_ANSWER,    /* connected, but publishes get no answer (no stream
                                 leader: an election; the server's subject mapping
                                 missing; an overloaded server) */
    GF_PRODUCER_NO_STREAM,    /* connected, and no stream captures the event subjects
                                 (503 no responders and JetStream says so) */
    GF_PRODUCER_STREAM_FULL,  /* the stream refuses: max msgs/bytes with discard new
                                 (JetStream 10077) */
    GF_PRODUCER_REFUSED,      /* another refusal (js_code says which, e.g. 10054) */
    GF_PRODUCER_CLOSED,       /* the connection was closed for good (borrowed) */
} gf_producer_state;

/* "ok", "connecting", "disconnected", "no_answer", "no_stream", "stream_full",
 * "refused", "closed". */
const char *gf_producer_state_str(gf_producer_state s);

typedef struct gf_producer_stats {
    char source_id[65]; /* the events' source_id: "<cfg.source_id>-<incarnation>" */
    /* The five counters of the event log (since open, except spooled). */
    uint64_t produced;     /* emits accepted (appended to the spool) */
    uint64_t acknowledged; /* events the stream acknowledged (stored; duplicates too) */
    uint64_t spooled;      /* now: events in the spool not yet acknowledged, including
                              those a previous run left */
    uint64_t replayed;     /* publishes beyond an event's first, and first publishes
                              of events a previous run left in the spool */
    uint64_t dropped;      /* emits refused because the spool was full: LOST events */
    /* More detail. */
    uint64_t duplicates;      /* acknowledgements that said "already stored" */
    uint64_t invalid;         /* emits refused by validation */
    uint64_t io_errors;       /* emits refused because the spool could not be written */
    uint64_t stops;           /* times sending stopped (an outage, a full stream, ...) */
    uint64_t in_flight;       /* events sent, answer pending */
    uint64_t next_seq;        /* the seq the next emit gets */
    uint64_t acked_floor;     /* every seq <= it is acknowledged (or was never published) */
    uint64_t persisted_floor; /* the part of it written to the spool's state file */
    uint64_t spool_bytes, spool_segments;
    uint64_t torn_records, corrupt_records, skipped_records; /* found at open */
    gf_producer_state state;
    int js_code;                         /* the last JetStream refusal, 0 if none */
    int64_t stopped_ms;                  /* how long sending has been stopped; 0 = OK */
    char reason[GF_PRODUCER_REASON_MAX]; /* state in words; "" when OK */
} gf_producer_stats;

typedef struct gf_producer gf_producer;

/* Opens the spool (recovering it: a torn last record is cut off, never published),
 * starts the producer's thread and returns at once; NATS may be away.
 * GF_ERR_INVALID: bad config. GF_ERR_CONFIG: spool_dir belongs to another source_id
 * (or holds events but lost its "source" file).
 * GF_ERR_CONFLICT: another process has the spool open. GF_ERR_IO: the spool cannot
 * be read or written (including a malformed state file). GF_ERR_NOMEM. */
gf_err gf_producer_open(const gf_producer_config *cfg, gf_producer **out);

/* Validates, appends to the spool, queues for publishing; see "How long emit can
 * wait". out may be NULL.
 *   GF_OK              accepted: out->seq, out->event_id.
 *   GF_ERR_INVALID     refused, nothing spooled: out->field, out->why.
 *   GF_ERR_UNAVAILABLE DROPPED: the spool holds spool_max_bytes. The event is lost
 *                      (counted, logged at error level; its seq out->seq is a gap).
 *   GF_ERR_IO          the spool could not be written: not accepted, no seq used
 *                      (counted in io_errors, logged).
 *   GF_ERR_NOMEM       not accepted. */
gf_err gf_producer_emit(gf_producer *p, const gf_event *ev, gf_producer_receipt *out);

/* Checks ev exactly as emit would for source_id (cfg.source_id), without a producer:
 * GF_OK, or GF_ERR_INVALID with out->field and out->why. For tools that validate a
 * whole batch before emitting any of it, and for a game's own tests. */
gf_err gf_producer_check_event(const char *source_id, const gf_event *ev, gf_producer_receipt *out);

/* Waits until every event emitted before the call is acknowledged by the stream
 * (GF_OK), or timeout_ms passed (GF_ERR_TIMEOUT: see gf_producer_stats for why; the
 * events stay spooled and keep being published). timeout_ms < 0: no bound. */
gf_err gf_producer_flush(gf_producer *p, int64_t timeout_ms);

void gf_producer_stats_get(gf_producer *p, gf_producer_stats *out);

/* Waits up to timeout_ms for the events emitted so far to be acknowledged, stops the
 * thread, writes the acknowledged floor and frees. What is not acknowledged stays in
 * the spool and is published by the next open of the same spool_dir. NULL is fine. */
void gf_producer_close(gf_producer *p, int64_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
