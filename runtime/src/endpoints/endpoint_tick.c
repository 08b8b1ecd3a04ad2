/*
 * endpoint_tick.c — periodic ticks: one leader publishes, one group member handles.
 *
 * Design notes:
 * - The publisher side (roles BOTH and PUBLISH): every instance runs a ticker thread
 *   that competes for a KV lease ("tick.<function>.<endpoint>" in the endpoint's lease
 *   bucket, ttl = 3 periods, at least 1 s). Only the holder publishes, one tick per
 *   subject each period; the lease is renewed every period, so a dead leader is
 *   replaced within ~3 periods and a clean stop releases it at once.
 * - Ticks are core NATS messages with an empty body and headers Gamefn-Tick-Seq (per
 *   leader tenure, shared by the subjects of one period), Gamefn-Tick-Time (leader's
 *   Unix ms) and Gamefn-Lease-Token (the lease's fencing token). They are not durable:
 *   a lost tick is replaced by the next one, and handlers must be safe to overlap.
 * - The handler side (roles BOTH and HANDLE): a queue subscription, so exactly one
 *   instance takes each tick; a wildcard subject takes several tick groups. Fencing:
 *   a tick whose token is below the highest this endpoint has seen comes from a
 *   deposed leader that has not noticed yet (paused, partitioned); it is dropped and
 *   counted as an error in $SRV STATS, so only the current tenure ticks.
 * - This file is the one place for the tick rule (lease, period, headers, fencing):
 *   a separate ticker function and its handlers use the two roles of this one kind.
 *
 * Threads: the ticker thread owns the lease; the subscription's delivery thread owns
 * newest_token (atomic, for TSan and readers); both only read the endpoint.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints/endpoint.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/lease.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "nats/nats_err.h"

#define HDR_SEQ   "Gamefn-Tick-Seq"
#define HDR_TIME  "Gamefn-Tick-Time"
#define HDR_TOKEN "Gamefn-Lease-Token"

typedef struct tick_state {
    kvStore *lease_kv;           /* publisher side */
    gf_lease lease;              /* owned by the ticker thread */
    const char *const *subjects; /* publisher side: NULL-terminated, borrowed */
    const char *one[2];          /* {subject, NULL} when there is no `subjects` callback */
    int64_t period_ms;           /* publisher side: `period` callback, else period_ms */
    atomic_ullong newest_token;  /* handler side: highest lease token seen */
} tick_state;

static bool publishes(const gf_tick_endpoint *tk)
{
    return tk->role != GF_TICK_HANDLE;
}

static bool handles(const gf_tick_endpoint *tk)
{
    return tk->role != GF_TICK_PUBLISH;
}

static uint64_t header_uint(natsMsg *m, const char *key)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, key, &v) != NATS_OK || !v)
        return 0;
    return strtoull(v, NULL, 10);
}

static void on_tick(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    gf__endpoint_run *run = closure;
    tick_state *st = run->state;
    int64_t start = gf_clock_mono_ns();
    gf_tick tick = {
        .seq = (int64_t)header_uint(m, HDR_SEQ),
        .unix_ms = (int64_t)header_uint(m, HDR_TIME),
        .lease_token = header_uint(m, HDR_TOKEN),
        .subject = natsMsg_GetSubject(m),
    };
    uint64_t newest = atomic_load(&st->newest_token);
    if (tick.lease_token != 0 && tick.lease_token < newest) {
        char text[96];
        snprintf(text, sizeof text, "tick of token %" PRIu64 " after token %" PRIu64,
                 tick.lease_token, newest);
        gf_log_debug("stale tick dropped", "endpoint=%s %s", run->ep->name, text);
        gf__endpoint_record(run, start, GF_ERR_CONFLICT, text);
        natsMsg_Destroy(m);
        return;
    }
    if (tick.lease_token > newest)
        atomic_store(&st->newest_token, tick.lease_token);
    gf_err err = run->ep->tick.on_tick(run->host->fn, &tick);
    gf__endpoint_record(run, start, err, NULL);
    natsMsg_Destroy(m);
}

static void publish_tick(gf__endpoint_run *run, const char *subject, int64_t seq, int64_t now_unix)
{
    const tick_state *st = run->state;
    char buf[32];
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, subject, NULL, NULL, 0);
    snprintf(buf, sizeof buf, "%" PRId64, seq);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, HDR_SEQ, buf);
    snprintf(buf, sizeof buf, "%" PRId64, now_unix);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, HDR_TIME, buf);
    snprintf(buf, sizeof buf, "%" PRIu64, st->lease.token);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, HDR_TOKEN, buf);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(run->host->nc, m);
    natsMsg_Destroy(m);
}

static void *ticker_thread(void *arg)
{
    gf__endpoint_run *run = arg;
    tick_state *st = run->state;
    int64_t period = st->period_ms;
    int64_t seq = 0;
    bool was_leader = false;

    for (int64_t next = gf_clock_mono_ms(); !atomic_load(run->host->stop); next += period) {
        gf_err err = gf_lease_tick(&st->lease, gf_clock_unix_ms());
        if (err == GF_OK && !was_leader) {
            gf_log_info("became tick leader", "endpoint=%s token=%" PRIu64, run->ep->name,
                        st->lease.token);
            seq = 0;
        } else if (err != GF_OK && was_leader) {
            gf_log_warn("lost tick leadership", "endpoint=%s err=%s", run->ep->name,
                        gf_err_str(err));
        }
        was_leader = err == GF_OK;
        if (was_leader) {
            int64_t now = gf_clock_unix_ms();
            seq++;
            for (size_t i = 0; st->subjects[i]; i++)
                publish_tick(run, st->subjects[i], seq, now);
        }
        if (gf_clock_mono_ms() > next + period)
            next = gf_clock_mono_ms(); /* fell behind (e.g. NATS away): do not burst */
        gf_clock_sleep_until(next + period, run->host->stop);
    }
    if (gf_lease_release(&st->lease) == GF_OK && was_leader)
        gf_log_info("released tick leadership", "endpoint=%s", run->ep->name);
    atomic_store(&run->thread_done, 1);
    return NULL;
}

/* The subjects the publisher side ticks: the function's list, else `subject` alone. */
static const char *const *publish_subjects(const gf__endpoint_run *run, const char **one)
{
    const gf_tick_endpoint *tk = &run->ep->tick;
    if (tk->subjects)
        return tk->subjects(run->host->fn);
    one[0] = tk->subject;
    one[1] = NULL;
    return one;
}

/* NULL when the declaration is usable; otherwise what is wrong. */
static const char *declaration_problem(const gf_tick_endpoint *tk, const char *const *subjects,
                                       int64_t period_ms)
{
    if (tk->role < GF_TICK_BOTH || tk->role > GF_TICK_HANDLE)
        return "role is not GF_TICK_BOTH, GF_TICK_PUBLISH or GF_TICK_HANDLE";
    if (handles(tk) && !tk->on_tick)
        return "a handling tick endpoint needs on_tick";
    if (handles(tk) && !gf_name_subject_ok(tk->subject, true, NULL, 0))
        return "subject (to subscribe to) is missing or not a valid subject";
    if (!publishes(tk))
        return NULL;
    if (!tk->lease_bucket || period_ms <= 0)
        return "a publishing tick endpoint needs lease_bucket and a period > 0";
    if (!subjects || !subjects[0])
        return "nothing to publish on: no subject and an empty subjects list";
    for (size_t i = 0; subjects[i]; i++) {
        if (!gf_name_subject_ok(subjects[i], false, NULL, 0))
            return "a subject to publish on is not a literal subject";
    }
    return NULL;
}

/* The bucket that holds the ticker's lease, from config (publisher side only). */
static gf_err tick_provision(gf__endpoint_run *run, gf_provision_result *res)
{
    if (!publishes(&run->ep->tick))
        return GF_OK;
    return gf_provision_bucket_named(run->host->js, run->host->cfg, run->ep->tick.lease_bucket,
                                     res);
}

static void tick_describe(const gf__endpoint_run *run, gf_srv_endpoint *out)
{
    const gf_tick_endpoint *tk = &run->ep->tick;
    const char *one[2];
    const char *const *subjects = tk->subject ? NULL : publish_subjects(run, one);
    out->subject = tk->subject ? tk->subject : subjects ? subjects[0] : NULL;
    out->queue_group = !handles(tk) ? NULL : tk->queue_group ? tk->queue_group : run->ep->name;
}

static gf_err start_publishing(gf__endpoint_run *run, tick_state *st)
{
    const gf_tick_endpoint *tk = &run->ep->tick;
    const gf__endpoint_host *host = run->host;
    char key[128];
    gf_err err = gf_kv_open(host->js, tk->lease_bucket, &st->lease_kv);
    if (err != GF_OK)
        return err;
    snprintf(key, sizeof key, "tick.%s.%s", host->function_name, run->ep->name);
    int64_t ttl = st->period_ms * 3 > 1000 ? st->period_ms * 3 : 1000;
    gf_lease_init(&st->lease, host->js, st->lease_kv, key, host->instance_id, ttl);
    return gf__endpoint_thread_start(run, ticker_thread);
}

static gf_err tick_start(gf__endpoint_run *run)
{
    const gf_tick_endpoint *tk = &run->ep->tick;
    tick_state *st = calloc(1, sizeof *st);
    if (!st)
        return GF_ERR_NOMEM;
    run->state = st;
    st->subjects = publishes(tk) ? publish_subjects(run, st->one) : NULL;
    st->period_ms = tk->period_ms;
    if (publishes(tk) && tk->period && tk->period(run->host->fn) > 0)
        st->period_ms = tk->period(run->host->fn);
    const char *problem = declaration_problem(tk, st->subjects, st->period_ms);
    if (problem) {
        gf_log_error("tick endpoint declared wrong", "endpoint=%s problem=\"%s\"", run->ep->name,
                     problem);
        return GF_ERR_INVALID;
    }
    if (handles(tk)) {
        natsStatus s = natsConnection_QueueSubscribe(
            &run->sub, run->host->nc, tk->subject,
            tk->queue_group ? tk->queue_group : run->ep->name, on_tick, run);
        if (s == NATS_OK)
            s = natsConnection_Flush(run->host->nc);
        if (s != NATS_OK)
            return gf_nats_err(s);
    }
    return publishes(tk) ? start_publishing(run, st) : GF_OK;
}

static bool tick_stop(gf__endpoint_run *run, int64_t deadline_ms)
{
    tick_state *st = run->state;
    bool clean = gf__endpoint_thread_join(run, deadline_ms);
    clean = gf__endpoint_drain_subscription(run, deadline_ms) && clean;
    if (!clean)
        return false; /* the ticker thread or a handler may still use st */
    if (st)
        kvStore_Destroy(st->lease_kv);
    free(st);
    run->state = NULL;
    return true;
}

const gf__endpoint_ops gf__endpoint_tick_ops = {
    .name = "tick",
    .abandoned = "the tick in flight is lost (the next leader's tick replaces it)",
    .provision = tick_provision,
    .describe = tick_describe,
    .start = tick_start,
    .stop = tick_stop,
};
