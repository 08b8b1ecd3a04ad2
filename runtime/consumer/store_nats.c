/*
 * store_nats.c — the consumer engine's store on NATS: pipelined reads by direct get,
 * pipelined compare-and-set through the runtime's publisher, reason records.
 *
 * Design notes:
 * - Reads. Every key a batch needs is asked at once: one $JS.API.DIRECT.GET.KV_<bucket>
 *   request per key ({"last_by_subj":"$KV.<bucket>.<key>"}), replies on the partition's
 *   own inbox "<inbox>.<gen>.<i>", so a late reply to an earlier call (a new gen) is
 *   ignored. KV buckets allow direct gets, which any replica may answer; a lagging
 *   replica's stale value only makes the compare-and-set fail, and the key is read
 *   again, so exactness does not depend on it. In flight at most READ_WINDOW at a time.
 * - Writes and reasons go through one gf_publish shared by the partitions (thread-safe):
 *   retried with the same Msg-Id until a definite answer; a call waits for the callbacks
 *   of exactly its own messages.
 * Threads: a store_call is used by one partition thread; callbacks run on the
 * publisher's threads and touch only the call's waiter (mutex) and result slots.
 */
#include "store_nats.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"

enum { READ_WINDOW = 512, READ_TIMEOUT_MS = 5000 };

/* ---- waiting for a call's callbacks --------------------------------------------- */

typedef struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t left;
} waiter;

typedef struct slot {
    waiter *w;
    gf_err *err;
    uint64_t *seq;
} slot;

static void waiter_init(waiter *w, size_t n)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->left = n;
}

static void waiter_wait(waiter *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->left > 0)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

static void on_done(const gf_publish_result *res, void *closure)
{
    slot *s = closure;
    *s->err = res->err;
    if (s->seq)
        *s->seq = res->seq;
    if (res->err != GF_OK && res->err != GF_ERR_CONFLICT)
        gf_log_warn("effect write not confirmed: the key is read again", "err=%s js_code=%d",
                    gf_err_str(res->err), res->js_code);
    pthread_mutex_lock(&s->w->mu);
    if (--s->w->left == 0)
        pthread_cond_signal(&s->w->cv);
    pthread_mutex_unlock(&s->w->mu);
}

/* Accepted sends each get a callback; a refused one is settled here. */
static void settle_refused(waiter *w, gf_err *err, gf_err why)
{
    *err = why;
    pthread_mutex_lock(&w->mu);
    w->left--;
    pthread_mutex_unlock(&w->mu);
}

/* ---- reads ------------------------------------------------------------------------ */

gf_err gf__store_part_open(gf__store_part *sp, natsConnection *nc)
{
    natsInbox *inbox = NULL;
    natsStatus s = natsInbox_Create(&inbox);
    if (s == NATS_OK) {
        snprintf(sp->inbox, sizeof sp->inbox, "%s", (const char *)inbox);
        char sub[160];
        snprintf(sub, sizeof sub, "%s.*.*", sp->inbox);
        s = natsConnection_SubscribeSync(&sp->sub, nc, sub);
        if (s == NATS_OK)
            s = natsSubscription_SetPendingLimits(sp->sub, -1, -1);
    }
    natsInbox_Destroy(inbox);
    return s == NATS_OK ? GF_OK : GF_ERR_NATS;
}

void gf__store_part_close(gf__store_part *sp, natsConnection *nc)
{
    /* A late direct-get reply may be arriving: docs/NATS-FACTS.md §4. */
    gf_sub_forget(nc, sp->sub, READ_TIMEOUT_MS);
    sp->sub = NULL;
}

/* Fills *r from a direct-get reply. */
static void read_reply(natsMsg *m, gf__cread *r)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, "Status", &v) == NATS_OK && v) {
        r->err = strcmp(v, "404") == 0 ? GF_ERR_NOT_FOUND : GF_ERR_UNAVAILABLE;
        return;
    }
    if (natsMsgHeader_Get(m, "KV-Operation", &v) == NATS_OK && v &&
        (strcmp(v, "DEL") == 0 || strcmp(v, "PURGE") == 0)) {
        r->err = GF_ERR_NOT_FOUND;
        return;
    }
    if (natsMsgHeader_Get(m, "Nats-Sequence", &v) != NATS_OK || !v) {
        r->err = GF_ERR_NATS;
        return;
    }
    r->rev = strtoull(v, NULL, 10);
    int len = natsMsg_GetDataLength(m);
    r->data = malloc(len > 0 ? (size_t)len : 1);
    if (!r->data) {
        r->err = GF_ERR_NOMEM;
        return;
    }
    memcpy(r->data, natsMsg_GetData(m), (size_t)len);
    r->len = (size_t)len;
    r->err = r->rev > 0 ? GF_OK : GF_ERR_NATS;
}

/* Asks keys[from..to) and collects the replies; unanswered ones end GF_ERR_TIMEOUT. */
static void read_window(gf__store_call *c, const char *const *keys, size_t from, size_t to,
                        gf__cread *out)
{
    gf__store_part *sp = c->part;
    uint64_t gen = ++sp->gen;
    char api[320];
    snprintf(api, sizeof api, "$JS.API.DIRECT.GET.KV_%s", c->shared->bucket);
    size_t asked = 0;
    for (size_t i = from; i < to; i++) {
        char reply[224], body[GF_CONSUMER_KEY_MAX + 300];
        out[i].err = GF_ERR_TIMEOUT;
        snprintf(reply, sizeof reply, "%s.%" PRIu64 ".%zu", sp->inbox, gen, i);
        int n = snprintf(body, sizeof body, "{\"last_by_subj\":\"$KV.%s.%s\"}", c->shared->bucket,
                         keys[i]);
        if (natsConnection_PublishRequest(c->shared->nc, api, reply, body, n) == NATS_OK)
            asked++;
        else
            out[i].err = GF_ERR_UNAVAILABLE;
    }
    int64_t deadline = gf_clock_mono_ms() + READ_TIMEOUT_MS;
    char prefix[160];
    int plen = snprintf(prefix, sizeof prefix, "%s.%" PRIu64 ".", sp->inbox, gen);
    while (asked > 0) {
        int64_t left = deadline - gf_clock_mono_ms();
        natsMsg *m = NULL;
        if (left <= 0 || natsSubscription_NextMsg(&m, sp->sub, left) != NATS_OK)
            break;
        const char *subj = natsMsg_GetSubject(m);
        if (strncmp(subj, prefix, (size_t)plen) == 0) { /* else: a late reply of an older call */
            char *end = NULL;
            unsigned long long i = strtoull(subj + plen, &end, 10);
            if (end && !*end && i >= from && i < to && out[i].err == GF_ERR_TIMEOUT) {
                out[i].err = GF_OK;
                read_reply(m, &out[i]);
                asked--;
            }
        }
        natsMsg_Destroy(m);
    }
}

void gf__store_read(void *io, const char *const *keys, size_t n, gf__cread *out)
{
    gf__store_call *c = io;
    for (size_t from = 0; from < n; from += READ_WINDOW)
        read_window(c, keys, from, from + READ_WINDOW < n ? from + READ_WINDOW : n, out);
}

/* ---- writes ----------------------------------------------------------------------- */

void gf__store_write(void *io, gf__cwrite *w, size_t n)
{
    gf__store_call *c = io;
    waiter wt;
    slot *slots = calloc(n, sizeof *slots);
    if (!slots) {
        for (size_t i = 0; i < n; i++)
            w[i].err = GF_ERR_NOMEM;
        return;
    }
    waiter_init(&wt, n);
    for (size_t i = 0; i < n; i++) {
        slots[i] = (slot){.w = &wt, .err = &w[i].err, .seq = &w[i].new_rev};
        gf_publish_cas cas = {
            .kind = w[i].rev ? GF_PUBLISH_CAS_UPDATE : GF_PUBLISH_CAS_CREATE,
            .bucket = c->shared->bucket,
            .key = w[i].key,
            .revision = w[i].rev,
            .data = w[i].data,
            .len = w[i].len,
            .done = on_done,
            .closure = &slots[i],
        };
        gf_err err = gf_publish_cas_send(c->shared->pub, &cas);
        if (err != GF_OK)
            settle_refused(&wt, &w[i].err, err);
    }
    waiter_wait(&wt);
    free(slots);
}

gf_err gf__store_reasons(void *io, const gf__creason *r, size_t n)
{
    gf__store_call *c = io;
    waiter wt;
    slot *slots = calloc(n, sizeof *slots);
    gf_err *errs = calloc(n, sizeof *errs);
    if (!slots || !errs) {
        free(slots);
        free(errs);
        return GF_ERR_NOMEM;
    }
    waiter_init(&wt, n);
    for (size_t i = 0; i < n; i++) {
        char subject[400];
        snprintf(subject, sizeof subject, "$KV.%s.%s", c->shared->reasons_bucket, r[i].key);
        slots[i] = (slot){.w = &wt, .err = &errs[i]};
        gf_publish_msg m = {.subject = subject,
                            .msg_id = r[i].msg_id,
                            .data = r[i].data,
                            .len = r[i].len,
                            .done = on_done,
                            .closure = &slots[i]};
        gf_err err = gf_publish_send(c->shared->pub, &m);
        if (err != GF_OK)
            settle_refused(&wt, &errs[i], err);
    }
    waiter_wait(&wt);
    gf_err err = GF_OK;
    for (size_t i = 0; i < n && err == GF_OK; i++)
        err = errs[i] == GF_OK ? GF_OK : GF_ERR_RETRY;
    free(slots);
    free(errs);
    return err;
}

/* ---- ownership and pauses ----------------------------------------------------------- */

bool gf__store_owned(void *io)
{
    gf__store_call *c = io;
    /* Also keeps the message from being redelivered while we wait. */
    return !c->msg || gf_msg_in_progress(c->msg) != GF_ERR_CONFLICT;
}

void gf__store_pause(void *io, int64_t ms)
{
    (void)io;
    gf_clock_sleep_ms(ms);
}
