/*
 * check_players.c — no player in two live tickets, or in two live matches, at once.
 *
 * Design notes: every ticket gives each of its players two kinds of intervals on the
 * server's clock (the mirrors keep the time the origin stored each write):
 *   live      from its first revision until it is CANCELLED, TIMED_OUT or deleted, or, once
 *             ASSIGNED, until its match is over for that player;
 *   in match  from each CLAIMED revision until the next revision that is not that claim,
 *             or, once ASSIGNED, until its match is over for that player.
 * "Its match is over for player P" is the earliest of: P's players record, while naming
 * this ticket, deleted at or after the assignment (the fleet does this when the match
 * ends or its server is removed); the assignment + max_match_ms (intake's staleness
 * rule); the ticket's last write + the tickets bucket's TTL (the record is gone). A
 * record that intake *replaces* does not end it: if intake judged a live ticket stale,
 * the overlap shows here. Intervals are half-open [start, end). Per player, a sweep in
 * start order finds an interval that starts before the latest end among the player's
 * other tickets.
 */
#include <stdio.h>
#include <stdlib.h>

#include "check_int.h"
#include "gamefn/v1/ticket.pb-c.h"

#define ST(x)   GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define FOREVER INT64_MAX

typedef struct span {
    uint32_t player, ticket, match;
    int64_t start, end;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
} spans;

typedef struct pindex {
    uint32_t *first, *count; /* per player: its records in c->precs (sorted) */
} pindex;

static int prec_cmp(const void *a, const void *b)
{
    const ck_prec *x = a, *y = b;
    if (x->player != y->player)
        return x->player < y->player ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->player != y->player)
        return x->player < y->player ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->ticket > y->ticket) - (x->ticket < y->ticket);
}

static int64_t add_ms(int64_t ns, int64_t ms)
{
    if (ms <= 0 || ns > FOREVER - ms * 1000000)
        return FOREVER;
    return ns + ms * 1000000;
}

/* When ticket t's match is over for player p, assigned at `at` (ns). */
static int64_t match_over(const gf_check *c, const pindex *ix, uint32_t p, uint32_t t, int64_t at,
                          int64_t last_write)
{
    int64_t end = add_ms(at, c->p.max_match_ms);
    if (c->p.ticket_ttl_ms > 0 && add_ms(last_write, c->p.ticket_ttl_ms) < end)
        end = add_ms(last_write, c->p.ticket_ttl_ms);
    uint32_t names = CK_NONE;
    for (uint32_t i = 0; ix->count && i < ix->count[p]; i++) {
        const ck_prec *r = &c->precs[ix->first[p] + i];
        if (r->ticket == CK_NONE && names == t && r->t_ns >= at && r->t_ns < end)
            return r->t_ns;
        names = r->ticket;
    }
    return end;
}

static bool push(gf_check *c, spans *s, uint32_t ticket, uint32_t match, int64_t start, int64_t end,
                 int64_t assigned_at, const pindex *ix, int64_t last_write)
{
    const ck_ticket *tk = &c->tk[ticket];
    if (!ck_grow((void **)&s->v, &s->cap, s->n + tk->nmembers, sizeof *s->v))
        return false;
    for (uint32_t i = 0; i < tk->nmembers; i++) {
        uint32_t p = c->members[tk->first_member + i].player;
        int64_t e = assigned_at >= 0 ? match_over(c, ix, p, ticket, assigned_at, last_write) : end;
        if (e > start)
            s->v[s->n++] = (span){p, ticket, match, start, e};
    }
    return true;
}

/* Both kinds of intervals of ticket t. */
static bool ticket_spans(gf_check *c, uint32_t t, const pindex *ix, spans *live, spans *busy)
{
    const ck_ticket *tk = &c->tk[t];
    const ck_rev *first = &c->revs[tk->first_rev];
    int64_t last_write = c->revs[tk->first_rev + tk->nrevs - 1].t_ns;
    int64_t claim_start = -1, assigned_at = -1, live_end = FOREVER;
    uint32_t claim = CK_NONE;
    for (uint32_t i = 0; i < tk->nrevs; i++) {
        const ck_rev *v = &c->revs[tk->first_rev + i];
        bool put = v->op == GF_CHECK_PUT;
        if (put && v->state == ST(CLAIMED) && claim_start >= 0 && claim == v->match)
            continue;
        if (claim_start >= 0 && !(put && v->state == ST(ASSIGNED) && claim == v->match)) {
            if (!push(c, busy, t, claim, claim_start, v->t_ns, -1, ix, last_write))
                return false;
            claim_start = -1;
        }
        if (put && v->state == ST(CLAIMED)) {
            claim_start = v->t_ns;
            claim = v->match;
        } else if (put && v->state == ST(ASSIGNED)) {
            assigned_at = v->t_ns;
            if (claim_start < 0)
                claim_start = v->t_ns;
            claim = v->match;
            break;
        } else if (!put || v->state != ST(QUEUED)) {
            live_end = v->t_ns;
            break;
        }
    }
    if (claim_start >= 0 &&
        !push(c, busy, t, claim, claim_start, FOREVER, assigned_at, ix, last_write))
        return false;
    return push(c, live, t, CK_NONE, first->t_ns, live_end, assigned_at, ix, last_write);
}

/* Counts the players with overlapping intervals of two different tickets. */
static void sweep(gf_check *c, spans *s, int k, const char *what)
{
    ck_sort(s->v, s->n, sizeof *s->v, span_cmp);
    size_t i = 0;
    while (i < s->n) {
        uint32_t p = s->v[i].player;
        /* The latest-ending interval so far, and the latest of another ticket. */
        const span *top = NULL, *other = NULL;
        bool found = false;
        for (; i < s->n && s->v[i].player == p; i++) {
            const span *x = &s->v[i];
            const span *rival = top && top->ticket != x->ticket ? top : other;
            if (!found && rival && x->start < rival->end) {
                found = true;
                char a[40], b[40];
                ck_time(rival->start, a, sizeof a);
                ck_time(x->start, b, sizeof b);
                ck_example(c, k,
                           "player %s: ticket %s (%s %s from %s) and ticket %s (%s %s from %s) "
                           "at once",
                           c->players.str[p], c->tickets.str[rival->ticket], what,
                           rival->match != CK_NONE ? c->matches.str[rival->match] : "", a,
                           c->tickets.str[x->ticket], what,
                           x->match != CK_NONE ? c->matches.str[x->match] : "", b);
            }
            if (!top || x->end > top->end) {
                if (top && top->ticket != x->ticket)
                    other = top;
                top = x;
            } else if (x->ticket != top->ticket && (!other || x->end > other->end)) {
                other = x;
            }
        }
        c->counts[k].count += found;
    }
}

void ck_players_analyse(gf_check *c)
{
    pindex ix = {0};
    spans live = {0}, busy = {0};
    size_t np = c->players.n;
    ck_sort(c->precs, c->nprecs, sizeof *c->precs, prec_cmp);
    ix.first = calloc(np ? np : 1, sizeof *ix.first);
    ix.count = calloc(np ? np : 1, sizeof *ix.count);
    if (!ix.first || !ix.count)
        goto nomem;
    for (size_t i = 0; i < c->nprecs; i++) {
        uint32_t p = c->precs[i].player;
        if (ix.count[p]++ == 0)
            ix.first[p] = (uint32_t)i;
    }
    for (uint32_t t = 0; t < c->tickets.n; t++) {
        if (c->tk[t].known && !c->tk[t].skipped && c->tk[t].nrevs &&
            !ticket_spans(c, t, &ix, &live, &busy))
            goto nomem;
    }
    sweep(c, &busy, CK_PLAYERS_TWO_MATCHES, "in match");
    sweep(c, &live, CK_PLAYERS_TWO_TICKETS, "live");
    const int kinds[] = {CK_PLAYERS_TWO_MATCHES, CK_PLAYERS_TWO_TICKETS};
    for (size_t i = 0; i < 2; i++)
        snprintf(c->counts[kinds[i]].detail, sizeof c->counts[0].detail, "%llu of %zu players",
                 (unsigned long long)c->counts[kinds[i]].count, np);
    goto out;
nomem:
    c->nomem = true;
out:
    free(ix.first);
    free(ix.count);
    free(live.v);
    free(busy.v);
}
