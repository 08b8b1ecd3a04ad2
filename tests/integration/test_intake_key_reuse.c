/*
 * test_intake_key_reuse.c — an idempotency key sent again after its ticket has expired
 * from the tickets bucket, against a real nats-server (a bucket ttl of 2 s here, 1 h
 * shipped).
 *
 * The ticket id is the key's hash, and the audit mirror AUDIT_TICKETS keeps every
 * revision of the key for longer than the bucket (7 d shipped). Creating that ticket
 * again would be a create ("no revision yet") of a key the mirror has a history for: a
 * single server's mirror refuses it and stops there for good (docs/NATS-FACTS.md §6).
 * So intake refuses the key (FAILED_PRECONDITION on idempotency_key) and writes nothing,
 * and the mirror goes on following the bucket. A new key for the same player works.
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
#include "gamefn/tickets/request.h"
#include "gamefn/v1/error.pb-c.h"
#include "mm_support.h"

#define E(x) GAMEFN__V1__ERROR_CODE__ERROR_CODE_##x

typedef struct fixture {
    gf_fnenv env;
    gf_proc intake;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    *state = f;
    const mm_env_opts o = {.tickets_ttl = "2s"};
    assert_int_equal(mm_env_start_opts(&f->env, &o), 0);
    assert_true(mm_spawn(&f->env, &f->intake, "intake", "intake-1"));
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gf_fnenv_stop(&f->intake, 15000);
    gf_fnenv_free(&f->env);
    free(f);
    return 0;
}

static uint64_t last_seq(fixture *f, const char *stream)
{
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, f->env.js, stream, NULL, NULL), NATS_OK);
    uint64_t seq = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return seq;
}

/* Whether `stream` holds any message on `subject`. */
static bool holds(fixture *f, const char *stream, const char *subject)
{
    natsMsg *m = NULL;
    natsStatus s = js_GetLastMsg(&m, f->env.js, stream, subject, NULL, NULL);
    natsMsg_Destroy(m);
    assert_true(s == NATS_OK || s == NATS_NOT_FOUND);
    return s == NATS_OK;
}

/* AUDIT_TICKETS reaches KV_tickets' last sequence within 10 s. */
static void expect_mirror_follows(fixture *f)
{
    uint64_t want = mm_bucket_seq(&f->env, "tickets"), got = 0;
    for (int64_t until = gf_clock_mono_ms() + 10000; gf_clock_mono_ms() < until;
         gf_clock_sleep_ms(50)) {
        if ((got = last_seq(f, "AUDIT_TICKETS")) >= want)
            return;
    }
    fail_msg("AUDIT_TICKETS stopped at %llu, KV_tickets is at %llu", (unsigned long long)got,
             (unsigned long long)want);
}

static void key_of_an_expired_ticket_is_refused(void **state)
{
    fixture *f = *state;
    /* The check reads the mirror by direct get (allow_direct in this config), not by the
     * dearer JetStream API, which intake would have logged at start. */
    assert_true(gf_fnenv_log_count(&f->intake, "fn=intake") > 0); /* its log is read */
    assert_false(gf_fnenv_wait_log(&f->intake, "AUDIT_TICKETS is not read by direct get", 0));
    char id[GF_TICKETS_ID_LEN + 1], subject[128];
    mm_ticket t = mm_solo("k-expires", "kim");
    Gamefn__V1__CreateTicketReply *r = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, &t, 5000, &r, &e), 0);
    snprintf(id, sizeof id, "%s", r->ticket_id);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
    snprintf(subject, sizeof subject, "$KV.tickets.%s", id);
    expect_mirror_follows(f);

    /* The bucket forgets the ticket (its ttl); the audit keeps it. */
    int64_t until = gf_clock_mono_ms() + 30000;
    while (holds(f, "KV_tickets", subject) && gf_clock_mono_ms() < until)
        gf_clock_sleep_ms(200);
    assert_false(holds(f, "KV_tickets", subject));
    assert_true(holds(f, "AUDIT_TICKETS", subject));

    uint64_t t0 = mm_bucket_seq(&f->env, "tickets"), p0 = mm_bucket_seq(&f->env, "players");
    assert_int_equal(mm_create_err(&f->env, &t, 5000, &r, &e), E(FAILED_PRECONDITION));
    assert_string_equal(e.field, "idempotency_key");
    assert_non_null(strstr(e.message, id));
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), t0);
    assert_int_equal(mm_bucket_seq(&f->env, "players"), p0);
    assert_false(holds(f, "KV_tickets", subject));

    /* A new key for the same player makes a ticket, and the mirror still follows. The
     * players record names a ticket that is gone: CONFLICT (retry_after_ms) until intake
     * has seen it unchanged for pending_grace (functions/intake/pending.h), as a client
     * retries. */
    t.key = "k-fresh";
    int code = E(CONFLICT);
    for (int tries = 0; code == E(CONFLICT) && tries < 100; tries++) {
        if ((code = mm_create_err(&f->env, &t, 5000, &r, &e)) == E(CONFLICT))
            gf_clock_sleep_ms((int64_t)e.retry_after_ms);
    }
    assert_int_equal(code, 0);
    assert_string_not_equal(r->ticket_id, id);
    assert_false(r->replayed);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
    expect_mirror_follows(f);
}

/* A retry while the ticket is still in the bucket is a replay, as always. */
static void key_of_a_live_ticket_is_a_replay(void **state)
{
    fixture *f = *state;
    mm_ticket t = mm_solo("k-live", "lou");
    Gamefn__V1__CreateTicketReply *r = NULL, *again = NULL;
    gf_wire_error e;
    assert_int_equal(mm_create_err(&f->env, &t, 5000, &r, &e), 0);
    expect_mirror_follows(f); /* the audit now holds the key too */
    assert_int_equal(mm_create_err(&f->env, &t, 5000, &again, &e), 0);
    assert_true(again->replayed);
    assert_string_equal(again->ticket_id, r->ticket_id);
    assert_int_equal(again->status->revision, r->status->revision);
    gamefn__v1__create_ticket_reply__free_unpacked(again, NULL);
    gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_of_a_live_ticket_is_a_replay),
        cmocka_unit_test(key_of_an_expired_ticket_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
