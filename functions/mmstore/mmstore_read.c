/*
 * mmstore_read.c — see mmstore_read.h.
 *
 * Design notes: request ids count up; id % SLOTS is its slot in the pending table. A
 * slot still held by an unanswered request (more than SLOTS reads outstanding) makes
 * the sender wait for room. A batch that gives up clears its slots, so a late answer
 * finds no one and is dropped.
 */
#include "mmstore_read.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"

enum { SLOTS = 8192 };

typedef struct read_batch {
    pthread_cond_t done;
    size_t left;
    uint8_t **vals;
    size_t *lens;
    uint64_t *revs;
    gf_err *errs;
} read_batch;

typedef struct slot {
    uint64_t id; /* 0 = free */
    read_batch *b;
    size_t i;
} slot;

struct mm_reads {
    natsConnection *nc;
    natsSubscription *sub;
    char prefix[64]; /* <inbox>, the answers come on <inbox>.<id> */
    pthread_mutex_t mu;
    pthread_cond_t room;
    uint64_t next_id;
    slot slots[SLOTS];
};

/* One direct-get answer into the batch's i-th result. */
static void read_answer(natsMsg *m, read_batch *b, size_t i)
{
    const char *seq = NULL, *op = NULL, *status = NULL;
    gf_err *err = &b->errs[i];
    if (natsMsg_IsNoResponders(m)) {
        *err = GF_ERR_UNAVAILABLE;
        return;
    }
    natsMsgHeader_Get(m, "Status", &status);
    if (status && strcmp(status, "404") == 0) {
        *err = GF_ERR_NOT_FOUND;
        return;
    }
    if (natsMsgHeader_Get(m, "Nats-Sequence", &seq) != NATS_OK || !seq) {
        *err = GF_ERR_NATS; /* an API error (JSON) or another status */
        return;
    }
    if (natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && op &&
        (strcmp(op, "DEL") == 0 || strcmp(op, "PURGE") == 0)) {
        *err = GF_ERR_NOT_FOUND;
        return;
    }
    int n = natsMsg_GetDataLength(m);
    size_t len = n > 0 ? (size_t)n : 0;
    uint8_t *val = malloc(len + 1);
    if (!val) {
        *err = GF_ERR_NOMEM;
        return;
    }
    if (len)
        memcpy(val, natsMsg_GetData(m), len);
    b->vals[i] = val;
    b->lens[i] = len;
    b->revs[i] = strtoull(seq, NULL, 10);
    *err = GF_OK;
}

static void on_answer(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    mm_reads *r = closure;
    const char *dot = strrchr(natsMsg_GetSubject(m), '.');
    uint64_t id = dot ? strtoull(dot + 1, NULL, 10) : 0;
    pthread_mutex_lock(&r->mu);
    slot *sl = &r->slots[id % SLOTS];
    if (id != 0 && sl->id == id) {
        read_batch *b = sl->b;
        read_answer(m, b, sl->i);
        sl->id = 0;
        sl->b = NULL;
        pthread_cond_signal(&r->room);
        if (--b->left == 0)
            pthread_cond_signal(&b->done);
    }
    pthread_mutex_unlock(&r->mu);
    natsMsg_Destroy(m);
}

gf_err mm_reads_open(natsConnection *nc, mm_reads **out)
{
    natsInbox *inbox = NULL;
    char wildcard[80];
    *out = NULL;
    mm_reads *r = calloc(1, sizeof *r);
    if (!r || natsInbox_Create(&inbox) != NATS_OK) {
        free(r);
        return GF_ERR_NOMEM;
    }
    snprintf(r->prefix, sizeof r->prefix, "%s", (const char *)inbox);
    natsInbox_Destroy(inbox);
    r->nc = nc;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->room, NULL);
    snprintf(wildcard, sizeof wildcard, "%s.*", r->prefix);
    if (natsConnection_Subscribe(&r->sub, nc, wildcard, on_answer, r) != NATS_OK) {
        mm_reads_close(r);
        return GF_ERR_UNAVAILABLE;
    }
    natsSubscription_SetPendingLimits(r->sub, -1, -1);
    *out = r;
    return GF_OK;
}

void mm_reads_close(mm_reads *r)
{
    if (!r)
        return;
    gf_sub_close(r->sub, 2000); /* its callback uses r */
    pthread_cond_destroy(&r->room);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static struct timespec deadline_in(int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

gf_err mm_reads_batch(mm_reads *r, const char *stream, const char *bucket, const char *const *keys,
                      size_t n, int64_t wait_ms, uint8_t **vals, size_t *lens, uint64_t *revs,
                      gf_err *errs)
{
    char api[128], reply[96], body[320];
    uint64_t *ids = calloc(n ? n : 1, sizeof *ids);
    gf_err first = GF_OK;
    for (size_t i = 0; i < n; i++) {
        vals[i] = NULL;
        lens[i] = 0;
        revs[i] = 0;
        errs[i] = GF_ERR_TIMEOUT;
    }
    if (n == 0 || !ids) {
        free(ids);
        return n == 0 ? GF_OK : GF_ERR_NOMEM;
    }
    read_batch b = {.left = n, .vals = vals, .lens = lens, .revs = revs, .errs = errs};
    pthread_cond_init(&b.done, NULL);
    struct timespec until = deadline_in(wait_ms);
    snprintf(api, sizeof api, "$JS.API.DIRECT.GET.%s", stream);
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(body, sizeof body, "{\"last_by_subj\":\"$KV.%s.%s\"}", bucket, keys[i]);
        pthread_mutex_lock(&r->mu);
        uint64_t id = ++r->next_id;
        slot *sl = &r->slots[id % SLOTS];
        while (sl->id != 0 && pthread_cond_timedwait(&r->room, &r->mu, &until) == 0)
            ;
        bool room = sl->id == 0;
        if (room && len < (int)sizeof body)
            *sl = (slot){.id = id, .b = &b, .i = i};
        pthread_mutex_unlock(&r->mu);
        natsStatus s = NATS_ERR;
        if (room && len < (int)sizeof body) {
            ids[i] = id;
            snprintf(reply, sizeof reply, "%s.%llu", r->prefix, (unsigned long long)id);
            s = natsConnection_PublishRequest(r->nc, api, reply, body, len);
        }
        if (s != NATS_OK) {
            pthread_mutex_lock(&r->mu);
            if (ids[i] && sl->id == id) /* not sent: nobody will answer it */
                *sl = (slot){0};
            if (ids[i] == 0 || errs[i] == GF_ERR_TIMEOUT) {
                errs[i] = room ? GF_ERR_UNAVAILABLE : GF_ERR_TIMEOUT;
                b.left--;
            }
            pthread_mutex_unlock(&r->mu);
        }
    }
    pthread_mutex_lock(&r->mu);
    while (b.left > 0 && pthread_cond_timedwait(&b.done, &r->mu, &until) == 0)
        ;
    for (size_t i = 0; i < n; i++) { /* given up: late answers must find no one */
        slot *sl = &r->slots[ids[i] % SLOTS];
        if (ids[i] && sl->id == ids[i] && sl->b == &b)
            *sl = (slot){0};
    }
    pthread_cond_broadcast(&r->room);
    pthread_mutex_unlock(&r->mu);
    pthread_cond_destroy(&b.done);
    free(ids);
    for (size_t i = 0; i < n; i++)
        if (errs[i] != GF_OK && errs[i] != GF_ERR_NOT_FOUND && first == GF_OK)
            first = errs[i];
    return first;
}
