/*
 * endpoint_partitioned_worker.c — one tenure of one partition: the thread that handles a
 * partition while this instance holds its lease.
 *
 * Design notes:
 * - Order. A partition is handled by one thread, one batch at a time: fetch up to
 *   runtime.fetch_batch messages, on_batch, ack, fetch again. A failed batch is retried in
 *   place (same messages, after the consumer's retry delay, kept in progress), never nak'd:
 *   a nak'd message would come back after newer ones and break per-key order. After
 *   max_deliver attempts the batch is split and each message gets one last try on its own;
 *   one that still fails is terminated (dead letter: the server's advisory) and the
 *   partition moves on.
 * - Acks. Fire-and-forget (natsMsg_Ack) for every message of the batch but the last, which
 *   is acked with AckSync: the server applies a consumer's acks in order (docs/
 *   NATS-FACTS.md §3), so its reply means the whole batch is acked — one round trip per
 *   batch, not per message. That keeps the consumer's ack state exact, so the next owner
 *   (or a recreated consumer) never has to wait for or replay what this one finished.
 *   With ack_policy all, the AckSync of the last message alone acks the batch (the
 *   per-message acks are the server's largest per-event cost after storing the event);
 *   rejected messages are still terminated one by one first, which under that policy
 *   also acks what precedes them — handled already, since acks wait for the whole batch.
 * - Linger. A fetch takes what the server has at once. Under a steady trickle that is a
 *   few events per batch, each batch paying its own effect writes; with linger set, the
 *   fetch after a short one waits until linger after that one began, so the events
 *   gather at the server (not delivered, so no ack wait runs) and share a batch.
 * - The lease deadline. owner.valid_until_ms (monotonic) is the last moment this tenure may
 *   act; the coordinator moves it forward on every renewal. Nothing starts, is acked or is
 *   kept in progress past it; a long poll never outlives it (its expiry ends before it). A
 *   batch whose handler returns too late is abandoned without an ack: its messages come
 *   back to the next owner. See endpoint_partitioned.c for why the next owner cannot start
 *   before this one stopped.
 * - Taking over. If the consumer has unacked messages when a tenure starts, they were
 *   delivered to a previous owner that stopped without acking them (killed, or cut off from
 *   the KV). The server hands them out again, in stream order and before any newer message,
 *   once their ack wait has run out (docs/NATS-FACTS.md §3) — so the new owner waits out
 *   the longest ack wait the consumer can apply before its first fetch. Fetching earlier
 *   would get newer messages first and break per-key order. The same wait follows every
 *   bind: messages delivered to a subscription that was dropped come back the same way.
 * - Deliveries elsewhere. The deadline checks keep this replica's own pull requests
 *   within its tenure, but no client can close the gap between its last check and the
 *   moment the request reaches the server: a process stopped in between (SIGSTOP, a VM
 *   paused) sends it when it wakes, long after its tenure, and the server then gives
 *   the request messages the owner never sees — lost under ack_policy all (the owner's
 *   next ack covers them), out of order otherwise. A forged request does the same. So
 *   the owner checks that the server's delivery numbers (the consumer sequence) follow
 *   one another: a gap means someone else got messages. The batch that shows it is
 *   handed back unhandled and unacked, and the worker binds again and waits out the ack
 *   wait as a new owner does, so what went elsewhere comes back first (and each batch
 *   is put in stream order before it is handled: see stream_order).
 *   (Binding again also drops anything queued on the old subscription: a late delivery
 *   of our own would otherwise be fetched next, ahead of what it must follow.) An idle
 *   partition needs no check of its own: nothing is acked until a delivery comes, and
 *   the first one shows the gap.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints/endpoint_partitioned.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"

enum {
    POLL_MAX_MS = 1000, /* a stop request is noticed at least this often */
    POLL_MIN_MS = 50,   /* below this before the deadline: do not ask */
    REBIND_AFTER_ERRORS = 3,
    CHECK_MS = 5000, /* an idle partition's consumer is looked at this often */
};

bool gf__partition_valid(const part_slot *slot)
{
    return gf_clock_mono_ms() < atomic_load(&slot->owner.valid_until_ms);
}

typedef struct tenure {
    part_slot *slot;
    part_group *g;
    const gf_endpoint *ep;
    gf_fn *fn;
    gf_msg *msgs;     /* batch buffers, g->batch entries */
    gf_err *verdicts; /* idem */
} tenure;

static bool go_on(const tenure *t)
{
    return !atomic_load(&t->slot->stop) && !atomic_load(t->g->run->host->stop) &&
           gf__partition_valid(t->slot);
}

/* Sleeps until `until` (monotonic) unless the tenure must end first; true if it slept
 * the whole time. */
static bool pause_until(const tenure *t, int64_t until)
{
    while (gf_clock_mono_ms() < until) {
        if (!go_on(t))
            return false;
        gf_clock_sleep_ms(20);
    }
    return true;
}

/* The call is the message's last chance: its failure terminates it (see deliver). */
static bool last_try(const tenure *t, const gf_msg *msgs, size_t n, unsigned attempt)
{
    int64_t max = t->slot->cc.max_deliver;
    return n == 1 && max > 0 && msgs[0].num_delivered + attempt - 1 >= (uint64_t)max;
}

/* One call of the handler; verdicts reset first. */
static gf_err call(tenure *t, gf_msg *msgs, gf_err *verdicts, size_t n, unsigned attempt)
{
    int64_t start = gf_clock_mono_ns();
    for (size_t i = 0; i < n; i++)
        verdicts[i] = GF_OK;
    gf_batch batch = {
        .partition = t->slot->partition,
        .token = atomic_load(&t->slot->token),
        .msgs = msgs,
        .len = n,
        .attempt = attempt,
        .verdicts = verdicts,
        .last_try = last_try(t, msgs, n, attempt),
    };
    gf_err err = t->ep->partitioned.on_batch(t->fn, &batch);
    gf__endpoint_record(t->g->run, start, err, NULL);
    return err;
}

/* Runs the handler on msgs[0..n) until it succeeds, retrying in place; false when the
 * tenure ended first (the batch is then abandoned, unacked). */
static bool deliver(tenure *t, gf_msg *msgs, gf_err *verdicts, size_t n)
{
    const gf_consumer_config *cc = &t->slot->cc;
    for (unsigned attempt = 1;; attempt++) {
        /* A fetched batch is handled even when a stop was asked meanwhile (only the
         * deadline prevents it); a retry is not started once a stop was asked. */
        if (attempt == 1 ? !gf__partition_valid(t->slot) : !go_on(t))
            return false;
        gf_err err = call(t, msgs, verdicts, n, attempt);
        if (err == GF_OK)
            return true;
        uint64_t deliveries = msgs[0].num_delivered + attempt - 1;
        if (cc->max_deliver > 0 && deliveries >= (uint64_t)cc->max_deliver) {
            if (n == 1) {
                gf_log_warn("message failed max_deliver times: dead-lettered",
                            "endpoint=%s partition=%u seq=%" PRIu64 " attempts=%" PRIu64 " err=%s",
                            t->ep->name, t->slot->partition, msgs[0].stream_seq, deliveries,
                            gf_err_str(err));
                verdicts[0] = GF_ERR_PERMANENT;
                return true;
            }
            /* Split: one last try each, so one poison message cannot hold the rest. */
            for (size_t i = 0; i < n; i++) {
                if (!go_on(t))
                    return false;
                if (call(t, &msgs[i], &verdicts[i], 1, attempt + 1) != GF_OK) {
                    gf_log_warn("message failed max_deliver times: dead-lettered",
                                "endpoint=%s partition=%u seq=%" PRIu64 " err=%s", t->ep->name,
                                t->slot->partition, msgs[i].stream_seq, gf_err_str(err));
                    verdicts[i] = GF_ERR_PERMANENT;
                }
            }
            return true;
        }
        int64_t delay = gf__pull_retry_delay_ms(cc, deliveries);
        gf_log_warn("batch failed, retrying it in place",
                    "endpoint=%s partition=%u first_seq=%" PRIu64 " len=%zu attempt=%u err=%s "
                    "delay_ms=%lld",
                    t->ep->name, t->slot->partition, msgs[0].stream_seq, n, attempt,
                    gf_err_str(err), (long long)delay);
        if (!pause_until(t, gf_clock_mono_ms() + delay))
            return false;
    }
}

/* Terms the poison, acks the rest (the last one synchronously). */
static void settle(tenure *t, natsMsg **raw, size_t n)
{
    int last_ok = -1;
    for (size_t i = 0; i < n; i++) {
        if (t->verdicts[i] == GF_ERR_PERMANENT || t->verdicts[i] == GF_ERR_INVALID) {
            gf_log_warn("message rejected for good",
                        "endpoint=%s partition=%u seq=%" PRIu64 " err=%s", t->ep->name,
                        t->slot->partition, t->msgs[i].stream_seq, gf_err_str(t->verdicts[i]));
            natsMsg_Term(raw[i], NULL);
        } else {
            last_ok = (int)i;
        }
    }
    for (int i = 0; t->slot->cc.ack_policy == GF_ACK_EXPLICIT && i < last_ok; i++) {
        if (t->verdicts[i] != GF_ERR_PERMANENT && t->verdicts[i] != GF_ERR_INVALID)
            natsMsg_Ack(raw[i], NULL);
    }
    if (last_ok < 0)
        return;
    if (natsMsg_AckSync(raw[last_ok], NULL, NULL) == NATS_OK)
        gf__pull_acked(&t->slot->bind, t->msgs[n - 1].stream_seq);
    else
        gf_log_warn("ack not confirmed: the batch may be delivered again",
                    "endpoint=%s partition=%u seq=%" PRIu64, t->ep->name, t->slot->partition,
                    t->msgs[last_ok].stream_seq);
}

/* Puts the batch in stream order (raw alongside). Redeliveries can arrive out of it:
 * nats-server 2.9.10 queues the messages each of its checks finds expired in stream
 * order, but one whose ack wait is longer (a backoff list gives a message's later
 * deliveries longer ones) expires in a later check, behind newer ones — after a
 * takeover or a hand-back, a batch can hold both. Insertion sort: a batch is almost
 * always in order already. True if anything moved. */
static bool stream_order(tenure *t, natsMsg **raw, size_t n)
{
    bool moved = false;
    for (size_t i = 1; i < n; i++) {
        gf_msg m = t->msgs[i];
        natsMsg *r = raw[i];
        size_t j = i;
        for (; j > 0 && t->msgs[j - 1].stream_seq > m.stream_seq; j--) {
            t->msgs[j] = t->msgs[j - 1];
            raw[j] = raw[j - 1];
        }
        if (j != i) {
            t->msgs[j] = m;
            raw[j] = r;
            moved = true;
        }
    }
    return moved;
}

/* Handles one fetched batch; false when the tenure must end (the batch was abandoned).
 * A batch whose deliveries do not follow the last this tenure got is handed back
 * unhandled (delivered_elsewhere is then set: the caller binds again). */
static bool run_batch(tenure *t, natsMsgList *list, int64_t fetched_ms)
{
    gf__pull_binding *b = &t->slot->bind;
    size_t n = (size_t)list->Count;
    for (size_t i = 0; i < n; i++) {
        uint64_t expected = b->delivered_seq + 1;
        uint64_t delivery_seq = gf__pull_msg(list->Msgs[i], &t->msgs[i]);
        if (!gf__pull_in_turn(b, delivery_seq)) {
            gf_log_warn("partition messages were delivered to another reader (a previous "
                        "owner's late pull request?): handing this batch back unhandled and "
                        "waiting for the server to deliver them again in order",
                        "endpoint=%s partition=%u delivery_seq=%" PRIu64 " expected=%" PRIu64
                        " first_seq=%" PRIu64 " len=%zu",
                        t->ep->name, t->slot->partition, delivery_seq, expected,
                        t->msgs[0].stream_seq, n);
            return true;
        }
        t->msgs[i].owner = &t->slot->owner;
    }
    if (stream_order(t, list->Msgs, n))
        gf_log_info("redeliveries arrived out of stream order: the batch is handled sorted",
                    "endpoint=%s partition=%u first_seq=%" PRIu64 " len=%zu", t->ep->name,
                    t->slot->partition, t->msgs[0].stream_seq, n);
    gf__keeper_hold hold;
    gf__keeper_add(t->g->keeper, &hold, list->Msgs, n, fetched_ms, &t->slot->owner.valid_until_ms);
    bool done = deliver(t, t->msgs, t->verdicts, n);
    gf__keeper_remove(t->g->keeper, &hold);
    if (done && !gf__partition_valid(t->slot))
        done = false; /* the handler ran past the lease: no ack from us any more */
    if (!done) {
        gf_log_warn("partition batch abandoned unacked: it will be delivered to the next owner",
                    "endpoint=%s partition=%u first_seq=%" PRIu64 " len=%zu", t->ep->name,
                    t->slot->partition, t->msgs[0].stream_seq, n);
        return false;
    }
    settle(t, list->Msgs, n);
    return true;
}

/* Unacked messages of someone else (a previous owner, a dropped subscription, a late
 * request) come back only after their ack wait: wait it out before fetching, or newer
 * messages would come first. */
static bool wait_for_unacked(tenure *t)
{
    const gf__pull_binding *b = &t->slot->bind;
    if (b->num_ack_pending == 0)
        return true;
    int64_t wait = b->ack_wait_max_ms + b->ack_wait_max_ms / 10 + 100;
    gf_log_info("partition has unacked messages delivered elsewhere (a previous owner, a "
                "dropped subscription): waiting for them to be redelivered first",
                "endpoint=%s partition=%u unacked=%" PRIu64 " wait_ms=%lld", t->ep->name,
                t->slot->partition, b->num_ack_pending, (long long)wait);
    return pause_until(t, gf_clock_mono_ms() + wait);
}

/* Binds, retrying, while the tenure lasts. */
static bool bind(tenure *t)
{
    gf__pull_binding *b = &t->slot->bind;
    while (!b->sub) {
        if (!go_on(t))
            return false;
        if (gf__pull_bind(b) != GF_OK)
            pause_until(t, gf_clock_mono_ms() + gf__pull_bind_delay_ms(b));
    }
    gf__keeper_set_ack_wait(t->g->keeper, b->ack_wait_ms);
    return wait_for_unacked(t);
}

static void loop(tenure *t)
{
    const gf_runtime_config *rc = &t->g->run->host->cfg->runtime;
    gf__pull_binding *b = &t->slot->bind;
    int errors = 0;
    int64_t linger_until = 0; /* no fetch before this (monotonic ms) */

    if (!bind(t))
        return;
    while (go_on(t)) {
        if (!b->sub && !bind(t))
            return;
        if (!pause_until(t, linger_until))
            return;
        int64_t now = gf_clock_mono_ms();
        int64_t poll = atomic_load(&t->slot->owner.valid_until_ms) - now - POLL_MIN_MS;
        if (poll > POLL_MAX_MS)
            poll = POLL_MAX_MS;
        if (poll > rc->fetch_expiry_ms)
            poll = rc->fetch_expiry_ms;
        if (poll < POLL_MIN_MS) {
            gf_clock_sleep_ms(POLL_MIN_MS); /* the deadline is near: wait for a renewal */
            continue;
        }
        natsMsgList list = {0};
        natsStatus s =
            gf__pull_fetch_until(b->sub, &list, t->g->batch, poll,
                                 atomic_load(&t->slot->owner.valid_until_ms) - POLL_MIN_MS);
        bool ended = false;
        if (s == NATS_OK && list.Count < t->g->batch)
            linger_until = now + t->slot->cc.linger_ms;
        if (s == NATS_OK) {
            errors = 0;
            ended = !gf__partition_valid(t->slot) || !run_batch(t, &list, now);
        } else if (s != NATS_TIMEOUT && ++errors >= REBIND_AFTER_ERRORS) {
            gf_log_warn("fetch failed", "endpoint=%s partition=%u status=%d", t->ep->name,
                        t->slot->partition, (int)s);
            gf__pull_unbind(b);
            errors = 0;
        }
        natsMsgList_Destroy(&list);
        if (ended)
            return;
        /* Idle, or the consumer is gone: look (not while messages flow). */
        if (s == NATS_TIMEOUT && b->sub && gf__pull_check(b, CHECK_MS) == GF_ERR_NOT_FOUND)
            gf__pull_unbind(b);
        if (b->sub && b->delivered_elsewhere)
            gf__pull_unbind(b); /* the next bind waits for what went elsewhere */
    }
}

void *gf__partition_worker(void *arg)
{
    part_slot *slot = arg;
    part_group *g = slot->group;
    tenure t = {
        .slot = slot,
        .g = g,
        .ep = g->run->ep,
        .fn = g->run->host->fn,
        .msgs = calloc((size_t)g->batch, sizeof(gf_msg)),
        .verdicts = calloc((size_t)g->batch, sizeof(gf_err)),
    };
    uint64_t token = atomic_load(&slot->token);
    const gf_partitioned_endpoint *pe = &t.ep->partitioned;
    gf_err err = t.msgs && t.verdicts ? GF_OK : GF_ERR_NOMEM;
    if (err == GF_OK && pe->on_acquire)
        err = pe->on_acquire(t.fn, slot->partition, token);
    if (err != GF_OK) {
        gf_log_warn("partition not taken: on_acquire failed", "endpoint=%s partition=%u err=%s",
                    t.ep->name, slot->partition, gf_err_str(err));
    } else {
        gf_log_info("partition acquired", "endpoint=%s partition=%u token=%" PRIu64, t.ep->name,
                    slot->partition, token);
        loop(&t);
        gf__pull_unbind(&slot->bind); /* nothing of it is held any more */
        if (pe->on_release)
            pe->on_release(t.fn, slot->partition, token);
        gf_log_info("partition released", "endpoint=%s partition=%u token=%" PRIu64 " reason=%s",
                    t.ep->name, slot->partition, token,
                    gf__partition_valid(slot) ? "asked" : "lease deadline");
    }
    free(t.msgs);
    free(t.verdicts);
    /* A problem binding this partition is this tenure's: the next owner finds its own. */
    gf__health_set(&slot->health, g->run, NULL);
    atomic_store(&slot->done, 1);
    return NULL;
}
