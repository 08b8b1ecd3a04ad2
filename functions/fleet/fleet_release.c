/*
 * fleet_release.c — what the end of a match, or the loss of its server, does to the
 * `players` and `matches` buckets.
 *
 * Design notes:
 * - A player's record (players/<player_id>) names the player's one active ticket. It
 *   is deleted here only while it still names one of this allocation's tickets, by
 *   compare-and-set on the revision read: a player who already queued again (a new
 *   ticket, a new record) keeps the new record. The match's records are read in one
 *   batch and deleted in one (gf_mmstore_release_players).
 * - A server removed while allocated may have a match that was never committed (the
 *   allocator took the server, then the server died). The rule of the commit record
 *   applies (docs/MATCHMAKING.md): whoever takes a match away creates
 *   matches/<match_id> = ABORTED first; if that finds COMMITTED, the match happened
 *   and its players are released like after a game. An aborted match's tickets go
 *   back to the pool (by their allocator or matcher) and keep their players' records.
 * - A game over is the same for a match never committed: the server says it does not run
 *   it, so the match is aborted before the server is freed (an allocator may be about to
 *   commit it there; it then finds ABORTED and returns the tickets).
 * - Order: every write that depends on what a server record holds comes before the
 *   write that ends it. A game over releases the players, then frees the server; a
 *   removal decides the match (and releases its players), then deletes the record, then
 *   its ids/<server_id> index. A crash (or a failed write) between two steps leaves the
 *   record as it was, so the retry that follows — the server's game over or deregister
 *   again, the next sweep of a stale record — repeats every step from the start, each one
 *   idempotent (create-if-absent of the commit record, compare-and-set deletes). The other
 *   order lost the players' release in that gap: the retry found the server FREE (or
 *   gone) and nothing to do, and the players could not queue again until their records
 *   stopped counting (max_match_duration, 2 h); a match not yet committed could even be
 *   committed on the removed server. A crash after the record's delete leaves only the
 *   index, which a register takes over (docs/PROTOCOL.md §8).
 * - What cannot be retried is logged: a stale server that heartbeats between its match's
 *   settling and its delete wins the race and is kept, its match already aborted or its
 *   players released (the server had been silent for heartbeat_timeout: lost, as if
 *   removed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_fn.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/tickets/outcome.h"
#include "mmstore.h"

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

void fleet_pause_at(const fleet_state *st, const char *step, const char *key, const char *match)
{
    if (!gf_test_pause_armed(&st->pause, step))
        return;
    char what[FLEET_KEY_MAX + GF_WIRE_ID_MAX + 32];
    snprintf(what, sizeof what, "server=%s match=%s", key, match && match[0] ? match : "-");
    gf_test_pause_at(&st->pause, step, what);
}

gf_err fleet_release_finished(fleet_state *st, const fleet_released *r)
{
    size_t failed =
        gf_mmstore_release_players(st->store, (const char *const *)r->players, r->n_players,
                                   (const char *const *)r->tickets, r->n_tickets);
    if (failed)
        gf_log_warn("some players of a finished match not released", "match=%s failed=%zu",
                    r->match_id, failed);
    return failed ? GF_ERR_UNAVAILABLE : GF_OK;
}

/* on_key of a COMMITTED outcome: where it runs ("" if the record names no server). */
static void committed_on(const Gamefn__V1__MatchOutcome *o, char *on_key)
{
    on_key[0] = '\0';
    /* One server per match: every assignment names the same one. */
    const Gamefn__V1__Assignment *a = o->n_assignments ? o->assignments[0] : NULL;
    if (a && !fleet_key(a->datacenter, a->server_id, on_key))
        on_key[0] = '\0';
}

bool fleet_committed_here(const char *on_key, const char *key)
{
    return !on_key[0] || strcmp(on_key, key) == 0;
}

gf_err fleet_abort_unless_committed(fleet_state *st, const char *match_id, bool *committed,
                                    char *on_key)
{
    Gamefn__V1__MatchOutcome *o = NULL;
    *committed = false;
    if (on_key)
        on_key[0] = '\0';
    gf_err err = gf_mmstore_abort_match(
        st->store, match_id, GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_NO_SERVER, NULL,
        st->instance_id, gf_clock_unix_ms(), &o);
    if (err == GF_OK)
        *committed = o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED;
    if (on_key && *committed)
        committed_on(o, on_key);
    gf_outcome_free(o);
    return err;
}

gf_err fleet_finished_decide(fleet_state *st, const char *match_id, bool *committed, char *on_key)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t rev = 0;
    Gamefn__V1__MatchOutcome *o = NULL;
    *committed = false;
    on_key[0] = '\0';
    gf_err err = gf_mmstore_get(st->store, GF_MM_MATCHES, match_id, &buf, &len, &rev);
    if (err == GF_OK)
        err = gf_outcome_decode(buf, len, match_id, &o, NULL);
    free(buf);
    if (err == GF_ERR_NOT_FOUND) {
        gf_log_warn("game over for a match not committed: aborting it", "match=%s", match_id);
        return fleet_abort_unless_committed(st, match_id, committed, on_key);
    }
    if (err == GF_ERR_INVALID) { /* nobody can create it any more: decided, not committed */
        gf_log_warn("commit record unreadable; game over frees the server", "match=%s", match_id);
        return GF_OK;
    }
    if (err == GF_OK)
        *committed = o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED;
    if (err == GF_OK && *committed)
        committed_on(o, on_key);
    gf_outcome_free(o);
    return err;
}

gf_err fleet_release_removed(fleet_state *st, const char *key, const fleet_released *r)
{
    bool committed = false;
    char on[FLEET_KEY_MAX];
    gf_err err = fleet_abort_unless_committed(st, r->match_id, &committed, on);
    if (err != GF_OK) {
        gf_log_warn("match of a removed server left undecided", "match=%s err=%s", r->match_id,
                    gf_err_str(err));
        return err;
    }
    fleet_pause_at(st, "decided", key, r->match_id);
    if (committed && fleet_committed_here(on, key))
        err = fleet_release_finished(st, r);
    else if (committed)
        gf_log_info("a spare server of a committed match removed: its players stay in the match",
                    "server=%s match=%s on=%s", key, r->match_id, on);
    else
        gf_log_info("match of a removed server aborted", "match=%s", r->match_id);
    return err;
}

gf_err fleet_removal_settle(fleet_state *st, const char *key, const fleet_released *r)
{
    gf_err err = r->match_id[0] ? fleet_release_removed(st, key, r) : GF_OK;
    if (err == GF_OK)
        fleet_pause_at(st, "released", key, r->match_id);
    return err;
}

void fleet_removal_finish(fleet_state *st, const char *key, const char *match_id)
{
    char dc[GF_WIRE_NAME_MAX + 1], id[GF_WIRE_ID_MAX + 1];
    fleet_pause_at(st, "removed", key, match_id);
    if (fleet_key_split(key, dc, id))
        fleet_ids_release(st, dc, id);
}
