/*
 * stack.c — the function processes and run directory of a benchmark (see stack.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gamefn/clock.h"
#include "stack.h"

gf_err gf_bench_fns_spawn(gf_bench_fns *s, const char *bin, const char *fn, const char *instance,
                          const char *config, char *const env[])
{
    if (s->n >= GF_BENCH_MAX_FNS) {
        fprintf(stderr, "%s: %s: more than %d processes in one run\n", s->bench, instance,
                GF_BENCH_MAX_FNS);
        return GF_ERR_INVALID;
    }
    /* argv is char *const []: copies, not casts, of the caller's const strings */
    char path[1200], conf[600], inst[sizeof s->instance[0]], log[700];
    if (bin)
        snprintf(path, sizeof path, "%s", bin);
    else
        snprintf(path, sizeof path, "%s/functions/%s/gamefn-%s", s->build, fn, fn);
    snprintf(conf, sizeof conf, "%s", config);
    snprintf(inst, sizeof inst, "%s", instance);
    snprintf(log, sizeof log, "%s/%s.log", s->log_dir, instance);
    char *args[] = {path, "--config", conf, "--instance", inst, NULL};
    if (gf_proc_spawn(&s->procs[s->n], args, env, log) != 0) {
        fprintf(stderr, "%s: could not start %s (instance %s)\n", s->bench, path, instance);
        return GF_ERR_IO;
    }
    snprintf(s->fn[s->n], sizeof s->fn[0], "%s", fn);
    snprintf(s->instance[s->n], sizeof s->instance[0], "%s", instance);
    s->n++;
    return GF_OK;
}

gf_err gf_bench_fns_replicas(gf_bench_fns *s, const char *bin, const char *fn, int n,
                             const char *config)
{
    fprintf(stderr, "%s: %d %s replica(s) of %s\n", s->bench, n, fn, bin);
    for (int i = 0; i < n; i++) {
        char instance[32];
        snprintf(instance, sizeof instance, "bench%d", i);
        gf_err err = gf_bench_fns_spawn(s, bin, fn, instance, config, NULL);
        if (err != GF_OK)
            return err;
        fprintf(stderr, "%s: %s replica %s is pid %d\n", s->bench, fn, instance,
                (int)s->procs[s->n - 1].pid);
    }
    return GF_OK;
}

/* Whether process i answers $SRV.PING.<fn>.<instance>; "no responders" comes back at once. */
static bool answers(const gf_bench_fns *s, int i, natsConnection *nc)
{
    char subject[128];
    natsMsg *m = NULL;
    snprintf(subject, sizeof subject, "$SRV.PING.%s.%s", s->fn[i], s->instance[i]);
    bool up = natsConnection_Request(&m, nc, subject, NULL, 0, 200) == NATS_OK &&
              !natsMsg_IsNoResponders(m);
    natsMsg_Destroy(m);
    return up;
}

gf_err gf_bench_fns_ready(gf_bench_fns *s, natsConnection *nc, int from, int64_t timeout_ms)
{
    int64_t deadline = gf_clock_mono_ms() + timeout_ms;
    int next = from; /* the ones before have answered */
    while (next < s->n) {
        if (gf_bench_fns_gone(s))
            return GF_ERR_UNAVAILABLE;
        if (answers(s, next, nc)) {
            next++;
            continue;
        }
        if (gf_clock_mono_ms() >= deadline) {
            fprintf(stderr, "%s: %s (pid %d) did not answer $SRV.PING in %lld ms; its log:\n",
                    s->bench, s->instance[next], (int)s->procs[next].pid, (long long)timeout_ms);
            gf_proc_dump_log(&s->procs[next], 20);
            return GF_ERR_TIMEOUT;
        }
        gf_clock_sleep_ms(100);
    }
    return GF_OK;
}

bool gf_bench_fns_gone(gf_bench_fns *s)
{
    for (int i = 0; i < s->n; i++) {
        pid_t pid = s->procs[i].pid;
        if (gf_proc_running(&s->procs[i]))
            continue;
        char how[64];
        gf_proc_describe(&s->procs[i], how, sizeof how);
        fprintf(stderr, "%s: %s replica %s (pid %d) %s; no figures\n", s->bench, s->fn[i],
                s->instance[i], (int)pid, how);
        gf_proc_dump_log(&s->procs[i], 20);
        return true;
    }
    return false;
}

bool gf_bench_fns_gone_cb(void *fns)
{
    return gf_bench_fns_gone(fns);
}

void gf_bench_fns_stop(gf_bench_fns *s, const char *fn)
{
    for (int i = 0; i < s->n; i++) {
        if ((fn && strcmp(s->fn[i], fn) != 0) || s->procs[i].pid <= 0)
            continue;
        gf_proc_signal(&s->procs[i], SIGTERM);
        gf_proc_wait(&s->procs[i], s->grace_ms > 0 ? s->grace_ms : 15000);
    }
}

void gf_bench_fns_free(gf_bench_fns *s)
{
    gf_bench_fns_stop(s, NULL);
    for (int i = 0; i < s->n; i++)
        gf_proc_cleanup(&s->procs[i]);
}

FILE *gf_bench_config_open(const char *bench, const char *path, const char *url, bool verbose,
                           long fetch_batch, const char *flush)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s: %m\n", bench, path);
        return NULL;
    }
    fprintf(f,
            "nats:\n  servers: [\"%s\"]\n  flush: %s\n"
            "log:\n  level: %s\n"
            "runtime:\n  fetch_batch: %ld\n  fetch_expiry: 1s\n  heartbeat: 250ms\n",
            url, flush ? flush : "immediate", verbose ? "info" : "warn", fetch_batch);
    return f;
}

const char *const gf_bench_flush_modes[] = {"immediate", "batched", NULL};

bool gf_bench_rundir_make(const char *bench, char *tmpl)
{
    if (mkdtemp(tmpl))
        return true;
    fprintf(stderr, "%s: cannot create the run directory %s: %m\n", bench, tmpl);
    return false;
}

void gf_bench_rundir_remove(const char *bench, const char *dir)
{
    if (!dir[0])
        return;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "%s: could not remove %s\n", bench, dir);
}

gf_err gf_bench_connect_asap(const char *url, natsConnection **nc)
{
    natsOptions *o = NULL;
    natsStatus st = natsOptions_Create(&o);
    if (st == NATS_OK)
        st = natsOptions_SetURL(o, url);
    if (st == NATS_OK)
        st = natsOptions_SetSendAsap(o, true);
    if (st == NATS_OK)
        st = natsConnection_Connect(nc, o);
    natsOptions_Destroy(o);
    if (st == NATS_OK)
        return GF_OK;
    fprintf(stderr, "connecting to %s: %s\n", url, natsStatus_GetText(st));
    return GF_ERR_UNAVAILABLE;
}

void gf_bench_await_servers(gf_gamesim *sim, uint32_t servers, int timeout_ms, gf_gamesim_stats *st)
{
    for (int waited = 0;; waited += 100) {
        gf_gamesim_stats_get(sim, st);
        if (st->free >= servers || waited > timeout_ms)
            return;
        gf_clock_sleep_ms(100);
    }
}

double gf_bench_cpu_seconds(pid_t pid)
{
    unsigned long long ut = 0, st = 0;
    if (gf_proc_stat_field(pid, 14, &ut) != 0 || gf_proc_stat_field(pid, 15, &st) != 0)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

long long gf_bench_last_seq(jsCtx *js, const char *const *streams, size_t n)
{
    long long sum = 0;
    for (size_t i = 0; i < n; i++) {
        jsStreamInfo *si = NULL;
        bool ok = js_GetStreamInfo(&si, js, streams[i], NULL, NULL) == NATS_OK;
        if (ok)
            sum += (long long)si->State.LastSeq;
        jsStreamInfo_Destroy(si);
        if (!ok)
            return -1;
    }
    return sum;
}
