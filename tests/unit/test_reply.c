/*
 * test_reply.c — where a reply may go (core/reply.h): allowed prefixes, reserved
 * subject spaces that no configuration opens, literal subjects only; which prefixes
 * config accepts; and the guard's counting and bounded logging.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/reply.h"
#include "gamefn/config.h"
#include "gamefn/log.h"

static void default_prefix_allows_inboxes_only(void **state)
{
    static const struct {
        const char *subject;
        bool allowed;
    } cases[] = {
        {"_INBOX.abc", true},
        {"_INBOX.abc.1", true},
        {"_INBOX.", false},    /* nothing after the prefix */
        {"_INBOX", false},     /* the prefix is whole tokens */
        {"_INBOXES.x", false}, /* ... so a longer first token is not under it */
        {"$JS.API.STREAM.DELETE.VICTIM", false},
        {"$JS.ACK.S.c.1.1.1.1.0", false},
        {"$KV.tickets.t1", false},
        {"$SYS.REQ.SERVER.PING", false},
        {"$SRV.PING", false},
        {"gamefn.v1.echo", false},
        {"victim.injected", false},
        {"_INBOX.*", false}, /* wildcards are never a reply subject */
        {"_INBOX.>", false},
        {"_INBOX.a*b", false},
        {"_INBOX..x", false},
        {"_INBOX.a b", false},
        {"_INBOX.a\tb", false},
        {"", false},
        {NULL, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (gf__reply_allowed(cases[i].subject, NULL, 0) != cases[i].allowed)
            fail_msg("'%s': expected %s", cases[i].subject ? cases[i].subject : "(null)",
                     cases[i].allowed ? "allowed" : "refused");
    }
}

static void configured_prefixes(void **state)
{
    const char *const prefixes[] = {"_INBOX.", "_GW.eu1."};
    assert_true(gf__reply_allowed("_GW.eu1.abc", prefixes, 2));
    assert_true(gf__reply_allowed("_INBOX.abc", prefixes, 2));
    assert_false(gf__reply_allowed("_GW.eu2.abc", prefixes, 2));
    /* A reserved space stays closed even if a prefix (bypassing config) says otherwise. */
    const char *const bad[] = {"$JS.", "gamefn."};
    assert_false(gf__reply_allowed("$JS.API.STREAM.DELETE.X", bad, 2));
    assert_false(gf__reply_allowed("gamefn.v1.ticket.status.x", bad, 2));
}

static void prefix_problems(void **state)
{
    static const struct {
        const char *prefix;
        const char *problem; /* NULL: accepted */
    } cases[] = {
        {"_INBOX.", NULL},          {"_GW.eu1.", NULL},       {"replies.", NULL},
        {"", "is empty"},           {NULL, "is empty"},       {"_INBOX", "must end with '.'"},
        {"_INBOX.>.", "literal"},   {"_INBOX.*.", "literal"}, {".", "literal"},
        {"a..", "literal"},         {"a b.", "literal"},      {"$JS.", "reserved"},
        {"$JS.API.", "reserved"},   {"$KV.", "reserved"},     {"$O.", "reserved"},
        {"$SYS.", "reserved"},      {"$SRV.", "reserved"},    {"gamefn.", "reserved"},
        {"gamefn.v1.", "reserved"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = gf__reply_prefix_problem(cases[i].prefix);
        if (!cases[i].problem && got)
            fail_msg("'%s' refused: %s", cases[i].prefix, got);
        if (cases[i].problem && (!got || !strstr(got, cases[i].problem)))
            fail_msg("'%s': expected '%s', got '%s'", cases[i].prefix ? cases[i].prefix : "(null)",
                     cases[i].problem, got ? got : "(accepted)");
    }
}

/* runtime.reply_prefixes: default, a good list, and refusals with file:line:column. */
static void config_reply_prefixes(void **state)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    const char *yaml = "log: {}\n";
    assert_int_equal(gf_config_load_string("t.yaml", yaml, strlen(yaml), NULL, &cfg, &err), GF_OK);
    assert_int_equal(cfg->runtime.reply_prefixes_len, 1);
    assert_string_equal(cfg->runtime.reply_prefixes[0], "_INBOX.");
    gf_config_free(cfg);

    yaml = "runtime:\n  reply_prefixes: [\"_INBOX.\", \"_GW.eu1.\"]\n";
    assert_int_equal(gf_config_load_string("t.yaml", yaml, strlen(yaml), NULL, &cfg, &err), GF_OK);
    assert_int_equal(cfg->runtime.reply_prefixes_len, 2);
    gf_config_free(cfg);

    yaml = "runtime:\n  reply_prefixes: [\"_INBOX.\", \"$JS.API.\"]\n";
    assert_int_equal(gf_config_load_string("t.yaml", yaml, strlen(yaml), NULL, &cfg, &err),
                     GF_ERR_CONFIG);
    assert_null(cfg);
    assert_string_equal(err.key, "runtime.reply_prefixes");
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.text, "entry 1 is in a reserved subject space"));

    yaml = "runtime:\n  reply_prefixes: []\n";
    assert_int_equal(gf_config_load_string("t.yaml", yaml, strlen(yaml), NULL, &cfg, &err),
                     GF_ERR_CONFIG);
    assert_string_equal(err.key, "runtime.reply_prefixes");
}

/* The guard counts every refusal but logs one line per period, saying how many it did
 * not log. */
static void guard_counts_and_logs_at_a_bounded_rate(void **state)
{
    static char buf[8192];
    FILE *log = tmpfile();
    assert_non_null(log);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fileno(log), STDERR_FILENO); /* gf_log writes to stderr */
    gf__reply_guard g;
    gf__reply_guard_init(&g, NULL, 0, "endpoint-t");
    int refused = 0;
    for (int i = 0; i < 1000; i++)
        refused += !gf__reply_guard_check(&g, "$JS.API.STREAM.DELETE.X");
    bool inbox_ok = gf__reply_guard_check(&g, "_INBOX.x");
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(log);
    size_t n = fread(buf, 1, sizeof buf - 1, log);
    buf[n] = '\0';
    fclose(log);

    assert_int_equal(refused, 1000);
    assert_true(inbox_ok);
    assert_int_equal(atomic_load(&g.refused), 1000);
    assert_int_equal(atomic_load(&g.unlogged), 999);
    int lines = 0;
    for (const char *p = buf; (p = strstr(p, "reply refused")) != NULL; p++)
        lines++;
    assert_int_equal(lines, 1);
    assert_non_null(strstr(buf, "where=endpoint-t"));
}

int main(void)
{
    gf_log_init("test_reply", GF_LOG_INFO);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_prefix_allows_inboxes_only),
        cmocka_unit_test(configured_prefixes),
        cmocka_unit_test(prefix_problems),
        cmocka_unit_test(config_reply_prefixes),
        cmocka_unit_test(guard_counts_and_logs_at_a_bounded_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
