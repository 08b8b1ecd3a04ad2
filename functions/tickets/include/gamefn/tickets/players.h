/*
 * gamefn/tickets/players.h — `players/<player_id>`: a player's one active ticket.
 *
 * Intake creates the record (create-if-absent) for every member before it creates the
 * ticket. When the create finds a record, the record is judged against the ticket it
 * names (read by the caller):
 *
 *   LIVE     the ticket is QUEUED or CLAIMED, or ASSIGNED less than max_match_ms ago
 *            (its match may still run): the player keeps that ticket; a new create
 *            answers with its status.
 *   PENDING  the ticket does not exist (yet) and the record is younger than
 *            pending_grace_ms: another create for this player is between its two
 *            writes. Answer CONFLICT with a short retry_after_ms.
 *   STALE    anything else: the ticket is missing past the grace (its creator died
 *            between the two writes), CANCELLED, TIMED_OUT, ASSIGNED longer ago than
 *            max_match_ms, or does not list the player. Replace the record by
 *            compare-and-set on the revision read.
 *
 * Who deletes a record (compare-and-set, only while it still names the ticket): the
 * writer of CANCELLED or TIMED_OUT; the fleet function when the match ends
 * (finished_match_id) or its server is removed for missed heartbeats. A ticket
 * returned to the pool keeps its record (it is still the player's active ticket).
 *
 * Pure and reentrant. Buffers from _pack are malloc'd (caller frees); decoded records
 * are freed with gf_players_free().
 */
#ifndef GAMEFN_TICKETS_PLAYERS_H
#define GAMEFN_TICKETS_PLAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gamefn/err.h"
#include "gamefn/tickets/problem.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

typedef enum gf_players_verdict {
    GF_PLAYERS_LIVE = 0,
    GF_PLAYERS_PENDING,
    GF_PLAYERS_STALE,
} gf_players_verdict;

typedef struct gf_players_policy {
    int64_t pending_grace_ms; /* > 0; a create's two writes finish well within it */
    int64_t max_match_ms;     /* > 0; no match lasts longer */
} gf_players_policy;

gf_err gf_players_pack(const char *player_id, const char *ticket_id, int64_t now_ms, uint8_t **buf,
                       size_t *len);

/* Decodes and checks (player_id equal to `key` unless NULL, ticket_id a token). */
gf_err gf_players_decode(const uint8_t *buf, size_t len, const char *key,
                         Gamefn__V1__PlayerMatchRecord **out, gf_tickets_problem *p);
void gf_players_free(Gamefn__V1__PlayerMatchRecord *r); /* NULL is fine */

/* Whether ticket t has player_id among its members. */
bool gf_players_listed(const Gamefn__V1__TicketRecord *t, const char *player_id);

/* The verdict on record `r` whose ticket `t` was read (NULL: the ticket does not
 * exist). */
gf_players_verdict gf_players_judge(const Gamefn__V1__PlayerMatchRecord *r,
                                    const Gamefn__V1__TicketRecord *t, int64_t now_ms,
                                    const gf_players_policy *pol);

const char *gf_players_verdict_name(gf_players_verdict v); /* "live", "pending", "stale" */

#endif
