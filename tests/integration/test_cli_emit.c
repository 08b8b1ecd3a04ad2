/*
 * `gamefn emit` against a real nats-server: an event from flags, several from stdin,
 * a bad batch refused whole (exit 2, nothing emitted), NATS unreachable (exit 3, the
 * events spooled and the command saying so), then a run without events publishing
 * what the spool kept (exit 0). The stream holds exactly what was emitted.
 * And the example game server (examples/producer, C++): it runs, and what it says it
 * produced is in the stream, once each.
 */
#define _GNU_SOURCE /* popen */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "harness_util.h"
#include "natsd.h"
#include "producer_check.h"

typedef struct run_result {
    int code;
    char out[4096], err[8192];
} run_result;

static char config_path[400], spool[400], err_path[400];

static void slurp(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(buf, 1, size - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
}

/* Runs `gamefn emit <args>` with stdin_text (may be NULL) against url. */
static void run_emit(const char *url, const char *args, const char *stdin_text, run_result *r)
{
    const char *build = getenv("GAMEFN_BUILD_DIR");
    char in_path[400], cmd[2048];
    snprintf(in_path, sizeof in_path, "%s/stdin.txt", th_tmpdir);
    FILE *in = fopen(in_path, "w");
    assert_non_null(in);
    fputs(stdin_text ? stdin_text : "", in);
    fclose(in);
    snprintf(cmd, sizeof cmd,
             "GAMEFN_NATS_URL=%s %s/tools/gamefn --config %s emit --source cli-gs --spool %s %s "
             "<%s 2>%s",
             url, build ? build : ".", config_path, spool, args, in_path, err_path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(r->out, 1, sizeof r->out - 1, p);
    r->out[n] = '\0';
    int status = pclose(p);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    slurp(err_path, r->err, sizeof r->err);
    remove(in_path);
    remove(err_path);
}

/* The number `key` of the JSON line the command printed. */
static long long json_number(const run_result *r, const char *key)
{
    json_t *j = json_loads(r->out, 0, NULL);
    if (j == NULL)
        fail_msg("not JSON: %s (stderr: %s)", r->out, r->err);
    long long v = json_integer_value(json_object_get(j, key));
    json_decref(j);
    return v;
}

static void emit_from_flags_stdin_and_after_an_outage(void **state)
{
    gf_natsd *srv = NULL;
    gf_natsd_opts o = {.extra_config = pcx_mapping};
    assert_int_equal(gf_natsd_start(&o, &srv), 0);
    char url[64];
    snprintf(url, sizeof url, "%s", gf_natsd_url(srv));
    const char *urls[] = {url};
    natsConnection *nc = th_connect(urls, 1);
    jsCtx *js = th_js(nc);
    pcx_add_events(js, 1, 0);
    snprintf(config_path, sizeof config_path, "%s/gamefn.yaml", th_tmpdir);
    snprintf(spool, sizeof spool, "%s/spool", th_tmpdir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", th_tmpdir);
    FILE *f = fopen(config_path, "w");
    assert_non_null(f);
    fputs("log:\n  level: warn\n", f);
    fclose(f);

    run_result r;
    run_emit(url, "--type kill --player p-alice --victim p-bob --weapon 'rocket launcher' --json",
             NULL, &r);
    if (r.code != 0)
        fail_msg("exit %d: %s", r.code, r.err);
    assert_int_equal(json_number(&r, "acknowledged"), 1);
    assert_int_equal(json_number(&r, "first_seq"), 1);

    run_emit(url, "--stdin --json",
             "# three events\n"
             "player=p1 type=score delta=5 board=weekly\n"
             "\n"
             "player=p2 type=level_up attr=level=7 data=\"x y\"\n"
             "type=server_crash signature=0xdead stack=\"frame 1\\nframe 2\"\n",
             &r);
    if (r.code != 0)
        fail_msg("exit %d: %s", r.code, r.err);
    assert_int_equal(json_number(&r, "emitted"), 3);
    assert_int_equal(json_number(&r, "last_seq"), 4);

    /* One bad line: every problem reported, nothing emitted. */
    run_emit(url, "--stdin",
             "player=p1 type=score delta=1\nplayer=p1 type=score delta=0\nplayer=p.2 type=x\n", &r);
    assert_int_equal(r.code, 2);
    assert_non_null(strstr(r.err, "stdin line 2: score.delta"));
    assert_non_null(strstr(r.err, "stdin line 3: player_id"));
    assert_non_null(strstr(r.err, "nothing emitted"));
    run_emit(url, "--type kill --player p1", NULL, &r); /* no victim */
    assert_int_equal(r.code, 2);
    assert_non_null(strstr(r.err, "kill.victim_player_id"));

    /* NATS away: spooled, said so, exit 3. */
    assert_int_equal(gf_natsd_stop(srv), 0);
    run_emit(url, "--type score --player p3 --delta 2 --timeout 1500 --json", NULL, &r);
    assert_int_equal(r.code, 3);
    assert_int_equal(json_number(&r, "first_seq"), 5); /* the bad batch used no seq */
    assert_int_equal(json_number(&r, "spooled"), 1);
    assert_non_null(strstr(r.err, "spooled in"));
    assert_non_null(strstr(r.err, "not acknowledged"));

    /* Back: a run without events publishes what the spool kept. */
    assert_int_equal(gf_natsd_restart(srv), 0);
    run_emit(url, "--json --timeout 20000", NULL, &r);
    if (r.code != 0)
        fail_msg("exit %d: %s", r.code, r.err);
    assert_int_equal(json_number(&r, "emitted"), 0);
    assert_int_equal(json_number(&r, "replayed"), 1);
    assert_int_equal(json_number(&r, "spooled"), 0);

    pcx_stored s;
    pcx_read(js, "EVENTS", &s);
    assert_int_equal(s.messages, 5);
    pcx_expect(&s, "cli-gs", 1, 5, NULL, 0);
    pcx_free(&s);

    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", spool, config_path);
    assert_int_equal(system(cmd), 0);
}

static void example_game_server_runs(void **state)
{
    gf_natsd *srv = NULL;
    gf_natsd_opts o = {.extra_config = pcx_mapping};
    assert_int_equal(gf_natsd_start(&o, &srv), 0);
    const char *urls[] = {gf_natsd_url(srv)};
    natsConnection *nc = th_connect(urls, 1);
    jsCtx *js = th_js(nc);
    pcx_add_events(js, 1, 0);
    const char *build = getenv("GAMEFN_BUILD_DIR");
    char cmd[2048];
    snprintf(spool, sizeof spool, "%s/killfeed-spool", th_tmpdir);
    snprintf(cmd, sizeof cmd,
             "%s/examples/producer/gamefn-example-killfeed --url %s --source kf-1 --spool %s "
             "--seconds 1 --rate 1000 2>/dev/null",
             build ? build : ".", urls[0], spool);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[1024];
    unsigned long long produced = 0, n;
    while (fgets(line, sizeof line, p)) {
        const char *at = strstr(line, "produced=");
        if (at && sscanf(at, "produced=%llu", &n) == 1)
            produced = n;
    }
    int status = pclose(p);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(produced > 500);
    pcx_stored s;
    pcx_read(js, "EVENTS", &s);
    assert_int_equal(s.messages, produced);
    pcx_expect(&s, "kf-1", 1, produced, NULL, 0);
    pcx_free(&s);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(srv);
    snprintf(cmd, sizeof cmd, "rm -rf %s", spool);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(emit_from_flags_stdin_and_after_an_outage),
        cmocka_unit_test(example_game_server_runs),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
