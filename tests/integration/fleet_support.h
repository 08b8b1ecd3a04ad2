/*
 * fleet_support.h — integration-test helpers for the fleet and the allocator: a real
 * nats-server with the matchmaking buckets and the MATCHES stream, a fresh join-key
 * pair, a config with functions.fleet and functions.allocator, the fleet requests,
 * hand-made CLAIMED tickets and Matches (as the matcher would write them), and reads of
 * what the functions wrote.
 *
 * Test code: assertions fail the calling cmocka test. Ownership: fleet_env owns its
 * gf_fnenv (server, directory, client); fleet_env_free() stops everything it started.
 * Decoded records returned to the caller are freed with the protobuf-c free functions.
 */
#ifndef GAMEFN_TEST_FLEET_SUPPORT_H
#define GAMEFN_TEST_FLEET_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fn_support.h"
#include "gamefn/v1/fleet.pb-c.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"
#include "gamesim.h"

#define FLEET_BIN     "functions/fleet/gamefn-fleet"
#define ALLOCATOR_BIN "functions/allocator/gamefn-allocator"

/* Knobs of the generated config (0 = the helper's test default). */
typedef struct fleet_env_opts {
    const char *datacenters;     /* YAML flow list items, e.g. "{name: eu, floor: 1}, {name: us}" */
    const char *fleet_extra;     /* more functions.fleet keys, one "    key: value\n" each */
    const char *allocator_extra; /* more functions.allocator keys */
    const char *backoff;         /* MATCHES/allocator backoff, default "[2s, 2s, 5s]" */
    const char *functions_extra; /* more functions: sections (intake, ticker, matcher) */
    const char *heartbeat;       /* functions.fleet.heartbeat_interval (timeout: 3 of them) */
    const char *heartbeat_timeout; /* functions.fleet.heartbeat_timeout instead */
    const char *deadline;          /* functions.allocator.deadline */
    int max_in_flight;             /* runtime.max_in_flight and fetch_batch (default 8) */
    const char *fetch_expiry;      /* runtime.fetch_expiry (default 1s) */
    const char *scale_interval;    /* functions.fleet.scale_interval (default 200ms) */
    bool shipped_users; /* the server runs deploy/nats/accounts.conf: the test's client and
                           `gamefn provision` connect as admin, fleet_service_spawn runs
                           each function as its own user */
} fleet_env_opts;

typedef struct fleet_env {
    gf_fnenv fn;
    bool shipped_users;
    kvStore *tickets, *fleet, *players, *matches;
    uint8_t pk[32]; /* the join key's public half */
} fleet_env;

/* functions_extra for the whole service: intake (pending_grace 2s), ticker (100 ms) and
 * matcher with datacenters eu (region eu) and us (na) and one queue, duel (hybrid 1v1). */
extern const char fleet_duel_functions[];
/* fleet_duel_functions with more functions.matcher keys ("    key: value\n" each, e.g. a
 * shorter claim_lease) into out. */
void fleet_duel_functions_with(char *out, size_t size, const char *matcher_keys);

void fleet_env_start(fleet_env *e, const fleet_env_opts *o);

/* The whole service on an env started with fleet_duel_functions: p[] = fleet, allocator,
 * intake, ticker, matcher (instances f1, a1, i1, t1, m1), each answering $SRV.PING.
 * fleet_service_stop() stops them in reverse order; each must exit 0. */
enum { FLEET_SERVICE_N = 5, FLEET_SERVICE_ALLOCATOR = 1 };
void fleet_service_spawn(fleet_env *e, gf_proc p[FLEET_SERVICE_N]);
/* Only member i of the service (e.g. the allocator, started late). */
void fleet_service_spawn_one(fleet_env *e, gf_proc p[FLEET_SERVICE_N], size_t i);
/* fleet_env_start with fleet_duel_functions plus the matcher's `matcher_keys` (see
 * fleet_duel_functions_with), then every member of the service but p[held]
 * (FLEET_SERVICE_N: all of them; the test starts that one itself). */
void fleet_duel_service_start(fleet_env *e, gf_proc p[FLEET_SERVICE_N], const char *matcher_keys,
                              size_t held);
void fleet_service_stop(gf_proc p[FLEET_SERVICE_N]);
void fleet_env_free(fleet_env *e);

/* Spawns a function and waits until it answers $SRV.PING. extra_env may be NULL. */
void fleet_env_spawn(fleet_env *e, gf_proc *p, const char *bin, const char *name,
                     const char *instance, char *const extra_env[]);

/* Starts `n` simulated servers sim-<dc>-<i> in `dc` (no adapter growth), each game
 * played play_ms (-1: forever), and waits until the fleet holds them all. Stop it with
 * gf_gamesim_stop(). */
gf_gamesim *fleet_sim_start(fleet_env *e, const char *dc, int n, int64_t play_ms);

/* A fleet request: packs `req`, returns the reply's gf_err (typed errors decoded with
 * gf_wire_reply_check); *code gets the wire code (may be NULL); *out (may be NULL) the
 * decoded reply on success. */
int fleet_call(fleet_env *e, const char *subject, const ProtobufCMessage *req,
               const ProtobufCMessageDescriptor *reply_desc, ProtobufCMessage **out, int *code,
               char *field, size_t field_size);
/* Same with raw bytes. */
int fleet_call_raw(fleet_env *e, const char *subject, const void *data, size_t len, int *code,
                   char *field, size_t field_size);

/* Registers server `id` in `dc` with capacity 10; asserts success. */
void fleet_register(fleet_env *e, const char *dc, const char *id);
/* The same with another address (a register again updates it). */
void fleet_register_at(fleet_env *e, const char *dc, const char *id, const char *address);
int fleet_heartbeat(fleet_env *e, const char *dc, const char *id, const char *finished);

/* The record of <dc>.<id>, or NULL when absent. */
Gamefn__V1__ServerRecord *fleet_record(fleet_env *e, const char *dc, const char *id);
size_t fleet_count(fleet_env *e); /* live server keys in the fleet bucket (not ids/<id>) */
/* Of the simulated servers sim-<dc>-1 .. sim-<dc>-<sims>, how many are allocated to
 * `match` (NULL: to any match). */
int fleet_allocated_to(fleet_env *e, const char *dc, int sims, const char *match);

/* A CLAIMED ticket (one player per ticket, player id = "p-" + ticket id) claimed by
 * `match_id`, queued at queued_ms, with its players record. */
void fleet_claim_ticket(fleet_env *e, const char *ticket_id, const char *match_id,
                        int64_t queued_ms);
/* A QUEUED ticket (the same player and pings), with its players record. */
void fleet_queue_ticket(fleet_env *e, const char *ticket_id, int64_t queued_ms);
/* Publishes a 1v1-style Match of `n` tickets, one per team, formed now, with the
 * datacenters listed (comma-separated, best first). */
void fleet_publish_match(fleet_env *e, const char *match_id, char *const *tickets, size_t n,
                         const char *datacenters);
/* The same, formed at created_ms (its claims' lease ends 60 s later). */
void fleet_publish_match_at(fleet_env *e, const char *match_id, char *const *tickets, size_t n,
                            const char *datacenters, int64_t created_ms);
/* The same with its own Nats-Msg-Id (a replay past JetStream's duplicate window). */
void fleet_publish_match_as(fleet_env *e, const char *match_id, const char *msg_id,
                            char *const *tickets, size_t n, const char *datacenters,
                            int64_t created_ms);

Gamefn__V1__TicketRecord *fleet_ticket(fleet_env *e, const char *ticket_id);
/* Waits until the ticket is in `state` (timeout_ms); returns it (caller frees) or fails. */
Gamefn__V1__TicketRecord *fleet_wait_ticket(fleet_env *e, const char *ticket_id, int state,
                                            int timeout_ms);
/* MatchOutcome state of matches/<id>: 0 none, 1 COMMITTED, 2 ABORTED. */
int fleet_outcome_state(fleet_env *e, const char *match_id);
bool fleet_player_exists(fleet_env *e, const char *player_id);

/* Two new tickets through intake (the service of fleet_duel_service_start), one for
 * player a and one for b, keys "k-<player>", pinging eu best: their ids into id[], their
 * queue times into queued[] (may be NULL). */
void fleet_create_pair(fleet_env *e, const char *a, const char *b, char id[2][80],
                       int64_t queued[2]);
/* Waits (30 s) until both tickets are ASSIGNED to one match on one server; that match
 * into match. */
void fleet_both_assigned(fleet_env *e, char id[2][80], char *match, size_t size);

/* Waits until the MATCHES work queue is empty: every Match acked or terminated. */
void fleet_wait_matches_drained(fleet_env *e, int timeout_ms);
/* The ticket's KV revision, 0 when absent. */
uint64_t fleet_ticket_revision(fleet_env *e, const char *ticket_id);
/* The KV revision of a key of the fleet bucket (<dc>.<server_id>, ids/<server_id>), 0 when
 * absent. */
uint64_t fleet_key_revision(fleet_env *e, const char *key);

/* Polls until `text` appears in the process's log (timeout_ms). */
bool fleet_log_has(const gf_proc *p, const char *text, int timeout_ms);
/* The lines of the process's log that hold `text`. */
size_t fleet_log_count(const gf_proc *p, const char *text);

#endif
