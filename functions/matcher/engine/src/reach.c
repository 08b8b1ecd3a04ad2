/*
 * reach.c — could a seed's walk fill its group at all? An exact test that lets the
 * search skip the walks that cannot.
 *
 * Design notes:
 *  - A walk (walk.c) looks at W, the `budget` unmatched tickets closest to its seed
 *    (fewer when its partition, or a side's skill edge, ends first), and only a ticket of
 *    W that accepts one of the seed's datacenters can join. Every member of a full group
 *    accepts the group's datacenter, one of the seed's. So if, for every datacenter d
 *    the group may use, the players of W who accept d (the seed among them) fall short
 *    of the shape, the greedy group cannot fill and the walk would end empty after
 *    seeing all of W. The search then skips it and counts W as seen: nothing changes,
 *    the statistics included (a seed at its caps still gets the exact search, which
 *    looks further than W). In a 16-player free-for-all at 10k tickets about half the
 *    walks are such, each looking at the full budget of 128 tickets, mostly at tickets
 *    that do not accept the seed's datacenters.
 *  - W is found without visiting its tickets. Each side of the seed is scanned as whole
 *    words of alive[] (bits and running counts), the nearer side first, so the i-th
 *    ticket of a side is a bit select away. Where keys (skill, or queue time in FIFO
 *    partitions) never decrease with the rank, the distance to the seed grows along each
 *    side, the walk's merge of the two sides (nearest first, ties to the left) is a
 *    sorted merge, and the number of left tickets in W is found by binary search; the
 *    scan goes on while W may reach past it. A side ends with its first ticket past the
 *    seed's skill edge (the walk still counts it): keys are monotone, so that is where
 *    a binary search on ranks says. The rank order's keys are truncated (layout.c), so
 *    two skills within ~1e-10 of each other may be out of order; such pairs are marked
 *    (inv) and a test that would read keys across one gives up. So does one whose sides
 *    span more than MAX_WORDS words of tickets, or MAX_SCAN words in all. Giving up only
 *    means the walk runs.
 *  - Counting is by words too: the players of a word's unmatched ranks accepting d are
 *    remembered (cnt) until a rank of the word is matched. Where every ticket is one
 *    player (free-for-all shapes) and the word still holds more than FEW of them, they
 *    are the bits of alive & acc[d] (acc: per word and datacenter, the ranks accepting
 *    it, built the first time a test needs it); otherwise they are counted rank by rank.
 *    The machine baseline has no popcount instruction; it is done in registers.
 *  - Cost: a test reads a few words per side where the pool is dense and a few dozen
 *    where matches have thinned it; a failing walk reads 128 tickets; a walk that fills
 *    quickly, a few dozen. So the test is only made where it tends to pay: in shapes of
 *    REACH_PLAYERS players or more (small groups seldom fail for want of datacenters), for
 *    seeds accepting at most MAX_DCS datacenters (more, and some datacenter nearly always
 *    has enough takers), when the three words around the seed do not already hold a
 *    group's worth of players for one of its datacenters (the walk then usually fills),
 *    and while the tests have recently been sparing PAY tickets or more on average
 *    (otherwise one chance in SAMPLE is still tested, to notice when they pay again: early
 *    in a tick the seeds are old and their walks seldom fail). All of these only weigh
 *    cost: the answer is exact either way.
 * One thread owns a gf_mt_reach; the search builds it and keeps it current.
 */
#include <math.h>
#include <string.h>

#include "walk.h"

#define MAX_WORDS     64 /* words holding tickets a side may span */
#define MAX_SCAN      64 /* words scanned in all */
#define REACH_PLAYERS 12 /* smallest shape tested */
#define MAX_DCS       2  /* seeds accepting more datacenters are not tested */
#define PAY           24 /* tickets tests must spare on average to go on */
#define SAMPLE        8
#define FEW           12 /* unmatched ranks in a word counted one by one */

static uint32_t popcount64(uint64_t x)
{
    x -= (x >> 1) & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
}

/* The position of the k-th (from 0) set bit of x, which has more than k: the byte that
 * holds it from the bytes' running counts (compared all at once), then a few steps
 * within the byte. */
static uint32_t select64(uint64_t x, uint32_t k)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t b = x - ((x >> 1) & 0x5555555555555555ull);
    b = (b & 0x3333333333333333ull) + ((b >> 2) & 0x3333333333333333ull);
    b = (b + (b >> 4)) & 0x0f0f0f0f0f0f0f0full;
    uint64_t sums = b * ones; /* byte i: ones in bytes 0..i (at most 64) */
    /* High bit of byte i set iff sums_i <= k: no borrow crosses a byte (k, sums < 128). */
    uint64_t le = (((uint64_t)k * ones | high) - sums) & high;
    uint32_t byte = (uint32_t)(((le >> 7) * ones) >> 56);
    uint32_t before = (uint32_t)(((sums << 8) >> (8 * byte)) & 0xff);
    uint32_t v = (uint32_t)(x >> (8 * byte)) & 0xff;
    for (uint32_t r = k - before; r > 0; r--)
        v &= v - 1;
    return 8 * byte + (uint32_t)__builtin_ctz(v);
}

gf_err gf_mt_reach_init(gf_mt_ctx *c, gf_mt_reach *rc)
{
    size_t words = c->alive_words;
    memset(rc, 0, sizeof *rc);
    for (uint32_t p = 0; p < c->nparts; p++)
        rc->on |= (uint32_t)c->parts[p].teams * c->parts[p].team_size >= REACH_PLAYERS;
    rc->ndc = c->ndc;
    rc->words = words;
    if (!rc->on)
        return GF_OK;
    rc->cnt = gf_mt_alloc(&c->mem, words * rc->ndc, sizeof *rc->cnt);
    rc->fresh = gf_mt_zalloc(&c->mem, words, sizeof *rc->fresh);
    rc->left = gf_mt_alloc(&c->mem, words, sizeof *rc->left);
    rc->inv = gf_mt_zalloc(&c->mem, words, sizeof *rc->inv);
    if (!rc->cnt || !rc->fresh || !rc->left || !rc->inv || gf_mt_reach_acc_ready(c, rc) != GF_OK) {
        gf_mt_reach_free(c, rc);
        return GF_ERR_NOMEM;
    }
    memset(rc->left, 64, words);
    if (c->nv & 63)
        rc->left[words - 1] = (uint8_t)(c->nv & 63);
    rc->solo = true;
    for (uint32_t p = 0; p < c->nparts; p++) {
        const gf_mt_part *pt = &c->parts[p];
        rc->solo &= pt->team_size == 1; /* then every ticket is one player */
        if (pt->by_time)
            continue;
        /* Skill keys above the next rank's in the same partition. */
        for (uint32_t r = pt->first; r + 1 < pt->first + pt->count; r++) {
            if (c->hot[r].skill > c->hot[r + 1].skill) {
                rc->inv[r >> 6] |= 1ull << (r & 63);
                rc->any_inv = true;
            }
        }
    }
    return GF_OK;
}

void gf_mt_reach_free(gf_mt_ctx *c, gf_mt_reach *rc)
{
    gf_mt_free(&c->mem, rc->cnt, rc->words * rc->ndc, sizeof *rc->cnt);
    gf_mt_free(&c->mem, rc->fresh, rc->words, sizeof *rc->fresh);
    gf_mt_free(&c->mem, rc->left, rc->words, sizeof *rc->left);
    gf_mt_free(&c->mem, rc->inv, rc->words, sizeof *rc->inv);
    gf_mt_free(&c->mem, rc->acc, rc->words * rc->ndc, sizeof *rc->acc);
    gf_mt_free(&c->mem, rc->built, (rc->words + 63) / 64, sizeof *rc->built);
    memset(rc, 0, sizeof *rc);
}

void gf_mt_reach_take(gf_mt_reach *rc, uint32_t r)
{
    if (!rc->on)
        return;
    rc->left[r >> 6]--;
    rc->fresh[r >> 6] = 0;
}

typedef struct reach_walk {
    const gf_mt_ctx *c;
    gf_mt_reach *rc;
    double key, lo_edge, hi_edge;
    uint32_t lo, hi; /* the partition's ranks: [lo, hi) */
    bool by_time;
} reach_walk;

static inline double key_of(const reach_walk *w, uint32_t r)
{
    return w->by_time ? (double)w->c->cold[r].queued : w->c->hot[r].skill;
}

/* One side of the seed, as the words of alive[] scanned so far, nearest first. */
typedef struct side_tab {
    uint32_t word[MAX_WORDS];
    uint64_t bits[MAX_WORDS];    /* its tickets in that word */
    uint32_t cum[MAX_WORDS + 1]; /* its tickets in the words before */
    uint32_t nw, len;            /* words holding tickets; tickets */
    bool right;
    bool ended;     /* all of the side is scanned (partition edge, or its ticket past the
                       skill edge taken) */
    bool past;      /* the ranks not scanned yet are past the skill edge */
    size_t at, end; /* the next word to scan, the partition's last word this way */
    uint32_t front; /* the nearest rank not scanned (while not ended) */
    uint32_t reach; /* the farthest rank whose key may have been read */
    double dist;    /* its distance to the seed, +INFINITY once ended: no ticket of the
                       side not scanned yet is nearer */
} side_tab;

static inline double dist_of(const reach_walk *w, const side_tab *t, uint32_t r)
{
    return t->right ? key_of(w, r) - w->key : w->key - key_of(w, r);
}

/* Is key k past the seed's skill edge on this side? (Never in FIFO partitions.) */
static inline bool past_key(const reach_walk *w, const side_tab *t, double k)
{
    return !w->by_time && (t->right ? k > w->hi_edge : k < w->lo_edge);
}

/* Bits of a word from rank position b on, in the side's direction (b included). */
static uint64_t from_bit(const side_tab *t, uint32_t b)
{
    return t->right ? ~0ull << b : ~0ull >> (63 - b);
}

/* Cuts x, the side's tickets in its current word, after its first ticket past the
 * skill edge, if any: keys are monotone (the caller checks), so the ranks past the edge
 * are the far end of the word, found by binary search. True if it cut. */
static bool cut_at_edge(const reach_walk *w, const side_tab *t, uint64_t *x)
{
    uint32_t base = (uint32_t)(t->at << 6);
    uint32_t near =
        t->right ? base + (uint32_t)__builtin_ctzll(*x) : base + 63 - (uint32_t)__builtin_clzll(*x);
    uint32_t far =
        t->right ? base + 63 - (uint32_t)__builtin_clzll(*x) : base + (uint32_t)__builtin_ctzll(*x);
    if (!past_key(w, t, key_of(w, far)))
        return false;
    /* The first rank of [near, far] past the edge, by distance index. */
    uint32_t lo = 0, hi = t->right ? far - near : near - far;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (past_key(w, t, key_of(w, t->right ? near + mid : near - mid)))
            hi = mid;
        else
            lo = mid + 1;
    }
    uint32_t q = (t->right ? near + lo : near - lo) & 63;
    uint64_t beyond = *x & from_bit(t, q);
    /* Keep the tickets before q and the first one at or after it. */
    uint64_t first = t->right ? beyond & (0 - beyond) : 1ull << (63 - __builtin_clzll(beyond));
    *x = (*x & ~from_bit(t, q)) | first;
    return true;
}

/* Scans the side's next word. In skill order the side ends with its first ticket past
 * the seed's edge. The next word's nearest rank is read first: its key bounds the rest
 * of the side (the distance that orders the scan), and if it is not past the edge,
 * neither is anything in this word. */
static void side_step(const reach_walk *w, side_tab *t, uint64_t x)
{
    bool last = t->at == t->end, beyond_past = true;
    uint32_t front = 0;
    double k = 0;
    if (last) {
        x &= t->right ? ~0ull >> (63 - ((w->hi - 1) & 63)) : ~0ull << (w->lo & 63);
        t->reach = t->right ? w->hi - 1 : w->lo;
    } else {
        front = t->right ? (uint32_t)((t->at + 1) << 6) : (uint32_t)((t->at - 1) << 6) + 63;
        k = key_of(w, front);
        beyond_past = past_key(w, t, k);
        t->reach = front;
    }
    if (x) {
        if (t->past) {
            /* All of this word is past the edge: its first ticket ends the side. */
            x = t->right ? x & (0 - x) : 1ull << (63 - __builtin_clzll(x));
            t->ended = true;
        } else if (beyond_past && !w->by_time) {
            t->ended = cut_at_edge(w, t, &x);
        }
        t->word[t->nw] = (uint32_t)t->at;
        t->bits[t->nw] = x;
        t->cum[t->nw + 1] =
            t->cum[t->nw] + (x == w->c->alive[t->at] ? w->rc->left[t->at] : popcount64(x));
        t->nw++;
        t->len = t->cum[t->nw];
    }
    if (last || t->ended) {
        t->ended = true;
        t->dist = INFINITY;
        return;
    }
    t->at = t->right ? t->at + 1 : t->at - 1;
    t->front = front;
    t->dist = t->right ? k - w->key : w->key - k;
    t->past = beyond_past;
}

static void side_open(const reach_walk *w, side_tab *t, uint32_t s, bool right)
{
    t->nw = t->len = 0;
    t->cum[0] = 0;
    t->right = right;
    t->past = false;
    t->ended = right ? s + 1 >= w->hi : s <= w->lo;
    t->dist = INFINITY;
    t->reach = s;
    if (t->ended)
        return;
    t->at = s >> 6;
    t->end = right ? (w->hi - 1) >> 6 : w->lo >> 6;
    uint64_t mine = right ? ~1ull << (s & 63) : (1ull << (s & 63)) - 1;
    side_step(w, t, w->c->alive[t->at] & mine);
}

/* Rank of the side's i-th ticket (i < len). */
static uint32_t side_rank(const side_tab *t, uint32_t i)
{
    uint32_t lo = 0, hi = t->nw - 1; /* the word j with cum[j] <= i < cum[j + 1] */
    while (lo < hi) {
        uint32_t mid = (lo + hi + 1) / 2;
        if (t->cum[mid] <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    uint32_t k = i - t->cum[lo];
    if (!t->right)
        k = t->cum[lo + 1] - t->cum[lo] - 1 - k; /* downwards: from the word's top */
    return (t->word[lo] << 6) + select64(t->bits[lo], k);
}

/* Is any pair of adjacent ranks in [a, b] out of key order? */
static bool out_of_order(const gf_mt_reach *rc, uint32_t a, uint32_t b)
{
    if (!rc->any_inv || b <= a)
        return false;
    uint32_t last = b - 1; /* pairs (r, r + 1) with a <= r < b */
    for (size_t w = a >> 6; w <= last >> 6; w++) {
        uint64_t x = rc->inv[w];
        if (w == a >> 6)
            x &= ~0ull << (a & 63);
        if (w == last >> 6)
            x &= ~0ull >> (63 - (last & 63));
        if (x)
            return true;
    }
    return false;
}

gf_err gf_mt_reach_acc_ready(gf_mt_ctx *c, gf_mt_reach *rc)
{
    if (rc->acc)
        return GF_OK;
    rc->acc = gf_mt_alloc(&c->mem, rc->words * rc->ndc, sizeof *rc->acc);
    rc->built = gf_mt_zalloc(&c->mem, (rc->words + 63) / 64, sizeof *rc->built);
    return rc->acc && rc->built ? GF_OK : GF_ERR_NOMEM;
}

/* Word `at`'s acceptance bits, one word per datacenter: built the first time a test or
 * the exact search reads the word (they do not change during the tick). */
const uint64_t *gf_mt_reach_acc(const gf_mt_ctx *c, gf_mt_reach *rc, size_t at)
{
    uint64_t *acc = &rc->acc[at * rc->ndc];
    if ((rc->built[at >> 6] >> (at & 63)) & 1)
        return acc;
    memset(acc, 0, rc->ndc * sizeof *acc);
    uint32_t end = (at + 1) << 6 <= c->nv ? 64 : c->nv & 63;
    for (uint32_t b = 0; b < end; b++) {
        for (uint32_t m = c->hot[(at << 6) + b].dcmask; m; m &= m - 1)
            acc[__builtin_ctz(m)] |= 1ull << b;
    }
    rc->built[at >> 6] |= 1ull << (at & 63);
    return acc;
}

/* Players of the unmatched ranks of word `at` within bits m who accept d: by bits for
 * solo players in a word still holding many, else rank by rank. */
static uint32_t word_players(const reach_walk *w, size_t at, uint64_t m, uint32_t d)
{
    if (w->rc->solo && w->rc->left[at] > FEW)
        return popcount64(w->c->alive[at] & m & gf_mt_reach_acc(w->c, w->rc, at)[d]);
    const gf_mt_hot *hot = &w->c->hot[at << 6];
    uint32_t sum = 0;
    for (uint64_t x = w->c->alive[at] & m; x; x &= x - 1) {
        const gf_mt_hot *h = &hot[__builtin_ctzll(x)];
        sum += ((h->dcmask >> d) & 1) * h->size;
    }
    return sum;
}

/* The same for the whole word, remembered until a rank of it is matched. */
static uint32_t word_count(const reach_walk *w, size_t at, uint32_t d)
{
    gf_mt_reach *rc = w->rc;
    uint16_t *cnt = &rc->cnt[at * rc->ndc + d];
    if (!((rc->fresh[at] >> d) & 1)) {
        *cnt = (uint16_t)word_players(w, at, ~0ull, d);
        rc->fresh[at] |= 1u << d;
    }
    return *cnt;
}

/* Could the players of the unmatched ranks [x, y] accepting one datacenter of mask fill
 * the shape? (The seed is in the range, and counts; so does a ticket past the skill
 * edge at either end, which keeps this an upper bound.) */
static bool fills(const reach_walk *w, uint32_t x, uint32_t y, uint32_t mask, uint32_t need)
{
    size_t wx = x >> 6, wy = y >> 6;
    uint64_t from = ~0ull << (x & 63), to = ~0ull >> (63 - (y & 63));
    for (uint32_t m = mask; m; m &= m - 1) {
        uint32_t d = (uint32_t)__builtin_ctz(m), sum = 0;
        if (wx == wy) {
            sum = word_players(w, wx, from & to, d);
        } else {
            sum = word_players(w, wx, from, d) + word_players(w, wy, to, d);
            for (size_t at = wx + 1; at < wy && sum < need; at++)
                sum += word_count(w, at, d);
        }
        if (sum >= need)
            return true;
    }
    return false;
}

/* The test itself (see the design notes); true when it cannot rule the walk out. */
static bool possible(const reach_walk *w, uint32_t s, uint32_t mask, uint32_t need, uint32_t budget,
                     uint32_t *seen)
{
    side_tab L, R;
    side_open(w, &L, s, false);
    side_open(w, &R, s, true);
    /* Scan the nearer side until the two hold the budget, or are over. */
    for (uint32_t scanned = 2; L.len + R.len < budget && !(L.ended && R.ended); scanned++) {
        side_tab *t = L.dist <= R.dist ? &L : &R;
        if (t->nw == MAX_WORDS || scanned == MAX_SCAN)
            return true;
        side_step(w, t, w->c->alive[t->at]);
    }
    uint32_t total = L.len + R.len < budget ? L.len + R.len : budget;
    uint32_t most_l = L.len < total ? L.len : total, most_r = R.len < total ? R.len : total;
    /* a of W from the left: the largest a whose a-th left ticket comes before the
     * (total - a + 1)-th right one (ties go left). */
    uint32_t a = total - most_r, a_hi = most_l;
    for (uint32_t tries = 0;; tries++) {
        if (!w->by_time && out_of_order(w->rc, L.reach, R.reach))
            return true;
        while (a < a_hi) {
            uint32_t mid = a + (a_hi - a + 1) / 2, b = total - mid;
            bool before = b >= R.len || dist_of(w, &L, side_rank(&L, mid - 1)) <=
                                            dist_of(w, &R, side_rank(&R, b));
            if (before)
                a = mid;
            else
                a_hi = mid - 1;
        }
        /* W may reach past what is scanned on a side whose share is all scanned: then
         * scan on (a few times) and search again. */
        uint32_t b = total - a;
        bool l_more =
            a == L.len && !L.ended && b > 0 && !(dist_of(w, &R, side_rank(&R, b - 1)) < L.dist);
        bool r_more =
            b == R.len && !R.ended && a > 0 && !(dist_of(w, &L, side_rank(&L, a - 1)) <= R.dist);
        if (!l_more && !r_more)
            break;
        side_tab *t = l_more ? &L : &R;
        if (tries == 4 || t->nw == MAX_WORDS)
            return true;
        side_step(w, t, w->c->alive[t->at]);
        most_l = L.len < total ? L.len : total;
        most_r = R.len < total ? R.len : total;
        a = total - most_r;
        a_hi = most_l;
    }
    *seen = total;
    uint32_t b = total - a;
    return fills(w, a ? side_rank(&L, a - 1) : s, b ? side_rank(&R, b - 1) : s, mask, need);
}

bool gf_mt_reach_possible(const gf_mt_ctx *c, gf_mt_reach *rc, uint32_t s, const gf_mt_part *p,
                          uint32_t mask, const gf_mt_shape *sh, uint32_t *seen)
{
    if (!rc->on || sh->players < REACH_PLAYERS || popcount64(mask) > MAX_DCS)
        return true;
    const gf_mt_hot *sk = &c->hot[s];
    reach_walk w = {.c = c,
                    .rc = rc,
                    .key = p->by_time ? (double)c->cold[s].queued : sk->skill,
                    .lo_edge = sk->skill - sk->gap,
                    .hi_edge = sk->skill + sk->gap,
                    .lo = p->first,
                    .hi = p->first + p->count,
                    .by_time = p->by_time};
    /* While tests have been paying (gain: a running average of the tickets they spared,
     * in 1/16), test; otherwise test one chance in SAMPLE, to notice when they pay again:
     * early in a tick the seeds are old and their walks seldom fail. */
    if (rc->gain < PAY * 16 && ++rc->idle % SAMPLE != 0)
        return true;
    /* The three words around the seed: a group's worth of players for one datacenter
     * there, and the walk will most likely fill. */
    size_t at = s >> 6, from = at > (w.lo >> 6) ? at - 1 : at;
    size_t to = at < (size_t)(w.hi - 1) >> 6 ? at + 1 : at;
    for (uint32_t m = mask; m; m &= m - 1) {
        uint32_t d = (uint32_t)__builtin_ctz(m), near = 0;
        for (size_t x = from; x <= to; x++)
            near += word_count(&w, x, d);
        if (near >= sh->players)
            return true;
    }
    uint32_t budget = 4 * c->window, saw = 0;
    bool may = possible(&w, s, mask, sh->players, budget, &saw);
    rc->gain += (int64_t)(may ? 0 : saw) - rc->gain / 16;
    if (!may)
        *seen = saw;
    return may;
}
