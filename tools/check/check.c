/*
 * check.c — the checker's lifecycle, the matchmaking records it is fed, and the report.
 *
 * Design notes: a record is decoded with the generated protobuf-c code only (never the
 * tickets library the functions use), checked for the few facts the analyses rely on
 * (its key, a known state, a claim iff CLAIMED, an assignment iff ASSIGNED), and copied
 * into compact arrays; anything else is a bad record, counted and skipped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_int.h"
#include "gamefn/v1/match.pb-c.h"
#include "gamefn/v1/ticket.pb-c.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define OC(x) GAMEFN__V1__MATCH_OUTCOME_STATE__MATCH_OUTCOME_STATE_##x

/* name, required, explanation: one row per count, in report order. */
static const struct {
    const char *name;
    bool required;
    const char *explanation;
} count_rows[CK__COUNT] = {
    [CK_DOUBLE_CLAIMS] = {"double_claims", true,
                          "tickets claimed by a second match with no release in between, "
                          "assigned by a match that did not hold their claim, or in two "
                          "committed matches"},
    [CK_PLAYERS_TWO_MATCHES] = {"players_in_two_matches", true,
                                "players in two tickets that were in live matches (CLAIMED, "
                                "or ASSIGNED while the match runs) at the same time"},
    [CK_TICKETS_LOST] = {"tickets_lost", true,
                         "tickets neither terminal nor live at the end: QUEUED past their "
                         "TTL, CLAIMED past their claim lease, or deleted while live"},
    [CK_LIMIT_VIOLATIONS] = {"limit_violations", true,
                             "committed matches where a member's skill gap to another member "
                             "or ping to the chosen datacenter was beyond that member's own "
                             "limits when the match was formed, recomputed from the curves"},
    [CK_EVENTS_LOST] = {"events_lost", true,
                        "events the producers' log says the stream acknowledged that are "
                        "not in EVENTS, or whose effect is missing from a board"},
    [CK_EVENTS_DOUBLE] = {"events_double_applied", true,
                          "events whose effect a board holds twice (scores above the sum "
                          "recomputed from the stream's score events, deduplicated by source "
                          "and sequence)"},
    [CK_PLAYERS_TWO_TICKETS] = {"players_in_two_live_tickets", false,
                                "players who held two live tickets (QUEUED, CLAIMED, or "
                                "ASSIGNED while the match runs) at the same time"},
    [CK_ORPHANED_CLAIMS] = {"orphaned_claims", false,
                            "tickets left CLAIMED past their claim lease (also in "
                            "tickets_lost)"},
    [CK_HALF_ASSIGNED] = {"half_assigned_matches", false,
                          "committed matches whose tickets did not all end ASSIGNED by "
                          "them, or aborted matches with an ASSIGNED ticket"},
    [CK_ASSIGNED_NO_COMMIT] = {"assigned_without_commit", false,
                               "tickets written ASSIGNED to a match with no COMMITTED record "
                               "that lists them"},
    [CK_TERMINAL_CHANGED] = {"terminal_changed", false,
                             "tickets written again after a terminal state (another state, "
                             "another match, or deleted)"},
    [CK_OUTCOME_CHANGED] = {"match_outcome_rewritten", false,
                            "match commit records written more than once, or deleted"},
    [CK_EVENTS_UNDELIVERED] = {"events_undelivered", false,
                               "events the producers' log says were emitted but neither "
                               "acknowledged nor stored: still in a spool at the end"},
    [CK_EVENTS_DROPPED] = {"events_dropped", false,
                           "events the producers' log says were dropped (spool full)"},
    [CK_BAD_RECORDS] = {"bad_records", false,
                        "stored values that do not decode as the record their stream "
                        "holds"},
};

void gf_check_params_default(gf_check_params *p)
{
    memset(p, 0, sizeof *p);
    p->grace_ms = 5000;
    p->max_match_ms = 2LL * 3600 * 1000;
    p->ticket_ttl_ms = 3600LL * 1000;
    p->max_examples = 5;
}

gf_err gf_check_new(const gf_check_params *p, gf_check **out)
{
    *out = NULL;
    if (!p || p->grace_ms < 0 || p->max_match_ms <= 0 || p->ticket_ttl_ms < 0 ||
        p->max_examples > 100 || p->since_ms < 0)
        return GF_ERR_INVALID;
    gf_check *c = calloc(1, sizeof *c);
    if (!c)
        return GF_ERR_NOMEM;
    c->p = *p;
    for (int k = 0; k < CK__COUNT; k++) {
        c->counts[k].name = count_rows[k].name;
        c->counts[k].explanation = count_rows[k].explanation;
        c->counts[k].required = count_rows[k].required;
        c->counts[k].checked = true;
    }
    *out = c;
    return GF_OK;
}

void gf_check_free(gf_check *c)
{
    if (!c)
        return;
    ck_names *tables[] = {&c->tickets,     &c->matches, &c->players, &c->dcs,
                          &c->queue_names, &c->sources, &c->boards};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        ck_names_free(tables[i]);
    for (int k = 0; k < CK__COUNT; k++) {
        for (size_t i = 0; i < c->counts[k].examples_len; i++)
            free(c->counts[k].examples[i]);
        free(c->counts[k].examples);
    }
    free(c->revs);
    free(c->tk);
    free(c->members);
    free(c->pings);
    free(c->oc);
    free(c->asgs);
    free(c->precs);
    free(c->ranges);
    free(c->events);
    free(c->scores);
    free(c->dead);
    free(c->bd);
    free(c->stored);
    free(c);
}

/* Per-index arrays: zero-filled as they grow. */
static bool ensure(void **items, size_t *cap, uint32_t index, size_t size)
{
    size_t old = *cap;
    if (index == CK_NONE || !ck_grow(items, cap, (size_t)index + 1, size))
        return false;
    memset((char *)*items + old * size, 0, (*cap - old) * size);
    return true;
}

bool ck_ensure_ticket(gf_check *c, uint32_t t)
{
    return ensure((void **)&c->tk, &c->captk, t, sizeof *c->tk);
}

bool ck_ensure_outcome(gf_check *c, uint32_t m)
{
    return ensure((void **)&c->oc, &c->capoc, m, sizeof *c->oc);
}

bool ck_ensure_board(gf_check *c, uint32_t b)
{
    return ensure((void **)&c->bd, &c->capbd, b, sizeof *c->bd);
}

void ck_bad(gf_check *c, uint64_t *counter, const char *fmt, ...)
{
    (*counter)++;
    if (c->first_bad[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->first_bad, sizeof c->first_bad, fmt, ap);
    va_end(ap);
}

void ck_example(gf_check *c, int k, const char *fmt, ...)
{
    gf_check_count *n = &c->counts[k];
    if (n->examples_len >= c->p.max_examples)
        return;
    if (!n->examples) {
        n->examples = calloc(c->p.max_examples ? c->p.max_examples : 1, sizeof *n->examples);
        if (!n->examples)
            return;
    }
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char *copy = strdup(line);
    if (copy)
        n->examples[n->examples_len++] = copy;
}

char *ck_time(int64_t ns, char *buf, size_t size)
{
    if (ns == INT64_MAX) {
        snprintf(buf, size, "the end");
        return buf;
    }
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns % 1000000000 / 1000000));
    return buf;
}

static gf_err nomem(gf_check *c)
{
    c->nomem = true;
    return GF_ERR_NOMEM;
}

/* ---- tickets ---------------------------------------------------------------------- */

static bool ticket_ok(const Gamefn__V1__TicketRecord *r, const char *key)
{
    if (!r->ticket_id || strcmp(r->ticket_id, key) != 0 || r->n_members == 0)
        return false;
    if (r->state < ST(QUEUED) || r->state > ST(TIMED_OUT))
        return false;
    if ((r->state == ST(CLAIMED)) != (r->claim != NULL))
        return false;
    if (r->claim && (!r->claim->match_id || !r->claim->match_id[0]))
        return false;
    if ((r->state == ST(ASSIGNED)) != (r->assignment != NULL))
        return false;
    if (r->assignment && (!r->assignment->match_id || !r->assignment->match_id[0]))
        return false;
    for (size_t i = 0; i < r->n_members; i++) {
        if (!r->members[i]->player_id || !r->members[i]->player_id[0])
            return false;
    }
    return true;
}

/* The ticket's request: queue, members, pings (the same in every revision). */
static bool ticket_learn(gf_check *c, ck_ticket *t, const Gamefn__V1__TicketRecord *r)
{
    t->known = true;
    t->created_ms = r->created_unix_ms;
    t->skipped = c->p.since_ms > 0 && r->created_unix_ms < c->p.since_ms;
    t->queue = ck_intern(&c->queue_names, r->queue ? r->queue : "", NULL);
    if (t->queue == CK_NONE ||
        !ck_grow((void **)&c->members, &c->capmembers, c->nmembers + r->n_members,
                 sizeof *c->members) ||
        !ck_grow((void **)&c->pings, &c->cappings, c->npings + r->n_pings, sizeof *c->pings))
        return false;
    t->first_member = (uint32_t)c->nmembers;
    t->nmembers = (uint32_t)r->n_members;
    for (size_t i = 0; i < r->n_members; i++) {
        ck_member *m = &c->members[c->nmembers++];
        m->player = ck_intern(&c->players, r->members[i]->player_id, NULL);
        m->rating = r->members[i]->rating;
        m->sigma = r->members[i]->sigma;
        if (m->player == CK_NONE)
            return false;
    }
    t->first_ping = (uint32_t)c->npings;
    t->npings = 0;
    for (size_t i = 0; i < r->n_pings; i++) {
        const char *dc = r->pings[i]->datacenter;
        if (!dc || !dc[0])
            continue;
        ck_ping *p = &c->pings[c->npings++];
        p->dc = ck_intern(&c->dcs, dc, NULL);
        p->ms = r->pings[i]->ping_ms;
        t->npings++;
        if (p->dc == CK_NONE)
            return false;
    }
    return true;
}

gf_err gf_check_ticket(gf_check *c, const gf_check_record *r)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    if (!r->key || !r->key[0]) {
        ck_bad(c, &c->bad_tickets, "AUDIT_TICKETS seq %llu: no key", (unsigned long long)r->seq);
        return GF_OK;
    }
    Gamefn__V1__TicketRecord *rec = NULL;
    if (r->op == GF_CHECK_PUT) {
        rec = gamefn__v1__ticket_record__unpack(NULL, r->len, r->value);
        if (!rec || !ticket_ok(rec, r->key)) {
            ck_bad(c, &c->bad_tickets, "AUDIT_TICKETS seq %llu: key %s: not a valid TicketRecord",
                   (unsigned long long)r->seq, r->key);
            if (rec)
                gamefn__v1__ticket_record__free_unpacked(rec, NULL);
            return GF_OK;
        }
    }
    gf_err err = GF_OK;
    uint32_t t = ck_intern(&c->tickets, r->key, NULL);
    if (t == CK_NONE || !ck_ensure_ticket(c, t) ||
        !ck_grow((void **)&c->revs, &c->caprevs, c->nrevs + 1, sizeof *c->revs)) {
        err = nomem(c);
        goto out;
    }
    if (rec && !c->tk[t].known && !ticket_learn(c, &c->tk[t], rec)) {
        err = nomem(c);
        goto out;
    }
    ck_rev *v = &c->revs[c->nrevs++];
    memset(v, 0, sizeof *v);
    v->seq = r->seq;
    v->t_ns = r->time_ns;
    v->ticket = t;
    v->op = (uint8_t)r->op;
    v->match = CK_NONE;
    v->dc = CK_NONE;
    if (rec) {
        v->state = (uint8_t)rec->state;
        v->queued_ms = rec->queued_unix_ms;
        v->expires_ms = rec->expires_unix_ms;
        const char *match = NULL;
        if (rec->claim) {
            match = rec->claim->match_id;
            v->claimed_ms = rec->claim->claimed_unix_ms;
            v->lease_ms = rec->claim->lease_expires_unix_ms;
        } else if (rec->assignment) {
            match = rec->assignment->match_id;
            const char *dc = rec->assignment->datacenter;
            v->dc = ck_intern(&c->dcs, dc ? dc : "", NULL);
        }
        if (match) {
            v->match = ck_intern(&c->matches, match, NULL);
            if (v->match == CK_NONE || !ck_ensure_outcome(c, v->match))
                err = nomem(c);
        }
    }
out:
    if (rec)
        gamefn__v1__ticket_record__free_unpacked(rec, NULL);
    return err;
}

/* ---- match outcomes, matches, players ------------------------------------------------ */

static bool outcome_ok(const Gamefn__V1__MatchOutcome *o, const char *key)
{
    if (!o->match_id || strcmp(o->match_id, key) != 0)
        return false;
    if (o->state == OC(ABORTED))
        return true;
    if (o->state != OC(COMMITTED) || o->n_assignments == 0)
        return false;
    for (size_t i = 0; i < o->n_assignments; i++) {
        const Gamefn__V1__Assignment *a = o->assignments[i];
        if (!a->ticket_id || !a->ticket_id[0] || !a->datacenter)
            return false;
    }
    return true;
}

gf_err gf_check_outcome(gf_check *c, const gf_check_record *r)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    Gamefn__V1__MatchOutcome *o = NULL;
    if (!r->key || !r->key[0]) {
        ck_bad(c, &c->bad_outcomes, "AUDIT_MATCHES seq %llu: no key", (unsigned long long)r->seq);
        return GF_OK;
    }
    if (r->op == GF_CHECK_PUT) {
        o = gamefn__v1__match_outcome__unpack(NULL, r->len, r->value);
        if (!o || !outcome_ok(o, r->key)) {
            ck_bad(c, &c->bad_outcomes, "AUDIT_MATCHES seq %llu: key %s: not a valid MatchOutcome",
                   (unsigned long long)r->seq, r->key);
            if (o)
                gamefn__v1__match_outcome__free_unpacked(o, NULL);
            return GF_OK;
        }
    }
    gf_err err = GF_OK;
    uint32_t m = ck_intern(&c->matches, r->key, NULL);
    if (m == CK_NONE || !ck_ensure_outcome(c, m)) {
        err = nomem(c);
        goto out;
    }
    ck_outcome *x = &c->oc[m];
    if (!o) { /* DEL or PURGE */
        x->changed |= x->writes > 0;
        goto out;
    }
    if (x->writes++ > 0) {
        x->changed = true;
        goto out;
    }
    x->state = (uint8_t)o->state;
    x->t_ns = r->time_ns;
    x->seq = r->seq;
    if (!ck_grow((void **)&c->asgs, &c->capasgs, c->nasgs + o->n_assignments, sizeof *c->asgs)) {
        err = nomem(c);
        goto out;
    }
    x->first_asg = (uint32_t)c->nasgs;
    x->nasg = (uint32_t)o->n_assignments;
    for (size_t i = 0; i < o->n_assignments; i++) {
        ck_asg *a = &c->asgs[c->nasgs++];
        a->ticket = ck_intern(&c->tickets, o->assignments[i]->ticket_id, NULL);
        a->dc = ck_intern(&c->dcs, o->assignments[i]->datacenter, NULL);
        if (a->ticket == CK_NONE || a->dc == CK_NONE || !ck_ensure_ticket(c, a->ticket)) {
            err = nomem(c);
            goto out;
        }
    }
out:
    if (o)
        gamefn__v1__match_outcome__free_unpacked(o, NULL);
    return err;
}

gf_err gf_check_match(gf_check *c, const uint8_t *value, size_t len)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    Gamefn__V1__Match *x = gamefn__v1__match__unpack(NULL, len, value);
    if (!x || !x->match_id || !x->match_id[0]) {
        ck_bad(c, &c->bad_outcomes, "MATCHES: a message that is not a Match");
        if (x)
            gamefn__v1__match__free_unpacked(x, NULL);
        return GF_OK;
    }
    gf_err err = GF_OK;
    uint32_t m = ck_intern(&c->matches, x->match_id, NULL);
    if (m == CK_NONE || !ck_ensure_outcome(c, m))
        err = nomem(c);
    else
        c->oc[m].created_ms = x->created_unix_ms;
    gamefn__v1__match__free_unpacked(x, NULL);
    return err;
}

gf_err gf_check_player(gf_check *c, const gf_check_record *r)
{
    if (c->nomem || c->finished)
        return c->nomem ? GF_ERR_NOMEM : GF_ERR_INVALID;
    uint32_t ticket = CK_NONE;
    if (!r->key || !r->key[0]) {
        ck_bad(c, &c->bad_players, "AUDIT_PLAYERS seq %llu: no key", (unsigned long long)r->seq);
        return GF_OK;
    }
    if (r->op == GF_CHECK_PUT) {
        Gamefn__V1__PlayerMatchRecord *p =
            gamefn__v1__player_match_record__unpack(NULL, r->len, r->value);
        bool ok = p && p->player_id && strcmp(p->player_id, r->key) == 0 && p->ticket_id &&
                  p->ticket_id[0];
        if (ok)
            ticket = ck_intern(&c->tickets, p->ticket_id, NULL);
        if (p)
            gamefn__v1__player_match_record__free_unpacked(p, NULL);
        if (!ok) {
            ck_bad(c, &c->bad_players,
                   "AUDIT_PLAYERS seq %llu: key %s: not a valid PlayerMatchRecord",
                   (unsigned long long)r->seq, r->key);
            return GF_OK;
        }
        if (ticket == CK_NONE || !ck_ensure_ticket(c, ticket))
            return nomem(c);
    }
    uint32_t player = ck_intern(&c->players, r->key, NULL);
    if (player == CK_NONE ||
        !ck_grow((void **)&c->precs, &c->capprecs, c->nprecs + 1, sizeof *c->precs))
        return nomem(c);
    c->precs[c->nprecs++] = (ck_prec){r->seq, r->time_ns, player, ticket};
    return GF_OK;
}

/* ---- the report -------------------------------------------------------------------- */

void gf_check_missing(gf_check *c, gf_check_source src, const char *why)
{
    if ((int)src >= 0 && src < GF_CHECK_SRC__COUNT)
        snprintf(c->missing[src], sizeof c->missing[src], "%s", why && why[0] ? why : "missing");
}

/* The counts each source is needed for. */
static const int needs[GF_CHECK_SRC__COUNT][CK__COUNT + 1] = {
    [GF_CHECK_SRC_TICKETS] = {CK_DOUBLE_CLAIMS, CK_PLAYERS_TWO_MATCHES, CK_TICKETS_LOST,
                              CK_LIMIT_VIOLATIONS, CK_PLAYERS_TWO_TICKETS, CK_ORPHANED_CLAIMS,
                              CK_HALF_ASSIGNED, CK_ASSIGNED_NO_COMMIT, CK_TERMINAL_CHANGED, -1},
    [GF_CHECK_SRC_MATCHES] = {CK_LIMIT_VIOLATIONS, CK_HALF_ASSIGNED, CK_ASSIGNED_NO_COMMIT,
                              CK_OUTCOME_CHANGED, -1},
    [GF_CHECK_SRC_PLAYERS] = {CK_PLAYERS_TWO_MATCHES, CK_PLAYERS_TWO_TICKETS, -1},
    [GF_CHECK_SRC_EVENTS] = {CK_EVENTS_LOST, CK_EVENTS_DOUBLE, CK_EVENTS_UNDELIVERED,
                             CK_EVENTS_DROPPED, -1},
};

static void apply_missing(gf_check *c)
{
    for (int s = 0; s < GF_CHECK_SRC__COUNT; s++) {
        for (int i = 0; c->missing[s][0] && needs[s][i] >= 0; i++) {
            gf_check_count *n = &c->counts[needs[s][i]];
            n->checked = false;
            snprintf(n->detail, sizeof n->detail, "%s", c->missing[s]);
        }
    }
}

static int rev_cmp(const void *a, const void *b)
{
    const ck_rev *x = a, *y = b;
    if (x->ticket != y->ticket)
        return x->ticket < y->ticket ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

const ck_rev *ck_claim_of(const gf_check *c, uint32_t t, uint32_t m)
{
    const ck_ticket *tk = &c->tk[t];
    for (uint32_t i = tk->nrevs; i-- > 0;) {
        const ck_rev *v = &c->revs[tk->first_rev + i];
        if (v->op == GF_CHECK_PUT && v->state == ST(CLAIMED) && v->match == m)
            return v;
    }
    return NULL;
}

gf_err gf_check_finish(gf_check *c, const gf_check_report **out)
{
    *out = NULL;
    if (c->nomem)
        return GF_ERR_NOMEM;
    if (c->finished) {
        *out = &c->report;
        return GF_OK;
    }
    c->finished = true;
    /* Every ticket's revisions together, in revision order. */
    if (!ck_ensure_ticket(c, c->tickets.n ? (uint32_t)c->tickets.n - 1 : 0) ||
        !ck_ensure_outcome(c, c->matches.n ? (uint32_t)c->matches.n - 1 : 0))
        return nomem(c);
    ck_sort(c->revs, c->nrevs, sizeof *c->revs, rev_cmp);
    for (size_t i = 0; i < c->nrevs; i++) {
        ck_ticket *t = &c->tk[c->revs[i].ticket];
        if (t->nrevs++ == 0)
            t->first_rev = (uint32_t)i;
    }
    gf_check_totals *tot = &c->report.totals;
    for (size_t t = 0; t < c->tickets.n; t++) {
        tot->tickets += c->tk[t].nrevs > 0 && !c->tk[t].skipped;
        tot->tickets_skipped += c->tk[t].skipped;
    }
    tot->ticket_revisions = c->nrevs;
    for (size_t m = 0; m < c->matches.n; m++) {
        tot->matches_committed += c->oc[m].state == OC(COMMITTED);
        tot->matches_aborted += c->oc[m].state == OC(ABORTED);
    }
    tot->players = c->players.n;
    tot->player_revisions = c->nprecs;

    ck_tickets_analyse(c);
    ck_players_analyse(c);
    ck_limits_analyse(c);
    ck_events_analyse(c);
    if (c->nomem)
        return GF_ERR_NOMEM;

    gf_check_count *bad = &c->counts[CK_BAD_RECORDS];
    bad->count = c->bad_tickets + c->bad_outcomes + c->bad_players + c->bad_letters;
    if (bad->count) {
        snprintf(bad->detail, sizeof bad->detail,
                 "%llu in AUDIT_TICKETS, %llu in AUDIT_MATCHES or MATCHES, %llu in "
                 "AUDIT_PLAYERS, %llu in DLQ",
                 (unsigned long long)c->bad_tickets, (unsigned long long)c->bad_outcomes,
                 (unsigned long long)c->bad_players, (unsigned long long)c->bad_letters);
        ck_example(c, CK_BAD_RECORDS, "%s", c->first_bad);
    }
    apply_missing(c);
    c->report.counts = c->counts;
    c->report.counts_len = CK__COUNT;
    *out = &c->report;
    return GF_OK;
}

uint64_t gf_check_report_broken(const gf_check_report *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->counts_len; i++)
        n += r->counts[i].checked ? r->counts[i].count : 0;
    return n;
}

const gf_check_count *gf_check_report_find(const gf_check_report *r, const char *name)
{
    for (size_t i = 0; i < r->counts_len; i++) {
        if (strcmp(r->counts[i].name, name) == 0)
            return &r->counts[i];
    }
    return NULL;
}
