/*
 * test_storage_full.c — ticket.create when JetStream has no room: the players or the
 * tickets bucket at its max_bytes (discard new, as every KV bucket: the server answers
 * 10077 "maximum bytes exceeded"). The request gets RESOURCE_EXHAUSTED with a
 * retry_after, nothing of it stays behind (no ticket without its players records, no
 * players record without its ticket), and once the bucket has room again the same
 * request creates the ticket. The independent checker then finds the audit clean.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/log.h"
#include "gamefn/tickets/players.h"
#include "gamefn/v1/error.pb-c.h"
#include "mm_support.h"

#define E(x) GAMEFN__V1__ERROR_CODE__ERROR_CODE_##x

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

/* KV_<bucket>'s max_bytes: 1 leaves no room for any message, -1 is unlimited. */
static void bucket_max_bytes(fixture *f, const char *bucket, int64_t max_bytes)
{
    char stream[64];
    jsStreamInfo *si = NULL;
    snprintf(stream, sizeof stream, "KV_%s", bucket);
    assert_int_equal(js_GetStreamInfo(&si, f->env.js, stream, NULL, NULL), NATS_OK);
    assert_int_equal(si->Config->Discard, js_DiscardNew);
    si->Config->MaxBytes = max_bytes;
    assert_int_equal(js_UpdateStream(NULL, f->env.js, si->Config, NULL, NULL), NATS_OK);
    jsStreamInfo_Destroy(si);
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
    bucket_max_bytes(f, "players", 1);
    create_refused(f, &t, "players");
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), tickets); /* no ticket written */
    no_record(f, "pat");

    bucket_max_bytes(f, "players", -1);
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
    bucket_max_bytes(f, "tickets", 1);
    create_refused(f, &party, "tickets");
    assert_int_equal(mm_bucket_seq(&f->env, "tickets"), tickets);
    no_record(f, "quinn");
    no_record(f, "rose");

    /* Room again: the same request creates the ticket (a different key for one of the
     * players would work too: nothing holds them). */
    bucket_max_bytes(f, "tickets", -1);
    char id[80];
    mm_create_new(&f->env, &party, id, sizeof id);
    record_names(f, "quinn", id);
    record_names(f, "rose", id);
    mm_check_clean(&f->env, 0);
}

int main(void)
{
    gf_log_set_level(GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(players_full, setup, teardown),
        cmocka_unit_test_setup_teardown(tickets_full, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
