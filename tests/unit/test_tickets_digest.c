/*
 * test_tickets_digest.c — the match digest a claim carries (gamefn/tickets/claim_digest.h):
 * the documented encoding, recomputed here byte by byte; a change to any field the
 * allocator acts on changes it, the order of tickets within a team and the fields only
 * audits read do not; the 128-ticket bound; the verdict on a claim; a claim written with
 * a digest keeps it through pack and decode.
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

#include "gamefn/tickets/claim_digest.h"
#include "gamefn/tickets/record.h"
#include "tickets_fixture.h"

/* A match of 2 teams: team 0 holds a party t-b (p1, p2) then t-a (p3); team 1 holds t-c
 * (p4). Datacenters eu, us. Rebuilt before every case. */
typedef struct fixture {
    Gamefn__V1__Match m;
    Gamefn__V1__Team team[2], *teamp[2];
    Gamefn__V1__MatchTicket mt[3], *mtp[3];
    char *players[3][2];
    Gamefn__V1__DatacenterChoice dc[3], *dcp[3];
} fixture;

static fixture fx;

static void fixture_build(void)
{
    static char *const ids[3] = {"t-b", "t-a", "t-c"};
    static char *const names[3][2] = {{"p1", "p2"}, {"p3", NULL}, {"p4", NULL}};
    static const size_t np[3] = {2, 1, 1};
    memset(&fx, 0, sizeof fx);
    for (size_t k = 0; k < 3; k++) {
        fx.mt[k] = (Gamefn__V1__MatchTicket)GAMEFN__V1__MATCH_TICKET__INIT;
        fx.mt[k].ticket_id = ids[k];
        fx.players[k][0] = names[k][0];
        fx.players[k][1] = names[k][1];
        fx.mt[k].player_ids = fx.players[k];
        fx.mt[k].n_player_ids = np[k];
        fx.mt[k].claim_revision = 10 + k;
        fx.mt[k].rating = 1500;
        fx.mtp[k] = &fx.mt[k];
    }
    for (size_t t = 0; t < 2; t++) {
        fx.team[t] = (Gamefn__V1__Team)GAMEFN__V1__TEAM__INIT;
        fx.teamp[t] = &fx.team[t];
    }
    fx.team[0].tickets = &fx.mtp[0];
    fx.team[0].n_tickets = 2;
    fx.team[1].tickets = &fx.mtp[2];
    fx.team[1].n_tickets = 1;
    static char *const dcs[3] = {"eu", "us", "ap"};
    for (size_t d = 0; d < 3; d++) {
        fx.dc[d] = (Gamefn__V1__DatacenterChoice)GAMEFN__V1__DATACENTER_CHOICE__INIT;
        fx.dc[d].datacenter = dcs[d];
        fx.dc[d].max_ping_ms = 20;
        fx.dcp[d] = &fx.dc[d];
    }
    fx.m = (Gamefn__V1__Match)GAMEFN__V1__MATCH__INIT;
    fx.m.match_id = "m-1";
    fx.m.queue = "duel";
    fx.m.region = "eu";
    fx.m.teams = fx.teamp;
    fx.m.n_teams = 2;
    fx.m.datacenters = fx.dcp;
    fx.m.n_datacenters = 2;
    fx.m.created_unix_ms = 1700000000000;
    fx.m.claim_expires_unix_ms = 1700000004000;
    fx.m.matcher_id = "matcher-1";
}

static void digest(uint8_t out[GF_CLAIM_DIGEST_LEN])
{
    assert_int_equal(gf_claim_digest_of(&fx.m, out), GF_OK);
}

/* ---- the encoding, written out as PROTOCOL.md gives it ---------------------------- */

typedef struct enc {
    uint8_t b[512];
    size_t n;
} enc;

static void u32(enc *e, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        e->b[e->n++] = (uint8_t)(v >> (8 * i));
}

static void i64(enc *e, int64_t v)
{
    u32(e, (uint32_t)((uint64_t)v >> 32));
    u32(e, (uint32_t)(uint64_t)v);
}

static void str(enc *e, const char *s)
{
    u32(e, (uint32_t)strlen(s));
    memcpy(e->b + e->n, s, strlen(s));
    e->n += strlen(s);
}

static void digest_is_the_documented_encoding(void **state)
{
    (void)state;
    fixture_build();
    enc e = {.n = 0};
    memcpy(e.b, "gamefn.v1.match-digest", 22);
    e.n = 22;
    str(&e, "m-1");
    str(&e, "duel");
    i64(&e, 1700000000000);
    i64(&e, 1700000004000);
    u32(&e, 2); /* teams */
    u32(&e, 3); /* tickets, by ticket_id: t-a, t-b, t-c */
    str(&e, "t-a");
    u32(&e, 0);
    u32(&e, 1);
    str(&e, "p3");
    str(&e, "t-b");
    u32(&e, 0);
    u32(&e, 2);
    str(&e, "p1");
    str(&e, "p2");
    str(&e, "t-c");
    u32(&e, 1);
    u32(&e, 1);
    str(&e, "p4");
    u32(&e, 2); /* datacenters */
    str(&e, "eu");
    str(&e, "us");
    uint8_t want[GF_CLAIM_DIGEST_LEN], got[GF_CLAIM_DIGEST_LEN];
    crypto_generichash(want, sizeof want, e.b, e.n, NULL, 0);
    digest(got);
    assert_memory_equal(got, want, sizeof want);
    /* And pinned (also Python hashlib.blake2b(digest_size=32) of the same bytes): a
     * change of encoding is a protocol change, never an accident. */
    char hex[2 * GF_CLAIM_DIGEST_LEN + 1];
    sodium_bin2hex(hex, sizeof hex, got, sizeof got);
    assert_string_equal(hex, "47c2eb8afbccae4948fd6ea870c49f8122edddbbadf8aa67dc3c9eacf4b00156");
}

/* ---- what changes it, what does not ------------------------------------------------ */

typedef struct mutation {
    const char *name;
    void (*apply)(void);
} mutation;

static void id_other(void)
{
    fx.m.match_id = "m-2";
}
static void id_prefix(void)
{
    fx.m.match_id = "m-1d";
    fx.m.queue = "uel";
} /* same bytes */
static void queue_other(void)
{
    fx.m.queue = "duo";
}
static void created_other(void)
{
    fx.m.created_unix_ms++;
}
static void lease_other(void)
{
    fx.m.claim_expires_unix_ms++;
}
static void subset_team(void)
{
    fx.m.n_teams = 1;
} /* team 1 left out */
static void subset_ticket(void)
{
    fx.team[0].n_tickets = 1;
} /* t-a left out */
static void teams_swapped(void)
{
    fx.teamp[0] = &fx.team[1];
    fx.teamp[1] = &fx.team[0];
}
static void ticket_moved(void) /* t-a from team 0 to team 1 */
{
    fx.team[0].n_tickets = 1;
    fx.team[1].tickets = &fx.mtp[1];
    fx.team[1].n_tickets = 2;
}
static void ticket_renamed(void)
{
    fx.mt[1].ticket_id = "t-z";
}
static void player_renamed(void)
{
    fx.players[0][1] = "p9";
}
static void players_reordered(void)
{
    fx.players[0][0] = "p2";
    fx.players[0][1] = "p1";
}
static void player_dropped(void)
{
    fx.mt[0].n_player_ids = 1;
}
static void player_moved(void) /* p2 from t-b to t-a: same players, other tickets */
{
    fx.mt[0].n_player_ids = 1;
    fx.players[1][1] = "p2";
    fx.mt[1].n_player_ids = 2;
}
static void dc_other(void)
{
    fx.dc[1].datacenter = "ap";
}
static void dcs_reordered(void)
{
    fx.dcp[0] = &fx.dc[1];
    fx.dcp[1] = &fx.dc[0];
}
static void dc_dropped(void)
{
    fx.m.n_datacenters = 1;
}
static void dc_added(void)
{
    fx.m.n_datacenters = 3;
}

static const mutation changes[] = {
    {"match_id", id_other},
    {"match_id/queue boundary", id_prefix},
    {"queue", queue_other},
    {"created_unix_ms", created_other},
    {"claim_expires_unix_ms", lease_other},
    {"a team left out", subset_team},
    {"a ticket left out", subset_ticket},
    {"teams swapped", teams_swapped},
    {"a ticket on another team", ticket_moved},
    {"a ticket_id", ticket_renamed},
    {"a player_id", player_renamed},
    {"player order in a ticket", players_reordered},
    {"a player left out", player_dropped},
    {"a player in another ticket", player_moved},
    {"a datacenter", dc_other},
    {"datacenter order", dcs_reordered},
    {"a datacenter left out", dc_dropped},
    {"a datacenter added", dc_added},
};

static void within_team_reordered(void)
{
    fx.mtp[0] = &fx.mt[1];
    fx.mtp[1] = &fx.mt[0];
}
static void audit_fields(void)
{
    for (size_t k = 0; k < 3; k++) {
        fx.mt[k].claim_revision += 100;
        fx.mt[k].rating += 1;
        fx.mt[k].queued_unix_ms += 1;
        fx.mt[k].allowed_skill_gap = 50;
        fx.mt[k].allowed_ping_ms = 80;
        fx.mt[k].skill_ignored = true;
        fx.mt[k].ping_ms = 33;
    }
    fx.team[0].rating_sum = 3000;
    fx.dc[0].max_ping_ms = 70;
    fx.dc[0].total_ping_ms = 200;
    fx.m.region = "us";
    fx.m.matcher_id = "matcher-2";
    fx.m.tick_seq = 7;
    fx.m.tick_group = "g";
    fx.m.merged = true;
    fx.m.starved = true;
}

static const mutation keeps[] = {
    {"ticket order within a team", within_team_reordered},
    {"claim revisions and audit-only fields", audit_fields},
};

static void digest_sees_every_field_the_allocator_acts_on(void **state)
{
    (void)state;
    uint8_t base[GF_CLAIM_DIGEST_LEN], d[GF_CLAIM_DIGEST_LEN];
    fixture_build();
    digest(base);
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        fixture_build();
        changes[i].apply();
        digest(d);
        if (memcmp(d, base, sizeof d) == 0)
            fail_msg("digest unchanged by: %s", changes[i].name);
    }
    for (size_t i = 0; i < sizeof keeps / sizeof keeps[0]; i++) {
        fixture_build();
        keeps[i].apply();
        digest(d);
        if (memcmp(d, base, sizeof d) != 0)
            fail_msg("digest changed by: %s", keeps[i].name);
    }
}

static void digest_bounds_the_tickets(void **state)
{
    (void)state;
    enum { N = GF_CLAIM_DIGEST_TICKETS_MAX + 1 };
    static Gamefn__V1__MatchTicket mt[N];
    static Gamefn__V1__MatchTicket *mtp[N];
    static char ids[N][8];
    Gamefn__V1__Team team = GAMEFN__V1__TEAM__INIT, *teamp = &team;
    for (size_t k = 0; k < N; k++) {
        mt[k] = (Gamefn__V1__MatchTicket)GAMEFN__V1__MATCH_TICKET__INIT;
        snprintf(ids[k], sizeof ids[k], "t%zu", k);
        mt[k].ticket_id = ids[k];
        mtp[k] = &mt[k];
    }
    team.tickets = mtp;
    Gamefn__V1__Match m = GAMEFN__V1__MATCH__INIT;
    m.match_id = "m-1";
    m.teams = &teamp;
    m.n_teams = 1;
    uint8_t d[GF_CLAIM_DIGEST_LEN];
    team.n_tickets = N - 1;
    assert_int_equal(gf_claim_digest_of(&m, d), GF_OK);
    team.n_tickets = N;
    assert_int_equal(gf_claim_digest_of(&m, d), GF_ERR_INVALID);
}

/* ---- the claim ---------------------------------------------------------------------- */

static void verdict_of_a_claim(void **state)
{
    (void)state;
    uint8_t d[GF_CLAIM_DIGEST_LEN], other[GF_CLAIM_DIGEST_LEN];
    fixture_build();
    digest(d);
    memcpy(other, d, sizeof other);
    other[GF_CLAIM_DIGEST_LEN - 1] ^= 1;
    Gamefn__V1__Claim c = GAMEFN__V1__CLAIM__INIT;
    assert_int_equal(gf_claim_digest_verdict_of(&c, d), GF_CLAIM_DIGEST_NONE);
    c.match_digest.data = d;
    c.match_digest.len = sizeof d;
    assert_int_equal(gf_claim_digest_verdict_of(&c, d), GF_CLAIM_DIGEST_SAME);
    assert_int_equal(gf_claim_digest_verdict_of(&c, other), GF_CLAIM_DIGEST_DIFFERS);
    c.match_digest.len = 16; /* a prefix of the right one */
    assert_int_equal(gf_claim_digest_verdict_of(&c, d), GF_CLAIM_DIGEST_DIFFERS);
}

static void claim_keeps_its_digest(void **state)
{
    (void)state;
    tk_req req;
    gf_ticket_next queued, claimed;
    gf_tickets_problem p;
    uint8_t d[GF_CLAIM_DIGEST_LEN];
    fixture_build();
    digest(d);
    tk_req_init(&req);
    assert_int_equal(gf_ticket_new(&tk_tables()->cfg, &req.r, "t-1", TK_NOW, &queued, &p), GF_OK);
    const gf_ticket_claim_args a = {"matcher-1", "m-1", TK_NOW + 10000, d};
    assert_int_equal(gf_ticket_claim(&queued.rec, &a, TK_NOW + 10, &claimed, &p), GF_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_ticket_pack(&claimed.rec, &buf, &len), GF_OK);
    Gamefn__V1__TicketRecord *rec = NULL;
    assert_int_equal(gf_ticket_decode(buf, len, "t-1", &rec, &p), GF_OK);
    assert_int_equal(gf_claim_digest_verdict_of(rec->claim, d), GF_CLAIM_DIGEST_SAME);
    gf_ticket_free(rec);
    free(buf);
    /* Without one (NULL), as older matchers wrote it. */
    const gf_ticket_claim_args old = {"matcher-1", "m-1", TK_NOW + 10000, NULL};
    assert_int_equal(gf_ticket_claim(&queued.rec, &old, TK_NOW + 10, &claimed, &p), GF_OK);
    assert_int_equal(gf_claim_digest_verdict_of(claimed.rec.claim, d), GF_CLAIM_DIGEST_NONE);
}

int main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(digest_is_the_documented_encoding),
        cmocka_unit_test(digest_sees_every_field_the_allocator_acts_on),
        cmocka_unit_test(digest_bounds_the_tickets),
        cmocka_unit_test(verdict_of_a_claim),
        cmocka_unit_test(claim_keeps_its_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
