/*
 * fleet_outcome.h — the commit record of a match (`matches/<match_id>`, written once by
 * create-if-absent; gamefn/tickets/outcome.h) as the fleet function needs it: to learn
 * whether a match happened, and to abort one whose server is gone before it was
 * committed.
 *
 * Threads: reentrant. The kvStore is borrowed.
 */
#ifndef GAMEFN_FLEET_OUTCOME_H
#define GAMEFN_FLEET_OUTCOME_H

#include <nats/nats.h>

#include "gamefn/err.h"

typedef enum fleet_outcome {
    FLEET_OUTCOME_UNKNOWN = 0, /* no record (read only) */
    FLEET_OUTCOME_COMMITTED,
    FLEET_OUTCOME_ABORTED,
} fleet_outcome;

/* What matches/<match_id> says now. GF_ERR_INVALID for a record that does not decode. */
gf_err fleet_outcome_read(kvStore *matches, const char *match_id, fleet_outcome *out);

/* Aborts the match (reason NO_SERVER) unless it is already decided; *out is what the
 * record says afterwards: ABORTED (by us or before), or COMMITTED (the match happened). */
gf_err fleet_outcome_abort(kvStore *matches, const char *match_id, const char *decided_by,
                           fleet_outcome *out);

#endif
