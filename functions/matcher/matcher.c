/*
 * matcher.c — start and stop: tables, store, mirror, and one queue subscription per
 * tick group (gamefn.v1.tick.matcher.<group>, queue group "matcher").
 *
 * Design notes: the tick subscriptions are the matcher's own (one per group, so the
 * groups a replica takes are its config's `groups`, and each group's ticks run in order
 * on that subscription's delivery thread); the runtime's tick endpoint publishes and
 * receives one subject, while the ticker function publishes one per group.
 * A tick carrying a lease token lower than one already seen for its group comes from a
 * former leader (a paused ticker) and is dropped: the fencing of the ticker's lease.
 */
#include "matcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"

static uint64_t header_u64(natsMsg *msg, const char *key)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(msg, key, &v) != NATS_OK || !v)
        return 0;
    return strtoull(v, NULL, 10);
}

static void on_tick(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    mm_group *g = closure;
    uint64_t token = header_u64(msg, "Gamefn-Lease-Token");
    int64_t seq = (int64_t)header_u64(msg, "Gamefn-Tick-Seq");
    natsMsg_Destroy(msg);
    if (token < g->max_token) {
        atomic_fetch_add(&g->m->n.stale_ticks, 1);
        return;
    }
    g->max_token = token;
    matcher_tick(g->m, g, seq);
}

static bool wanted(const gf_mm_config *cfg, const char *group)
{
    if (cfg->groups_len == 0)
        return true;
    for (size_t i = 0; i < cfg->groups_len; i++) {
        if (strcmp(cfg->groups[i], group) == 0)
            return true;
    }
    return false;
}

/* The tickets bucket must keep a live ticket's last revision longer than any wait. */
static gf_err check_ttl(const gf_mm_tables *t, const gf_mm_config *cfg, int64_t tickets_ttl_ms,
                        char *why, size_t why_size)
{
    for (size_t q = 0; tickets_ttl_ms > 0 && q < t->cfg.queues_len; q++) {
        if (t->queues[q].ttl_ms + cfg->claim_lease_ms >= tickets_ttl_ms) {
            snprintf(why, why_size,
                     "queue %s: ticket_ttl + claim_lease must be shorter than the tickets "
                     "bucket's ttl, or a waiting ticket could vanish",
                     t->queues[q].name);
            return GF_ERR_CONFIG;
        }
    }
    return GF_OK;
}

gf_err matcher_start(matcher *m, const gf_mm_config *cfg, natsConnection *nc, jsCtx *js,
                     const char *instance_id, int64_t tickets_ttl_ms, char *why, size_t why_size)
{
    m->cfg = cfg;
    m->nc = nc;
    m->instance_id = instance_id;
    gf_test_pause_arm(&m->pause, "GAMEFN_TEST_MATCHER_PAUSE");
    gf_err err = gf_mm_tables_build(&cfg->matchmaking, &m->tables, why, why_size);
    if (err == GF_OK)
        err = check_ttl(&m->tables, cfg, tickets_ttl_ms, why, why_size);
    if (err != GF_OK)
        return err;
    if ((err = gf_mmstore_open(nc, js, &m->store)) != GF_OK ||
        (err = gf_kv_open(js, "tickets", &m->tickets)) != GF_OK) {
        snprintf(why, why_size, "binding the matchmaking buckets: %s", gf_err_str(err));
        return err;
    }
    if ((err = mm_mirror_start(nc, m->tickets, &m->tables, &m->mirror)) != GF_OK)
        return err;
    gf_match_wait_params wp;
    gf_match_wait_params_default(&wp);
    wp.half_life_ms = cfg->wait_half_life_ms;
    for (size_t i = 0; i < m->tables.groups_len; i++) {
        const char *name = m->tables.groups[i].name;
        if (!wanted(cfg, name))
            continue;
        mm_group *g = &m->groups[m->ngroups++];
        g->m = m;
        g->index = (int)i;
        if ((err = gf_match_workspace_create(&g->ws)) != GF_OK ||
            (err = gf_match_wait_create(&m->tables.cfg, &wp, &g->wait)) != GF_OK)
            return err;
        char subject[128];
        snprintf(subject, sizeof subject, "%s.%s", GF_MM_TICK_SUBJECT, name);
        if (natsConnection_QueueSubscribe(&g->sub, nc, subject, GF_WIRE_QUEUE_MATCHER, on_tick,
                                          g) != NATS_OK) {
            snprintf(why, why_size, "subscribing %s failed", subject);
            return GF_ERR_NATS;
        }
        /* A tick is worth nothing once the next one is due: never queue many. */
        natsSubscription_SetPendingLimits(g->sub, 16, 1024 * 1024);
    }
    natsConnection_Flush(nc);
    gf_log_info("matcher groups", "subscribed=%zu of=%zu claim_lease_ms=%lld", m->ngroups,
                m->tables.groups_len, (long long)cfg->claim_lease_ms);
    return GF_OK;
}

void matcher_stop(matcher *m, int64_t deadline_ms)
{
    for (size_t i = 0; i < m->ngroups; i++) {
        if (m->groups[i].sub)
            natsSubscription_Drain(m->groups[i].sub);
    }
    for (size_t i = 0; i < m->ngroups; i++) {
        mm_group *g = &m->groups[i];
        if (g->sub) {
            int64_t left = deadline_ms - gf_clock_mono_ms();
            natsSubscription_WaitForDrainCompletion(g->sub, left > 100 ? left : 100);
            natsSubscription_Destroy(g->sub);
        }
        gf_match_workspace_free(g->ws);
        gf_match_wait_free(g->wait);
    }
    gf_log_info(
        "matcher stopped",
        "ticks=%lld stale_ticks=%lld matches=%lld claims=%lld claim_conflicts=%lld "
        "rollbacks=%lld publish_unknown=%lld released=%lld helped=%lld timed_out=%lld pushes=%lld",
        (long long)atomic_load(&m->n.ticks), (long long)atomic_load(&m->n.stale_ticks),
        (long long)atomic_load(&m->n.matches), (long long)atomic_load(&m->n.claims),
        (long long)atomic_load(&m->n.claim_conflicts), (long long)atomic_load(&m->n.rollbacks),
        (long long)atomic_load(&m->n.publish_unknown), (long long)atomic_load(&m->n.released),
        (long long)atomic_load(&m->n.helped), (long long)atomic_load(&m->n.timed_out),
        (long long)atomic_load(&m->n.pushes));
    mm_mirror_stop(m->mirror);
    kvStore_Destroy(m->tickets);
    gf_mmstore_close(m->store);
    memset(m, 0, sizeof *m);
}
