/*
 * endpoint_partitioned.c — partitioned pull consumers: P durables, one owner each.
 *
 * A partitioned endpoint reads a consumer group from config (jetstream.consumers, an
 * entry with `partitions` P > 0): P durables "<group>-p<NN>", each filtered on the
 * group's filter_subject with "{partition}" replaced by NN. Among all replicas of the
 * function, each partition is handled by one replica at a time, which owns it through
 * the KV lease "part.<group>.<NN>" in the group's lease_bucket (gamefn/lease.h: CAS on
 * every change, fencing token = the KV revision at which the tenure began).
 *
 * Design notes:
 * - Threads. One coordinator thread per endpoint does every KV operation: membership
 *   heartbeat, lease acquisition, renewal and release, rebalancing. Each owned
 *   partition has a worker thread for the length of its tenure
 *   (endpoint_partitioned_worker.c). One keeper thread keeps running batches in
 *   progress (pull_keeper.h). The coordinator has its own JetStream context whose API
 *   timeout is a fifth of the lease ttl, so a stalled KV call cannot eat a lease.
 * - Membership and fair share (partition_share.h): every replica heartbeats the member
 *   list "part.<group>.members" each cycle (ttl/4), computes its own target from it
 *   (P/k, deterministic), gives back its extras (outside its preferred block first) and
 *   takes free or expired partitions up to its target. A replica that stops cleanly
 *   releases its leases and leaves the list at once; a killed one drops out of the list
 *   and loses its leases one ttl after its last heartbeat.
 * - One owner at a time, and the safety margin. A tenure may act only until
 *   valid_until = (monotonic time just before the renewal request was sent) + ttl −
 *   margin, margin = ttl/5, extended by every successful renewal (every ttl/4, so three
 *   renewals can fail before the deadline). The lease value says expiry = (wall clock
 *   before that request) + ttl, and another replica takes over only once its own wall
 *   clock has passed that expiry. So the old owner stops acting at least `margin` before
 *   anyone else may start, as long as the hosts' wall clocks agree to within the margin
 *   (NTP keeps them within milliseconds; margin is 2 s at the default 10 s ttl) and
 *   the local monotonic clock does not run slow by that much over one ttl. Acting means
 *   starting a batch, acking, sending in-progress and having a pull request open (a
 *   long poll's expiry ends before the deadline) — all checked against the deadline.
 *   A handler that is still running at the deadline is not stopped (it cannot be); its
 *   batch is not acked and its effects must be fenced by the token.
 * - Handing over. A clean give-back (rebalance, SIGTERM) lets the worker finish its
 *   batch and ack it (the last ack synchronously, so the server has applied them all)
 *   before the lease is deleted: the next owner then finds nothing unacked and starts
 *   right after, in order. After a crash the next owner finds the old batch unacked and
 *   waits the consumer's longest ack wait before fetching, so the server hands the old
 *   batch back first, in stream order. Either way per-key order holds across owners.
 * - A worker that ends on its own (lease deadline, on_acquire refused) gives its lease
 *   back; the coordinator takes the partition again later as a fresh tenure.
 */
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "endpoints/endpoint_partitioned.h"
#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "nats/nats_err.h"

enum {
    STEP_MS = 50,                 /* coordinator wake-up */
    HUNGRY_CYCLE_MS = 500,        /* below target: look for free partitions this often */
    RETAKE_AFTER_MS = 1000,       /* a partition whose tenure ended on its own */
    MEMBERS_VALUE_MAX = 32 * 1024 /* GF_MEMBERS_MAX lines */
};

static const gf_consumer_config *group_config(const gf__endpoint_run *run)
{
    const gf_consumer_config *cc =
        gf_config_consumer(run->host->cfg, run->ep->partitioned.stream, run->ep->partitioned.group);
    return cc && cc->partitions > 0 ? cc : NULL;
}

/* ---- leases --------------------------------------------------------------------- */

static void start_worker(part_group *g, part_slot *s)
{
    atomic_store(&s->stop, 0);
    atomic_store(&s->done, 0);
    s->state = PART_OWNED;
    if (pthread_create(&s->thread, NULL, gf__partition_worker, s) == 0) {
        s->thread_started = true;
        return;
    }
    gf_log_error("cannot start a partition worker", "endpoint=%s partition=%u", g->run->ep->name,
                 s->partition);
    atomic_store(&s->done, 1); /* reaped (and the lease given back) like any ended tenure */
}

/* A tenure is valid until (send time of its last successful lease write) + ttl − margin. */
static void extend(part_group *g, part_slot *s, int64_t sent_ms)
{
    atomic_store(&s->owner.valid_until_ms, sent_ms + g->ttl_ms - g->margin_ms);
    s->renew_at_ms = sent_ms + g->ttl_ms / 4;
}

/* Tries to take a free or expired partition. GF_ERR_CONFLICT when someone holds it. */
static gf_err acquire(part_group *g, part_slot *s)
{
    int64_t sent = gf_clock_mono_ms();
    gf_err err = gf_lease_tick(&s->lease, gf_clock_unix_ms());
    if (err != GF_OK)
        return err;
    atomic_store(&s->token, s->lease.token);
    extend(g, s, sent);
    start_worker(g, s);
    return GF_OK;
}

static void renew(part_group *g, part_slot *s)
{
    int64_t sent = gf_clock_mono_ms();
    uint64_t token = s->lease.token;
    gf_err err = gf_lease_tick(&s->lease, gf_clock_unix_ms());
    if (err == GF_OK) {
        /* Re-taken after a failed renewal: nobody held it in between (the key still
         * named us), so the running tenure goes on under the new token. */
        if (s->lease.token != token)
            atomic_store(&s->token, s->lease.token);
        extend(g, s, sent);
    } else if (err == GF_ERR_CONFLICT) {
        gf_log_warn("partition lease lost to another owner", "endpoint=%s partition=%u",
                    g->run->ep->name, s->partition);
        atomic_store(&s->owner.valid_until_ms, 0); /* stop acting now */
        atomic_store(&s->stop, 1);
        s->state = PART_RELEASING;
    } else {
        /* Unknown outcome (KV slow or away): keep the deadline, try again soon. */
        gf_log_warn("partition lease renewal failed", "endpoint=%s partition=%u err=%s",
                    g->run->ep->name, s->partition, gf_err_str(err));
        s->renew_at_ms = sent + g->ttl_ms / 10;
    }
}

static void renew_due(part_group *g)
{
    int64_t now = gf_clock_mono_ms();
    for (unsigned p = 0; p < g->partitions; p++) {
        part_slot *s = &g->slots[p];
        if (s->state != PART_FREE && now >= s->renew_at_ms && !atomic_load(&s->done) &&
            gf__partition_valid(s))
            renew(g, s);
    }
}

/* Joins workers that finished and gives their leases back. */
static void reap(part_group *g)
{
    for (unsigned p = 0; p < g->partitions; p++) {
        part_slot *s = &g->slots[p];
        if (s->state == PART_FREE || !atomic_load(&s->done))
            continue;
        if (s->thread_started)
            pthread_join(s->thread, NULL);
        s->thread_started = false;
        if (s->state == PART_OWNED) /* ended on its own: leave it a moment */
            s->retry_from_ms = gf_clock_mono_ms() + RETAKE_AFTER_MS;
        atomic_store(&s->owner.valid_until_ms, 0);
        gf_err err = gf_lease_release(&s->lease);
        if (err != GF_OK && err != GF_ERR_CONFLICT)
            gf_log_warn("partition lease not released (it expires by itself)",
                        "endpoint=%s partition=%u err=%s", g->run->ep->name, p, gf_err_str(err));
        s->state = PART_FREE;
    }
}

/* ---- membership and rebalancing -------------------------------------------------- */

/* Writes our line into the member list (CAS), or removes it when leaving; the list
 * as written is left in g->members. */
static gf_err heartbeat(part_group *g, bool leaving)
{
    char key[300], *value = g->members_text;
    gf_err err = GF_OK;
    snprintf(key, sizeof key, "part.%s.members", g->cc->name);
    for (int attempt = 0; attempt < 4; attempt++) {
        kvEntry *e = NULL;
        uint64_t rev = 0;
        err = gf_kv_get(g->kv, key, &e);
        if (err == GF_OK) {
            rev = kvEntry_Revision(e);
            gf__members_decode(kvEntry_ValueString(e), (size_t)kvEntry_ValueLen(e), &g->members);
        } else if (err == GF_ERR_NOT_FOUND) {
            g->members.n = 0;
        }
        kvEntry_Destroy(e);
        if (err != GF_OK && err != GF_ERR_NOT_FOUND)
            break;
        gf__members_update(&g->members, g->holder, gf_clock_unix_ms(), g->ttl_ms, leaving);
        size_t len = gf__members_encode(&g->members, value, MEMBERS_VALUE_MAX);
        err = rev ? gf_kv_update(g->kv, key, value, len, rev, NULL)
                  : gf_kv_create(g->kv, key, value, len, NULL);
        if (err != GF_ERR_CONFLICT)
            break;
    }
    if (err != GF_OK)
        gf_log_warn("partition membership heartbeat failed", "endpoint=%s err=%s", g->run->ep->name,
                    gf_err_str(err));
    return err;
}

/* Gives back extras and takes free partitions, towards our fair share. */
static void rebalance(part_group *g)
{
    unsigned target = 0, start = 0, owned = 0;
    bool mine[GF_PARTITIONS_MAX] = {false};
    gf__share_of(&g->members, g->holder, g->partitions, &target, &start);
    for (unsigned p = 0; p < g->partitions; p++) {
        mine[p] = g->slots[p].state == PART_OWNED;
        owned += mine[p];
    }
    while (owned > target) {
        unsigned p = gf__share_release_pick(g->partitions, start, target, mine);
        part_slot *s = &g->slots[p];
        gf_log_info("giving a partition back to rebalance",
                    "endpoint=%s partition=%u "
                    "members=%zu target=%u",
                    g->run->ep->name, p, g->members.n, target);
        atomic_store(&s->stop, 1);
        s->state = PART_RELEASING;
        mine[p] = false;
        owned--;
    }
    unsigned order[GF_PARTITIONS_MAX];
    int64_t now = gf_clock_mono_ms();
    gf__share_order(g->partitions, start, target, order);
    for (unsigned i = 0; i < g->partitions && owned < target; i++) {
        part_slot *s = &g->slots[order[i]];
        if (s->state != PART_FREE || now < s->retry_from_ms)
            continue;
        gf_err err = acquire(g, s);
        if (err == GF_OK)
            owned++;
        else if (err != GF_ERR_CONFLICT)
            break; /* the KV is not answering: next cycle */
    }
    g->hungry = owned < target;
}

static bool any_running(const part_group *g)
{
    for (unsigned p = 0; p < g->partitions; p++) {
        if (g->slots[p].state != PART_FREE)
            return true;
    }
    return false;
}

static void *coordinator_thread(void *arg)
{
    gf__endpoint_run *run = arg;
    part_group *g = run->state;
    const atomic_int *stop = g->run->host->stop;
    int64_t next_heartbeat = 0, next_rebalance = 0, cycle = g->ttl_ms / 4;
    bool listed = false; /* the member list has been read at least once */
    while (!atomic_load(stop)) {
        renew_due(g);
        reap(g);
        int64_t now = gf_clock_mono_ms();
        if (now >= next_heartbeat) { /* refreshes g->members too */
            listed = heartbeat(g, false) == GF_OK || listed;
            next_heartbeat = now + cycle;
            next_rebalance = now;
        }
        /* Below our share, look for free partitions more often than we heartbeat. */
        if (listed && now >= next_rebalance) {
            rebalance(g);
            next_rebalance = now + (g->hungry && cycle > HUNGRY_CYCLE_MS ? HUNGRY_CYCLE_MS : cycle);
        }
        gf_clock_sleep_until(gf_clock_mono_ms() + STEP_MS, stop);
    }
    /* Stopping: workers finish their batch (they see the stop flag); keep their leases
     * alive meanwhile, give each back as its worker ends, then leave the member list.
     * The lifecycle's drain deadline bounds this from outside. */
    for (unsigned p = 0; p < g->partitions; p++)
        atomic_store(&g->slots[p].stop, 1);
    while (any_running(g)) {
        renew_due(g);
        reap(g);
        gf_clock_sleep_ms(10);
    }
    heartbeat(g, true);
    atomic_store(&run->thread_done, 1);
    return NULL;
}

/* ---- the kind's operations ------------------------------------------------------ */

/* The group's stream, its P durables and its lease bucket, from config. */
static gf_err partitioned_provision(gf__endpoint_run *run, gf_provision_result *res)
{
    const gf_partitioned_endpoint *pe = &run->ep->partitioned;
    const gf_consumer_config *cc = group_config(run);
    if (!cc) {
        snprintf(res->message, sizeof res->message,
                 "endpoint %s: partitioned group %s/%s is not in config (jetstream.consumers, "
                 "with partitions > 0)",
                 run->ep->name, pe->stream ? pe->stream : "(null)",
                 pe->group ? pe->group : "(null)");
        return GF_ERR_CONFIG;
    }
    gf_err err = gf_provision_bucket_named(run->host->js, run->host->cfg, cc->lease_bucket, res);
    return err == GF_OK ? gf__pull_provision(run, cc, res) : err;
}

/* $SRV shows the group's filter, "{partition}" and all. */
static void partitioned_describe(const gf__endpoint_run *run, gf_srv_endpoint *out)
{
    const gf_consumer_config *cc = group_config(run);
    out->subject = cc ? cc->filter_subject : run->ep->partitioned.stream;
    out->queue_group = NULL;
}

static void group_free(part_group *g)
{
    if (!g)
        return;
    gf__keeper_stop(g->keeper);
    kvStore_Destroy(g->kv);
    jsCtx_Destroy(g->js);
    for (unsigned p = 0; g->slots && p < g->partitions; p++)
        gf__health_fini(&g->slots[p].health);
    free(g->slots);
    free(g->members_text);
    free(g);
}

static gf_err group_init(gf__endpoint_run *run, const gf_consumer_config *cc, part_group *g)
{
    const gf__endpoint_host *host = run->host;
    char nonce[9];
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 8; i++)
        nonce[i] = hex[randombytes_uniform(16)];
    nonce[8] = '\0';
    g->run = run;
    g->cc = cc;
    g->partitions = (unsigned)cc->partitions;
    g->ttl_ms = cc->lease_ttl_ms;
    g->margin_ms = cc->lease_ttl_ms / 5;
    int64_t batch = cc->fetch_batch > 0 ? cc->fetch_batch : host->cfg->runtime.fetch_batch;
    g->batch = (int)(batch > 0 ? batch : 1);
    /* The instance id plus a per-process nonce: a restarted instance with the same id
     * is a new holder and waits for its old leases to expire like anyone else. */
    snprintf(g->holder, sizeof g->holder, "%s.%s", host->instance_id, nonce);
    g->slots = calloc(g->partitions, sizeof *g->slots);
    g->members_text = malloc(MEMBERS_VALUE_MAX);
    const gf_stream_config *sc = gf_config_stream(host->cfg, cc->stream);
    for (unsigned p = 0; g->slots && p < g->partitions; p++) {
        part_slot *s = &g->slots[p];
        s->group = g;
        s->partition = p;
        gf__health_init(&s->health);
        gf__pull_binding_init(&s->bind, run, &s->cc, sc, &s->health);
    }
    if (!g->slots || !g->members_text)
        return GF_ERR_NOMEM;

    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = g->ttl_ms / 5;
    if (jo.Wait > host->cfg->nats.api_timeout_ms)
        jo.Wait = host->cfg->nats.api_timeout_ms;
    gf_err err = gf_nats_err(natsConnection_JetStream(&g->js, host->nc, &jo));
    if (err == GF_OK)
        err = gf_kv_open(g->js, cc->lease_bucket, &g->kv);
    if (err == GF_OK)
        err = gf__keeper_start(run->ep->name, &g->keeper);
    for (unsigned p = 0; p < g->partitions && err == GF_OK; p++) {
        part_slot *s = &g->slots[p];
        err = gf_config_consumer_partition(cc, p, &s->cc, &s->names);
        gf_lease_init(&s->lease, g->js, g->kv, s->names.lease_key, g->holder, g->ttl_ms);
    }
    return err;
}

static gf_err partitioned_start(gf__endpoint_run *run)
{
    const gf_consumer_config *cc = group_config(run);
    if (!cc || !run->ep->partitioned.on_batch || cc->partitions > GF_PARTITIONS_MAX)
        return GF_ERR_INVALID;
    part_group *g = calloc(1, sizeof *g);
    if (!g)
        return GF_ERR_NOMEM;
    run->state = g;
    gf_err err = group_init(run, cc, g);
    if (err == GF_OK)
        err = gf__endpoint_thread_start(run, coordinator_thread);
    if (err == GF_OK)
        gf_log_info("partitioned consumer started",
                    "endpoint=%s group=%s/%s partitions=%u "
                    "holder=%s lease_ttl_ms=%lld",
                    run->ep->name, cc->stream, cc->name, g->partitions, g->holder,
                    (long long)g->ttl_ms);
    return err;
}

static bool partitioned_stop(gf__endpoint_run *run, int64_t deadline_ms)
{
    part_group *g = run->state;
    if (!gf__endpoint_thread_join(run, deadline_ms))
        return false; /* a handler is still running: leave everything to it */
    group_free(g);
    run->state = NULL;
    return true;
}

/* Unhealthy while a partition this instance owns cannot be worked (its stream or
 * consumer is gone and cannot be recreated, or it cannot be bound): the first one is
 * reported, with how many there are. */
static bool partitioned_check(gf__endpoint_run *run, char *why, size_t why_size)
{
    part_group *g = run->state;
    unsigned sick = 0;
    char prefix[32], first[300];
    for (unsigned p = 0; g && g->slots && p < g->partitions; p++) {
        snprintf(prefix, sizeof prefix, "partition %u: ", p);
        if (!gf__health_check(&g->slots[p].health, run, prefix, sick ? NULL : first,
                              sick ? 0 : sizeof first))
            sick++;
    }
    if (sick == 0)
        return true;
    if (sick == 1)
        snprintf(why, why_size, "%s", first);
    else
        snprintf(why, why_size, "%s (and %u more partitions)", first, sick - 1);
    return false;
}

const gf__endpoint_ops gf__endpoint_partitioned_ops = {
    .name = "partitioned",
    .abandoned = "its batches in flight are not acked: each partition's next owner takes it "
                 "once its lease expires (lease_ttl) and gets them again",
    .provision = partitioned_provision,
    .describe = partitioned_describe,
    .start = partitioned_start,
    .stop = partitioned_stop,
    .check = partitioned_check,
};
