/*
 * test_tickets_record.c — ticket transitions from every state (allowed, unchanged,
 * refused), what each keeps and changes, stored-record checks, statuses, and the
 * engine's view of a record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/tickets/record.h"
#include "gamefn/tickets/request.h"
#include "gamefn/tickets/status.h"
#include "gamefn/v1/error.pb-c.h"
#include "tickets_fixture.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x

static tk_req req;
static gf_ticket_next fresh;
static Gamefn__V1__Assignment asg = GAMEFN__V1__ASSIGNMENT__INIT;

/* A stored record in `state`, decoded from bytes as a reader would see it. */
static Gamefn__V1__TicketRecord *in_state(int state)
{
    gf_tickets_problem p;
    gf_ticket_next n;
    const Gamefn__V1__TicketRecord *r = &fresh.rec;
    uint8_t *buf = NULL;
    size_t len = 0;
    const gf_ticket_claim_args claim = {"matcher-1", "m-1", TK_NOW + 10000, NULL};
    switch (state) {
    case ST(QUEUED):
        break;
    case ST(CLAIMED):
        assert_int_equal(gf_ticket_claim(r, &claim, TK_NOW + 1, &n, &p), GF_OK);
        r = &n.rec;
        break;
    case ST(ASSIGNED):
        assert_int_equal(gf_ticket_claim(r, &claim, TK_NOW + 1, &n, &p), GF_OK);
        assert_int_equal(gf_ticket_pack(&n.rec, &buf, &len), GF_OK);
        {
            Gamefn__V1__TicketRecord *c = NULL;
            assert_int_equal(gf_ticket_decode(buf, len, NULL, &c, &p), GF_OK);
            free(buf);
            assert_int_equal(gf_ticket_assign(c, &asg, TK_NOW + 2, &n, &p), GF_OK);
            assert_int_equal(gf_ticket_pack(&n.rec, &buf, &len), GF_OK);
            gf_ticket_free(c);
        }
        r = NULL;
        break;
    case ST(CANCELLED):
        assert_int_equal(gf_ticket_cancel(r, TK_NOW + 1, &n, &p), GF_OK);
        r = &n.rec;
        break;
    case ST(TIMED_OUT):
        assert_int_equal(gf_ticket_time_out(r, RS(TTL_EXPIRED), r->expires_unix_ms, &n, &p), GF_OK);
        r = &n.rec;
        break;
    }
    if (r)
        assert_int_equal(gf_ticket_pack(r, &buf, &len), GF_OK);
    Gamefn__V1__TicketRecord *out = NULL;
    assert_int_equal(gf_ticket_decode(buf, len, "t-1", &out, &p), GF_OK);
    free(buf);
    assert_int_equal(out->state, state);
    return out;
}

static int setup(void **state)
{
    (void)state;
    gf_tickets_problem p;
    tk_req_init(&req);
    assert_int_equal(gf_ticket_new(&tk_tables()->cfg, &req.r, "t-1", TK_NOW, &fresh, &p), GF_OK);
    asg.match_id = "m-1";
    asg.ticket_id = "t-1";
    asg.server_id = "gs-1";
    asg.assigned_unix_ms = TK_NOW + 2;
    return 0;
}

static void test_new_record(void **state)
{
    (void)state;
    const Gamefn__V1__TicketRecord *r = &fresh.rec;
    assert_int_equal(r->state, ST(QUEUED));
    assert_int_equal(r->reason, RS(SEARCHING));
    assert_int_equal(r->created_unix_ms, TK_NOW);
    assert_int_equal(r->queued_unix_ms, TK_NOW);
    assert_int_equal(r->expires_unix_ms, TK_NOW + 5 * 60 * 1000); /* the default TTL */
    assert_string_equal(r->region, "na");                         /* lowest ping: us-east */
    assert_string_equal(r->requested_region, "");
    assert_non_null(r->limits);
    assert_true(r->limits->skill_gap == 50);
    assert_int_equal(r->limits->ping_ms, 35);
    assert_int_equal(r->n_attributes, 1);
    assert_string_equal(r->attributes[0]->key, "platform");

    /* A ping_first queue reports skill as ignored. */
    gf_ticket_next n;
    gf_tickets_problem p;
    static tk_req q;
    tk_req_init(&q);
    strcpy(q.queue, "ffa");
    strcpy(q.region, "eu");
    assert_int_equal(gf_ticket_new(&tk_tables()->cfg, &q.r, "t-2", TK_NOW, &n, &p), GF_OK);
    assert_true(n.rec.limits->skill_ignored);
    assert_true(n.rec.limits->skill_gap == 0);
    assert_string_equal(n.rec.region, "eu");
    assert_int_equal(n.rec.expires_unix_ms, TK_NOW + 2000);

    assert_int_equal(gf_ticket_new(&tk_tables()->cfg, &q.r, "bad id", TK_NOW, &n, &p),
                     GF_ERR_INVALID);
}

enum { OK, SAME, REFUSED, BAD };

typedef struct tcase {
    int from;
    const char *transition;
    int want;
} tcase;

static int apply(const char *transition, const Gamefn__V1__TicketRecord *cur, gf_ticket_next *out,
                 int64_t now)
{
    gf_tickets_problem p;
    const gf_ticket_claim_args claim = {"matcher-2", "m-2", now + 5000, NULL};
    gf_err err;
    if (strcmp(transition, "claim") == 0)
        err = gf_ticket_claim(cur, &claim, now, out, &p);
    else if (strcmp(transition, "release") == 0)
        err = gf_ticket_release(cur, NULL, RS(NO_SERVER), now, out, &p);
    else if (strcmp(transition, "release m-1") == 0)
        err = gf_ticket_release(cur, "m-1", RS(CLAIM_EXPIRED), now, out, &p);
    else if (strcmp(transition, "release m-9") == 0)
        err = gf_ticket_release(cur, "m-9", RS(MATCH_DROPPED), now, out, &p);
    else if (strcmp(transition, "assign m-1") == 0)
        err = gf_ticket_assign(cur, &asg, now, out, &p);
    else if (strcmp(transition, "cancel") == 0)
        err = gf_ticket_cancel(cur, now, out, &p);
    else if (strcmp(transition, "time out") == 0)
        err = gf_ticket_time_out(cur, RS(TTL_EXPIRED), cur->expires_unix_ms, out, &p);
    else
        err = gf_ticket_time_out(cur, RS(QUEUE_CLOSED), now, out, &p);
    if (err == GF_OK)
        return out->unchanged ? SAME : OK;
    if (err == GF_ERR_CONFLICT) {
        assert_int_equal(p.code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION);
        return REFUSED;
    }
    return BAD;
}

static const tcase table[] = {
    {ST(QUEUED), "claim", OK},
    {ST(QUEUED), "release", SAME},
    {ST(QUEUED), "release m-1", REFUSED},
    {ST(QUEUED), "assign m-1", REFUSED},
    {ST(QUEUED), "cancel", OK},
    {ST(QUEUED), "time out", OK},
    {ST(QUEUED), "queue closed", OK},
    {ST(CLAIMED), "claim", REFUSED},
    {ST(CLAIMED), "release", OK},
    {ST(CLAIMED), "release m-1", OK},
    {ST(CLAIMED), "release m-9", REFUSED},
    {ST(CLAIMED), "assign m-1", OK},
    {ST(CLAIMED), "cancel", OK},
    {ST(CLAIMED), "time out", REFUSED},
    {ST(CLAIMED), "queue closed", REFUSED},
    {ST(ASSIGNED), "claim", REFUSED},
    {ST(ASSIGNED), "release", REFUSED},
    {ST(ASSIGNED), "assign m-1", SAME},
    {ST(ASSIGNED), "cancel", REFUSED},
    {ST(ASSIGNED), "time out", REFUSED},
    {ST(CANCELLED), "claim", REFUSED},
    {ST(CANCELLED), "release", REFUSED},
    {ST(CANCELLED), "assign m-1", REFUSED},
    {ST(CANCELLED), "cancel", SAME},
    {ST(CANCELLED), "time out", REFUSED},
    {ST(TIMED_OUT), "claim", REFUSED},
    {ST(TIMED_OUT), "cancel", REFUSED},
    {ST(TIMED_OUT), "time out", SAME},
    {ST(TIMED_OUT), "assign m-1", REFUSED},
};

static void test_transition_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        Gamefn__V1__TicketRecord *cur = in_state(table[i].from);
        gf_ticket_next out;
        int got = apply(table[i].transition, cur, &out, TK_NOW + 100);
        if (got != table[i].want)
            fail_msg("%s from %s: got %d, want %d", table[i].transition,
                     gf_ticket_state_name(table[i].from), got, table[i].want);
        if (got == OK) {
            /* What every transition keeps. */
            assert_string_equal(out.rec.ticket_id, "t-1");
            assert_int_equal(out.rec.queued_unix_ms, TK_NOW);
            assert_int_equal(out.rec.created_unix_ms, TK_NOW);
            assert_int_equal(out.rec.updated_unix_ms, strcmp(table[i].transition, "time out") == 0
                                                          ? cur->expires_unix_ms
                                                          : TK_NOW + 100);
            assert_true((out.rec.state == ST(CLAIMED)) == (out.rec.claim != NULL));
            assert_true((out.rec.state == ST(ASSIGNED)) == (out.rec.assignment != NULL));
            /* The result is a storable record. */
            uint8_t *buf = NULL;
            size_t len = 0;
            Gamefn__V1__TicketRecord *back = NULL;
            gf_tickets_problem p;
            assert_int_equal(gf_ticket_pack(&out.rec, &buf, &len), GF_OK);
            assert_int_equal(gf_ticket_decode(buf, len, "t-1", &back, &p), GF_OK);
            free(buf);
            gf_ticket_free(back);
        }
        gf_ticket_free(cur);
    }
}

static void test_release_keeps_priority(void **state)
{
    (void)state;
    gf_tickets_problem p;
    gf_ticket_next a, b;
    const gf_ticket_claim_args claim = {"matcher-1", "m-7", TK_NOW + 60000, NULL};
    Gamefn__V1__TicketRecord *r = in_state(ST(QUEUED));
    assert_int_equal(gf_ticket_claim(r, &claim, TK_NOW + 30000, &a, &p), GF_OK);
    assert_int_equal(a.rec.reason, RS(MATCHED));
    assert_string_equal(a.rec.claim->match_id, "m-7");
    assert_int_equal(a.rec.claim->claimed_unix_ms, TK_NOW + 30000);
    assert_int_equal(gf_ticket_release(&a.rec, "m-7", RS(NO_SERVER), TK_NOW + 31000, &b, &p),
                     GF_OK);
    assert_int_equal(b.rec.state, ST(QUEUED));
    assert_int_equal(b.rec.reason, RS(NO_SERVER));
    assert_int_equal(b.rec.queued_unix_ms, TK_NOW);
    assert_int_equal(b.rec.returns, 1);
    assert_null(b.rec.claim);
    /* A second round counts again. */
    assert_int_equal(gf_ticket_claim(&b.rec, &claim, TK_NOW + 32000, &a, &p), GF_OK);
    assert_int_equal(gf_ticket_release(&a.rec, NULL, RS(CLAIM_EXPIRED), TK_NOW + 33000, &b, &p),
                     GF_OK);
    assert_int_equal(b.rec.returns, 2);
    /* Only pool reasons. */
    assert_int_equal(gf_ticket_release(&a.rec, NULL, RS(SKILL), TK_NOW, &b, &p), GF_ERR_INVALID);
    gf_ticket_free(r);
}

static void test_ttl_rules(void **state)
{
    (void)state;
    gf_tickets_problem p;
    gf_ticket_next n;
    Gamefn__V1__TicketRecord *r = in_state(ST(QUEUED));
    const int64_t exp = r->expires_unix_ms;
    const gf_ticket_claim_args claim = {"matcher-1", "m-1", exp + 10000, NULL};
    assert_int_equal(gf_ticket_claim(r, &claim, exp - 1, &n, &p), GF_OK);
    assert_int_equal(gf_ticket_claim(r, &claim, exp, &n, &p), GF_ERR_CONFLICT); /* past TTL */
    assert_int_equal(gf_ticket_time_out(r, RS(TTL_EXPIRED), exp - 1, &n, &p), GF_ERR_CONFLICT);
    assert_int_equal(gf_ticket_time_out(r, RS(TTL_EXPIRED), exp, &n, &p), GF_OK);
    assert_int_equal(n.rec.reason, RS(TTL_EXPIRED));
    assert_int_equal(gf_ticket_time_out(r, RS(CANCELLED_BY_CLIENT), exp, &n, &p), GF_ERR_INVALID);
    /* Bad claim arguments. */
    const gf_ticket_claim_args stale = {"matcher-1", "m-1", TK_NOW, NULL};
    assert_int_equal(gf_ticket_claim(r, &stale, TK_NOW, &n, &p), GF_ERR_INVALID);
    const gf_ticket_claim_args no_id = {"matcher-1", "", TK_NOW + 10, NULL};
    assert_int_equal(gf_ticket_claim(r, &no_id, TK_NOW, &n, &p), GF_ERR_INVALID);
    gf_ticket_free(r);
}

static void test_assign_fencing(void **state)
{
    (void)state;
    gf_tickets_problem p;
    gf_ticket_next n;
    Gamefn__V1__TicketRecord *r = in_state(ST(CLAIMED));
    Gamefn__V1__Assignment other = asg;
    other.match_id = "m-2";
    assert_int_equal(gf_ticket_assign(r, &other, TK_NOW, &n, &p), GF_ERR_CONFLICT);
    assert_non_null(strstr(p.message, "m-1"));
    other = asg;
    other.ticket_id = "t-9";
    assert_int_equal(gf_ticket_assign(r, &other, TK_NOW, &n, &p), GF_ERR_INVALID);
    gf_ticket_free(r);
}

static void test_decode_refuses(void **state)
{
    (void)state;
    gf_tickets_problem p;
    Gamefn__V1__TicketRecord *out = NULL;
    const uint8_t junk[] = {0x0a, 0x50, 0x01};
    assert_int_equal(gf_ticket_decode(junk, sizeof junk, NULL, &out, &p), GF_ERR_INVALID);
    assert_null(out);

    /* Consistent fields only. */
    Gamefn__V1__TicketRecord r = fresh.rec;
    Gamefn__V1__Claim c = GAMEFN__V1__CLAIM__INIT;
    c.match_id = "m-1";
    const char *const bad[] = {"state 0", "claimed without claim", "queued with a claim",
                               "no members"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = fresh.rec;
        if (i == 0)
            r.state = 0;
        if (i == 1)
            r.state = ST(CLAIMED);
        if (i == 2)
            r.claim = &c;
        if (i == 3)
            r.n_members = 0;
        uint8_t *buf = NULL;
        size_t len = 0;
        assert_int_equal(gf_ticket_pack(&r, &buf, &len), GF_OK);
        if (gf_ticket_decode(buf, len, NULL, &out, &p) != GF_ERR_INVALID)
            fail_msg("%s: accepted", bad[i]);
        free(buf);
    }
    /* The key must match. */
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_ticket_pack(&fresh.rec, &buf, &len), GF_OK);
    assert_int_equal(gf_ticket_decode(buf, len, "t-2", &out, &p), GF_ERR_INVALID);
    free(buf);
}

static void test_status(void **state)
{
    (void)state;
    gf_ticket_status s;
    gf_ticket_status_of(&fresh.rec, 42, NULL, &s);
    assert_string_equal(s.st.ticket_id, "t-1");
    assert_int_equal(s.st.state, ST(QUEUED));
    assert_int_equal(s.st.reason, RS(SEARCHING));
    assert_int_equal(s.st.revision, 42);
    assert_string_equal(s.st.queue, "duel");
    assert_non_null(s.st.limits);
    assert_int_equal(s.st.limits->ping_ms, 35);
    assert_true(strlen(s.st.detail) > 0);

    Gamefn__V1__TicketLimits l = GAMEFN__V1__TICKET_LIMITS__INIT;
    l.skill_gap = 79.24;
    l.ping_ms = 50;
    gf_ticket_status_queued(&fresh.rec, 42, RS(PING), &l, 12000, TK_NOW + 4000, &s);
    assert_int_equal(s.st.reason, RS(PING));
    assert_int_equal(s.st.estimated_wait_ms, 12000);
    assert_int_equal(s.st.updated_unix_ms, TK_NOW + 4000);
    assert_int_equal(s.st.limits->ping_ms, 50);
    assert_int_equal(s.st.revision, 42);

    Gamefn__V1__TicketRecord *r = in_state(ST(ASSIGNED));
    gf_ticket_status_of(r, 43, "custom", &s);
    assert_string_equal(s.st.match_id, "m-1");
    assert_non_null(s.st.assignment);
    assert_null(s.st.limits);
    assert_string_equal(s.st.detail, "custom");
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_ticket_status_pack(&s, &buf, &len), GF_OK);
    Gamefn__V1__TicketStatus *back = gamefn__v1__ticket_status__unpack(NULL, len, buf);
    assert_non_null(back);
    assert_string_equal(back->assignment->server_id, "gs-1");
    gamefn__v1__ticket_status__free_unpacked(back, NULL);
    free(buf);
    gf_ticket_free(r);
}

static void test_engine_view(void **state)
{
    (void)state;
    const gf_mm_tables *t = tk_tables();
    gf_match_player players[4];
    gf_match_ping pings[4];
    gf_match_attr attrs[4];
    gf_match_ticket mt;
    Gamefn__V1__TicketRecord r = fresh.rec;
    assert_int_equal(gf_ticket_engine(&t->cfg, &r, players, pings, attrs, &mt), GF_OK);
    assert_string_equal(mt.id, "t-1");
    assert_int_equal(mt.queue, (uint32_t)gf_match_config_queue_index(&t->cfg, "duel"));
    assert_int_equal(mt.region, (uint32_t)gf_match_config_region_index(&t->cfg, "na"));
    assert_int_equal(mt.queued_ms, TK_NOW);
    assert_int_equal(mt.pings_len, 2);
    assert_int_equal(mt.attrs_len, 1);
    assert_int_equal(gf_match_ticket_check(&t->cfg, &mt, TK_NOW), GF_MATCH_BAD_NONE);

    /* A datacenter that left the config is dropped; a queue that left it is NOT_FOUND. */
    Gamefn__V1__DatacenterPing gone = GAMEFN__V1__DATACENTER_PING__INIT;
    gone.datacenter = "gone-1";
    Gamefn__V1__DatacenterPing *pp[3] = {r.pings[0], &gone, r.pings[1]};
    r.pings = pp;
    r.n_pings = 3;
    assert_int_equal(gf_ticket_engine(&t->cfg, &r, players, pings, attrs, &mt), GF_OK);
    assert_int_equal(mt.pings_len, 2);
    r.queue = "closed";
    assert_int_equal(gf_ticket_engine(&t->cfg, &r, players, pings, attrs, &mt), GF_ERR_NOT_FOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_record),
        cmocka_unit_test(test_transition_table),
        cmocka_unit_test(test_release_keeps_priority),
        cmocka_unit_test(test_ttl_rules),
        cmocka_unit_test(test_assign_fencing),
        cmocka_unit_test(test_decode_refuses),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_engine_view),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
