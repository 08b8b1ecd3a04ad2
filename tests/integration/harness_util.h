/*
 * harness_util.h — helpers for the harness's own integration tests. The assert
 * helpers use cmocka and so fail the calling test. Test-only; single-threaded.
 */
#ifndef GAMEFN_TEST_HARNESS_UTIL_H
#define GAMEFN_TEST_HARNESS_UTIL_H

#include <nats/nats.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "natsd.h"

struct FTW;

/* The private TMPDIR th_group_setup() made for this test program. */
extern char th_tmpdir[256];

bool th_pid_gone(pid_t pid); /* kill(pid, 0) fails with ESRCH */
bool th_path_exists(const char *path);
void th_assert_no_children(void); /* waitpid(-1) finds no child at all */
int th_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw); /* for nftw */
int th_count_entries(const char *dir); /* entries besides . and .., -1 on error */

/* Connected (asserted) with reconnects every 100 ms; caller destroys. */
natsConnection *th_connect(const char **urls, int n);
jsCtx *th_js(natsConnection *nc); /* API wait 2 s; caller destroys */
/* File stream on one subject, retried for up to 10 s while a new cluster settles. */
void th_add_stream(jsCtx *js, const char *name, const char *subject, int replicas);
uint64_t th_stream_msgs(jsCtx *js, const char *name);
/* Creates the durable cc->Durable on `stream` (retried for up to 20 s while a new leader
 * settles) and binds a pull subscription to it (asserted); caller destroys. */
natsSubscription *th_pull_consumer(jsCtx *js, const char *stream, jsConsumerConfig *cc);
/* Publishes "m-<i>" ids [from, to) with Msg-Id, each retried every 50 ms until acked
 * or the deadline (gf_clock_mono_ms); counts retries. 0 or -1. */
int th_publish_range(jsCtx *js, const char *subject, int from, int to, long long deadline,
                     int *retries);

/* A fresh nats-server (JetStream on) with one connection and its JetStream context,
 * asserted; th_js_server_stop undoes it (NULLs are fine). For a test's setup/teardown. */
void th_js_server_start(gf_natsd **server, natsConnection **nc, jsCtx **js);
void th_js_server_stop(gf_natsd *server, natsConnection *nc, jsCtx *js);

/* cmocka group setup/teardown: private TMPDIR + child subreaper; the teardown
 * fails if anything is left in that TMPDIR. */
int th_group_setup(void **state);
int th_group_teardown(void **state);

#endif
