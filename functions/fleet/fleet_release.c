/*
 * fleet_release.c — what the end of a match, or the loss of its server, does to the
 * `players` and `matches` buckets.
 *
 * Design notes:
 * - A player's record (players/<player_id>) names the player's one active ticket. It
 *   is deleted here only while it still names one of this allocation's tickets, by
 *   compare-and-set on the revision read: a player who already queued again (a new
 *   ticket, a new record) keeps the new record.
 * - A server removed while allocated may have a match that was never committed (the
 *   allocator took the server, then the server died). The rule of the commit record
 *   applies (docs/MATCHMAKING.md): whoever takes a match away creates
 *   matches/<match_id> = ABORTED first; if that finds COMMITTED, the match happened
 *   and its players are released like after a game. An aborted match's tickets go
 *   back to the pool (by their allocator or matcher) and keep their players' records.
 * - Failures are logged and left: a later sweep, the claim lease, or intake's stale
 *   record rule (a record whose ticket ended long ago is replaced) finish the job.
 */
#include <stdlib.h>
#include <string.h>

#include "fleet_fn.h"
#include "fleet_outcome.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/v1/match.pb-c.h"

static char **copy_ids(char *const *ids, size_t n)
{
    char **out = calloc(n ? n : 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
        out[i] = strdup(ids[i]);
        if (!out[i]) {
            for (size_t j = 0; j < i; j++)
                free(out[j]);
            free(out);
            return NULL;
        }
    }
    return out;
}

static void free_ids(char **ids, size_t n)
{
    for (size_t i = 0; ids && i < n; i++)
        free(ids[i]);
    free(ids);
}

gf_err fleet_released_copy(const Gamefn__V1__ServerRecord *rec, fleet_released *out)
{
    memset(out, 0, sizeof *out);
    if (!rec || !rec->allocated_match_id || !rec->allocated_match_id[0])
        return GF_OK;
    snprintf(out->match_id, sizeof out->match_id, "%s", rec->allocated_match_id);
    out->players = copy_ids(rec->expected_player_ids, rec->n_expected_player_ids);
    out->tickets = copy_ids(rec->allocated_ticket_ids, rec->n_allocated_ticket_ids);
    if (!out->players || !out->tickets) {
        fleet_released_fini(out);
        return GF_ERR_NOMEM;
    }
    out->n_players = rec->n_expected_player_ids;
    out->n_tickets = rec->n_allocated_ticket_ids;
    return GF_OK;
}

void fleet_released_fini(fleet_released *r)
{
    if (!r)
        return;
    free_ids(r->players, r->n_players);
    free_ids(r->tickets, r->n_tickets);
    memset(r, 0, sizeof *r);
}

static bool has_ticket(const fleet_released *r, const char *ticket_id)
{
    for (size_t i = 0; ticket_id && i < r->n_tickets; i++)
        if (strcmp(r->tickets[i], ticket_id) == 0)
            return true;
    return false;
}

/* Deletes players/<player_id> if it still names one of r's tickets. */
static gf_err release_player(fleet_state *st, const fleet_released *r, const char *player_id)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        kvEntry *e = NULL;
        gf_err err = gf_kv_get(st->players_kv, player_id, &e);
        if (err == GF_ERR_NOT_FOUND)
            return GF_OK;
        if (err != GF_OK)
            return err;
        Gamefn__V1__PlayerMatchRecord *rec = gamefn__v1__player_match_record__unpack(
            NULL, (size_t)kvEntry_ValueLen(e), kvEntry_Value(e));
        bool ours = rec && has_ticket(r, rec->ticket_id);
        uint64_t rev = kvEntry_Revision(e);
        gamefn__v1__player_match_record__free_unpacked(rec, NULL);
        kvEntry_Destroy(e);
        if (!ours)
            return GF_OK; /* the player has moved on to another ticket */
        err = gf_kv_delete_if(st->js, st->players_kv, player_id, rev);
        if (err != GF_ERR_CONFLICT)
            return err;
    }
    return GF_ERR_CONFLICT;
}

void fleet_release_finished(fleet_state *st, const fleet_released *r)
{
    size_t failed = 0;
    for (size_t i = 0; i < r->n_players; i++)
        if (release_player(st, r, r->players[i]) != GF_OK)
            failed++;
    if (failed)
        gf_log_warn("some players of a finished match not released", "match=%s failed=%zu",
                    r->match_id, failed);
}

void fleet_release_removed(fleet_state *st, const fleet_released *r)
{
    fleet_outcome outcome = FLEET_OUTCOME_UNKNOWN;
    gf_err err = fleet_outcome_abort(st->matches_kv, r->match_id, st->instance_id, &outcome);
    if (err != GF_OK) {
        gf_log_warn("match of a removed server left undecided", "match=%s err=%s", r->match_id,
                    gf_err_str(err));
        return;
    }
    if (outcome == FLEET_OUTCOME_COMMITTED)
        fleet_release_finished(st, r);
    else
        gf_log_info("match of a removed server aborted", "match=%s", r->match_id);
}
