/*
 * endpoint_tick.c — periodic ticks: one leader publishes, one group member handles.
 *
 * Design notes:
 * - Every instance runs a ticker thread that competes for a KV lease
 *   ("tick.<function>.<endpoint>" in the endpoint's lease bucket, ttl = 3 periods).
 *   Only the holder publishes a tick each period; the lease is renewed on every tick,
 *   so a dead leader is replaced within ~3 periods and a clean stop releases it at once.
 * - Ticks are core NATS messages on the tick subject with an empty body and headers
 *   Gamefn-Tick-Seq (per leader tenure), Gamefn-Tick-Time (leader's Unix ms) and
 *   Gamefn-Lease-Token (the lease's fencing token). Every instance subscribes in
 *   the queue group, so exactly one instance takes each tick. Ticks are not durable:
 *   a lost tick is replaced by the next one, and handlers must be safe to overlap
 *   (the matcher's claims are compare-and-set).
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
#include "nats/nats_err.h"

typedef struct tick_state {
    kvStore *lease_kv;
    gf_lease lease; /* owned by the ticker thread */
} tick_state;

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
    int64_t start = gf_clock_mono_ns();
    gf_tick tick = {
        .seq = (int64_t)header_uint(m, "Gamefn-Tick-Seq"),
        .unix_ms = (int64_t)header_uint(m, "Gamefn-Tick-Time"),
        .lease_token = header_uint(m, "Gamefn-Lease-Token"),
    };
    gf_err err = run->ep->tick.on_tick(run->host->fn, &tick);
    gf__endpoint_record(run, start, err, NULL);
    natsMsg_Destroy(m);
}

static void publish_tick(gf__endpoint_run *run, int64_t seq, int64_t now_unix)
{
    const tick_state *st = run->state;
    char buf[32];
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, run->ep->tick.subject, NULL, NULL, 0);
    snprintf(buf, sizeof buf, "%" PRId64, seq);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Tick-Seq", buf);
    snprintf(buf, sizeof buf, "%" PRId64, now_unix);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Tick-Time", buf);
    snprintf(buf, sizeof buf, "%" PRIu64, st->lease.token);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Lease-Token", buf);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(run->host->nc, m);
    natsMsg_Destroy(m);
}

static void *ticker_thread(void *arg)
{
    gf__endpoint_run *run = arg;
    tick_state *st = run->state;
    int64_t period = run->ep->tick.period_ms;
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
        if (was_leader)
            publish_tick(run, ++seq, gf_clock_unix_ms());
        if (gf_clock_mono_ms() > next + period)
            next = gf_clock_mono_ms(); /* fell behind (e.g. NATS away): do not burst */
        gf_clock_sleep_until(next + period, run->host->stop);
    }
    if (gf_lease_release(&st->lease) == GF_OK && was_leader)
        gf_log_info("released tick leadership", "endpoint=%s", run->ep->name);
    atomic_store(&run->thread_done, 1);
    return NULL;
}

/* The bucket that holds the ticker's lease, from config. */
static gf_err tick_provision(gf__endpoint_run *run, gf_provision_result *res)
{
    return gf_provision_bucket_named(run->host->js, run->host->cfg, run->ep->tick.lease_bucket,
                                     res);
}

static void tick_describe(const gf__endpoint_run *run, gf_srv_endpoint *out)
{
    out->subject = run->ep->tick.subject;
    out->queue_group = run->ep->tick.queue_group;
}

static gf_err tick_start(gf__endpoint_run *run)
{
    const gf_tick_endpoint *tk = &run->ep->tick;
    const gf__endpoint_host *host = run->host;
    char key[128];
    if (!tk->subject || !tk->on_tick || !tk->lease_bucket || tk->period_ms <= 0)
        return GF_ERR_INVALID;
    tick_state *st = calloc(1, sizeof *st);
    if (!st)
        return GF_ERR_NOMEM;
    run->state = st;
    gf_err err = gf_kv_open(host->js, tk->lease_bucket, &st->lease_kv);
    if (err != GF_OK)
        return err;
    snprintf(key, sizeof key, "tick.%s.%s", host->function_name, run->ep->name);
    int64_t ttl = tk->period_ms * 3 > 1000 ? tk->period_ms * 3 : 1000;
    gf_lease_init(&st->lease, host->js, st->lease_kv, key, host->instance_id, ttl);

    natsStatus s = natsConnection_QueueSubscribe(&run->sub, host->nc, tk->subject,
                                                 tk->queue_group ? tk->queue_group : run->ep->name,
                                                 on_tick, run);
    if (s == NATS_OK)
        s = natsConnection_Flush(host->nc);
    if (s != NATS_OK)
        return gf__nats_err(s);
    return gf__endpoint_thread_start(run, ticker_thread);
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
    .provision = tick_provision,
    .describe = tick_describe,
    .start = tick_start,
    .stop = tick_stop,
};
