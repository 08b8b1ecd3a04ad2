/*
 * Functions on a 3-node JetStream cluster under faults: a pull worker keeps
 * handling jobs while the node leading its stream is SIGKILLed and restarted; a
 * request/reply function keeps answering. Nothing published is lost (each job is
 * handled at least once; effects are counted from the replicated results stream).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fn_support.h"
#include "gamefn/clock.h"

#define WORKER "tests/gamefn-test-worker"
#define ECHO   "functions/echo/gamefn-echo"
#define JOBS   120

static char *const pull_env[] = {"GAMEFN_TEST_MODE=pull", NULL};

/* Publishes with a Msg-Id and retries through a leader election (dedup makes a
 * retry of a publish that did land harmless). */
static void publish_job(gf_fnenv *env, int i)
{
    char job[32], id[32];
    snprintf(job, sizeof job, "j%d", i);
    snprintf(id, sizeof id, "job-%d", i);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id;
    po.MaxWait = 2000;
    for (int attempt = 0; attempt < 100; attempt++) {
        if (js_Publish(NULL, env->js, "test.jobs", job, (int)strlen(job), &po, NULL) == NATS_OK)
            return;
        gf_clock_sleep_ms(100);
    }
    fail_msg("could not publish %s through the failover", job);
}

struct seen {
    int handled[JOBS];
    int distinct;
};

static bool all_jobs_seen(gf_fnenv *env, void *arg)
{
    struct seen *s = arg;
    gf_lines lines;
    memset(s, 0, sizeof *s);
    if (gf_fnenv_results(env, "test.results.jobs", &lines) != 0)
        return false; /* the results stream is electing a leader: try again */
    for (size_t i = 0; i < lines.count; i++) {
        int id = -1;
        if (sscanf(lines.lines[i], "j%d", &id) == 1 && id >= 0 && id < JOBS &&
            s->handled[id]++ == 0)
            s->distinct++;
    }
    gf_fnenv_lines_free(&lines);
    return s->distinct == JOBS;
}

/* Index of the node that leads `stream`, or -1. */
static int stream_leader(gf_fnenv *env, const char *stream)
{
    jsStreamInfo *si = NULL;
    int found = -1;
    if (js_GetStreamInfo(&si, env->js, stream, NULL, NULL) != NATS_OK)
        return -1;
    for (int i = 0; si->Cluster && si->Cluster->Leader && i < gf_natsd_cluster_size(env->cluster);
         i++)
        if (strcmp(gf_natsd_name(gf_natsd_cluster_node(env->cluster, i)), si->Cluster->Leader) == 0)
            found = i;
    jsStreamInfo_Destroy(si);
    return found;
}

static void pull_worker_rides_out_losing_the_stream_leader(void **state)
{
    gf_fnenv env;
    gf_proc w = {0}, e = {0};
    struct seen seen;
    assert_int_equal(gf_fnenv_start_cluster(&env, 3, NULL), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &w, WORKER, "w1", pull_env), 0);
    assert_int_equal(gf_fnenv_spawn(&env, &e, ECHO, "e1", NULL), 0);
    assert_true(gf_fnenv_wait_ping(&env, "test-worker", "w1", 20000));
    assert_true(gf_fnenv_wait_ping(&env, "echo", "e1", 20000));

    for (int i = 0; i < JOBS / 2; i++)
        publish_job(&env, i);

    int leader = stream_leader(&env, "TEST_JOBS");
    assert_true(leader >= 0);
    gf_natsd *victim = gf_natsd_cluster_node(env.cluster, leader);
    assert_int_equal(gf_natsd_kill(victim), 0);

    for (int i = JOBS / 2; i < JOBS; i++)
        publish_job(&env, i);
    assert_true(gf_fnenv_eventually(all_jobs_seen, &env, &seen, 60000));

    /* Request/reply still answers with one node down. */
    natsMsg *reply = NULL;
    natsStatus s = NATS_TIMEOUT;
    for (int attempt = 0; attempt < 50 && s != NATS_OK; attempt++)
        s = natsConnection_Request(&reply, env.nc, "gamefn.v1.echo", "hi", 2, 1000);
    assert_int_equal(s, NATS_OK);
    natsMsg_Destroy(reply);

    assert_int_equal(gf_natsd_restart(victim), 0);
    assert_true(gf_proc_running(&w));
    gf_proc_signal(&w, SIGTERM);
    gf_proc_signal(&e, SIGTERM);
    assert_int_equal(gf_proc_wait(&w, 20000), 0);
    assert_int_equal(gf_proc_wait(&e, 20000), 0);
    assert_true(gf_proc_exited_with(&w, 0));
    assert_true(gf_proc_exited_with(&e, 0));
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pull_worker_rides_out_losing_the_stream_leader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
