/*
 * create.c — ticket.create (the steps are in intake.h).
 *
 * Design notes: every write is a compare-and-set, and every step can be retried: a
 * players record that already names this ticket id is this request's own (an earlier
 * attempt of the same idempotency key), and a ticket that exists is answered as a
 * replay. A new ticket costs two writes and one read (the audit's, key_forgotten: a
 * direct get found empty at once). The existing ticket is only read when its create
 * finds one (then the players records this request made for players that ticket does
 * not list are removed again), or when a record of this request is found (its ticket
 * written: held; not: the record is renewed, so that no create under another key
 * judges it stale while this one writes the ticket). So a client that retries after a
 * timeout converges on one ticket, and two requests racing under one key (or for one
 * player) end with one ticket and one players record, whichever order their writes land
 * in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/tickets/record.h"
#include "gamefn/tickets/request.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamefn/wire_error.h"
#include "intake.h"

enum { PLAYER_ATTEMPTS = 4 };

/* What the players step decided. */
typedef enum players_outcome {
    PLAYERS_HELD,    /* every member's record names this ticket */
    PLAYERS_REPLIED, /* a member holds a live ticket: the reply is its status */
    PLAYERS_FAILED,  /* an error reply is set */
} players_outcome;

typedef struct create_ctx {
    intake_state *in;
    const Gamefn__V1__CreateTicketRequest *req;
    const char *id;
    int64_t now;
    gf_reply *reply;
    /* records this request created, for the rollback */
    const char *created[GF_WIRE_PARTY_MAX];
    uint64_t created_rev[GF_WIRE_PARTY_MAX];
    size_t ncreated;
} create_ctx;

/* Test-only (intake.h): stops here until the process is killed, when armed at step. */
static void pause_at(const create_ctx *c, const char *step)
{
    char what[96];
    snprintf(what, sizeof what, "ticket=%s", c->id);
    gf_test_pause_at(&c->in->pause, step, what);
}

/* Removes the players records this request created (it stops short of a ticket of its
 * own), but those of the players `keep` (NULL: none) lists. */
static void rollback_players(create_ctx *c, const Gamefn__V1__TicketRecord *keep)
{
    for (size_t i = 0; i < c->ncreated; i++) {
        if (keep && gf_players_listed(keep, c->created[i]))
            continue;
        gf_mm_op op = {.kind = GF_MM_DELETE,
                       .bucket = GF_MM_PLAYERS,
                       .key = c->created[i],
                       .last = c->created_rev[i]};
        gf_mmstore_write(c->in->store, &op);
    }
    c->ncreated = 0;
}

/* An existing ticket under this id: a replay of the same request, or a different
 * request reusing the key. GF_ERR_NOT_FOUND: no ticket yet. The players records this
 * request made name that ticket: those of its members are its own and stay (removed,
 * they would let the player queue twice), the others are removed. */
static gf_err answer_existing(create_ctx *c)
{
    Gamefn__V1__TicketRecord *rec = NULL;
    uint64_t rev = 0;
    gf_tickets_problem p;
    gf_err err = intake_read_ticket(c->in, c->id, &rec, &rev, c->reply);
    if (err != GF_OK)
        return err;
    rollback_players(c, rec);
    if (gf_tickets_request_same(c->req, rec, &p) != GF_OK)
        err = intake_fail(c->reply, GF_ERR_CONFLICT, &p);
    else
        err = intake_reply_status(c->reply, 0, rec, rev, true, NULL);
    gf_ticket_free(rec);
    return err;
}

/* The record found for `player` (index i) when creating it failed. Returns what to do
 * next: 0 = the member is held (ours, or replaced), 1 = try again, or a final outcome
 * through *done. */
static int judge_existing(create_ctx *c, size_t i, const char *player, players_outcome *done)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t rev = 0, trev = 0;
    Gamefn__V1__PlayerMatchRecord *pr = NULL;
    Gamefn__V1__TicketRecord *t = NULL;
    gf_tickets_problem p;
    int next = 1;
    gf_err err = gf_mmstore_get(c->in->store, GF_MM_PLAYERS, player, &buf, &len, &rev);
    if (err == GF_ERR_NOT_FOUND)
        goto out; /* deleted meanwhile: create again */
    if (err != GF_OK) {
        intake_fail_store(c->reply, err, "reading the players record");
        *done = PLAYERS_FAILED;
        goto out;
    }
    gf_players_verdict v = GF_PLAYERS_STALE;
    if (gf_players_decode(buf, len, player, &pr, &p) != GF_OK) {
        pr = NULL; /* unreadable: stale by definition, replaced below */
    } else if (strcmp(pr->ticket_id, c->id) == 0) {
        /* An earlier attempt of this request. If it wrote the ticket, the record is held
         * as it is. If not, the record is renewed below (compare-and-set, as a stale
         * one is replaced) so that its pending_grace counts from now: kept as found, a
         * create under another key could judge it stale while this one writes the
         * ticket, replace it, and leave the player two live tickets. */
        err = intake_read_ticket(c->in, c->id, &t, &trev, c->reply);
        if (err == GF_OK)
            next = 0;
        else if (err != GF_ERR_NOT_FOUND)
            *done = PLAYERS_FAILED;
        if (err != GF_ERR_NOT_FOUND)
            goto out;
    } else {
        err = intake_read_ticket(c->in, pr->ticket_id, &t, &trev, c->reply);
        if (err != GF_OK && err != GF_ERR_NOT_FOUND) {
            *done = PLAYERS_FAILED;
            goto out;
        }
        v = gf_players_judge(pr, t, c->now, &c->in->policy);
        /* No ticket: stale by age alone, and that age compares two hosts' wall clocks.
         * Stale only once this process has also seen the record unchanged that long
         * (pending.h): a clock ahead of the writer's must not end a create in progress.
         * Counted from the first sight, whatever the wall clocks say then. */
        if (!t &&
            !intake_pending_seen_for(c->in->pending, player, rev, gf_clock_mono_ms(),
                                     c->in->policy.pending_grace_ms) &&
            v == GF_PLAYERS_STALE && c->now - pr->created_unix_ms < GF_INTAKE_PENDING_OLD_MS)
            v = GF_PLAYERS_PENDING;
    }
    if (v == GF_PLAYERS_LIVE) {
        char note[GF_WIRE_TEXT_MAX + 1];
        snprintf(note, sizeof note, "player %s already holds this ticket; it was not replaced",
                 player);
        rollback_players(c, NULL);
        *done = intake_reply_status(c->reply, 0, t, trev, true, note) == GF_OK ? PLAYERS_REPLIED
                                                                               : PLAYERS_FAILED;
    } else if (v == GF_PLAYERS_PENDING) {
        char field[64];
        snprintf(field, sizeof field, "members[%zu].player_id", i);
        gf_tickets_refuse(&p, GF_ERR_CONFLICT, GAMEFN__V1__ERROR_CODE__ERROR_CODE_CONFLICT, field,
                          "another ticket for this player is being created; retry");
        rollback_players(c, NULL);
        intake_fail(c->reply, GF_ERR_CONFLICT, &p);
        c->reply->retry_after_ms = 250;
        *done = PLAYERS_FAILED;
    } else {
        /* Stale, or our own with no ticket: (re)write it on the revision read (a
         * conflict means someone else moved first: look again). */
        uint8_t *mine = NULL;
        size_t mlen = 0;
        if (gf_players_pack(player, c->id, c->now, &mine, &mlen) != GF_OK) {
            *done = PLAYERS_FAILED;
            goto out;
        }
        gf_mm_op op = {.kind = GF_MM_UPDATE,
                       .bucket = GF_MM_PLAYERS,
                       .key = player,
                       .last = rev,
                       .data = mine,
                       .len = mlen};
        err = gf_mmstore_write(c->in->store, &op);
        free(mine);
        if (err == GF_OK) {
            c->created[c->ncreated] = player;
            c->created_rev[c->ncreated++] = op.rev;
            next = 0;
        } else if (err != GF_ERR_CONFLICT) {
            if (err == GF_ERR_NATS) /* refused: the others' records go (see write_ticket) */
                rollback_players(c, NULL);
            intake_fail_write(c->in, c->reply, &op, "replacing a stale players record");
            *done = PLAYERS_FAILED;
        }
    }
out:
    gf_players_free(pr);
    gf_ticket_free(t);
    free(buf);
    return next;
}

/* players/<p> for every member names this ticket, or the reply says why not. */
static players_outcome hold_players(create_ctx *c)
{
    players_outcome done = PLAYERS_HELD;
    for (size_t i = 0; i < c->req->n_members; i++) {
        const char *player = c->req->members[i]->player_id;
        uint8_t *mine = NULL;
        size_t mlen = 0;
        if (gf_players_pack(player, c->id, c->now, &mine, &mlen) != GF_OK)
            return PLAYERS_FAILED;
        bool held = false;
        for (int attempt = 0; attempt < PLAYER_ATTEMPTS && !held; attempt++) {
            gf_mm_op op = {.kind = GF_MM_CREATE,
                           .bucket = GF_MM_PLAYERS,
                           .key = player,
                           .data = mine,
                           .len = mlen};
            gf_err err = gf_mmstore_write(c->in->store, &op);
            if (err == GF_OK) {
                c->created[c->ncreated] = player;
                c->created_rev[c->ncreated++] = op.rev;
                held = true;
            } else if (err != GF_ERR_CONFLICT) {
                if (err == GF_ERR_NATS) /* refused: the others' records go (see write_ticket) */
                    rollback_players(c, NULL);
                intake_fail_write(c->in, c->reply, &op, "creating the players record");
                done = PLAYERS_FAILED;
                break;
            } else {
                done = PLAYERS_HELD;
                held = judge_existing(c, i, player, &done) == 0;
                if (done != PLAYERS_HELD)
                    break;
            }
        }
        free(mine);
        if (done != PLAYERS_HELD)
            return done;
        if (!held) {
            gf_tickets_problem p;
            char field[64];
            snprintf(field, sizeof field, "members[%zu].player_id", i);
            gf_tickets_refuse(&p, GF_ERR_CONFLICT, GAMEFN__V1__ERROR_CODE__ERROR_CODE_CONFLICT,
                              field, "the player's record kept changing; retry");
            rollback_players(c, NULL);
            intake_fail(c->reply, GF_ERR_CONFLICT, &p);
            c->reply->retry_after_ms = 250;
            return PLAYERS_FAILED;
        }
        if (i == 0)
            pause_at(c, "holding");
    }
    return PLAYERS_HELD;
}

/* The ticket itself, QUEUED. */
static gf_err write_ticket(create_ctx *c)
{
    gf_ticket_next next;
    gf_tickets_problem p;
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_err err = gf_ticket_new(&c->in->tables->cfg, c->req, c->id, c->now, &next, &p);
    if (err != GF_OK)
        return intake_fail(c->reply, err, &p);
    if ((err = gf_ticket_pack(&next.rec, &buf, &len)) != GF_OK)
        return err;
    gf_mm_op op = {
        .kind = GF_MM_CREATE, .bucket = GF_MM_TICKETS, .key = c->id, .data = buf, .len = len};
    err = gf_mmstore_write(c->in->store, &op);
    free(buf);
    if (err == GF_ERR_CONFLICT) /* a ticket exists under this key: a retry, or a race */
        return answer_existing(c);
    /* Refused (e.g. the bucket is full): no ticket, so the players records this request
     * made go too, or each would hold its player until pending_grace. An unknown outcome
     * keeps them: the ticket may be stored, and a retry under the key finds them its own. */
    if (err == GF_ERR_NATS)
        rollback_players(c, NULL);
    if (err != GF_OK)
        return intake_fail_write(c->in, c->reply, &op, "creating the ticket");
    pause_at(c, "ticket");
    gf_mmstore_push_record(c->in->store, &next.rec, op.rev, NULL);
    return intake_reply_status(c->reply, 0, &next.rec, op.rev, false, NULL);
}

/* A key whose ticket ended and expired from the bucket, while the audit still holds it,
 * is refused: a key names one ticket (PROTOCOL.md §3), and writing that ticket again
 * would stop or shift the audit mirror (gf_mmstore_ticket_forgotten). True when the
 * reply is set (*err: what to return). */
static bool key_forgotten(create_ctx *c, gf_err *err)
{
    bool forgotten = false;
    gf_err e = gf_mmstore_ticket_forgotten(c->in->store, c->id, &forgotten);
    if (e != GF_OK) {
        *err = intake_fail_store(c->reply, e, "reading the audit of the ticket id");
        return true;
    }
    if (!forgotten)
        return false;
    gf_tickets_problem p;
    gf_tickets_refuse(&p, GF_ERR_CONFLICT, GAMEFN__V1__ERROR_CODE__ERROR_CODE_FAILED_PRECONDITION,
                      "idempotency_key",
                      "already named ticket %s, which has ended and expired; a key names one "
                      "ticket: send a new key",
                      c->id);
    *err = intake_fail(c->reply, GF_ERR_CONFLICT, &p);
    return true;
}

gf_err intake_create(intake_state *in, const gf_msg *msg, gf_reply *reply)
{
    ProtobufCMessage *m = NULL;
    gf_tickets_problem p;
    char id[GF_TICKETS_ID_LEN + 1];
    create_ctx c = {.in = in, .id = id, .now = gf_clock_unix_ms(), .reply = reply};
    gf_err err = gf_tickets_decode(&gamefn__v1__create_ticket_request__descriptor, msg->data,
                                   msg->len, &m, &p);
    if (err != GF_OK)
        return intake_fail(reply, err, &p);
    c.req = (const Gamefn__V1__CreateTicketRequest *)m;
    if ((err = gf_tickets_request_check(&in->tables->cfg, c.req, c.now, &p)) != GF_OK) {
        err = intake_fail(reply, err, &p);
        goto out;
    }
    gf_tickets_id(c.req->idempotency_key, id);
    if (key_forgotten(&c, &err))
        goto out;
    switch (hold_players(&c)) {
    case PLAYERS_REPLIED:
        goto out;
    case PLAYERS_FAILED:
        err = reply->code ? gf_wire_err_from_code(reply->code) : GF_ERR_NOMEM;
        goto out;
    case PLAYERS_HELD:
        break;
    }
    pause_at(&c, "players");
    err = write_ticket(&c);
out:
    protobuf_c_message_free_unpacked(m, NULL);
    return err;
}
