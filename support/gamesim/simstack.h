/*
 * support/gamesim/simstack.h — the configuration of a fleet + allocator stack for tests
 * and benchmarks: a fresh join-key pair, a config file with the MATCHES stream, the
 * matchmaking buckets and their audit mirrors (what intake, ticker and matcher need too)
 * and functions.fleet / functions.allocator, and provisioning it (`gamefn provision`).
 *
 * Ownership: everything is written into the caller's directory; nothing is kept.
 * Threads: call from the thread that owns the child processes (support/natsd/proc.h).
 */
#ifndef GAMEFN_SIMSTACK_H
#define GAMEFN_SIMSTACK_H

#include <stddef.h>
#include <stdint.h>

typedef struct gf_simstack_opts {
    const char *url;               /* the nats-server */
    const char *dir;               /* keys (test.key, test.pub) and the config go here */
    const char *datacenters;       /* YAML flow items, e.g. "{name: eu, floor: 0}" */
    const char *fleet_extra;       /* more functions.fleet keys, "    key: value\n" each */
    const char *allocator_extra;   /* more functions.allocator keys */
    const char *backoff;           /* MATCHES/allocator backoff (NULL: "[2s, 2s, 5s]") */
    const char *log_level;         /* NULL: info */
    const char *deadline;          /* functions.allocator.deadline (NULL: "500ms") */
    const char *heartbeat;         /* functions.fleet.heartbeat_interval (NULL: "500ms") */
    const char *heartbeat_timeout; /* functions.fleet.heartbeat_timeout (NULL: three intervals,
                                      which leaves no heartbeat refresh: every one writes) */
    const char *functions_extra;   /* more functions: sections (e.g. intake, ticker, matcher),
                                      indented by two spaces */
    int max_in_flight;             /* runtime.max_in_flight and fetch_batch (0: 8) */
    const char *fetch_expiry;      /* runtime.fetch_expiry (NULL: "1s"; at least 500ms) */
    const char *flush;             /* nats.flush (NULL: "immediate") */
    const char *scale_interval;    /* functions.fleet.scale_interval (NULL: "200ms") */
} gf_simstack_opts;

/* Writes <dir>/test.key, <dir>/test.pub (pk, 32 bytes, may be NULL) and the config at
 * `config_path`. 0, or -1 with a message on stderr. */
int gf_simstack_write(const gf_simstack_opts *o, const char *config_path, uint8_t pk[32]);

/* Runs `<build_dir>/tools/gamefn --config config_path provision`; 0 on success. */
int gf_simstack_provision(const char *build_dir, const char *config_path, const char *log_path);

/* What the matcher would have written, for feeding the allocator without one. */

/* A ticket record in any state: one player, pings eu 20 ms and us 90 ms, queue duel. */
typedef struct gf_simstack_rec {
    const char *ticket_id;
    const char *player_id; /* NULL: "p-<ticket_id>" */
    double rating;
    int state;              /* TicketState */
    const char *match_id;   /* CLAIMED: the claim's; ASSIGNED: the assignment's */
    const char *datacenter; /* ASSIGNED: the assignment's (NULL: "eu") */
    int64_t queued_ms;      /* also created_unix_ms */
    int64_t now_ms;         /* updated, claimed and assigned time */
    int64_t expires_ms;     /* 0: now_ms + 600000 */
    int64_t lease_ms;       /* CLAIMED: lease expiry (0: now_ms + 60000) */
} gf_simstack_rec;

/* Packs it into buf (4096 bytes are enough); returns the length. */
size_t gf_simstack_record(const gf_simstack_rec *r, uint8_t *buf);

/* A packed TicketRecord, CLAIMED by `match_id`, one player "p-<ticket_id>" rated 1500,
 * pings eu 20 ms and us 90 ms, queued at queued_ms. Returns the length written into buf
 * (4096 bytes are enough). */
size_t gf_simstack_ticket(const char *ticket_id, const char *match_id, int64_t queued_ms,
                          int64_t now_ms, uint8_t *buf);

/* A packed Match of `n` one-player tickets (players "p-<ticket_id>"), one per team,
 * formed at now_ms (claims' lease until now_ms + 60 s), with `datacenters`
 * (comma-separated, best first, at most 8).
 * Returns the length written into buf (8192 bytes are enough for n <= 16). */
size_t gf_simstack_match(const char *match_id, char *const *tickets, size_t n,
                         const char *datacenters, int64_t now_ms, uint8_t *buf);

#endif
