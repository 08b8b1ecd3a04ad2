/*
 * test_check_cli.c — the gamefn CLI against the whole matchmaking service (intake,
 * ticker, matcher, allocator, fleet, simulated game servers):
 *   - status, ticket create|get|cancel|watch, their --json, unknown names, NATS
 *     unreachable, no function serving, --help on every command;
 *   - a few hundred tickets driven through intake, then `gamefn check`: every count 0;
 *   - violations planted straight into the buckets (a second claim by CAS, an ASSIGNED
 *     ticket without a commit record, a player in two live tickets, a committed match
 *     beyond a member's skill limit, a ticket left QUEUED past its TTL): each found,
 *     exactly, and the exit code says so.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli_support.h"
#include "fleet_support.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/tickets/request.h"
#include "gamesim.h"
#include "simstack.h"
#include "mm_support.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x

enum { TICKETS = 300 };

typedef struct stack {
    fleet_env e;
    gf_proc fleet, alloc, intake, ticker, matcher;
    gf_gamesim *sim;
} stack;

static void stack_start(stack *s)
{
    memset(s, 0, sizeof *s);
    fleet_env_opts o = {.functions_extra = fleet_duel_functions};
    fleet_env_start(&s->e, &o);
    fleet_env_spawn(&s->e, &s->fleet, FLEET_BIN, "fleet", "f1", NULL);
    fleet_env_spawn(&s->e, &s->alloc, ALLOCATOR_BIN, "allocator", "a1", NULL);
    assert_true(mm_spawn(&s->e.fn, &s->intake, "intake", "i1"));
    assert_true(mm_spawn(&s->e.fn, &s->ticker, "ticker", "t1"));
    assert_true(mm_spawn(&s->e.fn, &s->matcher, "matcher", "m1"));
    gf_gamesim_dc dcs[] = {{.name = "eu", .initial = 16, .max = 16}};
    gf_gamesim_opts so = {.dcs = dcs, .n_dcs = 1, .play_ms = 50};
    assert_int_equal(gf_gamesim_start(s->e.fn.nc, &so, &s->sim), GF_OK);
}

static void stack_stop(stack *s)
{
    gf_gamesim_stop(s->sim);
    s->sim = NULL;
    gf_proc *ps[] = {&s->matcher, &s->ticker, &s->intake, &s->alloc, &s->fleet};
    for (size_t i = 0; i < 5; i++) {
        if (ps[i]->pid) {
            assert_true(gf_fnenv_stop(ps[i], 15000));
            gf_proc_cleanup(ps[i]);
        }
    }
}

/* ---- the CLI's commands ------------------------------------------------------------ */

static json_t *find_named(json_t *list, const char *key, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, key)), name) == 0)
            return x;
    }
    return NULL;
}

static void cli_status(stack *s)
{
    cli_result r = cli_run(&s->e.fn, NULL, "status", "--json", NULL);
    assert_int_equal(r.code, 0);
    json_t *j = cli_json(&r);
    json_t *fns = json_object_get(j, "functions");
    const char *names[] = {"intake", "ticker", "matcher", "allocator", "fleet"};
    for (size_t i = 0; i < 5; i++) {
        json_t *f = find_named(fns, "name", names[i]);
        if (!f)
            fail_msg("status does not list %s:\n%s", names[i], r.out);
        assert_true(json_is_true(json_object_get(f, "healthy")));
    }
    json_t *audit = find_named(json_object_get(j, "streams"), "name", "AUDIT_TICKETS");
    assert_non_null(audit);
    assert_string_equal(json_string_value(json_object_get(audit, "mirror")), "KV_tickets");
    json_t *alloc = find_named(json_object_get(j, "consumers"), "name", "allocator");
    assert_non_null(alloc);
    assert_non_null(json_object_get(alloc, "ack_pending"));
    json_decref(j);
    cli_result_free(&r);

    r = cli_run(&s->e.fn, NULL, "status", NULL);
    cli_expect(&r, 0, "mirror of KV_tickets");
    /* --json on the other commands too. */
    r = cli_run(&s->e.fn, NULL, "services", "--json", NULL);
    assert_int_equal(r.code, 0);
    j = cli_json(&r);
    assert_true(json_array_size(j) >= 5);
    assert_non_null(find_named(j, "name", "allocator"));
    json_decref(j);
    cli_result_free(&r);
    r = cli_run(&s->e.fn, NULL, "provision", "--json", NULL);
    assert_int_equal(r.code, 0);
    j = cli_json(&r);
    assert_true(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    cli_result_free(&r);
    r = cli_run(&s->e.fn, NULL, "check-config", "--json", NULL);
    assert_int_equal(r.code, 0);
    j = cli_json(&r);
    assert_non_null(json_object_get(j, "functions"));
    json_decref(j);
    cli_result_free(&r);
    r = cli_run(&s->e.fn, NULL, "status", "--function", "nope", NULL);
    cli_expect(&r, 4, "no instance of function 'nope'");
    r = cli_run(&s->e.fn, NULL, "status", "--stream", "NOPE", NULL);
    cli_expect(&r, 4, "no stream named 'NOPE'");
    r = cli_run(&s->e.fn, NULL, "status", "--bogus", NULL);
    cli_expect(&r, 2, "see gamefn status --help");
}

/* Creates a ticket through the CLI; its id into id. */
static void cli_create(stack *s, const char *player, char *id, size_t size)
{
    char p[80];
    snprintf(p, sizeof p, "%s:1500", player);
    cli_result r = cli_run(&s->e.fn, NULL, "ticket", "create", "--queue", "duel", "--player", p,
                           "--ping", "eu:20", "--ping", "us:90", "--json", NULL);
    assert_int_equal(r.code, 0);
    json_t *j = cli_json(&r);
    snprintf(id, size, "%s", json_string_value(json_object_get(j, "ticket_id")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "status"), "state")),
                        "QUEUED");
    json_decref(j);
    cli_result_free(&r);
}

/* The last JSON line of a watch: its state. */
static void last_state(const cli_result *r, char *state, size_t size)
{
    char *copy = strdup(r->out), *save = NULL;
    state[0] = 0;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j)
            fail_msg("watch printed a line that is not JSON: %s", line);
        snprintf(state, size, "%s", json_string_value(json_object_get(j, "state")));
        json_decref(j);
    }
    free(copy);
}

static void cli_tickets(stack *s)
{
    char a[80], b[80], state[32];
    cli_create(s, "cli-a", a, sizeof a);
    cli_create(s, "cli-b", b, sizeof b);
    cli_result r =
        cli_run(&s->e.fn, NULL, "ticket", "watch", a, "--json", "--timeout", "30s", NULL);
    assert_int_equal(r.code, 0);
    last_state(&r, state, sizeof state);
    assert_string_equal(state, "ASSIGNED");
    cli_result_free(&r);
    r = cli_run(&s->e.fn, NULL, "ticket", "watch", b, "--timeout", "30s", NULL);
    cli_expect(&r, 0, "ASSIGNED");
    r = cli_run(&s->e.fn, NULL, "ticket", "get", a, "--json", NULL);
    assert_int_equal(r.code, 0);
    json_t *j = cli_json(&r);
    json_t *asg = json_object_get(j, "assignment");
    assert_non_null(asg);
    assert_string_equal(json_string_value(json_object_get(asg, "datacenter")), "eu");
    json_decref(j);
    cli_result_free(&r);
    r = cli_run(&s->e.fn, NULL, "ticket", "get", a, NULL);
    cli_expect(&r, 0, "state     ASSIGNED");
    r = cli_run(&s->e.fn, NULL, "ticket", "cancel", a, NULL);
    cli_expect(&r, 7, "FAILED_PRECONDITION");
    r = cli_run(&s->e.fn, NULL, "ticket", "get", "no-such-ticket", NULL);
    cli_expect(&r, 4, "NOT_FOUND");
    r = cli_run(&s->e.fn, NULL, "ticket", "create", "--queue", "nope", "--player", "x:1", "--ping",
                "eu:20", NULL);
    cli_expect(&r, 4, "unknown queue 'nope'");
    r = cli_run(&s->e.fn, NULL, "ticket", "create", "--queue", "duel", "--player", "x:1", "--ping",
                "mars:20", NULL);
    cli_expect(&r, 4, "unknown datacenter 'mars'");
    r = cli_run(&s->e.fn, NULL, "ticket", "create", "--queue", "duel", "--player", "x", NULL);
    cli_expect(&r, 2, "--player takes ID:RATING");
    r = cli_run(&s->e.fn, NULL, "ticket", "get", "a.b", NULL);
    cli_expect(&r, 2, "not a ticket id");
    r = cli_run(&s->e.fn, NULL, "ticket", "frob", NULL);
    cli_expect(&r, 2, "unknown subcommand 'frob'");
    /* A cancel of a queued ticket, then watching it ends at once. */
    cli_result c = cli_run(&s->e.fn, NULL, "ticket", "create", "--queue", "duel", "--player",
                           "cli-c:9000", "--ping", "us:200", "--key", "cli-c-key", NULL);
    cli_expect(&c, 0, "QUEUED");
    char id[GF_TICKETS_ID_LEN + 1];
    assert_int_equal(gf_tickets_id("cli-c-key", id), GF_OK);
    r = cli_run(&s->e.fn, NULL, "ticket", "cancel", id, NULL);
    cli_expect(&r, 0, "CANCELLED");
    r = cli_run(&s->e.fn, NULL, "ticket", "watch", id, "--timeout", "5s", NULL);
    cli_expect(&r, 0, "CANCELLED");
}

/* NATS unreachable, --help everywhere, unknown commands. */
static void cli_errors(stack *s)
{
    char *away[] = {"GAMEFN_NATS_URL=nats://127.0.0.1:1", NULL};
    cli_result r = cli_run(&s->e.fn, away, "--connect-timeout", "300ms", "status", NULL);
    cli_expect(&r, 3, "cannot connect to NATS at nats://127.0.0.1:1");
    r = cli_run(&s->e.fn, away, "--connect-timeout", "300ms", "check", NULL);
    cli_expect(&r, 3, "cannot connect to NATS");
    r = cli_run(&s->e.fn, away, "--connect-timeout", "300ms", "ticket", "get", "x", NULL);
    cli_expect(&r, 3, "cannot connect to NATS");
    /* The event-log commands: the same exit code and line. */
    const char *const events[][3] = {{"lb", "top", NULL},       {"history", "p1", NULL},
                                     {"dlq", "ls", NULL},       {"lag", NULL, NULL},
                                     {"analytics", NULL, NULL}, {"crashes", NULL, NULL}};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        const char *args[] = {"--connect-timeout", "300ms", events[i][0], events[i][1], NULL};
        r = cli_runv(&s->e.fn, away, args);
        cli_expect(&r, 3, "cannot connect to NATS at nats://127.0.0.1:1");
    }
    const char *cmds[] = {"check-config", "provision", "services", "status",  "ticket",
                          "check",        "emit",      "lb",       "history", "dlq",
                          "lag",          "analytics", "crashes",  "keygen",  "verify-token"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "usage: gamefn %s", cmds[i]);
        r = cli_run(&s->e.fn, away, (char *)(uintptr_t)cmds[i], "--help", NULL);
        cli_expect(&r, 0, want);
    }
    r = cli_run(&s->e.fn, NULL, "frobnicate", NULL);
    cli_expect(&r, 2, "unknown command 'frobnicate'");
    r = cli_run(&s->e.fn, NULL, "check", "--events-log", "/nonexistent/events.log", NULL);
    cli_expect(&r, 4, "cannot open the events log");
    char path[400];
    snprintf(path, sizeof path, "%s/bad-events.log", s->e.fn.dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("gamefn-events-log 1\nack s1 zero\n", f);
    fclose(f);
    r = cli_run(&s->e.fn, NULL, "check", "--events-log", path, NULL);
    cli_expect(&r, 2, "line 2: the sequence");
    r = cli_run(&s->e.fn, NULL, "check", "--since", "yesterday", NULL);
    cli_expect(&r, 2, "--since takes");
}

/* ---- the checker ---------------------------------------------------------------------- */

static void drive(stack *s)
{
    char ids[TICKETS][80];
    for (int i = 0; i < TICKETS; i++) {
        char key[32], player[32];
        snprintf(key, sizeof key, "drive-%d", i);
        snprintf(player, sizeof player, "p-%d", i);
        mm_ticket t = {.key = key,
                       .queue = "duel",
                       .players = {player},
                       .nplayers = 1,
                       .rating = 1500 + i % 7,
                       .pings = "eu:20,us:90"};
        Gamefn__V1__CreateTicketReply *r = NULL;
        assert_int_equal(mm_create(&s->e.fn, &t, &r, NULL, 0), 0);
        snprintf(ids[i], sizeof ids[i], "%s", r->ticket_id);
        gamefn__v1__create_ticket_reply__free_unpacked(r, NULL);
        if (i % 15 == 7) { /* some change their mind, whatever state they reached */
            Gamefn__V1__TicketStatus *st = NULL;
            mm_cancel(&s->e.fn, ids[i], &st);
            if (st)
                gamefn__v1__ticket_status__free_unpacked(st, NULL);
        }
    }
    /* Until every ticket ended (one may wait alone: still QUEUED, so live). */
    int waiting = 0;
    for (int waited = 0; waited <= 30000; waited += 250) {
        waiting = 0;
        for (int i = 0; i < TICKETS; i++) {
            int st = mm_state(&s->e.fn, ids[i]);
            waiting += st != ST(ASSIGNED) && st != ST(CANCELLED);
        }
        if (waiting <= 1)
            break;
        gf_clock_sleep_ms(250);
    }
    assert_true(waiting <= 1);
}

/* gamefn check --out FILE [opt val]: its exit code must be want_code; the JSON. */
static json_t *check_json(stack *s, int want_code, const char *opt, const char *val)
{
    char out[400];
    snprintf(out, sizeof out, "%s/check.json", s->e.fn.dir);
    remove(out);
    cli_result r =
        cli_run(&s->e.fn, NULL, "check", "--out", out, "--examples", "10", opt, val, NULL);
    if (r.code != want_code)
        fail_msg("check exited %d, not %d:\n%s", r.code, want_code, r.out);
    assert_non_null(strstr(r.out, "double_claims"));
    cli_result_free(&r);
    json_error_t err;
    json_t *j = json_load_file(out, 0, &err);
    if (!j)
        fail_msg("%s: %s", out, err.text);
    assert_int_equal(json_integer_value(json_object_get(j, "format")), 1);
    return j;
}

/* Every checked count of a check.json, printed. */
static void print_counts(json_t *j)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(j, "invariants"), i, x)
    {
        fprintf(stderr, "  %s = %lld\n", json_string_value(json_object_get(x, "name")),
                (long long)json_integer_value(json_object_get(x, "count")));
    }
}

/* A ticket record written straight into the bucket (create, or CAS on *rev). */
static void plant(stack *s, const char *id, const char *player, double rating, int state,
                  const char *match, int64_t queued, int64_t expires, uint64_t *rev)
{
    gf_simstack_rec rec = {.ticket_id = id,
                           .player_id = player,
                           .rating = rating,
                           .state = state,
                           .match_id = match,
                           .queued_ms = queued,
                           .now_ms = gf_clock_unix_ms(),
                           .expires_ms = expires};
    rec.lease_ms = rec.now_ms + 120000;
    uint8_t buf[4096];
    size_t len = gf_simstack_record(&rec, buf);
    gf_err err = *rev ? gf_kv_update(s->e.tickets, id, buf, len, *rev, rev)
                      : gf_kv_create(s->e.tickets, id, buf, len, rev);
    assert_int_equal(err, GF_OK);
}

static void plant_commit(stack *s, const char *match, const char *t1, const char *t2)
{
    Gamefn__V1__Assignment a[2] = {GAMEFN__V1__ASSIGNMENT__INIT, GAMEFN__V1__ASSIGNMENT__INIT};
    Gamefn__V1__Assignment *ap[2] = {&a[0], &a[1]};
    const char *ids[2] = {t1, t2};
    for (int i = 0; i < 2; i++) {
        a[i].match_id = (char *)(uintptr_t)match;
        a[i].ticket_id = (char *)(uintptr_t)ids[i];
        a[i].server_id = "planted-server";
        a[i].datacenter = "eu";
        a[i].address = "127.0.0.1";
        a[i].port = 7777;
    }
    Gamefn__V1__MatchOutcome o = GAMEFN__V1__MATCH_OUTCOME__INIT;
    o.match_id = (char *)(uintptr_t)match;
    o.state = GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED;
    o.n_assignments = 2;
    o.assignments = ap;
    o.decided_by = "planted";
    o.decided_unix_ms = gf_clock_unix_ms();
    uint8_t buf[2048];
    size_t len = gamefn__v1__match_outcome__pack(&o, buf);
    assert_int_equal(gf_kv_create(s->e.matches, match, buf, len, NULL), GF_OK);
}

static void plant_violations(stack *s)
{
    int64_t now = gf_clock_unix_ms(), ttl = now + 300000;
    uint64_t rev = 0;
    /* A second claim by compare-and-set, with another match id and no release. */
    plant(s, "plant-dc", "pl-1", 1500, ST(QUEUED), NULL, now, ttl, &rev);
    plant(s, "plant-dc", "pl-1", 1500, ST(CLAIMED), "m-planted-a", now, ttl, &rev);
    plant(s, "plant-dc", "pl-1", 1500, ST(CLAIMED), "m-planted-b", now, ttl, &rev);
    /* ASSIGNED without any commit record. */
    rev = 0;
    plant(s, "plant-nc", "pl-2", 1500, ST(QUEUED), NULL, now, ttl, &rev);
    plant(s, "plant-nc", "pl-2", 1500, ST(CLAIMED), "m-planted-c", now, ttl, &rev);
    plant(s, "plant-nc", "pl-2", 1500, ST(ASSIGNED), "m-planted-c", now, ttl, &rev);
    /* One player in two live tickets. */
    rev = 0;
    plant(s, "plant-2a", "pl-3", 1500, ST(QUEUED), NULL, now, ttl, &rev);
    rev = 0;
    plant(s, "plant-2b", "pl-3", 1500, ST(QUEUED), NULL, now, ttl, &rev);
    /* A committed match 1,000 apart at age 0 (each member's gap: 50). */
    uint64_t ra = 0, rb = 0;
    plant(s, "plant-la", "pl-4", 1000, ST(QUEUED), NULL, now, ttl, &ra);
    plant(s, "plant-lb", "pl-5", 2000, ST(QUEUED), NULL, now, ttl, &rb);
    plant(s, "plant-la", "pl-4", 1000, ST(CLAIMED), "m-planted-l", now, ttl, &ra);
    plant(s, "plant-lb", "pl-5", 2000, ST(CLAIMED), "m-planted-l", now, ttl, &rb);
    plant_commit(s, "m-planted-l", "plant-la", "plant-lb");
    plant(s, "plant-la", "pl-4", 1000, ST(ASSIGNED), "m-planted-l", now, ttl, &ra);
    plant(s, "plant-lb", "pl-5", 2000, ST(ASSIGNED), "m-planted-l", now, ttl, &rb);
    /* QUEUED a minute past its TTL: nobody timed it out. */
    rev = 0;
    plant(s, "plant-lost", "pl-6", 1500, ST(QUEUED), NULL, now - 120000, now - 60000, &rev);
}

static bool example_names(json_t *check, const char *name, const char *needle)
{
    size_t i, k;
    json_t *x, *e;
    json_array_foreach(json_object_get(check, "invariants"), i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, "name")), name) != 0)
            continue;
        json_array_foreach(json_object_get(x, "examples"), k, e)
        {
            if (strstr(json_string_value(e), needle))
                return true;
        }
    }
    return false;
}

static void cli_and_checker(void **state)
{
    (void)state;
    stack s;
    stack_start(&s);
    cli_status(&s);
    cli_tickets(&s);
    cli_errors(&s);

    drive(&s);
    json_t *j = check_json(&s, 0, NULL, NULL);
    if (json_integer_value(json_object_get(j, "broken")) != 0)
        print_counts(j);
    assert_int_equal(json_integer_value(json_object_get(j, "broken")), 0);
    json_t *tot = json_object_get(j, "totals");
    assert_true(json_integer_value(json_object_get(tot, "tickets")) >= TICKETS);
    assert_true(json_integer_value(json_object_get(tot, "matches_committed")) >= 100);
    const char *must[] = {
        "double_claims",          "players_in_two_matches",      "tickets_lost",
        "limit_violations",       "players_in_two_live_tickets", "half_assigned_matches",
        "assigned_without_commit"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        assert_int_equal(cli_check_count(j, must[i]), 0); /* checked, and 0 */
    json_decref(j);

    /* The ticket the intake is gone for: no function serves it. */
    stack_stop(&s);
    cli_result r = cli_run(&s.e.fn, NULL, "ticket", "get", "x", NULL);
    cli_expect(&r, 6, "no function instance serves gamefn.v1.ticket.get");

    int64_t before_plants = gf_clock_unix_ms();
    gf_clock_sleep_ms(5);
    plant_violations(&s);
    j = check_json(&s, 1, NULL, NULL);
    print_counts(j);
    assert_int_equal(cli_check_count(j, "double_claims"), 1);
    assert_true(example_names(j, "double_claims", "plant-dc"));
    assert_int_equal(cli_check_count(j, "assigned_without_commit"), 1);
    assert_true(example_names(j, "assigned_without_commit", "plant-nc"));
    assert_int_equal(cli_check_count(j, "players_in_two_live_tickets"), 1);
    assert_true(example_names(j, "players_in_two_live_tickets", "pl-3"));
    assert_int_equal(cli_check_count(j, "limit_violations"), 1);
    assert_true(example_names(j, "limit_violations", "m-planted-l"));
    assert_int_equal(cli_check_count(j, "tickets_lost"), 1);
    assert_true(example_names(j, "tickets_lost", "plant-lost"));
    assert_int_equal(cli_check_count(j, "players_in_two_matches"), 0);
    assert_int_equal(cli_check_count(j, "half_assigned_matches"), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "broken")), 5);
    json_decref(j);

    /* Text: each broken count by name, and the exit code. */
    r = cli_run(&s.e.fn, NULL, "check", NULL);
    cli_expect(&r, 1, "result: 5 broken");
    /* --since: only what was written from then on; the lost ticket was created before. */
    char since[32];
    snprintf(since, sizeof since, "%lld", (long long)before_plants);
    j = check_json(&s, 1, "--since", since);
    tot = json_object_get(j, "totals");
    assert_int_equal(json_integer_value(json_object_get(tot, "tickets")), 6);
    assert_int_equal(json_integer_value(json_object_get(tot, "tickets_skipped")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "broken")), 4);
    assert_int_equal(cli_check_count(j, "tickets_lost"), 0);
    json_decref(j);
    fleet_env_free(&s.e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cli_and_checker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
