/*
 * fleet_sweep.c — the fleet's periodic work, on the tick (one instance per tick):
 *
 *   1. stale servers (no heartbeat until stale_unix_ms): a match they were running is
 *      aborted if it was never committed, else its players are released
 *      (fleet_release.c), then the record is deleted by CAS. Not while the bucket refuses
 *      writes for want of room, nor until it has taken them for a whole heartbeat_timeout
 *      again (as this instance saw it: its handlers' and its sweep's refusals,
 *      fleet_full_within): a heartbeat the bucket refused is the fleet's failure, not the
 *      server's, and a server gets a full timeout to heartbeat again once there is room,
 *      as after any heartbeat;
 *   2. broken keys — a value that is not a usable record (fleet_table.h: garbage, an
 *      invalid record, a record under another key or of an unconfigured datacenter),
 *      held unchanged for heartbeat_timeout — are deleted by CAS on the revision seen,
 *      so a valid record written meanwhile survives; nothing else would ever remove
 *      them (no heartbeat refreshes them, no allocator takes them);
 *   3. abandoned allocations — ALLOCATED longer than allocation_grace with no commit
 *      record (the allocator died between taking the server and committing, and the
 *      match was never redelivered) — are aborted and the server freed;
 *   4. orphaned server-id indexes (fleet_ids.c): an "ids/<server_id>" key claimed
 *      heartbeat_timeout or longer ago whose datacenter holds no record of the id — left
 *      by a fleet killed between a record's delete and the index's release, or by a
 *      register killed between its claim and its record write — is deleted by CAS on the
 *      revision read (fleet_ids_remove_orphan), at most ORPHANS_PER_TICK a tick. The
 *      mirror holds the index keys (fleet_table.h), so finding them reads nothing; only
 *      a key that looks orphaned there is read (with its record) from the bucket;
 *   5. every scale_interval (in whole ticks, by the tick's sequence number, so replicas
 *      taking turns do not each publish), per datacenter, the warm pool (warm.h) is
 *      published as a FleetScaleRequest on gamefn.v1.fleet.scale.<datacenter>.
 *
 * Design notes: the scan copies what it needs out of the mirror under its lock and
 * acts afterwards, each write a CAS on the revision the mirror showed, so a server
 * that heartbeats in between simply survives (the delete loses its race). Ticks may
 * overlap across instances; every step is idempotent. Matches known to be committed
 * are remembered ("<key> <match_id>") so a long game costs one read, not one a tick.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_fn.h"
#include "fleet_store.h"
#include "gamefn/clock.h"
#include "gamefn/function.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/util.h"

enum { STALE_KEPT_LOG_MS = 10000, ORPHANS_PER_TICK = 64 };

typedef struct stale_item {
    char key[FLEET_KEY_MAX];
    uint64_t revision;
    fleet_released released;
} stale_item;

typedef struct broken_item {
    char key[FLEET_KEY_MAX];
    uint64_t revision;
    char why[GF_WIRE_TEXT_MAX];
} broken_item;

typedef struct late_item {
    char key[FLEET_KEY_MAX];
    char match_id[GF_WIRE_ID_MAX + 1];
} late_item;

typedef struct orphan_scan {
    char keys[ORPHANS_PER_TICK][FLEET_KEY_MAX];
    size_t n;
} orphan_scan;

typedef struct scan {
    int64_t now, grace_ms;
    stale_item *stale;
    size_t n_stale, cap_stale;
    late_item *late;
    size_t n_late, cap_late;
    int64_t broken_after_ms;
    broken_item *broken;
    size_t n_broken, cap_broken;
    bool nomem;
} scan;

static void scan_entry(const fleet_entry *e, void *arg)
{
    scan *s = arg;
    const Gamefn__V1__ServerRecord *r = e->rec;
    bool has_match = r->allocated_match_id && r->allocated_match_id[0];
    if (fleet_stale(r, s->now)) {
        stale_item *v = gf_grow(s->stale, &s->cap_stale, s->n_stale + 1, sizeof *v);
        if (!v) {
            s->nomem = true;
            return;
        }
        s->stale = v;
        stale_item *it = &v[s->n_stale];
        if (fleet_released_copy(r, &it->released) != GF_OK) {
            s->nomem = true;
            return;
        }
        snprintf(it->key, sizeof it->key, "%s", e->key);
        it->revision = e->revision;
        s->n_stale++;
    } else if (has_match && s->now - r->allocated_unix_ms >= s->grace_ms) {
        late_item *v = gf_grow(s->late, &s->cap_late, s->n_late + 1, sizeof *v);
        if (!v) {
            s->nomem = true;
            return;
        }
        s->late = v;
        snprintf(v[s->n_late].key, sizeof v->key, "%s", e->key);
        snprintf(v[s->n_late++].match_id, sizeof v->match_id, "%s", r->allocated_match_id);
    }
}

static void scan_broken(const fleet_broken *b, void *arg)
{
    scan *s = arg;
    if (s->now - b->since_unix_ms < s->broken_after_ms)
        return; /* give a racing or half-upgraded writer its chance to fix it */
    broken_item *v = gf_grow(s->broken, &s->cap_broken, s->n_broken + 1, sizeof *v);
    if (!v) {
        s->nomem = true;
        return;
    }
    s->broken = v;
    broken_item *it = &v[s->n_broken++];
    snprintf(it->key, sizeof it->key, "%s", b->key);
    snprintf(it->why, sizeof it->why, "%s", b->why);
    it->revision = b->revision;
}

/* A broken key that stayed broken: delete it on the revision seen. Its id's index goes
 * too when the key names a server (<datacenter>.<server_id>). */
static void remove_broken(fleet_state *st, const broken_item *it)
{
    char dc[GF_WIRE_NAME_MAX + 1], id[GF_WIRE_ID_MAX + 1];
    int full = 0;
    gf_err err = fleet_store_delete(st->js, st->fleet_kv, it->key, it->revision, &full);
    if (err == GF_ERR_CONFLICT)
        return; /* rewritten meanwhile (maybe valid now), or another replica removed it */
    if (full) {
        fleet_full_note(st, full, "removing a broken key", it->key);
        return;
    }
    if (err != GF_OK) {
        gf_log_warn("broken fleet key not removed yet", "key=%s err=%s", it->key, gf_err_str(err));
        return;
    }
    fleet_mirror_note(st->mirror, it->key, it->revision + 1, NULL, 0);
    gf_log_warn("broken fleet key removed", "key=%s revision=%llu why=\"%s\"", it->key,
                (unsigned long long)it->revision, it->why);
    if (fleet_key_split(it->key, dc, id))
        fleet_ids_release(st, dc, id);
}

/* Its match settled first (fleet_removal_settle), then the record deleted by CAS: a
 * crash or a failure in between leaves the stale record, and the next sweep repeats it. */
static void remove_stale(fleet_state *st, stale_item *it)
{
    if (fleet_removal_settle(st, it->key, &it->released) != GF_OK)
        return; /* logged; the record kept for the next sweep */
    int full = 0;
    gf_err err = fleet_store_delete(st->js, st->fleet_kv, it->key, it->revision, &full);
    if (err == GF_ERR_CONFLICT) { /* it heartbeated (or changed) meanwhile: not stale any more */
        if (it->released.match_id[0])
            gf_log_warn("stale server came back after its match was settled", "server=%s match=%s",
                        it->key, it->released.match_id);
        return;
    }
    if (full) {
        fleet_full_note(st, full, "removing a stale server", it->key);
        return;
    }
    if (err != GF_OK) {
        gf_log_warn("stale server not removed yet", "server=%s err=%s", it->key, gf_err_str(err));
        return;
    }
    fleet_mirror_note(st->mirror, it->key, it->revision + 1, NULL, 0);
    gf_log_info("server removed: missed its heartbeats", "server=%s match=%s", it->key,
                it->released.match_id[0] ? it->released.match_id : "-");
    fleet_removal_finish(st, it->key, it->released.match_id);
}

static void scan_orphan(const fleet_id_entry *id, void *arg)
{
    orphan_scan *o = arg;
    if (o->n < ORPHANS_PER_TICK)
        snprintf(o->keys[o->n++], sizeof o->keys[0], "%s", id->key);
}

/* Index keys the mirror shows orphaned, confirmed against the bucket one by one. */
static void remove_orphans(fleet_state *st, int64_t now)
{
    orphan_scan o = {.n = 0};
    fleet_mirror_orphan_ids(st->mirror, now, st->cfg->heartbeat_timeout_ms, scan_orphan, &o);
    for (size_t i = 0; i < o.n; i++) {
        gf_err err = fleet_ids_remove_orphan(st, o.keys[i], now);
        if (err != GF_OK) { /* the store failing: the others would too; next tick */
            gf_log_warn("orphan server-id index not removed yet", "key=%s err=%s", o.keys[i],
                        gf_err_str(err));
            return;
        }
    }
}

/* ---- abandoned allocations ----------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool known_committed(fleet_state *st, const char *tag)
{
    pthread_mutex_lock(&st->lock);
    bool found = st->n_committed &&
                 bsearch(&tag, st->committed, st->n_committed, sizeof *st->committed, cmp_str);
    pthread_mutex_unlock(&st->lock);
    return found;
}

/* Keeps only the tags in `keep` (the allocations still open and committed). */
static void remember_committed(fleet_state *st, char **keep, size_t n)
{
    qsort(keep, n, sizeof *keep, cmp_str);
    pthread_mutex_lock(&st->lock);
    char **old = st->committed;
    size_t n_old = st->n_committed;
    st->committed = keep;
    st->n_committed = n;
    pthread_mutex_unlock(&st->lock);
    for (size_t i = 0; i < n_old; i++)
        free(old[i]);
    free(old);
}

/* One late allocation: committed on this server (remember it), committed on another
 * (a spare: an allocator took two servers for the match, e.g. a redelivery whose copy of
 * the fleet had not seen the first, and died or lost the write before freeing this
 * one — nothing else would ever free it), or aborted now or before (free the server).
 * Returns the tag to remember, or NULL. */
static char *settle_late(fleet_state *st, const late_item *it)
{
    char tag[FLEET_KEY_MAX + GF_WIRE_ID_MAX + 2], on[FLEET_KEY_MAX];
    snprintf(tag, sizeof tag, "%s %s", it->key, it->match_id);
    if (known_committed(st, tag))
        return strdup(tag);
    bool committed = false;
    gf_err err = fleet_abort_unless_committed(st, it->match_id, &committed, on);
    if (err != GF_OK) {
        gf_log_warn("abandoned allocation left undecided", "server=%s match=%s err=%s", it->key,
                    it->match_id, gf_err_str(err));
        return NULL;
    }
    bool spare = committed && !fleet_committed_here(on, it->key);
    if (committed && !spare)
        return strdup(tag);
    fleet_written w = {0};
    int full = 0;
    err = fleet_store_release(st->js, st->fleet_kv, it->key, it->match_id, &w, &full);
    if (full)
        fleet_full_note(st, full, "freeing the server of a late allocation", it->key);
    if (err == GF_OK) {
        fleet_mirror_note(st->mirror, it->key, w.revision, w.data, w.len);
        if (spare)
            gf_log_warn("spare server of a committed match freed", "server=%s match=%s on=%s",
                        it->key, it->match_id, on);
        else
            gf_log_warn("abandoned allocation aborted: server free again", "server=%s match=%s",
                        it->key, it->match_id);
    }
    fleet_written_fini(&w);
    return NULL;
}

/* ---- warm pool -------------------------------------------------------------------- */

typedef struct pool_scan {
    int64_t now;
    warm_server *free;
    char (*ids)[GF_WIRE_ID_MAX + 1];
    size_t n_free, cap, cap_ids;
    uint32_t busy;
    bool nomem;
} pool_scan;

static void pool_entry(const fleet_entry *e, void *arg)
{
    pool_scan *s = arg;
    const Gamefn__V1__ServerRecord *r = e->rec;
    if (fleet_stale(r, s->now))
        return;
    if (r->state != GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE) {
        s->busy++;
        return;
    }
    size_t cap_ids = s->cap_ids;
    warm_server *f = gf_grow(s->free, &s->cap, s->n_free + 1, sizeof *s->free);
    if (f)
        s->free = f;
    char(*ids)[GF_WIRE_ID_MAX + 1] = gf_grow(s->ids, &cap_ids, s->n_free + 1, sizeof *s->ids);
    if (ids) {
        s->ids = ids;
        s->cap_ids = cap_ids;
    }
    if (!f || !ids) {
        s->nomem = true;
        return;
    }
    snprintf(s->ids[s->n_free], sizeof s->ids[0], "%s", r->server_id);
    s->free[s->n_free].free_since_ms = r->free_since_unix_ms;
    s->n_free++;
}

static void publish_scale(fleet_state *st, size_t dc_index, int64_t now)
{
    const fleet_dc_config *dc = &st->cfg->datacenters[dc_index];
    pool_scan s = {.now = now};
    fleet_mirror_each(st->mirror, dc->name, pool_entry, &s);
    if (s.nomem)
        goto out;
    for (size_t i = 0; i < s.n_free; i++)
        s.free[i].server_id = s.ids[i];
    pthread_mutex_lock(&st->lock);
    double rate = warm_forecast(&st->demand[dc_index], now, st->cfg->forecast_short_ms);
    pthread_mutex_unlock(&st->lock);
    uint32_t target =
        warm_target(rate, st->cfg->warmup_ms, st->cfg->safety, dc->floor, dc->ceiling);
    warm_plan plan;
    warm_plan_compute(s.free, s.n_free, target, now, st->cfg->hibernate_after_ms, &plan);

    char *ids[256];
    size_t n_ids = plan.n_hibernate < 256 ? plan.n_hibernate : 256;
    for (size_t i = 0; i < n_ids; i++)
        ids[i] = fleet_str(s.free[i].server_id);
    Gamefn__V1__FleetScaleRequest r = GAMEFN__V1__FLEET_SCALE_REQUEST__INIT;
    r.datacenter = fleet_str(dc->name);
    r.target_free = plan.target;
    r.free_now = plan.free_now;
    r.allocated_now = s.busy;
    r.start = plan.start;
    r.hibernate_server_ids = ids;
    r.n_hibernate_server_ids = n_ids;
    r.forecast_matches_per_s = rate;
    r.issued_unix_ms = now;
    uint8_t buf[256 * (GF_WIRE_ID_MAX + 3) + 256];
    size_t len = gamefn__v1__fleet_scale_request__pack(&r, buf);
    char subject[128];
    snprintf(subject, sizeof subject, "%s.%s", GF_WIRE_SUBJ_FLEET_SCALE, dc->name);
    if (natsConnection_Publish(st->nc, subject, buf, (int)len) != NATS_OK)
        gf_log_warn("scale request not published", "datacenter=%s", dc->name);
    if (plan.start || plan.n_hibernate)
        gf_log_info("warm pool",
                    "datacenter=%s target=%u free=%u busy=%u start=%u hibernate=%zu "
                    "forecast_per_s=%.3f",
                    dc->name, plan.target, plan.free_now, s.busy, plan.start, n_ids, rate);
out:
    free(s.free);
    free(s.ids);
}

/* ---- the tick ----------------------------------------------------------------------- */

gf_err fleet_on_tick(gf_fn *fn, const gf_tick *tick)
{
    fleet_state *st = gf_fn_state(fn);
    if (!fleet_mirror_ready(st->mirror))
        return GF_OK; /* acting on a half-read fleet could remove live servers */
    scan s = {.now = gf_clock_unix_ms(),
              .grace_ms = st->cfg->allocation_grace_ms,
              .broken_after_ms = st->cfg->heartbeat_timeout_ms};
    fleet_mirror_each(st->mirror, NULL, scan_entry, &s);
    fleet_mirror_each_broken(st->mirror, scan_broken, &s);

    /* Stale, maybe because their heartbeats were refused: kept (see the top). */
    bool keep_stale = s.n_stale && fleet_full_within(st, st->cfg->heartbeat_timeout_ms);
    if (keep_stale && gf_log_due(&st->stale_kept_logged_ms, STALE_KEPT_LOG_MS))
        gf_log_warn("stale servers kept: the fleet bucket refused writes within heartbeat_timeout",
                    "stale=%zu heartbeat_timeout_ms=%lld", s.n_stale,
                    (long long)st->cfg->heartbeat_timeout_ms);
    for (size_t i = 0; i < s.n_stale; i++) {
        if (!keep_stale)
            remove_stale(st, &s.stale[i]);
        fleet_released_fini(&s.stale[i].released);
    }
    for (size_t i = 0; i < s.n_broken; i++)
        remove_broken(st, &s.broken[i]);
    char **keep = calloc(s.n_late ? s.n_late : 1, sizeof *keep);
    size_t n_keep = 0;
    for (size_t i = 0; keep && i < s.n_late; i++) {
        char *tag = settle_late(st, &s.late[i]);
        if (tag)
            keep[n_keep++] = tag;
    }
    if (keep)
        remember_committed(st, keep, n_keep);
    remove_orphans(st, s.now);
    free(s.stale);
    free(s.late);
    free(s.broken);
    if (s.nomem)
        return GF_ERR_NOMEM;

    /* Due by the tick's sequence number, not by this instance's clock: the ticks of one
     * tenure are spread over every replica (queue group), so "last published here" let
     * each replica publish on its own schedule (two replicas, twice the requests). One
     * request per scale_interval (in whole ticks) whoever takes the tick; a new leader's
     * first tick publishes at once. */
    int64_t every = (st->cfg->scale_interval_ms + FLEET_TICK_MS / 2) / FLEET_TICK_MS;
    bool due = every <= 1 || tick->seq <= 1 || (tick->seq - 1) % every == 0;
    for (size_t i = 0; due && i < st->cfg->datacenters_len; i++)
        publish_scale(st, i, s.now);
    return GF_OK;
}

/* ---- demand ------------------------------------------------------------------------ */

static void on_demand(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    fleet_state *st = closure;
    (void)nc;
    (void)sub;
    Gamefn__V1__FleetDemand *d = gamefn__v1__fleet_demand__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    const fleet_dc_config *dc = d ? fleet_config_dc(st->cfg, d->datacenter) : NULL;
    if (dc) {
        size_t i = (size_t)(dc - st->cfg->datacenters);
        pthread_mutex_lock(&st->lock);
        warm_history_add(&st->demand[i], gf_clock_unix_ms(), 1);
        pthread_mutex_unlock(&st->lock);
    }
    gamefn__v1__fleet_demand__free_unpacked(d, NULL);
    natsMsg_Destroy(m);
}

gf_err fleet_demand_start(fleet_state *st)
{
    natsStatus s = natsConnection_Subscribe(&st->demand_sub, st->nc, GF_WIRE_SUBJ_FLEET_DEMAND ".>",
                                            on_demand, st);
    if (s == NATS_OK)
        s = natsSubscription_SetPendingLimits(st->demand_sub, 1000000, 256 * 1024 * 1024);
    return s == NATS_OK ? GF_OK : GF_ERR_NATS;
}
