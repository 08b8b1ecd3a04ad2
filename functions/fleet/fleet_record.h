/*
 * fleet_record.h — the fleet's pure rules: request validation and every transition
 * of a ServerRecord (docs/PROTOCOL.md §8).
 *
 *   (none) --register--> FREE --allocate (allocator CAS)--> ALLOCATED
 *   ALLOCATED --heartbeat finished_match_id (its match decided) / release--> FREE
 *   FREE | ALLOCATED --heartbeat draining--> DRAINING (keeps its match) --register--> FREE |
 * ALLOCATED any --deregister | sweep (stale)--> (deleted)
 *
 * Transitions write into a caller-provided `next` record that BORROWS every string
 * and array from `old` and the request (nothing is allocated): pack it (KV value,
 * reply) while those are alive. Every write stamps stale_unix_ms = last heartbeat +
 * the heartbeat timeout, the one instant after which the record is stale for
 * everybody (the allocator never allocates it, the sweep removes it). A heartbeat that
 * would change nothing but those stamps writes nothing while they are recent enough
 * (fleet_heartbeat_skips).
 *
 * Validation reports the first broken rule, in field order, with the field's path
 * (e.g. `attributes[platform]`) and a "<field>: <what>" message, and the error
 * code: INVALID_ARGUMENT for a malformed request, FAILED_PRECONDITION when the
 * record's state forbids it. Pure and reentrant (gamefn_core, the schemas).
 */
#ifndef GAMEFN_FLEET_RECORD_H
#define GAMEFN_FLEET_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet_config.h"
#include "gamefn/err.h"
#include "gamefn/limits.h"
#include "gamefn/v1/fleet.pb-c.h"

/* What is wrong with a request, ready for an error reply. */
typedef struct fleet_problem {
    gf_err err;                    /* GF_ERR_INVALID, GF_ERR_NOT_FOUND, ... */
    int code;                      /* gamefn.v1.ErrorCode, 0 = from err */
    char field[GF_WIRE_FIELD_MAX]; /* path of the offending field, "" for none */
    char text[GF_WIRE_TEXT_MAX];   /* "<field>: <what is wrong>" */
    int full; /* a write refused for want of room: its JetStream code (fleet_store.h) */
} fleet_problem;

/* protobuf-c's structs hold `char *` where we only read: a borrowed const string goes in
 * through this (no copy, no -Wcast-qual warning). */
static inline char *fleet_str(const char *s)
{
    return (char *)(uintptr_t)s;
}

/* A record being written: the record and room for its attribute entries, so a
 * transition allocates nothing. */
typedef struct fleet_next {
    Gamefn__V1__ServerRecord rec;
    Gamefn__V1__ServerRecord__AttributesEntry attr[GF_WIRE_ATTRS_MAX];
    Gamefn__V1__ServerRecord__AttributesEntry *attr_ptr[GF_WIRE_ATTRS_MAX];
} fleet_next;

/* Sizes of the KV key "<datacenter>.<server_id>". */
enum { FLEET_KEY_MAX = GF_WIRE_NAME_MAX + 1 + GF_WIRE_ID_MAX + 1 };

/* "<datacenter>.<server_id>" into key (FLEET_KEY_MAX bytes). false if either is not
 * a valid token. */
bool fleet_key(const char *datacenter, const char *server_id, char key[FLEET_KEY_MAX]);
/* The inverse: false unless `key` is "<datacenter>.<server_id>" of two valid tokens. */
bool fleet_key_split(const char *key, char datacenter[GF_WIRE_NAME_MAX + 1],
                     char server_id[GF_WIRE_ID_MAX + 1]);

/* The server-id index (docs/PROTOCOL.md §8), in the same bucket: key "ids/<server_id>"
 * ('/' is in no datacenter name, so it is never a server's key), value the text
 * "<claimed_unix_ms> <datacenter>" — the one datacenter whose record holds the id, and
 * when a register last claimed it there. */
#define FLEET_ID_PREFIX "ids/"
enum { FLEET_ID_VALUE_MAX = 24 + GF_WIRE_NAME_MAX };
bool fleet_id_key(const char *server_id, char key[FLEET_KEY_MAX]); /* false: not a valid id */
bool fleet_is_id_key(const char *key);
/* Formats the value; returns its length. */
size_t fleet_id_value(const char *datacenter, int64_t claimed_unix_ms,
                      char out[FLEET_ID_VALUE_MAX]);
/* Parses a value; false when it is not one. */
bool fleet_id_parse(const void *data, size_t len, char datacenter[GF_WIRE_NAME_MAX + 1],
                    int64_t *claimed_unix_ms);

/* Request checks: GF_OK, or an error with *p filled. `cfg` gives the known
 * datacenters. */
gf_err fleet_check_register(const Gamefn__V1__RegisterServerRequest *req, const fleet_config *cfg,
                            fleet_problem *p);
gf_err fleet_check_heartbeat(const Gamefn__V1__HeartbeatRequest *req, const fleet_config *cfg,
                             fleet_problem *p);
gf_err fleet_check_deregister(const Gamefn__V1__DeregisterServerRequest *req,
                              const fleet_config *cfg, fleet_problem *p);

/* A stored record must be well formed before anyone acts on it (a record written by
 * another version, or by hand). GF_ERR_INVALID with *p filled otherwise. */
gf_err fleet_check_record(const Gamefn__V1__ServerRecord *rec, fleet_problem *p);

/* Register: a new record (old == NULL) starts FREE; an existing one gets the request's
 * address, port, capacity, attributes and version, keeps its allocation, and leaves
 * DRAINING (a re-register is how a server comes back). */
void fleet_apply_register(const Gamefn__V1__ServerRecord *old,
                          const Gamefn__V1__RegisterServerRequest *req, int64_t now_unix_ms,
                          int64_t heartbeat_timeout_ms, fleet_next *next);

/* What a heartbeat's game over (finished_match_id) does. In: `decided`, the match whose
 * commit record the caller found or created (NULL: none). Out: `released`, the match
 * whose allocation this heartbeat ends (NULL: none); `undecided`, a game over for the
 * running match while no record is known: the allocation is kept (an allocator may be
 * committing the match on this server right now), the caller decides the match —
 * ABORTED unless it was committed — and applies the heartbeat again. */
typedef struct fleet_game_over {
    const char *decided;
    const char *released;
    bool undecided;
} fleet_game_over;

/* Heartbeat on `old`: players, draining, and finished_match_id — which releases the
 * allocation only when it equals allocated_match_id and g->decided (g above).
 * GF_ERR_INVALID (*p) when players exceeds the capacity. */
gf_err fleet_apply_heartbeat(const Gamefn__V1__ServerRecord *old,
                             const Gamefn__V1__HeartbeatRequest *req, int64_t now_unix_ms,
                             int64_t heartbeat_timeout_ms, fleet_next *next, fleet_game_over *g,
                             fleet_problem *p);

/* Whether a heartbeat may leave the stored record `old` (NULL: none) as it is instead of
 * rewriting it — the fleet's heartbeat refresh (docs/PROTOCOL.md §8 "Heartbeat"): true only
 * when refresh_ms > 0 (fleet_config_refresh_ms), the request carries no finished_match_id (a
 * game over always writes), fleet_apply_heartbeat on `old` succeeds and yields a record that
 * differs from `old` in nothing but last_heartbeat_unix_ms and stale_unix_ms (players,
 * draining, attributes, allocation, fields of a newer schema: any change writes), and `old`
 * is fresh enough: stamped no later than now (a replica whose clock ran ahead does not keep
 * its stamp alive by others' skips) and stale_unix_ms later than now + heartbeat_timeout -
 * refresh (stamped less than refresh ago, as this fleet's timeout counts, so a record
 * written under a shorter timeout is rewritten). Skipping writes nothing, so it never
 * makes a record live longer than its last write did. */
bool fleet_heartbeat_skips(const Gamefn__V1__ServerRecord *old,
                           const Gamefn__V1__HeartbeatRequest *req, int64_t now_unix_ms,
                           int64_t heartbeat_timeout_ms, int64_t refresh_ms);

/* Whether a deregister may remove `rec`: HIBERNATE only a server with no match
 * (FAILED_PRECONDITION otherwise). *released = the match whose players are released
 * by the removal (NULL if none). */
gf_err fleet_check_removal(const Gamefn__V1__ServerRecord *rec, Gamefn__V1__DeregisterReason reason,
                           const char **released, fleet_problem *p);

/* May the allocator take `rec` for a match of `players` players at `now`? FREE, not
 * stale, enough capacity. */
bool fleet_allocatable(const Gamefn__V1__ServerRecord *rec, size_t players, int64_t now_unix_ms);

/* FREE -> ALLOCATED for `match_id` (the allocator's CAS): the players and tickets are
 * borrowed arrays. */
void fleet_apply_allocate(const Gamefn__V1__ServerRecord *old, const char *match_id,
                          char **player_ids, size_t n_players, char **ticket_ids, size_t n_tickets,
                          int64_t now_unix_ms, fleet_next *next);

/* Ends the allocation of `old` (game over, or an aborted match): FREE again, or
 * DRAINING without a match. Does not touch the heartbeat fields. */
void fleet_apply_release(const Gamefn__V1__ServerRecord *old, int64_t now_unix_ms,
                         fleet_next *next);

/* Stale: no heartbeat within the timeout (stale_unix_ms passed). */
bool fleet_stale(const Gamefn__V1__ServerRecord *rec, int64_t now_unix_ms);

#endif
