/*
 * check_tickets.c — each ticket's history and each match's commit record.
 *
 * Design notes: a ticket's revisions are read in KV revision order (the bucket's stream
 * order, exact). What is judged:
 * - double claims: CLAIMED by match B right after CLAIMED by match A (no release in
 *   between: A's claim was overwritten); ASSIGNED by a match that did not hold the claim
 *   just before; listed by two COMMITTED records;
 * - terminal changed: any later revision of another state, another match, or a delete,
 *   after the first ASSIGNED / CANCELLED / TIMED_OUT;
 * - lost: the last revision is not terminal and not live, live meaning literally QUEUED
 *   before expires_unix_ms + grace, or CLAIMED before lease_expires_unix_ms + grace (an
 *   expired claim is also an orphaned claim); a ticket deleted while not terminal is lost;
 * - assigned without commit: ASSIGNED to a match with no COMMITTED record listing it;
 * - half assigned: a COMMITTED match (decided more than grace ago) one of whose tickets
 *   does not end ASSIGNED by it (a ticket still CLAIMED by it within its lease + grace is
 *   being assigned, not counted), or an ABORTED match that some ticket was ASSIGNED to.
 */
#include <stdio.h>
#include <stdlib.h>

#include "check_int.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define OC(x) GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_##x

static const char *state_name(const ck_rev *v)
{
    static const char *const names[] = {"UNSPECIFIED", "QUEUED",    "CLAIMED",
                                        "ASSIGNED",    "CANCELLED", "TIMED_OUT"};
    if (v->op == GF_CHECK_DEL)
        return "deleted";
    if (v->op == GF_CHECK_PURGE)
        return "purged";
    return v->state < sizeof names / sizeof names[0] ? names[v->state] : "UNKNOWN";
}

static bool terminal(const ck_rev *v)
{
    return v->op == GF_CHECK_PUT &&
           (v->state == ST(ASSIGNED) || v->state == ST(CANCELLED) || v->state == ST(TIMED_OUT));
}

static bool is_put(const ck_rev *v, int state)
{
    return v && v->op == GF_CHECK_PUT && v->state == state;
}

static const char *mname(const gf_check *c, uint32_t m)
{
    return m == CK_NONE ? "-" : c->matches.str[m];
}

static bool lists(const gf_check *c, const ck_outcome *o, uint32_t t)
{
    for (uint32_t i = 0; i < o->nasg; i++) {
        if (c->asgs[o->first_asg + i].ticket == t)
            return true;
    }
    return false;
}

/* An ASSIGNED revision v of ticket t after `prev`. */
static void judge_assigned(gf_check *c, uint32_t t, const ck_rev *prev, const ck_rev *v, bool *dbl,
                           bool *no_commit)
{
    const char *id = c->tickets.str[t];
    if (is_put(prev, ST(CLAIMED)) && prev->match != v->match && !*dbl) {
        *dbl = true;
        ck_example(c, CK_DOUBLE_CLAIMS,
                   "ticket %s: CLAIMED by %s (rev %llu), then ASSIGNED by %s (rev %llu)", id,
                   mname(c, prev->match), (unsigned long long)prev->seq, mname(c, v->match),
                   (unsigned long long)v->seq);
    } else if (!is_put(prev, ST(CLAIMED)) &&
               !(is_put(prev, ST(ASSIGNED)) && prev->match == v->match) && !*dbl) {
        *dbl = true;
        ck_example(c, CK_DOUBLE_CLAIMS,
                   "ticket %s: ASSIGNED by %s (rev %llu) while %s, without its claim", id,
                   mname(c, v->match), (unsigned long long)v->seq,
                   prev ? state_name(prev) : "never written before");
    }
    ck_outcome *o = &c->oc[v->match];
    o->assigned_seen = true;
    if (*no_commit || o->state == OC(ABORTED)) /* ABORTED: a half-assigned match */
        return;
    if (o->state == 0) {
        *no_commit = true;
        ck_example(c, CK_ASSIGNED_NO_COMMIT,
                   "ticket %s: ASSIGNED by %s (rev %llu), which has no commit record", id,
                   mname(c, v->match), (unsigned long long)v->seq);
    } else if (!lists(c, o, t)) {
        *no_commit = true;
        ck_example(c, CK_ASSIGNED_NO_COMMIT,
                   "ticket %s: ASSIGNED by %s (rev %llu), whose COMMITTED record does not "
                   "list it",
                   id, mname(c, v->match), (unsigned long long)v->seq);
    }
}

/* The end of the history: terminal, live, or lost. */
static void judge_last(gf_check *c, uint32_t t, const ck_rev *l, uint64_t *lost_kind)
{
    const char *id = c->tickets.str[t];
    int64_t now = c->p.now_ms, grace = c->p.grace_ms;
    if (l->op != GF_CHECK_PUT) {
        lost_kind[2]++;
        c->counts[CK_TICKETS_LOST].count++;
        ck_example(c, CK_TICKETS_LOST, "ticket %s: %s (rev %llu) before reaching a terminal state",
                   id, state_name(l), (unsigned long long)l->seq);
    } else if (l->state == ST(QUEUED) && now >= l->expires_ms + grace) {
        lost_kind[0]++;
        c->counts[CK_TICKETS_LOST].count++;
        ck_example(c, CK_TICKETS_LOST,
                   "ticket %s: still QUEUED (rev %llu) %.1f s after its TTL passed", id,
                   (unsigned long long)l->seq, (double)(now - l->expires_ms) / 1000.0);
    } else if (l->state == ST(CLAIMED) && now >= l->lease_ms + grace) {
        lost_kind[1]++;
        c->counts[CK_TICKETS_LOST].count++;
        c->counts[CK_ORPHANED_CLAIMS].count++;
        double late = (double)(now - l->lease_ms) / 1000.0;
        ck_example(c, CK_TICKETS_LOST,
                   "ticket %s: still CLAIMED by %s (rev %llu) %.1f s after its lease passed", id,
                   mname(c, l->match), (unsigned long long)l->seq, late);
        ck_example(c, CK_ORPHANED_CLAIMS,
                   "ticket %s: CLAIMED by %s (rev %llu), lease passed %.1f s before the check", id,
                   mname(c, l->match), (unsigned long long)l->seq, late);
    }
}

static void ticket_history(gf_check *c, uint32_t t, bool *dbl, uint64_t *lost_kind)
{
    const ck_ticket *tk = &c->tk[t];
    const ck_rev *prev = NULL, *term = NULL;
    bool changed = false, no_commit = false;
    const char *id = c->tickets.str[t];
    for (uint32_t i = 0; i < tk->nrevs; i++) {
        const ck_rev *v = &c->revs[tk->first_rev + i];
        if (term && !changed &&
            (v->op != GF_CHECK_PUT || v->state != term->state || v->match != term->match)) {
            changed = true;
            ck_example(c, CK_TERMINAL_CHANGED, "ticket %s: %s (rev %llu), then %s %s (rev %llu)",
                       id, state_name(term), (unsigned long long)term->seq, state_name(v),
                       v->match != CK_NONE ? mname(c, v->match) : "", (unsigned long long)v->seq);
        }
        if (is_put(v, ST(CLAIMED)) && is_put(prev, ST(CLAIMED)) && prev->match != v->match &&
            !dbl[t]) {
            dbl[t] = true;
            ck_example(c, CK_DOUBLE_CLAIMS,
                       "ticket %s: CLAIMED by %s (rev %llu), then by %s (rev %llu) with no "
                       "release in between",
                       id, mname(c, prev->match), (unsigned long long)prev->seq, mname(c, v->match),
                       (unsigned long long)v->seq);
        }
        if (is_put(v, ST(ASSIGNED)))
            judge_assigned(c, t, prev, v, &dbl[t], &no_commit);
        if (!term && terminal(v))
            term = v;
        prev = v;
    }
    c->counts[CK_TERMINAL_CHANGED].count += changed;
    c->counts[CK_ASSIGNED_NO_COMMIT].count += no_commit;
    if (!term && prev)
        judge_last(c, t, prev, lost_kind);
}

/* A committed match whose tickets did not all end ASSIGNED by it, or an aborted match
 * with an ASSIGNED ticket. Returns false when the match is outside the checked range. */
static bool match_outcome(gf_check *c, uint32_t m, bool *dbl, uint32_t *committed_by)
{
    ck_outcome *o = &c->oc[m];
    const char *mid = c->matches.str[m];
    if (o->changed) {
        c->counts[CK_OUTCOME_CHANGED].count++;
        ck_example(c, CK_OUTCOME_CHANGED, "match %s: commit record written %u times or deleted",
                   mid, o->writes);
    }
    if (o->state == OC(ABORTED) && o->assigned_seen) {
        c->counts[CK_HALF_ASSIGNED].count++;
        ck_example(c, CK_HALF_ASSIGNED,
                   "match %s: ABORTED, but a ticket was written ASSIGNED to it", mid);
    }
    if (o->state != OC(COMMITTED))
        return true;
    for (uint32_t i = 0; i < o->nasg; i++) {
        if (c->tk[c->asgs[o->first_asg + i].ticket].skipped)
            return false;
    }
    bool settled = c->p.now_ms - o->t_ns / 1000000 >= c->p.grace_ms, half = false;
    for (uint32_t i = 0; i < o->nasg; i++) {
        uint32_t t = c->asgs[o->first_asg + i].ticket;
        const ck_ticket *tk = &c->tk[t];
        if (committed_by[t] != CK_NONE && committed_by[t] != m && !dbl[t]) {
            dbl[t] = true;
            ck_example(c, CK_DOUBLE_CLAIMS, "ticket %s: in the COMMITTED records of %s and %s",
                       c->tickets.str[t], mname(c, committed_by[t]), mid);
        }
        committed_by[t] = m;
        const ck_rev *l = tk->nrevs ? &c->revs[tk->first_rev + tk->nrevs - 1] : NULL;
        /* Still claimed by this match within its lease: being assigned (the allocator's
         * redelivery, or whoever releases the lease helps it along). */
        bool pending =
            is_put(l, ST(CLAIMED)) && l->match == m && c->p.now_ms < l->lease_ms + c->p.grace_ms;
        if (settled && !pending && !half && !(is_put(l, ST(ASSIGNED)) && l->match == m)) {
            half = true;
            ck_example(c, CK_HALF_ASSIGNED, "match %s: COMMITTED, but ticket %s ended %s %s", mid,
                       c->tickets.str[t], l ? state_name(l) : "never written",
                       l && l->match != CK_NONE ? mname(c, l->match) : "");
        }
    }
    c->counts[CK_HALF_ASSIGNED].count += half;
    return true;
}

void ck_tickets_analyse(gf_check *c)
{
    size_t n = c->tickets.n;
    bool *dbl = calloc(n ? n : 1, sizeof *dbl);
    uint32_t *committed_by = malloc((n ? n : 1) * sizeof *committed_by);
    if (!dbl || !committed_by) {
        c->nomem = true;
        goto out;
    }
    uint64_t lost_kind[3] = {0}, tickets = 0, committed = 0;
    for (uint32_t t = 0; t < n; t++) {
        committed_by[t] = CK_NONE;
        if (!c->tk[t].nrevs || c->tk[t].skipped)
            continue;
        tickets++;
        ticket_history(c, t, dbl, lost_kind);
    }
    for (uint32_t m = 0; m < c->matches.n; m++)
        committed += match_outcome(c, m, dbl, committed_by) && c->oc[m].state == OC(COMMITTED);
    for (uint32_t t = 0; t < n; t++)
        c->counts[CK_DOUBLE_CLAIMS].count += dbl[t];

    char *d;
    d = c->counts[CK_DOUBLE_CLAIMS].detail;
    snprintf(d, sizeof c->counts[0].detail, "%llu of %llu tickets",
             (unsigned long long)c->counts[CK_DOUBLE_CLAIMS].count, (unsigned long long)tickets);
    d = c->counts[CK_TICKETS_LOST].detail;
    snprintf(d, sizeof c->counts[0].detail,
             "%llu of %llu tickets: %llu QUEUED past their TTL, %llu CLAIMED past their lease, "
             "%llu deleted",
             (unsigned long long)c->counts[CK_TICKETS_LOST].count, (unsigned long long)tickets,
             (unsigned long long)lost_kind[0], (unsigned long long)lost_kind[1],
             (unsigned long long)lost_kind[2]);
    snprintf(c->counts[CK_HALF_ASSIGNED].detail, sizeof c->counts[0].detail,
             "%llu of %llu committed matches",
             (unsigned long long)c->counts[CK_HALF_ASSIGNED].count, (unsigned long long)committed);
out:
    free(dbl);
    free(committed_by);
}
