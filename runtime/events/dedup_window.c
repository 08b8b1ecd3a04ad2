/*
 * dedup_window.c — per-key, per-source windows of applied seqs (gamefn/dedup_window.h).
 *
 * Design notes: why the answers are exact.
 *
 * Terms. A source publishes seqs 1, 2, 3...; the stream may store several copies of
 * one seq (retries, spool replays after the duplicate window). "Acknowledged" means
 * the producer received a publish ack, so a copy is stored. The guarantee (G): when a
 * producer publishes seq s at time t, s < u(t) + W, where u(t) is the lowest seq it
 * does not know to be acknowledged at t. A restarted producer knows less than the
 * truth (its persisted floor may be stale), which only makes u(t) smaller, so G
 * still holds of the truth.
 *
 * Lemma. If a copy of m is published at time t and s <= m - W, a copy of s was stored
 * before that copy of m. Proof: by G, m < u(t) + W, so u(t) > m - W >= s; every seq
 * below u(t) is acknowledged at t, so a copy of s was stored before t, and the copy
 * of m published at t is stored after t.
 *
 * State, per (key, source): M = the highest seq the key applied; A = the applied
 * seqs in (M - W, M]. Invariant (I): A is exactly the applied seqs in (M - W, M].
 * gf_dedup_mark keeps it: it adds s to A, and when s > M it sets M = s and drops the
 * seqs <= s - W, which have left the window.
 *
 * Verdict for an arriving copy of s: DUPLICATE iff s <= M - W or s is in A.
 *
 * No missed duplicate. If s was applied, then s <= M. Either s > M - W, and by (I)
 * s is in A; or s <= M - W. Both answer DUPLICATE.
 *
 * No false duplicate (by induction over the key's copies in stream order: every
 * earlier verdict was right). Let s be unapplied. A holds applied seqs only, so s is
 * not in A. Suppose s <= M - W. The applied copy of M was published at some t; by
 * the Lemma a copy of s was stored before it, in the same partition (contract 2), so
 * the consumer, which applies the key's copies in stream order, processed that copy
 * of s before the copy of M, and by the induction hypothesis applied it (it was the
 * first copy of s the key saw, hence rightly NEW). So s was applied: contradiction.
 * Hence s > M - W and the answer is NEW.
 *
 * Where the proof's premises fail, the window is not exact:
 *  - a source pruned (gf_dedup_prune): its replays are new again (hence the horizon);
 *  - a copy the consumer never processed: retention removed it before the consumer
 *    read it (already a loss the lag monitor alarms on), or it was dead-lettered and
 *    is later re-driven after the window moved past it. A re-driven event must be
 *    applied through a per-event check instead (the `dedup` bucket, PROTOCOL §13).
 *
 * Representation: per source, the applied seqs in the window as a sorted array whose
 * last element is M. A key usually sees a thin slice of a source's seqs (one player's
 * events out of a game server's), so the array is short: check is a binary search,
 * mark an append or a short memmove. The encoding writes the seqs below M as
 * descending gaps (packed varints in protobuf): small numbers for dense windows.
 */
#include "gamefn/dedup_window.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/util.h"
#include "gamefn/v1/state.pb-c.h"
#include "source_index.h"

typedef struct dedup_src {
    gf_src_head head; /* first member (source_index.h); last_ms: the last mark */
    uint64_t *seqs;   /* ascending, in (max - W, max], last = max */
    size_t n, cap;
} dedup_src;

struct gf_dedup_window {
    uint32_t w;
    gf_src_index ix;
};

static uint64_t src_max(const dedup_src *s)
{
    return s->seqs[s->n - 1];
}

static void src_free(void *item)
{
    dedup_src *s = item;
    if (s != NULL)
        free(s->seqs);
    free(s);
}

gf_err gf_dedup_alloc(uint32_t w, gf_dedup_window **out)
{
    *out = NULL;
    if (w == 0 || w > GF_DEDUP_WINDOW_MAX)
        return GF_ERR_INVALID;
    gf_dedup_window *win = calloc(1, sizeof *win);
    if (win == NULL)
        return GF_ERR_NOMEM;
    win->w = w;
    *out = win;
    return GF_OK;
}

void gf_dedup_free(gf_dedup_window *win)
{
    if (win == NULL)
        return;
    for (size_t i = 0; i < win->ix.n; i++)
        src_free(win->ix.items[i]);
    gf_src_index_fini(&win->ix);
    free(win);
}

uint32_t gf_dedup_w(const gf_dedup_window *win)
{
    return win->w;
}

size_t gf_dedup_sources(const gf_dedup_window *win)
{
    return win->ix.n;
}

/* First index in s->seqs holding a value >= seq. */
static size_t lower_bound(const dedup_src *s, uint64_t seq)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->seqs[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static gf_dedup_verdict verdict(const gf_dedup_window *win, const dedup_src *s, uint64_t seq)
{
    if (s == NULL || seq > src_max(s))
        return GF_DEDUP_NEW;
    if (src_max(s) - seq >= win->w)
        return GF_DEDUP_DUPLICATE;
    size_t i = lower_bound(s, seq);
    return i < s->n && s->seqs[i] == seq ? GF_DEDUP_DUPLICATE : GF_DEDUP_NEW;
}

static dedup_src *find(const gf_dedup_window *win, const char *id, size_t *pos)
{
    size_t len = gf_src_id_len(id);
    return gf_src_index_find(&win->ix, id, len, pos) ? win->ix.items[*pos] : NULL;
}

gf_err gf_dedup_check(const gf_dedup_window *win, const char *source_id, uint64_t seq,
                      gf_dedup_verdict *out)
{
    size_t pos;
    if (seq == 0 || gf_src_id_len(source_id) == 0)
        return GF_ERR_INVALID;
    *out = verdict(win, find(win, source_id, &pos), seq);
    return GF_OK;
}

static gf_err src_reserve(dedup_src *s, size_t need)
{
    uint64_t *p = gf_grow(s->seqs, &s->cap, need, sizeof *p);
    if (p == NULL)
        return GF_ERR_NOMEM;
    s->seqs = p;
    return GF_OK;
}

/* Adds seq (not yet in the window) and slides the window when seq is the new max. */
static gf_err src_add(dedup_src *s, uint32_t w, uint64_t seq)
{
    gf_err err = src_reserve(s, s->n + 1);
    if (err != GF_OK)
        return err;
    if (s->n > 0 && seq > src_max(s) && seq > w) {
        size_t keep = lower_bound(s, seq - w + 1);
        memmove(s->seqs, s->seqs + keep, (s->n - keep) * sizeof *s->seqs);
        s->n -= keep;
    }
    size_t i = lower_bound(s, seq);
    memmove(s->seqs + i + 1, s->seqs + i, (s->n - i) * sizeof *s->seqs);
    s->seqs[i] = seq;
    s->n++;
    return GF_OK;
}

static gf_err src_create(gf_dedup_window *win, const char *id, size_t pos, dedup_src **out)
{
    if (win->ix.n >= GF_DEDUP_SOURCES_MAX)
        return GF_ERR_INVALID;
    dedup_src *s = calloc(1, sizeof *s);
    if (s == NULL)
        return GF_ERR_NOMEM;
    gf_src_head_set(&s->head, id, gf_src_id_len(id));
    gf_err err = gf_src_index_insert(&win->ix, pos, s);
    if (err != GF_OK) {
        src_free(s);
        return err;
    }
    *out = s;
    return GF_OK;
}

gf_err gf_dedup_mark(gf_dedup_window *win, const char *source_id, uint64_t seq, int64_t now_unix_ms)
{
    size_t pos;
    if (seq == 0 || gf_src_id_len(source_id) == 0)
        return GF_ERR_INVALID;
    if (now_unix_ms < 0)
        return GF_ERR_INVALID;
    dedup_src *s = find(win, source_id, &pos);
    if (verdict(win, s, seq) == GF_DEDUP_DUPLICATE)
        return GF_ERR_CONFLICT;
    gf_err err = s == NULL ? src_create(win, source_id, pos, &s) : GF_OK;
    if (err == GF_OK)
        err = src_add(s, win->w, seq);
    if (err == GF_OK && (s->n == 1 || now_unix_ms > s->head.last_ms))
        s->head.last_ms = now_unix_ms;
    if (err != GF_OK && s != NULL && s->n == 0)
        src_free(gf_src_index_remove(&win->ix, pos));
    return err;
}

size_t gf_dedup_prune(gf_dedup_window *win, int64_t cutoff_unix_ms)
{
    return gf_src_index_prune(&win->ix, cutoff_unix_ms, src_free);
}

/* ---- encoding: DedupWindow (schemas/gamefn/v1/state.proto) ---------------- */

static size_t total_gaps(const gf_dedup_window *win)
{
    size_t g = 0;
    for (size_t i = 0; i < win->ix.n; i++)
        g += ((const dedup_src *)win->ix.items[i])->n - 1;
    return g;
}

/* Fills m from s; gaps[] (n - 1 entries) is storage owned by the caller. */
static void src_to_msg(dedup_src *s, Gamefn__V1__DedupSource *m, uint64_t *gaps)
{
    gamefn__v1__dedup_source__init(m);
    m->source_id = s->head.id;
    m->max_seq = src_max(s);
    m->updated_unix_ms = s->head.last_ms;
    m->n_gaps = s->n - 1;
    m->gaps = gaps;
    for (size_t i = 0; i + 1 < s->n; i++)
        gaps[i] = s->seqs[s->n - 1 - i] - s->seqs[s->n - 2 - i];
}

gf_err gf_dedup_encode(const gf_dedup_window *win, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    size_t n = win->ix.n;
    Gamefn__V1__DedupSource *srcs = calloc(n ? n : 1, sizeof *srcs);
    Gamefn__V1__DedupSource **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    uint64_t *gaps = malloc((total_gaps(win) + 1) * sizeof *gaps);
    gf_err err = srcs && ptrs && gaps ? GF_OK : GF_ERR_NOMEM;
    Gamefn__V1__DedupWindow msg = GAMEFN__V1__DEDUP_WINDOW__INIT;
    uint64_t *g = gaps;
    for (size_t i = 0; err == GF_OK && i < n; i++) {
        src_to_msg(win->ix.items[i], &srcs[i], g);
        g += srcs[i].n_gaps;
        ptrs[i] = &srcs[i];
    }
    msg.window = win->w;
    msg.n_sources = n;
    msg.sources = ptrs;
    if (err == GF_OK)
        err = gf_pack(&msg.base, out, len);
    free(gaps);
    free(ptrs);
    free(srcs);
    return err;
}

/* Checks one decoded source against W; the ids' order is checked by the caller. */
static bool src_msg_valid(const Gamefn__V1__DedupSource *m, uint32_t w)
{
    if (gf_src_id_len(m->source_id) == 0 || m->max_seq == 0 || m->updated_unix_ms < 0 ||
        m->n_gaps >= w)
        return false;
    uint64_t dist = 0; /* max_seq - the seq reached so far */
    for (size_t i = 0; i < m->n_gaps; i++) {
        uint64_t g = m->gaps[i];
        if (g == 0 || g >= w - dist || g >= m->max_seq - dist)
            return false;
        dist += g;
    }
    return true;
}

static gf_err src_from_msg(gf_dedup_window *win, const Gamefn__V1__DedupSource *m)
{
    dedup_src *s = calloc(1, sizeof *s);
    gf_err err = s != NULL ? src_reserve(s, m->n_gaps + 1) : GF_ERR_NOMEM;
    if (err == GF_OK)
        err = gf_src_index_insert(&win->ix, win->ix.n, s);
    if (err != GF_OK) {
        src_free(s);
        return err;
    }
    gf_src_head_set(&s->head, m->source_id, gf_src_id_len(m->source_id));
    s->head.last_ms = m->updated_unix_ms;
    s->n = m->n_gaps + 1;
    uint64_t seq = m->max_seq;
    s->seqs[s->n - 1] = seq;
    for (size_t i = 0; i < m->n_gaps; i++)
        s->seqs[s->n - 2 - i] = seq -= m->gaps[i];
    return GF_OK;
}

static gf_err window_from_msg(const Gamefn__V1__DedupWindow *msg, gf_dedup_window *win)
{
    if (msg->n_sources > GF_DEDUP_SOURCES_MAX)
        return GF_ERR_INVALID;
    for (size_t i = 0; i < msg->n_sources; i++) {
        const Gamefn__V1__DedupSource *m = msg->sources[i];
        if (!src_msg_valid(m, win->w))
            return GF_ERR_INVALID;
        if (i > 0 && gf_src_head_cmp(win->ix.items[i - 1], m->source_id, strlen(m->source_id)) >= 0)
            return GF_ERR_INVALID;
        gf_err err = src_from_msg(win, m);
        if (err != GF_OK)
            return err;
    }
    return GF_OK;
}

gf_err gf_dedup_decode(const uint8_t *buf, size_t len, gf_dedup_window **out)
{
    *out = NULL;
    Gamefn__V1__DedupWindow *msg = gamefn__v1__dedup_window__unpack(NULL, len, buf);
    if (msg == NULL)
        return GF_ERR_INVALID;
    gf_dedup_window *win = NULL;
    gf_err err = gf_dedup_alloc(msg->window, &win);
    if (err == GF_OK)
        err = window_from_msg(msg, win);
    gamefn__v1__dedup_window__free_unpacked(msg, NULL);
    if (err != GF_OK) {
        gf_dedup_free(win);
        return err;
    }
    *out = win;
    return GF_OK;
}
