/*
 * walk.c — the walk from one seed over its neighbours and the group it grows.
 *
 * Design notes:
 *  - From seed s the walk goes outward along the rank order (skill; queue time in FIFO
 *    partitions), closest first, over unmatched tickets of s's partition that are
 *    mutually skill-compatible with s. A side stops at the partition edge, or once the
 *    skill distance passes s's own gap (sorted by skill: nothing further that way can be
 *    compatible). At most 4 x window entries are looked at, so a seed costs O(window).
 *    The next unmatched rank on either side comes from a bit scan of c->alive; each side
 *    keeps its current word's bits and its next rank's key, so a step reads one key.
 *  - Each candidate met is offered to a greedy group, which takes it if the group stays
 *    valid for every member: the skill range must lie inside every member's own
 *    [skill - gap, skill + gap], some datacenter must still be accepted by everyone, and
 *    the parties must still pack into the shape. The walk stops when the group is full.
 *  - When the greedy group falls short and the walk passed over a party, the same tickets
 *    are offered again parties first (gf_mt_parties_first): nearest-first greedy lets the
 *    nearest solo player take the room a party needed (two parties of two in 2v2 with a
 *    solo player nearer to each). It costs one pass over what the walk already saw.
 *  - A seed whose limits no longer widen and whose walk falls short gets the exact search
 *    (exact.c), which builds its group with gf_mt_grp_offer.
 */
#include <math.h>
#include <string.h>

#include "walk.h"

gf_mt_shape gf_mt_shape_of(const gf_mt_part *p)
{
    gf_mt_shape sh = {p->teams, p->team_size, (uint32_t)p->teams * p->team_size, false, 0};
    sh.two = p->teams == 2 && p->team_size <= 63;
    sh.below = sh.two ? (2ull << p->team_size) - 1 : 0;
    return sh;
}

void gf_mt_grp_init(gf_mt_grp *g, const gf_mt_hot *s, uint32_t rank, const gf_mt_shape *sh,
                    uint32_t mask)
{
    gf_mt_grp_state *st = &g->st;
    st->common = st->common0 = s->dcmask & mask;
    st->len = 1;
    g->rank[0] = rank;
    st->players = s->size;
    st->lo = st->hi = s->skill;
    st->minlo = s->skill - s->gap;
    st->maxhi = s->skill + s->gap;
    memset(g->by_size, 0, (sh->team_size + 1) * sizeof g->by_size[0]);
    g->by_size[s->size] = 1;
    st->reach = 1;
    st->party_sum = 0;
    if (s->size > 1) {
        /* reach is kept for two teams of at most 63 only (sh->two): a party of 64 would
         * shift a 64-bit word by 64. */
        st->reach |= sh->two ? 1ull << s->size : 0;
        st->party_sum = s->size;
    }
}

/* Would adding k keep every member's own skill limit, k's included, and leave a
 * datacenter everyone accepts? */
static bool state_fits(const gf_mt_grp_state *st, const gf_mt_hot *k)
{
    return (k->dcmask & st->common) && k->skill >= st->minlo && k->skill <= st->maxhi &&
           k->skill - k->gap <= st->lo && k->skill + k->gap >= st->hi;
}

/* Two teams: the parties fit iff some achievable team-A share a (a <= size) leaves at most
 * `size` for team B; solo players then fill both, as the total is within 2 x size. */
static bool two_fits(uint64_t reach, uint32_t party_sum, const gf_mt_shape *sh)
{
    uint32_t need = party_sum > sh->team_size ? party_sum - sh->team_size : 0;
    return (reach & sh->below & ~((1ull << need) - 1)) != 0;
}

/* Would the parties still pack into the shape with k added? (st: the group's scalars,
 * which may be ahead of g->st during a walk; g->by_size is current.) */
static bool grp_packs(gf_mt_grp *g, const gf_mt_grp_state *st, const gf_mt_hot *k,
                      const gf_mt_shape *sh)
{
    if (st->players + k->size > sh->players)
        return false;
    if (k->size == 1)
        return true; /* the current parties pack, and some team still has room */
    if (sh->two)
        return two_fits((st->reach | (st->reach << k->size)) & sh->below, st->party_sum + k->size,
                        sh);
    g->by_size[k->size]++;
    bool ok = gf_match_pack_feasible(g->by_size, sh->teams, sh->team_size);
    g->by_size[k->size]--;
    return ok;
}

/* k joins: the scalars (not rank[] and by_size[]). */
static void state_add(gf_mt_grp_state *st, const gf_mt_hot *k, const gf_mt_shape *sh)
{
    st->players += k->size;
    st->common &= k->dcmask;
    if (k->size > 1) {
        /* sh->below is 0 unless sh->two (sizes up to 63); `& 63` keeps a party of 64 in
         * other shapes from shifting by 64. */
        st->reach = (st->reach | (st->reach << (k->size & 63))) & sh->below;
        st->party_sum += k->size;
    }
    if (k->skill < st->lo)
        st->lo = k->skill;
    if (k->skill > st->hi)
        st->hi = k->skill;
    if (k->skill - k->gap > st->minlo)
        st->minlo = k->skill - k->gap;
    if (k->skill + k->gap < st->maxhi)
        st->maxhi = k->skill + k->gap;
}

static bool grp_fits(gf_mt_grp *g, const gf_mt_hot *k, const gf_mt_shape *sh)
{
    return state_fits(&g->st, k) && grp_packs(g, &g->st, k, sh);
}

static void grp_add(gf_mt_grp *g, const gf_mt_hot *k, uint32_t rank, const gf_mt_shape *sh)
{
    state_add(&g->st, k, sh);
    g->rank[g->st.len++] = rank;
    g->by_size[k->size]++;
}

/* The next unmatched rank above (up) or below (down) the last one taken from a side,
 * from the bits of its current word not taken yet; GF_MT_NONE past the partition (`stop`
 * is the partition's last word that way, `edge` its last rank). */
static inline uint32_t scan_up(const uint64_t *alive, uint64_t *bits, size_t *w, size_t stop,
                               uint32_t edge)
{
    while (!*bits) {
        if (*w == stop)
            return GF_MT_NONE;
        *bits = alive[++*w];
    }
    uint32_t r = (uint32_t)(*w << 6) + (uint32_t)__builtin_ctzll(*bits);
    *bits &= *bits - 1;
    return r <= edge ? r : GF_MT_NONE;
}

static inline uint32_t scan_down(const uint64_t *alive, uint64_t *bits, size_t *w, size_t stop,
                                 uint32_t edge)
{
    while (!*bits) {
        if (*w == stop)
            return GF_MT_NONE;
        *bits = alive[--*w];
    }
    uint32_t b = 63 - (uint32_t)__builtin_clzll(*bits);
    *bits ^= 1ull << b;
    uint32_t r = (uint32_t)(*w << 6) + b;
    return r >= edge ? r : GF_MT_NONE;
}

/* Walks the partition outward from seed s, closest first (by skill, or by queue time in
 * FIFO partitions), over unmatched tickets that accept one of the group's datacenters and
 * are mutually skill-compatible with s (and share its match attributes). Each one is
 * offered to the greedy group; the ones it does not take are kept in cand[] (up to
 * c->window) for the fallbacks. Stops when the group is full, when both sides are out of
 * reach, or after 4 x window entries. Returns the number kept in cand[]; *cand_players =
 * their players.
 * Each side keeps its next rank, that rank's key and distance to s (+INFINITY once the
 * side is over: the other side is then always nearer), and the bits of alive[] it has
 * not taken from its current word, so a step reads one new key and scans one bit. */
uint32_t gf_mt_walk(gf_mt_ctx *c, uint32_t s, const gf_mt_part *p, gf_mt_grp *g,
                    const gf_mt_shape *sh, uint32_t *cand, uint32_t *cand_players)
{
    const gf_mt_hot *hot = c->hot, *sk = &hot[s];
    const gf_mt_cold *cold = c->cold;
    const uint64_t *alive = c->alive;
    uint32_t lo = p->first, hi = p->first + p->count - 1; /* ranks lo..hi */
    uint32_t n = 0, seen = 0, budget = 4 * c->window, players = 0, mask = g->st.common;
    bool by_time = p->by_time;
    double key = by_time ? (double)cold[s].queued : sk->skill, gap = sk->gap;
    double lo_edge = by_time ? -INFINITY : sk->skill - gap;
    double hi_edge = by_time ? INFINITY : sk->skill + gap;
    /* The group's scalars stay in registers during the walk; written back at the end. */
    gf_mt_grp_state st = g->st;
    size_t lw = s >> 6, rw = s >> 6, lstop = lo >> 6, rstop = hi >> 6;
    uint64_t lbits = alive[lw] & ((1ull << (s & 63)) - 1);
    uint64_t rbits = alive[rw] & (~1ull << (s & 63));
    uint32_t left = s > lo ? scan_down(alive, &lbits, &lw, lstop, lo) : GF_MT_NONE;
    uint32_t right = s < hi ? scan_up(alive, &rbits, &rw, rstop, hi) : GF_MT_NONE;
    double kl = left != GF_MT_NONE ? (by_time ? (double)cold[left].queued : hot[left].skill) : 0;
    double kr = right != GF_MT_NONE ? (by_time ? (double)cold[right].queued : hot[right].skill) : 0;
    double dl = left != GF_MT_NONE ? key - kl : INFINITY;
    double dr = right != GF_MT_NONE ? kr - key : INFINITY;

    while (st.players < sh->players && seen < budget && (dl < INFINITY || dr < INFINITY)) {
        uint32_t r;
        seen++;
        if (dl <= dr) { /* ties go left */
            r = left;
            if (kl < lo_edge) {
                /* Sorted by skill: nothing further this way is compatible with s. */
                dl = INFINITY;
                continue;
            }
            left = scan_down(alive, &lbits, &lw, lstop, lo);
            dl = INFINITY;
            if (left != GF_MT_NONE) {
                kl = by_time ? (double)cold[left].queued : hot[left].skill;
                dl = key - kl;
            }
        } else {
            r = right;
            if (kr > hi_edge) {
                dr = INFINITY;
                continue;
            }
            right = scan_up(alive, &rbits, &rw, rstop, hi);
            dr = INFINITY;
            if (right != GF_MT_NONE) {
                kr = by_time ? (double)cold[right].queued : hot[right].skill;
                dr = kr - key;
            }
        }
        const gf_mt_hot *k = &hot[r];
        if (!(k->dcmask & mask))
            continue;
        double d = fabs(sk->skill - k->skill);
        if (d > gap || d > k->gap || (p->attrs && !gf_mt_attrs_equal(c, p, cold[s].in, cold[r].in)))
            continue;
        if (state_fits(&st, k) && grp_packs(g, &st, k, sh)) {
            state_add(&st, k, sh);
            g->rank[st.len++] = r;
            g->by_size[k->size]++;
            /* Writing the match reads the members' ping rows and cold records; fetch them
             * while the walk goes on (measured: ~1 ms of a 100k tick). */
            __builtin_prefetch(&c->ping[(size_t)r * c->pstride]);
            __builtin_prefetch(&cold[r]);
        } else if (n < c->window) {
            cand[n++] = r;
            players += k->size;
        }
    }
    g->st = st;
    c->res->stats.candidates_seen += seen;
    *cand_players = players;
    return n;
}

/* A ticket's distance to seed s in the walk's order. */
static double walk_dist(const gf_mt_ctx *c, const gf_mt_part *p, uint32_t s, uint32_t r)
{
    return p->by_time ? fabs((double)(c->cold[r].queued - c->cold[s].queued))
                      : fabs(c->hot[r].skill - c->hot[s].skill);
}

bool gf_mt_parties_first(gf_mt_ctx *c, uint32_t s, const gf_mt_part *p, gf_mt_grp *g,
                         const uint32_t *cand, uint32_t n, const gf_mt_shape *sh, uint32_t *all)
{
    /* Retried only if a party was passed over: otherwise it would take the same. */
    bool party = false;
    for (uint32_t i = 0; i < n && !party; i++)
        party = c->hot[cand[i]].size > 1;
    if (!party)
        return false;
    /* The members and the passed-over candidates, each in walk order (nearest first),
     * merged back into one nearest-first list. */
    uint32_t m = 0, a = 1, b = 0, len = g->st.len;
    while (a < len || b < n) {
        bool take_a =
            b == n || (a < len && walk_dist(c, p, s, g->rank[a]) <= walk_dist(c, p, s, cand[b]));
        all[m++] = take_a ? g->rank[a++] : cand[b++];
    }
    gf_mt_grp_init(g, &c->hot[s], s, sh, g->st.common0);
    for (uint32_t pass = 0; pass < 2 && g->st.players < sh->players; pass++) {
        for (uint32_t i = 0; i < m && g->st.players < sh->players; i++) {
            const gf_mt_hot *k = &c->hot[all[i]];
            if ((k->size > 1) == (pass == 0))
                (void)gf_mt_grp_offer(g, k, all[i], sh);
        }
    }
    return g->st.players == sh->players;
}

bool gf_mt_grp_offer(gf_mt_grp *g, const gf_mt_hot *k, uint32_t rank, const gf_mt_shape *sh)
{
    if (!grp_fits(g, k, sh))
        return false;
    grp_add(g, k, rank, sh);
    return true;
}
