/*
 * settle.c — batches of ticket writes, and the two ways a tick ends or frees tickets it
 * did not match: TTL expiry and expired claims.
 *
 * Design notes: an expired claim is never released directly. Its match may have been
 * committed by an allocator that then stopped before writing the tickets; only the
 * commit record can tell. So the matcher first creates matches/<match_id> = ABORTED
 * (CLAIM_EXPIRED): if that wins, no allocator can commit the match any more and the
 * tickets go back to the pool with their queue time; if it finds COMMITTED, the tickets
 * are written ASSIGNED from the record. One create per match, not per ticket.
 */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "gamefn/log.h"
#include "gamefn/tickets/outcome.h"
#include "tick_int.h"

#define ST(x) GAMEFN__V1__TICKET_STATE__TICKET_STATE_##x
#define RS(x) GAMEFN__V1__TICKET_REASON__TICKET_REASON_##x

bool tick_writes_alloc(tick_writes *w, size_t n)
{
    memset(w, 0, sizeof *w);
    w->next = calloc(n ? n : 1, sizeof *w->next);
    w->base_rev = calloc(n ? n : 1, sizeof *w->base_rev);
    w->ok = calloc(n ? n : 1, sizeof *w->ok);
    w->rev = calloc(n ? n : 1, sizeof *w->rev);
    if (w->next && w->base_rev && w->ok && w->rev)
        return true;
    tick_writes_free(w);
    return false;
}

void tick_writes_free(tick_writes *w)
{
    free(w->next);
    free(w->base_rev);
    free(w->ok);
    free(w->rev);
    memset(w, 0, sizeof *w);
}

/* The writes go out in ticket id order (lock ordering): two replicas that happen to
 * claim the same tickets at the same time meet on the lowest id first, so the one behind
 * tends to lose a match whole instead of both winning half of it and both rolling back.
 * (Measured with two matchers fed the same ticks: a random order made 3.7 returns per
 * ticket, most matches destroyed by both.) */
static int by_id(const void *a, const void *b, void *arg)
{
    const tick_writes *w = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const char *ix = w->next[x].rec.ticket_id, *iy = w->next[y].rec.ticket_id;
    return strcmp(ix ? ix : "", iy ? iy : "");
}

void tick_writes_run(tick_ctx *c, tick_writes *w, bool push)
{
    matcher *m = c->m;
    gf_mm_op *ops = calloc(w->n ? w->n : 1, sizeof *ops);
    uint8_t **bufs = calloc(w->n ? w->n : 1, sizeof *bufs);
    size_t *order = calloc(w->n ? w->n : 1, sizeof *order),
           *at = calloc(w->n ? w->n : 1, sizeof *at);
    if (!ops || !bufs || !order || !at)
        goto out;
    for (size_t i = 0; i < w->n; i++)
        order[i] = i;
    qsort_r(order, w->n, sizeof *order, by_id, w);
    size_t nops = 0;
    for (size_t o = 0; o < w->n; o++) {
        size_t i = order[o];
        size_t len = 0;
        w->ok[i] = false;
        if (!w->next[i].rec.base.descriptor || /* a transition that was refused */
            gf_ticket_pack(&w->next[i].rec, &bufs[i], &len) != GF_OK)
            continue;
        at[i] = nops;
        ops[nops++] = (gf_mm_op){.kind = GF_MM_UPDATE,
                                 .bucket = GF_MM_TICKETS,
                                 .key = w->next[i].rec.ticket_id,
                                 .last = w->base_rev[i],
                                 .data = bufs[i],
                                 .len = len};
    }
    gf_mmstore_batch(m->store, ops, nops);
    for (size_t i = 0; i < w->n; i++) {
        if (!bufs[i])
            continue;
        gf_mm_op *op = &ops[at[i]];
        w->ok[i] = op->err == GF_OK;
        w->rev[i] = op->rev;
        mm_mirror_busy(m->mirror, op->key, w->base_rev[i], m->cfg->claim_lease_ms);
        if (w->ok[i] && push)
            gf_mmstore_push_record(m->store, &w->next[i].rec, op->rev, NULL);
    }
out:
    for (size_t i = 0; bufs && i < w->n; i++)
        free(bufs[i]);
    free(bufs);
    free(ops);
    free(order);
    free(at);
}

void tick_end_tickets(tick_ctx *c, mm_ref **refs, size_t n)
{
    tick_writes w;
    if (n == 0 || !tick_writes_alloc(&w, n))
        return;
    for (size_t i = 0; i < n; i++) {
        int reason = refs[i]->engine == GF_OK ? RS(TTL_EXPIRED) : RS(QUEUE_CLOSED);
        if (gf_ticket_time_out(refs[i]->rec, reason, c->now, &w.next[w.n], NULL) == GF_OK &&
            !w.next[w.n].unchanged)
            w.base_rev[w.n++] = refs[i]->rev;
    }
    tick_writes_run(c, &w, true);
    for (size_t i = 0; i < w.n; i++) {
        if (!w.ok[i])
            continue;
        atomic_fetch_add(&c->m->n.timed_out, 1);
        gf_mmstore_clear_players(c->m->store, &w.next[i].rec);
    }
    tick_writes_free(&w);
}

static int by_match(const void *a, const void *b)
{
    const mm_ref *x = *(mm_ref *const *)a, *y = *(mm_ref *const *)b;
    return strcmp(x->rec->claim->match_id, y->rec->claim->match_id);
}

void tick_release_expired(tick_ctx *c, mm_ref **refs, size_t n)
{
    tick_writes w;
    Gamefn__V1__MatchOutcome **outcomes = calloc(n ? n : 1, sizeof *outcomes);
    const char **ids = calloc(n ? n : 1, sizeof *ids);
    size_t *first = calloc(n ? n : 1, sizeof *first), nm = 0;
    gf_err *errs = calloc(n ? n : 1, sizeof *errs);
    if (n == 0 || !outcomes || !ids || !first || !errs || !tick_writes_alloc(&w, n)) {
        free(outcomes);
        free(ids);
        free(first);
        free(errs);
        return;
    }
    /* One commit record per match (its tickets are adjacent once sorted), all created in
     * one batch: after an overload thousands of claims can expire at once, and one round
     * trip per match would hold the tick for seconds. */
    qsort(refs, n, sizeof *refs, by_match);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(refs[i]->rec->claim->match_id, ids[nm - 1]) != 0) {
            first[nm] = i;
            ids[nm++] = refs[i]->rec->claim->match_id;
        }
    }
    gf_mmstore_abort_matches(c->m->store, ids, nm,
                             GAMEFN__V1__MATCH_ABORT_REASON__MATCH_ABORT_REASON_CLAIM_EXPIRED,
                             c->m->instance_id, c->now, outcomes, errs);
    for (size_t k = 0; k < nm; k++) {
        size_t end = k + 1 < nm ? first[k + 1] : n;
        if (errs[k] != GF_OK) {
            gf_log_warn("expired claim left for a later tick", "match=%s err=%s", ids[k],
                        gf_err_str(errs[k]));
            continue;
        }
        for (size_t i = first[k]; i < end; i++) {
            if (gf_outcome_settle(outcomes[k], refs[i]->rec, c->now, &w.next[w.n], NULL) == GF_OK &&
                !w.next[w.n].unchanged)
                w.base_rev[w.n++] = refs[i]->rev;
        }
    }
    tick_writes_run(c, &w, true);
    for (size_t i = 0; i < w.n; i++) {
        if (!w.ok[i])
            continue;
        if (w.next[i].rec.state == ST(ASSIGNED))
            atomic_fetch_add(&c->m->n.helped, 1);
        else
            atomic_fetch_add(&c->m->n.released, 1);
    }
    tick_writes_free(&w);
    for (size_t k = 0; k < nm; k++)
        gf_outcome_free(outcomes[k]);
    free(outcomes);
    free(ids);
    free(first);
    free(errs);
}
