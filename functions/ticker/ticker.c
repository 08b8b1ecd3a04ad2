/*
 * ticker — publishes the matcher tick of every tick group at the configured interval.
 *
 * Design notes:
 * - Exactly one ticker publishes: every instance runs the same loop, and only the holder
 *   of the lease "ticker.matcher" (bucket `leases`, gamefn/lease.h) publishes. The
 *   holder renews when less than half of the lease is left, so leadership costs one KV
 *   write per half lease, not one per tick; a dead leader is replaced within one lease
 *   (default 2 s); a clean stop releases the lease at once.
 * - A tick is a core publish on gamefn.v1.tick.matcher.<group> with an empty body and
 *   the headers Gamefn-Tick-Seq (counts from 1 in each tenure), Gamefn-Tick-Time (the
 *   leader's clock, Unix ms) and Gamefn-Lease-Token (the tenure's fencing token, the KV
 *   revision that began it). A matcher drops a tick whose token is lower than one it
 *   has seen for the group: a paused former leader cannot drive it. A lost tick is
 *   replaced by the next; a duplicated one is harmless (claims are compare-and-set).
 * - A leader stops publishing as soon as its own clock says its lease expired, before
 *   trying to renew it.
 * - The groups come from functions.matcher.matchmaking (gamefn/tickets/config.h), read
 *   from the file this instance was started with.
 *
 * Threads: one loop thread, started by init and joined by fini; it alone touches the
 * lease. The main thread only sets the stop flag.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/function.h"
#include "gamefn/kv.h"
#include "gamefn/lease.h"
#include "gamefn/log.h"
#include "gamefn/tickets/config.h"
#include "ticker_config.h"

typedef struct ticker {
    const ticker_config *cfg;
    gf_config *mm_config;
    gf_mm_tables tables;
    natsConnection *nc;
    kvStore *leases;
    gf_lease lease;
    pthread_t thread;
    bool started;
    atomic_int stop;
    long long published;
} ticker;

static void publish(ticker *t, const char *group, int64_t seq)
{
    char subject[128], buf[32];
    natsMsg *m = NULL;
    snprintf(subject, sizeof subject, "%s.%s", GF_MM_TICK_SUBJECT, group);
    natsStatus s = natsMsg_Create(&m, subject, NULL, NULL, 0);
    snprintf(buf, sizeof buf, "%" PRId64, seq);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Tick-Seq", buf);
    snprintf(buf, sizeof buf, "%" PRId64, gf_clock_unix_ms());
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Tick-Time", buf);
    snprintf(buf, sizeof buf, "%" PRIu64, t->lease.token);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Gamefn-Lease-Token", buf);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(t->nc, m);
    natsMsg_Destroy(m);
    if (s == NATS_OK)
        t->published++;
}

/* Holds (renewing when half the lease is gone) or acquires the lease; true while this
 * instance may publish. */
static bool lead(ticker *t, bool *was_leader)
{
    int64_t now = gf_clock_unix_ms();
    gf_err err = GF_OK;
    if (t->lease.held && now >= t->lease.expires_unix_ms)
        t->lease.held = false; /* our own clock says it expired: not the leader */
    if (!t->lease.held || t->lease.expires_unix_ms - now < t->cfg->lease_ttl_ms / 2)
        err = gf_lease_tick(&t->lease, now);
    bool leader = err == GF_OK && t->lease.held;
    if (leader && !*was_leader)
        gf_log_info("became tick leader", "token=%" PRIu64 " groups=%zu", t->lease.token,
                    t->tables.groups_len);
    else if (!leader && *was_leader)
        gf_log_warn("lost tick leadership", "err=%s", gf_err_str(err));
    *was_leader = leader;
    return leader;
}

static void *loop(void *arg)
{
    ticker *t = arg;
    bool was_leader = false;
    int64_t seq = 0, period = t->cfg->interval_ms;
    for (int64_t next = gf_clock_mono_ms(); !atomic_load(&t->stop); next += period) {
        bool leader = lead(t, &was_leader);
        if (!leader)
            seq = 0;
        else {
            seq++;
            for (size_t g = 0; g < t->tables.groups_len; g++)
                publish(t, t->tables.groups[g].name, seq);
        }
        if (gf_clock_mono_ms() > next + period)
            next = gf_clock_mono_ms(); /* fell behind (NATS away): do not burst */
        gf_clock_sleep_until(next + period, &t->stop);
    }
    if (t->lease.held && gf_lease_release(&t->lease) == GF_OK)
        gf_log_info("released tick leadership", "published=%lld", t->published);
    return NULL;
}

static gf_err init(gf_fn *fn)
{
    char why[256] = "";
    gf_config_error cerr;
    ticker *t = calloc(1, sizeof *t);
    if (!t)
        return GF_ERR_NOMEM;
    gf_fn_set_state(fn, t);
    t->cfg = gf_fn_section(fn);
    t->nc = gf_fn_nats(fn);
    gf_err err = gf_mm_config_load(gf_fn_config(fn)->path, &t->mm_config, &cerr);
    if (err != GF_OK) {
        gf_log_error("ticker cannot start", "why=\"%s\"", cerr.message);
        return err;
    }
    const gf_mm_config *mm = gf_config_function(t->mm_config);
    if ((err = gf_mm_tables_build(&mm->matchmaking, &t->tables, why, sizeof why)) != GF_OK) {
        gf_log_error("ticker cannot start", "why=\"%s\"", why);
        return err;
    }
    if ((err = gf_kv_open(gf_fn_js(fn), "leases", &t->leases)) != GF_OK)
        return err;
    gf_lease_init(&t->lease, gf_fn_js(fn), t->leases, "ticker.matcher", gf_fn_instance_id(fn),
                  t->cfg->lease_ttl_ms);
    if (pthread_create(&t->thread, NULL, loop, t) != 0)
        return GF_ERR_NOMEM;
    t->started = true;
    return GF_OK;
}

static void fini(gf_fn *fn)
{
    ticker *t = gf_fn_state(fn);
    if (!t)
        return;
    atomic_store(&t->stop, 1);
    if (t->started)
        pthread_join(t->thread, NULL);
    kvStore_Destroy(t->leases);
    gf_config_free(t->mm_config);
    free(t);
}

static const char *const buckets[] = {"leases", NULL};

static const gf_function ticker_function = {
    .name = "ticker",
    .version = "0.1.0",
    .description = "Publishes the matcher tick of every tick group (one leader by lease).",
    .config = &ticker_config_table,
    .buckets = buckets,
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&ticker_function, argc, argv);
}
