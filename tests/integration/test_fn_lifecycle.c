/*
 * test_fn_lifecycle.c — how a function instance stops at each stage of its life:
 * while its configuration is still being read, while provisioning waits for
 * JetStream, and when a request handler outlives the drain deadline.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fn_support.h"
#include "gamefn/clock.h"

#define ECHO   "functions/echo/gamefn-echo"
#define WORKER "tests/gamefn-test-worker"

/* The configuration is a FIFO the test writes half of and keeps open: the load cannot
 * finish, so an exit 0 after SIGTERM proves the signal was taken during the load. */
static void sigterm_while_the_config_loads_exits_0_at_once(void **state)
{
    char dir[] = "/tmp/gamefn-lifecycle-XXXXXX", fifo[300], log[300], bin[512];
    assert_non_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/gamefn.yaml", dir);
    snprintf(log, sizeof log, "%s/echo.log", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);

    gf_proc p = {0};
    gf_fnenv_binary(ECHO, bin, sizeof bin);
    char *argv[] = {bin, "--config", fifo, NULL};
    assert_int_equal(gf_proc_spawn(&p, argv, NULL, log), 0);
    /* Opening for writing succeeds once the function has opened the file to read it. */
    int fd = -1;
    for (int waited = 0; fd < 0 && waited < 10000; waited += 20) {
        fd = open(fifo, O_WRONLY | O_NONBLOCK);
        if (fd < 0) {
            assert_int_equal(errno, ENXIO);
            gf_clock_sleep_ms(20);
        }
    }
    assert_true(fd >= 0);
    static const char part[] = "log:\n  level: info\nruntime:\n  drain_timeout: 5s\n";
    assert_int_equal(write(fd, part, sizeof part - 1), (ssize_t)(sizeof part - 1));
    gf_clock_sleep_ms(200);
    assert_true(gf_proc_running(&p));

    gf_proc_signal(&p, SIGTERM);
    int waited = gf_proc_wait(&p, 3000);
    close(fd);
    if (waited != 0 || !gf_proc_exited_with(&p, 0))
        gf_proc_dump_log(&p, 20);
    assert_int_equal(waited, 0);
    assert_true(gf_proc_exited_with(&p, 0));
    assert_int_equal(gf_fnenv_log_count(&p, "stopping before start"), 1);
    assert_int_equal(gf_fnenv_log_count(&p, "connected to NATS"), 0);
    unlink(fifo);
    unlink(log);
    rmdir(dir);
}

/* A server without JetStream: provisioning retries until SIGTERM, which is a clean stop. */
static void sigterm_while_provisioning_retries_exits_0(void **state)
{
    gf_fnenv_opts opts = {.no_jetstream = true};
    gf_fnenv env;
    gf_proc w = {0};
    char *const env_vars[] = {"GAMEFN_TEST_MODE=request", NULL};
    assert_int_equal(gf_fnenv_start_opts(&env, &opts), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "w", env_vars), 0);
    assert_true(gf_fnenv_wait_log(&w, "retrying provisioning", 10000));
    gf_clock_sleep_ms(100);

    assert_true(gf_fnenv_stop(&w, 3000));
    assert_int_equal(gf_fnenv_log_count(&w, "msg=\"started\""), 0);
    gf_fnenv_free(&env);
}

/* A request handler still running at the drain deadline: exit 1, and the log says what
 * becomes of the request (never redelivered), not what would happen to a pull message. */
static void request_abandoned_at_the_deadline_is_not_redelivered(void **state)
{
    gf_fnenv_opts opts = {
        .functions = "  echo:\n    delay: 3s\n",
        .runtime = "  drain_timeout: 300ms\n",
    };
    gf_fnenv env;
    gf_proc a = {0};
    assert_int_equal(gf_fnenv_start_opts(&env, &opts), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &a, ECHO, "stuck", NULL), 0);
    assert_true(gf_fnenv_wait_ping(&env, "echo", "stuck", 10000));

    natsInbox *inbox = NULL;
    assert_int_equal(natsInbox_Create(&inbox), NATS_OK);
    assert_int_equal(natsConnection_PublishRequest(env.nc, "gamefn.v1.echo", inbox, "x", 1),
                     NATS_OK);
    gf_clock_sleep_ms(300); /* the handler sleeps inside the request */
    gf_proc_signal(&a, SIGTERM);
    assert_int_equal(gf_proc_wait(&a, 10000), 0);
    assert_true(gf_proc_exited_with(&a, 1));
    assert_int_equal(gf_fnenv_log_count(&a, "endpoint did not stop in time"), 1);
    assert_int_equal(gf_fnenv_log_count(&a, "never redelivered"), 1);
    assert_int_equal(gf_fnenv_log_count(&a, "will be redelivered"), 0);
    natsInbox_Destroy(inbox);
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sigterm_while_the_config_loads_exits_0_at_once),
        cmocka_unit_test(sigterm_while_provisioning_retries_exits_0),
        cmocka_unit_test(request_abandoned_at_the_deadline_is_not_redelivered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
