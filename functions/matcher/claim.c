/*
 * claim.c — from the engine's matches to published Matches: claims, rollback, publish.
 *
 * Design notes:
 * - All claims of a tick go out as one pipelined batch of compare-and-sets on the
 *   revisions the mirror held, then each match is judged on its own: all claims won ->
 *   its Match joins one pipelined batch of publishes; any lost -> the won ones are
 *   released again
 *   (MATCH_DROPPED, compare-and-set on the claim's revision), which is safe without the
 *   commit record because an unpublished match cannot have been committed.
 * - A claim's lease is claim_lease from the tick's time: if the match is not committed
 *   by then (this matcher died before publishing, or no allocator took it), any matcher
 *   releases the tickets through the commit record (settle.c).
 * - A publish whose outcome is unknown (the store gave up) may or may not have reached
 *   MATCHES. The matcher then aborts the match through the commit record
 *   (PUBLISH_UNKNOWN): if an allocator had already committed it, the abort finds
 *   COMMITTED and nothing is undone; otherwise the allocator will find ABORTED.
 * - Every claim carries the digest of the Match (gamefn/tickets/claim_digest.h), so the
 *   Match is built before the claims and packed after them with their revisions (which
 *   the digest leaves out). The allocator acts only on a Match with that digest.
 * - match ids are 128 random bits in hex: unique without coordination, and the
 *   Nats-Msg-Id of the Match, so a resend is stored once.
 */
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/match/rules.h"
#include "gamefn/subjects.h"
#include "gamefn/test_pause.h"
#include "gamefn/tickets/claim_digest.h"
#include "gamefn/tickets/outcome.h"
#include "gamefn/util.h"
#include "gamefn/v1/match.pb-c.h"
#include "tick_int.h"

#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x

enum {
    MATCH_ID_LEN = 33,            /* "m" + 32 hex */
    MATCHES_FULL_PAUSE_MS = 2000, /* see matches_full */
};

/* The Match of one engine match, built before its claims (their digest is its own) and
 * packed after them (it carries their revisions). Its arrays are owned; its strings are
 * borrowed from the tick (pool records, config, the plan's id). */
typedef struct match_msg {
    Gamefn__V1__Match msg;
    Gamefn__V1__Team *teams, **teamp;
    Gamefn__V1__MatchTicket *mt, **mtp; /* mt[k] is engine member k */
    char **players;
    Gamefn__V1__DatacenterChoice *dc, **dcp;
} match_msg;

typedef struct claim_plan {
    char id[MATCH_ID_LEN + 1];
    bool built;                          /* mm and digest are set: its members are claimed */
    match_msg mm;                        /* the Match, claim revisions filled once won */
    uint8_t digest[GF_CLAIM_DIGEST_LEN]; /* gf_claim_digest_of(mm), written in every claim */
    size_t first, count;                 /* its members' writes: w.next[first .. first + count) */
    bool won;                            /* every claim won */
    char subject[96];                    /* the Match: where, and its encoding */
    uint8_t *payload;
    size_t payload_len;
    gf_mm_op *publish; /* its publish op, or NULL */
} claim_plan;

const char *tick_region_name(const gf_match_config *cfg, uint32_t region)
{
    for (size_t d = 0; d < cfg->datacenters_len; d++) {
        if ((uint32_t)gf_match_config_dc_region(cfg, d) == region)
            return cfg->datacenters[d].region;
    }
    return "";
}

static void new_match_id(char out[MATCH_ID_LEN + 1])
{
    unsigned char r[16];
    randombytes_buf(r, sizeof r);
    out[0] = 'm';
    sodium_bin2hex(out + 1, MATCH_ID_LEN, r, sizeof r);
}

static void match_msg_free(match_msg *b)
{
    free(b->teams);
    free(b->teamp);
    free(b->mt);
    free(b->mtp);
    free(b->players);
    free(b->dc);
    free(b->dcp);
    memset(b, 0, sizeof *b);
}

/* The Match of engine match `x` under id `id`, claim revisions still 0. */
static gf_err match_msg_build(tick_ctx *c, const gf_match *x, const char *id, match_msg *b)
{
    const gf_match_config *cfg = &c->m->tables.cfg;
    const gf_match_queue *q = &cfg->queues[x->queue];
    size_t nteams = (size_t)q->teams;
    memset(b, 0, sizeof *b);
    b->teams = calloc(nteams, sizeof *b->teams);
    b->teamp = calloc(nteams, sizeof *b->teamp);
    b->mt = calloc(x->members_len, sizeof *b->mt);
    b->mtp = calloc(x->members_len, sizeof *b->mtp);
    b->players = calloc(x->members_len * GF_WIRE_PARTY_MAX, sizeof *b->players);
    b->dc = calloc(x->dcs_len, sizeof *b->dc);
    b->dcp = calloc(x->dcs_len, sizeof *b->dcp);
    if (!b->teams || !b->teamp || !b->mt || !b->mtp || !b->players || !b->dc || !b->dcp) {
        match_msg_free(b);
        return GF_ERR_NOMEM;
    }
    for (size_t t = 0; t < nteams; t++) {
        b->teams[t] = (Gamefn__V1__Team)GAMEFN__V1__TEAM__INIT;
        b->teamp[t] = &b->teams[t];
        b->teams[t].tickets = b->mtp; /* fixed below: each team points at its own run */
    }
    /* Members come grouped by team, team 0 first. */
    for (size_t k = 0; k < x->members_len; k++) {
        const gf_match_member *mb = &x->members[k];
        const mm_ref *r = c->pool_refs[mb->ticket];
        Gamefn__V1__MatchTicket *o = &b->mt[k];
        *o = (Gamefn__V1__MatchTicket)GAMEFN__V1__MATCH_TICKET__INIT;
        o->ticket_id = r->rec->ticket_id;
        for (size_t i = 0; i < r->rec->n_members; i++)
            b->players[k * GF_WIRE_PARTY_MAX + i] = r->rec->members[i]->player_id;
        o->n_player_ids = r->rec->n_members;
        o->player_ids = &b->players[k * GF_WIRE_PARTY_MAX];
        o->queued_unix_ms = r->rec->queued_unix_ms;
        o->rating = mb->skill;
        o->skill_ignored = isinf(mb->allowed_skill_gap);
        o->allowed_skill_gap = o->skill_ignored ? 0 : mb->allowed_skill_gap;
        o->allowed_ping_ms = mb->allowed_ping_ms;
        o->ping_ms = mb->ping_ms;
        b->mtp[k] = o;
        Gamefn__V1__Team *team = &b->teams[mb->team < nteams ? mb->team : 0];
        if (team->n_tickets == 0)
            team->tickets = &b->mtp[k];
        team->n_tickets++;
        team->rating_sum += mb->skill * (double)r->rec->n_members;
    }
    for (size_t d = 0; d < x->dcs_len; d++) {
        b->dc[d] = (Gamefn__V1__DatacenterChoice)GAMEFN__V1__DATACENTER_CHOICE__INIT;
        b->dc[d].datacenter = (char *)(uintptr_t)cfg->datacenters[x->dcs[d].dc].name;
        b->dc[d].max_ping_ms = x->dcs[d].max_ping_ms;
        b->dc[d].total_ping_ms = x->dcs[d].total_ping_ms;
        b->dcp[d] = &b->dc[d];
    }
    Gamefn__V1__Match *msg = &b->msg;
    *msg = (Gamefn__V1__Match)GAMEFN__V1__MATCH__INIT;
    msg->match_id = (char *)(uintptr_t)id;
    msg->queue = (char *)(uintptr_t)q->name;
    msg->region = (char *)(uintptr_t)tick_region_name(cfg, x->region);
    msg->n_teams = nteams;
    msg->teams = b->teamp;
    msg->n_datacenters = x->dcs_len;
    msg->datacenters = b->dcp;
    msg->created_unix_ms = c->now;
    msg->matcher_id = (char *)(uintptr_t)c->m->instance_id;
    /* = every claim's lease (tick_claim): the digest covers it */
    msg->claim_expires_unix_ms = c->now + c->m->cfg->claim_lease_ms;
    msg->tick_seq = (uint64_t)c->tick_seq;
    msg->tick_group = (char *)(uintptr_t)c->m->tables.groups[c->g->index].name;
    msg->merged = x->merged;
    msg->starved = x->starved;
    return GF_OK;
}

/* MATCHES refused a Match for want of room: ticks match nothing for MATCHES_FULL_PAUSE_MS
 * (the claims of this tick are undone as for any failed publish). Logged once a pause. */
static void matches_full(matcher *m, int js_code)
{
    int64_t now = gf_clock_mono_ms(), until = atomic_load(&m->matches_full_until_ms);
    if (now < until)
        return;
    if (atomic_compare_exchange_strong(&m->matches_full_until_ms, &until,
                                       now + MATCHES_FULL_PAUSE_MS))
        gf_log_warn("MATCHES full: matching paused", "js_code=%d pause_ms=%d", js_code,
                    MATCHES_FULL_PAUSE_MS);
}

/* The publish op of plan p, whose claims all won (revisions w->rev[p->first ..]), into
 * *op (subject and payload in the plan). */
static gf_err publish_op(tick_ctx *c, const gf_match *x, claim_plan *p, const tick_writes *w,
                         gf_mm_op *op)
{
    for (size_t k = 0; k < p->count; k++)
        p->mm.mt[k].claim_revision = w->rev[p->first + k];
    gf_err err = gf_pack(&p->mm.msg.base, &p->payload, &p->payload_len);
    if (err != GF_OK)
        return err;
    snprintf(p->subject, sizeof p->subject, "%s.%s", GF_WIRE_SUBJ_MATCH_FOUND,
             c->m->tables.cfg.queues[x->queue].name);
    *op = (gf_mm_op){.kind = GF_MM_PUBLISH,
                     .key = p->subject,
                     .msg_id = p->id,
                     .data = p->payload,
                     .len = p->payload_len};
    return GF_OK;
}

/* Releases the won claims of plan p (MATCH_DROPPED) into rb; with `via_outcome` the
 * match's commit record decides first (PUBLISH_UNKNOWN). */
static void undo(tick_ctx *c, const claim_plan *p, tick_writes *w, tick_writes *rb,
                 bool via_outcome)
{
    Gamefn__V1__MatchOutcome *o = NULL;
    if (via_outcome) {
        gf_err err = gf_mmstore_abort_match(
            c->m->store, p->id, GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_PUBLISH_UNKNOWN,
            NULL, c->m->instance_id, c->now, &o);
        if (err != GF_OK) {
            gf_log_warn("match left to its claims' lease", "match=%s err=%s", p->id,
                        gf_err_str(err));
            return;
        }
        if (o->state == GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_COMMITTED) {
            gf_outcome_free(o); /* it reached an allocator after all */
            return;
        }
        gf_outcome_free(o);
    }
    for (size_t k = p->first; k < p->first + p->count; k++) {
        if (!w->ok[k])
            continue;
        if (gf_ticket_release(&w->next[k].rec, p->id, RS(MATCH_DROPPED), c->now, &rb->next[rb->n],
                              NULL) == GF_OK)
            rb->base_rev[rb->n++] = w->rev[k];
    }
}

void tick_claim(tick_ctx *c, const gf_match_result *res)
{
    matcher *m = c->m;
    size_t total = 0;
    for (size_t i = 0; i < res->matches_len; i++)
        total += res->matches[i].members_len;
    if (total == 0)
        return;
    tick_writes w, rb;
    claim_plan *plans = calloc(res->matches_len, sizeof *plans);
    if (!plans || !tick_writes_alloc(&w, total)) {
        free(plans);
        return;
    }
    if (!tick_writes_alloc(&rb, total)) {
        tick_writes_free(&w);
        free(plans);
        return;
    }
    /* Every member of every match, claimed in one batch, each claim with the digest of
     * the Match that will be published (built now; a match that cannot be built is not
     * claimed). */
    for (size_t i = 0; i < res->matches_len; i++) {
        const gf_match *x = &res->matches[i];
        claim_plan *p = &plans[i];
        new_match_id(p->id);
        p->first = w.n;
        if (match_msg_build(c, x, p->id, &p->mm) != GF_OK)
            continue;
        if (gf_claim_digest_of(&p->mm.msg, p->digest) != GF_OK) {
            match_msg_free(&p->mm);
            continue;
        }
        p->built = true;
        const gf_ticket_claim_args args = {.matcher_id = m->instance_id,
                                           .match_id = p->id,
                                           .lease_expires_unix_ms = p->mm.msg.claim_expires_unix_ms,
                                           .match_digest = p->digest};
        for (size_t k = 0; k < x->members_len; k++) {
            const mm_ref *r = c->pool_refs[x->members[k].ticket];
            if (gf_ticket_claim(r->rec, &args, c->now, &w.next[w.n], NULL) != GF_OK)
                memset(&w.next[w.n], 0, sizeof w.next[w.n]); /* cannot claim: counted lost */
            w.base_rev[w.n++] = r->rev;
        }
        p->count = w.n - p->first;
    }
    tick_writes_run(c, &w, false);
    atomic_fetch_add(&m->n.claims, (long long)total);

    /* Judge each match; publish every winner's Match in one batch. */
    gf_mm_op *pubs = calloc(res->matches_len, sizeof *pubs);
    size_t npubs = 0;
    for (size_t i = 0; i < res->matches_len && pubs; i++) {
        claim_plan *p = &plans[i];
        if (!p->built)
            continue;
        size_t won = 0;
        for (size_t k = p->first; k < p->first + p->count; k++)
            won += w.ok[k];
        p->won = won == p->count;
        if (!p->won) {
            atomic_fetch_add(&m->n.claim_conflicts, (long long)(p->count - won));
            atomic_fetch_add(&m->n.rollbacks, 1);
            undo(c, p, &w, &rb, false);
            continue;
        }
        if (publish_op(c, &res->matches[i], p, &w, &pubs[npubs]) == GF_OK)
            p->publish = &pubs[npubs++];
        else /* could not even build it: never published, undo like a lost claim */
            undo(c, p, &w, &rb, false);
    }
    for (size_t i = 0; i < res->matches_len && gf_test_pause_armed(&m->pause, "claimed"); i++) {
        if (plans[i].publish) { /* test-only: claims written, the Match not published yet */
            char what[64];
            snprintf(what, sizeof what, "match=%s", plans[i].id);
            gf_test_pause_at(&m->pause, "claimed", what);
            break;
        }
    }
    gf_mmstore_batch(m->store, pubs, npubs);
    for (size_t i = 0; i < res->matches_len && pubs; i++) {
        claim_plan *p = &plans[i];
        if (!p->publish)
            continue;
        if (p->publish->full)
            matches_full(m, p->publish->js_code);
        if (p->publish->err != GF_OK) {
            atomic_fetch_add(&m->n.publish_unknown, 1);
            gf_log_warn("match publish failed", "match=%s err=%s", p->id,
                        gf_err_str(p->publish->err));
            undo(c, p, &w, &rb, true);
            continue;
        }
        atomic_fetch_add(&m->n.matches, 1);
        for (size_t k = p->first; k < p->first + p->count; k++)
            gf_mmstore_push_record(m->store, &w.next[k].rec, w.rev[k], NULL);
    }
    for (size_t i = 0; i < res->matches_len; i++) {
        free(plans[i].payload);
        match_msg_free(&plans[i].mm);
    }
    free(pubs);
    tick_writes_run(c, &rb, true);
    tick_writes_free(&rb);
    tick_writes_free(&w);
    free(plans);
}
