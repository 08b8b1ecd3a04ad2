/*
 * eventcount — counts every player's game events by type: the example of the two
 * durable ways a function receives work (docs/FUNCTIONS.md).
 *
 *  - "count", a partitioned pull consumer: group `eventcount` on stream EVENTS, one
 *    durable per event partition (eventcount-p00..p15), each partition handled by one
 *    replica at a time. A batch holds one partition's events in stream order; per
 *    player it reads the record (KV bucket event_counts, key = player id), counts the
 *    events not counted yet and writes it back by compare-and-set (tally.h: skip what
 *    applied_seq covers, refuse a record a newer owner wrote).
 *  - "reset", a pull consumer on the work queue EVENTCOUNT_RESETS: a message on
 *    gamefn.v1.eventcount.reset.<player_id> sets that player's counts to zero.
 *  - "get", request/reply on gamefn.v1.eventcount.get: the player id in, its record
 *    ("v1 <applied_seq> <token> <total> <type>=<n>...") out.
 *
 * Threads: the runtime runs "count" batches of different partitions, "reset" messages
 * and "get" requests concurrently; they share only the kvStore (thread-safe in nats.c)
 * and race only through KV compare-and-set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/function.h"
#include "gamefn/kv.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "tally.h"

#define BUCKET "event_counts"

/* One read-modify-write of a player's record. change() returns GF_OK when it changed
 * the record, GF_ERR_NOT_FOUND when there is nothing to write, anything else to give
 * up with that error. A lost compare-and-set is GF_ERR_RETRY: read again later. */
typedef gf_err (*change_fn)(ec_record *r, void *arg);

static gf_err update_player(kvStore *kv, const char *player, change_fn change, void *arg)
{
    kvEntry *e = NULL;
    ec_record r;
    uint64_t rev = 0;
    gf_err err = gf_kv_get(kv, player, &e);
    if (err == GF_OK) {
        rev = kvEntry_Revision(e);
        err = ec_record_decode(kvEntry_ValueString(e), (size_t)kvEntry_ValueLen(e), &r);
    } else if (err == GF_ERR_NOT_FOUND) {
        ec_record_init(&r);
        err = GF_OK;
    }
    kvEntry_Destroy(e);
    if (err != GF_OK)
        return err == GF_ERR_INVALID ? GF_ERR_PERMANENT : err; /* a corrupt record */
    if ((err = change(&r, arg)) != GF_OK)
        return err == GF_ERR_NOT_FOUND ? GF_OK : err;
    char text[EC_RECORD_MAX];
    size_t len = ec_record_encode(&r, text, sizeof text);
    err = rev ? gf_kv_update(kv, player, text, len, rev, NULL)
              : gf_kv_create(kv, player, text, len, NULL);
    return err == GF_ERR_CONFLICT ? GF_ERR_RETRY : err;
}

/* ---- count: the partitioned endpoint ------------------------------------------- */

typedef struct parsed {
    char player[EC_PLAYER_MAX + 1];
    char type[EC_TYPE_MAX + 1];
} parsed;

typedef struct player_events {
    const gf_batch *batch;
    const parsed *ev;
    const char *player;
} player_events;

static gf_err count_events(ec_record *r, void *arg)
{
    const player_events *pe = arg;
    bool changed = false;
    if (!ec_record_fence(r, pe->batch->token))
        return GF_ERR_CONFLICT; /* a newer owner has the partition: we must stop */
    for (size_t i = 0; i < pe->batch->len; i++) {
        if (pe->batch->verdicts[i] == GF_OK && strcmp(pe->ev[i].player, pe->player) == 0)
            changed = ec_record_apply(r, pe->batch->msgs[i].stream_seq, pe->ev[i].type) || changed;
    }
    return changed ? GF_OK : GF_ERR_NOT_FOUND;
}

static gf_err on_count(gf_fn *fn, const gf_batch *batch)
{
    kvStore *kv = gf_fn_state(fn);
    parsed *ev = calloc(batch->len, sizeof *ev);
    if (!ev)
        return GF_ERR_NOMEM;
    for (size_t i = 0; i < batch->len; i++) {
        if (ec_subject_parse(batch->msgs[i].subject, ev[i].player, sizeof ev[i].player, ev[i].type,
                             sizeof ev[i].type) != GF_OK)
            batch->verdicts[i] = GF_ERR_INVALID; /* dead-lettered; the others go on */
    }
    gf_err err = GF_OK;
    for (size_t i = 0; i < batch->len && err == GF_OK; i++) {
        bool first = batch->verdicts[i] == GF_OK;
        for (size_t j = 0; j < i && first; j++) /* each player once */
            first = batch->verdicts[j] != GF_OK || strcmp(ev[j].player, ev[i].player) != 0;
        if (first) {
            player_events pe = {batch, ev, ev[i].player};
            err = update_player(kv, ev[i].player, count_events, &pe);
        }
    }
    free(ev);
    return err;
}

static gf_err on_acquire(gf_fn *fn, unsigned partition, uint64_t token)
{
    /* Nothing to load: every record carries its own position (applied_seq). A consumer
     * with per-partition state would read it here. */
    gf_log_debug("counting partition", "partition=%u token=%llu", partition,
                 (unsigned long long)token);
    return GF_OK;
}

/* ---- reset: the pull endpoint ---------------------------------------------------- */

static gf_err reset_counts(ec_record *r, void *arg)
{
    (void)arg;
    if (r->total == 0)
        return GF_ERR_NOT_FOUND;
    ec_record_reset(r);
    return GF_OK;
}

static gf_err on_reset(gf_fn *fn, const gf_msg *msg)
{
    const char *player = strrchr(msg->subject, '.');
    if (!player || !gf_name_id_ok(player + 1, EC_PLAYER_MAX, NULL, 0))
        return GF_ERR_INVALID; /* terminated: a retry cannot fix it */
    return update_player(gf_fn_state(fn), player + 1, reset_counts, NULL);
}

/* ---- get: request/reply ---------------------------------------------------------- */

static gf_err on_get(gf_fn *fn, const gf_msg *req, gf_reply *reply)
{
    char player[EC_PLAYER_MAX + 1];
    char why[GF_NAME_WHY_MAX];
    if (req->len == 0 || req->len > EC_PLAYER_MAX) {
        snprintf(reply->error, sizeof reply->error, "player id must be 1..%d bytes", EC_PLAYER_MAX);
        return GF_ERR_INVALID;
    }
    memcpy(player, req->data, req->len);
    player[req->len] = '\0';
    if (!gf_name_id_ok(player, EC_PLAYER_MAX, why, sizeof why)) {
        snprintf(reply->error, sizeof reply->error, "player id %s", why);
        return GF_ERR_INVALID;
    }
    kvEntry *e = NULL;
    gf_err err = gf_kv_get(gf_fn_state(fn), player, &e);
    if (err == GF_OK) {
        reply->len = (size_t)kvEntry_ValueLen(e);
        reply->data = malloc(reply->len ? reply->len : 1);
        if (reply->data)
            memcpy(reply->data, kvEntry_ValueString(e), reply->len);
        err = reply->data ? GF_OK : GF_ERR_NOMEM;
    } else if (err == GF_ERR_NOT_FOUND) {
        snprintf(reply->error, sizeof reply->error, "no events counted for this player");
    }
    kvEntry_Destroy(e);
    return err;
}

/* ---- the declaration ------------------------------------------------------------- */

static gf_err init(gf_fn *fn)
{
    kvStore *kv = NULL;
    gf_err err = gf_kv_open(gf_fn_js(fn), BUCKET, &kv);
    gf_fn_set_state(fn, kv);
    return err;
}

static void fini(gf_fn *fn)
{
    kvStore_Destroy(gf_fn_state(fn));
}

static const gf_endpoint endpoints[] = {
    {.name = "count",
     .kind = GF_ENDPOINT_PARTITIONED,
     .partitioned = {.stream = "EVENTS",
                     .group = "eventcount",
                     .on_batch = on_count,
                     .on_acquire = on_acquire}},
    {.name = "reset",
     .kind = GF_ENDPOINT_PULL,
     .pull = {.stream = "EVENTCOUNT_RESETS", .consumer = "eventcount", .on_message = on_reset}},
    {.name = "get",
     .kind = GF_ENDPOINT_REQUEST,
     .request = {.subject = "gamefn.v1.eventcount.get",
                 .queue_group = "eventcount",
                 .on_request = on_get}},
};

static const char *const buckets[] = {BUCKET, NULL};

static const gf_function eventcount = {
    .name = "eventcount",
    .version = "0.1.0",
    .description = "Counts each player's game events by type (example of pull and partitioned "
                   "pull endpoints).",
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
    .buckets = buckets,
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&eventcount, argc, argv);
}
