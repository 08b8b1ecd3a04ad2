/*
 * fleet_outcome.c — the commit record in KV (see fleet_outcome.h). Encoding and rules
 * are gamefn/tickets/outcome.h's; this file only reads and creates the key.
 */
#include "fleet_outcome.h"

#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/tickets/outcome.h"

gf_err fleet_outcome_get(kvStore *matches, const char *match_id, Gamefn__V1__MatchOutcome **o)
{
    kvEntry *e = NULL;
    *o = NULL;
    gf_err err = gf_kv_get(matches, match_id, &e);
    if (err == GF_ERR_NOT_FOUND)
        return GF_OK;
    if (err != GF_OK)
        return err;
    err = gf_outcome_decode(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), match_id, o, NULL);
    kvEntry_Destroy(e);
    return err;
}

gf_err fleet_outcome_decide(kvStore *matches, const char *match_id, const uint8_t *buf, size_t len,
                            Gamefn__V1__MatchOutcome **o, bool *created)
{
    *o = NULL;
    *created = false;
    gf_err err = gf_kv_create(matches, match_id, buf, len, NULL);
    if (err == GF_OK) {
        *created = true;
        return gf_outcome_decode(buf, len, match_id, o, NULL);
    }
    if (err != GF_ERR_CONFLICT)
        return err; /* a timeout is an unknown outcome: the caller retries later */
    err = fleet_outcome_get(matches, match_id, o);
    return err == GF_OK && !*o ? GF_ERR_CONFLICT : err; /* deleted meanwhile: retry */
}

static fleet_outcome state_of(const Gamefn__V1__MatchOutcome *o)
{
    if (!o)
        return FLEET_OUTCOME_UNKNOWN;
    return o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED
               ? FLEET_OUTCOME_COMMITTED
               : FLEET_OUTCOME_ABORTED;
}

gf_err fleet_outcome_read(kvStore *matches, const char *match_id, fleet_outcome *out)
{
    Gamefn__V1__MatchOutcome *o = NULL;
    gf_err err = fleet_outcome_get(matches, match_id, &o);
    *out = state_of(o);
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
    Gamefn__V1__MatchOutcome *o = NULL;
    bool created = false;
    err = gf_outcome_abort_pack(match_id,
                                GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_NO_SERVER, NULL,
                                "its game server was lost before the match was committed",
                                decided_by, gf_clock_unix_ms(), &buf, &len, NULL);
    if (err == GF_OK)
        err = fleet_outcome_decide(matches, match_id, buf, len, &o, &created);
    *out = state_of(o);
    gf_outcome_free(o);
    free(buf);
    return err;
}
