/*
 * alloc_plan.c — Match checks and assignment building (see alloc_plan.h).
 *
 * Design notes: uniqueness checks sort copies of the id arrays (O(n log n)); a match
 * has at most 1024 players. Claims are packed into a stack buffer sized to the
 * protocol's largest claims, so an oversized id can never make a token larger than
 * GF_WIRE_JOIN_CLAIMS_MAX.
 */
#include "alloc_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "gamefn/names.h"
#include "join_sign.h"

static gf_err say(char *why, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static gf_err say(char *why, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return GF_ERR_INVALID;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first id that appears twice, or NULL. */
static const char *duplicate(char **ids, size_t n)
{
    char **copy = malloc((n ? n : 1) * sizeof *copy);
    const char *dup = NULL;
    if (!copy)
        return NULL;
    memcpy(copy, ids, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, cmp_str);
    for (size_t i = 1; i < n && !dup; i++)
        if (strcmp(copy[i - 1], copy[i]) == 0)
            dup = copy[i];
    free(copy);
    return dup;
}

gf_err alloc_match_check(const Gamefn__V1__Match *m, alloc_match *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    out->m = m;
    if (!gf_name_id_ok(m->match_id, GF_WIRE_ID_MAX, NULL, 0))
        return say(why, why_size, "match_id is not a token");
    if (!gf_name_id_ok(m->queue, GF_WIRE_NAME_MAX, NULL, 0))
        return say(why, why_size, "queue is not a name token");
    if (m->n_teams < 1 || m->n_teams > GF_WIRE_TEAMS_MAX)
        return say(why, why_size, "%zu teams (1..%d)", m->n_teams, GF_WIRE_TEAMS_MAX);
    if (m->n_datacenters < 1 || m->n_datacenters > GF_WIRE_PINGS_MAX)
        return say(why, why_size, "%zu datacenters (1..%d)", m->n_datacenters, GF_WIRE_PINGS_MAX);
    for (size_t d = 0; d < m->n_datacenters; d++)
        if (!gf_name_id_ok(m->datacenters[d]->datacenter, GF_WIRE_NAME_MAX, NULL, 0))
            return say(why, why_size, "datacenters[%zu] is not a name token", d);
    size_t nt = 0, np = 0;
    for (size_t t = 0; t < m->n_teams; t++) {
        if (m->teams[t]->n_tickets == 0)
            return say(why, why_size, "teams[%zu] has no ticket", t);
        nt += m->teams[t]->n_tickets;
        for (size_t k = 0; k < m->teams[t]->n_tickets; k++) {
            size_t members = m->teams[t]->tickets[k]->n_player_ids;
            if (members < 1 || members > GF_WIRE_PARTY_MAX)
                return say(why, why_size, "teams[%zu].tickets[%zu] has %zu players (1..%d)", t, k,
                           members, GF_WIRE_PARTY_MAX);
            np += members;
        }
    }
    if (nt > ALLOC_TICKETS_MAX || np > ALLOC_PLAYERS_MAX)
        return say(why, why_size, "%zu tickets, %zu players (at most %d and %d)", nt, np,
                   ALLOC_TICKETS_MAX, ALLOC_PLAYERS_MAX);
    out->tickets = calloc(nt, sizeof *out->tickets);
    out->team = calloc(nt, sizeof *out->team);
    out->ticket_ids = calloc(nt, sizeof *out->ticket_ids);
    out->player_ids = calloc(np, sizeof *out->player_ids);
    if (!out->tickets || !out->team || !out->ticket_ids || !out->player_ids) {
        alloc_match_fini(out);
        return GF_ERR_NOMEM;
    }
    for (size_t t = 0; t < m->n_teams; t++)
        for (size_t k = 0; k < m->teams[t]->n_tickets; k++) {
            const Gamefn__V1__MatchTicket *mt = m->teams[t]->tickets[k];
            if (!gf_name_id_ok(mt->ticket_id, GF_WIRE_ID_MAX, NULL, 0)) {
                alloc_match_fini(out);
                return say(why, why_size, "teams[%zu].tickets[%zu].ticket_id is not a token", t, k);
            }
            for (size_t i = 0; i < mt->n_player_ids; i++) {
                if (!gf_name_id_ok(mt->player_ids[i], GF_WIRE_ID_MAX, NULL, 0)) {
                    alloc_match_fini(out);
                    return say(why, why_size,
                               "teams[%zu].tickets[%zu].player_ids[%zu] is not a token", t, k, i);
                }
                out->player_ids[out->n_players++] = mt->player_ids[i];
            }
            out->team[out->n_tickets] = (uint32_t)t;
            out->ticket_ids[out->n_tickets] = mt->ticket_id;
            out->tickets[out->n_tickets++] = mt;
        }
    const char *dup = duplicate(out->ticket_ids, out->n_tickets);
    if (!dup)
        dup = duplicate(out->player_ids, out->n_players);
    if (dup) {
        gf_err err = say(why, why_size, "id %s appears twice", dup);
        alloc_match_fini(out);
        return err;
    }
    return GF_OK;
}

void alloc_match_fini(alloc_match *am)
{
    free(am->tickets);
    free(am->team);
    free(am->ticket_ids);
    free(am->player_ids);
    memset(am, 0, sizeof *am);
}

void alloc_assignments_fini(alloc_assignments *a)
{
    for (size_t i = 0; a->token_bytes && i < a->n_tokens; i++)
        free(a->token_bytes[i]);
    free(a->token_bytes);
    free(a->tokens);
    free(a->token_ptrs);
    free(a->store);
    free(a->v);
    memset(a, 0, sizeof *a);
}

static gf_err sign_one(const alloc_match *am, size_t ticket, const char *player,
                       const Gamefn__V1__ServerRecord *server, const alloc_signer *signer,
                       int64_t now_ms, uint8_t **token, size_t *len)
{
    uint8_t nonce[GF_WIRE_JOIN_NONCE_LEN], claims[GF_WIRE_JOIN_CLAIMS_MAX];
    randombytes_buf(nonce, sizeof nonce);
    Gamefn__V1__JoinTokenClaims c = GAMEFN__V1__JOIN_TOKEN_CLAIMS__INIT;
    c.version = 1;
    c.key_id = (char *)(uintptr_t)signer->key_id;
    c.match_id = am->m->match_id;
    c.ticket_id = am->ticket_ids[ticket];
    c.player_id = (char *)(uintptr_t)player;
    c.server_id = server->server_id;
    c.datacenter = server->datacenter;
    c.address = server->address;
    c.port = server->port;
    c.team = am->team[ticket];
    c.issued_unix_ms = now_ms;
    c.expires_unix_ms = now_ms + signer->lifetime_ms;
    c.nonce.data = nonce;
    c.nonce.len = sizeof nonce;
    size_t n = gamefn__v1__join_token_claims__get_packed_size(&c);
    if (n > sizeof claims)
        return GF_ERR_INVALID;
    gamefn__v1__join_token_claims__pack(&c, claims);
    return gf_join_token_sign(claims, n, signer->sk, token, len);
}

gf_err alloc_assignments_build(const alloc_match *am, const Gamefn__V1__ServerRecord *server,
                               const alloc_signer *signer, int64_t now_ms, alloc_assignments *out)
{
    memset(out, 0, sizeof *out);
    size_t np = am->n_players ? am->n_players : 1, nt = am->n_tickets ? am->n_tickets : 1;
    out->v = calloc(nt, sizeof *out->v);
    out->store = calloc(nt, sizeof *out->store);
    out->tokens = calloc(np, sizeof *out->tokens);
    out->token_ptrs = calloc(np, sizeof *out->token_ptrs);
    out->token_bytes = calloc(np, sizeof *out->token_bytes);
    if (!out->v || !out->store || !out->tokens || !out->token_ptrs || !out->token_bytes) {
        alloc_assignments_fini(out);
        return GF_ERR_NOMEM;
    }
    for (size_t t = 0; t < am->n_tickets; t++) {
        const Gamefn__V1__MatchTicket *mt = am->tickets[t];
        Gamefn__V1__Assignment a = GAMEFN__V1__ASSIGNMENT__INIT;
        a.match_id = am->m->match_id;
        a.ticket_id = mt->ticket_id;
        a.server_id = server->server_id;
        a.datacenter = server->datacenter;
        a.address = server->address;
        a.port = server->port;
        a.assigned_unix_ms = now_ms;
        a.expires_unix_ms = now_ms + signer->lifetime_ms;
        a.team = am->team[t];
        a.tokens = &out->token_ptrs[out->n_tokens];
        for (size_t i = 0; i < mt->n_player_ids; i++) {
            size_t k = out->n_tokens;
            size_t len = 0;
            gf_err err = sign_one(am, t, mt->player_ids[i], server, signer, now_ms,
                                  &out->token_bytes[k], &len);
            if (err != GF_OK) {
                alloc_assignments_fini(out);
                return err;
            }
            Gamefn__V1__JoinToken jt = GAMEFN__V1__JOIN_TOKEN__INIT;
            jt.player_id = mt->player_ids[i];
            jt.token.data = out->token_bytes[k];
            jt.token.len = len;
            out->tokens[k] = jt;
            out->token_ptrs[k] = &out->tokens[k];
            out->n_tokens++;
            a.n_tokens++;
        }
        out->store[t] = a;
        out->v[t] = &out->store[t];
        out->n++;
    }
    return GF_OK;
}
