/*
 * pull_keeper.c — in-progress for held messages (see pull_keeper.h).
 *
 * Design notes:
 * - One thread, one mutex, one doubly linked list of holds. The thread sleeps on a
 *   monotonic condition variable until the earliest hold is due (or a second, to
 *   notice a new ack wait), then sends natsMsg_InProgress for every message of each due
 *   hold and schedules the hold again 40% of the ack wait later. 40% leaves more than
 *   half the ack wait for the in-progress to reach the server.
 * - natsMsg_InProgress is a plain publish on the connection (thread-safe) and does not
 *   mark the message acked, so it never races the handler's own gf_msg_in_progress;
 *   the handler's ack happens only after gf__keeper_release, under the same mutex.
 * - A hold with a validity deadline that has passed is left alone (not extended):
 *   a partition owner must not act past its lease.
 */
#include "endpoints/pull_keeper.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"

enum { IDLE_WAKE_MS = 1000 };

struct gf__keeper {
    const char *endpoint;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gf__keeper_hold *holds; /* guarded by mu */
    int64_t ack_wait_ms;    /* guarded by mu */
    bool stop;              /* guarded by mu */
};

static int64_t interval(const gf__keeper *k)
{
    int64_t i = k->ack_wait_ms * 2 / 5;
    return i > 0 ? i : 1;
}

static void wait_until(gf__keeper *k, int64_t until_ms)
{
    struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000L};
    pthread_cond_timedwait(&k->cv, &k->mu, &ts);
}

static void *keeper_thread(void *arg)
{
    gf__keeper *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->stop) {
        int64_t now = gf_clock_mono_ms();
        int64_t wake = now + IDLE_WAKE_MS;
        for (gf__keeper_hold *h = k->holds; h && k->ack_wait_ms > 0; h = h->next) {
            if (h->next_ms <= now) {
                bool valid = !h->valid_until || now < atomic_load(h->valid_until);
                for (size_t i = 0; valid && i < h->len; i++)
                    natsMsg_InProgress(h->msgs[i], NULL);
                h->next_ms = now + interval(k);
            }
            if (h->next_ms < wake)
                wake = h->next_ms;
        }
        wait_until(k, wake);
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

gf_err gf__keeper_start(const char *endpoint, gf__keeper **out)
{
    pthread_condattr_t attr;
    gf__keeper *k = calloc(1, sizeof *k);
    *out = NULL;
    if (!k)
        return GF_ERR_NOMEM;
    k->endpoint = endpoint;
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&k->thread, NULL, keeper_thread, k) != 0) {
        pthread_cond_destroy(&k->cv);
        pthread_mutex_destroy(&k->mu);
        free(k);
        return GF_ERR_NOMEM;
    }
    *out = k;
    return GF_OK;
}

void gf__keeper_set_ack_wait(gf__keeper *k, int64_t ack_wait_ms)
{
    pthread_mutex_lock(&k->mu);
    if (k->ack_wait_ms != ack_wait_ms)
        gf_log_debug("keeping held messages in progress", "endpoint=%s ack_wait_ms=%lld",
                     k->endpoint, (long long)ack_wait_ms);
    k->ack_wait_ms = ack_wait_ms;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

void gf__keeper_add(gf__keeper *k, gf__keeper_hold *h, natsMsg *const *msgs, size_t len,
                    int64_t delivered_ms, const _Atomic int64_t *valid_until)
{
    h->msgs = msgs;
    h->len = len;
    h->valid_until = valid_until;
    h->prev = NULL;
    pthread_mutex_lock(&k->mu);
    h->next_ms = delivered_ms + interval(k);
    h->next = k->holds;
    if (k->holds)
        k->holds->prev = h;
    k->holds = h;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

void gf__keeper_remove(gf__keeper *k, gf__keeper_hold *h)
{
    pthread_mutex_lock(&k->mu);
    if (h->prev)
        h->prev->next = h->next;
    else
        k->holds = h->next;
    if (h->next)
        h->next->prev = h->prev;
    h->prev = h->next = NULL;
    pthread_mutex_unlock(&k->mu);
}

void gf__keeper_stop(gf__keeper *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = true;
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
}
