/*
 * test_harness.c — the test harness itself against real nats-server processes:
 * child processes are reaped and die with their parent, servers start, stop,
 * restart and keep their JetStream data, and nothing (process or directory) is
 * left behind. Clusters: test_harness_cluster.c.
 *
 * Design notes:
 * - The whole run uses a private TMPDIR, so "every directory removed" is checked
 *   by that directory being empty at the end, and the process is made a child
 *   subreaper, so "every process gone" is checked by waitpid(-1) finding no child
 *   at all (a leaked server would be our child or zombie either way).
 * - The orphan test runs first, while nats.c has started no threads, because it
 *   forks a copy of this process that starts a server and exits without cleanup.
 */
#define _XOPEN_SOURCE 700 /* nftw */

#include <errno.h>
#include <ftw.h>
#include <nats/nats.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "harness_util.h"
#include "natsd.h"
#include "proc.h"

/* ---- proc.h ---- */

static void test_orphaned_server_dies(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t mid = fork();
    assert_true(mid >= 0);
    if (mid == 0) {
        /* A "test" that crashes: starts a server, never stops it. */
        gf_natsd *s = NULL;
        close(fds[0]);
        if (gf_natsd_start(NULL, &s) != 0)
            _exit(1);
        pid_t spid = gf_natsd_pid(s);
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", gf_natsd_dir(s));
        if (write(fds[1], &spid, sizeof spid) != (ssize_t)sizeof spid ||
            write(fds[1], dir, sizeof dir) != (ssize_t)sizeof dir)
            _exit(2);
        _exit(0);
    }
    close(fds[1]);
    pid_t spid = 0;
    char dir[4096] = "";
    assert_int_equal(read(fds[0], &spid, sizeof spid), (ssize_t)sizeof spid);
    assert_int_equal(read(fds[0], dir, sizeof dir), (ssize_t)sizeof dir);
    close(fds[0]);
    int st = 0;
    assert_int_equal(waitpid(mid, &st, 0), mid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* We are a subreaper, so the orphaned server is now our child: it must have
     * been SIGKILLed by PR_SET_PDEATHSIG. */
    pid_t r = 0;
    for (long long deadline = gf_clock_mono_ms() + 5000; r == 0 && gf_clock_mono_ms() < deadline;) {
        r = waitpid(spid, &st, WNOHANG);
        if (r == 0)
            nats_Sleep(10);
    }
    assert_int_equal(r, spid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    assert_true(th_pid_gone(spid));

    /* The crashed "test" left its directory. The next start sweeps it, but leaves
     * alone a directory without an owner file and one whose owner (we) still runs. */
    assert_true(th_path_exists(dir));
    char manual[512];
    snprintf(manual, sizeof manual, "%s/gamefn-natsd-manual", th_tmpdir);
    assert_int_equal(mkdir(manual, 0700), 0);
    gf_natsd *a = NULL, *b = NULL;
    assert_int_equal(gf_natsd_start(NULL, &a), 0);
    assert_false(th_path_exists(dir));
    assert_true(th_path_exists(manual));
    assert_int_equal(gf_natsd_start(NULL, &b), 0);
    assert_true(th_path_exists(gf_natsd_dir(a)));
    gf_natsd_free(b);
    gf_natsd_free(a);
    nftw(manual, th_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    assert_int_equal(th_count_entries(th_tmpdir), 0);
    th_assert_no_children();
}

static void test_proc_spawn_wait_signal(void **state)
{
    (void)state;
    gf_proc p;
    char log[512];
    snprintf(log, sizeof log, "%s/proc.log", th_tmpdir);

    char *const exit3[] = {"/bin/sh", "-c", "echo hello-from-child; exit 3", NULL};
    assert_int_equal(gf_proc_spawn(&p, exit3, NULL, log), 0);
    assert_true(p.pid > 0);
    assert_int_equal(gf_proc_wait(&p, 5000), 0);
    assert_int_equal(p.pid, 0);
    assert_true(gf_proc_exited_with(&p, 3));
    assert_false(gf_proc_exited_with(&p, 0));
    char how[64];
    gf_proc_describe(&p, how, sizeof how);
    assert_string_equal(how, "exited with status 3");
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[128] = "";
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "hello-from-child\n");

    /* Extra env entries are added, and replace inherited ones with the same key. */
    setenv("GF_HARNESS_T", "inherited", 1);
    char *const envcheck[] = {"sh", "-c", "test \"$GF_HARNESS_T\" = over && test \"$GF_X\" = 1",
                              NULL};
    char *const env[] = {"GF_HARNESS_T=over", "GF_X=1", NULL};
    assert_int_equal(gf_proc_spawn(&p, envcheck, env, NULL), 0); /* found on PATH */
    assert_int_equal(gf_proc_wait(&p, 5000), 0);
    assert_true(gf_proc_exited_with(&p, 0));
    unsetenv("GF_HARNESS_T");

    /* Signal, wait with a timeout that expires, then a reap. */
    char *const sleeper[] = {"/bin/sleep", "30", NULL};
    assert_int_equal(gf_proc_spawn(&p, sleeper, NULL, NULL), 0);
    pid_t pid = p.pid;
    assert_true(gf_proc_running(&p));
    assert_int_equal(gf_proc_wait(&p, 50), -1);
    char want[64];
    snprintf(want, sizeof want, "still running (pid %d)", (int)pid);
    gf_proc_describe(&p, how, sizeof how);
    assert_string_equal(how, want);
    assert_int_equal(gf_proc_signal(&p, SIGTERM), 0);
    assert_int_equal(gf_proc_wait(&p, 5000), 0);
    assert_true(WIFSIGNALED(p.exit_status) && WTERMSIG(p.exit_status) == SIGTERM);
    gf_proc_describe(&p, how, sizeof how);
    assert_string_equal(how, "killed by signal 15 (Terminated)");
    assert_false(gf_proc_running(&p));
    assert_true(th_pid_gone(pid));
    assert_int_equal(gf_proc_signal(&p, SIGTERM), 0); /* reaped: no-op, never a stray kill */

    assert_int_equal(gf_proc_spawn(&p, sleeper, NULL, NULL), 0);
    pid = p.pid;
    gf_proc_cleanup(&p);
    assert_int_equal(p.pid, 0);
    assert_true(th_pid_gone(pid));
    gf_proc_cleanup(&p); /* idempotent */

    /* A program that does not exist fails at spawn, leaving no child. */
    char *const missing[] = {"/nonexistent/gamefn-no-such-binary", NULL};
    assert_int_equal(gf_proc_spawn(&p, missing, NULL, NULL), -1);
    char *const not_on_path[] = {"gamefn-no-such-binary", NULL};
    assert_int_equal(gf_proc_spawn(&p, not_on_path, NULL, NULL), -1);
    assert_int_equal(gf_proc_spawn(&p, NULL, NULL, NULL), -1);
    unlink(log);
    th_assert_no_children();
}

/* ---- single server ---- */

static void test_single_start_stop(void **state)
{
    (void)state;
    gf_natsd *s = NULL;
    assert_int_equal(gf_natsd_start(NULL, &s), 0);
    assert_non_null(s);
    pid_t pid = gf_natsd_pid(s);
    assert_true(pid > 0);
    assert_int_equal(kill(pid, 0), 0);
    char url[64];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", gf_natsd_port(s));
    assert_string_equal(gf_natsd_url(s), url);
    assert_true(gf_natsd_monitor_port(s) > 0);
    assert_int_not_equal(gf_natsd_monitor_port(s), gf_natsd_port(s));
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", gf_natsd_dir(s));
    assert_true(strncmp(dir, th_tmpdir, strlen(th_tmpdir)) == 0);
    assert_true(th_path_exists(gf_natsd_log_path(s)));

    json_t *varz = NULL;
    assert_int_equal(gf_natsd_monitor_json(s, "/varz", &varz), 0);
    assert_string_equal(json_string_value(json_object_get(varz, "server_name")), gf_natsd_name(s));
    assert_string_equal(json_string_value(json_object_get(varz, "host")), "127.0.0.1");
    char version[32];
    assert_int_equal(gf_natsd_probe_version(gf_natsd_url(s), version, sizeof version), 0);
    assert_string_equal(version, json_string_value(json_object_get(varz, "version")));
    json_decref(varz);

    const char *urls[] = {gf_natsd_url(s)};
    natsConnection *nc = th_connect(urls, 1);
    assert_int_equal(natsConnection_Flush(nc), NATS_OK);
    natsConnection_Destroy(nc);

    assert_int_equal(gf_natsd_stop(s), 0);
    assert_int_equal(gf_natsd_pid(s), 0);
    assert_true(th_pid_gone(pid));
    assert_int_equal(gf_natsd_stop(s), 0); /* already stopped: no-op */
    assert_int_equal(gf_natsd_probe_version(url, version, sizeof version), -1);
    gf_natsd_free(s);
    assert_false(th_path_exists(dir));
    gf_natsd_free(NULL);
    th_assert_no_children();
}

static void test_jetstream_survives_restart_and_kill(void **state)
{
    (void)state;
    gf_natsd *s = NULL;
    assert_int_equal(gf_natsd_start(NULL, &s), 0);
    const char *urls[] = {gf_natsd_url(s)};
    int port = gf_natsd_port(s), mport = gf_natsd_monitor_port(s);
    int retries = 0;

    natsConnection *nc = th_connect(urls, 1);
    jsCtx *js = th_js(nc);
    th_add_stream(js, "HARNESS", "harness.>", 1);
    assert_int_equal(
        th_publish_range(js, "harness.a", 0, 100, gf_clock_mono_ms() + 10000, &retries), 0);
    assert_int_equal(th_stream_msgs(js, "HARNESS"), 100);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);

    /* Graceful stop and restart: same URL, same data. */
    pid_t old = gf_natsd_pid(s);
    assert_int_equal(gf_natsd_stop(s), 0);
    assert_true(th_pid_gone(old));
    assert_int_equal(gf_natsd_restart(s), 0);
    assert_true(gf_natsd_pid(s) > 0);
    assert_int_equal(gf_natsd_port(s), port);
    assert_int_equal(gf_natsd_monitor_port(s), mport);
    nc = th_connect(urls, 1);
    js = th_js(nc);
    assert_int_equal(th_stream_msgs(js, "HARNESS"), 100);
    assert_int_equal(
        th_publish_range(js, "harness.b", 100, 150, gf_clock_mono_ms() + 10000, &retries), 0);
    assert_int_equal(th_stream_msgs(js, "HARNESS"), 150);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);

    /* kill -9 and restart: every acknowledged message is still there. */
    old = gf_natsd_pid(s);
    assert_int_equal(gf_natsd_kill(s), 0);
    assert_int_equal(gf_natsd_pid(s), 0);
    assert_true(th_pid_gone(old));
    assert_int_equal(gf_natsd_restart(s), 0);
    assert_int_equal(gf_natsd_port(s), port);
    nc = th_connect(urls, 1);
    js = th_js(nc);
    assert_int_equal(th_stream_msgs(js, "HARNESS"), 150);
    /* Msg-Id dedup state survived too: a re-publish is a duplicate. */
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = "m-7";
    jsPubAck *pa = NULL;
    assert_int_equal(js_Publish(&pa, js, "harness.a", "event 7", 7, &po, NULL), NATS_OK);
    assert_true(pa->Duplicate);
    jsPubAck_Destroy(pa);
    assert_int_equal(th_stream_msgs(js, "HARNESS"), 150);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);

    /* restart() on a running server stops it first. */
    old = gf_natsd_pid(s);
    assert_int_equal(gf_natsd_restart(s), 0);
    assert_true(th_pid_gone(old));
    assert_true(gf_natsd_pid(s) > 0);

    char dir[4096];
    snprintf(dir, sizeof dir, "%s", gf_natsd_dir(s));
    pid_t last = gf_natsd_pid(s);
    gf_natsd_free(s); /* running: free stops it */
    assert_true(th_pid_gone(last));
    assert_false(th_path_exists(dir));
    th_assert_no_children();
}

static void test_options(void **state)
{
    (void)state;
    /* extra_config lands in the config: a subject mapping rewrites publishes. */
    gf_natsd_opts o = {.no_jetstream = true,
                       .extra_config = "mappings = { \"hin.*\": \"hout.{{wildcard(1)}}\" }"};
    gf_natsd *s = NULL;
    assert_int_equal(gf_natsd_start(&o, &s), 0);
    const char *urls[] = {gf_natsd_url(s)};
    natsConnection *nc = th_connect(urls, 1);
    natsSubscription *sub = NULL;
    natsMsg *m = NULL;
    assert_int_equal(natsConnection_SubscribeSync(&sub, nc, "hout.*"), NATS_OK);
    assert_int_equal(natsConnection_Flush(nc), NATS_OK);
    assert_int_equal(natsConnection_PublishString(nc, "hin.x", "mapped"), NATS_OK);
    assert_int_equal(natsSubscription_NextMsg(&m, sub, 2000), NATS_OK);
    assert_string_equal(natsMsg_GetSubject(m), "hout.x");
    natsMsg_Destroy(m);
    natsSubscription_Destroy(sub);

    /* no_jetstream: the server has no JetStream. */
    json_t *jsz = NULL;
    assert_int_equal(gf_natsd_monitor_json(s, "/jsz", &jsz), 0);
    assert_true(json_is_true(json_object_get(jsz, "disabled")));
    json_decref(jsz);
    natsConnection_Destroy(nc);
    gf_natsd_free(s);
    th_assert_no_children();
}

static void test_bad_inputs(void **state)
{
    (void)state;
    gf_natsd *s = NULL;
    gf_natsd_cluster *c = NULL;

    assert_int_equal(gf_natsd_start(NULL, NULL), -1);

    /* A config the server rejects: start fails fast, leaves no process, no dir. */
    gf_natsd_opts bad = {.extra_config = "this is { not a valid config",
                         .start_timeout_ms = 100000};
    long long t0 = gf_clock_mono_ms();
    assert_int_equal(gf_natsd_start(&bad, &s), -1);
    assert_null(s);
    /* It noticed the exit instead of waiting out the (huge) start timeout. */
    assert_true(gf_clock_mono_ms() - t0 < 50000);
    assert_int_equal(th_count_entries(th_tmpdir), 0);

    /* A missing binary. */
    setenv("GAMEFN_NATS_SERVER", "/nonexistent/nats-server", 1);
    assert_int_equal(gf_natsd_start(NULL, &s), -1);
    assert_null(s);
    unsetenv("GAMEFN_NATS_SERVER");
    assert_int_equal(th_count_entries(th_tmpdir), 0);

    /* Cluster sizes and modes outside the contract. */
    assert_int_equal(gf_natsd_cluster_start(2, NULL, &c), -1);
    assert_int_equal(gf_natsd_cluster_start(4, NULL, &c), -1);
    gf_natsd_opts nojs = {.no_jetstream = true};
    assert_int_equal(gf_natsd_cluster_start(3, &nojs, &c), -1);
    assert_null(c);
    assert_int_equal(gf_natsd_cluster_start(3, NULL, NULL), -1);
    gf_natsd_cluster_free(NULL);
    assert_null(gf_natsd_cluster_node(NULL, 0));

    char v[32];
    assert_int_equal(gf_natsd_probe_version("not a url", v, sizeof v), -1);
    assert_int_equal(gf_natsd_probe_version(NULL, v, sizeof v), -1);
    assert_int_equal(th_count_entries(th_tmpdir), 0);
    th_assert_no_children();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orphaned_server_dies), /* first: before nats.c threads exist */
        cmocka_unit_test(test_proc_spawn_wait_signal),
        cmocka_unit_test(test_single_start_stop),
        cmocka_unit_test(test_jetstream_survives_restart_and_kill),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
