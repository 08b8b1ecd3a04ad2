/*
 * teams.c — packing parties into teams, and balancing teams by skill.
 *
 * Design notes:
 *  - Packing (can these parties fit into T teams of S without splitting one?) is bin
 *    packing, so it is searched: parties of two or more players are placed largest
 *    first, skipping teams whose free room equals one already tried at the same step
 *    (they are interchangeable). Solo players always fit once the total fits, so they are
 *    not placed at all. Two quick necessary tests (total, parties larger than half a team)
 *    answer most calls. Shapes are at most 128 players, so the search is small; a node
 *    budget bounds the worst case and answers "no" if hit (never a false "yes").
 *  - Balancing minimises (highest - lowest team total), total = sum of skill x players.
 *    A greedy assignment (largest first, into the lowest-total team with room) gives a
 *    first answer; a depth-first search with the same symmetry rule and a lower bound
 *    (the teams' final totals must average out) then proves or improves it. That search
 *    finishes for every common shape (1v1, 2v2, 5v5, 4v4v4, free-for-all); when a large
 *    shape exhausts the budget, the best assignment found is improved by trades that keep
 *    every team full (one ticket for one of the same size, or for two that add up to it)
 *    until none helps.
 */
#include <math.h>
#include <string.h>

#include "gamefn/match/config.h"
#include "gamefn/match/group.h"

#define PACK_BUDGET    100000
#define BALANCE_BUDGET 20000
#define GRAY_MAX       12 /* two teams of at most this many tickets: enumerate splits */
#define SPLIT_LOW      4  /* ... tickets 1..4 scored as a table at every step */

/* ---- packing --------------------------------------------------------------------- */

static bool place(const uint8_t *sizes, uint32_t n, uint32_t i, uint32_t *room, uint32_t teams,
                  long *budget)
{
    if (i == n)
        return true;
    if (--*budget < 0)
        return false;
    for (uint32_t b = 0; b < teams; b++) {
        if (room[b] < sizes[i])
            continue;
        bool tried = false;
        for (uint32_t a = 0; a < b && !tried; a++)
            tried = room[a] == room[b];
        if (tried)
            continue;
        room[b] -= sizes[i];
        bool ok = place(sizes, n, i + 1, room, teams, budget);
        room[b] += sizes[i];
        if (ok)
            return true;
    }
    return false;
}

bool gf_match_pack_feasible(const uint32_t *count_by_size, uint32_t teams, uint32_t team_size)
{
    uint8_t sizes[GF_MATCH_MAX_PLAYERS];
    uint32_t room[GF_MATCH_MAX_TEAMS];
    uint32_t n = 0, big = 0, total = 0;

    if (teams == 0 || teams > GF_MATCH_MAX_TEAMS || team_size == 0 ||
        team_size > GF_MATCH_MAX_TEAM_SIZE)
        return false;
    for (uint32_t s = 1; s <= team_size; s++) {
        total += s * count_by_size[s];
        if (2 * s > team_size)
            big += count_by_size[s];
    }
    if (total > teams * team_size || big > teams)
        return false;
    for (uint32_t s = team_size; s >= 2; s--) {
        for (uint32_t j = 0; j < count_by_size[s]; j++)
            sizes[n++] = (uint8_t)s;
    }
    if (n <= 1)
        return true;
    for (uint32_t b = 0; b < teams; b++)
        room[b] = team_size;
    long budget = PACK_BUDGET;
    return place(sizes, n, 0, room, teams, &budget);
}

/* ---- balancing ------------------------------------------------------------------- */

typedef struct bal {
    const double *w; /* skill x size per ticket */
    const uint8_t *sz;
    uint32_t order[GF_MATCH_MAX_PLAYERS];
    uint32_t k, teams;
    double total;                          /* sum of w */
    double rest[GF_MATCH_MAX_PLAYERS + 1]; /* sum of w over order[i..] */
    uint32_t solo_from;                    /* order[solo_from..] are solo players */
    uint32_t room[GF_MATCH_MAX_TEAMS];
    double sum[GF_MATCH_MAX_TEAMS];
    uint16_t cur[GF_MATCH_MAX_PLAYERS];  /* by ticket */
    uint16_t best[GF_MATCH_MAX_PLAYERS]; /* by ticket */
    double best_diff;
    long budget;
} bal;

static double spread(const double *sum, uint32_t teams)
{
    double lo = sum[0], hi = sum[0];
    for (uint32_t t = 1; t < teams; t++) {
        if (sum[t] < lo)
            lo = sum[t];
        if (sum[t] > hi)
            hi = sum[t];
    }
    return hi - lo;
}

/* No completion of the current partial assignment can beat this. */
static double lower_bound(const bal *b, uint32_t i)
{
    double avg = b->total / b->teams;
    double lo = b->sum[0], hi = b->sum[0];
    for (uint32_t t = 1; t < b->teams; t++) {
        if (b->sum[t] < lo)
            lo = b->sum[t];
        if (b->sum[t] > hi)
            hi = b->sum[t];
    }
    /* Final highest >= hi and >= avg; final lowest <= avg and <= lo + rest (the team now
     * lowest gets at most everything left). */
    double rest = b->rest[i];
    double lb = hi - lo - rest;
    if (hi - avg > lb)
        lb = hi - avg;
    if (avg - lo - rest > lb)
        lb = avg - lo - rest;
    return lb > 0 ? lb : 0;
}

static void search(bal *b, uint32_t i)
{
    if (b->best_diff <= 0 || --b->budget < 0)
        return;
    if (i == b->k) {
        double d = spread(b->sum, b->teams);
        if (d < b->best_diff) {
            b->best_diff = d;
            memcpy(b->best, b->cur, b->k * sizeof b->cur[0]);
        }
        return;
    }
    if (lower_bound(b, i) >= b->best_diff)
        return;
    uint32_t t_idx = b->order[i];
    uint32_t size = b->sz[t_idx];
    /* Try teams lowest total first: the first leaf is the greedy answer. */
    uint32_t tord[GF_MATCH_MAX_TEAMS];
    uint32_t n = 0;
    for (uint32_t t = 0; t < b->teams; t++) {
        if (b->room[t] < size)
            continue;
        bool twin = false;
        for (uint32_t j = 0; j < n && !twin; j++)
            twin = b->room[tord[j]] == b->room[t] && b->sum[tord[j]] == b->sum[t];
        if (twin)
            continue;
        uint32_t j = n++;
        while (j > 0 && b->sum[tord[j - 1]] > b->sum[t]) {
            tord[j] = tord[j - 1];
            j--;
        }
        tord[j] = t;
    }
    for (uint32_t j = 0; j < n; j++) {
        uint32_t t = tord[j];
        b->room[t] -= size;
        b->sum[t] += b->w[t_idx];
        b->cur[t_idx] = (uint16_t)t;
        search(b, i + 1);
        b->room[t] += size;
        b->sum[t] -= b->w[t_idx];
        if (b->best_diff <= 0 || b->budget < 0)
            return;
    }
}

/* Two teams: the same search with the state in registers. |A - B| - rest is the bound
 * (what is left can close the gap by at most its total). */
static void search_two(bal *b, uint32_t i, uint32_t room_a, uint32_t room_b, double sum_a,
                       double sum_b)
{
    if (b->best_diff <= 0 || --b->budget < 0)
        return;
    double d = fabs(sum_a - sum_b);
    if (i == b->k) {
        if (d < b->best_diff) {
            b->best_diff = d;
            memcpy(b->best, b->cur, b->k * sizeof b->cur[0]);
        }
        return;
    }
    if (d - b->rest[i] >= b->best_diff)
        return;
    if (i >= b->solo_from) {
        /* Only solos are left, heaviest first, and A takes exactly room_a of them: its
         * final total lies between taking the lightest and the heaviest room_a. */
        double lo_a = sum_a + b->rest[b->k - room_a];
        double hi_a = sum_a + (b->rest[i] - b->rest[i + room_a]);
        double total = sum_a + sum_b + b->rest[i];
        double bound = 2 * hi_a < total ? total - 2 * hi_a : 2 * lo_a - total;
        if (bound >= b->best_diff)
            return;
    }
    uint32_t t = b->order[i], size = b->sz[t];
    double w = b->w[t];
    bool twin = room_a == room_b && sum_a == sum_b; /* A and B interchangeable */
    bool a_first = sum_a <= sum_b;
    for (int k = 0; k < 2; k++) {
        bool to_a = (k == 0) == a_first;
        if (!to_a && twin)
            continue;
        if (to_a && room_a >= size) {
            b->cur[t] = 0;
            search_two(b, i + 1, room_a - size, room_b, sum_a + w, sum_b);
        } else if (!to_a && room_b >= size) {
            b->cur[t] = 1;
            search_two(b, i + 1, room_a, room_b - size, sum_a, sum_b + w);
        }
    }
}

/* Two teams and few tickets (5v5 has 2 to 10): every split with ticket 0 in team A (the
 * other half of the splits mirror these), so the answer is the exact optimum. Tickets
 * 1..low form a table of their 2^low subsets (players and total of each); the others are
 * enumerated in Gray-code order (one ticket moves per step), and each step scores the
 * whole table, whose entries are independent of each other: no branch to mispredict and
 * no long dependency chain, unlike a plain walk through the 2^(k-1) splits. */
static void split_two(bal *b, uint32_t team_size)
{
    uint32_t k = b->k, low = k - 1 < SPLIT_LOW ? k - 1 : SPLIT_LOW;
    uint32_t nlow = 1u << low, high = k - 1 - low, last = (1u << high) - 1;
    int32_t tp[1u << SPLIT_LOW];
    double tw[1u << SPLIT_LOW];
    for (uint32_t m = 0; m < nlow; m++) {
        /* Built from the subset without its highest member: sums in a fixed order. */
        uint32_t top = m ? 31 - (uint32_t)__builtin_clz(m) : 0;
        tp[m] = m ? tp[m & ~(1u << top)] + b->sz[1 + top] : 0;
        tw[m] = m ? tw[m & ~(1u << top)] + b->w[1 + top] : 0;
    }
    int32_t players = b->sz[0], want = (int32_t)team_size;
    double sum = b->w[0], best = INFINITY;
    uint32_t best_code = 0;
    for (uint32_t i = 0;; i++) {
        uint32_t code = i ^ (i >> 1); /* bit j set: ticket 1 + low + j is in team A */
        int32_t need = want - players;
        double target = b->total - 2 * sum; /* 2 x (sum + tw[m]) - total = 2 tw[m] - target */
        for (uint32_t m = 0; m < nlow; m++) {
            double d = fabs(2 * tw[m] - target);
            bool better = (tp[m] == need) & (d < best);
            best = better ? d : best;
            best_code = better ? (code << low) | m : best_code;
        }
        if (i == last)
            break;
        uint32_t bit = (uint32_t)__builtin_ctz(i + 1), j = 1 + low + bit;
        if ((code >> bit) & 1) {
            players -= b->sz[j];
            sum -= b->w[j];
        } else {
            players += b->sz[j];
            sum += b->w[j];
        }
    }
    b->best_diff = best;
    /* Label the teams as the depth-first search does: team 0 holds the largest ticket
     * (the heaviest of those, the first of those), so both give the same answer. */
    uint32_t first = 0;
    for (uint32_t t = 1; t < k; t++) {
        if (b->sz[t] > b->sz[first] || (b->sz[t] == b->sz[first] && b->w[t] > b->w[first]))
            first = t;
    }
    for (uint32_t t = 0; t < k; t++) {
        bool in_a = t == 0 || ((best_code >> (t - 1)) & 1);
        bool first_in_a = first == 0 || ((best_code >> (first - 1)) & 1);
        b->best[t] = in_a == first_in_a ? 0 : 1;
    }
}

/* The difference of the raw team totals (skill x players) of an assignment: what the
 * caller is told, independent of the offset the search used. */
static double raw_spread(const double *skills, const uint8_t *sizes, size_t k, uint32_t teams,
                         const uint16_t *team)
{
    double sum[GF_MATCH_MAX_TEAMS];
    if (teams == 0)
        return 0; /* never (checked by the caller); says so to the compiler */
    for (uint32_t t = 0; t < teams; t++)
        sum[t] = 0;
    for (size_t i = 0; i < k; i++)
        sum[team[i]] += skills[i] * sizes[i];
    return spread(sum, teams);
}

/* Any assignment that packs, largest tickets first (same symmetry rule as place()). */
static bool pack_assign(bal *b, uint32_t i, long *budget)
{
    if (i == b->k)
        return true;
    if (--*budget < 0)
        return false;
    uint32_t idx = b->order[i];
    for (uint32_t t = 0; t < b->teams; t++) {
        if (b->room[t] < b->sz[idx])
            continue;
        bool tried = false;
        for (uint32_t a = 0; a < t && !tried; a++)
            tried = b->room[a] == b->room[t];
        if (tried)
            continue;
        b->room[t] -= b->sz[idx];
        b->cur[idx] = (uint16_t)t;
        bool ok = pack_assign(b, i + 1, budget);
        b->room[t] += b->sz[idx];
        if (ok)
            return true;
    }
    return false;
}

/* Trades between two teams that keep both exactly full: one ticket for one of the same
 * size, or one ticket for two whose sizes add up to it. Applied while the spread shrinks
 * (bounded rounds). */
static void improve(bal *b)
{
    double sum[GF_MATCH_MAX_TEAMS] = {0};
    for (uint32_t i = 0; i < b->k; i++)
        sum[b->best[i]] += b->w[i];
    double cur = spread(sum, b->teams);
    bool again = true;
    for (int round = 0; again && round < 32; round++) {
        again = false;
        for (uint32_t x = 0; x < b->k; x++) {
            for (uint32_t y = 0; y < b->k; y++) {
                uint16_t tx = b->best[x], ty = b->best[y];
                if (tx == ty || b->sz[y] > b->sz[x])
                    continue;
                uint32_t z = GF_MATCH_MAX_PLAYERS; /* none: a one-for-one trade */
                if (b->sz[y] < b->sz[x]) {
                    for (uint32_t j = y + 1; j < b->k && z == GF_MATCH_MAX_PLAYERS; j++) {
                        if (b->best[j] == ty && b->sz[y] + b->sz[j] == b->sz[x])
                            z = j;
                    }
                    if (z == GF_MATCH_MAX_PLAYERS)
                        continue;
                }
                double moved = b->w[y] + (z < b->k ? b->w[z] : 0);
                double delta = moved - b->w[x]; /* tx gains, ty loses */
                sum[tx] += delta;
                sum[ty] -= delta;
                double d = spread(sum, b->teams);
                if (d < cur - 1e-9) {
                    cur = d;
                    b->best[x] = ty;
                    b->best[y] = tx;
                    if (z < b->k)
                        b->best[z] = tx;
                    again = true;
                } else {
                    sum[tx] -= delta;
                    sum[ty] += delta;
                }
            }
        }
    }
    b->best_diff = cur;
}

gf_err gf_match_teams_balance(const double *skills, const uint8_t *sizes, size_t k, uint32_t teams,
                              uint32_t team_size, uint16_t *team_out, double *diff_out)
{
    const size_t max_k = GF_MATCH_MAX_PLAYERS;
    bal b;
    double w[GF_MATCH_MAX_PLAYERS];
    uint32_t total = 0;

    if (!skills || !sizes || !team_out || k == 0 || k > max_k || teams < 1 ||
        teams > GF_MATCH_MAX_TEAMS || team_size < 1 || team_size > GF_MATCH_MAX_TEAM_SIZE)
        return GF_ERR_INVALID;
    double base = INFINITY;
    for (size_t i = 0; i < k; i++) {
        if (sizes[i] < 1 || sizes[i] > team_size || !isfinite(skills[i]))
            return GF_ERR_INVALID;
        total += sizes[i];
        if (skills[i] < base)
            base = skills[i];
    }
    if (total != teams * team_size)
        return GF_ERR_INVALID;
    /* Every team ends with exactly team_size players, so taking `base` off every player's
     * skill takes the same amount off every team total and leaves the differences alone.
     * The search works on these excesses: members of a match have close skills, so the
     * weights are small and the bound (what is left can close a gap by at most its total)
     * prunes almost everything; on raw totals near 1500 x size it prunes almost nothing. */
    for (size_t i = 0; i < k; i++)
        w[i] = (skills[i] - base) * sizes[i];

    if (team_size == 1) {
        /* Free-for-all: one ticket per team, every assignment is the same. (The weights
         * are finite, checked above: plain comparisons, not the libm calls of fmin.) */
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < k; i++) {
            team_out[i] = (uint16_t)i;
            lo = w[i] < lo ? w[i] : lo;
            hi = w[i] > hi ? w[i] : hi;
        }
        if (diff_out)
            *diff_out = hi - lo;
        return GF_OK;
    }
    /* Only the fields used are set: the arrays are sized for 128 tickets. */
    b.w = w;
    b.sz = sizes;
    b.k = (uint32_t)k;
    b.teams = teams;
    b.total = 0;
    b.best_diff = INFINITY;
    b.budget = BALANCE_BUDGET;
    if (teams == 2 && k <= GRAY_MAX) {
        for (uint32_t i = 0; i < k; i++)
            b.total += w[i];
        split_two(&b, team_size);
        if (!isfinite(b.best_diff))
            return GF_ERR_INVALID; /* every split was tried: the parties cannot fill both */
        memcpy(team_out, b.best, k * sizeof *team_out);
        if (diff_out)
            *diff_out = raw_spread(skills, sizes, k, teams, b.best);
        return GF_OK;
    }
    for (uint32_t i = 0; i < k; i++) {
        uint32_t j = i;
        while (j > 0 && (sizes[b.order[j - 1]] < sizes[i] ||
                         (sizes[b.order[j - 1]] == sizes[i] && w[b.order[j - 1]] < w[i]))) {
            b.order[j] = b.order[j - 1];
            j--;
        }
        b.order[j] = i;
        b.total += w[i];
    }
    b.rest[k] = 0;
    b.solo_from = (uint32_t)k;
    for (uint32_t i = (uint32_t)k; i-- > 0;) {
        b.rest[i] = b.rest[i + 1] + w[b.order[i]];
        if (sizes[b.order[i]] == 1)
            b.solo_from = i;
    }
    for (uint32_t t = 0; t < teams; t++) {
        b.room[t] = team_size;
        b.sum[t] = 0;
    }
    if (teams == 2)
        search_two(&b, 0, team_size, team_size, 0, 0);
    else
        search(&b, 0);
    if (!isfinite(b.best_diff)) {
        /* The budget ran out before any complete assignment (an awkward packing): take
         * any packing, then improve it by swaps. */
        long budget = PACK_BUDGET;
        for (uint32_t t = 0; t < teams; t++)
            b.room[t] = team_size;
        if (!pack_assign(&b, 0, &budget))
            return GF_ERR_INVALID;
        memcpy(b.best, b.cur, k * sizeof b.cur[0]);
        b.budget = -1;
    }
    if (b.budget < 0)
        improve(&b);
    memcpy(team_out, b.best, k * sizeof *team_out);
    if (diff_out)
        *diff_out = raw_spread(skills, sizes, k, teams, b.best);
    return GF_OK;
}
