/*
 * fleet_serve.c — the fleet's request/reply endpoints (docs/PROTOCOL.md §8).
 *
 * Design notes: every request is size-checked, decoded and validated before the KV
 * is touched, so a bad request changes nothing. Writes go through fleet_store_change
 * (CAS, retried on a lost race), register and heartbeat starting from the mirror's copy
 * of the record instead of a read (a copy that is behind costs a lost race and a read); what an
 * allocation held is copied out inside the transition, so the players can be released after the
 * write from what it replaced. Every write is fed to the mirror at once, so this instance's sweep
 * and warm pool see it before the watcher does.
 *
 * A heartbeat that changes nothing but the liveness stamps of a record stamped less than the
 * refresh period ago (fleet_heartbeat_skips, judged on the mirror's copy) writes nothing and
 * answers with that copy. The copy may be behind the bucket: older stamps (it then writes
 * sooner, never later, as far as the clocks agree), or a record deleted or allocated
 * meanwhile that it does not show yet — the reply shows the copy (FREE, or the record before
 * the delete) and the server's next heartbeat, once the watcher delivered the change, gets
 * the allocation or NOT_FOUND; the allocation and the delete do not wait for the server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_fn.h"
#include "fleet_store.h"
#include "gamefn/clock.h"
#include "gamefn/function.h"
#include "gamefn/log.h"
#include "gamefn/util.h"
#include "gamefn/wire_error.h"

gf_err fleet_reply_problem(gf_reply *reply, const fleet_problem *p)
{
    reply->code = p->code ? p->code : gf_wire_code_from_err(p->err);
    snprintf(reply->error, sizeof reply->error, "%s", p->text);
    snprintf(reply->field, sizeof reply->field, "%s", p->field);
    return p->err;
}

static gf_err refuse(gf_reply *reply, gf_err err, const char *field, const char *text)
{
    fleet_problem p = {.err = err};
    snprintf(p.field, sizeof p.field, "%s", field ? field : "");
    snprintf(p.text, sizeof p.text, "%s%s%s", field ? field : "", field ? ": " : "", text);
    return fleet_reply_problem(reply, &p);
}

/* Size check and decode; on failure the reply says why. */
static ProtobufCMessage *decode(const gf_msg *req, const ProtobufCMessageDescriptor *d,
                                gf_reply *reply)
{
    char text[128];
    if (req->len > GF_WIRE_REQUEST_MAX) {
        snprintf(text, sizeof text, "too large (%zu bytes, max %d)", req->len, GF_WIRE_REQUEST_MAX);
        refuse(reply, GF_ERR_INVALID, "request", text);
        return NULL;
    }
    ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, req->len, req->data);
    if (!m) {
        snprintf(text, sizeof text, "not a valid %s", d->name);
        refuse(reply, GF_ERR_INVALID, "request", text);
    }
    return m;
}

static gf_err reply_with(gf_reply *reply, const ProtobufCMessage *m)
{
    uint8_t *buf = NULL;
    gf_err err = gf_pack(m, &buf, &reply->len);
    reply->data = buf;
    return err;
}

enum { FULL_LOG_MS = 10000, FULL_RETRY_MS = 1000 };

void fleet_full_note(fleet_state *st, int js_code, const char *what, const char *key)
{
    atomic_store(&st->full_seen_ms, gf_clock_mono_ms());
    if (gf_log_due(&st->full_logged_ms, FULL_LOG_MS))
        gf_log_warn("fleet bucket full: write refused",
                    "bucket=fleet js_code=%d step=\"%s\" key=%s", js_code, what, key);
}

bool fleet_full_within(fleet_state *st, int64_t window_ms)
{
    int64_t seen = atomic_load(&st->full_seen_ms);
    return seen != 0 && gf_clock_mono_ms() - seen < window_ms;
}

/* A KV failure outside the protocol's own refusals: the sender retries. A full bucket
 * is RESOURCE_EXHAUSTED ("<what>: the fleet bucket is full ..."), nothing stored. */
static gf_err store_failed(fleet_state *st, gf_reply *reply, gf_err err, const fleet_problem *p,
                           const char *key, const char *what)
{
    int full = fleet_store_full(p);
    if (full) {
        fleet_full_note(st, full, what, key);
        fleet_reply_problem(reply, p);
        snprintf(reply->error, sizeof reply->error,
                 "%s: the fleet bucket is full (JetStream %d); nothing was stored: retry later",
                 what, full);
        reply->retry_after_ms = FULL_RETRY_MS;
        return p->err;
    }
    if (err == GF_ERR_INVALID || err == GF_ERR_NOT_FOUND ||
        (err == GF_ERR_CONFLICT && p->code != 0))
        return fleet_reply_problem(reply, p);
    gf_log_warn("fleet write failed", "key=%s err=%s", key, gf_err_str(err));
    return refuse(reply, err == GF_ERR_CONFLICT ? GF_ERR_UNAVAILABLE : err, NULL,
                  err == GF_ERR_CONFLICT ? "record busy; retry" : "fleet store unavailable; retry");
}

/* The mirror's copy of `key`: the first guess of a read-modify-write, which saves the
 * read (a heartbeat, most requests, is then one write). Empty when the mirror has none. */
static void mirror_guess(fleet_state *st, const char *key, fleet_written *g)
{
    uint64_t rev = 0;
    uint8_t *data = NULL;
    size_t len = 0;
    fleet_problem ignored = {0};
    memset(g, 0, sizeof *g);
    if (fleet_mirror_copy(st->mirror, key, &rev, &data, &len) &&
        fleet_written_take(rev, data, len, key, g, &ignored) != GF_OK)
        fleet_written_fini(g);
}

size_t fleet_keys_current(fleet_state *st, int64_t now_unix_ms, Gamefn__V1__JoinKey **ptrs)
{
    size_t n = 0;
    for (size_t i = 0; i < st->n_keys; i++)
        if (st->keys[i].not_after_unix_ms == 0 || now_unix_ms < st->keys[i].not_after_unix_ms)
            ptrs[n++] = &st->wire_keys[i];
    return n;
}

/* ---- register --------------------------------------------------------------- */

typedef struct register_ctx {
    const Gamefn__V1__RegisterServerRequest *req;
    const fleet_state *st;
    int64_t now;
} register_ctx;

static gf_err change_register(const Gamefn__V1__ServerRecord *old, void *arg, fleet_next *next,
                              fleet_problem *p)
{
    const register_ctx *c = arg;
    (void)p;
    fleet_apply_register(old, c->req, c->now, c->st->cfg->heartbeat_timeout_ms, next);
    return GF_OK;
}

gf_err fleet_on_register(gf_fn *fn, const gf_msg *msg, gf_reply *reply)
{
    fleet_state *st = gf_fn_state(fn);
    fleet_problem p = {0};
    char key[FLEET_KEY_MAX];
    fleet_written w = {0};
    Gamefn__V1__RegisterServerRequest *req = (Gamefn__V1__RegisterServerRequest *)decode(
        msg, &gamefn__v1__register_server_request__descriptor, reply);
    if (!req)
        return GF_ERR_INVALID;
    gf_err err = fleet_check_register(req, st->cfg, &p);
    if (err != GF_OK) {
        fleet_reply_problem(reply, &p);
        goto out;
    }
    fleet_key(req->datacenter, req->server_id, key);
    register_ctx ctx = {.req = req, .st = st, .now = gf_clock_unix_ms()};
    err = fleet_ids_claim(st, req->datacenter, req->server_id, ctx.now, &p);
    if (err != GF_OK) {
        err = store_failed(st, reply, err, &p, key, "register");
        goto out;
    }
    fleet_pause_at(st, "claimed", key, NULL);
    fleet_written guess;
    mirror_guess(st, key, &guess);
    err = fleet_store_change_from(st->js, st->fleet_kv, key, &guess, change_register, &ctx, &w, &p);
    fleet_written_fini(&guess);
    if (err != GF_OK) {
        err = store_failed(st, reply, err, &p, key, "register");
        goto out;
    }
    fleet_mirror_note(st->mirror, key, w.revision, w.data, w.len);
    Gamefn__V1__JoinKey *keys[FLEET_KEYS_MAX];
    Gamefn__V1__RegisterServerReply r = GAMEFN__V1__REGISTER_SERVER_REPLY__INIT;
    r.record = w.rec;
    r.heartbeat_interval_ms = (uint32_t)st->cfg->heartbeat_interval_ms;
    r.heartbeat_timeout_ms = (uint32_t)st->cfg->heartbeat_timeout_ms;
    r.n_join_keys = fleet_keys_current(st, ctx.now, keys);
    r.join_keys = keys;
    err = reply_with(reply, &r.base);
out:
    fleet_written_fini(&w);
    gamefn__v1__register_server_request__free_unpacked(req, NULL);
    return err;
}

/* ---- heartbeat -------------------------------------------------------------- */

typedef struct heartbeat_ctx {
    const Gamefn__V1__HeartbeatRequest *req;
    const fleet_state *st;
    int64_t now;
    bool skipped;            /* nothing written: *w is the mirror's copy */
    fleet_game_over g;       /* g.decided: the finished match, once its record is known */
    bool committed;          /* that record is COMMITTED */
    char on[FLEET_KEY_MAX];  /* ... on this server ("" too), or on another: a spare */
    fleet_released released; /* the finished allocation, from the last attempt */
} heartbeat_ctx;

static gf_err change_heartbeat(const Gamefn__V1__ServerRecord *old, void *arg, fleet_next *next,
                               fleet_problem *p)
{
    heartbeat_ctx *c = arg;
    fleet_released_fini(&c->released);
    if (!old) {
        p->err = GF_ERR_NOT_FOUND;
        p->code = 0;
        p->field[0] = '\0';
        snprintf(p->text, sizeof p->text, "no record for server %s in %s; register again",
                 c->req->server_id, c->req->datacenter);
        return GF_ERR_NOT_FOUND;
    }
    gf_err err = fleet_apply_heartbeat(old, c->req, c->now, c->st->cfg->heartbeat_timeout_ms, next,
                                       &c->g, p);
    if (err == GF_OK && (c->g.released || c->g.undecided))
        err = fleet_released_copy(old, &c->released);
    if (err == GF_OK && c->g.undecided) /* no write: the caller decides the match first */
        return p->err = GF_ERR_RETRY;
    return err;
}

/* A decided game over, before the write that frees the server: the players of a match
 * committed here are released first, from `rec` (the record that showed the match, NULL:
 * the copy the undecided pass took). Freed first, a crash before the release left them
 * held for max_match_duration: the server's retry found the match gone and did nothing.
 * This way a crash or a failed release leaves the server ALLOCATED, and the retry of the
 * game over releases again (compare-and-set deletes: done ones are absent, a player who
 * queued again names another ticket) and then frees it. */
static gf_err release_before_free(fleet_state *st, const char *key, heartbeat_ctx *ctx,
                                  const Gamefn__V1__ServerRecord *rec)
{
    if (!ctx->committed || !fleet_committed_here(ctx->on, key))
        return GF_OK; /* aborted, or a spare: its players stay (in the game elsewhere) */
    fleet_released copy = {0};
    gf_err err = rec ? fleet_released_copy(rec, &copy) : GF_OK;
    if (err == GF_OK)
        err = fleet_release_finished(st, rec ? &copy : &ctx->released);
    fleet_released_fini(&copy);
    return err;
}

/* A game over for the match the record runs frees the server only once the match is
 * decided: an allocator that took the server may be about to commit the match on it.
 * The match's record is read, or created ABORTED (the server says it is not running
 * it), in one place: before the first write when the mirror's copy shows the match
 * running (the usual case: one write), else after the transition found it undecided
 * on the record read (the mirror was behind; that pass wrote nothing). The players of a
 * committed match are released right after, before the write (release_before_free).
 * A heartbeat the mirror's copy shows changing nothing but recent stamps writes nothing:
 * *w is that copy (ctx->skipped). */
static gf_err heartbeat_write(fleet_state *st, const char *key, heartbeat_ctx *ctx,
                              fleet_written *w, fleet_problem *p)
{
    const char *fin = ctx->req->finished_match_id;
    fleet_written guess;
    mirror_guess(st, key, &guess);
    if (fleet_heartbeat_skips(guess.rec, ctx->req, ctx->now, st->cfg->heartbeat_timeout_ms,
                              fleet_config_refresh_ms(st->cfg))) {
        *w = guess; /* taken over: the reply shows it */
        ctx->skipped = true;
        return GF_OK;
    }
    bool decide = fin && fin[0] && guess.rec && guess.rec->allocated_match_id &&
                  strcmp(guess.rec->allocated_match_id, fin) == 0;
    gf_err err = GF_OK;
    ctx->g.decided = NULL;
    for (int pass = 0; pass < 2; pass++) {
        if (decide) {
            err = fleet_finished_decide(st, fin, &ctx->committed, ctx->on);
            ctx->g.decided = fin;
            if (err != GF_OK)
                break;
            fleet_pause_at(st, "decided", key, fin);
            err = release_before_free(st, key, ctx, pass == 0 ? guess.rec : NULL);
            if (err != GF_OK)
                break;
            fleet_pause_at(st, "released", key, fin);
        }
        err =
            fleet_store_change_from(st->js, st->fleet_kv, key, &guess, change_heartbeat, ctx, w, p);
        decide = err == GF_ERR_RETRY && ctx->g.undecided;
        if (!decide)
            break;
        *p = (fleet_problem){0};
    }
    fleet_written_fini(&guess);
    return err;
}

gf_err fleet_on_heartbeat(gf_fn *fn, const gf_msg *msg, gf_reply *reply)
{
    fleet_state *st = gf_fn_state(fn);
    fleet_problem p = {0};
    char key[FLEET_KEY_MAX];
    fleet_written w = {0};
    heartbeat_ctx ctx = {0};
    Gamefn__V1__HeartbeatRequest *req = (Gamefn__V1__HeartbeatRequest *)decode(
        msg, &gamefn__v1__heartbeat_request__descriptor, reply);
    if (!req)
        return GF_ERR_INVALID;
    gf_err err = fleet_check_heartbeat(req, st->cfg, &p);
    if (err != GF_OK) {
        fleet_reply_problem(reply, &p);
        goto out;
    }
    fleet_key(req->datacenter, req->server_id, key);
    ctx.req = req;
    ctx.st = st;
    ctx.now = gf_clock_unix_ms();
    err = heartbeat_write(st, key, &ctx, &w, &p);
    if (err != GF_OK) {
        err = store_failed(st, reply, err, &p, key,
                           req->finished_match_id && req->finished_match_id[0] ? "game over"
                                                                               : "heartbeat");
        goto out;
    }
    if (!ctx.skipped)
        fleet_mirror_note(st->mirror, key, w.revision, w.data, w.len);
    if (ctx.released.match_id[0] && ctx.committed && fleet_committed_here(ctx.on, key)) {
        gf_log_info("game over: players released, server free again", "server=%s match=%s", key,
                    ctx.released.match_id);
    } else if (ctx.released.match_id[0] && ctx.committed) {
        /* A spare: the game runs on the other server, with these players in it. */
        gf_log_warn("game over from a spare server of a committed match: server free, players "
                    "kept",
                    "server=%s match=%s on=%s", key, ctx.released.match_id, ctx.on);
    } else if (ctx.released.match_id[0]) { /* its tickets return, keeping their players */
        gf_log_warn("game over before the match was committed: match aborted, server free",
                    "server=%s match=%s", key, ctx.released.match_id);
    }
    Gamefn__V1__JoinKey *keys[FLEET_KEYS_MAX];
    Gamefn__V1__HeartbeatReply r = GAMEFN__V1__HEARTBEAT_REPLY__INIT;
    r.record = w.rec;
    r.n_join_keys = fleet_keys_current(st, ctx.now, keys);
    r.join_keys = keys;
    err = reply_with(reply, &r.base);
out:
    fleet_released_fini(&ctx.released);
    fleet_written_fini(&w);
    gamefn__v1__heartbeat_request__free_unpacked(req, NULL);
    return err;
}

/* ---- deregister ------------------------------------------------------------- */

enum { DELETE_ATTEMPTS = 8 };

gf_err fleet_on_deregister(gf_fn *fn, const gf_msg *msg, gf_reply *reply)
{
    fleet_state *st = gf_fn_state(fn);
    fleet_problem p = {0};
    char key[FLEET_KEY_MAX];
    fleet_written cur = {0};
    fleet_released released = {0};
    Gamefn__V1__DeregisterServerRequest *req = (Gamefn__V1__DeregisterServerRequest *)decode(
        msg, &gamefn__v1__deregister_server_request__descriptor, reply);
    if (!req)
        return GF_ERR_INVALID;
    gf_err err = fleet_check_deregister(req, st->cfg, &p);
    if (err != GF_OK) {
        fleet_reply_problem(reply, &p);
        goto out;
    }
    fleet_key(req->datacenter, req->server_id, key);
    err = GF_ERR_CONFLICT;
    for (int attempt = 0; attempt < DELETE_ATTEMPTS && err == GF_ERR_CONFLICT; attempt++) {
        const char *match = NULL;
        int full = 0;
        fleet_written_fini(&cur);
        fleet_released_fini(&released);
        err = fleet_store_get(st->fleet_kv, key, &cur, &p);
        if (err == GF_ERR_NOT_FOUND) {
            snprintf(p.text, sizeof p.text, "no record for server %s in %s", req->server_id,
                     req->datacenter);
            p.err = GF_ERR_NOT_FOUND;
        }
        if (err == GF_ERR_INVALID && cur.revision) { /* unreadable: remove it all the same */
            err = fleet_store_delete(st->js, st->fleet_kv, key, cur.revision, &full);
            if (full)
                err = fleet_store_full_problem(&p, full);
            continue;
        }
        if (err != GF_OK)
            break;
        err = fleet_check_removal(cur.rec, req->reason, &match, &p);
        if (err != GF_OK) {
            err = fleet_reply_problem(reply, &p);
            goto out;
        }
        err = fleet_released_copy(cur.rec, &released);
        if (err == GF_OK && fleet_removal_settle(st, key, &released) != GF_OK)
            err = GF_ERR_UNAVAILABLE; /* the record kept: the server's retry settles it */
        if (err == GF_OK)
            err = fleet_store_delete(st->js, st->fleet_kv, key, cur.revision, &full);
        if (full)
            err = fleet_store_full_problem(&p, full);
    }
    if (err != GF_OK) {
        err = store_failed(st, reply, err, &p, key, "deregister");
        goto out;
    }
    fleet_mirror_note(st->mirror, key, cur.revision + 1, NULL, 0);
    if (released.match_id[0])
        gf_log_warn("server left while running a match", "server=%s match=%s", key,
                    released.match_id);
    fleet_removal_finish(st, key, released.match_id);
    Gamefn__V1__DeregisterServerReply r = GAMEFN__V1__DEREGISTER_SERVER_REPLY__INIT;
    r.record = cur.rec;
    r.released_match_id = released.match_id;
    err = reply_with(reply, &r.base);
out:
    fleet_released_fini(&released);
    fleet_written_fini(&cur);
    gamefn__v1__deregister_server_request__free_unpacked(req, NULL);
    return err;
}

/* ---- keys ------------------------------------------------------------------- */

gf_err fleet_on_keys(gf_fn *fn, const gf_msg *msg, gf_reply *reply)
{
    fleet_state *st = gf_fn_state(fn);
    Gamefn__V1__FleetKeysRequest *req = (Gamefn__V1__FleetKeysRequest *)decode(
        msg, &gamefn__v1__fleet_keys_request__descriptor, reply);
    if (!req)
        return GF_ERR_INVALID;
    Gamefn__V1__JoinKey *keys[FLEET_KEYS_MAX];
    Gamefn__V1__FleetKeysReply r = GAMEFN__V1__FLEET_KEYS_REPLY__INIT;
    r.n_join_keys = fleet_keys_current(st, gf_clock_unix_ms(), keys);
    r.join_keys = keys;
    r.clock_skew_ms = GF_WIRE_JOIN_SKEW_MS;
    gf_err err = GF_OK;
    if (req->key_id && req->key_id[0]) { /* just that one */
        size_t n = 0;
        for (size_t i = 0; i < r.n_join_keys; i++)
            if (strcmp(keys[i]->key_id, req->key_id) == 0)
                keys[n++] = keys[i];
        r.n_join_keys = n;
        if (n == 0)
            err = refuse(reply, GF_ERR_NOT_FOUND, "key_id", "no current key with this id");
    }
    if (err == GF_OK)
        err = reply_with(reply, &r.base);
    gamefn__v1__fleet_keys_request__free_unpacked(req, NULL);
    return err;
}
