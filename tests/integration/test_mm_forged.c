/*
 * test_mm_forged.c — well-formed Matches on MATCHES that no matcher formed (anyone who
 * may publish on gamefn.v1.match.found.>, or a replay of an old one), against the
 * allocator, the fleet and simulated servers on a real nats-server:
 *   - naming QUEUED tickets, tickets claimed by another match, tickets that do not
 *     exist, and a real match's id with one of its tickets and a foreign one: each is
 *     terminated, nothing is written (no ticket, no commit record, no server), and the
 *     real match is then assigned as if nothing had happened;
 *   - naming only tickets claimed by the real match's id, whose claims carry the digest
 *     of the Match formed (gamefn/tickets/claim_digest.h), but a subset of them, other
 *     datacenters, or the teams swapped: terminated, nothing written; the real Match is
 *     allocated when it comes;
 *   - claims without a digest (an older matcher): the Match is allocated as before;
 *   - the real match replayed once ASSIGNED (another Nats-Msg-Id), alone and mixed with
 *     a foreign ticket: terminated, no ticket rewritten, no second server, no token;
 *   - with the whole service: a copy of a real Match naming one of its two tickets,
 *     allocated first, is refused with nothing written, and the real Match, arriving
 *     late, is allocated; a forged Match published under the real one's Nats-Msg-Id
 *     before the matcher publishes (the matcher paused between claims and publish), so
 *     that the real one is dropped as a duplicate: refused, and the tickets go back to
 *     the pool when their claims' lease ends (CLAIM_EXPIRED, queue time kept) and are
 *     matched again; the checker finds nothing wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_support.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/subjects.h"
#include "gamefn/tickets/claim_digest.h"
#include "gamefn/tickets/outcome.h"
#include "mm_support.h"
#include "simstack.h"

#define QUEUED    GAMEFN__V1__TICKET_STATE__TICKET_STATE_QUEUED
#define CLAIMED   GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED
#define ASSIGNED  GAMEFN__V1__TICKET_STATE__TICKET_STATE_ASSIGNED
#define COMMITTED 1
#define ABORTED   2

enum { N_WATCHED = 5, SIMS_MAX = 3 };
static const char *const watched[N_WATCHED] = {"t-q1", "t-r1", "t-r2", "t-d1", "t-d2"};
static const char other_match[] = "match refused: its claims name another match";
static const char legacy[] = "match fenced on claims without a digest (an older matcher)";

/* The servers allocated to `match` (NULL: to any match). */
static int allocated_to(fleet_env *e, const char *match)
{
    return fleet_allocated_to(e, "eu", SIMS_MAX, match);
}

/* Claims new tickets for `match` as a matcher does: every claim carries the digest of
 * the Match gf_simstack_match() builds from the same arguments (one ticket per team). */
static void claim_with_digest(fleet_env *e, const char *match, char *const *tickets, size_t n,
                              const char *datacenters, int64_t created_ms, int64_t queued_ms)
{
    uint8_t buf[8192], d[GF_CLAIM_DIGEST_LEN];
    size_t len = gf_simstack_match(match, tickets, n, datacenters, created_ms, buf);
    Gamefn__V1__Match *m = gamefn__v1__match__unpack(NULL, len, buf);
    assert_non_null(m);
    assert_int_equal(gf_claim_digest_of(m, d), GF_OK);
    gamefn__v1__match__free_unpacked(m, NULL);
    for (size_t i = 0; i < n; i++) {
        fleet_claim_ticket(e, tickets[i], match, queued_ms);
        uint64_t rev = fleet_ticket_revision(e, tickets[i]);
        Gamefn__V1__TicketRecord *t = fleet_ticket(e, tickets[i]);
        t->claim->match_digest.data = d;
        t->claim->match_digest.len = sizeof d;
        assert_true(gamefn__v1__ticket_record__get_packed_size(t) <= sizeof buf);
        len = gamefn__v1__ticket_record__pack(t, buf);
        t->claim->match_digest.data = NULL; /* ours, not the unpacker's */
        t->claim->match_digest.len = 0;
        gamefn__v1__ticket_record__free_unpacked(t, NULL);
        assert_int_equal(gf_kv_update(e->tickets, tickets[i], buf, len, rev, NULL), GF_OK);
    }
}

/* Publishes a forged Match and waits until the allocator refused it: terminated, the
 * reason logged, and not one write to tickets or matches. */
static void refused_as(fleet_env *e, const gf_proc *alloc, const char *match, const char *msg_id,
                       char *const *tickets, size_t n, const char *datacenters, int64_t created_ms,
                       const char *why)
{
    uint64_t revs[N_WATCHED];
    for (size_t i = 0; i < N_WATCHED; i++)
        revs[i] = fleet_ticket_revision(e, watched[i]);
    int outcome = fleet_outcome_state(e, match);
    char want[160];
    snprintf(want, sizeof want, "%s\" match=%s ", why, match);
    size_t before = fleet_log_count(alloc, want);
    fleet_publish_match_as(e, match, msg_id, tickets, n, datacenters, created_ms);
    for (int waited = 0; fleet_log_count(alloc, want) == before; waited += 50) {
        if (waited > 10000) {
            gf_proc_dump_log(alloc, 20);
            fail_msg("no \"%s\" in the allocator's log", want);
        }
        gf_clock_sleep_ms(50);
    }
    fleet_wait_matches_drained(e, 5000);
    for (size_t i = 0; i < N_WATCHED; i++)
        assert_int_equal(fleet_ticket_revision(e, watched[i]), revs[i]);
    assert_null(fleet_ticket(e, "t-none"));
    assert_int_equal(fleet_outcome_state(e, match), outcome);
}

static void refused(fleet_env *e, const gf_proc *alloc, const char *match, const char *msg_id,
                    char *const *tickets, size_t n, const char *why)
{
    refused_as(e, alloc, match, msg_id, tickets, n, "eu", gf_clock_unix_ms(), why);
}

static void forged_matches_change_nothing(void **state)
{
    (void)state;
    fleet_env e;
    gf_proc fleet = {0}, alloc = {0};
    fleet_env_start(&e, NULL);
    fleet_env_spawn(&e, &fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&e, &alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
    gf_gamesim *sim = fleet_sim_start(&e, "eu", 2, -1);
    int64_t queued = gf_clock_unix_ms() - 3000;
    fleet_queue_ticket(&e, "t-q1", queued);
    fleet_claim_ticket(&e, "t-r1", "m-real", queued); /* the real match, not published yet */
    fleet_claim_ticket(&e, "t-r2", "m-real", queued);
    /* A match whose claims carry its digest: t-d1 on team 0, t-d2 on team 1, eu then us. */
    char *dig[] = {"t-d1", "t-d2"};
    int64_t made = gf_clock_unix_ms();
    claim_with_digest(&e, "m-dig", dig, 2, "eu,us", made, queued);
    static const char not_claimed[] = "match refused: its tickets are not claimed by it";

    char *queued_ids[] = {"t-q1"};
    refused(&e, &alloc, "m-f-queued", "f1", queued_ids, 1, not_claimed);
    char *others[] = {"t-r1", "t-r2"}; /* claimed by m-real */
    refused(&e, &alloc, "m-f-other", "f2", others, 2, not_claimed);
    char *absent[] = {"t-none", "t-q1"};
    refused(&e, &alloc, "m-f-absent", "f3", absent, 2, not_claimed);
    /* The real match's id, one of its tickets and a foreign one: aborting it would let
     * any publisher kill a real match. */
    char *mixed[] = {"t-r1", "t-q1"};
    refused(&e, &alloc, "m-real", "f4", mixed, 2, not_claimed);
    /* Its id and only tickets claimed by it, but not the Match its claims name: a subset,
     * the same tickets with other datacenters (another order, another one), the teams
     * swapped. */
    char *dig_subset[] = {"t-d1"};
    refused_as(&e, &alloc, "m-dig", "f5", dig_subset, 1, "eu,us", made, other_match);
    refused_as(&e, &alloc, "m-dig", "f6", dig, 2, "us,eu", made, other_match);
    refused_as(&e, &alloc, "m-dig", "f7", dig, 2, "us", made, other_match);
    char *dig_swapped[] = {"t-d2", "t-d1"};
    refused_as(&e, &alloc, "m-dig", "f8", dig_swapped, 2, "eu,us", made, other_match);
    assert_int_equal(allocated_to(&e, NULL), 0);
    Gamefn__V1__TicketRecord *t = fleet_ticket(&e, "t-r1");
    assert_int_equal(t->state, CLAIMED);
    gamefn__v1__ticket_record__free_unpacked(t, NULL);

    /* The real match is untouched: assigned on one server. */
    fleet_publish_match(&e, "m-real", others, 2, "eu");
    Gamefn__V1__TicketRecord *a = fleet_wait_ticket(&e, "t-r1", ASSIGNED, 10000);
    Gamefn__V1__TicketRecord *b = fleet_wait_ticket(&e, "t-r2", ASSIGNED, 10000);
    assert_string_equal(a->assignment->server_id, b->assignment->server_id);
    assert_int_equal(fleet_outcome_state(&e, "m-real"), COMMITTED);
    fleet_wait_matches_drained(&e, 5000);
    assert_int_equal(allocated_to(&e, "m-real"), 1);
    assert_int_equal(allocated_to(&e, NULL), 1);
    /* Its claims have no digest (an older matcher's): taken as they come, and logged. */
    char said[160];
    snprintf(said, sizeof said, "%s\" match=m-real claims=2 of=2", legacy);
    assert_int_equal(fleet_log_count(&alloc, said), 1);

    /* Replays of the assigned match (past the duplicate window: another Msg-Id), alone
     * and mixed with a foreign ticket: no ticket rewritten (no new token), no server. */
    static const char replay[] = "match refused: committed already (a replay)";
    refused(&e, &alloc, "m-real", "r1", others, 2, replay);
    char *replay_mixed[] = {"t-r2", "t-q1"};
    refused(&e, &alloc, "m-real", "r2", replay_mixed, 2, replay);
    assert_int_equal(allocated_to(&e, "m-real"), 1);
    assert_int_equal(allocated_to(&e, NULL), 1);
    Gamefn__V1__TicketRecord *q = fleet_ticket(&e, "t-q1");
    assert_int_equal(q->state, QUEUED);
    assert_null(q->assignment);
    gamefn__v1__ticket_record__free_unpacked(q, NULL);
    gamefn__v1__ticket_record__free_unpacked(a, NULL);
    gamefn__v1__ticket_record__free_unpacked(b, NULL);

    /* The match with a digest, its Match as formed: assigned, on the other server. */
    fleet_publish_match_as(&e, "m-dig", "m-dig", dig, 2, "eu,us", made);
    a = fleet_wait_ticket(&e, "t-d1", ASSIGNED, 10000);
    b = fleet_wait_ticket(&e, "t-d2", ASSIGNED, 10000);
    assert_string_equal(a->assignment->server_id, b->assignment->server_id);
    assert_int_equal(a->assignment->team, 0);
    assert_int_equal(b->assignment->team, 1);
    assert_int_equal(fleet_outcome_state(&e, "m-dig"), COMMITTED);
    fleet_wait_matches_drained(&e, 5000);
    assert_int_equal(allocated_to(&e, "m-dig"), 1);
    assert_int_equal(allocated_to(&e, NULL), 2);
    snprintf(said, sizeof said, "%s\" match=m-dig ", legacy);
    assert_int_equal(fleet_log_count(&alloc, said), 0);
    gamefn__v1__ticket_record__free_unpacked(a, NULL);
    gamefn__v1__ticket_record__free_unpacked(b, NULL);

    gf_gamesim_stop(sim);
    assert_true(gf_fnenv_stop(&alloc, 15000));
    assert_true(gf_fnenv_stop(&fleet, 15000));
    fleet_env_free(&e);
}

/* The Match the matcher stored for `match`, taken off MATCHES before any allocator saw
 * it (so the forged copy is allocated first: the order a forger racing it could win). */
static Gamefn__V1__Match *take_real_match(fleet_env *e, const char *match)
{
    natsMsg *m = NULL;
    assert_int_equal(
        js_GetLastMsg(&m, e->fn.js, "MATCHES", GF_WIRE_SUBJ_MATCH_FOUND ".duel", NULL, NULL),
        NATS_OK);
    Gamefn__V1__Match *real = gamefn__v1__match__unpack(NULL, (size_t)natsMsg_GetDataLength(m),
                                                        (const uint8_t *)natsMsg_GetData(m));
    assert_non_null(real);
    assert_string_equal(real->match_id, match);
    assert_int_equal(js_DeleteMsg(e->fn.js, "MATCHES", natsMsg_GetSequence(m), NULL, NULL),
                     NATS_OK);
    natsMsg_Destroy(m);
    return real;
}

static void create(fleet_env *e, const char *key, const char *player, char *id, size_t size)
{
    mm_ticket t = mm_solo(key, player);
    t.pings = "eu:20,us:90";
    mm_create_new(&e->fn, &t, id, size);
}

/* The duel service with the matcher's claim_lease set to `lease`, every function but
 * p[held] started (the test starts that one), and SIMS_MAX simulated servers in eu. */
static gf_gamesim *service_start(fleet_env *e, gf_proc p[FLEET_SERVICE_N], const char *lease,
                                 size_t held)
{
    char keys[64];
    snprintf(keys, sizeof keys, "    claim_lease: %s\n", lease);
    fleet_duel_service_start(e, p, keys, held);
    return fleet_sim_start(e, "eu", SIMS_MAX, -1);
}

/* Frees the 4 records (the pair as claimed, then as assigned) and stops what
 * service_start() and the test started. */
static void service_stop(fleet_env *e, gf_proc p[FLEET_SERVICE_N], gf_gamesim *sim,
                         Gamefn__V1__TicketRecord *recs[4])
{
    for (int i = 0; i < 4; i++)
        gamefn__v1__ticket_record__free_unpacked(recs[i], NULL);
    gf_gamesim_stop(sim);
    fleet_service_stop(p);
    fleet_env_free(e);
}

/* Two new tickets (players a and b), waited for until a matcher claimed both for one
 * match: t[] as claimed, ids into id[], the match id into match. */
static void claimed_pair(fleet_env *e, const char *a, const char *b, char id[2][80],
                         Gamefn__V1__TicketRecord *t[2], char *match, size_t size)
{
    const char *players[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        char key[32];
        snprintf(key, sizeof key, "k-%s", players[i]);
        create(e, key, players[i], id[i], 80);
    }
    for (int i = 0; i < 2; i++)
        t[i] = fleet_wait_ticket(e, id[i], CLAIMED, 10000);
    snprintf(match, size, "%s", t[0]->claim->match_id);
    assert_string_equal(t[1]->claim->match_id, match);
    assert_int_equal(t[0]->claim->match_digest.len, GF_CLAIM_DIGEST_LEN);
    assert_memory_equal(t[0]->claim->match_digest.data, t[1]->claim->match_digest.data,
                        GF_CLAIM_DIGEST_LEN);
}

/* Publishes `m` with only its first n_teams teams under Msg-Id msg_id; whether the
 * stream took it as a duplicate. */
static bool publish_teams(fleet_env *e, Gamefn__V1__Match *m, size_t n_teams, const char *msg_id)
{
    uint8_t buf[8192];
    size_t all = m->n_teams;
    m->n_teams = n_teams;
    assert_true(gamefn__v1__match__get_packed_size(m) <= sizeof buf);
    size_t len = gamefn__v1__match__pack(m, buf);
    m->n_teams = all;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = msg_id;
    jsPubAck *pa = NULL;
    assert_int_equal(
        js_Publish(&pa, e->fn.js, GF_WIRE_SUBJ_MATCH_FOUND ".duel", buf, (int)len, &po, NULL),
        NATS_OK);
    bool dup = pa->Duplicate;
    jsPubAck_Destroy(pa);
    return dup;
}

/* Waits for the allocator's log line refusing `match` with `why`. */
static void wait_refused(const gf_proc *alloc, const char *match, const char *why)
{
    char want[160];
    snprintf(want, sizeof want, "%s\" match=%s ", why, match);
    if (!fleet_log_has(alloc, want, 10000)) {
        gf_proc_dump_log(alloc, 20);
        fail_msg("no \"%s\" in the allocator's log", want);
    }
}

/* Nothing written for `match`: both tickets as claimed, no commit record, no server. */
static void nothing_written(fleet_env *e, const char id[2][80], Gamefn__V1__TicketRecord *t[2],
                            const uint64_t rev[2], const char *match)
{
    fleet_wait_matches_drained(e, 5000);
    for (int i = 0; i < 2; i++) {
        Gamefn__V1__TicketRecord *now = fleet_ticket(e, id[i]);
        assert_int_equal(now->state, CLAIMED);
        assert_string_equal(now->claim->match_id, match);
        assert_null(now->assignment);
        assert_int_equal(fleet_ticket_revision(e, id[i]), rev[i]);
        assert_int_equal(now->returns, t[i]->returns);
        gamefn__v1__ticket_record__free_unpacked(now, NULL);
    }
    assert_int_equal(fleet_outcome_state(e, match), 0);
    assert_int_equal(allocated_to(e, match), 0);
    assert_int_equal(allocated_to(e, NULL), 0);
}

static void subset_refused_real_allocated(void **state)
{
    (void)state;
    /* A 5 s claim lease; the allocator starts once the real Match is off the stream, so
     * the forged copy is what it sees first. */
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N] = {0};
    gf_gamesim *sim = service_start(&e, p, "5s", FLEET_SERVICE_ALLOCATOR);

    char id[2][80], match[80];
    Gamefn__V1__TicketRecord *t[2];
    claimed_pair(&e, "alice", "bob", id, t, match, sizeof match);
    uint64_t rev[2] = {fleet_ticket_revision(&e, id[0]), fleet_ticket_revision(&e, id[1])};
    Gamefn__V1__Match *real = take_real_match(&e, match);
    assert_int_equal(real->n_teams, 2);

    /* The real Match with its second team left out: every ticket it names is claimed by
     * its id, but the claims name the whole match. */
    assert_false(publish_teams(&e, real, 1, "forged-subset"));
    fleet_service_spawn_one(&e, p, FLEET_SERVICE_ALLOCATOR);
    wait_refused(&p[FLEET_SERVICE_ALLOCATOR], match, other_match);
    nothing_written(&e, (const char(*)[80])id, t, rev, match);

    /* The real one, late (another Msg-Id: its own is in the duplicate window): assigned. */
    assert_false(publish_teams(&e, real, 2, "real-late"));
    Gamefn__V1__TicketRecord *a = fleet_wait_ticket(&e, id[0], ASSIGNED, 10000);
    Gamefn__V1__TicketRecord *b = fleet_wait_ticket(&e, id[1], ASSIGNED, 10000);
    assert_string_equal(a->assignment->match_id, match);
    assert_string_equal(b->assignment->match_id, match);
    assert_string_equal(a->assignment->server_id, b->assignment->server_id);
    assert_int_equal(fleet_outcome_state(&e, match), COMMITTED);
    mm_check_clean(&e.fn, 0);

    gamefn__v1__match__free_unpacked(real, NULL);
    service_stop(&e, p, sim, (Gamefn__V1__TicketRecord *[4]){t[0], t[1], a, b});
}

/* The commit record of `match`, decoded (NULL if none). */
static Gamefn__V1__MatchOutcome *outcome(fleet_env *e, const char *match)
{
    kvEntry *en = NULL;
    if (gf_kv_get(e->matches, match, &en) != GF_OK)
        return NULL;
    Gamefn__V1__MatchOutcome *o = NULL;
    assert_int_equal(
        gf_outcome_decode(kvEntry_Value(en), (size_t)kvEntry_ValueLen(en), match, &o, NULL), GF_OK);
    kvEntry_Destroy(en);
    return o;
}

/* The next QUEUED status push on `sub` with `reason`, within timeout_ms (NULL if none). */
static Gamefn__V1__TicketStatus *queued_push(natsSubscription *sub, int reason, int timeout_ms)
{
    int64_t until = gf_clock_mono_ms() + timeout_ms;
    for (int64_t left = timeout_ms; left > 0; left = until - gf_clock_mono_ms()) {
        natsMsg *msg = NULL;
        if (natsSubscription_NextMsg(&msg, sub, left) != NATS_OK)
            return NULL;
        Gamefn__V1__TicketStatus *st = gamefn__v1__ticket_status__unpack(
            NULL, (size_t)natsMsg_GetDataLength(msg), (const uint8_t *)natsMsg_GetData(msg));
        natsMsg_Destroy(msg);
        if (st && st->state == QUEUED && (int)st->reason == reason)
            return st;
        if (st)
            gamefn__v1__ticket_status__free_unpacked(st, NULL);
    }
    return NULL;
}

static void forged_msg_id_real_returns_at_lease(void **state)
{
    (void)state;
    /* The matcher stops 2 s between a tick's claims and its publish: long enough for a
     * forger to publish first under the match's id. Claim lease 4 s. */
    fleet_env e;
    gf_proc p[FLEET_SERVICE_N] = {0};
    enum { MATCHER = FLEET_SERVICE_N - 1 };
    gf_gamesim *sim = service_start(&e, p, "4s", MATCHER);
    char *pause[] = {"GAMEFN_TEST_MATCHER_PAUSE=claimed:2000", NULL};
    fleet_env_spawn(&e, &p[MATCHER], "functions/matcher/gamefn-matcher", "matcher", "m1", pause);

    natsSubscription *sub[2] = {NULL, NULL};
    char id[2][80], match[80];
    Gamefn__V1__TicketRecord *t[2];
    claimed_pair(&e, "carol", "dave", id, t, match, sizeof match);
    for (int i = 0; i < 2; i++) {
        char subject[256];
        snprintf(subject, sizeof subject, "%s.%s", GF_WIRE_SUBJ_TICKET_STATUS, id[i]);
        assert_int_equal(natsConnection_SubscribeSync(&sub[i], e.fn.nc, subject), NATS_OK);
    }
    natsConnection_Flush(e.fn.nc);
    uint64_t rev[2] = {fleet_ticket_revision(&e, id[0]), fleet_ticket_revision(&e, id[1])};

    /* Within the pause: a forged Match naming one of the tickets, under the match's id as
     * its Msg-Id. Stored (not a duplicate): the real one will be. */
    uint8_t buf[8192];
    char *one[] = {id[0]};
    size_t len = gf_simstack_match(match, one, 1, "eu", gf_clock_unix_ms(), buf);
    Gamefn__V1__Match *forged = gamefn__v1__match__unpack(NULL, len, buf);
    assert_non_null(forged);
    assert_false(publish_teams(&e, forged, 1, match));
    gamefn__v1__match__free_unpacked(forged, NULL);
    wait_refused(&p[FLEET_SERVICE_ALLOCATOR], match, other_match);
    char over[256];
    snprintf(over, sizeof over, "test pause over\" step=claimed match=%s", match);
    assert_true(fleet_log_has(&p[MATCHER], over, 5000)); /* the real one went out, deduplicated */
    nothing_written(&e, (const char(*)[80])id, t, rev, match);

    /* Back in the pool once the claims' lease is over (a matcher aborts the match,
     * CLAIM_EXPIRED), queue time kept; then matched again. */
    int64_t due = t[0]->claim->lease_expires_unix_ms + 2000 - gf_clock_unix_ms();
    for (int i = 0; i < 2; i++) {
        Gamefn__V1__TicketStatus *st = queued_push(
            sub[i], GAMEFN__V1__TICKET_REASON__TICKET_REASON_CLAIM_EXPIRED, due > 0 ? (int)due : 1);
        if (!st)
            fail_msg("no QUEUED CLAIM_EXPIRED push for %s", id[i]);
        assert_true(st->updated_unix_ms >= t[i]->claim->lease_expires_unix_ms);
        assert_int_equal(st->queued_unix_ms, t[i]->queued_unix_ms);
        gamefn__v1__ticket_status__free_unpacked(st, NULL);
    }
    Gamefn__V1__MatchOutcome *ab = outcome(&e, match);
    assert_non_null(ab);
    assert_int_equal(ab->state, ABORTED);
    assert_int_equal(ab->abort_reason,
                     GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_CLAIM_EXPIRED);
    gf_outcome_free(ab);
    Gamefn__V1__TicketRecord *a = fleet_wait_ticket(&e, id[0], ASSIGNED, 15000);
    Gamefn__V1__TicketRecord *b = fleet_wait_ticket(&e, id[1], ASSIGNED, 15000);
    assert_string_not_equal(a->assignment->match_id, match);
    assert_string_equal(a->assignment->match_id, b->assignment->match_id);
    assert_int_equal(a->returns, t[0]->returns + 1);
    assert_int_equal(a->queued_unix_ms, t[0]->queued_unix_ms);
    assert_int_equal(allocated_to(&e, a->assignment->match_id), 1);
    mm_check_clean(&e.fn, 0);

    for (int i = 0; i < 2; i++)
        natsSubscription_Destroy(sub[i]);
    service_stop(&e, p, sim, (Gamefn__V1__TicketRecord *[4]){t[0], t[1], a, b});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forged_matches_change_nothing),
        cmocka_unit_test(subset_refused_real_allocated),
        cmocka_unit_test(forged_msg_id_real_returns_at_lease),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
