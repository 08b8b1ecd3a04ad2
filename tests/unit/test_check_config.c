/*
 * test_check_config.c — `gamefn check-config` checks every `functions.<name>` section
 * with the table its function registered (tools/gamefn/functions.c): good sections
 * pass, a broken one fails at its file:line:column with the full key, and a name no
 * function has is reported (with the closest known name when there is one).
 */
#include "test_config_util.h"

#include <unistd.h>

#include "cli.h"
#include "letter.h"

static char path[64];

static gf_err check(const char *yaml, gf_config_error *err)
{
    snprintf(path, sizeof path, "/tmp/gamefn-check-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, yaml, strlen(yaml)), (ssize_t)strlen(yaml));
    close(fd);
    size_t n = 0;
    const gf_config_section *sections = gf_cli_functions(&n);
    gf_config *cfg = NULL;
    gf_err rc = gf_config_load_all(path, sections, n, &cfg, err);
    if (rc == GF_OK)
        assert_null(cfg->function);
    gf_config_free(cfg);
    unlink(path);
    return rc;
}

#define MATCHER_OK                                                                                 \
    "  matcher:\n"                                                                                 \
    "    matchmaking:\n"                                                                           \
    "      datacenters: [{name: eu-west, region: eu}]\n"                                           \
    "      queues:\n"                                                                              \
    "        - {name: duel, mode: hybrid, shape: 1v1}\n"

static void registry_knows_every_function(void **state)
{
    static const char *const expected[] = {"echo",  "intake",    "ticker", "matcher",
                                           "fleet", "allocator", "dlq",    "leaderboard",
                                           "lag",   "analytics", "crashes"};
    size_t n = 0;
    const gf_config_section *s = gf_cli_functions(&n);
    assert_int_equal(n, sizeof expected / sizeof expected[0]);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(s[i].name, expected[i]);
    for (size_t i = 0; i < n; i++) {
        gf_config_error err;
        if (gf_config_table_check(s[i].table, &err) != GF_OK)
            fail_msg("table of %s: %s", s[i].name, err.message);
    }
}

static void good_sections_pass(void **state)
{
    gf_config_error err;
    assert_int_equal(check("log: {}\n", &err), GF_OK);
    assert_int_equal(check("functions:\n  echo:\n    max_payload: 1KiB\n" MATCHER_OK, &err), GF_OK);
    assert_int_equal(check("functions:\n  echo:\n" MATCHER_OK, &err), GF_OK);
}

static void shipped_config_passes(void **state)
{
    gf_config_error err;
    size_t n = 0;
    const gf_config_section *sections = gf_cli_functions(&n);
    gf_config *cfg = NULL;
    char shipped[512];
    snprintf(shipped, sizeof shipped, "%s/config/gamefn.yaml", GAMEFN_SOURCE_DIR);
    if (gf_config_load_all(shipped, sections, n, &cfg, &err) != GF_OK)
        fail_msg("%s", err.message);
    gf_config_free(cfg);
}

/* The mover's scope: by default the streams gamefn's own durables read, else the list. */
static void dlq_moves_only_its_streams(void **state)
{
    dlq_config c;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    assert_int_equal(gf_config_parse_table("d", "", 0, &dlq_config_table, &c, &arena, &err), GF_OK);
    assert_int_equal(c.streams_len, 3);
    assert_true(dlq_stream_moved(&c, "EVENTS"));
    assert_true(dlq_stream_moved(&c, "MATCHES"));
    assert_true(dlq_stream_moved(&c, "ADVISORIES"));
    assert_false(dlq_stream_moved(&c, "KV_leaderboard"));
    assert_false(dlq_stream_moved(&c, "events"));
    gf_config_arena_free(arena);
    const char *yaml = "streams: [TEST_JOBS]\n";
    assert_int_equal(
        gf_config_parse_table("d", yaml, strlen(yaml), &dlq_config_table, &c, &arena, &err), GF_OK);
    assert_true(dlq_stream_moved(&c, "TEST_JOBS"));
    assert_false(dlq_stream_moved(&c, "EVENTS"));
    gf_config_arena_free(arena);
}

typedef struct bad_case {
    const char *yaml;
    int line, column;
    const char *key;
    const char *text;
} bad_case;

static const bad_case bad[] = {
    {"functions:\n  echo:\n    max_payload: lots\n", 3, 18, "functions.echo.max_payload",
     "'lots' is not a size"},
    {"functions:\n  echo:\n    max_paylod: 1KiB\n", 3, 5, "functions.echo.max_paylod",
     "did you mean 'max_payload'"},
    {"functions:\n  echo: [1]\n", 2, 9, "functions.echo", "expected mapping"},
    {"functions:\n" MATCHER_OK "        - {name: ffa, shape: 5v4}\n", 7, 30,
     "functions.matcher.matchmaking.queues[1].shape", "'5v4' is not a shape"},
    {"functions:\n  matcher:\n    matchmaking:\n      queues: [{name: q, shape: 1v1}]\n", 4, 7,
     "functions.matcher.matchmaking.datacenters", "required key is missing"},
    {"functions:\n  intake:\n    concurrency: 0\n", 3, 18, "functions.intake.concurrency",
     "out of range"},
    {"functions:\n  fleet:\n    datacenters: [{name: eu, floor: 9, ceiling: 2}]\n"
     "    join_keys: [{key_id: k, public_key: p}]\n",
     3, 37, "functions.fleet.datacenters[0].floor", "above ceiling"},
    {"functions:\n  allocator:\n    key_id: k\n", 3, 5, "functions.allocator.signing_key",
     "required key is missing"},
    {"functions:\n  echo: {}\n  echoo: {}\n", 3, 3, "functions.echoo",
     "unknown function 'echoo' (did you mean 'echo'?)"},
    {"functions:\n  nonesuch: {}\n", 2, 3, "functions.nonesuch",
     "unknown function 'nonesuch' (known: echo, intake, ticker, matcher, fleet, allocator, dlq, "
     "leaderboard, lag, analytics, crashes)"},
    {"functions:\n  leaderboard: {}\n", 2, 16, "functions.leaderboard.boards",
     "required key is missing"},
    {"functions:\n  leaderboard:\n    boards: [{name: a}, {name: a}]\n", 3, 13,
     "functions.leaderboard.boards", "listed twice"},
    {"functions:\n  leaderboard:\n    boards: [{name: a, operator: max}]\n", 3, 34,
     "functions.leaderboard.boards[0].operator", "max"},
    {"functions:\n  lag:\n    warning: 10\n    critical: 5\n", 4, 15, "functions.lag.critical",
     "must be at least warning (10)"},
    {"functions:\n  echo: {}\n  echo: {}\n", 3, 3, "functions.echo", "duplicate key"},
    /* the dead-letter mover's streams: names, each once, at least one */
    {"functions:\n  dlq:\n    streams: [EVENTS, \"bad stream\"]\n", 3, 14, "functions.dlq.streams",
     "stream name contains whitespace"},
    {"functions:\n  dlq:\n    streams: [EVENTS, MATCHES, EVENTS]\n", 3, 14, "functions.dlq.streams",
     "stream 'EVENTS' is listed twice"},
    {"functions:\n  dlq:\n    streams: []\n", 3, 14, "functions.dlq.streams", "list has 0 entries"},
    /* bucket names, worded once (gf_cfg_bucket_ok) whichever section names one */
    {"functions:\n  lag:\n    lease_bucket: a.b\n", 3, 19, "functions.lag.lease_bucket",
     "bucket name may hold only letters, digits, '_' and '-'"},
    {"functions:\n  analytics:\n    bucket: a.b\n", 3, 13, "functions.analytics.bucket",
     "bucket name may hold only letters, digits, '_' and '-'"},
};

static void broken_sections_fail_where_they_are(void **state)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gf_config_error err;
        if (check(bad[i].yaml, &err) != GF_ERR_CONFIG)
            fail_msg("case %zu passed", i);
        if (err.line != bad[i].line || err.column != bad[i].column ||
            strcmp(err.key, bad[i].key) != 0 || !strstr(err.text, bad[i].text))
            fail_msg("case %zu: got %s", i, err.message);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_knows_every_function),
        cmocka_unit_test(good_sections_pass),
        cmocka_unit_test(shipped_config_passes),
        cmocka_unit_test(dlq_moves_only_its_streams),
        cmocka_unit_test(broken_sections_fail_where_they_are),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
