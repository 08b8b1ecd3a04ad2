/* tickets_fixture.c — see tickets_fixture.h. */
#include "tickets_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static const char yaml[] = "claim_lease: 5s\n"
                           "matchmaking:\n"
                           "  datacenters:\n"
                           "    - {name: us-east, region: na}\n"
                           "    - {name: us-west, region: na}\n"
                           "    - {name: eu-west, region: eu}\n"
                           "    - {name: eu-central, region: eu}\n"
                           "  queues:\n"
                           "    - {name: duel, mode: hybrid, shape: 1v1}\n"
                           "    - {name: squad, playlist: team, mode: hybrid, shape: 5v5}\n"
                           "    - {name: squad-ping, playlist: team, mode: ping_first, shape: "
                           "5v5}\n"
                           "    - {name: ffa, mode: ping_first, shape: ffa16, ticket_ttl: 2s}\n";

const gf_mm_tables *tk_tables(void)
{
    static gf_mm_tables t;
    static gf_mm_config mm;
    static int ready;
    if (!ready) {
        static struct gf_config_arena *arena; /* kept: the tables borrow its strings */
        gf_config_error err;
        char why[256];
        if (gf_config_parse_table("fixture", yaml, strlen(yaml), &gf_mm_config_table, &mm, &arena,
                                  &err) != GF_OK)
            fail_msg("fixture yaml: %s", err.message);
        if (gf_mm_tables_build(&mm.matchmaking, &t, why, sizeof why) != GF_OK)
            fail_msg("fixture tables: %s", why);
        ready = 1;
    }
    return &t;
}

void tk_req_members(tk_req *q, size_t n)
{
    for (size_t i = 0; i < n && i < TK_MEMBERS; i++) {
        q->m[i] = (Gamefn__V1__PartyMember)GAMEFN__V1__PARTY_MEMBER__INIT;
        snprintf(q->ids[i], TK_TEXT, "p-%zu", i + 1);
        q->m[i].player_id = q->ids[i];
        q->m[i].rating = 1500 + (double)i;
        q->mp[i] = &q->m[i];
    }
    q->r.n_members = n;
    q->r.members = q->mp;
}

void tk_req_ping(tk_req *q, const char *dc, uint32_t ms)
{
    size_t i = q->r.n_pings++;
    q->p[i] = (Gamefn__V1__DatacenterPing)GAMEFN__V1__DATACENTER_PING__INIT;
    snprintf(q->dcs[i], TK_TEXT, "%s", dc);
    q->p[i].datacenter = q->dcs[i];
    q->p[i].ping_ms = ms;
    q->pp[i] = &q->p[i];
    q->r.pings = q->pp;
}

void tk_req_attr(tk_req *q, const char *key, const char *value)
{
    size_t i = q->r.n_attributes++;
    q->a[i] = (Gamefn__V1__CreateTicketRequest__AttributesEntry)
        GAMEFN__V1__CREATE_TICKET_REQUEST__ATTRIBUTES_ENTRY__INIT;
    snprintf(q->keys[i], TK_TEXT, "%s", key);
    snprintf(q->values[i], TK_TEXT, "%s", value);
    q->a[i].key = q->keys[i];
    q->a[i].value = q->values[i];
    q->ap[i] = &q->a[i];
    q->r.attributes = q->ap;
}

void tk_req_init(tk_req *q)
{
    memset(q, 0, sizeof *q);
    q->r = (Gamefn__V1__CreateTicketRequest)GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    snprintf(q->key, sizeof q->key, "k-1");
    snprintf(q->queue, sizeof q->queue, "duel");
    q->r.idempotency_key = q->key;
    q->r.queue = q->queue;
    q->r.region = q->region;
    tk_req_members(q, 1);
    tk_req_ping(q, "us-east", 20);
    tk_req_ping(q, "eu-west", 90);
    tk_req_attr(q, "platform", "pc");
}
