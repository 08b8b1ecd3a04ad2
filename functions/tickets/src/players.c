/* players.c — the players record and its live/stale rule (see gamefn/tickets/players.h). */
#include "gamefn/tickets/players.h"

#include <stdlib.h>

#include "internal.h"

gf_err gf_players_pack(const char *player_id, const char *ticket_id, int64_t now_ms, uint8_t **buf,
                       size_t *len)
{
    *buf = NULL;
    if (!gf_tk_token_ok(player_id, GF_WIRE_ID_MAX) || !gf_tk_token_ok(ticket_id, GF_WIRE_ID_MAX))
        return GF_ERR_INVALID;
    Gamefn__V1__PlayerMatchRecord r = GAMEFN__V1__PLAYER_MATCH_RECORD__INIT;
    r.player_id = gf_tk_unconst(player_id);
    r.ticket_id = gf_tk_unconst(ticket_id);
    r.created_unix_ms = now_ms;
    return gf_pack(&r.base, buf, len);
}

static const char *players_problem(const ProtobufCMessage *m, const char *key)
{
    const Gamefn__V1__PlayerMatchRecord *r = (const Gamefn__V1__PlayerMatchRecord *)m;
    if (!gf_tk_token_ok(r->player_id, GF_WIRE_ID_MAX) || (key && strcmp(key, r->player_id) != 0))
        return "player_id is not a token equal to the key";
    return gf_tk_token_ok(r->ticket_id, GF_WIRE_ID_MAX) ? NULL : "ticket_id is not a token";
}

gf_err gf_players_decode(const uint8_t *buf, size_t len, const char *key,
                         Gamefn__V1__PlayerMatchRecord **out, gf_tickets_problem *p)
{
    return gf_tk_decode_stored(&gamefn__v1__player_match_record__descriptor, players_problem,
                               "players record", buf, len, key, (ProtobufCMessage **)out, p);
}

void gf_players_free(Gamefn__V1__PlayerMatchRecord *r)
{
    if (r)
        gamefn__v1__player_match_record__free_unpacked(r, NULL);
}

bool gf_players_listed(const Gamefn__V1__TicketRecord *t, const char *player_id)
{
    for (size_t i = 0; i < t->n_members; i++) {
        if (gf_tk_streq(t->members[i]->player_id, player_id))
            return true;
    }
    return false;
}

gf_players_verdict gf_players_judge(const Gamefn__V1__PlayerMatchRecord *r,
                                    const Gamefn__V1__TicketRecord *t, int64_t now_ms,
                                    const gf_players_policy *pol)
{
    if (!t)
        return now_ms - r->created_unix_ms < pol->pending_grace_ms ? GF_PLAYERS_PENDING
                                                                   : GF_PLAYERS_STALE;
    if (!gf_tk_streq(t->ticket_id, r->ticket_id) || !gf_players_listed(t, r->player_id))
        return GF_PLAYERS_STALE;
    switch (t->state) {
    case ST(QUEUED):
    case ST(CLAIMED):
        return GF_PLAYERS_LIVE;
    case ST(ASSIGNED): {
        int64_t since = t->assignment && t->assignment->assigned_unix_ms
                            ? t->assignment->assigned_unix_ms
                            : t->updated_unix_ms;
        return now_ms - since < pol->max_match_ms ? GF_PLAYERS_LIVE : GF_PLAYERS_STALE;
    }
    default:
        return GF_PLAYERS_STALE;
    }
}

const char *gf_players_verdict_name(gf_players_verdict v)
{
    switch (v) {
    case GF_PLAYERS_LIVE:
        return "live";
    case GF_PLAYERS_PENDING:
        return "pending";
    default:
        return "stale";
    }
}
