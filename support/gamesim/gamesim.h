/*
 * support/gamesim/gamesim.h — simulated game servers and a simulated orchestrator
 * adapter, speaking only the documented fleet interface (docs/PROTOCOL.md §8):
 *
 *   servers   register (gamefn.v1.fleet.register), heartbeat at the interval the reply
 *             gives, learn of an allocation from the heartbeat reply or, at once, from
 *             a KV watcher on the fleet bucket (never a plain subscription on
 *             $KV.fleet.<key>: that also sees refused CAS writes), collect the join
 *             tokens the players would bring (from the match's commit record,
 *             matches/<match_id>: one read holds every assignment of the match; an
 *             ABORTED record, or one committed on another server, withdraws the
 *             allocation), verify every token (or those of one match in
 *             opts.verify_every) with gamefn_gameserver against
 *             the join keys of the register/heartbeat replies (signature, key, expiry,
 *             server, player, each player once), "play" for play_ms, then report the
 *             game over (heartbeat finished_match_id) and are FREE again;
 *   adapter   subscribes gamefn.v1.fleet.scale.<datacenter>, starts `start` servers
 *             (waking hibernated ones first; a new server registers start_delay_ms
 *             later, and servers still starting are subtracted), and hibernates the
 *             listed idle servers with gamefn.v1.fleet.deregister reason HIBERNATE,
 *             stopping one only if the fleet agreed.
 *
 * It is what tests, `gamefn-bench e2e` and the local stack (deploy/local/run.sh) use
 * for game servers, and the reference for writing a real orchestrator adapter
 * (docs/OPERATIONS.md). Players can also present tokens themselves:
 * gf_gamesim_join(), or the request subject gamefn.sim.join.<server_id> with a
 * gamefn.v1.JoinToken body (empty reply = admitted, an error reply otherwise).
 *
 * While a match plays, its players can produce gameplay events (kills, scores, zone
 * changes, the odd crash) handed to opts.on_event, which the caller publishes through
 * its event producer (support/playsim does, for the local stack).
 *
 * Threads: `workers` threads (1 by default) run the servers, each its share (server i
 * on worker i % workers), worker 0 also the adapter; a watcher thread and nats.c
 * callbacks only record what arrived under the sim's lock. Every public function may be
 * called from any thread. Ownership: start allocates; stop deregisters the running servers
 * (SHUTDOWN), joins the worker and frees everything. The natsConnection is borrowed
 * and must outlive the sim.
 */
#ifndef GAMEFN_GAMESIM_H
#define GAMEFN_GAMESIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"

typedef struct gf_gamesim gf_gamesim;

/* A gameplay event of a simulated match (gf_gamesim_opts.on_event): what a game decides
 * of a GameEvent (docs/PROTOCOL.md §9); the producer adds the source, its sequence and
 * the event id. Only the fields of `type` are set. Strings are borrowed for the call. */
typedef struct gf_gamesim_event {
    const char *server_id, *datacenter, *match_id, *player_id;
    const char *type; /* "kill", "score", "zone_change" or "crash" */
    struct {
        const char *victim_player_id, *weapon;
        bool headshot;
        float distance_m;
    } kill;
    struct {
        int64_t delta;
        const char *board, *reason;
    } score;
    struct {
        const char *from_zone, *to_zone; /* from "" = spawned */
    } zone_change;
    struct {
        const char *signature, *message, *build, *platform;
    } crash;
} gf_gamesim_event;

typedef struct gf_gamesim_dc {
    const char *name; /* a datacenter the fleet knows */
    int initial;      /* servers registered at start */
    int max;          /* the adapter runs at most this many (0 = no adapter growth) */
} gf_gamesim_dc;

typedef struct gf_gamesim_opts {
    const gf_gamesim_dc *dcs;
    size_t n_dcs;
    uint32_t capacity;       /* players per server; 0 = 16 */
    const char *address;     /* NULL = "127.0.0.1" */
    uint32_t port_base;      /* 0 = 7000; each server gets the next port */
    const char *id_prefix;   /* NULL = "sim": ids <prefix>-<dc>-<n> */
    int64_t play_ms;         /* match length once every token verified; < 0 = never ends */
    int64_t start_delay_ms;  /* adapter: a started server registers this much later */
    int64_t join_timeout_ms; /* 0 = 10 s: tokens not all there by then = aborted match */
    bool adapter;            /* act on FleetScaleRequests */
    bool no_auto_join;       /* tokens only through gf_gamesim_join() */
    int workers;             /* threads running the servers, 1..64; 0 = 1 (real servers run
                                in parallel: a benchmark with many servers needs several) */
    int64_t heartbeat_ms;    /* 0 = what the register reply says; > 0 overrides it (benchmarks
                                that keep thousands of servers quieter than the fleet asks) */
    uint32_t verify_every;   /* auto-join verifies the tokens of one match in this many; the
                                others' players are admitted unchecked (tokens_unchecked).
                                0 or 1 = every token (a benchmark running thousands of
                                servers on the service's own cores samples instead) */
    /* Play (optional): each match lasts a uniform time in [play_ms, play_max_ms] when
     * play_max_ms > play_ms; while it plays, its players produce on_event calls at
     * events_per_player_s each (Poisson: kills 40 %, scores 40 %, zone changes 20 %),
     * and the simulator's first such match and one in every crash_every after it (0:
     * none) report one crash at a random moment of their play. Seeded by `seed`
     * and the server's number, so a server's matches draw the same sequence on every
     * run; on_event is called on the worker thread, with the simulator's lock held:
     * it must not call back into the simulator (publishing is fine). */
    int64_t play_max_ms;
    double events_per_player_s;
    uint32_t crash_every;
    uint64_t seed;
    void (*on_event)(void *arg, const gf_gamesim_event *e);
    void *event_arg;
} gf_gamesim_opts;

typedef struct gf_gamesim_stats {
    uint64_t registers, heartbeats, heartbeat_failures;
    uint64_t allocations;    /* allocations noticed */
    uint64_t games_finished; /* game over reported and accepted */
    uint64_t tokens_ok, tokens_bad;
    uint64_t tokens_unchecked; /* admitted without verifying (opts.verify_every) */
    uint64_t allocations_gone; /* allocation withdrawn before its tokens came (aborted) */
    uint64_t scale_requests, started, woken, hibernated, hibernate_refused;
    uint64_t events, crashes; /* on_event calls, of which crash reports */
    uint32_t servers;         /* running (registered or starting) */
    uint32_t free, busy;      /* of the running ones */
    uint32_t hibernating;     /* stopped by the adapter, can be woken */
} gf_gamesim_stats;

gf_err gf_gamesim_start(natsConnection *nc, const gf_gamesim_opts *opts, gf_gamesim **out);
void gf_gamesim_stop(gf_gamesim *s); /* NULL is fine */

void gf_gamesim_stats_get(gf_gamesim *s, gf_gamesim_stats *out);

/* Test hooks. kill: the server stops heartbeating without deregistering (a crash).
 * GF_ERR_NOT_FOUND for an unknown id. */
gf_err gf_gamesim_kill(gf_gamesim *s, const char *server_id);

/* A player presents a token to `server_id`: GF_OK admitted; GF_ERR_INVALID bad token;
 * GF_ERR_PERMANENT expired or retired key; GF_ERR_CONFLICT for another server or
 * player, another match, or a player already admitted; GF_ERR_NOT_FOUND no such server
 * or it has no match. */
gf_err gf_gamesim_join(gf_gamesim *s, const char *server_id, const char *player_id,
                       const uint8_t *token, size_t len);

/* The match `server_id` is running ("" when none) into buf. false if unknown. */
bool gf_gamesim_match_of(gf_gamesim *s, const char *server_id, char *buf, size_t size);

#endif
