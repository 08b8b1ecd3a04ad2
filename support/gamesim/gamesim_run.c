/*
 * gamesim_run.c — the simulator's worker: every server's protocol and the adapter.
 *
 * Design notes: one pass every 20 ms. A server's next step is decided under the lock,
 * performed without it (each is one request or a few KV reads), and its result
 * applied under the lock again; a callback may have changed the server meanwhile
 * (an allocation seen on the KV watch), so results are applied only when they still
 * fit (same match, same phase).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/wire_error.h"
#include "gamesim_internal.h"

enum { PASS_MS = 20, CALL_TIMEOUT_MS = 2000, COLLECT_EVERY_MS = 50 };

gf_err gf__sim_call(gf_gamesim *s, const char *subject, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *rd, ProtobufCMessage **out)
{
    uint8_t buf[4096];
    *out = NULL;
    size_t len = protobuf_c_message_get_packed_size(req);
    if (len > sizeof buf)
        return GF_ERR_INVALID;
    protobuf_c_message_pack(req, buf);
    natsMsg *reply = NULL;
    natsStatus st = natsConnection_Request(&reply, s->nc, subject, buf, (int)len, CALL_TIMEOUT_MS);
    if (st != NATS_OK)
        return st == NATS_TIMEOUT ? GF_ERR_TIMEOUT : GF_ERR_UNAVAILABLE;
    const char *code = NULL, *text = NULL;
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR_CODE, &code);
    natsMsgHeader_Get(reply, GF_WIRE_HDR_ERROR, &text);
    const uint8_t *body = (const uint8_t *)natsMsg_GetData(reply);
    size_t body_len = (size_t)natsMsg_GetDataLength(reply);
    gf_wire_error e;
    gf_err err = gf_wire_reply_check(code, text, body, body_len, &e);
    if (err == GF_OK) {
        *out = protobuf_c_message_unpack(rd, NULL, body_len, body);
        if (!*out)
            err = GF_ERR_INVALID;
    }
    natsMsg_Destroy(reply);
    return err;
}

/* ---- one server -------------------------------------------------------------------- */

static void do_register(gf_gamesim *s, sim_server *sv)
{
    Gamefn__V1__RegisterServerRequest r = GAMEFN__V1__REGISTER_SERVER_REQUEST__INIT;
    r.server_id = sv->id;
    r.datacenter = s->dcs[sv->dc].name;
    r.address = s->address;
    r.port = sv->port;
    r.capacity = s->o.capacity;
    r.version = "gamesim";
    Gamefn__V1__RegisterServerReply *rep = NULL;
    gf_err err =
        gf__sim_call(s, GF_WIRE_SUBJ_FLEET_REGISTER, &r.base,
                     &gamefn__v1__register_server_reply__descriptor, (ProtobufCMessage **)&rep);
    int64_t now = gf_clock_mono_ms();
    pthread_mutex_lock(&s->lock);
    if (err != GF_OK) {
        sv->register_at = now + 1000;
    } else if (sv->phase == SIM_STARTING) {
        sv->phase = SIM_RUNNING;
        if (s->o.heartbeat_ms > 0)
            sv->interval_ms = s->o.heartbeat_ms;
        else if (rep->heartbeat_interval_ms)
            sv->interval_ms = rep->heartbeat_interval_ms;
        sv->next_heartbeat = now + sv->interval_ms;
        gf__sim_set_keys(s, rep->join_keys, rep->n_join_keys);
        if (rep->record)
            gf__sim_apply_record(s, sv, rep->record, now);
        s->stats.registers++;
    }
    pthread_mutex_unlock(&s->lock);
    if (err != GF_OK)
        gf_log_warn("sim server not registered; retrying", "server=%s err=%s", sv->id,
                    gf_err_str(err));
    if (rep)
        gamefn__v1__register_server_reply__free_unpacked(rep, NULL);
}

/* finished: the match this heartbeat reports over ("" = none). */
static void do_heartbeat(gf_gamesim *s, sim_server *sv, const char *finished, uint32_t players)
{
    Gamefn__V1__HeartbeatRequest r = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    r.server_id = sv->id;
    r.datacenter = s->dcs[sv->dc].name;
    r.players = players;
    r.finished_match_id = (char *)(uintptr_t)finished;
    Gamefn__V1__HeartbeatReply *rep = NULL;
    gf_err err = gf__sim_call(s, GF_WIRE_SUBJ_FLEET_HEARTBEAT, &r.base,
                              &gamefn__v1__heartbeat_reply__descriptor, (ProtobufCMessage **)&rep);
    int64_t now = gf_clock_mono_ms();
    pthread_mutex_lock(&s->lock);
    if (sv->phase != SIM_RUNNING) {
        /* killed or hibernated meanwhile */
    } else if (err == GF_OK) {
        s->stats.heartbeats++;
        sv->next_heartbeat = now + sv->interval_ms;
        gf__sim_set_keys(s, rep->join_keys, rep->n_join_keys);
        if (finished[0] && strcmp(sv->match_id, finished) == 0) {
            snprintf(sv->last_finished, sizeof sv->last_finished, "%s", finished);
            gf__sim_clear_match(sv);
            s->stats.games_finished++;
        }
        if (rep->record)
            gf__sim_apply_record(s, sv, rep->record, now);
    } else if (err == GF_ERR_NOT_FOUND) {
        /* The fleet removed the record (we were silent too long): register again. The
         * match, if any, went with it. */
        sv->phase = SIM_STARTING;
        sv->register_at = now;
        gf__sim_clear_match(sv);
        s->stats.heartbeat_failures++;
    } else {
        s->stats.heartbeat_failures++;
        sv->next_heartbeat = now + 500;
        sv->finishing = false; /* a game over is reported again */
    }
    pthread_mutex_unlock(&s->lock);
    if (rep)
        gamefn__v1__heartbeat_reply__free_unpacked(rep, NULL);
}

/* What the match's commit record (matches/<match_id>) says: committed on this server
 * (its tokens are there), not yet decided, or gone (aborted, or committed on another
 * server by an earlier delivery: this allocation is withdrawn). */
typedef enum { T_READY, T_WAIT, T_GONE } match_view;

static match_view read_outcome(gf_gamesim *s, const sim_server *sv, const char *match,
                               Gamefn__V1__MatchOutcome **out)
{
    kvEntry *e = NULL;
    *out = NULL;
    if (kvStore_Get(&e, s->matches, match) != NATS_OK)
        return T_WAIT; /* not decided yet (or not readable now: asked again) */
    Gamefn__V1__MatchOutcome *o =
        gamefn__v1__match_outcome__unpack(NULL, (size_t)kvEntry_ValueLen(e), kvEntry_Value(e));
    kvEntry_Destroy(e);
    match_view v = T_GONE;
    if (o && o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED) {
        v = T_READY;
        for (size_t i = 0; i < o->n_assignments && v == T_READY; i++)
            if (strcmp(o->assignments[i]->server_id, sv->id) != 0)
                v = T_GONE;
    }
    if (v == T_READY)
        *out = o;
    else if (o)
        gamefn__v1__match_outcome__free_unpacked(o, NULL);
    return v;
}

/* The players of the match present their tokens, the way real clients would: each the
 * token of its ticket's Assignment, here read from the commit record that holds every
 * assignment of the match (one read, whatever the number of tickets; the tickets carry
 * the same assignments once ASSIGNED). */
static void do_collect(gf_gamesim *s, sim_server *sv, const char *match)
{
    Gamefn__V1__MatchOutcome *o = NULL;
    match_view v = read_outcome(s, sv, match, &o);
    bool verify = true;
    if (o) {
        pthread_mutex_lock(&s->lock);
        verify = s->o.verify_every <= 1 || s->collected++ % s->o.verify_every == 0;
        pthread_mutex_unlock(&s->lock);
    }
    for (size_t i = 0; o && i < o->n_assignments; i++)
        for (size_t k = 0; k < o->assignments[i]->n_tokens; k++) {
            const Gamefn__V1__JoinToken *t = o->assignments[i]->tokens[k];
            gf_err err = verify
                             ? gf_gamesim_join(s, sv->id, t->player_id, t->token.data, t->token.len)
                             : gf__sim_admit(s, sv, match, t->player_id, GF_OK, false);
            if (err != GF_OK)
                gf_log_warn("sim server refused a token", "server=%s player=%s err=%s", sv->id,
                            t->player_id, gf_err_str(err));
        }
    if (o)
        gamefn__v1__match_outcome__free_unpacked(o, NULL);

    int64_t now = gf_clock_mono_ms();
    pthread_mutex_lock(&s->lock);
    if (strcmp(sv->match_id, match) == 0) {
        if (v == T_READY) {
            sv->playing = true;
            gf__sim_play_start(s, sv, now);
        } else if (v == T_GONE || now >= sv->collect_until) {
            sv->gone = true; /* aborted: the fleet frees us; keep heartbeating */
            s->stats.allocations_gone++;
        } else {
            sv->next_collect = now + COLLECT_EVERY_MS;
        }
    }
    pthread_mutex_unlock(&s->lock);
}

typedef enum { ACT_NONE, ACT_REGISTER, ACT_HEARTBEAT, ACT_FINISH, ACT_COLLECT } sim_action;

static void server_step(gf_gamesim *s, sim_server *sv, int64_t now)
{
    char match[GF_WIRE_ID_MAX + 1] = "";
    uint32_t players = 0;
    sim_action act = ACT_NONE;
    pthread_mutex_lock(&s->lock);
    if (sv->phase == SIM_STARTING && now >= sv->register_at) {
        act = ACT_REGISTER;
    } else if (sv->phase == SIM_RUNNING) {
        players = (uint32_t)sv->joined.n;
        if (sv->playing && !sv->finishing)
            gf__sim_play_events(s, sv, now);
        if (sv->match_id[0] && sv->playing && !sv->finishing && now >= sv->play_until) {
            act = ACT_FINISH;
            sv->finishing = true;
            snprintf(match, sizeof match, "%s", sv->match_id);
        } else if (sv->match_id[0] && !sv->playing && !sv->gone && !s->o.no_auto_join &&
                   now >= sv->next_collect) {
            act = ACT_COLLECT;
            snprintf(match, sizeof match, "%s", sv->match_id);
        } else if (now >= sv->next_heartbeat) {
            act = ACT_HEARTBEAT;
        }
    }
    pthread_mutex_unlock(&s->lock);
    switch (act) {
    case ACT_REGISTER:
        do_register(s, sv);
        break;
    case ACT_FINISH:
        do_heartbeat(s, sv, match, 0);
        break;
    case ACT_HEARTBEAT:
        do_heartbeat(s, sv, "", players);
        break;
    case ACT_COLLECT:
        do_collect(s, sv, match);
        break;
    case ACT_NONE:
        break;
    }
}

/* ---- the adapter -------------------------------------------------------------------- */

static bool hibernate(gf_gamesim *s, const char *server_id, const char *datacenter)
{
    Gamefn__V1__DeregisterServerRequest r = GAMEFN__V1__DEREGISTER_SERVER_REQUEST__INIT;
    r.server_id = (char *)(uintptr_t)server_id;
    r.datacenter = (char *)(uintptr_t)datacenter;
    r.reason = GAMEFN__V1__DEREGISTER_REASON__DEREGISTER_REASON_HIBERNATE;
    ProtobufCMessage *rep = NULL;
    gf_err err = gf__sim_call(s, GF_WIRE_SUBJ_FLEET_DEREGISTER, &r.base,
                              &gamefn__v1__deregister_server_reply__descriptor, &rep);
    if (rep)
        protobuf_c_message_free_unpacked(rep, NULL);
    return err == GF_OK;
}

static void adapter_dc(gf_gamesim *s, size_t d, int64_t now)
{
    sim_dc *dc = &s->dcs[d];
    char(*ids)[GF_WIRE_ID_MAX + 1] = NULL;
    size_t n_ids = 0;
    pthread_mutex_lock(&s->lock);
    Gamefn__V1__FleetScaleRequest *r = dc->pending;
    dc->pending = NULL;
    if (!r) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    int starting = 0, running = 0;
    for (size_t i = 0; i < s->n_sv; i++) {
        const sim_server *sv = s->sv[i];
        if (sv->dc != d)
            continue;
        starting += sv->phase == SIM_STARTING;
        running += sv->phase == SIM_STARTING || sv->phase == SIM_RUNNING;
    }
    /* Start what is missing beyond the servers already on their way. */
    int64_t delay = s->o.start_delay_ms > 0 ? s->o.start_delay_ms : 0;
    for (int want = (int)r->start - starting; want > 0; want--) {
        sim_server *wake = NULL;
        for (size_t i = 0; i < s->n_sv && !wake; i++)
            if (s->sv[i]->dc == d && s->sv[i]->phase == SIM_HIBERNATING)
                wake = s->sv[i];
        if (wake) {
            wake->phase = SIM_STARTING;
            wake->register_at = now + delay;
            s->stats.woken++;
        } else if (running < dc->max && gf__sim_add(s, d, SIM_STARTING, now + delay)) {
            s->stats.started++;
        } else {
            break;
        }
        running++;
    }
    /* Hibernate the listed servers that are ours and idle. */
    ids = calloc(r->n_hibernate_server_ids ? r->n_hibernate_server_ids : 1, sizeof *ids);
    for (size_t k = 0; ids && k < r->n_hibernate_server_ids; k++) {
        sim_server *sv = gf__sim_find(s, r->hibernate_server_ids[k]);
        if (sv && sv->dc == d && sv->phase == SIM_RUNNING && !sv->match_id[0])
            snprintf(ids[n_ids++], sizeof ids[0], "%s", sv->id);
    }
    pthread_mutex_unlock(&s->lock);
    gamefn__v1__fleet_scale_request__free_unpacked(r, NULL);

    for (size_t k = 0; k < n_ids; k++) {
        bool ok = hibernate(s, ids[k], dc->name);
        pthread_mutex_lock(&s->lock);
        sim_server *sv = gf__sim_find(s, ids[k]);
        if (ok && sv) {
            sv->phase = SIM_HIBERNATING;
            gf__sim_clear_match(sv);
            s->stats.hibernated++;
        } else {
            s->stats.hibernate_refused++; /* allocated meanwhile: it keeps its match */
        }
        pthread_mutex_unlock(&s->lock);
    }
    free(ids);
}

void *gf__sim_worker(void *arg)
{
    const sim_worker *w = arg;
    gf_gamesim *s = w->s;
    while (!atomic_load(&s->stop)) {
        int64_t now = gf_clock_mono_ms();
        for (size_t d = 0; w->index == 0 && s->o.adapter && d < s->n_dcs; d++)
            adapter_dc(s, d, now);
        pthread_mutex_lock(&s->lock);
        size_t n = s->n_sv;
        pthread_mutex_unlock(&s->lock);
        for (size_t i = w->index; i < n && !atomic_load(&s->stop); i += w->n) {
            pthread_mutex_lock(&s->lock);
            sim_server *sv = s->sv[i];
            pthread_mutex_unlock(&s->lock);
            server_step(s, sv, gf_clock_mono_ms());
        }
        gf_clock_sleep_ms(PASS_MS);
    }
    return NULL;
}
