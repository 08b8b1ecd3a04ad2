/*
 * test_intake.c — the intake function against a real nats-server: create, get, cancel,
 * idempotency (same key, same player under another key), players records (live, stale,
 * a create in progress), a cancel meeting a claimed ticket whose match is aborted or
 * already committed, queue discovery, and bad requests that get a typed error and
 * change nothing (the buckets' sequences are unchanged afterwards).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/subjects.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/players.h"
#include "gamefn/tickets/record.h"
#include "gamefn/tickets/request.h"
#include "gamefn/v1/error.pb-c.h"
#include "mm_support.h"
#include "mmcheck.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x
#define E(x)  GAMEFN__V1__ERROR_CODE__ERROR_CODE_##x

typedef struct fixture {
    gf_fnenv env;
    gf_proc intake;
    mm_pushes *pushes;
    kvStore *tickets, *players, *matches;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(mm_env_start(&f->env, NULL), 0);
    assert_true(mm_spawn(&f->env, &f->intake, "intake", "in-1"));
    f->pushes = mm_pushes_start(&f->env);
    assert_int_equal(js_KeyValue(&f->tickets, f->env.js, "tickets"), NATS_OK);
    assert_int_equal(js_KeyValue(&f->players, f->env.js, "players"), NATS_OK);
    assert_int_equal(js_KeyValue(&f->matches, f->env.js, "matches"), NATS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kvStore_Destroy(f->tickets);
    kvStore_Destroy(f->players);
    kvStore_Destroy(f->matches);
    mm_pushes_free(f->pushes);
    assert_true(gf_fnenv_stop(&f->intake, 15000));
    gf_fnenv_free(&f->env);
    free(f);
    return 0;
}

static void expect_id(const char *key, const char *id)
{
    char want[GF_TICKETS_ID_LEN + 1];
    assert_int_equal(gf_tickets_id(key, want), GF_OK);
    assert_string_equal(id, want);
}

static void test_create_get_cancel(void **state)
{
    fixture *f = *state;
    Gamefn__V1__CreateTicketReply *r = NULL;
    Gamefn__V1__TicketStatus *st = NULL;
    mm_ticket t = {.key = "k-basic",
                   .queue = "duel",
                   .players = {"alice"},
                   .nplayers = 1,
                   .rating = 1500,
                   .pings = "eu-west:20,us-east:95"};
    assert_int_equal(mm_create(&f->env, &t, &r, NULL, 0), 0);
    expect_id("k-basic", r->ticket_id);
    assert_false(r->replayed);
    assert_int_equal(r->status->state, ST(QUEUED));
    assert_int_equal(r->status->reason, RS(SEARCHING));
    assert_string_equal(r->status->queue, "duel");
    assert_true(r->status->revision > 0);
    assert_true(r->status->expires_unix_ms > r->status->queued_unix_ms);
    char id[80];
    snprintf(id, sizeof id, "%s", r->ticket_id);
    uint64_t rev = r->status->revision;
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
    assert_true(mm_pushes_wait(f->pushes, id, ST(QUEUED), RS(SEARCHING), 2000));

    assert_int_equal(mm_get(&f->env, id, &st), 0);
    assert_int_equal(st->state, ST(QUEUED));
    assert_int_equal(st->revision, rev); /* the KV revision */
    gamefn__v1__ticket_status__free_unpacked(st, NULL);

    /* players/alice names the ticket */
    kvEntry *e = NULL;
    assert_int_equal(kvStore_Get(&e, f->players, "alice"), NATS_OK);
    Gamefn__V1__PlayerMatchRecord *pr = NULL;
    assert_int_equal(gf_players_decode((const uint8_t *)kvEntry_Value(e),
                                       (size_t)kvEntry_ValueLen(e), "alice", &pr, NULL),
                     GF_OK);
    assert_string_equal(pr->ticket_id, id);
    gf_players_free(pr);
    kvEntry_Destroy(e);

    assert_int_equal(mm_cancel(&f->env, id, &st), 0);
    assert_int_equal(st->state, ST(CANCELLED));
    assert_int_equal(st->reason, RS(CANCELLED_BY_CLIENT));
    assert_true(st->revision > rev);
    gamefn__v1__ticket_status__free_unpacked(st, NULL);
    assert_true(mm_pushes_wait(f->pushes, id, ST(CANCELLED), 0, 2000));
    /* Cancelling again succeeds with the same status; the players record is gone. */
    assert_int_equal(mm_cancel(&f->env, id, &st), 0);
    assert_int_equal(st->state, ST(CANCELLED));
    gamefn__v1__ticket_status__free_unpacked(st, NULL);
    assert_int_equal(kvStore_Get(&e, f->players, "alice"), NATS_NOT_FOUND);
    assert_int_equal(mm_state(&f->env, id), ST(CANCELLED));

    /* Unknown and malformed ids. */
    assert_int_equal(mm_get(&f->env, "0123456789abcdef", &st), E(NOT_FOUND));
    assert_int_equal(mm_cancel(&f->env, "0123456789abcdef", &st), E(NOT_FOUND));
    assert_int_equal(mm_get(&f->env, "not an id", &st), E(INVALID_ARGUMENT));
}

static void test_idempotency(void **state)
{
    fixture *f = *state;
    Gamefn__V1__CreateTicketReply *a = NULL, *b = NULL;
    char field[128];
    mm_ticket t = {.key = "k-idem",
                   .queue = "duel",
                   .players = {"bob"},
                   .nplayers = 1,
                   .rating = 1400,
                   .pings = "eu-west:30"};
    assert_int_equal(mm_create(&f->env, &t, &a, NULL, 0), 0);
    uint64_t tickets_seq = mm_bucket_seq(&f->env, "tickets");

    /* The same request again: the same ticket, replayed, nothing written. */
    assert_int_equal(mm_create(&f->env, &t, &b, NULL, 0), 0);
    assert_string_equal(a->ticket_id, b->ticket_id);
    assert_true(b->replayed);
    assert_int_equal(b->status->revision, a->status->revision);
    gamefn__v1__create_ticket_reply__free_unpacked(b, NULL);

    /* The same key with another request: FAILED_PRECONDITION naming the field. */
    mm_ticket other = t;
    other.queue = "pair";
    assert_int_equal(mm_create(&f->env, &other, &b, field, sizeof field), E(FAILED_PRECONDITION));
    assert_string_equal(field, "queue");
    other = t;
    other.rating = 1401;
    assert_int_equal(mm_create(&f->env, &other, &b, field, sizeof field), E(FAILED_PRECONDITION));
    assert_string_equal(field, "members[0].rating");

    /* The same player under another key (a double tap): the live ticket comes back. */
    other = t;
    other.key = "k-idem-2";
    assert_int_equal(mm_create(&f->env, &other, &b, NULL, 0), 0);
    assert_string_equal(b->ticket_id, a->ticket_id);
    assert_true(b->replayed);
    assert_non_null(strstr(b->status->detail, "bob"));
    gamefn__v1__create_ticket_reply__free_unpacked(b, NULL);
    /* ...and a party holding bob: the same; the other member's record is rolled back. */
    mm_ticket party = {.key = "k-idem-3",
                       .queue = "pair",
                       .players = {"carol", "bob"},
                       .nplayers = 2,
                       .rating = 1400,
                       .pings = "eu-west:30"};
    assert_int_equal(mm_create(&f->env, &party, &b, NULL, 0), 0);
    assert_string_equal(b->ticket_id, a->ticket_id);
    gamefn__v1__create_ticket_reply__free_unpacked(b, NULL);
    kvEntry *e = NULL;
    assert_int_equal(kvStore_Get(&e, f->players, "carol"), NATS_NOT_FOUND);
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), tickets_seq); /* no second ticket */

    /* Once the ticket is cancelled, the player may queue again. */
    Gamefn__V1__TicketStatus *st = NULL;
    assert_int_equal(mm_cancel(&f->env, a->ticket_id, &st), 0);
    gamefn__v1__ticket_status__free_unpacked(st, NULL);
    other.key = "k-idem-4";
    assert_int_equal(mm_create(&f->env, &other, &b, NULL, 0), 0);
    assert_false(b->replayed);
    assert_string_not_equal(b->ticket_id, a->ticket_id);
    gamefn__v1__create_ticket_reply__free_unpacked(b, NULL);
    gamefn__v1__create_ticket_reply__free_unpacked(a, NULL);
}

/* players/<p> records: a stale one (its ticket was never written, hours ago) is replaced
 * at once; a young one is a create in progress: CONFLICT with retry_after_ms, until
 * pending_grace has passed by the record's time and by intake's own count since it first
 * saw the record (functions/intake/pending.h). */
static void test_players_records(void **state)
{
    fixture *f = *state;
    uint8_t *buf = NULL;
    size_t len = 0;
    Gamefn__V1__CreateTicketReply *r = NULL;
    char field[128];
    assert_int_equal(gf_players_pack("dave", "feedfacefeedfacefeedfacefeedface",
                                     gf_clock_unix_ms() - 2 * 3600 * 1000, &buf, &len),
                     GF_OK);
    assert_int_equal(kvStore_Put(NULL, f->players, "dave", buf, (int)len), NATS_OK);
    free(buf);
    mm_ticket t = {.key = "k-dave",
                   .queue = "duel",
                   .players = {"dave"},
                   .nplayers = 1,
                   .rating = 1500,
                   .pings = "eu-west:20"};
    assert_int_equal(mm_create(&f->env, &t, &r, NULL, 0), 0);
    assert_false(r->replayed);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);

    assert_int_equal(
        gf_players_pack("erin", "feedfacefeedfacefeedfacefeedface", gf_clock_unix_ms(), &buf, &len),
        GF_OK);
    assert_int_equal(kvStore_Put(NULL, f->players, "erin", buf, (int)len), NATS_OK);
    free(buf);
    uint64_t seq = mm_bucket_seq(&f->env, "tickets");
    t.key = "k-erin";
    t.players[0] = "erin";
    assert_int_equal(mm_create(&f->env, &t, &r, field, sizeof field), E(CONFLICT));
    assert_string_equal(field, "members[0].player_id");
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), seq);
    /* After the grace (2 s in this config) the record is stale and replaced. */
    gf_clock_sleep_ms(2100);
    assert_int_equal(mm_create(&f->env, &t, &r, NULL, 0), 0);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

/* Writes `rec` as CLAIMED by match m over its current revision, as a matcher would. */
static void claim_directly(fixture *f, const char *id, const char *match_id)
{
    kvEntry *e = NULL;
    Gamefn__V1__TicketRecord *rec = NULL;
    gf_ticket_next next;
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(kvStore_Get(&e, f->tickets, id), NATS_OK);
    assert_int_equal(gf_ticket_decode((const uint8_t *)kvEntry_Value(e),
                                      (size_t)kvEntry_ValueLen(e), id, &rec, NULL),
                     GF_OK);
    const gf_ticket_claim_args a = {"matcher-x", match_id, gf_clock_unix_ms() + 60000, NULL};
    assert_int_equal(gf_ticket_claim(rec, &a, gf_clock_unix_ms(), &next, NULL), GF_OK);
    assert_int_equal(gf_ticket_pack(&next.rec, &buf, &len), GF_OK);
    assert_int_equal(kvStore_Update(NULL, f->tickets, id, buf, (int)len, kvEntry_Revision(e)),
                     NATS_OK);
    free(buf);
    gf_ticket_free(rec);
    kvEntry_Destroy(e);
}

static void test_cancel_claimed(void **state)
{
    fixture *f = *state;
    Gamefn__V1__CreateTicketReply *a = NULL, *b = NULL;
    Gamefn__V1__TicketStatus *st = NULL;
    mm_ticket t = {.key = "k-claimed-1",
                   .queue = "duel",
                   .players = {"frank"},
                   .nplayers = 1,
                   .rating = 1500,
                   .pings = "eu-west:20"};
    assert_int_equal(mm_create(&f->env, &t, &a, NULL, 0), 0);
    t.key = "k-claimed-2";
    t.players[0] = "grace";
    assert_int_equal(mm_create(&f->env, &t, &b, NULL, 0), 0);

    /* Claimed, nothing committed: the cancel aborts the match and wins. */
    claim_directly(f, a->ticket_id, "m-abort");
    assert_int_equal(mm_cancel(&f->env, a->ticket_id, &st), 0);
    assert_int_equal(st->state, ST(CANCELLED));
    gamefn__v1__ticket_status__free_unpacked(st, NULL);
    kvEntry *e = NULL;
    Gamefn__V1__MatchOutcome *o = NULL;
    assert_int_equal(kvStore_Get(&e, f->matches, "m-abort"), NATS_OK);
    assert_int_equal(gf_outcome_decode((const uint8_t *)kvEntry_Value(e),
                                       (size_t)kvEntry_ValueLen(e), "m-abort", &o, NULL),
                     GF_OK);
    assert_int_equal(o->state, GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_ABORTED);
    assert_int_equal(o->abort_reason,
                     GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_TICKET_CANCELLED);
    assert_string_equal(o->ticket_id, a->ticket_id);
    gf_outcome_free(o);
    kvEntry_Destroy(e);

    /* Claimed and already committed: the match happened; the cancel is refused and the
     * ticket is written ASSIGNED from the commit record. */
    claim_directly(f, b->ticket_id, "m-commit");
    Gamefn__V1__Assignment as = GAMEFN__V1__ASSIGNMENT__INIT, *asp[1] = {&as};
    as.match_id = "m-commit";
    as.ticket_id = b->ticket_id;
    as.server_id = "gs-1";
    as.address = "203.0.113.7";
    as.port = 7777;
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(
        gf_outcome_commit_pack("m-commit", asp, 1, "alloc-x", gf_clock_unix_ms(), &buf, &len, NULL),
        GF_OK);
    assert_int_equal(kvStore_Create(NULL, f->matches, "m-commit", buf, (int)len), NATS_OK);
    free(buf);
    assert_int_equal(mm_cancel(&f->env, b->ticket_id, &st), E(FAILED_PRECONDITION));
    assert_int_equal(mm_get(&f->env, b->ticket_id, &st), 0);
    assert_int_equal(st->state, ST(ASSIGNED));
    assert_string_equal(st->assignment->server_id, "gs-1");
    gamefn__v1__ticket_status__free_unpacked(st, NULL);
    assert_true(mm_pushes_wait(f->pushes, b->ticket_id, ST(ASSIGNED), 0, 2000));
    gamefn__v1__create_ticket_reply__free_unpacked(a, NULL);
    gamefn__v1__create_ticket_reply__free_unpacked(b, NULL);
}

static void test_discovery(void **state)
{
    fixture *f = *state;
    ProtobufCMessage *m = NULL;
    char field[128];
    assert_int_equal(mm_call(&f->env, GF_WIRE_SUBJ_MATCHMAKING_QUEUES, NULL, 0,
                             &gamefn__v1__list_queues_reply__descriptor, &m, NULL, 0),
                     0);
    Gamefn__V1__ListQueuesReply *r = (Gamefn__V1__ListQueuesReply *)m;
    assert_int_equal(r->n_queues, 3);
    assert_string_equal(r->queues[2]->name, "pair");
    assert_int_equal(r->queues[2]->team_size, 2);
    assert_int_equal(r->queues[2]->teams, 2);
    assert_int_equal(r->queues[2]->mode, GAMEFN__V1__QUEUE_MODE__QUEUE_MODE_HYBRID);
    assert_int_equal(r->queues[1]->ticket_ttl_ms, 2000);
    assert_true(r->queues[0]->rules->skill_base == 50);
    assert_int_equal(r->n_datacenters, 2);
    assert_int_equal(r->n_regions, 2);
    assert_int_equal(r->max_party, 16);
    protobuf_c_message_free_unpacked(m, NULL);

    Gamefn__V1__ListQueuesRequest q = GAMEFN__V1__LIST_QUEUES_REQUEST__INIT;
    q.queue = "nope";
    uint8_t buf[64];
    size_t len = gamefn__v1__list_queues_request__pack(&q, buf);
    assert_int_equal(mm_call(&f->env, GF_WIRE_SUBJ_MATCHMAKING_QUEUES, buf, len,
                             &gamefn__v1__list_queues_reply__descriptor, &m, field, sizeof field),
                     E(NOT_FOUND));
    assert_string_equal(field, "queue");
}

/* Bad requests get a typed error, and no bucket changes. */
static void test_bad_requests_change_nothing(void **state)
{
    fixture *f = *state;
    char field[128];
    Gamefn__V1__CreateTicketReply *r = NULL;
    uint64_t t0 = mm_bucket_seq(&f->env, "tickets"), p0 = mm_bucket_seq(&f->env, "players"),
             m0 = mm_bucket_seq(&f->env, "matches");

    const uint8_t garbage[] = {0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 0xff};
    assert_int_equal(mm_call(&f->env, GF_WIRE_SUBJ_TICKET_CREATE, garbage, sizeof garbage, NULL,
                             NULL, field, sizeof field),
                     E(INVALID_ARGUMENT));
    assert_int_equal(
        mm_call(&f->env, GF_WIRE_SUBJ_TICKET_CREATE, NULL, 0, NULL, NULL, field, sizeof field),
        E(INVALID_ARGUMENT));
    assert_string_equal(field, "idempotency_key"); /* missing fields */

    mm_ticket t = {.key = "k-bad",
                   .queue = "duel",
                   .players = {"zed"},
                   .nplayers = 1,
                   .rating = NAN,
                   .pings = "eu-west:20"};
    assert_int_equal(mm_create(&f->env, &t, &r, field, sizeof field), E(INVALID_ARGUMENT));
    assert_string_equal(field, "members[0].rating");
    t.rating = 1500;
    t.queue = "nope";
    assert_int_equal(mm_create(&f->env, &t, &r, field, sizeof field), E(INVALID_ARGUMENT));
    assert_string_equal(field, "queue");
    t.queue = "duel";
    t.pings = "mars-1:20";
    assert_int_equal(mm_create(&f->env, &t, &r, field, sizeof field), E(INVALID_ARGUMENT));
    assert_string_equal(field, "pings[0].datacenter");

    /* 10,000 datacenters and 1 MB of attributes: over the 16 KiB request limit. */
    enum { NDC = 10000 };
    Gamefn__V1__CreateTicketRequest req = GAMEFN__V1__CREATE_TICKET_REQUEST__INIT;
    Gamefn__V1__PartyMember mem = GAMEFN__V1__PARTY_MEMBER__INIT, *memp[1] = {&mem};
    mem.player_id = "zed";
    req.idempotency_key = "k-big";
    req.queue = "duel";
    req.n_members = 1;
    req.members = memp;
    Gamefn__V1__DatacenterPing *pg = calloc(NDC, sizeof *pg), **pp = calloc(NDC, sizeof *pp);
    assert_non_null(pg);
    assert_non_null(pp);
    for (size_t i = 0; i < NDC; i++) {
        pg[i] = (Gamefn__V1__DatacenterPing)GAMEFN__V1__DATACENTER_PING__INIT;
        pg[i].datacenter = "eu-west";
        pg[i].ping_ms = 20;
        pp[i] = &pg[i];
    }
    req.n_pings = NDC;
    req.pings = pp;
    size_t len = gamefn__v1__create_ticket_request__get_packed_size(&req);
    uint8_t *big = malloc(len);
    assert_non_null(big);
    gamefn__v1__create_ticket_request__pack(&req, big);
    assert_int_equal(
        mm_call(&f->env, GF_WIRE_SUBJ_TICKET_CREATE, big, len, NULL, NULL, field, sizeof field),
        E(INVALID_ARGUMENT));
    free(big);
    req.n_pings = 1;
    char *value = malloc(1000001);
    assert_non_null(value);
    memset(value, 'v', 1000000);
    value[1000000] = '\0';
    Gamefn__V1__CreateTicketRequest__AttributesEntry at =
        GAMEFN__V1__CREATE_TICKET_REQUEST__ATTRIBUTES_ENTRY__INIT;
    Gamefn__V1__CreateTicketRequest__AttributesEntry *atp[1] = {&at};
    at.key = "blob";
    at.value = value;
    req.n_attributes = 1;
    req.attributes = atp;
    len = gamefn__v1__create_ticket_request__get_packed_size(&req);
    big = malloc(len);
    assert_non_null(big);
    gamefn__v1__create_ticket_request__pack(&req, big);
    assert_int_equal(
        mm_call(&f->env, GF_WIRE_SUBJ_TICKET_CREATE, big, len, NULL, NULL, field, sizeof field),
        E(INVALID_ARGUMENT));
    free(big);
    free(value);
    free(pg);
    free(pp);

    /* A party larger than the queue's teams; a repeated player; garbage to cancel and
     * get; a malformed ticket id. */
    mm_ticket party = {.key = "k-party",
                       .queue = "duel",
                       .players = {"ann", "bob"},
                       .nplayers = 2,
                       .rating = 1500,
                       .pings = "eu-west:20"};
    assert_int_equal(mm_create(&f->env, &party, &r, field, sizeof field), E(INVALID_ARGUMENT));
    assert_string_equal(field, "members");
    party.queue = "pair";
    party.players[1] = "ann";
    assert_int_equal(mm_create(&f->env, &party, &r, field, sizeof field), E(INVALID_ARGUMENT));
    assert_string_equal(field, "members[1].player_id");
    assert_int_equal(mm_call(&f->env, GF_WIRE_SUBJ_TICKET_CANCEL, garbage, sizeof garbage, NULL,
                             NULL, field, sizeof field),
                     E(INVALID_ARGUMENT));
    assert_int_equal(mm_call(&f->env, GF_WIRE_SUBJ_TICKET_GET, garbage, sizeof garbage, NULL, NULL,
                             field, sizeof field),
                     E(INVALID_ARGUMENT));
    Gamefn__V1__TicketStatus *none = NULL;
    assert_int_equal(mm_get(&f->env, "not.a.token", &none), E(INVALID_ARGUMENT));

    /* The intake still serves, and nothing was written. */
    assert_int_equal(mm_get(&f->env, "0123", &none), E(NOT_FOUND));
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), t0);
    assert_int_equal(mm_bucket_seq(&f->env, "players"), p0);
    assert_int_equal(mm_bucket_seq(&f->env, "matches"), m0);
    assert_true(gf_proc_running(&f->intake));
}

/* A MATCHES backlog too long to read (an allocator far behind: `gamefn-bench e2e` at
 * saturation leaves tens of thousands) is left out of the check on purpose, the claims
 * giving those matches' formation times: the check is still complete (GF_OK), not
 * failed as if a mirror had not caught up. Last: it leaves MATCHES unreadable. */
static void test_check_passes_a_long_matches_backlog(void **state)
{
    fixture *f = *state;
    jsCtx *js = f->env.js;
    /* The allocator provisions MATCHES; none runs here. */
    assert_int_equal(gf_fnenv_add_stream(js, "MATCHES", "gamefn.v1.match.found.>"), NATS_OK);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 30000;
    for (int i = 0; i < 20002; i++)
        assert_int_equal(js_PublishAsync(js, "gamefn.v1.match.found.backlog", "x", 1, NULL),
                         NATS_OK);
    assert_int_equal(js_PublishAsyncComplete(js, &po), NATS_OK);
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, js, "MATCHES", NULL, NULL), NATS_OK);
    assert_true(si->State.LastSeq - si->State.FirstSeq > 20000); /* over what is read */
    jsStreamInfo_Destroy(si);
    gf_mmcheck *m = NULL;
    gf_mmcheck_opts o = {0}; /* no queue table: this fixture's forged claims break limits */
    assert_int_equal(gf_mmcheck_run(f->env.nc, js, &o, &m), GF_OK);
    assert_int_equal(gf_mmcheck_count(m, "double_claims"), 0);
    gf_mmcheck_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_get_cancel),
        cmocka_unit_test(test_idempotency),
        cmocka_unit_test(test_players_records),
        cmocka_unit_test(test_cancel_claimed),
        cmocka_unit_test(test_discovery),
        cmocka_unit_test(test_bad_requests_change_nothing),
        cmocka_unit_test(test_check_passes_a_long_matches_backlog),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
