/*
 * fleet_outcome.h — the commit record of a match (`matches/<match_id>`, written once by
 * create-if-absent; gamefn/tickets/outcome.h encodes it and holds the rules) in KV, for
 * the fleet function and the allocator: read it, or decide it (create-if-absent, and
 * whoever loses the create reads what the winner wrote).
 *
 * Threads: reentrant. The kvStore is borrowed; decoded outcomes are the caller's
 * (gf_outcome_free()).
 */
#ifndef GAMEFN_FLEET_OUTCOME_H
#define GAMEFN_FLEET_OUTCOME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "gamefn/err.h"
#include "gamefn/v1/match.pb-c.h"

/* The record of `match_id`: GF_OK with *o set, or NULL when there is none yet.
 * GF_ERR_INVALID for a stored value that does not decode as this match's outcome. */
gf_err fleet_outcome_get(kvStore *matches, const char *match_id, Gamefn__V1__MatchOutcome **o);

/* Creates the record from `buf` (a packed MatchOutcome) unless one exists. *o = the
 * record that holds afterwards; *created = it is ours. */
gf_err fleet_outcome_decide(kvStore *matches, const char *match_id, const uint8_t *buf, size_t len,
                            Gamefn__V1__MatchOutcome **o, bool *created);

typedef enum fleet_outcome {
    FLEET_OUTCOME_UNKNOWN = 0, /* no record */
    FLEET_OUTCOME_COMMITTED,
    FLEET_OUTCOME_ABORTED,
} fleet_outcome;

/* What matches/<match_id> says now. */
gf_err fleet_outcome_read(kvStore *matches, const char *match_id, fleet_outcome *out);

/* Aborts the match (reason NO_SERVER: its server is gone) unless it is decided already;
 * *out is what holds afterwards: ABORTED (by us or before) or COMMITTED. */
gf_err fleet_outcome_abort(kvStore *matches, const char *match_id, const char *decided_by,
                           fleet_outcome *out);

#endif
