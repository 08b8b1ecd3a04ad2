/*
 * dc.c — datacenter choice for a group.
 *
 * Design notes: a datacenter is acceptable only if every member measured it and its ping
 * is within that member's own limit (invariant 3: a fresh ticket is never pulled into a
 * far server because an old one would accept it). Limits are integers, so the rounded-up
 * pings compare exactly against them. Among the acceptable datacenters, the one with the
 * lowest combined ping of all players wins (the reference design's rule: a party of
 * three weighs three times), on the exact pings: rounding each ping up first could pick
 * a datacenter whose real total is higher. Ties go to the lower worst ping, then the
 * lower index, so the order is total and deterministic. The full ordered list is kept
 * for allocation failover; its reported totals are the rounded pings', in whole ms.
 */
#include "gamefn/match/group.h"

#define DC_MAX 32 /* GF_MATCH_MAX_DCS: a config has at most this many */

typedef struct ranked {
    gf_match_dc_choice ch;
    double total, worst; /* exact */
} ranked;

static bool before(const ranked *a, const ranked *b)
{
    if (a->total != b->total)
        return a->total < b->total;
    if (a->worst != b->worst)
        return a->worst < b->worst;
    return a->ch.dc < b->ch.dc;
}

size_t gf_match_dc_rank(const gf_match_dc_member *members, size_t k, size_t ndcs,
                        gf_match_dc_choice *out)
{
    ranked r[DC_MAX];
    size_t n = 0;
    if (k == 0)
        return 0;
    if (ndcs > DC_MAX)
        ndcs = DC_MAX;
    for (size_t d = 0; d < ndcs; d++) {
        ranked ch = {.ch = {.dc = (uint32_t)d}};
        bool ok = true;
        for (size_t i = 0; i < k && ok; i++) {
            const gf_match_dc_member *m = &members[i];
            uint16_t p = m->ping[d];
            uint32_t players = m->players ? m->players : 1;
            if (p == GF_MATCH_PING_NONE || (int64_t)p > m->limit_ms) {
                ok = false;
                break;
            }
            double exact = m->exact ? m->exact[d] : (double)p;
            ch.ch.total_ping_ms += p * players;
            ch.total += exact * players;
            if (p > ch.ch.max_ping_ms)
                ch.ch.max_ping_ms = p;
            if (exact > ch.worst)
                ch.worst = exact;
        }
        if (!ok)
            continue;
        size_t j = n++; /* kept sorted by insertion */
        while (j > 0 && before(&ch, &r[j - 1])) {
            r[j] = r[j - 1];
            j--;
        }
        r[j] = ch;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = r[i].ch;
    return n;
}
