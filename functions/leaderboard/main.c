/*
 * leaderboard — boards of players ranked by score, from the ScoreEvents in EVENTS.
 *
 *  - "events": the partitioned consumer group `leaderboard` on EVENTS, through the
 *    consumer framework (gamefn/consumer.h) with lb_effect_ops: each ScoreEvent changes
 *    "<board>.<period>.<player_id>" in KV bucket `leaderboard`, exactly once.
 *  - "query": gamefn.v1.leaderboard.query (queue group `leaderboard`), answered from the
 *    in-memory boards that every replica keeps by following the whole bucket
 *    (follow.c): top, page, around and rank (lb_query.c).
 *  - "snapshot": a tick endpoint; the lease holder's tick writes a snapshot of the boards
 *    to LB_SNAPSHOTS every snapshot_interval (snapshot.c).
 * At start (init) a replica loads the latest snapshot and replays KV_leaderboard after
 * it before it answers anything, and logs how long each took.
 *
 * Threads: partition threads (events), query handlers, the tick thread and the
 * follower share the boards behind lb_fn.lock (lb_fn.h); the consumer framework and the
 * config are thread-safe / immutable.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/v1/error.pb-c.h"
#include "lb_fn.h"

enum { CATCH_UP_MAX_MS = 600000 };

static const gf_consumer_def consumer_def = {
    .stream = "EVENTS",
    .group = "leaderboard",
    .bucket = LB_BUCKET,
    .ops = {0}, /* lb_effect_ops, copied in init (a const of another unit) */
};

/* ---- events: the consumer framework ----------------------------------------------- */

static gf_err on_batch(gf_fn *fn, const gf_batch *batch)
{
    return gf_consumer_batch(((lb_fn *)gf_fn_state(fn))->consumer, batch);
}

static gf_err on_acquire(gf_fn *fn, unsigned partition, uint64_t token)
{
    return gf_consumer_acquire(((lb_fn *)gf_fn_state(fn))->consumer, partition, token);
}

static void on_release(gf_fn *fn, unsigned partition, uint64_t token)
{
    gf_consumer_release(((lb_fn *)gf_fn_state(fn))->consumer, partition, token);
}

/* ---- queries ------------------------------------------------------------------------- */

static gf_err on_query(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    lb_fn *lb = gf_fn_state(fn);
    lb_freshness fresh = {.pending = atomic_load(&lb->pending),
                          .as_of_unix_ms = atomic_load(&lb->heard_unix_ms)};
    uint8_t *out = NULL;
    size_t len = 0;
    pthread_rwlock_rdlock(&lb->lock);
    fresh.as_of_stream_seq = lb->applied_seq;
    gf_err err = lb_query(lb->boards, req->data, req->len, &fresh, gf_clock_unix_ms(), &out, &len,
                          &reply->code, reply->field, sizeof reply->field, reply->error,
                          sizeof reply->error);
    pthread_rwlock_unlock(&lb->lock);
    reply->data = out;
    reply->len = len;
    return err;
}

/* ---- snapshots ----------------------------------------------------------------------- */

static gf_err on_snapshot_tick(gf_fn *fn, const gf_tick *tick)
{
    (void)tick;
    lb_fn *lb = gf_fn_state(fn);
    if (!atomic_load(&lb->caught_up))
        return GF_OK;
    gf_err err = lb_snapshot_maybe_write(lb);
    return err == GF_ERR_NOMEM ? err : GF_OK; /* a failed write is retried next time */
}

/* ---- lifecycle ----------------------------------------------------------------------- */

/* Loads the snapshot, then replays KV_leaderboard after it until caught up. */
static gf_err rebuild(lb_fn *lb)
{
    int64_t t0 = gf_clock_mono_ms();
    lb_snapshot_load(lb);
    int64_t t1 = gf_clock_mono_ms();
    uint64_t from = lb->applied_seq;
    gf_err err = lb_follow_start(lb);
    while (err == GF_OK && !atomic_load(&lb->caught_up)) {
        if (gf_clock_mono_ms() - t1 > CATCH_UP_MAX_MS) {
            gf_log_error("leaderboard replay did not catch up", "applied=%" PRIu64,
                         (uint64_t)atomic_load(&lb->as_of_seq));
            return GF_ERR_TIMEOUT;
        }
        gf_clock_sleep_ms(20);
    }
    if (err != GF_OK)
        return err;
    pthread_rwlock_rdlock(&lb->lock);
    size_t players = lb_boards_players(lb->boards);
    uint64_t to = lb->applied_seq;
    pthread_rwlock_unlock(&lb->lock);
    gf_log_info("leaderboard rebuilt",
                "snapshot_as_of=%" PRIu64 " snapshot_ms=%lld replayed_to=%" PRIu64
                " replay_ms=%lld players=%zu total_ms=%lld",
                from, (long long)(t1 - t0), to, (long long)(gf_clock_mono_ms() - t1), players,
                (long long)(gf_clock_mono_ms() - t0));
    return GF_OK;
}

static gf_err init(gf_fn *fn)
{
    lb_fn *lb = calloc(1, sizeof *lb);
    if (!lb)
        return GF_ERR_NOMEM;
    gf_fn_set_state(fn, lb);
    lb->cfg = gf_fn_section(fn);
    lb->nc = gf_fn_nats(fn);
    lb->js = gf_fn_js(fn);
    lb->instance = gf_fn_instance_id(fn);
    if (pthread_rwlock_init(&lb->lock, NULL) != 0)
        return GF_ERR_NOMEM;
    gf_err err = lb_boards_alloc(lb->cfg, &lb->boards);
    if (err != GF_OK)
        return err;
    gf_consumer_def def = consumer_def;
    def.ops = lb_effect_ops;
    err = gf_consumer_open(fn, &def, &lb->cfg->events, (void *)(uintptr_t)lb->cfg, &lb->consumer);
    return err == GF_OK ? rebuild(lb) : err;
}

static void fini(gf_fn *fn)
{
    lb_fn *lb = gf_fn_state(fn);
    if (!lb)
        return;
    lb_follow_stop(lb);
    gf_consumer_close(lb->consumer);
    lb_boards_free(lb->boards);
    pthread_rwlock_destroy(&lb->lock);
    free(lb);
}

static const gf_endpoint endpoints[] = {
    {.name = "events",
     .kind = GF_ENDPOINT_PARTITIONED,
     .partitioned = {.stream = "EVENTS",
                     .group = "leaderboard",
                     .on_batch = on_batch,
                     .on_acquire = on_acquire,
                     .on_release = on_release}},
    {.name = "query",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = "gamefn.v1.leaderboard.query",
                 .queue_group = "leaderboard",
                 .on_request = on_query,
                 .concurrency = 4}},
    {.name = "snapshot",
     .kind = GF_ENDPOINT_TICK,
     .tick = {.subject = "gamefn.v1.tick.leaderboard.snapshot",
              .queue_group = "leaderboard",
              .period_ms = 5000,
              .lease_bucket = "leases",
              .on_tick = on_snapshot_tick}},
};

static const char *const streams[] = {LB_SNAPSHOTS, NULL};
static const char *const buckets[] = {LB_BUCKET, "dlq_reasons", NULL};

static const gf_function leaderboard = {
    .name = "leaderboard",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Leaderboards from ScoreEvents: exactly-once effects in KV, whole boards "
                   "answered by every replica (top, page, around, rank).",
    .config = &lb_config_table,
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
    .streams = streams,
    .buckets = buckets,
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&leaderboard, argc, argv);
}
