/*
 * bench_support.c — see bench_support.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench_support.h"
#include "gamefn/clock.h"

enum { MAX_ARGS = 32 };

void bench_binary(char *buf, size_t size)
{
    const char *build = getenv("GAMEFN_BUILD_DIR");
    snprintf(buf, size, "%s/bench/gamefn-bench", build ? build : "build");
}

void bench_spawn(gf_proc *p, char *log, char *const args[])
{
    static char bench[512];
    bench_binary(bench, sizeof bench);
    char *argv[MAX_ARGS + 2] = {bench};
    size_t n = 0;
    while (args[n] && n < MAX_ARGS) {
        argv[n + 1] = args[n];
        n++;
    }
    argv[n + 1] = NULL;
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(gf_proc_spawn(p, argv, NULL, log), 0);
}

const char *bench_output(const gf_proc *p, char *buf, size_t size)
{
    FILE *f = fopen(p->log_path, "r");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

bool bench_wait_output(const gf_proc *p, const char *needle, int timeout_ms, char *buf, size_t size)
{
    int64_t deadline = gf_clock_mono_ms() + timeout_ms;
    while (!strstr(bench_output(p, buf, size), needle)) {
        if (gf_clock_mono_ms() > deadline)
            return false;
        gf_clock_sleep_ms(50);
    }
    return true;
}

json_t *bench_json_line(const char *out)
{
    /* The last '{' that starts a line: nested objects start mid-line. */
    const char *line = NULL;
    for (const char *at = strchr(out, '{'); at; at = strchr(at + 1, '{'))
        if (at == out || at[-1] == '\n')
            line = at;
    return line ? json_loads(line, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
}

json_t *bench_finish(gf_proc *p, int timeout_ms, char *buf, size_t size)
{
    assert_int_equal(gf_proc_wait(p, timeout_ms), 0);
    bench_output(p, buf, size);
    if (!gf_proc_exited_with(p, 0))
        fail_msg("exit status 0x%x:\n%s", (unsigned)p->exit_status, buf);
    json_t *j = bench_json_line(buf);
    if (!j)
        fail_msg("no JSON line last:\n%s", buf);
    return j;
}

void bench_expect_usage_error(const char *bench, const char *option, const char *value,
                              const char *want)
{
    static char out[1 << 14];
    char log[] = "/tmp/gamefn-bench-usage-XXXXXX";
    char b[64], o[64], v[64]; /* argv wants char *: copies, not casts */
    snprintf(b, sizeof b, "%s", bench);
    snprintf(o, sizeof o, "%s", option);
    snprintf(v, sizeof v, "%s", value);
    char *args[] = {b, o, v, NULL};
    gf_proc p = {0};
    bench_spawn(&p, log, args);
    assert_int_equal(gf_proc_wait(&p, 10000), 0);
    bench_output(&p, out, sizeof out);
    if (!gf_proc_exited_with(&p, 2) || !strstr(out, want) || !strstr(out, "usage:"))
        fail_msg("%s %s %s: want exit 2 and '%s', got 0x%x:\n%s", bench, option, value, want,
                 (unsigned)p.exit_status, out);
    unlink(log);
}

double bench_number(const json_t *j, const char *key)
{
    const json_t *v = json_object_get(j, key);
    if (!json_is_number(v))
        fail_msg("the JSON line has no number '%s'", key);
    return json_number_value(v);
}
