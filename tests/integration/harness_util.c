/*
 * harness_util.c — helpers shared by the harness's own integration tests
 * (test_harness.c, test_harness_cluster.c): process and directory checks, a nats.c
 * connection to a list of servers, a fresh JetStream server for a setup (also used by
 * test_provision.c and test_check_mirror.c), JetStream stream helpers, and the cmocka group
 * setup that gives each test program a private TMPDIR and makes it a subreaper.
 */
#define _XOPEN_SOURCE 700 /* nftw */

#include "harness_util.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "gamefn/clock.h"

char th_tmpdir[256];

bool th_pid_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

bool th_path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void th_assert_no_children(void)
{
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

int th_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int th_count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    }
    closedir(d);
    return n;
}

natsConnection *th_connect(const char **urls, int n)
{
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    assert_int_equal(natsOptions_Create(&o), NATS_OK);
    assert_int_equal(natsOptions_SetServers(o, urls, n), NATS_OK);
    assert_int_equal(natsOptions_SetMaxReconnect(o, 10000), NATS_OK);
    assert_int_equal(natsOptions_SetReconnectWait(o, 100), NATS_OK);
    assert_int_equal(natsOptions_SetTimeout(o, 2000), NATS_OK);
    natsStatus s = natsConnection_Connect(&nc, o);
    if (s != NATS_OK)
        fprintf(stderr, "connect: %s\n", nats_GetLastError(NULL));
    assert_int_equal(s, NATS_OK);
    natsOptions_Destroy(o);
    return nc;
}

jsCtx *th_js(natsConnection *nc)
{
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 2000;
    assert_int_equal(natsConnection_JetStream(&js, nc, &jo), NATS_OK);
    return js;
}

void th_add_stream(jsCtx *js, const char *name, const char *subject, int replicas)
{
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = name;
    cfg.Subjects = &subject;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = replicas;
    natsStatus s = NATS_ERR;
    jsErrCode jerr = 0;
    /* Right after a cluster forms the meta leader may not place R3 yet: retry briefly. */
    for (long long deadline = gf_clock_mono_ms() + 10000; gf_clock_mono_ms() < deadline;) {
        s = js_AddStream(NULL, js, &cfg, NULL, &jerr);
        if (s == NATS_OK)
            break;
        nats_Sleep(100);
    }
    if (s != NATS_OK)
        fprintf(stderr, "add stream %s: %s (%d)\n", name, nats_GetLastError(NULL), (int)jerr);
    assert_int_equal(s, NATS_OK);
}

natsSubscription *th_pull_consumer(jsCtx *js, const char *stream, jsConsumerConfig *cc)
{
    natsStatus s = NATS_ERR;
    jsErrCode jerr = 0;
    for (int64_t until = gf_clock_mono_ms() + 20000; gf_clock_mono_ms() < until;) {
        if ((s = js_AddConsumer(NULL, js, stream, cc, NULL, &jerr)) == NATS_OK)
            break;
        nats_Sleep(200); /* a new leader may still be settling */
    }
    if (s != NATS_OK)
        fail_msg("add consumer on %s: %s (%d)", stream, nats_GetLastError(NULL), (int)jerr);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = cc->Durable;
    natsSubscription *sub = NULL;
    assert_int_equal(js_PullSubscribe(&sub, js, NULL, cc->Durable, NULL, &so, &jerr), NATS_OK);
    return sub;
}

uint64_t th_stream_msgs(jsCtx *js, const char *name)
{
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, js, name, NULL, NULL), NATS_OK);
    uint64_t n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

/* Publishes ids [from, to) with Msg-Id, retrying each until acked or the deadline. */
int th_publish_range(jsCtx *js, const char *subject, int from, int to, long long deadline,
                     int *retries)
{
    for (int i = from; i < to; i++) {
        char id[32], body[32];
        snprintf(id, sizeof id, "m-%d", i);
        int len = snprintf(body, sizeof body, "event %d", i);
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MsgId = id;
        po.MaxWait = 1000;
        for (;;) {
            jsPubAck *pa = NULL;
            natsStatus s = js_Publish(&pa, js, subject, body, len, &po, NULL);
            jsPubAck_Destroy(pa);
            if (s == NATS_OK)
                break;
            if (gf_clock_mono_ms() > deadline) {
                fprintf(stderr, "publish %d: %s\n", i, nats_GetLastError(NULL));
                return -1;
            }
            (*retries)++;
            nats_Sleep(50);
        }
    }
    return 0;
}

int th_group_setup(void **state)
{
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(th_tmpdir, sizeof th_tmpdir, "%s/gf-test-harness-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(th_tmpdir))
        return -1;
    setenv("TMPDIR", th_tmpdir, 1);
    /* Orphaned grandchildren become our children: see the design notes. */
    return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : -1;
}

int th_group_teardown(void **state)
{
    (void)state;
    nats_CloseAndWait(2000);
    int left = th_count_entries(th_tmpdir);
    if (left != 0)
        fprintf(stderr, "test_harness: %d entries left in %s\n", left, th_tmpdir);
    rmdir(th_tmpdir);
    return left == 0 ? 0 : -1;
}

void th_js_server_start(gf_natsd **server, natsConnection **nc, jsCtx **js)
{
    assert_int_equal(gf_natsd_start(NULL, server), 0);
    assert_int_equal(natsConnection_ConnectTo(nc, gf_natsd_url(*server)), NATS_OK);
    assert_int_equal(natsConnection_JetStream(js, *nc, NULL), NATS_OK);
}

void th_js_server_stop(gf_natsd *server, natsConnection *nc, jsCtx *js)
{
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_free(server);
}
