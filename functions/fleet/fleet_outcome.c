/*
 * fleet_outcome.c — the commit record as the fleet (and the allocator) uses it (see
 * fleet_outcome.h). Encoding and the rules are gamefn/tickets/outcome.h's; this file
 * only reads and creates the key.
 */
#include "fleet_outcome.h"

#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/tickets/outcome.h"

gf_err fleet_outcome_read(kvStore *matches, const char *match_id, fleet_outcome *out)
{
    kvEntry *e = NULL;
    *out = FLEET_OUTCOME_UNKNOWN;
    gf_err err = gf_kv_get(matches, match_id, &e);
    if (err == GF_ERR_NOT_FOUND)
        return GF_OK;
    if (err != GF_OK)
        return err;
    Gamefn__V1__MatchOutcome *o = NULL;
    err = gf_outcome_decode(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), match_id, &o, NULL);
    kvEntry_Destroy(e);
    if (err == GF_OK)
        *out = o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED
                   ? FLEET_OUTCOME_COMMITTED
                   : FLEET_OUTCOME_ABORTED;
    gf_outcome_free(o);
    return err;
}

gf_err fleet_outcome_abort(kvStore *matches, const char *match_id, const char *decided_by,
                           fleet_outcome *out)
{
    gf_err err = fleet_outcome_read(matches, match_id, out);
    if (err != GF_OK || *out != FLEET_OUTCOME_UNKNOWN)
        return err;
    uint8_t *buf = NULL;
    size_t len = 0;
    err = gf_outcome_abort_pack(match_id, GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_NO_SERVER,
                                NULL, "its game server was lost before the match was committed",
                                decided_by, gf_clock_unix_ms(), &buf, &len, NULL);
    if (err == GF_OK)
        err = gf_kv_create(matches, match_id, buf, len, NULL);
    free(buf);
    if (err == GF_OK) {
        *out = FLEET_OUTCOME_ABORTED;
        return GF_OK;
    }
    if (err == GF_ERR_CONFLICT) /* decided meanwhile: read what */
        return fleet_outcome_read(matches, match_id, out);
    return err;
}
