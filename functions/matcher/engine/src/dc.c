/*
 * dc.c — datacenter choice for a group.
 *
 * Design notes: a datacenter is acceptable only if every member measured it and its ping
 * is within that member's own limit (invariant 3: a fresh ticket is never pulled into a
 * far server because an old one would accept it). Among those, the lowest total ping
 * (sum over tickets, as Match.datacenters reports it) wins; ties go to the lower worst
 * ping, then the lower index, so the order is total and deterministic. The full ordered
 * list is kept for allocation failover.
 */
#include "gamefn/match/group.h"

static bool before(const gf_match_dc_choice *a, const gf_match_dc_choice *b)
{
    if (a->total_ping_ms != b->total_ping_ms)
        return a->total_ping_ms < b->total_ping_ms;
    if (a->max_ping_ms != b->max_ping_ms)
        return a->max_ping_ms < b->max_ping_ms;
    return a->dc < b->dc;
}

size_t gf_match_dc_rank(const gf_match_dc_member *members, size_t k, size_t ndcs,
                        gf_match_dc_choice *out)
{
    size_t n = 0;
    if (k == 0)
        return 0;
    for (size_t d = 0; d < ndcs; d++) {
        gf_match_dc_choice ch = {.dc = (uint32_t)d};
        bool ok = true;
        for (size_t i = 0; i < k && ok; i++) {
            uint16_t p = members[i].ping[d];
            if (p == GF_MATCH_PING_NONE || (int64_t)p > members[i].limit_ms) {
                ok = false;
                break;
            }
            ch.total_ping_ms += p;
            if (p > ch.max_ping_ms)
                ch.max_ping_ms = p;
        }
        if (!ok)
            continue;
        size_t j = n++;
        while (j > 0 && before(&ch, &out[j - 1])) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = ch;
    }
    return n;
}
