/*
 * test_alloc_plan.c — the allocator's pure steps (functions/allocator/alloc_plan.h):
 * which Matches it refuses, how it flattens one, and the assignments it builds: one
 * token per player that verifies for that player, that server, with the lifetime, and
 * nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "alloc_plan.h"
#include "gamefn/join_key.h"

enum { TICKETS = 3 };

/* A 3-team match: a party of 2 in team 0, solos in teams 1 and 2. */
typedef struct fixture {
    Gamefn__V1__Match m;
    Gamefn__V1__Team team[TICKETS], *teams[TICKETS];
    Gamefn__V1__MatchTicket mt[TICKETS], *mts[TICKETS];
    char *players[TICKETS][2];
    Gamefn__V1__DatacenterChoice dc, *dcs[1];
} fixture;

static void build(fixture *f)
{
    static char *party[] = {"p-a", "p-b"}, *solo1[] = {"p-c"}, *solo2[] = {"p-d"};
    static char *tickets[] = {"t-1", "t-2", "t-3"};
    char **members[] = {party, solo1, solo2};
    size_t sizes[] = {2, 1, 1};
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < TICKETS; i++) {
        Gamefn__V1__MatchTicket t = GAMEFN__V1__MATCH_TICKET__INIT;
        t.ticket_id = tickets[i];
        t.player_ids = members[i];
        t.n_player_ids = sizes[i];
        f->mt[i] = t;
        f->mts[i] = &f->mt[i];
        Gamefn__V1__Team tm = GAMEFN__V1__TEAM__INIT;
        tm.tickets = &f->mts[i];
        tm.n_tickets = 1;
        f->team[i] = tm;
        f->teams[i] = &f->team[i];
    }
    Gamefn__V1__DatacenterChoice dc = GAMEFN__V1__DATACENTER_CHOICE__INIT;
    dc.datacenter = "eu-west";
    f->dc = dc;
    f->dcs[0] = &f->dc;
    Gamefn__V1__Match m = GAMEFN__V1__MATCH__INIT;
    m.match_id = "m-1";
    m.queue = "duel";
    m.teams = f->teams;
    m.n_teams = TICKETS;
    m.datacenters = f->dcs;
    m.n_datacenters = 1;
    f->m = m;
}

static void flattens_a_good_match(void **state)
{
    (void)state;
    fixture f;
    alloc_match am;
    char why[256];
    build(&f);
    assert_int_equal(alloc_match_check(&f.m, &am, why, sizeof why), GF_OK);
    assert_int_equal(am.n_tickets, 3);
    assert_int_equal(am.n_players, 4);
    assert_string_equal(am.ticket_ids[0], "t-1");
    assert_string_equal(am.player_ids[1], "p-b");
    assert_string_equal(am.player_ids[3], "p-d");
    assert_int_equal(am.team[2], 2);
    alloc_match_fini(&am);
    alloc_match_fini(&am); /* twice is fine */
}

typedef void (*mutate_fn)(fixture *f);
static char long_id[70];
static void m_match_id(fixture *f)
{
    f->m.match_id = "m.1";
}
static void m_queue(fixture *f)
{
    f->m.queue = "";
}
static void m_no_teams(fixture *f)
{
    f->m.n_teams = 0;
}
static void m_empty_team(fixture *f)
{
    f->team[1].n_tickets = 0;
}
static void m_no_dc(fixture *f)
{
    f->m.n_datacenters = 0;
}
static void m_bad_dc(fixture *f)
{
    f->dc.datacenter = "eu west";
}
static void m_ticket_id(fixture *f)
{
    memset(long_id, 'x', 65);
    long_id[65] = '\0';
    f->mt[0].ticket_id = long_id;
}
static void m_dup_ticket(fixture *f)
{
    f->mt[2].ticket_id = "t-1";
}
static void m_dup_player(fixture *f)
{
    static char *dup[] = {"p-a"};
    f->mt[1].player_ids = dup;
}
static void m_no_player(fixture *f)
{
    f->mt[1].n_player_ids = 0;
}
static void m_bad_player(fixture *f)
{
    static char *bad[] = {"p>1"};
    f->mt[2].player_ids = bad;
}

static void refuses_malformed_matches(void **state)
{
    (void)state;
    const struct {
        const char *name;
        mutate_fn mutate;
        const char *says;
    } cases[] = {
        {"match id", m_match_id, "match_id"},
        {"queue", m_queue, "queue"},
        {"no teams", m_no_teams, "teams"},
        {"empty team", m_empty_team, "teams[1]"},
        {"no datacenter", m_no_dc, "datacenters"},
        {"bad datacenter", m_bad_dc, "datacenters[0]"},
        {"long ticket id", m_ticket_id, "ticket_id"},
        {"duplicate ticket", m_dup_ticket, "t-1"},
        {"duplicate player", m_dup_player, "p-a"},
        {"ticket without players", m_no_player, "players"},
        {"bad player id", m_bad_player, "player_ids[0]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fixture f;
        alloc_match am;
        char why[256] = "";
        build(&f);
        cases[i].mutate(&f);
        if (alloc_match_check(&f.m, &am, why, sizeof why) != GF_ERR_INVALID)
            fail_msg("%s: accepted", cases[i].name);
        if (!strstr(why, cases[i].says))
            fail_msg("%s: '%s' does not mention %s", cases[i].name, why, cases[i].says);
        assert_null(am.ticket_ids);
    }
}

static void assignments_carry_verifiable_tokens(void **state)
{
    (void)state;
    fixture f;
    alloc_match am;
    alloc_assignments a;
    char why[256];
    uint8_t pk[32], sk[64], seed[32] = {7};
    assert_true(sodium_init() >= 0);
    crypto_sign_seed_keypair(pk, sk, seed);
    build(&f);
    assert_int_equal(alloc_match_check(&f.m, &am, why, sizeof why), GF_OK);
    Gamefn__V1__ServerRecord srv = GAMEFN__V1__SERVER_RECORD__INIT;
    srv.server_id = "gs-9";
    srv.datacenter = "eu-west";
    srv.address = "198.51.100.9";
    srv.port = 7777;
    alloc_signer signer = {.sk = sk, .key_id = "k1", .lifetime_ms = 60000};
    int64_t now = 1767225600000;
    assert_int_equal(alloc_assignments_build(&am, &srv, &signer, now, &a), GF_OK);
    assert_int_equal(a.n, 3);
    assert_int_equal(a.n_tokens, 4);
    assert_int_equal(a.v[0]->n_tokens, 2);
    assert_string_equal(a.v[0]->tokens[1]->player_id, "p-b");
    assert_int_equal(a.v[2]->team, 2);
    assert_int_equal(a.v[1]->expires_unix_ms, now + 60000);
    assert_string_equal(a.v[1]->address, "198.51.100.9");
    gf_join_key key = {.key_id = "k1"};
    memcpy(key.pk, pk, 32);
    for (size_t t = 0; t < a.n; t++)
        for (size_t k = 0; k < a.v[t]->n_tokens; k++) {
            const Gamefn__V1__JoinToken *jt = a.v[t]->tokens[k];
            Gamefn__V1__JoinTokenClaims *c = NULL;
            assert_int_equal(gf_join_token_verify_keys(jt->token.data, jt->token.len, &key, 1, now,
                                                       5000, "gs-9", jt->player_id, &c, NULL),
                             GF_OK);
            assert_string_equal(c->match_id, "m-1");
            assert_string_equal(c->ticket_id, a.v[t]->ticket_id);
            assert_int_equal(c->team, a.v[t]->team);
            assert_int_equal(c->nonce.len, 16);
            gamefn__v1__join_token_claims__free_unpacked(c, NULL);
            /* Not for another server, another player, or after its lifetime. */
            assert_int_equal(gf_join_token_verify_keys(jt->token.data, jt->token.len, &key, 1, now,
                                                       5000, "gs-8", NULL, NULL, NULL),
                             GF_ERR_CONFLICT);
            assert_int_equal(gf_join_token_verify_keys(jt->token.data, jt->token.len, &key, 1,
                                                       now + 65000, 5000, NULL, NULL, NULL, NULL),
                             GF_ERR_PERMANENT);
        }
    /* Two tokens for the same player differ (the nonce). */
    alloc_assignments b;
    assert_int_equal(alloc_assignments_build(&am, &srv, &signer, now, &b), GF_OK);
    assert_memory_not_equal(a.v[0]->tokens[0]->token.data, b.v[0]->tokens[0]->token.data,
                            a.v[0]->tokens[0]->token.len);
    alloc_assignments_fini(&a);
    alloc_assignments_fini(&b);
    alloc_match_fini(&am);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flattens_a_good_match),
        cmocka_unit_test(refuses_malformed_matches),
        cmocka_unit_test(assignments_carry_verifiable_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
