/*
 * gap_tracker.c — holes in per-source sequences (gamefn/gap_tracker.h).
 *
 * Design notes.
 *  - Per source: floor, high (highest seq seen) and the holes between, a sorted
 *    array of disjoint ranges. Invariants: every hole lies in (floor, high); every
 *    seq in (floor, high] outside the holes has been seen; floor is just below the
 *    first hole (or equals high when there is none). New holes only ever open above
 *    high, so appending keeps the array sorted.
 *  - Filling a seq in the middle of a hole splits it. Pieces of a reported hole keep
 *    the range that was reported (rep_first..rep_last) and stay adjacent in the
 *    array (nothing can be inserted between them), so "the last piece went away",
 *    which is when CLOSED is reported, is a look at the two neighbours.
 *  - Grace expiry does not scan on every event: next_due is the earliest moment an
 *    unreported hole becomes overdue, and only reaching it triggers a sweep over
 *    the open holes, which also recomputes next_due.
 */
#include "gamefn/gap_tracker.h"

#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"
#include "source_index.h"

typedef struct hole {
    uint64_t first, last;
    uint64_t rep_first, rep_last; /* as reported; shared by the pieces of a split */
    int64_t opened_ms;
    bool reported;
} hole;

typedef struct gap_src {
    gf_src_head head; /* first member (source_index.h); last_ms: last stored time */
    uint64_t floor, high;
    hole *holes;
    size_t n, cap;
} gap_src;

struct gf_gap_tracker {
    gf_gap_config cfg;
    gf_src_index ix;
    int64_t clock;
    int64_t next_due;
    gf_gap_stats st; /* the counters; the rest is computed in gf_gap_stats_get */
};

enum { DEFAULT_MAX_HOLES = 4096, MAX_HOLES = 1048576, MAX_WINDOW = 1048576 };
#define DEFAULT_GRACE_MS INT64_C(60000)
#define MAX_GRACE_MS     INT64_C(86400000)

gf_err gf_gap_alloc(const gf_gap_config *cfg, gf_gap_tracker **out)
{
    *out = NULL;
    gf_gap_config c = *cfg;
    if (c.grace_ms == 0)
        c.grace_ms = DEFAULT_GRACE_MS;
    if (c.max_holes == 0)
        c.max_holes = DEFAULT_MAX_HOLES;
    if (c.grace_ms < 1 || c.grace_ms > MAX_GRACE_MS || c.max_holes > MAX_HOLES ||
        c.window > MAX_WINDOW)
        return GF_ERR_INVALID;
    gf_gap_tracker *t = calloc(1, sizeof *t);
    if (t == NULL)
        return GF_ERR_NOMEM;
    t->cfg = c;
    t->clock = INT64_MIN;
    t->next_due = INT64_MAX;
    *out = t;
    return GF_OK;
}

static void src_free(void *item)
{
    gap_src *s = item;
    if (s != NULL)
        free(s->holes);
    free(s);
}

void gf_gap_free(gf_gap_tracker *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->ix.n; i++)
        src_free(t->ix.items[i]);
    gf_src_index_fini(&t->ix);
    free(t);
}

static void emit(gf_gap_tracker *t, const gap_src *s, const hole *h, gf_gap_kind kind,
                 bool definite)
{
    if (t->cfg.report == NULL)
        return;
    gf_gap_report r = {.kind = kind,
                       .source_id = s->head.id,
                       .first = h->rep_first,
                       .last = h->rep_last,
                       .opened_unix_ms = h->opened_ms,
                       .at_unix_ms = t->clock,
                       .definite = definite};
    t->cfg.report(t->cfg.ctx, &r);
}

static void suspect(gf_gap_tracker *t, const gap_src *s, hole *h, bool definite)
{
    h->reported = true;
    h->rep_first = h->first;
    h->rep_last = h->last;
    t->st.suspected++;
    t->st.suspected_seqs += h->last - h->first + 1;
    emit(t, s, h, GF_GAP_SUSPECTED, definite);
}

static void fix_floor(gap_src *s)
{
    s->floor = s->n > 0 ? s->holes[0].first - 1 : s->high;
}

/* Removes hole i; reports CLOSED when it was the last piece of a reported hole and
 * it was filled (not abandoned). */
static void remove_hole(gf_gap_tracker *t, gap_src *s, size_t i, bool filled)
{
    hole h = s->holes[i];
    memmove(s->holes + i, s->holes + i + 1, (s->n - i - 1) * sizeof *s->holes);
    s->n--;
    bool kin = (i > 0 && s->holes[i - 1].reported && s->holes[i - 1].rep_first == h.rep_first) ||
               (i < s->n && s->holes[i].reported && s->holes[i].rep_first == h.rep_first);
    if (filled && h.reported && !kin) {
        t->st.closed++;
        emit(t, s, &h, GF_GAP_CLOSED, false);
    }
}

static gf_err reserve_hole(gap_src *s, size_t need)
{
    hole *p = gf_grow(s->holes, &s->cap, need, sizeof *p);
    if (p == NULL)
        return GF_ERR_NOMEM;
    s->holes = p;
    return GF_OK;
}

static void schedule(gf_gap_tracker *t, int64_t opened_ms)
{
    int64_t due = opened_ms > INT64_MAX - t->cfg.grace_ms ? INT64_MAX : opened_ms + t->cfg.grace_ms;
    if (due < t->next_due)
        t->next_due = due;
}

/* Opens the hole [first, last] above high. */
static gf_err add_hole(gf_gap_tracker *t, gap_src *s, uint64_t first, uint64_t last, int64_t ms)
{
    if (s->n >= t->cfg.max_holes) {
        if (!s->holes[0].reported)
            suspect(t, s, &s->holes[0], false);
        t->st.abandoned++;
        remove_hole(t, s, 0, false);
        fix_floor(s);
    }
    gf_err err = reserve_hole(s, s->n + 1);
    if (err != GF_OK)
        return err;
    s->holes[s->n++] = (hole){.first = first, .last = last, .opened_ms = ms};
    schedule(t, ms);
    return GF_OK;
}

/* With a window W: holes the source has gone W past are missing, not late. */
static void report_definite(gf_gap_tracker *t, gap_src *s)
{
    for (size_t i = 0; i < s->n && s->high - s->holes[i].last >= t->cfg.window; i++)
        if (!s->holes[i].reported)
            suspect(t, s, &s->holes[i], true);
}

static gf_err advance(gf_gap_tracker *t, gap_src *s, uint64_t seq, int64_t ms)
{
    if (seq > s->high + 1) {
        gf_err err = add_hole(t, s, s->high + 1, seq - 1, ms);
        if (err != GF_OK)
            return err;
    }
    s->high = seq;
    fix_floor(s);
    if (t->cfg.window > 0)
        report_definite(t, s);
    return GF_OK;
}

/* The hole holding seq, or s->n. */
static size_t find_hole(const gap_src *s, uint64_t seq)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->holes[mid].last < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->holes[lo].first <= seq ? lo : s->n;
}

static gf_err fill(gf_gap_tracker *t, gap_src *s, uint64_t seq)
{
    size_t i = find_hole(s, seq);
    if (i == s->n) {
        t->st.old++;
        return GF_OK;
    }
    hole *h = &s->holes[i];
    if (h->first == h->last) {
        remove_hole(t, s, i, true);
    } else if (seq == h->first) {
        h->first++;
    } else if (seq == h->last) {
        h->last--;
    } else {
        gf_err err = reserve_hole(s, s->n + 1);
        if (err != GF_OK)
            return err;
        h = &s->holes[i];
        memmove(h + 2, h + 1, (s->n - i - 1) * sizeof *h);
        h[1] = *h;
        h[1].first = seq + 1;
        h->last = seq - 1;
        s->n++;
    }
    fix_floor(s);
    return GF_OK;
}

static void sweep(gf_gap_tracker *t)
{
    t->next_due = INT64_MAX;
    for (size_t k = 0; k < t->ix.n; k++) {
        gap_src *s = t->ix.items[k];
        for (size_t i = 0; i < s->n; i++) {
            hole *h = &s->holes[i];
            if (h->reported)
                continue;
            if (t->clock - h->opened_ms >= t->cfg.grace_ms)
                suspect(t, s, h, false);
            else
                schedule(t, h->opened_ms);
        }
    }
}

static gf_err get_source(gf_gap_tracker *t, const char *id, uint64_t seq, gap_src **out)
{
    size_t len = gf_src_id_len(id), pos;
    if (gf_src_index_find(&t->ix, id, len, &pos)) {
        *out = t->ix.items[pos];
        return GF_OK;
    }
    gap_src *s = calloc(1, sizeof *s);
    if (s == NULL)
        return GF_ERR_NOMEM;
    gf_src_head_set(&s->head, id, len);
    s->floor = s->high = seq - 1; /* the past before the first sighting is not ours */
    gf_err err = gf_src_index_insert(&t->ix, pos, s);
    if (err != GF_OK)
        src_free(s);
    *out = err == GF_OK ? s : NULL;
    return err;
}

gf_err gf_gap_observe(gf_gap_tracker *t, const char *source_id, uint64_t seq,
                      int64_t stored_unix_ms)
{
    gap_src *s = NULL;
    if (seq == 0 || gf_src_id_len(source_id) == 0)
        return GF_ERR_INVALID;
    gf_err err = get_source(t, source_id, seq, &s);
    if (err != GF_OK)
        return err;
    t->st.events++;
    if (stored_unix_ms > t->clock)
        t->clock = stored_unix_ms;
    if (stored_unix_ms > s->head.last_ms)
        s->head.last_ms = stored_unix_ms;
    if (seq > s->high)
        err = advance(t, s, seq, stored_unix_ms);
    else if (seq <= s->floor)
        t->st.old++;
    else
        err = fill(t, s, seq);
    if (t->clock >= t->next_due)
        sweep(t);
    return err;
}

void gf_gap_tick(gf_gap_tracker *t, int64_t now_unix_ms)
{
    if (now_unix_ms > t->clock)
        t->clock = now_unix_ms;
    if (t->clock >= t->next_due)
        sweep(t);
}

size_t gf_gap_prune(gf_gap_tracker *t, int64_t cutoff_unix_ms)
{
    return gf_src_index_prune(&t->ix, cutoff_unix_ms, src_free);
}

void gf_gap_stats_get(const gf_gap_tracker *t, gf_gap_stats *out)
{
    *out = t->st;
    out->sources = t->ix.n;
    out->open_holes = out->missing = 0;
    for (size_t k = 0; k < t->ix.n; k++) {
        const gap_src *s = t->ix.items[k];
        out->open_holes += s->n;
        for (size_t i = 0; i < s->n; i++)
            out->missing += s->holes[i].last - s->holes[i].first + 1;
    }
}
