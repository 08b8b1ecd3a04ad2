/*
 * fleet_fn.h — the fleet function's running state and the pieces main.c wires to
 * endpoints (private to functions/fleet).
 *
 *   fleet_serve.c    register, heartbeat, deregister, keys (request/reply, queue "fleet")
 *   fleet_ids.c      one datacenter per server id: the "ids/<server_id>" index
 *   fleet_sweep.c    the tick: stale servers, broken keys, abandoned allocations, orphaned
 *                    ids/ indexes, the warm pool;
 *                    the demand subscription that feeds the forecast
 *   fleet_release.c  what a match's end or a server's removal does to the `players`
 *                    and `matches` buckets (through mmstore, the matchmaking seam)
 *
 * Threads: register and heartbeat run 4 handlers each, deregister, keys and the tick
 * one each, the demand subscription and the mirror their own threads. Handlers share
 * nothing but what is listed here. Shared mutable state is the
 * demand history and the sweep's memory, both under `lock`, and the two clocks of a full
 * bucket (atomics); everything else is set in init and read-only afterwards.
 */
#ifndef GAMEFN_FLEET_FN_H
#define GAMEFN_FLEET_FN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nats/nats.h>

#include "fleet_config.h"
#include "fleet_mirror.h"
#include "fleet_record.h"
#include "gamefn/endpoint.h"
#include "gamefn/join_key.h"
#include "gamefn/test_pause.h"
#include "mmstore.h"
#include "warm.h"

enum { FLEET_KEYS_MAX = 8 };

typedef struct fleet_state {
    const fleet_config *cfg;
    const char *instance_id; /* borrowed from the runtime */
    natsConnection *nc;
    jsCtx *js;
    kvStore *fleet_kv;
    gf_mmstore *store; /* players and matches */
    fleet_mirror *mirror;
    /* Join keys from config, as wire messages (current first). */
    gf_join_key keys[FLEET_KEYS_MAX];
    Gamefn__V1__JoinKey wire_keys[FLEET_KEYS_MAX];
    size_t n_keys;
    natsSubscription *demand_sub;

    pthread_mutex_t lock;
    warm_history *demand; /* per configured datacenter, under lock */
    char **committed;     /* "<key> <match_id>" known COMMITTED, sorted, under lock */
    size_t n_committed;
    /* GAMEFN_TEST_FLEET_PAUSE=<step> (gamefn/test_pause.h): tests stop the fleet between
     * two writes of one request, to SIGKILL it there. Steps: `claimed` (register: the
     * ids/<server_id> index written, the record not); `decided` (game over or removal:
     * the match's commit record read or created ABORTED, nothing else written);
     * `released` (its players released, the server record not yet FREE or removed);
     * `removed` (removal: the record deleted, its ids/<server_id> index not released). */
    gf_test_pause pause;
    /* The bucket refusing writes for want of room (fleet_store.h), as this instance saw
     * it: monotonic ms of the last refusal and of the last warning about one (0 = never). */
    _Atomic int64_t full_seen_ms;
    _Atomic int64_t full_logged_ms;
    _Atomic int64_t stale_kept_logged_ms; /* the sweep's warning that it keeps them */
} fleet_state;

/* Period of the tick gamefn.v1.tick.fleet (the sweep and the scale requests). */
enum { FLEET_TICK_MS = 1000 };

/* The keys to hand out at `now` (retired ones left out), current first: fills ptrs. */
size_t fleet_keys_current(fleet_state *st, int64_t now_unix_ms, Gamefn__V1__JoinKey **ptrs);

/* Fills a reply's error from a problem (the wire code is always explicit, so the
 * message reads "<field>: <what>"). Returns p->err. */
gf_err fleet_reply_problem(gf_reply *reply, const fleet_problem *p);

/* A write refused for want of room (JetStream js_code) while doing `what` to `key`:
 * remembered (fleet_full_within) and logged, at most one line every 10 s. */
void fleet_full_note(fleet_state *st, int js_code, const char *what, const char *key);
/* Whether this instance saw the bucket refuse a write for want of room in the last
 * window_ms. */
bool fleet_full_within(fleet_state *st, int64_t window_ms);

gf_err fleet_on_register(gf_fn *fn, const gf_msg *req, gf_reply *reply);
gf_err fleet_on_heartbeat(gf_fn *fn, const gf_msg *req, gf_reply *reply);
gf_err fleet_on_deregister(gf_fn *fn, const gf_msg *req, gf_reply *reply);
gf_err fleet_on_keys(gf_fn *fn, const gf_msg *req, gf_reply *reply);
gf_err fleet_on_tick(gf_fn *fn, const gf_tick *tick);

/* Subscribes to gamefn.v1.fleet.demand.> (every instance keeps its own history). */
gf_err fleet_demand_start(fleet_state *st);

/* Claims `server_id` for `datacenter` in the index before a register writes its record:
 * GF_OK, or refused (GF_ERR_CONFLICT, FAILED_PRECONDITION naming server_id, *p filled)
 * while another datacenter holds a record of it, or a register there claimed it less than
 * heartbeat_timeout ago; other errors are the store's (retry). */
gf_err fleet_ids_claim(fleet_state *st, const char *datacenter, const char *server_id,
                       int64_t now_unix_ms, fleet_problem *p);
/* After the record <datacenter>.<server_id> was removed: deletes the index if it still
 * names `datacenter` (by compare-and-set: a register claiming it meanwhile keeps it). */
void fleet_ids_release(fleet_state *st, const char *datacenter, const char *server_id);
/* The sweep's: deletes the index key `key` ("ids/<server_id>") if it is orphaned — an
 * index value whose datacenter holds no record of the id, claimed heartbeat_timeout or
 * longer before `now` (the rule fleet_ids_claim takes one over by) — read from the
 * bucket, deleted by compare-and-set on the revision read, logged once at info (a lost
 * compare-and-set is GF_OK: a register claimed it again). Anything else (a live server's index, a
 * young claim, a value that is no index) is left alone. A full bucket goes to fleet_full_note
 * (GF_OK); errors are the store's (the next sweep tries again). */
gf_err fleet_ids_remove_orphan(fleet_state *st, const char *key, int64_t now_unix_ms);

/* A copy of what a removed or released allocation held, taken before the write. */
typedef struct fleet_released {
    char match_id[GF_WIRE_ID_MAX + 1]; /* "" = none */
    char **players;
    size_t n_players;
    char **tickets;
    size_t n_tickets;
} fleet_released;

gf_err fleet_released_copy(const Gamefn__V1__ServerRecord *rec, fleet_released *out);
void fleet_released_fini(fleet_released *r);

/* Test-only: stops at `step` (fleet_state.pause) when armed; the log names server and match. */
void fleet_pause_at(const fleet_state *st, const char *step, const char *key, const char *match);

/* The match of a finished game: release its players (they may queue again). GF_OK, or
 * GF_ERR_UNAVAILABLE when some record that still names one of its tickets could not be
 * deleted (the caller keeps the server's record as it is, so a retry releases them). */
gf_err fleet_release_finished(fleet_state *st, const fleet_released *r);

/* Creates matches/<match_id> = ABORTED (NO_SERVER: its server is gone) unless the match
 * is decided; *committed says whether it had been committed (the game was running), and
 * on_key (FLEET_KEY_MAX bytes, may be NULL) the fleet key of the server it was committed
 * on ("" when not committed or the record names none). */
gf_err fleet_abort_unless_committed(fleet_state *st, const char *match_id, bool *committed,
                                    char *on_key);

/* A game over for `match_id`, the match its server runs: the match's commit record, read,
 * or created ABORTED (NO_SERVER) when there is none — the server is not running the match,
 * so no allocator may commit it there. *committed: the record is COMMITTED; on_key
 * (FLEET_KEY_MAX bytes) as in fleet_abort_unless_committed. */
gf_err fleet_finished_decide(fleet_state *st, const char *match_id, bool *committed, char *on_key);

/* Whether a match COMMITTED on server `on_key` (fleet_abort_unless_committed) was running
 * on server `key`: false for a spare, a server an allocator took for the match as well
 * and did not keep. Its players are in the game on the other server and are released only
 * by that one's game over or departure. A record naming no server counts as this one. */
bool fleet_committed_here(const char *on_key, const char *key);

/* The match of server `key`, about to be removed (stale, or shut down while allocated):
 * if it was never committed, abort it (its tickets go back to the pool, keeping their
 * players); if it was committed on this server, release its players. Called before the
 * record is deleted, so a failure (returned) or a crash leaves the record, and the
 * removal's retry (the next sweep, the server's deregister again) repeats this first:
 * every step is idempotent. */
gf_err fleet_release_removed(fleet_state *st, const char *key, const fleet_released *r);

/* A removal's first step, before the record `key` is deleted: its match (r, may hold
 * none) settled by fleet_release_removed. GF_OK: delete the record, then call
 * fleet_removal_finish; otherwise keep it (the retry settles it again). */
gf_err fleet_removal_settle(fleet_state *st, const char *key, const fleet_released *r);
/* A removal's last step, after the record `key` was deleted: its id's index released. */
void fleet_removal_finish(fleet_state *st, const char *key, const char *match_id);

#endif
