/*
 * test_matcher_tick.c — the matcher's tick (functions/matcher/{tick,claim,settle}.c) with
 * the mirror and the store replaced by test doubles, so every outcome of every write can
 * be chosen:
 *  - claims: all won -> the Match is published (subject, Nats-Msg-Id = match_id, claim
 *    revisions, teams); one lost -> the won claims of that match are released
 *    (MATCH_DROPPED, compare-and-set on the claim's revision) and nothing is published,
 *    while the other match of the tick goes ahead;
 *  - a publish with an unknown outcome -> the match is aborted through the commit record
 *    (PUBLISH_UNKNOWN) and its claims released, unless the record says COMMITTED;
 *  - expired claims -> their matches aborted (CLAIM_EXPIRED; one commit record per match,
 *    all in one batch) and the tickets released, or ASSIGNED when the record says
 *    COMMITTED;
 *  - a QUEUED ticket past its TTL -> TIMED_OUT and its players records cleared.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/record.h"
#include "gamefn/tickets/request.h"
#include "gamefn/v1/match.pb-c.h"
#include "matcher.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x

/* ---- the doubles --------------------------------------------------------------------- */

typedef struct written {
    gf_mm_op op; /* key and msg_id copied below */
    char key[128], msg_id[64];
    uint8_t data[4096];
} written;

static struct {
    mm_ref *refs[16];
    size_t nrefs;
    written ops[64];
    size_t nops;
    const char *conflict_key;    /* a ticket whose claim loses */
    gf_err publish_err;          /* result of every PUBLISH */
    int outcome_state;           /* what gf_mmstore_abort_match finds */
    Gamefn__V1__Assignment *asg; /* the COMMITTED outcome's assignment (one ticket) */
    int aborts, abort_batches, abort_reason, cleared, pushes;
    uint64_t next_rev;
} fx;

bool mm_mirror_ready(mm_mirror *m)
{
    return true;
}

size_t mm_mirror_snapshot(mm_mirror *m, int group, mm_ref ***out)
{
    *out = malloc(sizeof(mm_ref *) * (fx.nrefs ? fx.nrefs : 1));
    memcpy(*out, fx.refs, sizeof(mm_ref *) * fx.nrefs);
    return fx.nrefs;
}

void mm_ref_release(mm_mirror *m, mm_ref **refs, size_t n)
{
}

void mm_mirror_busy(mm_mirror *m, const char *id, uint64_t rev, int64_t for_ms)
{
}

bool mm_mirror_push_due(mm_mirror *m, const char *id, int reason, int64_t now_ms,
                        int64_t interval_ms)
{
    return true;
}

gf_err gf_mmstore_batch(gf_mmstore *s, gf_mm_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gf_mm_op *op = &ops[i];
        written *w = &fx.ops[fx.nops++];
        assert_true(fx.nops <= 64);
        snprintf(w->key, sizeof w->key, "%s", op->key);
        snprintf(w->msg_id, sizeof w->msg_id, "%s", op->msg_id ? op->msg_id : "");
        assert_true(op->len <= sizeof w->data);
        memcpy(w->data, op->data, op->len);
        if (op->kind == GF_MM_PUBLISH) {
            op->err = fx.publish_err;
        } else if (fx.conflict_key && strcmp(op->key, fx.conflict_key) == 0) {
            op->err = GF_ERR_CONFLICT;
        } else {
            op->err = GF_OK;
            op->rev = ++fx.next_rev;
        }
        w->op = *op; /* with its result */
    }
    return GF_OK;
}

gf_err gf_mmstore_abort_match(gf_mmstore *s, const char *match_id, int abort_reason,
                              const char *ticket_id, const char *decided_by, int64_t now_ms,
                              Gamefn__V1__MatchOutcome **out)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    fx.aborts++;
    fx.abort_reason = abort_reason;
    if (fx.outcome_state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED) {
        fx.asg->match_id = (char *)(uintptr_t)match_id;
        Gamefn__V1__Assignment *const one[] = {fx.asg};
        assert_int_equal(
            gf_outcome_commit_pack(match_id, one, 1, "alloc", now_ms, &buf, &len, NULL), GF_OK);
    } else {
        assert_int_equal(gf_outcome_abort_pack(match_id, abort_reason, ticket_id, NULL, decided_by,
                                               now_ms, &buf, &len, NULL),
                         GF_OK);
    }
    gf_err err = gf_outcome_decode(buf, len, match_id, out, NULL);
    free(buf);
    return err;
}

gf_err gf_mmstore_abort_matches(gf_mmstore *s, const char *const *match_ids, size_t n,
                                int abort_reason, const char *decided_by, int64_t now_ms,
                                Gamefn__V1__MatchOutcome **outs, gf_err *errs)
{
    fx.abort_batches++;
    for (size_t i = 0; i < n; i++)
        errs[i] = gf_mmstore_abort_match(s, match_ids[i], abort_reason, NULL, decided_by, now_ms,
                                         &outs[i]);
    return GF_OK;
}

void gf_mmstore_clear_players(gf_mmstore *s, const Gamefn__V1__TicketRecord *rec)
{
    fx.cleared++;
}

void gf_mmstore_push(gf_mmstore *s, const char *ticket_id, const void *data, size_t len)
{
    fx.pushes++;
}

void gf_mmstore_push_record(gf_mmstore *s, const Gamefn__V1__TicketRecord *rec, uint64_t revision,
                            const char *note)
{
    fx.pushes++;
}

/* ---- fixture --------------------------------------------------------------------------- */

static const char yaml[] = "claim_lease: 5s\n"
                           "matchmaking:\n"
                           "  datacenters: [{name: eu-west, region: eu}]\n"
                           "  queues: [{name: duel, mode: hybrid, shape: 1v1}]\n";

static matcher *m;
static gf_mm_config mm;

static int setup(void **state)
{
    static struct gf_config_arena *arena; /* kept for the process's life */
    gf_config_error err;
    char why[256];
    m = calloc(1, sizeof *m);
    assert_int_equal(
        gf_config_parse_table("t", yaml, strlen(yaml), &gf_mm_config_table, &mm, &arena, &err),
        GF_OK);
    m->cfg = &mm;
    m->instance_id = "matcher-t";
    assert_int_equal(gf_mm_tables_build(&mm.matchmaking, &m->tables, why, sizeof why), GF_OK);
    m->ngroups = 1;
    m->groups[0].m = m;
    assert_int_equal(gf_match_workspace_create(&m->groups[0].ws), GF_OK);
    assert_int_equal(gf_match_wait_create(&m->tables.cfg, NULL, &m->groups[0].wait), GF_OK);
    return 0;
}

/* A stored ticket of player `who`, queued age_ms ago, in state QUEUED (or CLAIMED by
 * match_id with a lease that ended at lease_end when match_id is set). */
static mm_ref *ticket(const char *who, int64_t age_ms, const char *match_id, int64_t lease_end)
{
    static char keys[16][32], players[16][32];
    static int k;
    Gamefn__V1__PartyMember mem = GAMEFN__V1__PARTY_MEMBER__INIT, *mp[1] = {&mem};
    Gamefn__V1__DatacenterPing pg = GAMEFN__V1__DATACENTER_PING__INIT, *pp[1] = {&pg};
    Gamefn__V1__CreateTicketRequest r = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    snprintf(keys[k], sizeof keys[k], "k-%s", who);
    snprintf(players[k], sizeof players[k], "%s", who);
    mem.player_id = players[k];
    mem.rating = 1500;
    pg.datacenter = "eu-west";
    pg.ping_ms = 20;
    r.idempotency_key = keys[k];
    r.queue = "duel";
    r.n_members = 1;
    r.members = mp;
    r.n_pings = 1;
    r.pings = pp;
    k = (k + 1) % 16; /* the record copies them: a slot is reusable */
    char id[GF_TICKETS_ID_LEN + 1];
    gf_ticket_next next, claimed;
    uint8_t *buf = NULL;
    size_t len = 0;
    int64_t t0 = gf_clock_unix_ms() - age_ms;
    assert_int_equal(gf_tickets_id(r.idempotency_key, id), GF_OK);
    assert_int_equal(gf_ticket_new(&m->tables.cfg, &r, id, t0, &next, NULL), GF_OK);
    const Gamefn__V1__TicketRecord *rec = &next.rec;
    if (match_id) {
        const gf_ticket_claim_args a = {"matcher-old", match_id, lease_end, NULL};
        assert_int_equal(gf_ticket_claim(rec, &a, lease_end - 1, &claimed, NULL), GF_OK);
        rec = &claimed.rec;
    }
    assert_int_equal(gf_ticket_pack(rec, &buf, &len), GF_OK);
    mm_ref *ref = calloc(1, sizeof *ref + sizeof(gf_match_player) + sizeof(gf_match_ping) * 2);
    assert_int_equal(gf_ticket_decode(buf, len, id, &ref->rec, NULL), GF_OK);
    free(buf);
    ref->refs = 1;
    ref->rev = ++fx.next_rev;
    gf_match_player *pl = (gf_match_player *)(ref + 1);
    gf_match_ping *pi = (gf_match_ping *)(pl + 1);
    ref->engine = gf_ticket_engine(&m->tables.cfg, ref->rec, pl, pi, NULL, &ref->et);
    return ref;
}

static void reset(void)
{
    for (size_t i = 0; i < fx.nrefs; i++) {
        gf_ticket_free(fx.refs[i]->rec);
        free(fx.refs[i]);
    }
    memset(&fx, 0, sizeof fx);
    fx.next_rev = 100;
}

/* The op written for ticket `id` of kind `kind`, the n-th such (0-based), or NULL. */
static const written *op_for(const char *id, gf_mm_op_kind kind, int nth)
{
    for (size_t i = 0; i < fx.nops; i++) {
        if (fx.ops[i].op.kind == kind && strcmp(fx.ops[i].key, id) == 0 && nth-- == 0)
            return &fx.ops[i];
    }
    return NULL;
}

static size_t count_kind(gf_mm_op_kind kind)
{
    size_t n = 0;
    for (size_t i = 0; i < fx.nops; i++)
        n += fx.ops[i].op.kind == kind;
    return n;
}

static Gamefn__V1__TicketRecord *decoded(const written *w)
{
    Gamefn__V1__TicketRecord *r = NULL;
    assert_int_equal(gf_ticket_decode(w->data, w->op.len, w->key, &r, NULL), GF_OK);
    return r;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_claim_publish_and_rollback(void **state)
{
    reset();
    /* Oldest first: a+b form the first match, c+d the second. */
    fx.refs[0] = ticket("a", 4000, NULL, 0);
    fx.refs[1] = ticket("b", 3000, NULL, 0);
    fx.refs[2] = ticket("c", 2000, NULL, 0);
    fx.refs[3] = ticket("d", 1000, NULL, 0);
    fx.nrefs = 4;
    const char *c_id = fx.refs[2]->rec->ticket_id, *d_id = fx.refs[3]->rec->ticket_id;
    fx.conflict_key = d_id; /* d's claim loses: c's must be released */
    matcher_tick(m, &m->groups[0], 7);

    /* Four claims in one batch, each on the revision the mirror held. */
    assert_int_equal(count_kind(GF_MM_UPDATE), 5); /* 4 claims + c's release */
    for (size_t i = 0; i < 4; i++) {
        const written *w = op_for(fx.refs[i]->rec->ticket_id, GF_MM_UPDATE, 0);
        assert_non_null(w);
        assert_int_equal(w->op.last, fx.refs[i]->rev);
        Gamefn__V1__TicketRecord *r = decoded(w);
        assert_int_equal(r->state, ST(CLAIMED));
        assert_string_equal(r->claim->matcher_id, "matcher-t");
        gf_ticket_free(r);
    }
    /* c: released on its claim's revision, MATCH_DROPPED, queue time kept. */
    const written *claim_c = op_for(c_id, GF_MM_UPDATE, 0), *rel = op_for(c_id, GF_MM_UPDATE, 1);
    assert_non_null(rel);
    assert_int_equal(rel->op.last, claim_c->op.rev);
    Gamefn__V1__TicketRecord *r = decoded(rel);
    assert_int_equal(r->state, ST(QUEUED));
    assert_int_equal(r->reason, RS(MATCH_DROPPED));
    assert_int_equal(r->returns, 1);
    assert_int_equal(r->queued_unix_ms, fx.refs[2]->rec->queued_unix_ms);
    gf_ticket_free(r);

    /* Exactly one Match published: a+b, Nats-Msg-Id = match_id, claim revisions. */
    assert_int_equal(count_kind(GF_MM_PUBLISH), 1);
    const written *pub = NULL;
    for (size_t i = 0; i < fx.nops && !pub; i++)
        pub = fx.ops[i].op.kind == GF_MM_PUBLISH ? &fx.ops[i] : NULL;
    assert_string_equal(pub->key, "gamefn.v1.match.found.duel");
    Gamefn__V1__Match *mt = gamefn__v1__match__unpack(NULL, pub->op.len, pub->data);
    assert_non_null(mt);
    assert_string_equal(mt->match_id, pub->msg_id);
    assert_int_equal(mt->n_teams, 2);
    assert_int_equal(mt->tick_seq, 7);
    assert_string_equal(mt->tick_group, "duel");
    for (size_t t = 0; t < 2; t++) {
        const Gamefn__V1__MatchTicket *x = mt->teams[t]->tickets[0];
        const written *w = op_for(x->ticket_id, GF_MM_UPDATE, 0);
        assert_int_equal(x->claim_revision, w->op.rev);
        assert_true(strcmp(x->ticket_id, fx.refs[0]->rec->ticket_id) == 0 ||
                    strcmp(x->ticket_id, fx.refs[1]->rec->ticket_id) == 0);
        /* Its own limit at the match: a waited 4 s (50 ms), b 3 s (35 ms). */
        bool is_a = strcmp(x->ticket_id, fx.refs[0]->rec->ticket_id) == 0;
        assert_int_equal(x->allowed_ping_ms, is_a ? 50 : 35);
        assert_int_equal(x->ping_ms, 20);
    }
    assert_string_equal(mt->datacenters[0]->datacenter, "eu-west");
    gamefn__v1__match__free_unpacked(mt, NULL);
    assert_int_equal(fx.aborts, 0); /* an unpublished match needs no commit record */
    assert_int_equal(atomic_load(&m->n.rollbacks), 1);
}

static void test_publish_unknown(void **state)
{
    for (int committed = 0; committed < 2; committed++) {
        reset();
        fx.refs[0] = ticket("e", 2000, NULL, 0);
        fx.refs[1] = ticket("f", 1000, NULL, 0);
        fx.nrefs = 2;
        fx.publish_err = GF_ERR_TIMEOUT;
        Gamefn__V1__Assignment asg = GAMEFN__V1__ASSIGNMENT__INIT;
        asg.ticket_id = fx.refs[0]->rec->ticket_id;
        fx.asg = &asg;
        fx.outcome_state =
            committed ? GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED : 0;
        matcher_tick(m, &m->groups[0], 1);
        assert_int_equal(fx.aborts, 1);
        assert_int_equal(fx.abort_reason,
                         GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_PUBLISH_UNKNOWN);
        /* Aborted: both claims released. Committed: the allocator has it, nothing undone. */
        assert_int_equal(count_kind(GF_MM_UPDATE), committed ? 2 : 4);
        if (!committed) {
            Gamefn__V1__TicketRecord *r =
                decoded(op_for(fx.refs[1]->rec->ticket_id, GF_MM_UPDATE, 1));
            assert_int_equal(r->reason, RS(MATCH_DROPPED));
            gf_ticket_free(r);
        }
    }
}

static void test_expired_claim_and_ttl(void **state)
{
    for (int committed = 0; committed < 2; committed++) {
        reset();
        int64_t now = gf_clock_unix_ms();
        fx.refs[0] = ticket("g", 3000, "m-dead", now - 10); /* lease passed */
        fx.refs[1] = ticket("h", 3000, "m-live", now + 60000);
        fx.refs[2] = ticket("i", 6 * 60 * 1000, NULL, 0);   /* past the 5 min TTL */
        fx.refs[3] = ticket("j", 3000, "m-gone", now - 10); /* another expired match... */
        fx.refs[4] = ticket("k", 3000, "m-dead", now - 10); /* ...and g's partner */
        fx.nrefs = 5;
        Gamefn__V1__Assignment asg = GAMEFN__V1__ASSIGNMENT__INIT;
        asg.ticket_id = fx.refs[0]->rec->ticket_id;
        asg.server_id = "gs-1";
        fx.asg = &asg;
        fx.outcome_state =
            committed ? GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED : 0;
        matcher_tick(m, &m->groups[0], 1);
        assert_int_equal(fx.aborts, 2);        /* one per expired match, not per ticket */
        assert_int_equal(fx.abort_batches, 1); /* all in one batch */
        assert_int_equal(fx.abort_reason,
                         GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_CLAIM_EXPIRED);
        const written *g = op_for(fx.refs[0]->rec->ticket_id, GF_MM_UPDATE, 0);
        assert_non_null(g);
        assert_int_equal(g->op.last, fx.refs[0]->rev);
        Gamefn__V1__TicketRecord *r = decoded(g);
        assert_int_equal(r->state, committed ? ST(ASSIGNED) : ST(QUEUED));
        if (!committed)
            assert_int_equal(r->reason, RS(CLAIM_EXPIRED));
        gf_ticket_free(r);
        /* The other expired claims too (the double's COMMITTED record names g only). */
        for (size_t k = 3; k < 5 && !committed; k++) {
            r = decoded(op_for(fx.refs[k]->rec->ticket_id, GF_MM_UPDATE, 0));
            assert_int_equal(r->state, ST(QUEUED));
            assert_int_equal(r->reason, RS(CLAIM_EXPIRED));
            gf_ticket_free(r);
        }
        assert_null(op_for(fx.refs[1]->rec->ticket_id, GF_MM_UPDATE, 0)); /* lease running */
        r = decoded(op_for(fx.refs[2]->rec->ticket_id, GF_MM_UPDATE, 0));
        assert_int_equal(r->state, ST(TIMED_OUT));
        assert_int_equal(r->reason, RS(TTL_EXPIRED));
        gf_ticket_free(r);
        assert_int_equal(fx.cleared, 1);
        assert_int_equal(count_kind(GF_MM_PUBLISH), 0);
    }
    reset();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_publish_and_rollback),
        cmocka_unit_test(test_publish_unknown),
        cmocka_unit_test(test_expired_claim_and_ttl),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
