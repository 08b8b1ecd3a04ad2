/* logfmt output: one line per event, quoting, levels. Captures stderr through a pipe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gamefn/log.h"

/* Runs `emit` with stderr redirected into buf. */
static void capture(void (*emit)(void), char *buf, size_t size)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    emit();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(fds[1]);
    ssize_t n = read(fds[0], buf, size - 1);
    close(fds[0]);
    buf[n > 0 ? n : 0] = '\0';
}

static void emit_info(void)
{
    gf_log_init("matcher", GF_LOG_INFO);
    gf_log_info("claim lost", "ticket=%s tries=%d", "t-42", 3);
    gf_log_debug("not shown", "");
}

static void line_has_logfmt_fields(void **state)
{
    char out[1024];
    capture(emit_info, out, sizeof out);
    assert_non_null(strstr(out, "ts="));
    assert_non_null(strstr(out, " level=info fn=matcher msg=\"claim lost\" ticket=t-42 tries=3\n"));
    assert_null(strstr(out, "not shown"));
    /* Exactly one line. */
    assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
}

static void emit_long(void)
{
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gf_log_init("t", GF_LOG_DEBUG);
    gf_log_warn("long", "v=%s", big);
}

static void long_lines_are_truncated_not_split(void **state)
{
    char out[8192];
    capture(emit_long, out, sizeof out);
    size_t len = strlen(out);
    assert_true(len < 2048);
    assert_int_equal(out[len - 1], '\n');
    assert_ptr_equal(strchr(out, '\n'), out + len - 1);
    assert_non_null(strstr(out, "\xe2\x80\xa6\n")); /* the truncation mark */
}

static void quoting_escapes_and_truncates(void **state)
{
    static const struct {
        const char *in;
        const char *want;
    } rows[] = {
        {"plain", "\"plain\""},
        {"a \"b\" c", "\"a \\\"b\\\" c\""},
        {"back\\slash", "\"back\\\\slash\""},
        {"two\nlines\tand\x01", "\"two\\nlines\\tand\\x01\""},
        {"", "\"\""},
        {NULL, "\"\""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char buf[64];
        assert_string_equal(gf_log_quote(buf, sizeof buf, rows[i].in), rows[i].want);
    }
    char small[8];
    gf_log_quote(small, sizeof small, "abcdefghij");
    assert_string_equal(small, "\"abcde\"");
    char tiny[2] = "z";
    gf_log_quote(tiny, sizeof tiny, "abc");
    assert_string_equal(tiny, "");
}

static void levels_parse_and_name(void **state)
{
    static const char *const names[] = {"debug", "info", "warn", "error", "off"};
    for (int i = 0; i < 5; i++) {
        gf_log_level lvl;
        assert_int_equal(gf_log_level_parse(names[i], &lvl), 0);
        assert_int_equal(lvl, i);
        assert_string_equal(gf_log_level_name(lvl), names[i]);
    }
    gf_log_level lvl = GF_LOG_INFO;
    assert_int_equal(gf_log_level_parse("verbose", &lvl), -1);
    assert_int_equal(gf_log_level_parse(NULL, &lvl), -1);
    assert_int_equal(gf_log_level_parse("INFO", &lvl), -1);
    assert_string_equal(gf_log_level_name((gf_log_level)42), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(line_has_logfmt_fields),
        cmocka_unit_test(long_lines_are_truncated_not_split),
        cmocka_unit_test(quoting_escapes_and_truncates),
        cmocka_unit_test(levels_parse_and_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
