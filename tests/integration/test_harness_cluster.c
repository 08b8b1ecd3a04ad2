/*
 * test_harness_cluster.c — loopback clusters from the harness: 3 nodes form, an R3
 * stream keeps taking publishes after its leader is SIGKILLed, the killed node
 * restarts on its ports and catches up; 5 nodes form one meta group; nothing
 * (process or directory) is left behind. Helpers and the private TMPDIR /
 * subreaper setup: harness_util.c.
 */
#include <errno.h>
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

static gf_natsd *node_named(gf_natsd_cluster *c, const char *name)
{
    for (int i = 0; i < gf_natsd_cluster_size(c); i++) {
        if (strcmp(gf_natsd_name(gf_natsd_cluster_node(c, i)), name) == 0)
            return gf_natsd_cluster_node(c, i);
    }
    return NULL;
}

static bool replicas_current(jsCtx *js, const char *stream)
{
    jsStreamInfo *si = NULL;
    bool ok = false;
    if (js_GetStreamInfo(&si, js, stream, NULL, NULL) != NATS_OK)
        return false;
    if (si->Cluster && si->Cluster->Leader && si->Cluster->ReplicasLen == 2) {
        ok = true;
        for (int i = 0; i < si->Cluster->ReplicasLen; i++)
            ok = ok && si->Cluster->Replicas[i]->Current && si->Cluster->Replicas[i]->Lag == 0;
    }
    jsStreamInfo_Destroy(si);
    return ok;
}

static void test_cluster_failover(void **state)
{
    (void)state;
    gf_natsd_cluster *c = NULL;
    assert_int_equal(gf_natsd_cluster_start(3, NULL, &c), 0);
    assert_int_equal(gf_natsd_cluster_size(c), 3);
    assert_null(gf_natsd_cluster_node(c, 3));
    pid_t pids[3];
    const char *urls[3];
    for (int i = 0; i < 3; i++) {
        gf_natsd *n = gf_natsd_cluster_node(c, i);
        pids[i] = gf_natsd_pid(n);
        urls[i] = gf_natsd_url(n);
        assert_true(pids[i] > 0);
        assert_non_null(strstr(gf_natsd_cluster_urls(c), urls[i]));
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", gf_natsd_dir(gf_natsd_cluster_node(c, 0)));
    *strrchr(dir, '/') = '\0'; /* the cluster's own directory */

    natsConnection *nc = th_connect(urls, 3);
    jsCtx *js = th_js(nc);
    th_add_stream(js, "HCLUSTER", "hcluster.>", 3);
    int retries = 0;
    assert_int_equal(
        th_publish_range(js, "hcluster.e", 0, 200, gf_clock_mono_ms() + 15000, &retries), 0);

    /* Kill the stream leader: publishing must resume on a new leader. */
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, js, "HCLUSTER", NULL, NULL), NATS_OK);
    assert_non_null(si->Cluster);
    assert_non_null(si->Cluster->Leader);
    gf_natsd *leader = node_named(c, si->Cluster->Leader);
    jsStreamInfo_Destroy(si);
    assert_non_null(leader);
    pid_t leader_pid = gf_natsd_pid(leader);
    assert_int_equal(gf_natsd_kill(leader), 0);
    assert_true(th_pid_gone(leader_pid));

    assert_int_equal(
        th_publish_range(js, "hcluster.e", 200, 400, gf_clock_mono_ms() + 40000, &retries), 0);
    fprintf(stderr, "cluster failover: %d publish retries while the leader was down\n", retries);
    assert_int_equal(th_stream_msgs(js, "HCLUSTER"), 400);

    /* The killed node comes back on its ports and catches up. */
    assert_int_equal(gf_natsd_restart(leader), 0);
    bool current = false;
    for (long long deadline = gf_clock_mono_ms() + 15000;
         !current && gf_clock_mono_ms() < deadline;) {
        current = replicas_current(js, "HCLUSTER");
        if (!current)
            nats_Sleep(100);
    }
    assert_true(current);
    assert_int_equal(th_stream_msgs(js, "HCLUSTER"), 400);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);

    pids[0] = gf_natsd_pid(gf_natsd_cluster_node(c, 0));
    pids[1] = gf_natsd_pid(gf_natsd_cluster_node(c, 1));
    pids[2] = gf_natsd_pid(gf_natsd_cluster_node(c, 2));
    gf_natsd_cluster_free(c);
    for (int i = 0; i < 3; i++)
        assert_true(th_pid_gone(pids[i]));
    assert_false(th_path_exists(dir));
    th_assert_no_children();
}

static void test_cluster_five_nodes(void **state)
{
    (void)state;
    gf_natsd_cluster *c = NULL;
    pid_t pids[5];
    assert_int_equal(gf_natsd_cluster_start(5, NULL, &c), 0);
    assert_int_equal(gf_natsd_cluster_size(c), 5);
    for (int i = 0; i < 5; i++) {
        gf_natsd *n = gf_natsd_cluster_node(c, i);
        pids[i] = gf_natsd_pid(n);
        assert_true(pids[i] > 0);
        /* Every node sees the same meta leader and a 5-node meta group. */
        json_t *jsz = NULL;
        assert_int_equal(gf_natsd_monitor_json(n, "/jsz", &jsz), 0);
        json_t *meta = json_object_get(jsz, "meta_cluster");
        assert_int_equal(json_integer_value(json_object_get(meta, "cluster_size")), 5);
        assert_non_null(json_string_value(json_object_get(meta, "leader")));
        json_decref(jsz);
    }
    gf_natsd_cluster_free(c);
    for (int i = 0; i < 5; i++)
        assert_true(th_pid_gone(pids[i]));
    assert_int_equal(th_count_entries(th_tmpdir), 0);
    th_assert_no_children();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster_failover),
        cmocka_unit_test(test_cluster_five_nodes),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
