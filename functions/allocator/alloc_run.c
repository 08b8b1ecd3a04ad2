/*
 * alloc_run.c — one Match, from the MATCHES work queue to ASSIGNED tickets (or back to
 * the pool). docs/MATCHMAKING.md "Allocation" walks through it; in short:
 *
 *   0. matches/<m> decided already (a redelivery)? COMMITTED: finish the ticket writes;
 *      ABORTED: return what is still claimed, free the server. Ack.
 *   1. fencing: every ticket still CLAIMED by m, each claim carrying this Match's digest
 *      (what the matcher formed), else follow matches/<m> (whoever took a ticket away
 *      decided it first), or refuse a Match nobody decided (on_lost); the
 *      claims' lease already over (picked up late, from a backlog): abort (CLAIM_EXPIRED).
 *   2. a server: the one already ALLOCATED to m (a previous delivery took it), else a
 *      FREE fresh one by CAS, trying Match.datacenters best first, waiting for one
 *      until created + deadline; none: abort (NO_SERVER).
 *   3. sign one token per player, 4. create matches/<m> = COMMITTED — the single
 *      point where the match happens (or, if that finds ABORTED, free the server and
 *      return the tickets) — 5. write ASSIGNED into every ticket by CAS, push each
 *      status, 6. ack.
 *
 * A SIGKILL anywhere leaves the match for the redelivery, which resumes at step 0 (after
 * 4) or repeats 1–4 (before 4; the server taken in 2 is found again by its match id).
 * Tickets are never half assigned: ASSIGNED is written only from a COMMITTED record,
 * and released only after an ABORTED one.
 *
 * Errors: a malformed, forged or replayed Match is terminated (dead letter); a NATS failure
 * (timeout, leader change) returns GF_ERR_RETRY, so the match is redelivered and resumes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_fn.h"
#include "fleet_store.h"
#include "gamefn/clock.h"
#include "gamefn/function.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/tickets/claim_digest.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/tickets/record.h"
#include "mmstore.h"

enum {
    CANDIDATES = 4,
    TICKET_ATTEMPTS = 4,
    PROGRESS_EVERY_MS = 1000,
    LATE_ROUNDS = 8,
    FULL_LOG_MS = 10000
};

typedef struct job {
    alloc_state *st;
    const gf_msg *msg;
    alloc_match am;
    int64_t last_progress; /* mono ms */
    /* The tickets as the fencing check read them (per ticket; NULL when not read), so
     * the first round of ticket writes needs no second read. */
    Gamefn__V1__TicketRecord **read;
    uint64_t *read_rev;
    const char *full; /* the bucket that refused a write for want of room (for the log) */
} job;

/* Long work tells the server the message is still being handled, so its ack wait
 * (the consumer's backoff[0]) does not run out under a slow KV. */
static void keep_alive(job *j)
{
    int64_t now = gf_clock_mono_ms();
    if (now - j->last_progress >= PROGRESS_EVERY_MS) {
        gf_msg_in_progress(j->msg);
        j->last_progress = now;
    }
}

/* Test-only (alloc_fn.h): stops here until the process is killed, when armed at step. */
static void pause_at(job *j, const char *step)
{
    char what[160];
    snprintf(what, sizeof what, "match=%s", j->am.m->match_id);
    gf_test_pause_at(&j->st->pause, step, what);
}

static gf_err retry_on(gf_err err)
{
    return err == GF_OK ? GF_OK : GF_ERR_RETRY;
}

static void publish_demand(job *j, const char *allocated_dc)
{
    Gamefn__V1__FleetDemand d = GAMEFN__V1__FLEET_DEMAND__INIT;
    const Gamefn__V1__Match *m = j->am.m;
    uint8_t buf[512];
    char subject[128];
    d.match_id = m->match_id;
    d.queue = m->queue;
    d.datacenter = m->datacenters[0]->datacenter;
    d.allocated_datacenter = (char *)(uintptr_t)(allocated_dc ? allocated_dc : "");
    d.players = (uint32_t)j->am.n_players;
    d.unix_ms = gf_clock_unix_ms();
    size_t len = gamefn__v1__fleet_demand__pack(&d, buf);
    snprintf(subject, sizeof subject, "%s.%s", GF_WIRE_SUBJ_FLEET_DEMAND, d.datacenter);
    natsConnection_Publish(j->st->nc, subject, buf, (int)len);
}

/* ---- tickets -------------------------------------------------------------------- */

static gf_err read_ticket(job *j, const char *ticket_id, Gamefn__V1__TicketRecord **rec,
                          uint64_t *rev)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    *rec = NULL;
    gf_err err = gf_mmstore_get(j->st->store, GF_MM_TICKETS, ticket_id, &buf, &len, rev);
    if (err == GF_OK)
        err = gf_ticket_decode(buf, len, ticket_id, rec, NULL);
    free(buf);
    return err;
}

/* One ticket being settled: what was read, what to write. */
typedef struct settle_item {
    const char *ticket_id;
    Gamefn__V1__TicketRecord *cur;
    gf_ticket_next next;
    uint8_t *buf;
    gf_mm_op op;
    bool pending; /* still to settle */
} settle_item;

static void item_reset(settle_item *it)
{
    gf_ticket_free(it->cur);
    free(it->buf);
    it->cur = NULL;
    it->buf = NULL;
}

/* Reads one pending ticket and prepares its write; clears `pending` when there is
 * nothing of ours to write (no longer this match's, unreadable, or already settled). */
static gf_err prepare(job *j, const Gamefn__V1__MatchOutcome *o, settle_item *it, size_t i)
{
    uint64_t rev = 0;
    size_t len = 0;
    gf_err err = GF_OK;
    item_reset(it);
    if (j->read && j->read[i]) { /* as fenced: taken once, a retry reads again */
        it->cur = j->read[i];
        rev = j->read_rev[i];
        j->read[i] = NULL;
    } else {
        err = read_ticket(j, it->ticket_id, &it->cur, &rev);
    }
    if (err == GF_ERR_NOT_FOUND || err == GF_ERR_INVALID) {
        gf_log_warn("ticket of a match unreadable; skipped", "match=%s ticket=%s err=%s",
                    o->match_id, it->ticket_id, gf_err_str(err));
        it->pending = false;
        return GF_OK;
    }
    if (err != GF_OK)
        return err;
    err = gf_outcome_settle(o, it->cur, gf_clock_unix_ms(), &it->next, NULL);
    if (err == GF_ERR_CONFLICT || err == GF_ERR_INVALID || (err == GF_OK && it->next.unchanged)) {
        /* Not this match's any more (cancelled and released by its canceller),
         * unreadable, or already written: nothing of ours to write. (A ticket claimed
         * by a match committed without it is released: gf_outcome_settle.) */
        it->pending = false;
        return GF_OK;
    }
    if (err == GF_OK)
        err = gf_ticket_pack(&it->next.rec, &it->buf, &len);
    it->op = (gf_mm_op){.kind = GF_MM_UPDATE,
                        .bucket = GF_MM_TICKETS,
                        .key = it->ticket_id,
                        .last = rev,
                        .data = it->buf,
                        .len = len};
    return err;
}

/* Applies the decided outcome to every ticket of the match (gf_outcome_settle): the
 * writes go out together, a lost race is re-read and retried, a ticket that no longer
 * belongs to the match is left alone. Each write's status is pushed. */
static gf_err settle_all(job *j, const Gamefn__V1__MatchOutcome *o)
{
    size_t n = j->am.n_tickets;
    settle_item *items = calloc(n, sizeof *items);
    gf_mm_op *ops = calloc(n, sizeof *ops);
    size_t *of = calloc(n, sizeof *of); /* ops[k] is items[of[k]] */
    gf_err err = items && ops && of ? GF_OK : GF_ERR_NOMEM;
    /* Test-only: one write at a time, so a pause can fall between two of them. */
    bool one_by_one = gf_test_pause_armed(&j->st->pause, "assigning");
    int rounds = TICKET_ATTEMPTS * (one_by_one ? (int)n : 1);
    for (size_t i = 0; err == GF_OK && i < n; i++)
        items[i] = (settle_item){.ticket_id = j->am.ticket_ids[i], .pending = true};
    for (int round = 0; err == GF_OK && round < rounds; round++) {
        size_t m = 0;
        for (size_t i = 0; err == GF_OK && i < n && !(one_by_one && m == 1); i++) {
            if (items[i].pending)
                err = prepare(j, o, &items[i], i);
            if (err == GF_OK && items[i].pending) {
                of[m] = i;
                ops[m++] = items[i].op;
            }
        }
        if (err != GF_OK || m == 0)
            break;
        err = gf_mmstore_batch(j->st->store, ops, m);
        for (size_t k = 0; k < m; k++) {
            if (ops[k].full)
                j->full = "tickets";
            if (ops[k].err != GF_OK)
                continue; /* a lost race: read again next round */
            gf_mmstore_push_record(j->st->store, &items[of[k]].next.rec, ops[k].rev, NULL);
            items[of[k]].pending = false;
            if (one_by_one &&
                o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED)
                pause_at(j, "assigning");
        }
        if (err == GF_OK && j->full)
            err = GF_ERR_RETRY; /* no room: reading and trying again now cannot help */
        keep_alive(j);
    }
    for (size_t i = 0; err == GF_OK && i < n; i++)
        if (items[i].pending)
            err = GF_ERR_CONFLICT; /* still racing after every attempt: redeliver */
    for (size_t i = 0; items && i < n; i++)
        item_reset(&items[i]);
    free(items);
    free(ops);
    free(of);
    return err;
}

/* What the fencing check found. */
typedef struct fenced {
    const char *lost;    /* the first ticket not CLAIMED by this match, or NULL */
    const char *differs; /* the first CLAIMED by it whose claim names another Match, or NULL */
    size_t ours;         /* tickets CLAIMED by this match id */
    size_t legacy;       /* of those, claims without a digest (an older matcher) */
} fenced;

/* The fencing check: every ticket CLAIMED by this match, with a claim whose digest is
 * this Match's (gamefn/tickets/claim_digest.h). Every ticket is read in one batch; the
 * records are kept for the ticket writes. GF_OK unless a read failed. */
static gf_err fence(job *j, const uint8_t digest[GF_CLAIM_DIGEST_LEN], fenced *f)
{
    size_t n = j->am.n_tickets;
    uint8_t **vals = calloc(n, sizeof *vals);
    size_t *lens = calloc(n, sizeof *lens);
    gf_err *errs = calloc(n, sizeof *errs);
    *f = (fenced){0};
    j->read = calloc(n, sizeof *j->read);
    j->read_rev = calloc(n, sizeof *j->read_rev);
    gf_err err = vals && lens && errs && j->read && j->read_rev ? GF_OK : GF_ERR_NOMEM;
    if (err == GF_OK)
        gf_mmstore_get_batch(j->st->store, GF_MM_TICKETS, (const char *const *)j->am.ticket_ids, n,
                             vals, lens, j->read_rev, errs);
    for (size_t i = 0; err == GF_OK && i < n; i++) {
        gf_err e = errs[i];
        if (e == GF_OK)
            e = gf_ticket_decode(vals[i], lens[i], j->am.ticket_ids[i], &j->read[i], NULL);
        const Gamefn__V1__TicketRecord *rec = j->read[i];
        bool claimed = e == GF_OK && rec->state == GAMEFN__V1__TICKET_STATE__TICKET_STATE_CLAIMED &&
                       rec->claim && strcmp(rec->claim->match_id, j->am.m->match_id) == 0;
        if (e != GF_OK && e != GF_ERR_NOT_FOUND && e != GF_ERR_INVALID) {
            err = e;
        } else if (!claimed) {
            if (!f->lost)
                f->lost = j->am.ticket_ids[i];
        } else {
            f->ours++;
            gf_claim_digest_verdict v = gf_claim_digest_verdict_of(rec->claim, digest);
            f->legacy += v == GF_CLAIM_DIGEST_NONE;
            if (v == GF_CLAIM_DIGEST_DIFFERS && !f->differs)
                f->differs = j->am.ticket_ids[i];
        }
    }
    for (size_t i = 0; vals && i < n; i++)
        free(vals[i]);
    free(vals);
    free(lens);
    free(errs);
    return err;
}

static void forget_reads(job *j)
{
    for (size_t i = 0; j->read && i < j->am.n_tickets; i++)
        gf_ticket_free(j->read[i]);
    free(j->read);
    free(j->read_rev);
    j->read = NULL;
    j->read_rev = NULL;
}

/* ---- the server ------------------------------------------------------------------- */

/* Frees server `key` from this match. GF_OK too when it no longer holds the match
 * (freed or taken again by another writer, removed). A failed write (a timeout, lost
 * races) is not dropped: a server left ALLOCATED to a decided match idles until the
 * fleet's backstop frees it (allocation_grace, an aborted match) or for good (a spare
 * of a committed one), so it is logged and GF_ERR_RETRY has the Match redelivered. */
static gf_err release_key(job *j, const char *key)
{
    fleet_written w = {0};
    gf_err err = fleet_store_release(j->st->js, j->st->fleet, key, j->am.m->match_id, &w, NULL);
    if (err == GF_OK)
        fleet_mirror_note(j->st->mirror, key, w.revision, w.data, w.len);
    fleet_written_fini(&w);
    if (err == GF_OK || err == GF_ERR_PERMANENT || err == GF_ERR_NOT_FOUND)
        return GF_OK;
    gf_log_warn("server not released; the match will be redelivered", "server=%s match=%s err=%s",
                key, j->am.m->match_id, gf_err_str(err));
    return GF_ERR_RETRY;
}

/* After a decision: frees the server the copy shows ALLOCATED to this match, unless the
 * match was committed on it (`keep`; NULL after an abort). */
static gf_err release_server(job *j, const char *keep)
{
    fleet_candidate c;
    if (!fleet_mirror_find_match(j->st->mirror, j->am.m->match_id, &c))
        return GF_OK;
    gf_err err = GF_OK;
    if (!keep || !c.rec || !c.rec->server_id || strcmp(c.rec->server_id, keep) != 0)
        err = release_key(j, c.key);
    fleet_candidates_free(&c, 1);
    return err;
}

/* An allocation the fleet bucket refused for want of room: counted, and one warning
 * every FULL_LOG_MS for all of them (every candidate of every match is refused alike, one
 * a wait_slice, until room is made or the match's deadline aborts it: NO_SERVER). */
static void fleet_full(job *j, const char *key, int js_code)
{
    long long refused = atomic_fetch_add(&j->st->fleet_full_refused, 1) + 1;
    if (!gf_log_due(&j->st->fleet_full_logged_ms, FULL_LOG_MS))
        return;
    atomic_fetch_sub(&j->st->fleet_full_refused, refused);
    gf_log_warn("server not taken: the fleet bucket is full; matches without a server are aborted "
                "at their deadline (NO_SERVER)",
                "bucket=fleet js_code=%d server=%s match=%s refused=%lld", js_code, key,
                j->am.m->match_id, refused);
}

/* Tries the candidates of one datacenter; GF_OK with *out when one was taken. *raced is
 * set when a candidate was lost to another writer (it is skipped from then on). The
 * bucket full: the rest are not tried (they would be refused too). */
static gf_err try_datacenter(job *j, const char *dc, fleet_written *out, bool *raced)
{
    fleet_candidate c[CANDIDATES];
    int64_t now = gf_clock_unix_ms();
    size_t n = fleet_mirror_candidates(j->st->mirror, dc, j->am.n_players, now, j->am.m->match_id,
                                       c, CANDIDATES);
    gf_err err = GF_ERR_NOT_FOUND;
    for (size_t i = 0; i < n && err != GF_OK; i++) {
        fleet_next next;
        fleet_apply_allocate(c[i].rec, j->am.m->match_id, j->am.player_ids, j->am.n_players,
                             j->am.ticket_ids, j->am.n_tickets, now, &next);
        int full = 0;
        gf_err e = fleet_store_put(j->st->js, j->st->fleet, c[i].key, &next.rec, c[i].revision, out,
                                   &full);
        if (e == GF_OK) {
            fleet_mirror_note(j->st->mirror, c[i].key, out->revision, out->data, out->len);
            err = GF_OK;
        } else if (full) {
            fleet_full(j, c[i].key, full);
            break;
        } else if (e == GF_ERR_CONFLICT) {
            fleet_mirror_superseded(j->st->mirror, c[i].key, c[i].revision);
            *raced = true;
        } else {
            gf_log_warn("server allocation write failed", "server=%s err=%s", c[i].key,
                        gf_err_str(e));
        }
    }
    fleet_candidates_free(c, n);
    return err;
}

/* Step 2. GF_ERR_NOT_FOUND when no server came free before the deadline. A lost race is
 * not "none free": while candidates lose to other allocators the search goes on at
 * once with the next ones, a few rounds past the deadline too (a backlogged allocator
 * picks matches up late; it must not abort them while servers are free). */
static gf_err take_server(job *j, fleet_written *out)
{
    const Gamefn__V1__Match *m = j->am.m;
    fleet_candidate c;
    if (j->msg->num_delivered > 1 && fleet_mirror_find_match(j->st->mirror, m->match_id, &c)) {
        /* A previous delivery took it before it stopped: reuse, never allocate twice. */
        fleet_problem p;
        gf_err err = fleet_store_get(j->st->fleet, c.key, out, &p);
        fleet_candidates_free(&c, 1);
        if (err == GF_OK && out->rec->allocated_match_id &&
            strcmp(out->rec->allocated_match_id, m->match_id) == 0)
            return GF_OK;
        fleet_written_fini(out);
    }
    int64_t deadline = m->created_unix_ms + j->st->cfg->deadline_ms;
    uint64_t version = 0;
    for (int late_rounds = 0;;) {
        bool raced = false;
        for (size_t d = 0; d < m->n_datacenters; d++)
            if (try_datacenter(j, m->datacenters[d]->datacenter, out, &raced) == GF_OK)
                return GF_OK;
        int64_t left = deadline - gf_clock_unix_ms();
        if (left <= 0 && (!raced || ++late_rounds > LATE_ROUNDS))
            return GF_ERR_NOT_FOUND;
        keep_alive(j);
        if (raced)
            continue; /* the losers are skipped now: try the next candidates */
        fleet_mirror_wait_change(j->st->mirror, &version,
                                 left < j->st->cfg->wait_slice_ms ? left
                                                                  : j->st->cfg->wait_slice_ms);
    }
}

/* ---- deciding ---------------------------------------------------------------------- */

/* Creates the commit record from `buf` unless the match is decided already; *o is what
 * holds afterwards. Our own decision is announced to the fleet (FleetDemand). */
static gf_err decide(job *j, gf_err packed, uint8_t *buf, size_t len, const char *allocated_dc,
                     Gamefn__V1__MatchOutcome **o, bool *created)
{
    gf_err err = packed;
    bool full = false;
    *created = false;
    if (err == GF_OK)
        err = gf_mmstore_decide(j->st->store, j->am.m->match_id, buf, len, o, created, &full);
    if (full)
        j->full = "matches";
    free(buf);
    if (err == GF_OK && *created)
        publish_demand(j, allocated_dc);
    return err;
}

static gf_err decide_abort(job *j, Gamefn__V1__MatchAbortReason reason, const char *ticket_id,
                           Gamefn__V1__MatchOutcome **o)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_err err = gf_outcome_abort_pack(j->am.m->match_id, reason, ticket_id, NULL,
                                       j->st->instance_id, gf_clock_unix_ms(), &buf, &len, NULL);
    bool created = false;
    err = decide(j, err, buf, len, NULL, o, &created);
    if (err == GF_OK && created)
        gf_log_info("match aborted", "match=%s reason=%s ticket=%s", j->am.m->match_id,
                    gf_outcome_abort_name(reason), ticket_id ? ticket_id : "-");
    return err;
}

/* Steps 3 and 4 on the server taken: sign, then create the commit record. */
static gf_err decide_commit(job *j, const Gamefn__V1__ServerRecord *server,
                            Gamefn__V1__MatchOutcome **o)
{
    alloc_assignments a;
    uint8_t *buf = NULL;
    size_t len = 0;
    int64_t now = gf_clock_unix_ms();
    gf_err err = alloc_assignments_build(&j->am, server, &j->st->signer, now, &a);
    if (err == GF_OK)
        err = gf_outcome_commit_pack(j->am.m->match_id, a.v, a.n, j->st->instance_id, now, &buf,
                                     &len, NULL);
    alloc_assignments_fini(&a);
    bool created = false;
    return decide(j, err, buf, len, server->datacenter, o, &created);
}

/* Applies a decided outcome: the tickets, and a server held for the match but not
 * running it (the server of an aborted match, a spare of a committed one). */
static gf_err conclude(job *j, const Gamefn__V1__MatchOutcome *o)
{
    gf_err err = settle_all(j, o);
    bool aborted = o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_ABORTED;
    const Gamefn__V1__Assignment *a = !aborted && o->n_assignments ? o->assignments[0] : NULL;
    if (err == GF_OK && (aborted || a))
        err = release_server(j, a ? a->server_id : NULL);
    return err;
}

/* The commit record, if the match is decided already (o NULL when not). */
static gf_err read_outcome(job *j, Gamefn__V1__MatchOutcome **o)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t rev = 0;
    *o = NULL;
    gf_err err = gf_mmstore_get(j->st->store, GF_MM_MATCHES, j->am.m->match_id, &buf, &len, &rev);
    if (err == GF_OK)
        err = gf_outcome_decode(buf, len, j->am.m->match_id, o, NULL);
    free(buf);
    return err == GF_ERR_NOT_FOUND ? GF_OK : err;
}

/* A ticket of the Match is not CLAIMED by it, or its claim names another Match (its
 * digest differs: the Match has the real id but not what the matcher formed). Whoever
 * takes a claimed ticket from its match creates matches/<m> ABORTED first (PROTOCOL.md
 * §7), so behind a real Match the record is there: *o is it, to follow. Without one the
 * Match disagrees with the tickets: forged, a replay, or a ticket deleted by hand.
 * Aborting it would let anyone who may publish a Match kill a real match by naming its
 * id with a foreign ticket or a subset, so nothing is written and the Match is refused
 * (GF_ERR_PERMANENT); a real match left so (its Match deduplicated away by a forged one
 * with its Nats-Msg-Id) is returned by a matcher when its claims' lease ends. */
static gf_err on_lost(job *j, const fenced *f, Gamefn__V1__MatchOutcome **o)
{
    gf_err err = read_outcome(j, o);
    if (err != GF_OK || *o)
        return err;
    if (f->lost)
        gf_log_warn("match refused: its tickets are not claimed by it",
                    "match=%s ticket=%s claimed=%zu of=%zu decided=no", j->am.m->match_id, f->lost,
                    f->ours, j->am.n_tickets);
    else
        gf_log_warn("match refused: its claims name another match",
                    "match=%s ticket=%s claimed=%zu of=%zu decided=no", j->am.m->match_id,
                    f->differs, f->ours, j->am.n_tickets);
    return GF_ERR_PERMANENT;
}

static gf_err allocate(job *j)
{
    const Gamefn__V1__Match *m = j->am.m;
    Gamefn__V1__MatchOutcome *o = NULL;
    fleet_written server = {0};
    bool replay = false;
    /* On a first delivery the match cannot be decided yet, except by someone taking a
     * ticket away (a cancel, an expired claim): the fencing check then fails and finds
     * that decision. A redelivery reads the record first. */
    gf_err err = j->msg->num_delivered > 1 ? read_outcome(j, &o) : GF_OK;
    uint8_t digest[GF_CLAIM_DIGEST_LEN];
    if (err == GF_OK && !o && gf_claim_digest_of(m, digest) != GF_OK)
        err = GF_ERR_PERMANENT; /* cannot be: alloc_match_check bounds the tickets */
    if (err == GF_OK && !o) {
        fenced f;
        err = fence(j, digest, &f);
        if (err == GF_OK && (f.lost || f.differs)) {
            err = on_lost(j, &f, &o);
            /* A first delivery of a match committed already: a replay (a real Match is
             * stored once, by its Msg-Id). What the record says is finished all the same. */
            replay =
                o && o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED;
        } else if (err == GF_OK && f.legacy > 0) {
            /* Claims written by a matcher older than the digest (a rolling upgrade): they
             * cannot say what their match is, so the Match is taken as it comes, as
             * before. */
            gf_log_info("match fenced on claims without a digest (an older matcher)",
                        "match=%s claims=%zu of=%zu", m->match_id, f.legacy, j->am.n_tickets);
        }
        if (err == GF_OK && !o && m->claim_expires_unix_ms > 0 &&
            gf_clock_unix_ms() >= m->claim_expires_unix_ms)
            /* Picked up after its claims' lease (a backlog): a matcher may be aborting it
             * right now and matching its tickets again. Do what it would (PROTOCOL.md
             * §7: an allocator does not start a match it cannot commit within the lease)
             * instead of taking a server for it: cheap work that drains a backlog. */
            err = decide_abort(j, GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_CLAIM_EXPIRED,
                               NULL, &o);
    }
    if (err == GF_ERR_INVALID) {
        gf_log_error("commit record unreadable; match left to its claim lease", "match=%s",
                     m->match_id);
        err = GF_ERR_PERMANENT;
    }
    if (err == GF_OK && !o) {
        pause_at(j, "fenced");
        err = take_server(j, &server);
        if (err == GF_ERR_NOT_FOUND)
            err = decide_abort(j, GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_NO_SERVER,
                               NULL, &o);
        else if (err == GF_OK) {
            pause_at(j, "server");
            err = decide_commit(j, server.rec, &o);
        }
    }
    if (err == GF_OK && server.rec && o &&
        o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED) {
        const Gamefn__V1__Assignment *a = o->n_assignments ? o->assignments[0] : NULL;
        if (a && strcmp(a->server_id, server.rec->server_id) != 0) {
            /* An earlier delivery committed the match on another server: ours is spare. */
            char key[FLEET_KEY_MAX];
            if (fleet_key(server.rec->datacenter, server.rec->server_id, key))
                err = release_key(j, key);
        }
    }
    if (err == GF_OK && o) {
        if (o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED)
            pause_at(j, "committed");
        err = conclude(j, o);
    }
    if (err == GF_OK)
        pause_at(j, "assigned");
    if (err == GF_OK && replay) {
        gf_log_warn("match refused: committed already (a replay)", "match=%s delivered=1",
                    m->match_id);
        err = GF_ERR_PERMANENT;
    }
    gf_outcome_free(o);
    fleet_written_fini(&server);
    forget_reads(j);
    return err;
}

gf_err alloc_on_match(gf_fn *fn, const gf_msg *msg)
{
    alloc_state *st = gf_fn_state(fn);
    char why[256];
    if (msg->len > GF_WIRE_MATCH_MAX) {
        gf_log_warn("match refused: too large", "seq=%llu bytes=%zu",
                    (unsigned long long)msg->stream_seq, msg->len);
        return GF_ERR_PERMANENT;
    }
    Gamefn__V1__Match *m = gamefn__v1__match__unpack(NULL, msg->len, msg->data);
    if (!m) {
        gf_log_warn("match refused: not a Match", "seq=%llu", (unsigned long long)msg->stream_seq);
        return GF_ERR_PERMANENT;
    }
    job j = {.st = st, .msg = msg, .last_progress = gf_clock_mono_ms()};
    gf_err err = alloc_match_check(m, &j.am, why, sizeof why);
    if (err != GF_OK) {
        gf_log_warn("match refused", "seq=%llu why=\"%s\"", (unsigned long long)msg->stream_seq,
                    why);
        gamefn__v1__match__free_unpacked(m, NULL);
        return GF_ERR_PERMANENT;
    }
    err = allocate(&j);
    if (err != GF_OK && err != GF_ERR_PERMANENT && j.full)
        gf_log_warn("match not finished: a bucket is full; it will be redelivered",
                    "match=%s bucket=%s", m->match_id, j.full);
    else if (err != GF_OK && err != GF_ERR_PERMANENT)
        gf_log_warn("match not finished; it will be redelivered", "match=%s err=%s", m->match_id,
                    gf_err_str(err));
    alloc_match_fini(&j.am);
    gamefn__v1__match__free_unpacked(m, NULL);
    return err == GF_ERR_PERMANENT ? err : retry_on(err);
}
