/*
 * endpoint.c — what every endpoint kind shares: its thread, its subscription's drain,
 * its $SRV counters and the problems its threads report (see endpoint.h).
 *
 * Folder runtime/src/endpoints/: the ways a function receives work. It owns the
 * endpoint kinds (one file each, registered in kinds.c), the gf_msg accessors
 * handlers use, and these shared helpers. It may use core/, config/, wire/, nats/,
 * provision/ and discovery/; never function/, which drives it.
 */
#include "endpoints/endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"

gf_err gf__endpoint_thread_start(gf__endpoint_run *run, void *(*body)(void *))
{
    atomic_store(&run->thread_done, 0);
    if (pthread_create(&run->thread, NULL, body, run) != 0)
        return GF_ERR_NOMEM;
    run->thread_started = true;
    return GF_OK;
}

bool gf__endpoint_thread_join(gf__endpoint_run *run, int64_t deadline_ms)
{
    if (!run->thread_started)
        return true;
    while (!atomic_load(&run->thread_done) && gf_clock_mono_ms() < deadline_ms)
        gf_clock_sleep_ms(10);
    if (!atomic_load(&run->thread_done))
        return false;
    pthread_join(run->thread, NULL);
    run->thread_started = false;
    return true;
}

typedef struct thread_start {
    void *(*body)(void *);
    void *arg;
    atomic_int *alive;
} thread_start;

static void *trampoline(void *p)
{
    thread_start ts = *(thread_start *)p;
    free(p);
    ts.body(ts.arg);
    atomic_fetch_sub(ts.alive, 1);
    return NULL;
}

gf_err gf__threads_start(gf__threads *t, void *(*body)(void *), void *arg)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        pthread_t *ids = realloc(t->ids, cap * sizeof *ids);
        if (!ids)
            return GF_ERR_NOMEM;
        t->ids = ids;
        t->cap = cap;
    }
    thread_start *ts = malloc(sizeof *ts);
    if (!ts)
        return GF_ERR_NOMEM;
    *ts = (thread_start){.body = body, .arg = arg, .alive = &t->alive};
    atomic_fetch_add(&t->alive, 1);
    if (pthread_create(&t->ids[t->n], NULL, trampoline, ts) != 0) {
        atomic_fetch_sub(&t->alive, 1);
        free(ts);
        return GF_ERR_NOMEM;
    }
    t->n++;
    return GF_OK;
}

bool gf__threads_join(gf__threads *t, int64_t deadline_ms)
{
    while (atomic_load(&t->alive) > 0 && gf_clock_mono_ms() < deadline_ms)
        gf_clock_sleep_ms(5);
    if (atomic_load(&t->alive) > 0)
        return false;
    for (size_t i = 0; i < t->n; i++)
        pthread_join(t->ids[i], NULL);
    free(t->ids);
    t->ids = NULL;
    t->n = t->cap = 0;
    return true;
}

bool gf__endpoint_drain_subscription(gf__endpoint_run *run, int64_t deadline_ms)
{
    bool clean = gf_sub_close(run->sub, deadline_ms - gf_clock_mono_ms());
    run->sub = NULL;
    return clean;
}

void gf__health_init(gf__health *h)
{
    pthread_mutex_init(&h->mu, NULL);
    h->problem[0] = '\0';
}

void gf__health_fini(gf__health *h)
{
    pthread_mutex_destroy(&h->mu);
}

void gf__health_set(gf__health *h, const gf__endpoint_run *run, const char *problem)
{
    char quoted[sizeof h->problem + 32];
    pthread_mutex_lock(&h->mu);
    bool was = h->problem[0] != '\0';
    bool same = problem && strcmp(h->problem, problem) == 0;
    snprintf(h->problem, sizeof h->problem, "%s", problem ? problem : "");
    bool is = h->problem[0] != '\0';
    pthread_mutex_unlock(&h->mu);
    if (is && !same)
        gf_log_error("endpoint unhealthy", "endpoint=%s problem=%s", run->ep->name,
                     gf_log_quote(quoted, sizeof quoted, problem));
    else if (was && !is)
        gf_log_info("endpoint healthy again", "endpoint=%s", run->ep->name);
}

bool gf__health_check(gf__health *h, const gf__endpoint_run *run, const char *prefix, char *why,
                      size_t why_size)
{
    pthread_mutex_lock(&h->mu);
    bool healthy = h->problem[0] == '\0';
    if (!healthy)
        snprintf(why, why_size, "endpoint %s: %s%s", run->ep->name, prefix ? prefix : "",
                 h->problem);
    pthread_mutex_unlock(&h->mu);
    return healthy;
}

void gf__endpoint_record(const gf__endpoint_run *run, int64_t start_ns, gf_err err,
                         const char *text)
{
    if (!run->host->srv)
        return;
    char error[320];
    if (err != GF_OK)
        snprintf(error, sizeof error, "%s:%s", gf_err_str(err), text && text[0] ? text : "");
    gf_srv_record(run->host->srv, run->index, gf_clock_mono_ns() - start_ns,
                  err == GF_OK ? NULL : error);
}
