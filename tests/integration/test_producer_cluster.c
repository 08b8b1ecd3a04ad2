/*
 * The producer on a 3-node cluster (R3 stream EVENTS, the event subject mapping on
 * every node) while the stream's leader is SIGKILLed in the middle of production and
 * restarted later: no event lost, none stored twice (each (source, seq) once, read
 * back from the stream). A failover stalls publishes for 4.5-7 s (NATS-FACTS §3d):
 * the producer rides it out with resends under the same ids and, when it lasts longer
 * than give_up_ms, by stopping, spooling and probing.
 */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/producer.h"
#include "harness_util.h"
#include "natsd.h"
#include "producer_check.h"

enum { N = 20000, RATE = 2000 };

typedef struct emitter {
    gf_producer *p;
    pthread_t thread;
    int failed;
} emitter;

static void *emit_all(void *arg)
{
    emitter *em = arg;
    int64_t start = gf_clock_mono_ms();
    for (uint64_t i = 1; i <= N; i++) {
        int64_t due = start + (int64_t)((i - 1) * 1000 / RATE);
        int64_t now = gf_clock_mono_ms();
        if (due > now)
            gf_clock_sleep_ms(due - now);
        char player[16];
        snprintf(player, sizeof player, "p%" PRIu64, i % 101);
        gf_event ev;
        memset(&ev, 0, sizeof ev);
        ev.player_id = player;
        ev.type = "score";
        ev.score.delta = 1;
        gf_producer_receipt r;
        if (gf_producer_emit(em->p, &ev, &r) != GF_OK || r.seq != i)
            em->failed++;
    }
    return NULL;
}

/* The node leading EVENTS now (retried while an election runs), or -1. */
static int leader_of(gf_natsd_cluster *c, jsCtx *js)
{
    for (int64_t until = gf_clock_mono_ms() + 20000; gf_clock_mono_ms() < until;) {
        jsStreamInfo *si = NULL;
        int found = -1;
        if (js_GetStreamInfo(&si, js, "EVENTS", NULL, NULL) == NATS_OK && si->Cluster &&
            si->Cluster->Leader)
            for (int i = 0; i < gf_natsd_cluster_size(c); i++)
                if (strcmp(gf_natsd_name(gf_natsd_cluster_node(c, i)), si->Cluster->Leader) == 0)
                    found = i;
        jsStreamInfo_Destroy(si);
        if (found >= 0)
            return found;
        gf_clock_sleep_ms(200);
    }
    return -1;
}

static void leader_killed_mid_production(void **state)
{
    gf_natsd_cluster *c = NULL;
    gf_natsd_opts o = {.extra_config = pcx_mapping};
    assert_int_equal(gf_natsd_cluster_start(3, &o, &c), 0);
    const char *urls[3];
    for (int i = 0; i < 3; i++)
        urls[i] = gf_natsd_url(gf_natsd_cluster_node(c, i));
    natsConnection *nc = th_connect(urls, 3);
    jsCtx *js = th_js(nc);
    pcx_add_events(js, 3, 0);

    char spool[300];
    snprintf(spool, sizeof spool, "%s/spool", th_tmpdir);
    gf_producer_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.source_id = "gs-cluster";
    cfg.spool_dir = spool;
    cfg.url = gf_natsd_cluster_urls(c);
    cfg.retry_max_ms = 1000;
    emitter em = {0};
    assert_int_equal(gf_producer_open(&cfg, &em.p), GF_OK);
    assert_int_equal(pthread_create(&em.thread, NULL, emit_all, &em), 0);

    /* A few seconds in, the stream leader dies. */
    gf_clock_sleep_ms(3000);
    int leader = leader_of(c, js);
    assert_true(leader >= 0);
    gf_natsd *victim = gf_natsd_cluster_node(c, leader);
    assert_int_equal(gf_natsd_kill(victim), 0);
    gf_clock_sleep_ms(8000);
    assert_int_equal(gf_natsd_restart(victim), 0);

    assert_int_equal(pthread_join(em.thread, NULL), 0);
    assert_int_equal(em.failed, 0);
    assert_int_equal(gf_producer_flush(em.p, 120000), GF_OK);
    gf_producer_stats st;
    gf_producer_stats_get(em.p, &st);
    assert_int_equal(st.acknowledged, N);
    assert_int_equal(st.dropped, 0);
    gf_producer_close(em.p, 5000);

    pcx_stored s;
    pcx_read(js, "EVENTS", &s);
    assert_int_equal(s.messages, N);
    pcx_expect(&s, "gs-cluster", 1, N, NULL, 0);
    pcx_free(&s);

    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    gf_natsd_cluster_free(c);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf %s/spool", th_tmpdir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    gf_log_init("test_producer_cluster", GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(leader_killed_mid_production),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
