/*
 * claim_digest.c — the match digest a claim carries (see gamefn/tickets/claim_digest.h).
 *
 * Design notes: the encoding is streamed into crypto_generichash, field by field, so
 * nothing is allocated; the tickets are put in ticket_id order through an array of
 * pointers on the stack (at most 128), sorted with qsort (strcmp compares bytes as
 * unsigned char, the documented order).
 */
#include "gamefn/tickets/claim_digest.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

static const char TAG[] = "gamefn.v1.match-digest";

typedef struct placed {
    const Gamefn__V1__MatchTicket *t;
    uint32_t team;
} placed;

static void put_u32(crypto_generichash_state *h, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    crypto_generichash_update(h, b, sizeof b);
}

static void put_i64(crypto_generichash_state *h, int64_t v)
{
    uint64_t u = (uint64_t)v;
    put_u32(h, (uint32_t)(u >> 32));
    put_u32(h, (uint32_t)u);
}

static void put_str(crypto_generichash_state *h, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u32(h, (uint32_t)n);
    if (n)
        crypto_generichash_update(h, (const uint8_t *)s, n);
}

static int by_ticket_id(const void *a, const void *b)
{
    const char *x = ((const placed *)a)->t->ticket_id, *y = ((const placed *)b)->t->ticket_id;
    return strcmp(x ? x : "", y ? y : "");
}

gf_err gf_claim_digest_of(const Gamefn__V1__Match *m, uint8_t out[GF_CLAIM_DIGEST_LEN])
{
    placed tickets[GF_CLAIM_DIGEST_TICKETS_MAX];
    size_t n = 0;
    for (size_t t = 0; t < m->n_teams; t++) {
        if (!m->teams[t])
            return GF_ERR_INVALID;
        for (size_t k = 0; k < m->teams[t]->n_tickets; k++) {
            if (n == GF_CLAIM_DIGEST_TICKETS_MAX || !m->teams[t]->tickets[k])
                return GF_ERR_INVALID;
            tickets[n++] = (placed){.t = m->teams[t]->tickets[k], .team = (uint32_t)t};
        }
    }
    qsort(tickets, n, sizeof tickets[0], by_ticket_id);

    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, GF_CLAIM_DIGEST_LEN);
    crypto_generichash_update(&h, (const uint8_t *)TAG, sizeof TAG - 1);
    put_str(&h, m->match_id);
    put_str(&h, m->queue);
    put_i64(&h, m->created_unix_ms);
    put_i64(&h, m->claim_expires_unix_ms);
    put_u32(&h, (uint32_t)m->n_teams);
    put_u32(&h, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        const Gamefn__V1__MatchTicket *t = tickets[i].t;
        put_str(&h, t->ticket_id);
        put_u32(&h, tickets[i].team);
        put_u32(&h, (uint32_t)t->n_player_ids);
        for (size_t p = 0; p < t->n_player_ids; p++)
            put_str(&h, t->player_ids[p]);
    }
    put_u32(&h, (uint32_t)m->n_datacenters);
    for (size_t d = 0; d < m->n_datacenters; d++)
        put_str(&h, m->datacenters[d] ? m->datacenters[d]->datacenter : NULL);
    crypto_generichash_final(&h, out, GF_CLAIM_DIGEST_LEN);
    return GF_OK;
}

gf_claim_digest_verdict gf_claim_digest_verdict_of(const Gamefn__V1__Claim *c,
                                                   const uint8_t digest[GF_CLAIM_DIGEST_LEN])
{
    if (c->match_digest.len == 0)
        return GF_CLAIM_DIGEST_NONE;
    if (c->match_digest.len != GF_CLAIM_DIGEST_LEN ||
        sodium_memcmp(c->match_digest.data, digest, GF_CLAIM_DIGEST_LEN) != 0)
        return GF_CLAIM_DIGEST_DIFFERS;
    return GF_CLAIM_DIGEST_SAME;
}
