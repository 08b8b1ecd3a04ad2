/*
 * producer_loop.c — the producer's thread: publish the queue in seq order within the
 * window, follow the answers, stop and probe when the stream does not take events,
 * read spilled records back from the spool, persist the acknowledged floor.
 *
 * Design notes.
 * - Modes. RUNNING sends every entry that is neither acknowledged nor in flight, in
 *   seq order, as long as gf_ack_floor_can_send allows (seq < oldest unacknowledged +
 *   W): the cursor walks the queue once. Any failure (a give-up after give_up_ms, a
 *   JetStream refusal such as a full stream, a closed connection) or a disconnected
 *   connection moves to BLOCKED: nothing new is sent; the events already in flight
 *   finish (gf_publish keeps resending them with their ids until its give-up). Once
 *   none is in flight and the backoff has passed, the cursor goes back to the oldest
 *   unacknowledged entry and that one alone is sent (PROBING). Its acknowledgement
 *   resumes RUNNING from there, in order, with the failed entries resent under their
 *   original ids; its failure is one more BLOCKED round with a longer backoff.
 * - The first publish of an event and its resends go through gf_publish (same
 *   Msg-Id, resend after ack_timeout_ms or a "no responders"), which rides out a
 *   leader election shorter than give_up_ms without the producer stopping at all.
 * - Why no answer: before a probe that follows a give-up while connected, the
 *   thread asks JetStream which stream captures the event's stored subject
 *   (producer_diag.c), so "no stream captures it" and "the stream does not answer"
 *   are told apart from "NATS is down".
 * - Answers arrive on nats.c's threads: on_done only marks the entry, the floor and
 *   the mode under mu; entries are freed here only. The thread does not wake per
 *   answer or per emit: while events are in flight it looks every BUSY_POLL_MS (1 ms),
 *   and only an emit into an idle producer, a failure or a probe's answer wakes it
 *   at once. Waking per event costs a context switch per event (measured: 0.6 of the
 *   raw publish rate that way, the same trap gf_publish's senders avoid).
 * - Seqs without a record (a drop for space, the seqs a reboot skipped) are marked
 *   acknowledged when the cursor passes them, within the window like a send: the
 *   floor never jumps past an event that may still be in flight.
 * - Housekeeping (under the spool lock, so emit waits for it): the interval fsync,
 *   and every ack_persist_ms the floor into the spool's state file, which also
 *   deletes the segments below it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gamefn/backoff.h"
#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/util.h"
#include "producer_internal.h"

enum {
    IDLE_WAIT_MS = 50, /* longest sleep: housekeeping and connection checks */
    BUSY_POLL_MS = 1,  /* with events in flight: answers are looked at this often */
    ROOM_RETRY_MS = 1, /* gf_publish had no free slot yet (a callback finishing) */
    CLOSE_PUBLISH_MS = 200,
    REFILL_RETRY_MS = 1000,
    WINDOW_SLACK = 64, /* gf_publish's window over W: our count drops inside its callback */
};

static void wait_until(pthread_cond_t *c, pthread_mutex_t *mu, int64_t until_ms)
{
    struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (long)(until_ms % 1000) * 1000000};
    pthread_cond_timedwait(c, mu, &ts);
}

static pr_entry **slot(gf_producer *p, size_t i)
{
    return &p->slots[(p->start + i) % p->cap];
}

gf_err gf__producer_push(gf_producer *p, pr_entry *e)
{
    if (p->len == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 1024;
        pr_entry **s = malloc(cap * sizeof *s);
        if (s == NULL)
            return GF_ERR_NOMEM;
        for (size_t i = 0; i < p->len; i++)
            s[i] = *slot(p, i);
        free(p->slots);
        p->slots = s;
        p->cap = cap;
        p->start = 0;
    }
    *slot(p, p->len++) = e;
    return GF_OK;
}

/* mu held: frees the entries the floor has passed. */
static void pop_acked(gf_producer *p)
{
    while (p->len > 0 && p->head_seq <= p->floor.floor) {
        pr_entry *e = *slot(p, 0);
        if (e) {
            p->mem_bytes -= e->bytes;
            free(e);
        }
        p->start = (p->start + 1) % p->cap;
        p->len--;
        p->head_seq++;
        if (p->cursor > 0)
            p->cursor--;
    }
}

static bool connected(gf_producer *p)
{
    return p->nc && natsConnection_Status(p->nc) == NATS_CONN_STATUS_CONNECTED;
}

void gf__producer_block(gf_producer *p, gf_producer_state state, int js_code, const char *fmt, ...)
{
    int64_t now = gf_clock_mono_ms();
    bool was_running = p->mode == PR_RUNNING;
    if (p->mode != PR_BLOCKED) {
        p->attempt = was_running ? 1 : p->attempt + 1;
        p->mode = PR_BLOCKED;
        p->retry_at_ms = now + gf_backoff_ms(p->attempt, p->cfg.retry_min_ms, p->cfg.retry_max_ms,
                                             p->cfg.retry_min_ms);
    }
    if (p->stopped_at_ms == 0) {
        p->stopped_at_ms = now;
        p->count.stops++;
    }
    bool changed = p->state != state;
    p->state = state;
    if (js_code)
        p->js_code = js_code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
    p->diagnose = state == GF_PRODUCER_NO_ANSWER;
    if ((was_running || changed) && !atomic_load(&p->stop)) {
        char q[GF_PRODUCER_REASON_MAX + 8];
        gf_log_warn("producer: not publishing; events stay spooled",
                    "source=%s state=%s reason=%s spooled=%" PRIu64, p->source_id,
                    gf_producer_state_str(state), gf_log_quote(q, sizeof q, p->reason),
                    p->count.spooled);
    }
}

static void resume(gf_producer *p)
{
    if (p->stopped_at_ms && !atomic_load(&p->stop))
        gf_log_info("producer: publishing again",
                    "source=%s stopped_ms=%" PRId64 " spooled=%" PRIu64, p->source_id,
                    gf_clock_mono_ms() - p->stopped_at_ms, p->count.spooled);
    p->mode = PR_RUNNING;
    p->state = GF_PRODUCER_OK;
    p->reason[0] = '\0';
    p->attempt = 0;
    p->stopped_at_ms = 0;
    p->diagnose = false;
}

/* nats.c thread (or the closing thread): the one answer of one send of e. */
static void on_done(const gf_publish_result *res, void *closure)
{
    pr_entry *e = closure;
    gf_producer *p = e->p;
    pthread_mutex_lock(&p->mu);
    p->in_flight--;
    if (res->err == GF_OK) {
        if (e->state != PR_ACKED) {
            e->state = PR_ACKED;
            p->count.acknowledged++;
            p->count.duplicates += res->duplicate;
            p->count.spooled--;
        }
        uint64_t before = p->floor.floor;
        gf_ack_floor_mark(&p->floor, e->seq);
        if (p->mode == PR_PROBING)
            resume(p);
        if (p->floor.floor != before)
            pthread_cond_broadcast(&p->progress);
    } else {
        e->state = PR_FAILED;
        bool up = connected(p);
        if (res->err == GF_ERR_NATS && res->js_code == 10077)
            gf__producer_block(p, GF_PRODUCER_STREAM_FULL, res->js_code,
                               "the stream is full (max messages or bytes, discard new: "
                               "JetStream 10077)");
        else if (res->err == GF_ERR_NATS || res->err == GF_ERR_CONFLICT)
            gf__producer_block(p, GF_PRODUCER_REFUSED, res->js_code,
                               "the stream refused the event (JetStream %d)", res->js_code);
        else if (res->err == GF_ERR_TIMEOUT && up)
            gf__producer_block(p, GF_PRODUCER_NO_ANSWER, 0,
                               "no answer to publishes within %" PRId64 " ms", p->cfg.give_up_ms);
        else if (res->err == GF_ERR_NOMEM)
            gf__producer_block(p, GF_PRODUCER_REFUSED, 0, "out of memory while resending");
        else if (p->nc && natsConnection_Status(p->nc) == NATS_CONN_STATUS_CLOSED)
            gf__producer_block(p, GF_PRODUCER_CLOSED, 0, "the NATS connection is closed");
        else
            gf__producer_block(p, GF_PRODUCER_DISCONNECTED, 0, "disconnected from NATS");
    }
    /* Answers are picked up by the thread's busy poll; only the ones that change what
     * it does next wake it (a wake per answer would cost a context switch per event). */
    bool wake = res->err != GF_OK || p->mode != PR_RUNNING;
    if (wake && p->thread_waiting)
        pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
}

/* mu held; unlocked during the send. false: not sent (the mode says why). */
static bool send_entry(gf_producer *p, pr_entry *e, size_t index)
{
    pr_entry_state before = e->state;
    bool sent_before = e->sent;
    bool replay = e->sent || e->seq < p->first_seq;
    e->state = PR_INFLIGHT;
    e->sent = true;
    p->in_flight++;
    p->cursor = index + 1;
    pthread_mutex_unlock(&p->mu);

    /* The headers from the record's own id ("<source>-<seq>"), so they always agree
     * with the body, whichever run wrote it. */
    char seq[24], source[GF_PRODUCER_EVENT_ID_MAX];
    int seq_len = snprintf(seq, sizeof seq, "%" PRIu64, e->seq);
    size_t id_len = strlen(e->msg_id);
    size_t source_len = id_len > (size_t)seq_len ? id_len - (size_t)seq_len - 1 : 0;
    snprintf(source, sizeof source, "%.*s", (int)source_len, e->msg_id);
    gf_publish_header h[2] = {{GF_WIRE_HDR_SOURCE, source}, {GF_WIRE_HDR_SOURCE_SEQ, seq}};
    gf_publish_msg m = {
        .subject = e->subject,
        .msg_id = e->msg_id,
        .data = e->data,
        .len = e->data_len,
        .headers = h,
        .headers_len = 2,
        .done = on_done,
        .closure = e,
    };
    gf_err err = gf_publish_send(p->pub, &m);

    pthread_mutex_lock(&p->mu);
    if (err == GF_OK) {
        p->count.replayed += replay;
        return true;
    }
    e->state = before;
    e->sent = sent_before;
    p->in_flight--;
    p->cursor = index;
    if (err == GF_ERR_TIMEOUT) /* no free slot this instant: try again shortly */
        return false;
    if (err == GF_ERR_INVALID)
        gf__producer_block(p, GF_PRODUCER_REFUSED, 0,
                           "event seq %" PRIu64 " refused by the client: larger than the "
                           "server's max_payload",
                           e->seq);
    else if (err == GF_ERR_NOMEM)
        gf__producer_block(p, GF_PRODUCER_REFUSED, 0, "out of memory");
    else if (p->nc && natsConnection_Status(p->nc) == NATS_CONN_STATUS_CLOSED)
        gf__producer_block(p, GF_PRODUCER_CLOSED, 0, "the NATS connection is closed");
    else
        gf__producer_block(p, GF_PRODUCER_DISCONNECTED, 0, "disconnected from NATS");
    return false;
}

/* mu held. Marks the seq at `index` acknowledged if it has no record and the window
 * allows; true if the cursor may pass it. */
static bool pass_hole(gf_producer *p, size_t index)
{
    uint64_t seq = p->head_seq + index;
    if (!gf_ack_floor_can_send(&p->floor, seq))
        return false;
    uint64_t before = p->floor.floor;
    gf_ack_floor_mark(&p->floor, seq);
    if (p->floor.floor != before)
        pthread_cond_broadcast(&p->progress);
    return true;
}

/* mu held, RUNNING: sends what the window allows. Returns true when it stopped for
 * lack of a free gf_publish slot (the caller retries shortly). */
static bool pump(gf_producer *p, bool *need_refill)
{
    if (p->cursor < p->len && !connected(p)) {
        gf__producer_block(p, GF_PRODUCER_DISCONNECTED, 0, "disconnected from NATS");
        return false;
    }
    while (p->mode == PR_RUNNING && p->cursor < p->len && !atomic_load(&p->stop)) {
        size_t i = p->cursor;
        pr_entry *e = *slot(p, i);
        if (e == NULL) {
            if (!pass_hole(p, i))
                return false;
            p->cursor++;
            continue;
        }
        if (e->state == PR_ACKED || e->state == PR_INFLIGHT) {
            p->cursor++;
            continue;
        }
        if (!gf_ack_floor_can_send(&p->floor, e->seq))
            return false; /* the window is full: an answer wakes us */
        if (!send_entry(p, e, i))
            return p->mode == PR_RUNNING;
    }
    *need_refill = p->mode == PR_RUNNING && p->cursor >= p->len && p->spilled;
    return false;
}

/* mu held, BLOCKED: once nothing is in flight and the backoff passed, sends the oldest
 * unacknowledged event alone. */
static void probe(gf_producer *p, bool *need_refill)
{
    int64_t now = gf_clock_mono_ms();
    if (p->in_flight > 0 || now < p->retry_at_ms || atomic_load(&p->stop))
        return;
    if (!connected(p)) {
        gf__producer_block(p, GF_PRODUCER_DISCONNECTED, 0, "disconnected from NATS");
        p->retry_at_ms = now + p->cfg.retry_min_ms;
        return;
    }
    size_t i = 0;
    while (i < p->len && (*slot(p, i) == NULL || (*slot(p, i))->state == PR_ACKED)) {
        if (*slot(p, i) == NULL && !pass_hole(p, i))
            break;
        i++;
    }
    if (i >= p->len) { /* nothing unacknowledged in memory */
        p->cursor = i;
        if (p->spilled)
            *need_refill = true;
        else
            resume(p);
        return;
    }
    pr_entry *e = *slot(p, i);
    if (e == NULL) /* a hole beyond the window: an answer will move the floor */
        return;
    if (p->diagnose) {
        p->diagnose = false;
        char why[GF_PRODUCER_REASON_MAX];
        pthread_mutex_unlock(&p->mu);
        gf_producer_state st = gf__producer_diagnose(p->nc, e->subject, why, sizeof why);
        pthread_mutex_lock(&p->mu);
        if (p->mode != PR_BLOCKED)
            return;
        if (st != p->state || strcmp(why, p->reason) != 0) {
            char q[GF_PRODUCER_REASON_MAX + 8];
            gf_log_warn("producer: why publishes get no answer", "source=%s state=%s reason=%s",
                        p->source_id, gf_producer_state_str(st), gf_log_quote(q, sizeof q, why));
        }
        p->state = st;
        snprintf(p->reason, sizeof p->reason, "%s", why);
    }
    p->mode = PR_PROBING;
    if (!send_entry(p, e, i) && p->mode == PR_PROBING) {
        p->mode = PR_BLOCKED; /* no slot this instant */
        p->retry_at_ms = now + ROOM_RETRY_MS;
    }
}

/* ---- refill from the spool ------------------------------------------------- */

typedef struct refill {
    gf_producer *p;
    uint64_t last;   /* the highest seq collected (or covered before) */
    uint64_t budget; /* bytes */
    uint64_t bytes;
    pr_entry **items;
    size_t n, cap;
    bool full;
} refill;

static gf_err collect(refill *r, pr_entry *e)
{
    pr_entry **items = gf_grow(r->items, &r->cap, r->n + 1, sizeof *items);
    if (items == NULL)
        return GF_ERR_NOMEM;
    r->items = items;
    r->items[r->n++] = e;
    return GF_OK;
}

/* Spool thread (spool_mu held): one record of the replay. */
static gf_err visit(void *ctx, const gf_spool_record *rec)
{
    refill *r = ctx;
    if (r->n > 0 && r->bytes >= r->budget) {
        r->full = true;
        return GF_ERR_RETRY; /* stops the replay; the rest comes next time */
    }
    for (uint64_t s = r->last + 1; s < rec->seq; s++)
        if (collect(r, NULL) != GF_OK)
            return GF_ERR_NOMEM;
    pr_entry *e = gf__producer_entry_from(r->p, rec);
    if (e == NULL || collect(r, e) != GF_OK) {
        free(e);
        return GF_ERR_NOMEM;
    }
    r->bytes += e->bytes;
    r->last = rec->seq;
    return GF_OK;
}

/* Neither lock held: reads the next spilled records into the queue. false on error. */
static bool refill_queue(gf_producer *p)
{
    pthread_mutex_lock(&p->spool_mu);
    pthread_mutex_lock(&p->mu);
    refill r = {
        .p = p,
        .last = p->head_seq + p->len - 1,
        .budget = p->cfg.memory_bytes > p->mem_bytes ? p->cfg.memory_bytes - p->mem_bytes : 0,
    };
    pthread_mutex_unlock(&p->mu);
    gf_err err = gf_spool_replay(p->sp, r.last, visit, &r);
    bool done = err == GF_OK;
    if (done) /* seqs after the last record that have none (dropped at the end) */
        for (uint64_t s = r.last + 1; s < gf_spool_next_seq(p->sp) && err == GF_OK; s++)
            err = collect(&r, NULL);
    pthread_mutex_lock(&p->mu);
    size_t pushed = 0;
    if (err == GF_OK || err == GF_ERR_RETRY) {
        for (; pushed < r.n && gf__producer_push(p, r.items[pushed]) == GF_OK; pushed++)
            if (r.items[pushed])
                p->mem_bytes += r.items[pushed]->bytes;
        if (done && err == GF_OK && pushed == r.n)
            p->spilled = false;
    }
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->spool_mu);
    for (size_t i = pushed; i < r.n; i++)
        free(r.items[i]);
    free(r.items);
    if (err != GF_OK && err != GF_ERR_RETRY) {
        gf_log_error("producer: cannot read the spool back", "source=%s dir=%s error=%s",
                     p->source_id, p->spool_dir, gf_err_str(err));
        return false;
    }
    return true;
}

/* ---- housekeeping ---------------------------------------------------------- */

typedef struct timers {
    int64_t next_sync;    /* interval policy: the spool's fsync */
    int64_t next_persist; /* the floor into the state file */
} timers;

static int64_t timers_next(const timers *t)
{
    return t->next_sync < t->next_persist ? t->next_sync : t->next_persist;
}

/* Neither lock held: the interval fsync and the floor into the state file, when due
 * (or both now, with `force`). */
static void housekeeping(gf_producer *p, bool force, timers *t)
{
    int64_t now = gf_clock_mono_ms();
    pthread_mutex_lock(&p->spool_mu);
    if (force || now >= t->next_sync) {
        t->next_sync = now + p->cfg.fsync_interval_ms;
        gf_spool_sync(p->sp); /* a no-op unless interval and due */
    }
    if (force || now >= t->next_persist) {
        t->next_persist = now + p->cfg.ack_persist_ms;
        pthread_mutex_lock(&p->mu);
        uint64_t floor = p->floor.floor;
        pthread_mutex_unlock(&p->mu);
        if (floor > p->persisted_floor && gf_spool_ack(p->sp, floor) == GF_OK) {
            pthread_mutex_lock(&p->mu);
            p->persisted_floor = floor;
            pthread_mutex_unlock(&p->mu);
        }
    }
    pthread_mutex_unlock(&p->spool_mu);
}

/* ---- the threads ----------------------------------------------------------- */

void *gf__producer_connector(void *arg)
{
    gf_producer *p = arg;
    char name[96];
    snprintf(name, sizeof name, "gamefn-producer-%s", p->source_id);
    gf_conn *c = NULL;
    /* Batched: the producer streams publishes and answers no requests. */
    gf_err err = gf_conn_open_batched(p->cfg.nats, name, true, &p->stop, 0, &c);
    if (err == GF_OK) {
        atomic_store(&p->connected, c);
    } else if (err != GF_ERR_UNAVAILABLE) { /* refused for good: bad credentials, TLS */
        pthread_mutex_lock(&p->mu);
        p->state = GF_PRODUCER_CLOSED;
        snprintf(p->reason, sizeof p->reason,
                 "NATS refused the connection (%s); see the error logged before", gf_err_str(err));
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Waits for the connection (owned: the connector's), doing housekeeping meanwhile,
 * and opens the publisher. false when stopped first or the publisher cannot open. */
static bool start_publishing(gf_producer *p, timers *t)
{
    while (p->owns_conn && atomic_load(&p->connected) == NULL) {
        if (atomic_load(&p->stop))
            return false;
        housekeeping(p, false, t);
        pthread_mutex_lock(&p->mu);
        p->thread_waiting = true;
        if (!atomic_load(&p->stop) && atomic_load(&p->connected) == NULL)
            wait_until(&p->wake, &p->mu, gf_clock_mono_ms() + IDLE_WAIT_MS);
        p->thread_waiting = false;
        pthread_mutex_unlock(&p->mu);
    }
    if (p->owns_conn) {
        p->conn = atomic_load(&p->connected);
        p->nc = gf_conn_nats(p->conn);
    }
    gf_publish_opts o = {
        .max_in_flight = (int)p->cfg.window + WINDOW_SLACK,
        .give_up_ms = p->cfg.give_up_ms,
        .attempt_timeout_ms = p->cfg.ack_timeout_ms,
        .send_wait_ms = -1,
        .stop = &p->stop,
    };
    gf_err err = gf_publish_open(p->nc, &o, &p->pub);
    pthread_mutex_lock(&p->mu);
    if (err != GF_OK) {
        p->state = GF_PRODUCER_CLOSED;
        snprintf(p->reason, sizeof p->reason, "cannot publish on the connection (%s)",
                 gf_err_str(err));
        gf_log_error("producer: cannot open the publisher", "source=%s error=%s", p->source_id,
                     gf_err_str(err));
    } else if (p->state == GF_PRODUCER_CONNECTING) {
        p->state = GF_PRODUCER_OK;
        p->reason[0] = '\0';
    }
    pthread_mutex_unlock(&p->mu);
    return err == GF_OK;
}

void *gf__producer_main(void *arg)
{
    gf_producer *p = arg;
    int64_t start = gf_clock_mono_ms();
    timers t = {start + p->cfg.fsync_interval_ms, start + p->cfg.ack_persist_ms};
    int64_t next_refill = 0;
    if (start_publishing(p, &t)) {
        pthread_mutex_lock(&p->mu);
        while (!atomic_load(&p->stop)) {
            pop_acked(p);
            bool need_refill = false, no_room = false;
            if (p->mode == PR_RUNNING)
                no_room = pump(p, &need_refill);
            else if (p->mode == PR_BLOCKED)
                probe(p, &need_refill);
            int64_t now = gf_clock_mono_ms();
            if (need_refill && now >= next_refill) {
                pthread_mutex_unlock(&p->mu);
                bool ok = refill_queue(p);
                pthread_mutex_lock(&p->mu);
                next_refill = ok ? 0 : now + REFILL_RETRY_MS;
                if (ok)
                    continue;
            }
            if (now >= timers_next(&t)) {
                pthread_mutex_unlock(&p->mu);
                housekeeping(p, false, &t);
                pthread_mutex_lock(&p->mu);
                continue;
            }
            /* Busy (events in flight or waiting for the window): look again in
             * BUSY_POLL_MS, not at every answer. Idle: sleep until an emit wakes us. */
            bool busy = p->in_flight > 0 || (p->mode == PR_RUNNING && p->cursor < p->len);
            int64_t until = now + (no_room ? ROOM_RETRY_MS : busy ? BUSY_POLL_MS : IDLE_WAIT_MS);
            if (p->mode == PR_BLOCKED && p->in_flight == 0 && p->retry_at_ms < until)
                until = p->retry_at_ms;
            if (timers_next(&t) < until)
                until = timers_next(&t);
            p->thread_waiting = true;
            p->thread_idle = !busy;
            if (!atomic_load(&p->stop))
                wait_until(&p->wake, &p->mu, until);
            p->thread_waiting = p->thread_idle = false;
        }
        pthread_mutex_unlock(&p->mu);
    }
    /* Still open messages end now (their callbacks mark them failed); what is not
     * acknowledged stays in the spool for the next open. */
    gf_publish_close(p->pub, CLOSE_PUBLISH_MS);
    p->pub = NULL;
    pthread_mutex_lock(&p->mu);
    pop_acked(p);
    pthread_mutex_unlock(&p->mu);
    housekeeping(p, true, &t);
    return NULL;
}
