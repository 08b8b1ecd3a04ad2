/*
 * gamesim.c — the simulator's lifecycle, NATS callbacks and player joins (see
 * gamesim.h; the worker is gamesim_run.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/join_token.h"
#include "gamefn/kv_watch.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/util.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/wire_error.h"
#include "gamesim_internal.h"

#define JOIN_SUBJECT "gamefn.sim.join"

void gf__sim_ids_free(sim_ids *ids)
{
    for (size_t i = 0; i < ids->n; i++)
        free(ids->v[i]);
    free(ids->v);
    ids->v = NULL;
    ids->n = 0;
}

static bool ids_copy(sim_ids *out, char *const *v, size_t n)
{
    gf__sim_ids_free(out);
    out->v = calloc(n ? n : 1, sizeof *out->v);
    if (!out->v)
        return false;
    for (size_t i = 0; i < n; i++) {
        out->v[i] = strdup(v[i]);
        if (!out->v[i]) {
            out->n = i;
            gf__sim_ids_free(out);
            return false;
        }
    }
    out->n = n;
    return true;
}

/* FNV-1a of a server id: its slot in the index. */
static size_t id_hash(const char *id)
{
    uint32_t h = 2166136261u;
    for (; *id; id++)
        h = (h ^ (uint8_t)*id) * 16777619u;
    return h;
}

static void index_put(gf_gamesim *s, size_t i)
{
    size_t mask = s->index_size - 1;
    for (size_t k = id_hash(s->sv[i]->id) & mask;; k = (k + 1) & mask) {
        if (s->index[k] == 0) {
            s->index[k] = (uint32_t)i + 1;
            return;
        }
    }
}

/* Keeps the index at most half full; false when memory runs out. */
static bool index_room(gf_gamesim *s, size_t n)
{
    if (2 * n <= s->index_size)
        return true;
    size_t size = s->index_size ? s->index_size : 64;
    while (2 * n > size)
        size *= 2;
    uint32_t *v = calloc(size, sizeof *v);
    if (!v)
        return false;
    free(s->index);
    s->index = v;
    s->index_size = size;
    for (size_t i = 0; i < s->n_sv; i++)
        index_put(s, i);
    return true;
}

sim_server *gf__sim_find(gf_gamesim *s, const char *server_id)
{
    if (!server_id || !s->index_size)
        return NULL;
    size_t mask = s->index_size - 1;
    for (size_t k = id_hash(server_id) & mask; s->index[k]; k = (k + 1) & mask) {
        sim_server *sv = s->sv[s->index[k] - 1];
        if (strcmp(sv->id, server_id) == 0)
            return sv;
    }
    return NULL;
}

sim_server *gf__sim_add(gf_gamesim *s, size_t dc, sim_phase phase, int64_t register_at)
{
    sim_server **v = gf_grow(s->sv, &s->cap_sv, s->n_sv + 1, sizeof *v);
    if (!v)
        return NULL;
    s->sv = v;
    if (!index_room(s, s->n_sv + 1))
        return NULL;
    sim_server *sv = calloc(1, sizeof *sv);
    if (!sv)
        return NULL;
    snprintf(sv->id, sizeof sv->id, "%s-%s-%d", s->prefix, s->dcs[dc].name, ++s->dcs[dc].added);
    sv->dc = dc;
    sv->port = s->next_port++;
    sv->phase = phase;
    sv->register_at = register_at;
    sv->interval_ms = s->o.heartbeat_ms > 0 ? s->o.heartbeat_ms : 2000;
    s->sv[s->n_sv++] = sv;
    index_put(s, s->n_sv - 1);
    return sv;
}

void gf__sim_set_keys(gf_gamesim *s, Gamefn__V1__JoinKey *const *keys, size_t n)
{
    size_t got = 0;
    if (n > 0 && gf_join_keys_from_wire(keys, n, s->keys, SIM_KEYS_MAX, &got) == GF_OK)
        s->n_keys = got;
}

void gf__sim_clear_match(sim_server *sv)
{
    sv->match_id[0] = '\0';
    gf__sim_ids_free(&sv->players);
    gf__sim_ids_free(&sv->joined);
    gf__sim_play_end(sv);
    sv->playing = sv->finishing = sv->gone = false;
}

void gf__sim_apply_record(gf_gamesim *s, sim_server *sv, const Gamefn__V1__ServerRecord *rec,
                          int64_t now)
{
    const char *m = rec->allocated_match_id ? rec->allocated_match_id : "";
    if (sv->phase != SIM_RUNNING || sv->finishing)
        return;
    if (m[0] && strcmp(m, sv->match_id) != 0 && strcmp(m, sv->last_finished) != 0) {
        gf__sim_clear_match(sv);
        snprintf(sv->match_id, sizeof sv->match_id, "%s", m);
        if (!ids_copy(&sv->players, rec->expected_player_ids, rec->n_expected_player_ids)) {
            gf__sim_clear_match(sv);
            return;
        }
        sv->allocated_unix_ms = rec->allocated_unix_ms;
        sv->collect_until = now + (s->o.join_timeout_ms > 0 ? s->o.join_timeout_ms : 10000);
        sv->next_collect = now;
        s->stats.allocations++;
    } else if (!m[0] && sv->match_id[0] &&
               (rec->free_since_unix_ms >= sv->allocated_unix_ms ||
                rec->state != GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE)) {
        /* The allocation was withdrawn (its match aborted, or freed by the sweep). A FREE
         * record from before the allocation (a heartbeat reply overtaken by the
         * allocator's write) is not a withdrawal. */
        if (!sv->playing)
            s->stats.allocations_gone++;
        gf__sim_clear_match(sv);
    }
}

/* ---- callbacks -------------------------------------------------------------------- */

/* A server learns of its allocation as soon as the allocator's write is stored, from
 * a KV watch on the fleet bucket (gamefn/kv_watch.h: stored values only, re-created
 * after reconnects). A plain subscription on $KV.fleet.<key> would not do: it also
 * receives the writes the bucket refused, i.e. every compare-and-set that lost its
 * race. Heartbeat replies cover any gap. */
static void on_record(kvEntry *e, void *arg)
{
    gf_gamesim *s = arg;
    const char *key = kvEntry_Key(e), *dot = key ? strrchr(key, '.') : NULL;
    if (!dot || kvEntry_Operation(e) != kvOp_Put)
        return;
    Gamefn__V1__ServerRecord *rec =
        gamefn__v1__server_record__unpack(NULL, (size_t)kvEntry_ValueLen(e), kvEntry_Value(e));
    pthread_mutex_lock(&s->lock);
    sim_server *sv = gf__sim_find(s, dot + 1);
    if (rec && sv && strcmp(rec->server_id, sv->id) == 0)
        gf__sim_apply_record(s, sv, rec, gf_clock_mono_ms());
    pthread_mutex_unlock(&s->lock);
    gamefn__v1__server_record__free_unpacked(rec, NULL);
}

static void on_scale(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    gf_gamesim *s = closure;
    Gamefn__V1__FleetScaleRequest *r = gamefn__v1__fleet_scale_request__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; r && i < s->n_dcs; i++) {
        sim_dc *dc = &s->dcs[i];
        if (strcmp(dc->name, r->datacenter) != 0 || r->issued_unix_ms <= dc->last_issued)
            continue;
        dc->last_issued = r->issued_unix_ms;
        gamefn__v1__fleet_scale_request__free_unpacked(dc->pending, NULL);
        dc->pending = r; /* the newest replaces an unhandled older one */
        r = NULL;
        s->stats.scale_requests++;
    }
    pthread_mutex_unlock(&s->lock);
    gamefn__v1__fleet_scale_request__free_unpacked(r, NULL);
    natsMsg_Destroy(m);
}

static void reply_error(gf_gamesim *s, natsMsg *m, gf_err err)
{
    gf_wire_error e;
    natsMsg *out = NULL;
    if (gf_wire_error_from_err(&e, err, NULL, "join refused") == GF_OK &&
        natsMsg_Create(&out, natsMsg_GetReply(m), NULL, (const char *)e.body, (int)e.body_len) ==
            NATS_OK &&
        natsMsgHeader_Set(out, GF_WIRE_HDR_ERROR_CODE, e.code_header) == NATS_OK &&
        natsMsgHeader_Set(out, GF_WIRE_HDR_ERROR, e.message) == NATS_OK)
        natsConnection_PublishMsg(s->nc, out);
    natsMsg_Destroy(out);
    gf_wire_error_fini(&e);
}

/* gamefn.sim.join.<server_id>: JoinToken -> empty reply or an error reply. */
static void on_join(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    gf_gamesim *s = closure;
    const char *subject = natsMsg_GetSubject(m);
    const char *reply = natsMsg_GetReply(m);
    Gamefn__V1__JoinToken *t = gamefn__v1__join_token__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    gf_err err = t ? gf_gamesim_join(s, subject + strlen(JOIN_SUBJECT) + 1, t->player_id,
                                     t->token.data, t->token.len)
                   : GF_ERR_INVALID;
    if (reply && reply[0]) {
        if (err == GF_OK)
            natsConnection_Publish(nc, reply, NULL, 0);
        else
            reply_error(s, m, err);
    }
    gamefn__v1__join_token__free_unpacked(t, NULL);
    natsMsg_Destroy(m);
}

/* ---- players ---------------------------------------------------------------------- */

static bool has_id(const sim_ids *ids, const char *id)
{
    for (size_t i = 0; id && i < ids->n; i++)
        if (strcmp(ids->v[i], id) == 0)
            return true;
    return false;
}

gf_err gf_gamesim_join(gf_gamesim *s, const char *server_id, const char *player_id,
                       const uint8_t *token, size_t len)
{
    gf_join_key keys[SIM_KEYS_MAX];
    char match[GF_WIRE_ID_MAX + 1];
    pthread_mutex_lock(&s->lock);
    sim_server *sv = gf__sim_find(s, server_id);
    size_t n_keys = s->n_keys;
    memcpy(keys, s->keys, sizeof keys);
    snprintf(match, sizeof match, "%s", sv ? sv->match_id : "");
    pthread_mutex_unlock(&s->lock);
    if (!sv || !match[0])
        return GF_ERR_NOT_FOUND;

    Gamefn__V1__JoinTokenClaims *c = NULL;
    gf_err err = gf_join_token_verify_keys(token, len, keys, n_keys, gf_clock_unix_ms(),
                                           GF_WIRE_JOIN_SKEW_MS, server_id, player_id, &c, NULL);
    if (err == GF_OK && strcmp(c->match_id, match) != 0)
        err = GF_ERR_CONFLICT;
    gf_join_token_claims_free(c);
    return gf__sim_admit(s, sv, match, player_id, err, true);
}

gf_err gf__sim_admit(gf_gamesim *s, sim_server *sv, const char *match, const char *player_id,
                     gf_err err, bool checked)
{
    pthread_mutex_lock(&s->lock);
    if (err == GF_OK && strcmp(sv->match_id, match) != 0)
        err = GF_ERR_CONFLICT; /* the match changed meanwhile */
    if (err == GF_OK && has_id(&sv->joined, player_id))
        err = GF_ERR_CONFLICT; /* each player once per match */
    if (err == GF_OK) {
        char **v = realloc(sv->joined.v, (sv->joined.n + 1) * sizeof *v);
        char *id = strdup(player_id);
        if (v)
            sv->joined.v = v;
        if (v && id)
            sv->joined.v[sv->joined.n++] = id;
        else {
            free(id);
            err = GF_ERR_NOMEM;
        }
    }
    if (err == GF_OK && !checked)
        s->stats.tokens_unchecked++;
    else if (err == GF_OK)
        s->stats.tokens_ok++;
    else
        s->stats.tokens_bad++;
    pthread_mutex_unlock(&s->lock);
    return err;
}

bool gf_gamesim_match_of(gf_gamesim *s, const char *server_id, char *buf, size_t size)
{
    pthread_mutex_lock(&s->lock);
    sim_server *sv = gf__sim_find(s, server_id);
    if (sv)
        snprintf(buf, size, "%s", sv->match_id);
    pthread_mutex_unlock(&s->lock);
    return sv != NULL;
}

gf_err gf_gamesim_kill(gf_gamesim *s, const char *server_id)
{
    pthread_mutex_lock(&s->lock);
    sim_server *sv = gf__sim_find(s, server_id);
    if (sv)
        sv->phase = SIM_DEAD;
    pthread_mutex_unlock(&s->lock);
    return sv ? GF_OK : GF_ERR_NOT_FOUND;
}

void gf_gamesim_stats_get(gf_gamesim *s, gf_gamesim_stats *out)
{
    pthread_mutex_lock(&s->lock);
    *out = s->stats;
    out->servers = out->free = out->busy = out->hibernating = 0;
    for (size_t i = 0; i < s->n_sv; i++) {
        const sim_server *sv = s->sv[i];
        if (sv->phase == SIM_HIBERNATING)
            out->hibernating++;
        if (sv->phase != SIM_STARTING && sv->phase != SIM_RUNNING)
            continue;
        out->servers++;
        if (sv->phase == SIM_RUNNING)
            (*(sv->match_id[0] ? &out->busy : &out->free))++;
    }
    pthread_mutex_unlock(&s->lock);
}

/* ---- lifecycle -------------------------------------------------------------------- */

gf_err gf_gamesim_start(natsConnection *nc, const gf_gamesim_opts *opts, gf_gamesim **out)
{
    *out = NULL;
    if (!nc || !opts || opts->n_dcs == 0)
        return GF_ERR_INVALID;
    gf_gamesim *s = calloc(1, sizeof *s);
    if (!s)
        return GF_ERR_NOMEM;
    pthread_mutex_init(&s->lock, NULL);
    s->nc = nc;
    s->o = *opts;
    s->o.dcs = NULL;
    if (!s->o.capacity)
        s->o.capacity = 16;
    snprintf(s->address, sizeof s->address, "%s", opts->address ? opts->address : "127.0.0.1");
    snprintf(s->prefix, sizeof s->prefix, "%s", opts->id_prefix ? opts->id_prefix : "sim");
    s->next_port = opts->port_base ? opts->port_base : 7000;
    s->dcs = calloc(opts->n_dcs, sizeof *s->dcs);
    s->scale_subs = calloc(opts->n_dcs, sizeof *s->scale_subs);
    gf_err err = s->dcs && s->scale_subs ? GF_OK : GF_ERR_NOMEM;
    s->n_dcs = s->dcs ? opts->n_dcs : 0;
    for (size_t i = 0; err == GF_OK && i < opts->n_dcs; i++) {
        s->dcs[i].name = strdup(opts->dcs[i].name);
        s->dcs[i].max = opts->dcs[i].max;
        if (!s->dcs[i].name)
            err = GF_ERR_NOMEM;
    }
    int64_t now = gf_clock_mono_ms();
    for (size_t i = 0; err == GF_OK && i < opts->n_dcs; i++)
        for (int k = 0; err == GF_OK && k < opts->dcs[i].initial; k++)
            if (!gf__sim_add(s, i, SIM_STARTING, now))
                err = GF_ERR_NOMEM;
    if (err == GF_OK && (natsConnection_JetStream(&s->js, nc, NULL) != NATS_OK ||
                         js_KeyValue(&s->matches, s->js, "matches") != NATS_OK ||
                         js_KeyValue(&s->fleet, s->js, "fleet") != NATS_OK))
        err = GF_ERR_NOT_FOUND;
    if (err == GF_OK &&
        natsConnection_Subscribe(&s->join_sub, nc, JOIN_SUBJECT ".*", on_join, s) != NATS_OK)
        err = GF_ERR_NATS;
    static const gf_kv_watch_ops ops = {.entry = on_record};
    if (err == GF_OK)
        err = gf_kv_watch_start(nc, s->fleet, NULL, "gamesim", 0, &ops, s, &s->watch);
    for (size_t i = 0; err == GF_OK && s->o.adapter && i < s->n_dcs; i++) {
        char subject[128];
        snprintf(subject, sizeof subject, "%s.%s", GF_WIRE_SUBJ_FLEET_SCALE, s->dcs[i].name);
        if (natsConnection_Subscribe(&s->scale_subs[i], nc, subject, on_scale, s) != NATS_OK)
            err = GF_ERR_NATS;
    }
    if (err == GF_OK && natsConnection_Flush(nc) != NATS_OK)
        err = GF_ERR_UNAVAILABLE;
    size_t workers = opts->workers > 0 ? (size_t)opts->workers : 1;
    if (err == GF_OK && workers > 64)
        err = GF_ERR_INVALID;
    if (err == GF_OK) {
        s->threads = calloc(workers, sizeof *s->threads);
        s->workers = calloc(workers, sizeof *s->workers);
        if (!s->threads || !s->workers)
            err = GF_ERR_NOMEM;
    }
    for (size_t i = 0; err == GF_OK && i < workers; i++) {
        s->workers[i] = (sim_worker){.s = s, .index = i, .n = workers};
        if (pthread_create(&s->threads[i], NULL, gf__sim_worker, &s->workers[i]) != 0)
            err = GF_ERR_NOMEM;
        else
            s->n_threads++;
    }
    if (err != GF_OK) {
        gf_gamesim_stop(s);
        return err;
    }
    *out = s;
    return GF_OK;
}

static void shutdown_server(gf_gamesim *s, sim_server *sv)
{
    Gamefn__V1__DeregisterServerRequest r = GAMEFN__V1__DEREGISTER_SERVER_REQUEST__INIT;
    r.server_id = sv->id;
    r.datacenter = s->dcs[sv->dc].name;
    r.reason = GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_SHUTDOWN;
    ProtobufCMessage *reply = NULL;
    if (gf__sim_call(s, GF_WIRE_SUBJ_FLEET_DEREGISTER, &r.base,
                     &gamefn__v1__deregister_server_reply__descriptor, &reply) == GF_OK)
        protobuf_c_message_free_unpacked(reply, NULL);
}

void gf_gamesim_stop(gf_gamesim *s)
{
    if (!s)
        return;
    atomic_store(&s->stop, 1);
    for (size_t i = 0; i < s->n_threads; i++)
        pthread_join(s->threads[i], NULL);
    gf_kv_watch_stop(s->watch);
    /* Closed (callbacks finished) before what the callbacks use is freed. */
    gf_sub_close(s->join_sub, 2000);
    for (size_t i = 0; s->scale_subs && i < s->n_dcs; i++)
        gf_sub_close(s->scale_subs[i], 2000);
    /* The worker is gone: no lock needed from here on. */
    for (size_t i = 0; i < s->n_sv; i++) {
        if (s->n_threads && s->sv[i]->phase == SIM_RUNNING)
            shutdown_server(s, s->sv[i]);
        gf__sim_clear_match(s->sv[i]);
        free(s->sv[i]);
    }
    free(s->sv);
    free(s->index);
    free(s->threads);
    free(s->workers);
    for (size_t i = 0; i < s->n_dcs; i++) {
        free(s->dcs[i].name);
        gamefn__v1__fleet_scale_request__free_unpacked(s->dcs[i].pending, NULL);
    }
    free(s->dcs);
    free(s->scale_subs);
    kvStore_Destroy(s->matches);
    kvStore_Destroy(s->fleet);
    jsCtx_Destroy(s->js);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
