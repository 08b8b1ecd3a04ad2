/*
 * ticket.c — validation of one ticket, party skill aggregation and age.
 *
 * Design notes: every check is bounded by the lengths the caller gave and tolerates NULL
 * arrays (a NULL array with a non-zero length is refused, never dereferenced). String
 * lengths are measured with strnlen so an unterminated id cannot run away. Checks are
 * ordered from cheap to costly and return the first problem found, so the reason a
 * client sees is stable.
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

/* Hash of n bytes, a word at a time (ids are short; a byte-wise FNV costs several times
 * more at 100k tickets). Any well-mixed hash does: equal hashes are always confirmed by
 * comparing the strings. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32));
}

/* 1..max bytes and NUL-terminated within max + 1; its hash into *hash if non-NULL. */
static bool id_ok(const char *s, size_t max, uint32_t *hash)
{
    if (!s)
        return false;
    size_t n = strnlen(s, max + 1);
    if (n < 1 || n > max)
        return false;
    if (hash)
        *hash = hash_bytes(s, n);
    return true;
}

static bool str_ok(const char *s, size_t min, size_t max)
{
    if (!s)
        return false;
    size_t n = strnlen(s, max + 1);
    return n >= min && n <= max;
}

int64_t gf_match_ticket_age(const gf_match_ticket *t, int64_t now_ms)
{
    /* Callers validated queued_ms, so the subtraction cannot overflow; a queue time in
     * the future (within the allowed clock skew) is "just queued". */
    return t->queued_ms < now_ms ? now_ms - t->queued_ms : 0;
}

static gf_match_bad check_players(const gf_match_queue *q, const gf_match_ticket *t,
                                  uint32_t *hashes)
{
    if (t->players_len == 0 || !t->players)
        return GF_MATCH_BAD_NO_PLAYERS;
    if (t->players_len > (size_t)q->team_size)
        return GF_MATCH_BAD_PARTY_SIZE;
    for (size_t i = 0; i < t->players_len; i++) {
        const gf_match_player *p = &t->players[i];
        if (!id_ok(p->id, GF_MATCH_MAX_ID_LEN, hashes ? &hashes[i] : NULL))
            return GF_MATCH_BAD_PLAYER_ID;
        if (!isfinite(p->skill) || fabs(p->skill) > GF_MATCH_MAX_SKILL)
            return GF_MATCH_BAD_SKILL;
        if (!isfinite(p->sigma) || p->sigma < 0 || p->sigma > GF_MATCH_MAX_SIGMA)
            return GF_MATCH_BAD_SIGMA;
    }
    /* A party is at most 64 players, so the pairwise check is cheap; with hashes, only
     * equal hashes need the string comparison. */
    for (size_t i = 1; i < t->players_len; i++) {
        for (size_t j = 0; j < i; j++) {
            if (hashes && hashes[i] != hashes[j])
                continue;
            if (strcmp(t->players[i].id, t->players[j].id) == 0)
                return GF_MATCH_BAD_DUP_PLAYER;
        }
    }
    return GF_MATCH_BAD_NONE;
}

static gf_match_bad check_pings(const gf_match_config *cfg, const gf_match_ticket *t)
{
    uint64_t seen = 0;
    if (t->pings_len == 0 || !t->pings)
        return GF_MATCH_BAD_NO_DC;
    if (t->pings_len > GF_MATCH_MAX_DCS)
        return GF_MATCH_BAD_DUP_DC; /* more entries than datacenters: some repeat */
    for (size_t i = 0; i < t->pings_len; i++) {
        const gf_match_ping *p = &t->pings[i];
        if (p->dc >= cfg->datacenters_len)
            return GF_MATCH_BAD_UNKNOWN_DC;
        if (seen & (1ull << p->dc))
            return GF_MATCH_BAD_DUP_DC;
        seen |= 1ull << p->dc;
        if (!isfinite(p->ms) || p->ms < 0 || p->ms > GF_MATCH_MAX_PING_MS)
            return GF_MATCH_BAD_PING;
    }
    return GF_MATCH_BAD_NONE;
}

static gf_match_bad check_attrs(const gf_match_ticket *t)
{
    if (t->attrs_len == 0)
        return GF_MATCH_BAD_NONE;
    if (!t->attrs || t->attrs_len > GF_MATCH_MAX_TICKET_ATTRS)
        return GF_MATCH_BAD_ATTR;
    for (size_t i = 0; i < t->attrs_len; i++) {
        if (!str_ok(t->attrs[i].key, 1, GF_MATCH_MAX_ATTR_LEN) ||
            !str_ok(t->attrs[i].value, 0, GF_MATCH_MAX_ATTR_LEN))
            return GF_MATCH_BAD_ATTR;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(t->attrs[i].key, t->attrs[j].key) == 0)
                return GF_MATCH_BAD_ATTR;
        }
    }
    return GF_MATCH_BAD_NONE;
}

gf_match_bad gf_mt_ticket_check(const gf_match_config *cfg, const gf_match_ticket *t,
                                int64_t now_ms, size_t nregions, uint32_t *hashes)
{
    gf_match_bad bad = GF_MATCH_BAD_NONE;

    if (!t || !id_ok(t->id, GF_MATCH_MAX_ID_LEN, hashes))
        return GF_MATCH_BAD_ID;
    if (t->queue >= cfg->queues_len)
        return GF_MATCH_BAD_QUEUE;
    if (t->region != GF_MATCH_REGION_AUTO && t->region >= nregions)
        return GF_MATCH_BAD_REGION;
    /* now_ms is bounded (0..GF_MT_MAX_NOW), so these differences cannot overflow. */
    if (now_ms < 0 || now_ms > GF_MT_MAX_NOW || t->queued_ms < 0 ||
        t->queued_ms > now_ms + cfg->clock_skew_ms || now_ms - t->queued_ms > GF_MATCH_MAX_AGE_MS)
        return GF_MATCH_BAD_TIME;
    if ((bad = check_players(&cfg->queues[t->queue], t, hashes ? hashes + 1 : NULL)) !=
        GF_MATCH_BAD_NONE)
        return bad;
    if ((bad = check_pings(cfg, t)) != GF_MATCH_BAD_NONE)
        return bad;
    return check_attrs(t);
}

gf_match_bad gf_match_ticket_check(const gf_match_config *cfg, const gf_match_ticket *t,
                                   int64_t now_ms)
{
    return gf_mt_ticket_check(cfg, t, now_ms, gf_match_config_regions(cfg), NULL);
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
