/*
 * pending.h — how long this intake has itself seen a players record unchanged.
 *
 * A players record whose ticket does not exist yet is a create in progress until it is
 * pending_grace old; after that the create is taken for dead and the record replaced.
 * Its age used to be the writer's wall clock judged by the reader's: an intake whose
 * clock ran pending_grace ahead of another's took that one's create in progress for
 * dead, and the player could end with two live tickets (test_mm_skew). So the age is
 * also counted on this process's monotonic clock from the first time it saw that
 * revision of the record; the record is stale only when both say pending_grace has
 * passed. A record the wall clocks call older than GF_INTAKE_PENDING_OLD_MS (far
 * beyond any clock error a host keeps unnoticed) is stale at once, so the leftovers of
 * a create that died long ago cost no wait.
 *
 * Any change of the record (a retry renewing it) is a new revision: its count starts
 * again. The table has a fixed size (sets of a few slots per player id hash); a slot
 * taken over by another player restarts the count of the one it held (a later verdict,
 * never an earlier one).
 *
 * Threads: creates run concurrently; one mutex guards the table. Ownership:
 * intake_pending_new allocates, intake_pending_free (NULL accepted) releases.
 */
#ifndef GAMEFN_INTAKE_PENDING_H
#define GAMEFN_INTAKE_PENDING_H

#include <stdbool.h>
#include <stdint.h>

#include "gamefn/err.h"

enum { GF_INTAKE_PENDING_SLOTS = 1024 };
#define GF_INTAKE_PENDING_OLD_MS (3600LL * 1000)

typedef struct intake_pending intake_pending;

gf_err intake_pending_new(intake_pending **out);
void intake_pending_free(intake_pending *p);

/* Whether this process has seen `revision` of players/<player> for at least grace_ms
 * (now_mono_ms: gf_clock_mono_ms()). The first sight of a revision starts its count and
 * answers false (unless grace_ms <= 0). */
bool intake_pending_seen_for(intake_pending *p, const char *player, uint64_t revision,
                             int64_t now_mono_ms, int64_t grace_ms);

#endif
