/*
 * check_effects.c — boards' stored scores against the scores recomputed from EVENTS.
 *
 * Design notes: the rules (which event counts, how a difference is classified) are in
 * check_events.c's header. Three sorts and one merge: the score events by (source, seq)
 * to keep each event once, then by (board, player, stream order); the stored scores by
 * (board, player).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_int.h"

static int by_source(const void *a, const void *b)
{
    const ck_score *x = a, *y = b;
    if (x->source != y->source)
        return x->source < y->source ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->stream_seq > y->stream_seq) - (x->stream_seq < y->stream_seq);
}

static int by_key(const void *a, const void *b)
{
    const ck_score *x = a, *y = b;
    if (x->board != y->board)
        return x->board < y->board ? -1 : 1;
    if (x->player != y->player)
        return x->player < y->player ? -1 : 1;
    return (x->stream_seq > y->stream_seq) - (x->stream_seq < y->stream_seq);
}

static int stored_cmp(const void *a, const void *b)
{
    const ck_stored *x = a, *y = b;
    if (x->board != y->board)
        return x->board < y->board ? -1 : 1;
    return (x->player > y->player) - (x->player < y->player);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int key_cmp(uint32_t b1, uint32_t p1, uint32_t b2, uint32_t p2)
{
    if (b1 != b2)
        return b1 < b2 ? -1 : 1;
    return (p1 > p2) - (p1 < p2);
}

/* A stored score s against the player's events e[0..n) on board b. */
static void judge(gf_check *c, const ck_board *b, const ck_score *e, size_t n, int64_t s,
                  uint64_t *lost, uint64_t *twice)
{
    int64_t want = e[0].value;
    bool all_equal = true, has_d = false, has_minus_d = false, seen = false;
    for (size_t i = 0; i < n; i++) {
        int64_t v = e[i].value;
        all_equal &= v == e[0].value;
        if (i == 0)
            continue;
        if (b->op == GF_CHECK_BOARD_INCR)
            want += v;
        else if (b->op == GF_CHECK_BOARD_SET)
            want = v;
        else if (b->ascending ? v < want : v > want)
            want = v;
    }
    if (s == want)
        return;
    const char *board = c->boards.str[e[0].board], *player = c->players.str[e[0].player];
    int64_t d = s - want;
    uint64_t k = 1;
    bool up; /* an effect too many (twice) rather than one missing */
    const char *why;
    for (size_t i = 0; i < n; i++) {
        has_d |= e[i].value == d;
        has_minus_d |= e[i].value == -d;
        seen |= e[i].value == s;
    }
    if (b->op == GF_CHECK_BOARD_INCR) {
        if (all_equal && e[0].value != 0 && d % e[0].value == 0) {
            int64_t q = d / e[0].value;
            up = q > 0;
            k = (uint64_t)(q > 0 ? q : -q);
            why = up ? "events of equal deltas applied twice" : "events of equal deltas missing";
        } else if (has_d || has_minus_d) {
            up = has_d;
            why = up ? "one event's delta applied twice" : "one event's delta missing";
        } else {
            up = d > 0;
            why = up ? "above the sum" : "below the sum";
        }
    } else if (b->op == GF_CHECK_BOARD_BEST) {
        up = b->ascending ? s < want : s > want;
        why = up ? "better than every event's value" : "worse than the best event's value";
    } else {
        up = !seen;
        why = up ? "a value no event carries" : "an older value: a later event not applied";
    }
    *(up ? twice : lost) += k;
    ck_example(c, up ? CK_EVENTS_DOUBLE : CK_EVENTS_LOST,
               "board %s player %s: stored %lld, recomputed %lld from %zu score events (%s)", board,
               player, (long long)s, (long long)want, n, why);
}

void ck_effects_analyse(gf_check *c, uint64_t *lost, uint64_t *twice)
{
    gf_check_totals *tot = &c->report.totals;
    for (size_t b = 0; b < c->boards.n; b++)
        tot->boards += c->bd[b].declared;
    if (!tot->boards)
        return;
    ck_score *kept = malloc((c->nscores + 1) * sizeof *kept);
    if (!kept) {
        c->nomem = true;
        return;
    }
    ck_sort(c->dead, c->ndead, sizeof *c->dead, u64_cmp);
    ck_sort(c->scores, c->nscores, sizeof *c->scores, by_source);
    size_t nk = 0;
    for (size_t i = 0; i < c->nscores; i++) {
        const ck_score *x = &c->scores[i];
        if (i && x->source == x[-1].source && x->seq == x[-1].seq)
            continue; /* the same event stored again: counts once */
        if (!c->bd[x->board].declared ||
            (c->ndead && bsearch(&x->stream_seq, c->dead, c->ndead, sizeof *c->dead, u64_cmp)))
            continue;
        kept[nk++] = *x;
    }
    ck_sort(kept, nk, sizeof *kept, by_key);
    ck_sort(c->stored, c->nstored, sizeof *c->stored, stored_cmp);
    size_t i = 0, j = 0;
    while (i < nk || j < c->nstored) {
        const ck_stored *st = j < c->nstored ? &c->stored[j] : NULL;
        if (st && (!c->bd[st->board].declared ||
                   (j && stored_cmp(st, st - 1) == 0))) { /* undeclared, or a repeat */
            j++;
            continue;
        }
        int cmp = i == nk ? 1
                  : !st   ? -1
                          : key_cmp(kept[i].board, kept[i].player, st->board, st->player);
        size_t n = 0;
        while (cmp <= 0 && i + n < nk &&
               key_cmp(kept[i + n].board, kept[i + n].player, kept[i].board, kept[i].player) == 0)
            n++;
        if (cmp < 0) {
            *lost += n;
            ck_example(c, CK_EVENTS_LOST, "board %s player %s: no stored score, %zu score events",
                       c->boards.str[kept[i].board], c->players.str[kept[i].player], n);
        } else if (cmp > 0 && c->p.since_ms > 0) {
            /* With --since, events stored before it were not read: a score with none
             * after it is of a player of that earlier time, not judged. */
            tot->scores_before_since++;
        } else if (cmp > 0) {
            *twice += 1;
            ck_example(c, CK_EVENTS_DOUBLE, "board %s player %s: stored %lld with no score event",
                       c->boards.str[st->board], c->players.str[st->player], (long long)st->score);
        } else {
            judge(c, &c->bd[st->board], &kept[i], n, st->score, lost, twice);
        }
        tot->scores += cmp >= 0;
        i += n;
        j += cmp >= 0;
    }
    free(kept);
}
