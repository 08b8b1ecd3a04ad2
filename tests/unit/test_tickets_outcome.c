/*
 * test_tickets_outcome.c — the match commit record (codec, checks, settling a claimed
 * ticket), the players record rule (live, pending, stale), and the shared
 * functions.matcher section (tick groups, name rules).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/tickets/config.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/players.h"
#include "gamefn/tickets/record.h"
#include "population.h"
#include "tickets_fixture.h"

#define ST(x)    GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x)    GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x
#define ABORT(x) GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_##x

static tk_req req;
static gf_ticket_next queued, claimed;
static Gamefn__V1__Assignment a1 = GAMEFN__V1__ASSIGNMENT__INIT;
static Gamefn__V1__Assignment a2 = GAMEFN__V1__ASSIGNMENT__INIT;

static int setup(void **state)
{
    (void)state;
    gf_tickets_problem p;
    tk_req_init(&req);
    assert_int_equal(gf_ticket_new(&tk_tables()->cfg, &req.r, "t-1", TK_NOW, &queued, &p), GF_OK);
    const gf_ticket_claim_args c = {"matcher-1", "m-1", TK_NOW + 10000, NULL};
    assert_int_equal(gf_ticket_claim(&queued.rec, &c, TK_NOW + 10, &claimed, &p), GF_OK);
    a1.match_id = a2.match_id = "m-1";
    a1.ticket_id = "t-1";
    a2.ticket_id = "t-2";
    a1.server_id = a2.server_id = "gs-1";
    return 0;
}

static Gamefn__V1__MatchOutcome *round_trip(uint8_t *buf, size_t len, const char *key)
{
    Gamefn__V1__MatchOutcome *o = NULL;
    gf_tickets_problem p;
    assert_int_equal(gf_outcome_decode(buf, len, key, &o, &p), GF_OK);
    free(buf);
    return o;
}

static void test_commit_codec(void **state)
{
    (void)state;
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_tickets_problem p;
    Gamefn__V1__Assignment *const both[] = {&a1, &a2};
    assert_int_equal(gf_outcome_commit_pack("m-1", both, 2, "alloc-1", TK_NOW, &buf, &len, &p),
                     GF_OK);
    Gamefn__V1__MatchOutcome *o = round_trip(buf, len, "m-1");
    assert_int_equal(o->state, GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED);
    assert_int_equal(o->n_assignments, 2);
    assert_string_equal(o->decided_by, "alloc-1");
    assert_non_null(gf_outcome_assignment(o, "t-2"));
    assert_null(gf_outcome_assignment(o, "t-3"));
    gf_outcome_free(o);

    /* Refused: no assignments, one for another match, a ticket twice, bad ids. */
    assert_int_equal(gf_outcome_commit_pack("m-1", both, 0, "a", TK_NOW, &buf, &len, &p),
                     GF_ERR_INVALID);
    Gamefn__V1__Assignment other = a2;
    other.match_id = "m-2";
    Gamefn__V1__Assignment *const mixed[] = {&a1, &other};
    assert_int_equal(gf_outcome_commit_pack("m-1", mixed, 2, "a", TK_NOW, &buf, &len, &p),
                     GF_ERR_INVALID);
    Gamefn__V1__Assignment *const twice[] = {&a1, &a1};
    assert_int_equal(gf_outcome_commit_pack("m-1", twice, 2, "a", TK_NOW, &buf, &len, &p),
                     GF_ERR_INVALID);
    assert_int_equal(gf_outcome_commit_pack("m 1", both, 2, "a", TK_NOW, &buf, &len, &p),
                     GF_ERR_INVALID);
    assert_int_equal(gf_outcome_commit_pack("m-1", both, 2, "", TK_NOW, &buf, &len, &p),
                     GF_ERR_INVALID);
}

static void test_abort_codec(void **state)
{
    (void)state;
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_tickets_problem p;
    assert_int_equal(gf_outcome_abort_pack("m-1", ABORT(TICKET_CANCELLED), "t-2", NULL, "intake-1",
                                           TK_NOW, &buf, &len, &p),
                     GF_OK);
    Gamefn__V1__MatchOutcome *o = round_trip(buf, len, NULL);
    assert_int_equal(o->state, GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_ABORTED);
    assert_int_equal(o->abort_reason, ABORT(TICKET_CANCELLED));
    assert_string_equal(o->ticket_id, "t-2");
    assert_true(strlen(o->detail) > 0);
    assert_null(gf_outcome_assignment(o, "t-1"));
    gf_outcome_free(o);

    assert_int_equal(
        gf_outcome_abort_pack("m-1", ABORT(UNSPECIFIED), NULL, NULL, "a", TK_NOW, &buf, &len, &p),
        GF_ERR_INVALID);
    assert_int_equal(gf_outcome_abort_pack("m-1", (Gamefn__V1__MatchAbortReason)99, NULL, NULL, "a",
                                           TK_NOW, &buf, &len, &p),
                     GF_ERR_INVALID);
    assert_int_equal(
        gf_outcome_abort_pack("m-1", ABORT(NO_SERVER), "bad id", NULL, "a", TK_NOW, &buf, &len, &p),
        GF_ERR_INVALID);

    /* Decoding checks the key and the state's fields. */
    Gamefn__V1__MatchOutcome *out = NULL;
    assert_int_equal(
        gf_outcome_abort_pack("m-1", ABORT(NO_SERVER), NULL, NULL, "a", TK_NOW, &buf, &len, &p),
        GF_OK);
    assert_int_equal(gf_outcome_decode(buf, len, "m-2", &out, &p), GF_ERR_INVALID);
    assert_null(out);
    free(buf);
    Gamefn__V1__MatchOutcome bad = GAMEFN__V1__MATCH_OUTCOME__INIT;
    bad.match_id = "m-1";
    bad.state = GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED; /* none */
    uint8_t raw[64];
    len = gamefn__v1__match_outcome__pack(&bad, raw);
    assert_int_equal(gf_outcome_decode(raw, len, NULL, &out, &p), GF_ERR_INVALID);
    const uint8_t junk[] = {0x12, 0x80};
    assert_int_equal(gf_outcome_decode(junk, sizeof junk, NULL, &out, &p), GF_ERR_INVALID);
}

static void test_return_reasons(void **state)
{
    (void)state;
    assert_int_equal(gf_outcome_return_reason(ABORT(NO_SERVER)), RS(NO_SERVER));
    assert_int_equal(gf_outcome_return_reason(ABORT(CLAIM_EXPIRED)), RS(CLAIM_EXPIRED));
    assert_int_equal(gf_outcome_return_reason(ABORT(TICKET_CANCELLED)), RS(MATCH_DROPPED));
    assert_int_equal(gf_outcome_return_reason(ABORT(TICKET_LOST)), RS(MATCH_DROPPED));
    assert_int_equal(gf_outcome_return_reason(ABORT(PUBLISH_UNKNOWN)), RS(MATCH_DROPPED));
}

static void test_settle(void **state)
{
    (void)state;
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_tickets_problem p;
    gf_ticket_next n, n2;
    Gamefn__V1__Assignment *const both[] = {&a1, &a2};

    assert_int_equal(gf_outcome_commit_pack("m-1", both, 2, "a", TK_NOW, &buf, &len, &p), GF_OK);
    Gamefn__V1__MatchOutcome *commit = round_trip(buf, len, "m-1");
    assert_int_equal(
        gf_outcome_abort_pack("m-1", ABORT(CLAIM_EXPIRED), NULL, NULL, "a", TK_NOW, &buf, &len, &p),
        GF_OK);
    Gamefn__V1__MatchOutcome *abort = round_trip(buf, len, "m-1");

    /* COMMITTED: the claimed ticket is assigned (help along); again: unchanged. */
    assert_int_equal(gf_outcome_settle(commit, &claimed.rec, TK_NOW + 20, &n, &p), GF_OK);
    assert_int_equal(n.rec.state, ST(ASSIGNED));
    assert_string_equal(n.rec.assignment->server_id, "gs-1");
    assert_int_equal(gf_outcome_settle(commit, &n.rec, TK_NOW + 30, &n2, &p), GF_OK);
    assert_true(n2.unchanged);

    /* ABORTED: released with the abort's reason, queue time kept. */
    assert_int_equal(gf_outcome_settle(abort, &claimed.rec, TK_NOW + 20, &n, &p), GF_OK);
    assert_int_equal(n.rec.state, ST(QUEUED));
    assert_int_equal(n.rec.reason, RS(CLAIM_EXPIRED));
    assert_int_equal(n.rec.queued_unix_ms, TK_NOW);
    /* Already back in the pool, or claimed by another match: not this match's any more. */
    assert_int_equal(gf_outcome_settle(abort, &n.rec, TK_NOW + 30, &n2, &p), GF_ERR_CONFLICT);
    const gf_ticket_claim_args c = {"matcher-2", "m-2", TK_NOW + 20000, NULL};
    gf_ticket_next other;
    assert_int_equal(gf_ticket_claim(&queued.rec, &c, TK_NOW + 40, &other, &p), GF_OK);
    assert_int_equal(gf_outcome_settle(abort, &other.rec, TK_NOW + 50, &n2, &p), GF_ERR_CONFLICT);
    assert_int_equal(gf_outcome_settle(commit, &other.rec, TK_NOW + 50, &n2, &p), GF_ERR_CONFLICT);
    /* Claimed by a match committed without it (a forged Match naming part of its
     * tickets was allocated): back to the pool, MATCH_DROPPED, queue time kept; once
     * back, or claimed by another match, not this match's any more. */
    Gamefn__V1__Assignment *const only2[] = {&a2};
    assert_int_equal(gf_outcome_commit_pack("m-1", only2, 1, "a", TK_NOW, &buf, &len, &p), GF_OK);
    Gamefn__V1__MatchOutcome *partial = round_trip(buf, len, "m-1");
    assert_int_equal(gf_outcome_settle(partial, &claimed.rec, TK_NOW + 20, &n, &p), GF_OK);
    assert_false(n.unchanged);
    assert_int_equal(n.rec.state, ST(QUEUED));
    assert_int_equal(n.rec.reason, RS(MATCH_DROPPED));
    assert_int_equal(n.rec.queued_unix_ms, TK_NOW);
    assert_int_equal(n.rec.returns, claimed.rec.returns + 1);
    assert_null(n.rec.claim);
    assert_null(n.rec.assignment);
    assert_int_equal(gf_outcome_settle(partial, &n.rec, TK_NOW + 30, &n2, &p), GF_ERR_CONFLICT);
    assert_int_equal(gf_outcome_settle(partial, &other.rec, TK_NOW + 50, &n2, &p), GF_ERR_CONFLICT);
    assert_int_equal(gf_outcome_settle(partial, &queued.rec, TK_NOW + 50, &n2, &p),
                     GF_ERR_CONFLICT);
    gf_outcome_free(partial);
    gf_outcome_free(commit);
    gf_outcome_free(abort);
}

/* ---- players ---------------------------------------------------------------------- */

static void test_players_codec(void **state)
{
    (void)state;
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_tickets_problem p;
    Gamefn__V1__PlayerMatchRecord *r = NULL;
    assert_int_equal(gf_players_pack("p-1", "t-1", TK_NOW, &buf, &len), GF_OK);
    assert_int_equal(gf_players_decode(buf, len, "p-1", &r, &p), GF_OK);
    assert_string_equal(r->ticket_id, "t-1");
    assert_int_equal(r->created_unix_ms, TK_NOW);
    gf_players_free(r);
    assert_int_equal(gf_players_decode(buf, len, "p-2", &r, &p), GF_ERR_INVALID);
    assert_null(r);
    free(buf);
    assert_int_equal(gf_players_pack("p 1", "t-1", TK_NOW, &buf, &len), GF_ERR_INVALID);
    assert_int_equal(gf_players_pack("p-1", "", TK_NOW, &buf, &len), GF_ERR_INVALID);
}

typedef struct pcase {
    const char *name;
    int ticket; /* -1 missing, else a TicketState */
    int64_t record_age_ms;
    int64_t assigned_ago_ms;
    const char *ticket_id; /* the ticket's own id; NULL = t-1 */
    gf_players_verdict want;
} pcase;

static const pcase pcases[] = {
    {"queued", ST(QUEUED), 1000, 0, NULL, GF_PLAYERS_LIVE},
    {"claimed", ST(CLAIMED), 1000, 0, NULL, GF_PLAYERS_LIVE},
    {"assigned 1 h ago", ST(ASSIGNED), 0, 3600000, NULL, GF_PLAYERS_LIVE},
    {"assigned 3 h ago", ST(ASSIGNED), 0, 3 * 3600000, NULL, GF_PLAYERS_STALE},
    {"assigned at the bound", ST(ASSIGNED), 0, 2 * 3600000, NULL, GF_PLAYERS_STALE},
    {"cancelled", ST(CANCELLED), 1000, 0, NULL, GF_PLAYERS_STALE},
    {"timed out", ST(TIMED_OUT), 1000, 0, NULL, GF_PLAYERS_STALE},
    {"missing, young record", -1, 1000, 0, NULL, GF_PLAYERS_PENDING},
    {"missing, old record", -1, 5000, 0, NULL, GF_PLAYERS_STALE},
    {"another ticket", ST(QUEUED), 1000, 0, "t-9", GF_PLAYERS_STALE},
};

static void test_players_judge(void **state)
{
    (void)state;
    const gf_players_policy pol = {.pending_grace_ms = 5000, .max_match_ms = 2 * 3600000};
    const int64_t now = TK_NOW + 10 * 3600000LL;
    for (size_t i = 0; i < sizeof pcases / sizeof pcases[0]; i++) {
        Gamefn__V1__PlayerMatchRecord r = GAMEFN__V1__PLAYER_MATCH_RECORD__INIT;
        r.player_id = "p-1";
        r.ticket_id = "t-1";
        r.created_unix_ms = now - pcases[i].record_age_ms;
        Gamefn__V1__TicketRecord t = queued.rec;
        Gamefn__V1__Assignment a = a1;
        t.state = pcases[i].ticket;
        t.ticket_id = (char *)(uintptr_t)(pcases[i].ticket_id ? pcases[i].ticket_id : "t-1");
        if (t.state == ST(ASSIGNED)) {
            a.assigned_unix_ms = now - pcases[i].assigned_ago_ms;
            t.assignment = &a;
        }
        gf_players_verdict v = gf_players_judge(&r, pcases[i].ticket < 0 ? NULL : &t, now, &pol);
        if (v != pcases[i].want)
            fail_msg("%s: %s, want %s", pcases[i].name, gf_players_verdict_name(v),
                     gf_players_verdict_name(pcases[i].want));
    }
    /* A ticket that does not list the player is no claim on the player. */
    Gamefn__V1__PlayerMatchRecord r = GAMEFN__V1__PLAYER_MATCH_RECORD__INIT;
    r.player_id = "p-7";
    r.ticket_id = "t-1";
    assert_int_equal(gf_players_judge(&r, &queued.rec, now, &pol), GF_PLAYERS_STALE);
}

/* ---- the functions.matcher section --------------------------------------------------- */

static void test_config_table(void **state)
{
    (void)state;
    gf_config_error err;
    assert_int_equal(gf_config_table_check(&gf_mm_config_table, &err), GF_OK);

    const gf_mm_tables *t = tk_tables();
    assert_int_equal(t->groups_len, 3); /* duel, team (squad + squad-ping), ffa */
    int team = gf_mm_group_index(t, "team");
    assert_true(team >= 0);
    assert_int_equal(t->groups[team].queues_len, 2);
    assert_int_equal(t->queue_group[gf_match_config_queue_index(&t->cfg, "squad-ping")], team);
    assert_int_equal(gf_mm_group_index(t, "squad"), -1);
    assert_int_equal(t->queues[1].team_size, 5); /* prepared: derived from the shape */
}

static void test_config_errors(void **state)
{
    (void)state;
    static const struct {
        const char *yaml;
        const char *key;
    } bad[] = {
        {"matchmaking:\n  datacenters: [{name: a, region: r}]\n  queues:\n"
         "    - {name: team, shape: 1v1}\n    - {name: x, playlist: team, shape: 1v1}\n",
         "matcher.matchmaking"},
        {"groups: [nope]\nmatchmaking:\n  datacenters: [{name: a, region: r}]\n  queues:\n"
         "    - {name: q, shape: 1v1}\n",
         "matcher.groups"},
        {"claim_lease: 10ms\nmatchmaking:\n  datacenters: [{name: a, region: r}]\n  queues:\n"
         "    - {name: q, shape: 1v1}\n",
         "matcher.claim_lease"},
        {"matchmaking:\n  datacenters: [{name: a.b, region: r}]\n  queues:\n"
         "    - {name: q, shape: 1v1}\n",
         "matcher.matchmaking"},
        {"claim_lease: 5s\n", "matcher.matchmaking"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gf_mm_config mm;
        struct gf_config_arena *arena = NULL;
        gf_config_error err;
        if (gf_config_parse_table("matcher", bad[i].yaml, strlen(bad[i].yaml), &gf_mm_config_table,
                                  &mm, &arena, &err) == GF_OK)
            fail_msg("case %zu accepted", i);
        if (strstr(err.key, bad[i].key + strlen("matcher.")) == NULL)
            fail_msg("case %zu: key '%s' (%s), want %s", i, err.key, err.message, bad[i].key);
        gf_config_arena_free(arena);
    }
    /* A valid groups list. */
    const char ok[] = "groups: [duel]\nmatchmaking:\n  datacenters: [{name: a, region: r}]\n"
                      "  queues:\n    - {name: duel, shape: 1v1}\n";
    gf_mm_config mm;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    assert_int_equal(
        gf_config_parse_table("matcher", ok, strlen(ok), &gf_mm_config_table, &mm, &arena, &err),
        GF_OK);
    assert_int_equal(mm.groups_len, 1);
    assert_int_equal(mm.claim_lease_ms, 10000);
    assert_int_equal(mm.status_interval_ms, 2000);
    gf_config_arena_free(arena);
}

/* config/gamefn.yaml ships a queue per mode and kind of shape, its datacenters are the
 * benchmark population's, and every function section checks. */
static void test_shipped_config(void **state)
{
    (void)state;
    const char *src = getenv("GAMEFN_SOURCE_DIR");
    if (!src)
        skip();
    char path[1024], why[256];
    snprintf(path, sizeof path, "%s/config/gamefn.yaml", src);
    gf_config *cfg = NULL;
    gf_config_error err;
    if (gf_mm_config_load(path, &cfg, &err) != GF_OK)
        fail_msg("%s", err.message);
    const gf_mm_config *mm = gf_config_function(cfg);
    static gf_mm_tables t;
    assert_int_equal(gf_mm_tables_build(&mm->matchmaking, &t, why, sizeof why), GF_OK);
    static const char *const shapes[] = {"1v1", "5v5", "4v4v4", "ffa16"};
    for (size_t sh = 0; sh < 4; sh++) {
        for (int mode = GF_MATCH_SBMM; mode <= GF_MATCH_HYBRID; mode++) {
            bool found = false;
            for (size_t q = 0; q < t.cfg.queues_len && !found; q++)
                found = t.queues[q].mode == mode && strcmp(t.queues[q].shape, shapes[sh]) == 0;
            if (!found)
                fail_msg("no %s queue of shape %s", gf_match_mode_name(mode), shapes[sh]);
        }
    }
    size_t n = 0;
    const gf_match_dc *pop = gf_pop_datacenters(&n);
    assert_int_equal(t.cfg.datacenters_len, n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(t.dcs[i].name, pop[i].name);
        assert_string_equal(t.dcs[i].region, pop[i].region);
    }
    /* The tickets bucket keeps a live ticket longer than any queue's TTL plus a lease. */
    const gf_bucket_config *b = gf_config_bucket(cfg, "tickets");
    assert_non_null(b);
    for (size_t q = 0; q < t.cfg.queues_len; q++)
        assert_true(t.queues[q].ttl_ms + mm->claim_lease_ms < b->ttl_ms);
    assert_non_null(gf_config_bucket(cfg, "matches"));
    assert_non_null(gf_config_stream(cfg, "AUDIT_TICKETS"));
    gf_config_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_codec),   cmocka_unit_test(test_abort_codec),
        cmocka_unit_test(test_return_reasons), cmocka_unit_test(test_settle),
        cmocka_unit_test(test_players_codec),  cmocka_unit_test(test_players_judge),
        cmocka_unit_test(test_config_table),   cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_shipped_config),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
