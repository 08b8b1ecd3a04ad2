/* mm_alloc.c — the tests' fake allocator (see mm_support.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/record.h"
#include "gamefn/tickets/status.h"
#include "gamefn/v1/match.pb-c.h"
#include "mm_support.h"

struct mm_alloc {
    gf_fnenv *env;
    kvStore *tickets, *matches;
    natsSubscription *sub;
    long long committed, aborted;
};

mm_alloc *mm_alloc_start(gf_fnenv *env)
{
    mm_alloc *a = calloc(1, sizeof *a);
    assert_non_null(a);
    a->env = env;
    assert_int_equal(js_KeyValue(&a->tickets, env->js, "tickets"), NATS_OK);
    assert_int_equal(js_KeyValue(&a->matches, env->js, "matches"), NATS_OK);
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "test-alloc";
    cc.AckPolicy = js_AckExplicit;
    cc.AckWait = 30000LL * 1000000;
    assert_int_equal(js_AddConsumer(NULL, env->js, "MATCHES", &cc, NULL, NULL), NATS_OK);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "MATCHES";
    so.Consumer = "test-alloc";
    assert_int_equal(js_PullSubscribe(&a->sub, env->js, "gamefn.v1.match.found.>", "test-alloc",
                                      NULL, &so, NULL),
                     NATS_OK);
    return a;
}

/* Reads ticket `id`: record (caller frees) and revision; NULL when missing. */
static Gamefn__V1__TicketRecord *read_ticket(mm_alloc *a, const char *id, uint64_t *rev)
{
    kvEntry *e = NULL;
    Gamefn__V1__TicketRecord *rec = NULL;
    if (kvStore_Get(&e, a->tickets, id) == NATS_OK) {
        gf_ticket_decode((const uint8_t *)kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), id, &rec,
                         NULL);
        *rev = kvEntry_Revision(e);
    }
    kvEntry_Destroy(e);
    return rec;
}

/* The status push an allocator sends after each write. */
static void push(mm_alloc *a, const Gamefn__V1__TicketRecord *rec, uint64_t rev)
{
    gf_ticket_status st;
    uint8_t *buf = NULL;
    size_t len = 0;
    char subject[128];
    gf_ticket_status_of(rec, rev, NULL, &st);
    snprintf(subject, sizeof subject, "gamefn.v1.ticket.status.%s", rec->ticket_id);
    if (gf_ticket_status_pack(&st, &buf, &len) == GF_OK)
        natsConnection_Publish(a->env->nc, subject, buf, (int)len);
    free(buf);
}

/* Writes what `o` means into ticket `id` if it is still claimed by the match; a write
 * without a definite answer is retried (a real allocator would be redelivered). */
static void settle_one(mm_alloc *a, const char *id, const Gamefn__V1__MatchOutcome *o)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        uint64_t rev = 0, nrev = 0;
        Gamefn__V1__TicketRecord *rec = read_ticket(a, id, &rev);
        gf_ticket_next next;
        uint8_t *buf = NULL;
        size_t len = 0;
        natsStatus s = NATS_OK;
        if (!rec) /* could not read it (a timeout under load): try again */
            continue;
        if (gf_outcome_settle(o, rec, gf_clock_unix_ms(), &next, NULL) == GF_OK &&
            !next.unchanged && gf_ticket_pack(&next.rec, &buf, &len) == GF_OK) {
            s = kvStore_Update(&nrev, a->tickets, id, buf, (int)len, rev);
            if (s == NATS_OK)
                push(a, &next.rec, nrev);
        }
        free(buf);
        gf_ticket_free(rec);
        if (s == NATS_OK)
            return; /* written, or nothing to write */
        fprintf(stderr, "fake allocator: ticket %s of %s: write at %llu failed: %s\n", id,
                o->match_id, (unsigned long long)rev, nats_GetLastError(NULL));
    }
    fprintf(stderr, "fake allocator: ticket %s of %s: given up\n", id, o->match_id);
}

/* Writes what `o` means for every ticket of the match still claimed by it. */
static void settle_all(mm_alloc *a, const Gamefn__V1__Match *m, const Gamefn__V1__MatchOutcome *o)
{
    for (size_t t = 0; t < m->n_teams; t++) {
        for (size_t k = 0; k < m->teams[t]->n_tickets; k++)
            settle_one(a, m->teams[t]->tickets[k]->ticket_id, o);
    }
}

static void handle(mm_alloc *a, const Gamefn__V1__Match *m)
{
    Gamefn__V1__Assignment as[128], *asp[128];
    size_t n = 0;
    bool fenced = true;
    for (size_t t = 0; t < m->n_teams; t++) {
        for (size_t k = 0; k < m->teams[t]->n_tickets && n < 128; k++) {
            uint64_t rev = 0;
            const char *id = m->teams[t]->tickets[k]->ticket_id;
            Gamefn__V1__TicketRecord *rec = read_ticket(a, id, &rev);
            fenced = fenced && rec && rec->claim && strcmp(rec->claim->match_id, m->match_id) == 0;
            gf_ticket_free(rec);
            as[n] = (Gamefn__V1__Assignment)GAMEFN__V1__ASSIGNMENT__INIT;
            as[n].match_id = m->match_id;
            as[n].ticket_id = (char *)(uintptr_t)id;
            as[n].server_id = "gs-test";
            as[n].datacenter = m->datacenters[0]->datacenter;
            as[n].address = "127.0.0.1";
            as[n].port = 7777;
            as[n].team = (uint32_t)t;
            as[n].assigned_unix_ms = gf_clock_unix_ms();
            asp[n] = &as[n];
            n++;
        }
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    if (fenced)
        gf_outcome_commit_pack(m->match_id, asp, n, "test-alloc", gf_clock_unix_ms(), &buf, &len,
                               NULL);
    else
        gf_outcome_abort_pack(m->match_id,
                              GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_TICKET_LOST, NULL,
                              NULL, "test-alloc", gf_clock_unix_ms(), &buf, &len, NULL);
    kvStore_Create(NULL, a->matches, m->match_id, buf, (int)len); /* the first decision wins */
    free(buf);
    kvEntry *e = NULL;
    Gamefn__V1__MatchOutcome *o = NULL;
    if (kvStore_Get(&e, a->matches, m->match_id) == NATS_OK &&
        gf_outcome_decode((const uint8_t *)kvEntry_Value(e), (size_t)kvEntry_ValueLen(e),
                          m->match_id, &o, NULL) == GF_OK) {
        settle_all(a, m, o);
        if (o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED)
            a->committed++;
        else
            a->aborted++;
    }
    gf_outcome_free(o);
    kvEntry_Destroy(e);
}

int mm_alloc_step(mm_alloc *a, int wait_ms)
{
    natsMsgList list = {0};
    long long before = a->committed;
    if (natsSubscription_Fetch(&list, a->sub, 64, wait_ms, NULL) != NATS_OK)
        return 0;
    for (int i = 0; i < list.Count; i++) {
        natsMsg *msg = list.Msgs[i];
        Gamefn__V1__Match *m = gamefn__v1__match__unpack(NULL, (size_t)natsMsg_GetDataLength(msg),
                                                         (const uint8_t *)natsMsg_GetData(msg));
        if (m)
            handle(a, m);
        gamefn__v1__match__free_unpacked(m, NULL);
        natsMsg_Ack(msg, NULL);
    }
    natsMsgList_Destroy(&list);
    return (int)(a->committed - before);
}

long long mm_alloc_committed(const mm_alloc *a)
{
    return a->committed;
}

long long mm_alloc_aborted(const mm_alloc *a)
{
    return a->aborted;
}

void mm_alloc_free(mm_alloc *a)
{
    if (!a)
        return;
    natsSubscription_Destroy(a->sub);
    kvStore_Destroy(a->tickets);
    kvStore_Destroy(a->matches);
    free(a);
}
