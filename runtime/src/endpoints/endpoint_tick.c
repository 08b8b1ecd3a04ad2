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

#include "function/fn_internal.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "nats/nats_err.h"

static uint64_t header_uint(natsMsg *m, const char *key)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, key, &v) != NATS_OK || !v)
        return 0;
    return strtoull(v, NULL, 10);
}

static void on_tick(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    gf_endpoint_run *run = closure;
    int64_t start = gf_now_mono_ns();
    gf_tick tick = {
        .seq = (int64_t)header_uint(m, "Gamefn-Tick-Seq"),
        .unix_ms = (int64_t)header_uint(m, "Gamefn-Tick-Time"),
        .lease_token = header_uint(m, "Gamefn-Lease-Token"),
    };
    gf_err err = run->ep->on_tick(run->fn, &tick);
    gf_endpoint_record(run, start, err, NULL);
    natsMsg_Destroy(m);
}

static void publish_tick(gf_endpoint_run *run, int64_t seq, int64_t now_unix)
{
    char buf[32];
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, run->ep->subject, NULL, NULL, 0);
    snprintf(buf, sizeof buf, "%" PRId64, seq);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Tick-Seq", buf);
    snprintf(buf, sizeof buf, "%" PRId64, now_unix);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Tick-Time", buf);
    snprintf(buf, sizeof buf, "%" PRIu64, run->lease.token);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Lease-Token", buf);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(gf_fn_nats(run->fn), m);
    natsMsg_Destroy(m);
}

static void *ticker_thread(void *arg)
{
    gf_endpoint_run *run = arg;
    int64_t period = run->ep->tick_period_ms;
    int64_t seq = 0;
    bool was_leader = false;

    for (int64_t next = gf_now_mono_ms(); !atomic_load(&gf_stop_requested); next += period) {
        gf_err err = gf_lease_tick(&run->lease, gf_now_unix_ms());
        if (err == GF_OK && !was_leader) {
            gf_log_info("became tick leader", "endpoint=%s token=%" PRIu64, run->ep->name,
                        run->lease.token);
            seq = 0;
        } else if (err != GF_OK && was_leader) {
            gf_log_warn("lost tick leadership", "endpoint=%s err=%s", run->ep->name,
                        gf_err_str(err));
        }
        was_leader = err == GF_OK;
        if (was_leader)
            publish_tick(run, ++seq, gf_now_unix_ms());
        if (gf_now_mono_ms() > next + period)
            next = gf_now_mono_ms(); /* fell behind (e.g. NATS away): do not burst */
        gf_sleep_until(next + period, &gf_stop_requested);
    }
    if (gf_lease_release(&run->lease) == GF_OK && was_leader)
        gf_log_info("released tick leadership", "endpoint=%s", run->ep->name);
    atomic_store(&run->thread_done, 1);
    return NULL;
}

gf_err gf_endpoint_tick_start(gf_endpoint_run *run)
{
    const gf_endpoint *ep = run->ep;
    char key[128];
    if (!ep->subject || !ep->on_tick || !ep->lease_bucket || ep->tick_period_ms <= 0)
        return GF_ERR_INVALID;
    gf_err err = gf_kv_open(gf_fn_js(run->fn), ep->lease_bucket, &run->lease_kv);
    if (err != GF_OK)
        return err;
    snprintf(key, sizeof key, "tick.%s.%s", run->fn->def->name, ep->name);
    int64_t ttl = ep->tick_period_ms * 3 > 1000 ? ep->tick_period_ms * 3 : 1000;
    gf_lease_init(&run->lease, gf_fn_js(run->fn), run->lease_kv, key, run->fn->instance_id, ttl);

    natsStatus s =
        natsConnection_QueueSubscribe(&run->sub, gf_fn_nats(run->fn), ep->subject,
                                      ep->queue_group ? ep->queue_group : ep->name, on_tick, run);
    if (s == NATS_OK)
        s = natsConnection_Flush(gf_fn_nats(run->fn));
    if (s != NATS_OK)
        return gf_nats_err(s);
    if (pthread_create(&run->thread, NULL, ticker_thread, run) != 0)
        return GF_ERR_NOMEM;
    run->thread_started = true;
    return GF_OK;
}
