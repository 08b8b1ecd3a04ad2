/*
 * tickets_fixture.h — builders for the tickets library's unit tests.
 *
 * tk_tables(): a prepared queue table parsed from YAML with the library's own section
 * table (datacenters us-east/us-west in na, eu-west/eu-central in eu; queues duel
 * hybrid 1v1, squad hybrid 5v5 in playlist "team", squad-ping ping_first 5v5 in "team",
 * ffa ping_first ffa16 with a 2 s TTL). Built once, never freed.
 *
 * tk_req: a CreateTicketRequest whose arrays live inside the struct: a valid solo
 * ticket for "duel" after tk_req_init(); tests then mutate it. Plain value; no
 * allocation. Single-threaded.
 */
#ifndef GAMEFN_TEST_TICKETS_FIXTURE_H
#define GAMEFN_TEST_TICKETS_FIXTURE_H

#include <stdint.h>

#include "gamefn/tickets/config.h"
#include "gamefn/v1/ticket.pb-c.h"

#define TK_NOW     INT64_C(1767225600000)
#define TK_MEMBERS 20
#define TK_PINGS   40
#define TK_ATTRS   20
#define TK_TEXT    200

typedef struct tk_req {
    Gamefn__V1__CreateTicketRequest r;
    Gamefn__V1__PartyMember m[TK_MEMBERS];
    Gamefn__V1__PartyMember *mp[TK_MEMBERS];
    Gamefn__V1__DatacenterPing p[TK_PINGS];
    Gamefn__V1__DatacenterPing *pp[TK_PINGS];
    Gamefn__V1__CreateTicketRequest__AttributesEntry a[TK_ATTRS];
    Gamefn__V1__CreateTicketRequest__AttributesEntry *ap[TK_ATTRS];
    char ids[TK_MEMBERS][TK_TEXT];
    char dcs[TK_PINGS][TK_TEXT];
    char keys[TK_ATTRS][TK_TEXT];
    char values[TK_ATTRS][TK_TEXT];
    char key[TK_TEXT], queue[TK_TEXT], region[TK_TEXT];
} tk_req;

const gf_mm_tables *tk_tables(void);

/* Key "k-1", queue "duel", one member "p-1" rating 1500, pings us-east 20, eu-west 90,
 * attribute platform=pc, no region. */
void tk_req_init(tk_req *q);
/* Sets n members "p-<i>" with ratings 1500 + i. */
void tk_req_members(tk_req *q, size_t n);
/* Adds a ping; adds an attribute. */
void tk_req_ping(tk_req *q, const char *dc, uint32_t ms);
void tk_req_attr(tk_req *q, const char *key, const char *value);

#endif
