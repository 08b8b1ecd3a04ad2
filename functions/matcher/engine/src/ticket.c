/*
 * ticket.c — validation of one ticket, party skill aggregation and age.
 *
 * Design notes: every check is bounded by the lengths the caller gave and tolerates NULL
 * arrays (a NULL array with a non-zero length is refused, never dereferenced). String
 * lengths are measured with strnlen so an unterminated id cannot run away. Checks are
 * ordered from cheap to costly and return the first problem found, so the reason a
 * client sees is stable.
 *
 * gf_mt_ticket_read() is the one implementation of the checks: the public
 * gf_match_ticket_check() calls it and throws the extras away, and the tick's ingest pass
 * keeps them. While it walks a ticket's players and pings to check them it also hashes
 * the ids, aggregates the party's skill and rounds the pings into the engine's row, so a
 * tick reads each caller ticket once (at 100k tickets, every extra pass over the
 * caller's scattered arrays costs milliseconds).
 */
#include "gamefn/match/ticket.h"

#include "internal.h"

#include <math.h>
#include <string.h>

static const char *const bad_names[GF_MATCH_BAD__COUNT] = {
    [GF_MATCH_BAD_NONE] = "ok",
    [GF_MATCH_BAD_ID] = "id",
    [GF_MATCH_BAD_QUEUE] = "queue",
    [GF_MATCH_BAD_REGION] = "region",
    [GF_MATCH_BAD_TIME] = "time",
    [GF_MATCH_BAD_NO_PLAYERS] = "no_players",
    [GF_MATCH_BAD_PARTY_SIZE] = "party_size",
    [GF_MATCH_BAD_PLAYER_ID] = "player_id",
    [GF_MATCH_BAD_SKILL] = "skill",
    [GF_MATCH_BAD_SIGMA] = "sigma",
    [GF_MATCH_BAD_NO_DC] = "no_datacenter",
    [GF_MATCH_BAD_UNKNOWN_DC] = "unknown_datacenter",
    [GF_MATCH_BAD_DUP_DC] = "duplicate_datacenter",
    [GF_MATCH_BAD_PING] = "ping",
    [GF_MATCH_BAD_ATTR] = "attribute",
    [GF_MATCH_BAD_DUP_PLAYER] = "duplicate_player",
    [GF_MATCH_BAD_DUP_TICKET] = "duplicate_ticket",
};

static const char *const bad_texts[GF_MATCH_BAD__COUNT] = {
    [GF_MATCH_BAD_NONE] = "ticket is valid",
    [GF_MATCH_BAD_ID] = "ticket id is missing, empty or longer than 64 bytes",
    [GF_MATCH_BAD_QUEUE] = "ticket names no configured queue",
    [GF_MATCH_BAD_REGION] = "ticket names no configured region",
    [GF_MATCH_BAD_TIME] = "queue time is in the future or more than 7 days old",
    [GF_MATCH_BAD_NO_PLAYERS] = "ticket has no players",
    [GF_MATCH_BAD_PARTY_SIZE] = "party is larger than the queue's team size",
    [GF_MATCH_BAD_PLAYER_ID] = "a player id is missing, empty or longer than 64 bytes",
    [GF_MATCH_BAD_SKILL] = "a skill rating is NaN, infinite or beyond +/-1e6",
    [GF_MATCH_BAD_SIGMA] = "a rating uncertainty is NaN, infinite, negative or beyond 1e6",
    [GF_MATCH_BAD_NO_DC] = "ticket has no datacenter pings",
    [GF_MATCH_BAD_UNKNOWN_DC] = "a ping names an unknown datacenter",
    [GF_MATCH_BAD_DUP_DC] = "a datacenter appears twice in the pings",
    [GF_MATCH_BAD_PING] = "a ping is NaN, infinite, negative or above 5000 ms",
    [GF_MATCH_BAD_ATTR] = "an attribute is missing, too long, repeated, or there are too many",
    [GF_MATCH_BAD_DUP_PLAYER] = "a player is in this ticket twice or also in an older ticket",
    [GF_MATCH_BAD_DUP_TICKET] = "another, older ticket has the same id",
};

const char *gf_match_bad_str(gf_match_bad bad)
{
    if ((int)bad < 0 || bad >= GF_MATCH_BAD__COUNT)
        return "unknown";
    return bad_names[bad];
}

const char *gf_match_bad_text(gf_match_bad bad)
{
    if ((int)bad < 0 || bad >= GF_MATCH_BAD__COUNT)
        return "unknown reason";
    return bad_texts[bad];
}

/* Hash of n bytes (any well-mixed hash does: equal hashes are always confirmed by
 * comparing the strings). Ids are short, so it works a word at a time and reads the tail
 * with two overlapping loads instead of a byte loop or a variable-length memcpy (a libc
 * call); every load stays inside the n bytes. For a given n the words read determine
 * every byte, and n itself is mixed in first. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w = 0;
    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (n >= 4) {
        uint32_t lo = 0, hi = 0;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + n - 4, 4);
        w = (uint64_t)hi << 32 | lo;
    } else if (n > 0) {
        const unsigned char *u = (const unsigned char *)s;
        w = (uint64_t)u[0] << 16 | (uint64_t)u[n >> 1] << 8 | u[n - 1];
    } else {
        w = 0;
    }
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32));
}

/* Length of s if it is min..max bytes and NUL-terminated within max + 1, else SIZE_MAX.
 * strnlen bounds the read, so an unterminated string cannot run away. */
static size_t str_len(const char *s, size_t min, size_t max)
{
    if (!s)
        return SIZE_MAX;
    size_t n = strnlen(s, max + 1);
    return n >= min && n <= max ? n : SIZE_MAX;
}

int64_t gf_match_ticket_age(const gf_match_ticket *t, int64_t now_ms)
{
    /* Callers validated queued_ms, so the subtraction cannot overflow; a queue time in
     * the future (within the allowed clock skew) is "just queued". */
    return t->queued_ms < now_ms ? now_ms - t->queued_ms : 0;
}

/* Players: ids (hashed into out->hash[1..]), ratings, and the party's aggregate, in one
 * pass. The comparisons are written so that NaN fails them. */
static gf_match_bad read_players(const gf_match_queue *q, const gf_match_ticket *t, gf_mt_read *out)
{
    size_t np = t->players_len;
    double sum = 0, top = -INFINITY, var = 0;
    if (np == 0 || !t->players)
        return GF_MATCH_BAD_NO_PLAYERS;
    if (np > (size_t)q->team_size)
        return GF_MATCH_BAD_PARTY_SIZE;
    for (size_t i = 0; i < np; i++) {
        const gf_match_player *p = &t->players[i];
        size_t len = str_len(p->id, 1, GF_MATCH_MAX_ID_LEN);
        if (len == SIZE_MAX)
            return GF_MATCH_BAD_PLAYER_ID;
        out->hash[1 + i] = hash_bytes(p->id, len);
        if (!(fabs(p->skill) <= GF_MATCH_MAX_SKILL))
            return GF_MATCH_BAD_SKILL;
        if (!(p->sigma >= 0 && p->sigma <= GF_MATCH_MAX_SIGMA))
            return GF_MATCH_BAD_SIGMA;
        sum += p->skill;
        if (p->skill > top)
            top = p->skill;
        var += p->sigma * p->sigma;
    }
    /* A party is at most 64 players, so the pairwise check is cheap; only equal hashes
     * need the string comparison. */
    for (size_t i = 1; i < np; i++) {
        for (size_t j = 0; j < i; j++) {
            if (out->hash[1 + i] == out->hash[1 + j] &&
                strcmp(t->players[i].id, t->players[j].id) == 0)
                return GF_MATCH_BAD_DUP_PLAYER;
        }
    }
    /* The same arithmetic, in the same order, as gf_match_ticket_skill(). */
    double s = q->party_skill == GF_MATCH_PARTY_MAX ? top : sum / (double)np;
    out->skill = s + q->premade_bonus * (double)(np - 1);
    out->sigma = sqrt(var / (double)np);
    return GF_MATCH_BAD_NONE;
}

/* The verdict on a ticket's pings, check by check in order: the slow path, taken only
 * for a ticket that read_pings() found faulty, so the reason reported is the first one. */
static gf_match_bad ping_verdict(const gf_match_ticket *t, size_t ndc)
{
    uint64_t seen = 0;
    for (size_t i = 0; i < t->pings_len; i++) {
        const gf_match_ping *p = &t->pings[i];
        if (p->dc >= ndc)
            return GF_MATCH_BAD_UNKNOWN_DC;
        if (seen & (1ull << p->dc))
            return GF_MATCH_BAD_DUP_DC;
        seen |= 1ull << p->dc;
        if (!(p->ms >= 0 && p->ms <= GF_MATCH_MAX_PING_MS))
            return GF_MATCH_BAD_PING;
    }
    return GF_MATCH_BAD_NONE;
}

/* The datacenter of the lowest exact ping among those rounding up to `ms` (the lowest
 * rounded one), the lower index on ties. Only for a valid ticket. */
static uint8_t exact_lowest(const gf_match_ticket *t, const uint16_t *row, uint16_t ms)
{
    double best = INFINITY;
    uint32_t dc = UINT32_MAX;
    for (size_t i = 0; i < t->pings_len; i++) {
        const gf_match_ping *pg = &t->pings[i];
        if (row[pg->dc] == ms && (pg->ms < best || (pg->ms == best && pg->dc < dc))) {
            best = pg->ms;
            dc = pg->dc;
        }
    }
    return (uint8_t)dc;
}

/* Pings: checked, rounded up to whole ms into row[dc], the lowest one found (on the
 * exact values: it names the ticket's region), whether any has a fraction of a ms, and
 * the datacenters within out->plimit. Rounding up is exact against integer limits:
 * ceil(p) <= L iff p <= L. Every check of every ping is folded into flags without a
 * branch; ping_verdict() names the fault when there is one. */
static gf_match_bad read_pings(const gf_match_config *cfg, const gf_match_ticket *t,
                               gf_mt_read *out, uint16_t *row)
{
    size_t ndc = cfg->datacenters_len;
    uint64_t seen = 0, fault = 0;
    uint64_t mask = 0; /* bit d: within plimit; bit 32: some ping has a fraction */
    uint32_t best = UINT32_MAX, rbest = UINT32_MAX, plimit = out->plimit, any = 0;
    if (t->pings_len == 0 || !t->pings)
        return GF_MATCH_BAD_NO_DC;
    if (t->pings_len > GF_MATCH_MAX_DCS)
        return GF_MATCH_BAD_DUP_DC; /* more entries than datacenters: some repeat */
    for (size_t d = 0; d < ndc; d++)
        row[d] = GF_MATCH_PING_NONE;
    const gf_match_ping *pg = t->pings, *end = pg + t->pings_len;
    for (; pg < end; pg++) {
        uint32_t dc = pg->dc;
        double raw = pg->ms;
        bool ok = (raw >= 0) & (raw <= GF_MATCH_MAX_PING_MS); /* false for NaN */
        uint64_t bit = 1ull << (dc & 63);
        /* Repeated datacenter, value out of range: any fault at all (unknown datacenters
         * are found from seen and any after the loop). */
        fault |= (seen & bit) | !ok;
        seen |= bit;
        any |= dc;
        /* An exact ceiling for 0..5000 without a libm call (ceil() is one on baseline
         * x86-64); a faulty value is replaced before the conversion. */
        double v = ok ? raw : 0;
        uint32_t ms = (uint32_t)(int32_t)v;
        bool up = (double)(int32_t)ms < v; /* v has a fraction (v >= 0) */
        ms += up;
        if (dc < ndc) /* else a fault: seen below, and the row is not used */
            row[dc] = (uint16_t)ms;
        uint32_t key = ms << 8 | (dc & 0xff); /* lowest rounded ping, then lowest index */
        uint32_t rkey = key ^ 0xff;           /* the same, highest index first */
        best = key < best ? key : best;
        rbest = rkey < rbest ? rkey : rbest;
        mask |= (uint64_t)(ms <= plimit) << (dc & 31) | (uint64_t)up << 32;
    }
    /* An index past the config (ndc <= 32): 64 or more, or its bit above ndc. */
    fault |= (uint64_t)(any >> 6) | (seen >> ndc);
    if (fault)
        return ping_verdict(t, ndc);
    out->best = (uint16_t)(best >> 8);
    out->bestdc = (uint8_t)(best & 0xff);
    out->frac = mask >> 32;
    /* Several pings rounding up to the lowest (the lowest and highest index among them
     * differ): the exact lowest among them. */
    if (out->frac && (rbest ^ 0xff) != best)
        out->bestdc = exact_lowest(t, row, out->best);
    out->dcmask = (uint32_t)mask;
    return GF_MATCH_BAD_NONE;
}

static gf_match_bad read_attrs(const gf_match_ticket *t)
{
    size_t klen[GF_MATCH_MAX_TICKET_ATTRS];
    if (t->attrs_len == 0)
        return GF_MATCH_BAD_NONE;
    if (!t->attrs || t->attrs_len > GF_MATCH_MAX_TICKET_ATTRS)
        return GF_MATCH_BAD_ATTR;
    for (size_t i = 0; i < t->attrs_len; i++) {
        klen[i] = str_len(t->attrs[i].key, 1, GF_MATCH_MAX_ATTR_LEN);
        if (klen[i] == SIZE_MAX || str_len(t->attrs[i].value, 0, GF_MATCH_MAX_ATTR_LEN) == SIZE_MAX)
            return GF_MATCH_BAD_ATTR;
        for (size_t j = 0; j < i; j++) {
            if (klen[j] == klen[i] && memcmp(t->attrs[i].key, t->attrs[j].key, klen[i]) == 0)
                return GF_MATCH_BAD_ATTR;
        }
    }
    return GF_MATCH_BAD_NONE;
}

gf_match_bad gf_mt_ticket_read(const gf_match_config *cfg, const gf_match_ticket *t, int64_t now_ms,
                               size_t nregions, gf_mt_read *out, uint16_t *row)
{
    gf_match_bad bad = GF_MATCH_BAD_NONE;
    size_t len = t ? str_len(t->id, 1, GF_MATCH_MAX_ID_LEN) : SIZE_MAX;

    if (len == SIZE_MAX)
        return GF_MATCH_BAD_ID;
    out->hash[0] = hash_bytes(t->id, len);
    if (t->queue >= cfg->queues_len)
        return GF_MATCH_BAD_QUEUE;
    if (t->region != GF_MATCH_REGION_AUTO && t->region >= nregions)
        return GF_MATCH_BAD_REGION;
    /* now_ms is bounded (0..GF_MT_MAX_NOW), so these differences cannot overflow. */
    if (now_ms < 0 || now_ms > GF_MT_MAX_NOW || t->queued_ms < 0 ||
        t->queued_ms > now_ms + cfg->clock_skew_ms || now_ms - t->queued_ms > GF_MATCH_MAX_AGE_MS)
        return GF_MATCH_BAD_TIME;
    const gf_match_queue *q = &cfg->queues[t->queue];
    out->age = gf_match_ticket_age(t, now_ms);
    out->plimit = (uint16_t)(q->mode == GF_MATCH_SBMM ? q->curve.ping_cap_ms
                                                      : gf_match_rules_ping(&q->curve, out->age));
    if ((bad = read_players(q, t, out)) != GF_MATCH_BAD_NONE)
        return bad;
    if ((bad = read_pings(cfg, t, out, row)) != GF_MATCH_BAD_NONE)
        return bad;
    return read_attrs(t);
}

gf_match_bad gf_match_ticket_check(const gf_match_config *cfg, const gf_match_ticket *t,
                                   int64_t now_ms)
{
    gf_mt_read rd;
    uint16_t row[GF_MATCH_MAX_DCS];
    return gf_mt_ticket_read(cfg, t, now_ms, gf_match_config_regions(cfg), &rd, row);
}

void gf_match_ticket_skill(const gf_match_queue *q, const gf_match_ticket *t, double *skill,
                           double *sigma)
{
    double sum = 0, top = -INFINITY, var = 0;
    size_t n = t->players_len;
    for (size_t i = 0; i < n; i++) {
        sum += t->players[i].skill;
        if (t->players[i].skill > top)
            top = t->players[i].skill;
        var += t->players[i].sigma * t->players[i].sigma;
    }
    double s = q->party_skill == GF_MATCH_PARTY_MAX ? top : sum / (double)n;
    *skill = s + q->premade_bonus * (double)(n - 1);
    *sigma = sqrt(var / (double)n);
}
