/*
 * follow.c — every replica's follower of stream KV_leaderboard: each write of bucket
 * `leaderboard` (every partition's effects) applied to the in-memory boards, in stream
 * order, so any replica answers queries from whole boards.
 *
 * Design notes:
 * - An ephemeral pull consumer of KV_leaderboard starting at applied_seq + 1 (after a
 *   snapshot: its as_of + 1), acked all at once per fetch, fetched with gf_pull_fetch
 *   (a request never outlives its fetch: gamefn/fetch.h). On any error it is dropped and
 *   made again from applied_seq + 1: a write is applied at most once and none is skipped,
 *   because applied_seq only moves under the lock together with the boards. A bucket
 *   with history 1 keeps only each key's last revision, so a replay from sequence 1 reads
 *   one message per key, not the whole history.
 * - Freshness: pending is the consumer's count of messages after the last one fetched
 *   (0 after a fetch that found nothing); heard is when the follower last got an answer.
 * - Periods no longer kept are trimmed every few seconds.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/fetch.h"
#include "gamefn/log.h"
#include "lb_fn.h"

/* The subscription is forgotten (gf_sub_forget) rather than destroyed: a late answer to
 * the last fetch may be arriving (docs/NATS-FACTS.md §4). */
enum { FETCH_WAIT_MS = 1000, RETRY_MS = 500, TRIM_EVERY_MS = 5000 };

static const char prefix[] = "$KV." LB_BUCKET ".";

static natsSubscription *subscribe(lb_fn *lb, uint64_t start)
{
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "KV_" LB_BUCKET;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = start;
    so.Config.AckPolicy = js_AckAll;
    so.Config.MaxAckPending = -1;
    so.Config.InactiveThreshold = (int64_t)60 * 1000000000;
    natsSubscription *sub = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PullSubscribe(&sub, lb->js, "$KV." LB_BUCKET ".>", NULL, NULL, &so, &jerr);
    if (s != NATS_OK) {
        gf_log_warn("cannot follow KV_leaderboard yet", "start=%" PRIu64 " status=%d js_code=%d",
                    start, (int)s, (int)jerr);
        return NULL;
    }
    return sub;
}

/* Applies one fetched batch under the write lock; the last message's metadata gives
 * the sequence reached and the pending count. */
static void apply_batch(lb_fn *lb, natsMsgList *list)
{
    uint64_t pending = 0;
    pthread_rwlock_wrlock(&lb->lock);
    for (int i = 0; i < list->Count; i++) {
        natsMsg *m = list->Msgs[i];
        jsMsgMetaData *meta = NULL;
        if (natsMsg_GetMetaData(&meta, m) != NATS_OK)
            continue;
        uint64_t seq = meta->Sequence.Stream;
        pending = meta->NumPending;
        jsMsgMetaData_Destroy(meta);
        if (seq <= lb->applied_seq)
            continue; /* a redelivery after a re-subscribe */
        const char *subject = natsMsg_GetSubject(m);
        const char *op = NULL;
        bool deleted = natsMsgHeader_Get(m, "KV-Operation", &op) == NATS_OK && op &&
                       (strcmp(op, "DEL") == 0 || strcmp(op, "PURGE") == 0);
        if (strncmp(subject, prefix, sizeof prefix - 1) == 0)
            lb_boards_apply(lb->boards, subject + sizeof prefix - 1,
                            (const uint8_t *)natsMsg_GetData(m), (size_t)natsMsg_GetDataLength(m),
                            deleted);
        lb->applied_seq = seq;
    }
    atomic_store(&lb->as_of_seq, lb->applied_seq);
    pthread_rwlock_unlock(&lb->lock);
    atomic_store(&lb->pending, pending);
    atomic_store(&lb->heard_unix_ms, gf_clock_unix_ms());
    if (list->Count > 0)
        natsMsg_Ack(list->Msgs[list->Count - 1], NULL); /* AckAll: one for the batch */
}

static void *follow_main(void *arg)
{
    lb_fn *lb = arg;
    natsSubscription *sub = NULL;
    int64_t next_trim = 0;
    while (!atomic_load(&lb->stop)) {
        if (!sub && !(sub = subscribe(lb, lb->applied_seq + 1))) {
            gf_clock_sleep_ms(RETRY_MS);
            continue;
        }
        natsMsgList list = {0};
        natsStatus s = gf_pull_fetch(sub, &list, (int)lb->cfg->follow_batch, FETCH_WAIT_MS);
        if (s == NATS_OK) {
            apply_batch(lb, &list);
        } else if (s == NATS_TIMEOUT) {
            atomic_store(&lb->pending, 0);
            atomic_store(&lb->heard_unix_ms, gf_clock_unix_ms());
            atomic_store(&lb->caught_up, 1);
        } else {
            gf_log_warn("following KV_leaderboard failed: subscribing again",
                        "status=%d applied=%" PRIu64, (int)s, lb->applied_seq);
            gf_sub_forget(lb->nc, sub, GF_SUB_FORGET_WAIT_MS); /* deletes the ephemeral consumer */
            sub = NULL;
            gf_clock_sleep_ms(RETRY_MS);
        }
        natsMsgList_Destroy(&list);
        int64_t now = gf_clock_unix_ms();
        if (now >= next_trim) {
            pthread_rwlock_wrlock(&lb->lock);
            lb_boards_trim(lb->boards, now);
            pthread_rwlock_unlock(&lb->lock);
            next_trim = now + TRIM_EVERY_MS;
        }
    }
    gf_sub_forget(lb->nc, sub, GF_SUB_FORGET_WAIT_MS);
    return NULL;
}

gf_err lb_follow_start(lb_fn *lb)
{
    atomic_store(&lb->stop, 0);
    if (pthread_create(&lb->follower, NULL, follow_main, lb) != 0)
        return GF_ERR_NOMEM;
    lb->follower_started = true;
    return GF_OK;
}

void lb_follow_stop(lb_fn *lb)
{
    if (!lb->follower_started)
        return;
    atomic_store(&lb->stop, 1);
    pthread_join(lb->follower, NULL);
    lb->follower_started = false;
}
