/*
 * exact.c — the exact search for a seed whose limits no longer widen.
 *
 * Design notes:
 *  - Such a seed gets no better chance in a later tick, so when the nearest-first walk
 *    falls short it is matched as soon as a valid group containing it exists: this search
 *    finds one whenever there is one among its candidates (below) — usually one of the
 *    narrowest skill range among them (the narrowing is bounded: NARROW).
 *  - First, a necessary test over whole words of the seed's skill window (window_may_fill):
 *    which party sizes occur at all among the unmatched tickets there that accept one of
 *    its datacenters. If not even all of those could fill the shape, there is no group
 *    however far one looks; that is the usual end of a seed at its caps that stays
 *    unmatched (a party whose team needs a solo player, and none is left), so it is proven
 *    in one pass, not by a search.
 *  - Candidates: the unmatched tickets of its partition that accept one of the seed's
 *    datacenters, are mutually skill-compatible with it and share its match attributes,
 *    nearest first on each side: FIRST_SIDE per side, then SIDE_GROWTH times as many, up
 *    to SIDE, each wider look resuming the scan, only while a bound (not the end of the
 *    candidates) stopped the last one; at most WORDS words of ranks per side (the per-word
 *    acceptance bits, gf_mt_reach_acc, skip tickets accepting none of them 64 at a time).
 *    Every member of a group accepts one datacenter, so a group exists iff it exists among
 *    one datacenter's candidates; all datacenters are swept at once, with counts each.
 *  - Skill. With lo and hi the lowest and highest skills of a set holding the seed, the
 *    set is valid iff every member i has x_i - g_i <= lo and hi <= x_i + g_i (x: skill,
 *    g: its own gap). So ticket i fits a range [lo, hi] iff lo lies in [x_i - g_i, x_i]
 *    and hi in [x_i, x_i + g_i], and tickets that all fit one range form a valid group
 *    (their real range lies inside it). lo goes down from the seed's skill over the
 *    candidates' below it (the lowest member is the seed or one of them); a lo whose
 *    tolerating tickets (whatever hi) cannot fill the shape is skipped; otherwise hi
 *    sweeps up over the candidates' skills, a ticket joining at its skill (at the seed's
 *    for those below it) and leaving past x + g, and after each join the fit test asks
 *    whether the tickets in can fill the shape around the seed. The first hi that can is
 *    the narrowest range for that lo; lo stops once the seed's skill minus lo reaches the
 *    narrowest found. O(m^2) for m candidates at worst. In FIFO partitions (all
 *    ping_first) nobody limits skill: every candidate fits.
 *  - Fit. Only how many fitting tickets of each party size there are matters. Two teams
 *    of at most 63: the reachable (team A, team B) party fills are a bit set per A fill,
 *    built party by party (the seed's party in team A); solo players fill the rest.
 *    Free-for-all: a count. Other shapes: a search over party counts, largest first,
 *    pruned by gf_match_pack_feasible, at most FILL_NODES nodes. The members are the
 *    parties of a minimal count vector (a fill of it uses every one of its parties) and
 *    the solo players it needs, each the nearest to the seed of its size.
 *  - Cost is bounded per seed (SIDE, WORDS) and per tick (a budget of STEPS_PER_TICKET
 *    steps per ticket plus STEPS_MIN: words and tickets looked at, sweep steps; about 20
 *    ns a step). A search that found nothing after a bound cut it short is counted
 *    (stats.exact_cut): when there are none, every seed at its caps that stayed unmatched
 *    had no valid group in its partition.
 * One thread owns a gf_mt_exact; the search creates it and frees it.
 */
#include <math.h>
#include <string.h>

#include "walk.h"

#define FIRST_SIDE       16   /* candidates per side, first look */
#define SIDE_GROWTH      4    /* ... then 4 times as many, ... */
#define SIDE             256  /* ... up to this many */
#define WORDS            1024 /* words of ranks scanned per side */
#define FILL_NODES       4096
#define NARROW           4 /* x candidates: steps spent narrowing a group once found */
#define STEPS_PER_TICKET 8
#define STEPS_MIN        (1 << 18)
#define CLASSES          8  /* party sizes 1..7 told apart in a word's class bits; 8+ lumped */
#define BLOCK_WORDS      64 /* words of ranks per block of the window test's counts */

typedef struct xc {
    double x, a, b; /* skill, skill - gap, skill + gap */
    double dist;    /* to the seed, in the partition's order (skill or queue time) */
    uint32_t rank;
    uint32_t size;
    uint32_t dcmask; /* the seed's datacenters it accepts */
} xc;

/* A candidate (its index in cand[]) by a key: x + g (past it the sweep's hi loses it) or
 * x - g (below it lo does). */
typedef struct keyed {
    double key;
    uint32_t i;
} keyed;

/* The scan of one side of the seed, resumed by each wider look. */
typedef struct side_scan {
    size_t w;       /* the current word of alive[] */
    uint64_t bits;  /* its ranks not looked at yet */
    uint32_t words; /* words looked at */
    uint32_t n;     /* candidates taken: left[] or right[] */
    bool fresh;     /* bits is not screened yet (alive, accepting a seed's datacenter) */
    bool ended;     /* the partition's or the seed's skill edge is reached */
} side_scan;

struct gf_mt_exact {
    xc left[SIDE], right[SIDE]; /* candidates below / above the seed, nearest first */
    side_scan ls, rs;
    const xc *cand[2 * SIDE]; /* one datacenter's: below the seed by skill, highest first,
                                 then the others, lowest first (for_dc) */
    keyed by_end[2 * SIDE], by_low[2 * SIDE], tmp[2 * SIDE];
    /* Per datacenter: tickets in by party size (the sweep's hi), those tolerating lo
     * (lcnt), and their players with the seed's. */
    uint32_t *cnt, *lcnt; /* [ndc][stride] */
    uint32_t lplayers[GF_MATCH_MAX_DCS];
    uint32_t stride; /* the largest team size of the tick's partitions, + 1 */
    uint32_t ndc;
    uint64_t *cls;   /* [words][CLASSES]: ranks of the word by party size class ... */
    uint64_t *built; /* [words bits]: ... once built */
    size_t words;
    uint32_t *blk; /* [blocks][ndc][CLASSES]: unmatched ranks of a block of BLOCK_WORDS
                      words accepting d, by class (kept by gf_mt_exact_take) */
    size_t blocks;
    int64_t budget; /* steps left in the tick */
    int64_t narrow; /* once a group is found: steps left to look for a narrower one */
    bool cut;       /* the current search hit a bound */
};

static uint32_t class_of(uint32_t size)
{
    return (size < CLASSES ? size : CLASSES) - 1;
}

/* Rank r joins (+1) or leaves (-1) its block's counts. */
static void block_count(const gf_mt_ctx *c, gf_mt_exact *x, uint32_t r, int sign)
{
    const gf_mt_hot *k = &c->hot[r];
    uint32_t *at = &x->blk[((size_t)(r >> 6) / BLOCK_WORDS * x->ndc) * CLASSES + class_of(k->size)];
    for (uint32_t dm = k->dcmask; dm; dm &= dm - 1)
        at[__builtin_ctz(dm) * CLASSES] += (uint32_t)sign;
}

gf_err gf_mt_exact_create(gf_mt_ctx *c, gf_mt_reach *rc, gf_mt_exact **out)
{
    gf_err err = gf_mt_reach_acc_ready(c, rc);
    if (err != GF_OK)
        return err;
    gf_mt_exact *x = gf_mt_alloc(&c->mem, 1, sizeof *x);
    if (!x)
        return GF_ERR_NOMEM;
    x->words = c->alive_words;
    x->stride = 2;
    for (uint32_t i = 0; i < c->nparts; i++)
        x->stride = c->parts[i].team_size + 1u > x->stride ? c->parts[i].team_size + 1u : x->stride;
    x->cls = gf_mt_alloc(&c->mem, x->words * CLASSES, sizeof *x->cls);
    x->built = gf_mt_zalloc(&c->mem, (x->words + 63) / 64, sizeof *x->built);
    x->cnt = gf_mt_alloc(&c->mem, (size_t)c->ndc * x->stride, sizeof *x->cnt);
    x->lcnt = gf_mt_alloc(&c->mem, (size_t)c->ndc * x->stride, sizeof *x->lcnt);
    x->ndc = c->ndc;
    x->blocks = (x->words + BLOCK_WORDS - 1) / BLOCK_WORDS;
    x->blk = gf_mt_zalloc(&c->mem, x->blocks * x->ndc * CLASSES, sizeof *x->blk);
    x->budget = (int64_t)STEPS_PER_TICKET * c->nv + STEPS_MIN;
    *out = x;
    if (!x->cls || !x->built || !x->cnt || !x->lcnt || !x->blk) {
        gf_mt_exact_free(c, x);
        *out = NULL;
        return GF_ERR_NOMEM;
    }
    /* The unmatched ranks so far, counted once; matches take theirs off (gf_mt_exact_take). */
    for (size_t w = 0; w < x->words; w++) {
        for (uint64_t m = c->alive[w]; m; m &= m - 1)
            block_count(c, x, (uint32_t)(w << 6) + (uint32_t)__builtin_ctzll(m), 1);
    }
    x->budget -= (int64_t)c->nv / 8; /* about what that cost */
    return GF_OK;
}

void gf_mt_exact_take(const gf_mt_ctx *c, gf_mt_exact *x, uint32_t r)
{
    if (x)
        block_count(c, x, r, -1);
}

void gf_mt_exact_free(gf_mt_ctx *c, gf_mt_exact *x)
{
    if (!x)
        return;
    gf_mt_free(&c->mem, x->blk, x->blocks * x->ndc * CLASSES, sizeof *x->blk);
    gf_mt_free(&c->mem, x->cnt, (size_t)x->ndc * x->stride, sizeof *x->cnt);
    gf_mt_free(&c->mem, x->lcnt, (size_t)x->ndc * x->stride, sizeof *x->lcnt);
    gf_mt_free(&c->mem, x->cls, x->words * CLASSES, sizeof *x->cls);
    gf_mt_free(&c->mem, x->built, (x->words + 63) / 64, sizeof *x->built);
    gf_mt_free(&c->mem, x, 1, sizeof *x);
}

/* Word `at`'s ranks by party size class (1..CLASSES - 1, then CLASSES and more), built on
 * first read (sizes do not change during the tick). */
static const uint64_t *word_cls(const gf_mt_ctx *c, gf_mt_exact *x, size_t at)
{
    uint64_t *cls = &x->cls[at * CLASSES];
    if ((x->built[at >> 6] >> (at & 63)) & 1)
        return cls;
    memset(cls, 0, CLASSES * sizeof *cls);
    uint32_t end = (at + 1) << 6 <= c->nv ? 64 : c->nv & 63;
    for (uint32_t b = 0; b < end; b++) {
        uint32_t size = c->hot[(at << 6) + b].size;
        cls[class_of(size)] |= 1ull << b;
    }
    x->built[at >> 6] |= 1ull << (at & 63);
    return cls;
}

/* The shape to fill around the seed. */
typedef struct fill {
    uint32_t teams, ts, players, z; /* z: the seed's players */
    bool two;                       /* two teams of at most 63: the bit-set test */
} fill;

/* ---- fit --------------------------------------------------------------------------- */

static bool fit_two(const fill *f, const uint32_t *cnt)
{
    uint64_t reach[64] = {0}; /* reach[a] bit b: parties can fill a of team A, b of B */
    uint64_t below = (2ull << f->ts) - 1;
    reach[f->z > 1 ? f->z : 0] = 1;
    for (uint32_t s = 2; s <= f->ts; s++) {
        for (uint32_t k = cnt[s] < 2 * f->ts / s ? cnt[s] : 2 * f->ts / s; k > 0; k--) {
            for (uint32_t a = f->ts + 1; a-- > 0;)
                reach[a] = (reach[a] | reach[a] << s | (a >= s ? reach[a - s] : 0)) & below;
        }
    }
    /* Solo players make up the rest: 2 ts - a - b of them, the seed among them if solo. */
    int64_t solo = f->z == 1, room = 2 * (int64_t)f->ts - solo;
    for (uint32_t a = 0; a <= f->ts; a++) {
        int64_t hib = room - a < (int64_t)f->ts ? room - a : (int64_t)f->ts;
        int64_t lob = room - a - (int64_t)cnt[1] > 0 ? room - a - (int64_t)cnt[1] : 0;
        if (reach[a] && lob <= hib && (reach[a] & ((2ull << hib) - 1) & ~((1ull << lob) - 1)) != 0)
            return true;
    }
    return false;
}

/* Parties of sizes s..2 chosen largest first on top of by[] (party players so far);
 * solo players fill the rest. */
static bool fit_any(gf_mt_exact *x, const fill *f, const uint32_t *cnt, uint32_t *by, uint32_t s,
                    uint32_t party, int64_t *nodes)
{
    uint32_t solo = f->z == 1;
    if (party + solo > f->players)
        return false;
    if (s < 2)
        return f->players - party - solo <= cnt[1];
    uint32_t most = 0;
    for (uint32_t t = 2; t <= s; t++)
        most += t * cnt[t];
    if (party + most + cnt[1] + solo < f->players)
        return false;
    if (--*nodes < 0) {
        x->cut = true;
        return false;
    }
    uint32_t k = cnt[s] < (f->players - party) / s ? cnt[s] : (f->players - party) / s;
    for (;; k--) {
        by[s] += k;
        bool ok = (k == 0 || gf_match_pack_feasible(by, f->teams, f->ts)) &&
                  fit_any(x, f, cnt, by, s - 1, party + k * s, nodes);
        by[s] -= k;
        if (ok || k == 0)
            return ok;
    }
}

/* Can tickets with these counts per party size (the seed not counted) fill the shape
 * around the seed? */
static bool fit(gf_mt_exact *x, const fill *f, const uint32_t *cnt)
{
    if (f->ts == 1)
        return cnt[1] + 1 >= f->players;
    if (f->two)
        return fit_two(f, cnt);
    uint32_t by[GF_MATCH_MAX_TEAM_SIZE + 1] = {0};
    by[f->z] = f->z > 1;
    int64_t nodes = FILL_NODES;
    return fit_any(x, f, cnt, by, f->ts, f->z > 1 ? f->z : 0, &nodes);
}

/* ---- candidates ------------------------------------------------------------------------ */

/* The ranks of p from the seed's skill edge `edge` on (right: the last one at or below
 * it; left: the first at or above it), by binary search (rank order is skill order up to
 * truncated keys: the slack in the edge covers that). */
static uint32_t edge_rank(const gf_mt_ctx *c, const gf_mt_part *p, double edge, bool right)
{
    uint32_t a = p->first, b = p->first + p->count;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        if (right ? c->hot[mid].skill <= edge : c->hot[mid].skill < edge)
            a = mid + 1;
        else
            b = mid;
    }
    return right ? (a > p->first ? a - 1 : p->first) : a;
}

/* Can the shape be filled at all from the seed's window? A necessary test on whole words:
 * which party sizes occur among the unmatched tickets between the seed's skill edges
 * that accept one of its datacenters (their own gaps unchecked: a superset of the
 * candidates), counted as many as a match could use. When even that cannot fill the
 * shape, the seed has no group however far the search would look: the usual reason a
 * seed at its caps stays unmatched (a party whose team needs a solo player, and none is
 * left). Stops as soon as every size is seen. */
static bool window_may_fill(gf_mt_ctx *c, gf_mt_exact *x, gf_mt_reach *rc, uint32_t s,
                            const gf_mt_part *p, const fill *f)
{
    const gf_mt_hot *sk = &c->hot[s];
    uint32_t lo = p->first, hi = p->first + p->count - 1;
    if (!p->by_time && isfinite(sk->gap)) {
        double slack = (fabs(sk->skill) + sk->gap + 1) * 0x1p-30;
        lo = edge_rank(c, p, sk->skill - sk->gap - slack, false);
        hi = edge_rank(c, p, sk->skill + sk->gap + slack, true);
    }
    uint32_t classes = f->ts < CLASSES ? f->ts : CLASSES, want = (1u << classes) - 1, seen = 0;
    for (size_t w = lo >> 6; w <= hi >> 6 && seen != want; w++) {
        size_t b = w / BLOCK_WORDS;
        /* A whole block inside the window, without the seed: its counts say at once. */
        if (w % BLOCK_WORDS == 0 && w + BLOCK_WORDS - 1 <= hi >> 6 && w > lo >> 6 &&
            b != (s >> 6) / BLOCK_WORDS) {
            const uint32_t *at = &x->blk[b * x->ndc * CLASSES];
            for (uint32_t dm = sk->dcmask; dm; dm &= dm - 1) {
                for (uint32_t k = 0; k < classes; k++)
                    seen |= (uint32_t)(at[__builtin_ctz(dm) * CLASSES + k] != 0) << k;
            }
            w += BLOCK_WORDS - 1;
            x->budget--;
            continue;
        }
        uint64_t m = c->alive[w];
        if (w == lo >> 6)
            m &= ~0ull << (lo & 63);
        if (w == hi >> 6)
            m &= ~0ull >> (63 - (hi & 63));
        const uint64_t *acc = gf_mt_reach_acc(c, rc, w), *cls = word_cls(c, x, w);
        uint64_t any = 0;
        for (uint32_t dm = sk->dcmask; dm; dm &= dm - 1)
            any |= acc[__builtin_ctz(dm)];
        m &= any;
        if (w == s >> 6)
            m &= ~(1ull << (s & 63)); /* the seed counts as the seed */
        for (uint32_t k = 0; k < classes; k++)
            seen |= (uint32_t)((m & cls[k]) != 0) << k;
        x->budget--;
    }
    uint32_t cnt[GF_MATCH_MAX_TEAM_SIZE + 1] = {0};
    for (uint32_t size = 1; size <= f->ts; size++) {
        cnt[size] = (seen >> class_of(size)) & 1 ? f->players / size : 0;
    }
    return fit(x, f, cnt);
}

static void side_open(const gf_mt_ctx *c, uint32_t s, const gf_mt_part *p, bool right, side_scan *t)
{
    uint32_t lo = p->first, hi = p->first + p->count - 1;
    *t = (side_scan){.ended = right ? s == hi : s == lo};
    if (t->ended)
        return;
    uint32_t from = right ? s + 1 : s - 1;
    t->w = from >> 6;
    t->bits = right ? ~0ull << (from & 63) : ~0ull >> (63 - (from & 63));
    t->fresh = true;
    (void)c;
}

/* Takes one side's candidates, nearest first, until it holds `upto` of them, into out[]
 * from t->n on. */
static void side_take(gf_mt_ctx *c, gf_mt_exact *x, gf_mt_reach *rc, uint32_t s,
                      const gf_mt_part *p, bool right, side_scan *t, xc *out, uint32_t upto)
{
    const gf_mt_hot *sk = &c->hot[s];
    uint32_t lo = p->first, hi = p->first + p->count - 1;
    size_t stop = (right ? hi : lo) >> 6;
    /* The skill edge, with room for the rank order's truncated keys (layout.c): skills
     * within ~2^-32 of each other may be out of order. */
    double edge = right ? sk->skill + sk->gap : sk->skill - sk->gap;
    edge += (right ? 1 : -1) * (fabs(edge) + 1) * 0x1p-30;
    double key = p->by_time ? (double)c->cold[s].queued : sk->skill;
    while (!t->ended && t->n < upto) {
        if (!t->bits) {
            if (t->w == stop) {
                t->ended = true;
                break;
            }
            if (t->words + 1 >= WORDS || x->budget < 0)
                break;
            t->w = right ? t->w + 1 : t->w - 1;
            t->bits = ~0ull;
            t->fresh = true;
        }
        if (t->fresh) {
            const uint64_t *acc = gf_mt_reach_acc(c, rc, t->w);
            uint64_t any = 0;
            for (uint32_t dm = sk->dcmask; dm; dm &= dm - 1)
                any |= acc[__builtin_ctz(dm)];
            t->bits &= c->alive[t->w] & any;
            t->fresh = false;
            t->words++;
            x->budget--;
            continue;
        }
        uint32_t b =
            right ? (uint32_t)__builtin_ctzll(t->bits) : 63 - (uint32_t)__builtin_clzll(t->bits);
        uint32_t r = (uint32_t)(t->w << 6) + b;
        t->bits &= ~(1ull << b);
        x->budget--;
        const gf_mt_hot *k = &c->hot[r];
        if ((right ? r > hi : r < lo) ||
            (!p->by_time && (right ? k->skill > edge : k->skill < edge))) {
            t->ended = true;
            break;
        }
        double dd = fabs(sk->skill - k->skill);
        if (dd > sk->gap || dd > k->gap ||
            (p->attrs && !gf_mt_attrs_equal(c, p, c->cold[s].in, c->cold[r].in)))
            continue;
        double kk = p->by_time ? (double)c->cold[r].queued : k->skill;
        xc v = {.x = k->skill,
                .a = k->skill - k->gap,
                .b = k->skill + k->gap,
                .dist = fabs(kk - key),
                .rank = r,
                .size = k->size,
                .dcmask = k->dcmask & sk->dcmask};
        /* Kept in skill order, nearest first (rank order is that up to truncated keys:
         * an insertion moves a candidate a step or two at most). */
        uint32_t j = t->n++;
        for (; j > 0 && (right ? out[j - 1].x > v.x : out[j - 1].x < v.x); j--)
            out[j] = out[j - 1];
        out[j] = v;
    }
    x->cut |= !t->ended;
}

/* The candidates accepting a datacenter of `mask` into x->cand: below the seed's skill
 * xs, highest first, then the others, lowest first; *nl: how many below. Returns their
 * count. */
static uint32_t order_cands(gf_mt_exact *x, uint32_t mask, double xs, uint32_t *nl)
{
    uint32_t n = 0;
    /* right[] may hold skills a hair below xs (truncated keys), left[] ones at xs. */
    for (uint32_t i = 0; i < x->ls.n; i++) {
        if ((x->left[i].dcmask & mask) && x->left[i].x < xs)
            x->cand[n++] = &x->left[i];
    }
    for (uint32_t i = x->rs.n; i-- > 0;) {
        if ((x->right[i].dcmask & mask) && x->right[i].x < xs) {
            uint32_t j = n++;
            for (; j > 0 && x->cand[j - 1]->x < x->right[i].x; j--)
                x->cand[j] = x->cand[j - 1];
            x->cand[j] = &x->right[i];
        }
    }
    *nl = n;
    for (uint32_t i = x->ls.n; i-- > 0;) {
        if ((x->left[i].dcmask & mask) && x->left[i].x >= xs) {
            uint32_t j = n++;
            for (; j > *nl && x->cand[j - 1]->x > x->left[i].x; j--)
                x->cand[j] = x->cand[j - 1];
            x->cand[j] = &x->left[i];
        }
    }
    for (uint32_t i = 0; i < x->rs.n; i++) {
        if ((x->right[i].dcmask & mask) && x->right[i].x >= xs)
            x->cand[n++] = &x->right[i];
    }
    return n;
}

/* ---- the sweep -------------------------------------------------------------------------- */

typedef struct best {
    double lo, hi, width;
    uint32_t dc;
} best;

/* Sorts a[0..n) by key (merge sort through tmp; stable; nothing to do when sorted). */
static void sort_keyed(keyed *a, keyed *tmp, uint32_t n)
{
    uint32_t in_order = 1;
    while (in_order < n && a[in_order - 1].key <= a[in_order].key)
        in_order++;
    for (uint32_t width = 1; in_order < n && width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            uint32_t mid = lo + width < n ? lo + width : n,
                     hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = a[j].key < a[i].key ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
}

static bool fits_range(const xc *k, double lo, double hi, double xs)
{
    return k->a <= lo && lo <= k->x && (k->x > xs ? k->x : xs) <= hi && hi <= k->b;
}

/* Adds k (sign +1) to, or takes it (-1) from, the counts of each datacenter of `mask` it
 * accepts; returns those whose count changed within what a match can use (the fit test
 * reads no more: elsewhere its answer stands). */
static uint32_t count(uint32_t *cnt, uint32_t stride, uint32_t *players, const fill *f, const xc *k,
                      uint32_t mask, int sign)
{
    uint32_t changed = 0, cap = k->size == 1 ? f->players - 1 : f->players / k->size;
    for (uint32_t dm = k->dcmask & mask; dm; dm &= dm - 1) {
        uint32_t d = (uint32_t)__builtin_ctz(dm);
        uint32_t *at = &cnt[d * stride + k->size];
        *at += (uint32_t)sign;
        if (players)
            players[d] += (uint32_t)sign * k->size;
        changed |= (uint32_t)(*at + (sign < 0) <= cap) << d;
    }
    return changed;
}

/* The narrowest range holding a group around the seed (skill xs, its own highest hi bs)
 * among the m candidates (every datacenter of `active` at once), into *bw if narrower
 * than it. */
static void sweep(gf_mt_exact *x, const fill *f, uint32_t nl, uint32_t m, double xs, double bs,
                  uint32_t active, best *bw)
{
    const xc *const *cd = x->cand;
    uint32_t *cnt = x->cnt, *lcnt = x->lcnt, st = x->stride;
    uint32_t *lplayers = x->lplayers;
    for (uint32_t n = 0; n < m; n++) { /* by skill: the keys come nearly sorted */
        uint32_t i = n < nl ? nl - 1 - n : n;
        x->by_end[n] = (keyed){cd[i]->b, i};
        x->by_low[n] = (keyed){cd[i]->a, i};
    }
    sort_keyed(x->by_end, x->tmp, m);
    sort_keyed(x->by_low, x->tmp, m);
    x->budget -= 2 * m;
    for (uint32_t dm = active; dm; dm &= dm - 1) {
        uint32_t d = (uint32_t)__builtin_ctz(dm);
        memset(&lcnt[d * st], 0, (f->ts + 1) * sizeof *lcnt);
        lplayers[d] = f->z;
    }
    /* lcnt: the tickets tolerating lo, whatever hi, kept as lo goes down: those above the
     * seed to begin with; one below joins when lo reaches it, and any leaves once lo is
     * under its x - g (then its x is above lo, so it had joined). Where they cannot fill
     * the shape, no hi can: that lo is swept only for the datacenters where they can. */
    for (uint32_t i = nl; i < m; i++)
        (void)count(lcnt, st, lplayers, f, cd[i], active, 1);
    uint32_t pass = 0, dirty = active;
    for (uint32_t j = 0, low = m; j <= nl && x->budget >= 0 && x->narrow >= 0; j++) {
        double lo = j == 0 ? xs : cd[j - 1]->x;
        if (xs - lo >= bw->width)
            break;
        if (j > 0)
            dirty |= count(lcnt, st, lplayers, f, cd[j - 1], active, 1);
        for (; low > 0 && x->by_low[low - 1].key > lo; low--)
            dirty |= count(lcnt, st, lplayers, f, cd[x->by_low[low - 1].i], active, -1);
        for (uint32_t dm = dirty; dm; dm &= dm - 1) {
            uint32_t d = (uint32_t)__builtin_ctz(dm);
            bool ok = lplayers[d] >= f->players && fit(x, f, &lcnt[d * st]);
            pass = (pass & ~(1u << d)) | (uint32_t)ok << d;
            x->budget--;
        }
        dirty = 0;
        if (!pass)
            continue;
        for (uint32_t dm = pass; dm; dm &= dm - 1)
            memset(&cnt[__builtin_ctz(dm) * st], 0, (f->ts + 1) * sizeof *cnt);
        /* Joins in order of the skill they join at: the seed's for cand[0, nl), then
         * cand[nl, m) by skill. Leaves in order of x + g. */
        uint32_t i = 0, e = 0;
        bool hit = false;
        while (i < m && !hit) {
            double h = i < nl ? xs : cd[i]->x;
            if (h > bs || h - lo >= bw->width)
                break;
            for (; e < m && x->by_end[e].key < h; e++) {
                const xc *k = cd[x->by_end[e].i];
                if (k->a <= lo && lo <= k->x)
                    (void)count(cnt, st, NULL, f, k, pass, -1);
            }
            uint32_t grew = 0;
            for (; i < m && (i < nl ? xs : cd[i]->x) == h; i++) {
                const xc *k = cd[i];
                if (k->a <= lo && lo <= k->x && h <= k->b)
                    grew |= count(cnt, st, NULL, f, k, pass, 1);
            }
            for (uint32_t dm = grew; dm && !hit; dm &= dm - 1) {
                uint32_t d = (uint32_t)__builtin_ctz(dm);
                x->budget--;
                if (fit(x, f, &cnt[d * st])) {
                    if (bw->dc == GF_MT_NONE) /* narrowing may cost this much from now */
                        x->narrow = NARROW * (int64_t)m;
                    *bw = (best){.lo = lo, .hi = h, .width = h - lo, .dc = d};
                    hit = true;
                }
            }
        }
        x->budget -= i + e;
        if (bw->dc != GF_MT_NONE)
            x->narrow -= i + e;
    }
}

/* ---- the group -------------------------------------------------------------------------- */

/* The members at the range found: the parties of a minimal fitting count vector and the
 * solo players it needs, nearest to the seed first, added to the group. */
static bool build(gf_mt_ctx *c, gf_mt_exact *x, const fill *f, uint32_t m, const best *bw,
                  double xs, uint32_t s, const gf_mt_shape *sh, gf_mt_grp *g, bool by_time)
{
    uint32_t cnt[GF_MATCH_MAX_TEAM_SIZE + 1] = {0}, n = 0;
    for (uint32_t i = 0; i < m; i++) {
        if (by_time || fits_range(x->cand[i], bw->lo, bw->hi, xs)) {
            x->by_end[n++] = (keyed){x->cand[i]->dist, i};
            cnt[x->cand[i]->size]++;
        }
    }
    for (bool less = true; less;) { /* down to a minimal vector */
        less = false;
        for (uint32_t sz = 2; sz <= f->ts; sz++) {
            while (cnt[sz] > 0) {
                cnt[sz]--;
                if (fit(x, f, cnt)) {
                    less = true;
                    continue;
                }
                cnt[sz]++;
                break;
            }
        }
    }
    uint32_t party = f->z > 1 ? f->z : 0;
    for (uint32_t sz = 2; sz <= f->ts; sz++)
        party += sz * cnt[sz];
    cnt[1] = f->players - party - (f->z == 1);
    sort_keyed(x->by_end, x->tmp, n); /* nearest first; ties in candidate order */
    gf_mt_grp_init(g, &c->hot[s], s, sh, c->hot[s].dcmask);
    for (uint32_t pass = 0; pass < 2; pass++) { /* parties first, then solo players */
        for (uint32_t i = 0; i < n; i++) {
            const xc *k = x->cand[x->by_end[i].i];
            if ((k->size > 1) != (pass == 0) || cnt[k->size] == 0)
                continue;
            if (!gf_mt_grp_offer(g, &c->hot[k->rank], k->rank, sh))
                return false; /* broken invariant: every fitting set is valid */
            cnt[k->size]--;
        }
    }
    return g->st.players == f->players;
}

bool gf_mt_exact_group(gf_mt_ctx *c, gf_mt_exact *x, gf_mt_reach *rc, uint32_t s,
                       const gf_mt_part *p, const gf_mt_shape *sh, gf_mt_grp *g)
{
    const gf_mt_hot *sk = &c->hot[s];
    gf_match_stats *st = &c->res->stats;
    fill f = {sh->teams, sh->team_size, sh->players, sk->size, sh->two};
    best bw = {.width = INFINITY, .dc = GF_MT_NONE};
    int64_t start = x->budget;
    uint32_t nl = 0, m = 0;
    bool found = false;
    st->exact_searches++;
    if (x->budget < 0) { /* the tick's budget is spent */
        st->exact_cut++;
        return false;
    }
    x->narrow = INT64_MAX;
    if (!window_may_fill(c, x, rc, s, p, &f)) {
        st->exact_steps += (size_t)(start - x->budget);
        return false; /* proven: nothing to search */
    }
    side_open(c, s, p, false, &x->ls);
    side_open(c, s, p, true, &x->rs);
    /* Most seeds have a group among their nearest candidates: look there first, and
     * further only if a bound, not the end of the candidates, stopped that look. */
    for (uint32_t side = FIRST_SIDE;; side *= SIDE_GROWTH) {
        x->cut = false;
        side_take(c, x, rc, s, p, false, &x->ls, x->left, side);
        side_take(c, x, rc, s, p, true, &x->rs, x->right, side);
        m = order_cands(x, sk->dcmask, sk->skill, &nl);
        /* The datacenters whose candidates could fill the shape at all. */
        uint32_t active = 0;
        for (uint32_t dm = sk->dcmask; dm; dm &= dm - 1) {
            uint32_t d = (uint32_t)__builtin_ctz(dm);
            memset(&x->lcnt[d * x->stride], 0, (f.ts + 1) * sizeof *x->lcnt);
            x->lplayers[d] = f.z;
        }
        for (uint32_t i = 0; i < m; i++)
            (void)count(x->lcnt, x->stride, x->lplayers, &f, x->cand[i], sk->dcmask, 1);
        for (uint32_t dm = sk->dcmask; dm; dm &= dm - 1) {
            uint32_t d = (uint32_t)__builtin_ctz(dm);
            if (x->lplayers[d] >= f.players && fit(x, &f, &x->lcnt[d * x->stride]))
                active |= 1u << d;
        }
        x->budget -= m;
        if (active && p->by_time) /* nobody limits skill: every candidate fits */
            bw = (best){.width = 0, .dc = (uint32_t)__builtin_ctz(active)};
        else if (active)
            sweep(x, &f, nl, m, sk->skill, sk->skill + sk->gap, active, &bw);
        if (bw.dc != GF_MT_NONE || !x->cut || side >= SIDE || x->budget < 0)
            break;
    }
    if (bw.dc != GF_MT_NONE) {
        m = order_cands(x, 1u << bw.dc, sk->skill, &nl);
        found = build(c, x, &f, m, &bw, sk->skill, s, sh, g, p->by_time);
    }
    st->exact_cut += !found && (x->cut || x->budget < 0);
    st->exact_matches += found;
    st->exact_steps += (size_t)(start - x->budget);
    return found;
}
