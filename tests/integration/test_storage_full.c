/*
 * test_storage_full.c — ticket.create when JetStream has no room: the players or the
 * tickets bucket at its max_bytes (discard new, as every KV bucket: the server answers
 * 10077 "maximum bytes exceeded"). The request gets RESOURCE_EXHAUSTED with a
 * retry_after, nothing of it stays behind (no ticket without its players records, no
 * players record without its ticket), and once the bucket has room again the same
 * request creates the ticket. The independent checker then finds the audit clean.
 * And MATCHES full (discard new, as shipped): the matcher's Match is refused, it aborts
 * the match and releases its claims, no ticket is assigned; once MATCHES has room the
 * tickets are matched and assigned, and the checker finds no half-assigned match.
 * And AUDIT_TICKETS given a size limit (discard old): the checker says its report is
 * incomplete instead of judging the tickets it still has.
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
#include "gamefn/log.h"
#include "gamefn/tickets/players.h"
#include "gamefn/v1/error.pb-c.h"
#include "mm_support.h"
#include "mmcheck.h"

#define E(x)  GAMEFN__V1__ERROR_CODE__ERROR_CODE_##x
#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x

typedef struct fixture {
    gf_fnenv env;
    gf_proc intake;
    kvStore *players;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(mm_env_start(&f->env, NULL), 0);
    assert_true(mm_spawn(&f->env, &f->intake, "intake", "in-1"));
    assert_int_equal(js_KeyValue(&f->players, f->env.js, "players"), NATS_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    kvStore_Destroy(f->players);
    assert_true(gf_fnenv_stop(&f->intake, 15000));
    gf_fnenv_free(&f->env);
    free(f);
    return 0;
}

static void bucket_full(fixture *f, const char *bucket, bool full)
{
    char stream[64];
    snprintf(stream, sizeof stream, "KV_%s", bucket);
    assert_int_equal(gf_fnenv_stream_full(&f->env, stream, full), NATS_OK);
}

/* players/<p> holds no live record. */
static void no_record(fixture *f, const char *p)
{
    kvEntry *e = NULL;
    assert_int_equal(kvStore_Get(&e, f->players, p), NATS_NOT_FOUND);
}

/* players/<p> names ticket `id`. */
static void record_names(fixture *f, const char *p, const char *id)
{
    kvEntry *e = NULL;
    Gamefn__V1__PlayerMatchRecord *pr = NULL;
    assert_int_equal(kvStore_Get(&e, f->players, p), NATS_OK);
    assert_int_equal(gf_players_decode((const uint8_t *)kvEntry_Value(e),
                                       (size_t)kvEntry_ValueLen(e), p, &pr, NULL),
                     GF_OK);
    assert_string_equal(pr->ticket_id, id);
    gf_players_free(pr);
    kvEntry_Destroy(e);
}

/* ticket.create refused for want of room: RESOURCE_EXHAUSTED naming the bucket. */
static void create_refused(fixture *f, const mm_ticket *t, const char *bucket)
{
    gf_wire_error e;
    Gamefn__V1__CreateTicketReply *r = NULL;
    assert_int_equal(mm_create_err(&f->env, t, 10000, &r, &e), E(RESOURCE_EXHAUSTED));
    assert_null(r);
    assert_true(e.retry_after_ms > 0);
    char want[64];
    snprintf(want, sizeof want, "the %s bucket is full", bucket);
    if (!strstr(e.message, want))
        fail_msg("message \"%s\" does not say \"%s\"", e.message, want);
}

static void players_full(void **state)
{
    fixture *f = *state;
    mm_ticket t = mm_solo("k-full-p", "pat");
    uint64_t tickets = mm_bucket_seq(&f->env, "tickets");
    bucket_full(f, "players", true);
    create_refused(f, &t, "players");
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), tickets); /* no ticket written */
    no_record(f, "pat");

    bucket_full(f, "players", false);
    char id[80];
    mm_create_new(&f->env, &t, id, sizeof id);
    record_names(f, "pat", id);
    mm_check_clean(&f->env, 0);
}

/* The players records are written, the ticket is refused: they are removed again
 * (without that they held both players for pending_grace, as if a create were under
 * way, and a create under another key was refused with CONFLICT). */
static void tickets_full(void **state)
{
    fixture *f = *state;
    mm_ticket party = {.key = "k-full-t",
                       .queue = "pair",
                       .players = {"quinn", "rose"},
                       .nplayers = 2,
                       .rating = 1400,
                       .pings = "eu-west:30"};
    uint64_t tickets = mm_bucket_seq(&f->env, "tickets");
    bucket_full(f, "tickets", true);
    create_refused(f, &party, "tickets");
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), tickets);
    no_record(f, "quinn");
    no_record(f, "rose");

    /* Room again: the same request creates the ticket (a different key for one of the
     * players would work too: nothing holds them). */
    bucket_full(f, "tickets", false);
    char id[80];
    mm_create_new(&f->env, &party, id, sizeof id);
    record_names(f, "quinn", id);
    record_names(f, "rose", id);
    mm_check_clean(&f->env, 0);
}

/* Runs the fake allocator until every ticket of ids is in `state`, or timeout_ms. */
static bool all_in(gf_fnenv *env, mm_alloc *a, char (*ids)[80], size_t n, int state, int timeout_ms)
{
    for (int64_t end = gf_clock_mono_ms() + timeout_ms; gf_clock_mono_ms() < end;) {
        mm_alloc_step(a, 50);
        size_t in = 0;
        for (size_t i = 0; i < n; i++)
            in += mm_state(env, ids[i]) == state;
        if (in == n)
            return true;
    }
    return false;
}

static void matches_full(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_proc intake, matcher, ticker;
    assert_int_equal(mm_env_start(&env, NULL), 0);
    assert_true(mm_spawn(&env, &intake, "intake", "in-1"));
    assert_true(mm_spawn(&env, &matcher, "matcher", "mt-1"));
    mm_alloc *alloc = mm_alloc_start(&env);
    assert_int_equal(gf_fnenv_stream_full(&env, "MATCHES", true), NATS_OK);
    assert_true(mm_spawn(&env, &ticker, "ticker", "tk-1"));

    char ids[2][80];
    mm_ticket a = mm_solo("k-mf-a", "mia"), b = mm_solo("k-mf-b", "max");
    mm_create_new(&env, &a, ids[0], sizeof ids[0]);
    mm_create_new(&env, &b, ids[1], sizeof ids[1]);
    /* Full: never published, so never committed or assigned; and not matched again on
     * every tick (100 ms) meanwhile: each try costs two ticket revisions and an abort
     * record, which fill the buckets in turn (21 aborts in these 2 s without the pause). */
    uint64_t matches = mm_bucket_seq(&env, "matches");
    assert_false(all_in(&env, alloc, ids, 2, ST(ASSIGNED), 2000));
    assert_int_equal(mm_alloc_committed(alloc), 0);
    uint64_t aborts = mm_bucket_seq(&env, "matches") - matches;
    if (aborts > 3)
        fail_msg("%llu matches tried against a full MATCHES in 2 s", (unsigned long long)aborts);
    for (size_t i = 0; i < 2; i++) {
        int st = mm_state(&env, ids[i]);
        assert_true(st == ST(QUEUED) || st == ST(CLAIMED));
    }

    assert_int_equal(gf_fnenv_stream_full(&env, "MATCHES", false), NATS_OK);
    assert_true(all_in(&env, alloc, ids, 2, ST(ASSIGNED), 15000));
    assert_int_equal(mm_alloc_committed(alloc), 1);
    mm_check_clean(&env, 0);

    mm_alloc_free(alloc);
    assert_true(gf_fnenv_stop(&ticker, 15000));
    assert_true(gf_fnenv_stop(&matcher, 15000));
    assert_true(gf_fnenv_stop(&intake, 15000));
    gf_fnenv_free(&env);
}

/* The audit mirror's size limit dropped the first tickets' revisions: the checker must
 * not report the rest as the whole (it did: 4 of 6 tickets, every count 0, GF_OK). */
static void audit_full(void **state)
{
    fixture *f = *state;
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, f->env.js, "AUDIT_TICKETS", NULL, NULL), NATS_OK);
    assert_int_equal(si->Config->Discard, js_DiscardOld);
    si->Config->MaxMsgs = 3;
    assert_int_equal(js_UpdateStream(NULL, f->env.js, si->Config, NULL, NULL), NATS_OK);
    jsStreamInfo_Destroy(si);
    for (int i = 0; i < 6; i++) {
        char key[16], player[16], id[80];
        snprintf(key, sizeof key, "k-audit-%d", i);
        snprintf(player, sizeof player, "aud%d", i);
        mm_ticket t = mm_solo(key, player);
        mm_create_new(&f->env, &t, id, sizeof id);
    }
    gf_mmcheck *m = NULL;
    gf_err err = mm_check_run(&f->env, 0, &m);
    if (err == GF_OK)
        fail_msg("the checker judged %llu tickets as the whole audit",
                 (unsigned long long)m->report->totals.tickets);
    assert_int_equal(err, GF_ERR_TIMEOUT); /* incomplete */
    gf_mmcheck_free(m);
}

int main(void)
{
    gf_log_set_level(GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(players_full, setup, teardown),
        cmocka_unit_test_setup_teardown(tickets_full, setup, teardown),
        cmocka_unit_test(matches_full),
        cmocka_unit_test_setup_teardown(audit_full, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
