/* cli_support.c — see cli_support.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "cli_support.h"

cli_result cli_runv(gf_fnenv *e, char *const env[], const char *const *args)
{
    static int serial;
    char bin[512], log[400];
    char *argv[40];
    size_t n = 0;
    gf_fnenv_binary("tools/gamefn", bin, sizeof bin);
    snprintf(log, sizeof log, "%s/cli-%d.log", e->dir, ++serial);
    argv[n++] = bin;
    argv[n++] = "--config";
    argv[n++] = e->config_path;
    for (size_t i = 0; args[i] && n < 39; i++)
        argv[n++] = (char *)(uintptr_t)args[i];
    argv[n] = NULL;
    gf_proc p = {0};
    cli_result r = {-1, NULL};
    assert_int_equal(gf_proc_spawn(&p, argv, env, log), 0);
    if (gf_proc_wait(&p, 60000) == 0 && WIFEXITED(p.exit_status))
        r.code = WEXITSTATUS(p.exit_status);
    gf_proc_cleanup(&p);
    FILE *f = fopen(log, "rb");
    size_t cap = 0;
    if (f) {
        if (getdelim(&r.out, &cap, '\0', f) < 0) {
            free(r.out);
            r.out = NULL;
        }
        fclose(f);
    }
    if (!r.out)
        r.out = strdup("");
    return r;
}

cli_result cli_run(gf_fnenv *e, char *const env[], ...)
{
    const char *args[36];
    size_t n = 0;
    va_list ap;
    va_start(ap, env);
    for (const char *a = va_arg(ap, const char *); a && n < 35; a = va_arg(ap, const char *))
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    return cli_runv(e, env, args);
}

void cli_result_free(cli_result *r)
{
    free(r->out);
    r->out = NULL;
}

void cli_expect(cli_result *r, int code, const char *text)
{
    if (r->code != code || (text && !strstr(r->out, text)))
        fail_msg("expected exit %d%s%s, got %d:\n%s", code, text ? " and " : "", text ? text : "",
                 r->code, r->out);
    cli_result_free(r);
}

json_t *cli_json(const cli_result *r)
{
    /* stderr shares the log: progress lines ("reading AUDIT_TICKETS: 7,910 of 20,000
     * messages", printed when a read takes long, as on a loaded machine) come before the
     * document, which stdout's buffer writes at exit. Parse from the first line that
     * opens a JSON value, up to the end of that value. */
    const char *start = r->out;
    while (*start && *start != '{' && *start != '[') {
        const char *nl = strchr(start, '\n');
        start = nl ? nl + 1 : start + strlen(start);
    }
    json_error_t err;
    json_t *j = json_loads(start, JSON_DISABLE_EOF_CHECK, &err);
    if (!j)
        fail_msg("not JSON (%s at line %d): %s", err.text, err.line, r->out);
    return j;
}

json_t *cli_json_line(const cli_result *r)
{
    for (const char *line = r->out; line && *line;) {
        const char *nl = strchr(line, '\n');
        if (*line == '{' || *line == '[') {
            json_error_t err;
            json_t *j = json_loadb(line, nl ? (size_t)(nl - line) : strlen(line), 0, &err);
            if (!j)
                fail_msg("not JSON (%s): %s", err.text, r->out);
            return j;
        }
        line = nl ? nl + 1 : NULL;
    }
    fail_msg("no JSON line in: %s", r->out);
    return NULL;
}

long long cli_check_count(json_t *check, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(check, "invariants"), i, x)
    {
        if (strcmp(json_string_value(json_object_get(x, "name")), name) == 0)
            return (long long)json_integer_value(json_object_get(x, "count"));
    }
    return -1;
}
