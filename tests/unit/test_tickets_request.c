/*
 * test_tickets_request.c — ticket requests: ids, validation (good, boundary and
 * malformed cases with the field each refusal names, and precedence), agreement with
 * the engine's own check, decoding, and the "same request" rule of idempotency.
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

#include "gamefn/tickets/record.h"
#include "gamefn/tickets/request.h"
#include "gamefn/v1/error.pb-c.h"
#include "tickets_fixture.h"

#define C_INVALID      GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT
#define C_PRECONDITION GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION

static void test_ticket_id(void **state)
{
    (void)state;
    char id[GF_TICKETS_ID_LEN + 1];
    /* BLAKE2b-128 vectors from Python's hashlib.blake2b(key, digest_size=16). */
    assert_int_equal(gf_tickets_id("k", id), GF_OK);
    assert_string_equal(id, "61f5dc14830084d8dc2d1ebc02ef3dec");
    assert_int_equal(gf_tickets_id("550e8400-e29b-41d4-a716-446655440000", id), GF_OK);
    assert_string_equal(id, "33a6638939517026737244b51c17b241");
    char long_key[66];
    memset(long_key, 'a', 64);
    long_key[64] = '\0';
    assert_int_equal(gf_tickets_id(long_key, id), GF_OK);
    long_key[64] = 'a';
    long_key[65] = '\0';
    assert_int_equal(gf_tickets_id(long_key, id), GF_ERR_INVALID);
    assert_int_equal(gf_tickets_id("", id), GF_ERR_INVALID);
    assert_int_equal(gf_tickets_id("a.b", id), GF_ERR_INVALID);
    assert_int_equal(gf_tickets_id(NULL, id), GF_ERR_INVALID);
}

/* ---- validation table ---------------------------------------------------------- */

typedef struct vcase {
    const char *name;
    void (*mutate)(tk_req *q);
    const char *field; /* NULL: valid */
} vcase;

static void m_none(tk_req *q)
{
    (void)q;
}
static void m_key_64(tk_req *q)
{
    memset(q->key, 'k', 64);
    q->key[64] = '\0';
}
static void m_key_65(tk_req *q)
{
    memset(q->key, 'k', 65);
    q->key[65] = '\0';
}
static void m_key_empty(tk_req *q)
{
    q->key[0] = '\0';
}
static void m_key_dot(tk_req *q)
{
    strcpy(q->key, "a.b");
}
static void m_queue_unknown(tk_req *q)
{
    strcpy(q->queue, "nope");
}
static void m_queue_empty(tk_req *q)
{
    q->queue[0] = '\0';
}
static void m_party_of_five(tk_req *q)
{
    strcpy(q->queue, "squad");
    tk_req_members(q, 5);
}
static void m_party_too_large_for_queue(tk_req *q)
{
    tk_req_members(q, 2);
}
static void m_party_over_wire(tk_req *q)
{
    strcpy(q->queue, "squad");
    tk_req_members(q, 17);
}
static void m_no_members(tk_req *q)
{
    q->r.n_members = 0;
}
static void m_player_id_empty(tk_req *q)
{
    q->ids[0][0] = '\0';
}
static void m_player_id_65(tk_req *q)
{
    memset(q->ids[0], 'p', 65);
    q->ids[0][65] = '\0';
}
static void m_rating_nan(tk_req *q)
{
    q->m[0].rating = NAN;
}
static void m_rating_inf(tk_req *q)
{
    q->m[0].rating = -INFINITY;
}
static void m_rating_max(tk_req *q)
{
    q->m[0].rating = 1e6;
}
static void m_rating_min(tk_req *q)
{
    q->m[0].rating = -1e6;
}
static void m_rating_over(tk_req *q)
{
    q->m[0].rating = 1000000.5;
}
static void m_sigma_negative(tk_req *q)
{
    q->m[0].sigma = -0.001;
}
static void m_sigma_nan(tk_req *q)
{
    q->m[0].sigma = NAN;
}
static void m_duplicate_player(tk_req *q)
{
    strcpy(q->queue, "squad");
    tk_req_members(q, 3);
    strcpy(q->ids[2], "p-1");
}
static void m_party_third_rating_nan(tk_req *q)
{
    strcpy(q->queue, "squad");
    tk_req_members(q, 3);
    q->m[2].rating = NAN;
}
static void m_no_pings(tk_req *q)
{
    q->r.n_pings = 0;
}
static void m_unknown_dc(tk_req *q)
{
    strcpy(q->dcs[1], "mars-1");
}
static void m_duplicate_dc(tk_req *q)
{
    strcpy(q->dcs[1], "us-east");
}
static void m_ping_5000(tk_req *q)
{
    q->p[0].ping_ms = 5000;
}
static void m_ping_5001(tk_req *q)
{
    q->p[0].ping_ms = 5001;
}
static void m_33_pings(tk_req *q)
{
    q->r.n_pings = 0;
    for (int i = 0; i < 33; i++)
        tk_req_ping(q, "us-east", 10);
}
static void m_attr_16(tk_req *q)
{
    char k[16];
    q->r.n_attributes = 0;
    for (int i = 0; i < 16; i++) {
        snprintf(k, sizeof k, "k%d", i);
        tk_req_attr(q, k, "v");
    }
}
static void m_attr_17(tk_req *q)
{
    m_attr_16(q);
    tk_req_attr(q, "extra", "v");
}
static void m_attr_value_128(tk_req *q)
{
    memset(q->values[0], 'v', 128);
    q->values[0][128] = '\0';
}
static void m_attr_value_129(tk_req *q)
{
    memset(q->values[0], 'v', 129);
    q->values[0][129] = '\0';
}
static void m_attr_value_bad_utf8(tk_req *q)
{
    strcpy(q->values[0], "p\xc3");
}
static void m_attr_value_control(tk_req *q)
{
    strcpy(q->values[0], "p\nc");
}
static void m_attr_value_utf8(tk_req *q)
{
    strcpy(q->values[0], "\xc3\xa9t\xc3\xa9");
}
static void m_attr_key_bad(tk_req *q)
{
    strcpy(q->keys[0], "a b");
}
static void m_attr_key_repeated(tk_req *q)
{
    tk_req_attr(q, "platform", "console");
}
static void m_region_eu(tk_req *q)
{
    strcpy(q->region, "eu");
}
static void m_region_unknown(tk_req *q)
{
    strcpy(q->region, "moon");
}
static void m_two_faults_key_first(tk_req *q)
{
    q->key[0] = '\0';
    strcpy(q->queue, "nope");
}
static void m_two_faults_members_first(tk_req *q)
{
    q->m[0].rating = NAN;
    q->r.n_pings = 0;
    strcpy(q->region, "moon");
}

static const vcase cases[] = {
    {"valid solo", m_none, NULL},
    {"key of 64 bytes", m_key_64, NULL},
    {"key of 65 bytes", m_key_65, "idempotency_key"},
    {"empty key", m_key_empty, "idempotency_key"},
    {"key with a dot", m_key_dot, "idempotency_key"},
    {"unknown queue", m_queue_unknown, "queue"},
    {"empty queue", m_queue_empty, "queue"},
    {"party of 5 in 5v5", m_party_of_five, NULL},
    {"party of 2 in 1v1", m_party_too_large_for_queue, "members"},
    {"party of 17", m_party_over_wire, "members"},
    {"no members", m_no_members, "members"},
    {"empty player id", m_player_id_empty, "members[0].player_id"},
    {"player id of 65 bytes", m_player_id_65, "members[0].player_id"},
    {"NaN rating", m_rating_nan, "members[0].rating"},
    {"-inf rating", m_rating_inf, "members[0].rating"},
    {"rating 1e6", m_rating_max, NULL},
    {"rating -1e6", m_rating_min, NULL},
    {"rating over 1e6", m_rating_over, "members[0].rating"},
    {"negative sigma", m_sigma_negative, "members[0].sigma"},
    {"NaN sigma", m_sigma_nan, "members[0].sigma"},
    {"player twice", m_duplicate_player, "members[2].player_id"},
    {"third member's NaN", m_party_third_rating_nan, "members[2].rating"},
    {"no pings", m_no_pings, "pings"},
    {"unknown datacenter", m_unknown_dc, "pings[1].datacenter"},
    {"datacenter twice", m_duplicate_dc, "pings[1].datacenter"},
    {"ping 5000", m_ping_5000, NULL},
    {"ping 5001", m_ping_5001, "pings[0].ping_ms"},
    {"33 pings", m_33_pings, "pings"},
    {"16 attributes", m_attr_16, NULL},
    {"17 attributes", m_attr_17, "attributes"},
    {"attribute value of 128 bytes", m_attr_value_128, NULL},
    {"attribute value of 129 bytes", m_attr_value_129, "attributes[platform]"},
    {"attribute value cut UTF-8", m_attr_value_bad_utf8, "attributes[platform]"},
    {"attribute value with a newline", m_attr_value_control, "attributes[platform]"},
    {"attribute value in UTF-8", m_attr_value_utf8, NULL},
    {"attribute key with a space", m_attr_key_bad, "attributes"},
    {"attribute key twice", m_attr_key_repeated, "attributes[platform]"},
    {"region eu", m_region_eu, NULL},
    {"unknown region", m_region_unknown, "region"},
    {"key before queue", m_two_faults_key_first, "idempotency_key"},
    {"members before pings and region", m_two_faults_members_first, "members[0].rating"},
};

static void test_validation_table(void **state)
{
    (void)state;
    const gf_mm_tables *t = tk_tables();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static tk_req q;
        gf_tickets_problem p;
        tk_req_init(&q);
        cases[i].mutate(&q);
        gf_err err = gf_tickets_request_check(&t->cfg, &q.r, TK_NOW, &p);
        if (!cases[i].field) {
            if (err != GF_OK)
                fail_msg("%s: refused: %s", cases[i].name, p.message);
            continue;
        }
        if (err != GF_ERR_INVALID || p.code != C_INVALID || strcmp(p.field, cases[i].field) != 0)
            fail_msg("%s: err %d code %d field '%s' (%s), want field '%s'", cases[i].name, (int)err,
                     p.code, p.field, p.message, cases[i].field);
        /* The message starts with the field, for people reading logs. */
        assert_int_equal(strncmp(p.message, p.field, strlen(p.field)), 0);
    }
}

/* Every accepted request becomes a record whose engine ticket the engine accepts; every
 * refused one that the engine has a rule for is refused by the engine too. */
static void test_engine_agrees(void **state)
{
    (void)state;
    const gf_mm_tables *t = tk_tables();
    int engine_refused = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static tk_req q;
        gf_tickets_problem p;
        tk_req_init(&q);
        cases[i].mutate(&q);
        bool ok = gf_tickets_request_check(&t->cfg, &q.r, TK_NOW, &p) == GF_OK;

        gf_match_player players[TK_MEMBERS];
        gf_match_ping pings[TK_PINGS];
        gf_match_attr attrs[TK_ATTRS];
        gf_match_ticket mt = {0};
        if (ok) {
            static gf_ticket_next next;
            char id[GF_TICKETS_ID_LEN + 1];
            assert_int_equal(gf_tickets_id(q.r.idempotency_key, id), GF_OK);
            assert_int_equal(gf_ticket_new(&t->cfg, &q.r, id, TK_NOW, &next, &p), GF_OK);
            assert_int_equal(gf_ticket_engine(&t->cfg, &next.rec, players, pings, attrs, &mt),
                             GF_OK);
            if (gf_match_ticket_check(&t->cfg, &mt, TK_NOW) != GF_MATCH_BAD_NONE)
                fail_msg("%s: accepted here, refused by the engine", cases[i].name);
            continue;
        }
        /* Refused: where the request still converts, the engine must not accept it
         * unless the refusal is a wire-only rule (tokens, UTF-8, wire counts). */
        if (q.r.n_members > TK_MEMBERS || q.r.n_pings > TK_PINGS)
            continue;
        int qi = gf_match_config_queue_index(&t->cfg, q.r.queue);
        if (qi < 0 || q.r.n_members == 0)
            continue;
        for (size_t k = 0; k < q.r.n_members; k++)
            players[k] = (gf_match_player){q.r.members[k]->player_id, q.r.members[k]->rating,
                                           q.r.members[k]->sigma};
        size_t np = 0;
        for (size_t k = 0; k < q.r.n_pings; k++) {
            int dc = gf_match_config_dc_index(&t->cfg, q.r.pings[k]->datacenter);
            pings[np++] = (gf_match_ping){dc < 0 ? 99u : (uint32_t)dc, q.r.pings[k]->ping_ms};
        }
        mt = (gf_match_ticket){.id = "t",
                               .queue = (uint32_t)qi,
                               .region = GF_MATCH_REGION_AUTO,
                               .queued_ms = TK_NOW,
                               .players = players,
                               .players_len = q.r.n_members,
                               .pings = pings,
                               .pings_len = np};
        if (gf_match_ticket_check(&t->cfg, &mt, TK_NOW) != GF_MATCH_BAD_NONE)
            engine_refused++;
    }
    /* NaN/inf/over-range ratings and sigmas, party sizes, duplicates, pings: the engine's
     * own rules, at least these 10 cases. */
    assert_true(engine_refused >= 10);
}

static void test_decode(void **state)
{
    (void)state;
    ProtobufCMessage *m = NULL;
    gf_tickets_problem p;
    const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12};
    assert_int_equal(gf_tickets_decode(&gamefn__v1__create_ticket_request__descriptor, garbage,
                                       sizeof garbage, &m, &p),
                     GF_ERR_INVALID);
    assert_null(m);
    assert_int_equal(p.code, C_INVALID);
    assert_string_equal(p.field, "");

    static uint8_t big[GF_WIRE_REQUEST_MAX + 1];
    assert_int_equal(
        gf_tickets_decode(&gamefn__v1__create_ticket_request__descriptor, big, sizeof big, &m, &p),
        GF_ERR_INVALID);
    assert_non_null(strstr(p.message, "over the limit"));

    /* An empty body is a valid, empty request (refused later by the checks). */
    assert_int_equal(
        gf_tickets_decode(&gamefn__v1__create_ticket_request__descriptor, NULL, 0, &m, &p), GF_OK);
    assert_non_null(m);
    const gf_mm_tables *t = tk_tables();
    assert_int_equal(
        gf_tickets_request_check(&t->cfg, (Gamefn__V1__CreateTicketRequest *)m, TK_NOW, &p),
        GF_ERR_INVALID);
    assert_string_equal(p.field, "idempotency_key");
    protobuf_c_message_free_unpacked(m, NULL);

    assert_int_equal(gf_tickets_id_check("t-1", &p), GF_OK);
    assert_int_equal(gf_tickets_id_check("", &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "ticket_id");
}

/* 10,000 datacenters: refused on the count alone (the check never walks them). */
static void test_ten_thousand_datacenters(void **state)
{
    (void)state;
    static tk_req q;
    tk_req_init(&q);
    enum { N = 10000 };
    Gamefn__V1__DatacenterPing *pp = calloc(N, sizeof *pp);
    Gamefn__V1__DatacenterPing **ptr = calloc(N, sizeof *ptr);
    assert_non_null(pp);
    assert_non_null(ptr);
    for (size_t i = 0; i < N; i++) {
        pp[i] = (Gamefn__V1__DatacenterPing)GAMEFN__V1__DATACENTER_PING__INIT;
        pp[i].datacenter = "us-east";
        ptr[i] = &pp[i];
    }
    q.r.n_pings = N;
    q.r.pings = ptr;
    gf_tickets_problem p;
    assert_int_equal(gf_tickets_request_check(&tk_tables()->cfg, &q.r, TK_NOW, &p), GF_ERR_INVALID);
    assert_string_equal(p.field, "pings");
    assert_non_null(strstr(p.message, "too many datacenters"));
    free(ptr);
    free(pp);
}

static void test_default_region(void **state)
{
    (void)state;
    const gf_mm_tables *t = tk_tables();
    static tk_req q;
    tk_req_init(&q);
    assert_int_equal(gf_tickets_default_region(&t->cfg, q.r.pings, q.r.n_pings),
                     gf_match_config_region_index(&t->cfg, "na"));
    q.p[1].ping_ms = 20; /* a tie goes to the datacenter listed first in config */
    assert_int_equal(gf_tickets_default_region(&t->cfg, q.r.pings, q.r.n_pings),
                     gf_match_config_region_index(&t->cfg, "na"));
    q.p[1].ping_ms = 19;
    assert_int_equal(gf_tickets_default_region(&t->cfg, q.r.pings, q.r.n_pings),
                     gf_match_config_region_index(&t->cfg, "eu"));
}

/* ---- the same request -------------------------------------------------------------- */

typedef struct scase {
    const char *name;
    void (*mutate)(tk_req *q);
    const char *field; /* NULL: the same request */
} scase;

static void s_pings_reordered(tk_req *q)
{
    Gamefn__V1__DatacenterPing *x = q->pp[0];
    q->pp[0] = q->pp[1];
    q->pp[1] = x;
}
static void s_attrs_reordered(tk_req *q)
{
    tk_req_attr(q, "input", "kbm");
    Gamefn__V1__CreateTicketRequest__AttributesEntry *x = q->ap[0];
    q->ap[0] = q->ap[1];
    q->ap[1] = x;
}
static void s_rating(tk_req *q)
{
    q->m[0].rating = 1500.0000001;
}
static void s_queue(tk_req *q)
{
    strcpy(q->queue, "ffa");
}
static void s_region(tk_req *q)
{
    strcpy(q->region, "na"); /* the stored region, but the first request left it empty */
}
static void s_ping_value(tk_req *q)
{
    q->p[1].ping_ms = 91;
}
static void s_extra_ping(tk_req *q)
{
    tk_req_ping(q, "us-west", 70);
}
static void s_attr_value(tk_req *q)
{
    strcpy(q->values[0], "console");
}
static void s_player(tk_req *q)
{
    strcpy(q->ids[0], "p-2");
}

static const scase same_cases[] = {
    {"identical", m_none, NULL},
    {"pings in another order", s_pings_reordered, NULL},
    {"attributes in another order", s_attrs_reordered, "attributes"}, /* one more entry */
    {"rating", s_rating, "members[0].rating"},
    {"queue", s_queue, "queue"},
    {"region given", s_region, "region"},
    {"a ping's value", s_ping_value, "pings[1]"},
    {"one more ping", s_extra_ping, "pings"},
    {"an attribute's value", s_attr_value, "attributes[platform]"},
    {"player", s_player, "members[0].player_id"},
};

static void test_same_request(void **state)
{
    (void)state;
    const gf_mm_tables *t = tk_tables();
    static tk_req first, again;
    static gf_ticket_next rec;
    gf_tickets_problem p;
    tk_req_init(&first);
    tk_req_attr(&first, "input", "kbm");
    assert_int_equal(gf_ticket_new(&t->cfg, &first.r, "t-1", TK_NOW, &rec, &p), GF_OK);
    for (size_t i = 0; i < sizeof same_cases / sizeof same_cases[0]; i++) {
        tk_req_init(&again);
        tk_req_attr(&again, "input", "kbm");
        same_cases[i].mutate(&again);
        gf_err err = gf_tickets_request_same(&again.r, &rec.rec, &p);
        if (!same_cases[i].field) {
            if (err != GF_OK)
                fail_msg("%s: %s", same_cases[i].name, p.message);
            continue;
        }
        if (err != GF_ERR_CONFLICT || p.code != C_PRECONDITION ||
            strcmp(p.field, same_cases[i].field) != 0)
            fail_msg("%s: err %d field '%s', want '%s'", same_cases[i].name, (int)err, p.field,
                     same_cases[i].field);
    }
    /* Attributes as a set: the same two entries swapped are the same request. */
    tk_req_init(&again);
    tk_req_attr(&again, "input", "kbm");
    s_pings_reordered(&again);
    Gamefn__V1__CreateTicketRequest__AttributesEntry *x = again.ap[0];
    again.ap[0] = again.ap[1];
    again.ap[1] = x;
    assert_int_equal(gf_tickets_request_same(&again.r, &rec.rec, &p), GF_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ticket_id),
        cmocka_unit_test(test_validation_table),
        cmocka_unit_test(test_engine_agrees),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_ten_thousand_datacenters),
        cmocka_unit_test(test_default_region),
        cmocka_unit_test(test_same_request),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
