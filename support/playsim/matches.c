/*
 * matches.c — every Match the matcher publishes, seen on gamefn.v1.match.found.> (a
 * plain subscription: the stream MATCHES keeps them for the allocator, we only look),
 * and what became of it (see playsim.h).
 *
 * Design notes: a match enters the table from whichever comes first, the Match itself
 * or a ticket status naming it (CLAIMED before the Match reached us); the Match fills
 * in its queue, region, merged flag and creation time. Its matches.tsv row is written
 * once its tickets are all ASSIGNED (allocation time: the first assignment's
 * assigned_unix_ms minus created_unix_ms, one host's clock), or once it is dropped (a
 * ticket went back to the pool: no server, a cancel), or at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/subjects.h"
#include "gamefn/util.h"
#include "gamefn/v1/match.pb-c.h"
#include "playsim.h"

uint32_t gf_play_match_ref(gf_play *p, const char *match_id)
{
    uint64_t key = gf_play_key(match_id);
    uint32_t i = gf_play_index_get(&p->m_index, key);
    if (i && i <= p->n_m && strcmp(p->m[i - 1].id, match_id) == 0)
        return i;
    play_match *v = gf_grow(p->m, &p->cap_m, p->n_m + 1, sizeof *v);
    if (!v)
        return 0;
    p->m = v;
    play_match *m = &p->m[p->n_m];
    memset(m, 0, sizeof *m);
    snprintf(m->id, sizeof m->id, "%s", match_id);
    m->queue = -1;
    m->region = -1;
    m->dc = -1;
    if (gf_play_index_put(&p->m_index, key, (uint32_t)(p->n_m + 1)) != GF_OK)
        return 0;
    return (uint32_t)++p->n_m;
}

const char *gf_play_match_mode(gf_play *p, const play_match *m)
{
    const char *mode = m->queue >= 0 ? p->queues[m->queue].mode : NULL;
    for (size_t i = 0; i < m->n_tix; i++) {
        const play_ticket *t = &p->t[m->tix[i]];
        if (!mode)
            mode = p->queues[t->queue].mode;
        else if (strcmp(mode, p->queues[t->queue].mode) != 0)
            return "mixed"; /* a merged pool's match across modes */
    }
    return mode ? mode : "-";
}

double gf_play_match_spread(gf_play *p, const play_match *m)
{
    (void)p;
    return m->seen && m->expected ? (double)m->rating_hi - (double)m->rating_lo : -1;
}

static void record(gf_play *p, play_match *m)
{
    if (m->recorded || !m->seen || !p->matches_tsv)
        return;
    m->recorded = true;
    const play_queue *q = m->queue >= 0 ? &p->queues[m->queue] : NULL;
    double spread = gf_play_match_spread(p, m);
    char spread_s[32] = "-", alloc_s[32] = "-";
    if (spread >= 0)
        snprintf(spread_s, sizeof spread_s, "%.1f", spread);
    if (m->assigned_unix_ms > 0 && m->created_unix_ms > 0 && !m->aborted)
        snprintf(alloc_s, sizeof alloc_s, "%lld",
                 (long long)(m->assigned_unix_ms > m->created_unix_ms
                                 ? m->assigned_unix_ms - m->created_unix_ms
                                 : 0));
    double t = (double)(m->created_unix_ms - p->t0_unix) / 1000.0;
    fprintf(p->matches_tsv, "%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%u\t%s\n", t < 0 ? 0 : t,
            gf_play_match_mode(p, m), q ? q->shape : "-",
            m->region >= 0 ? p->regions[m->region] : "-", m->merged ? "on" : "off", spread_s,
            alloc_s, m->id, q ? q->name : "-", m->dc >= 0 ? p->dcs[m->dc] : "-", m->expected,
            q && q->is_twin ? "1" : "0");
}

void gf_play_match_assigned(gf_play *p, uint32_t mi, int64_t assigned_unix_ms, int dc)
{
    play_match *m = &p->m[mi - 1];
    if (m->assigned_unix_ms == 0)
        m->assigned_unix_ms = assigned_unix_ms;
    m->dc = (int8_t)dc;
    m->assigned++;
    if (m->seen && m->assigned >= m->expected)
        record(p, m);
}

void gf_play_match_dropped(gf_play *p, uint32_t mi)
{
    play_match *m = &p->m[mi - 1];
    m->aborted = true;
    record(p, m);
}

void gf_play_matches_flush(gf_play *p)
{
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->n_m; i++)
        record(p, &p->m[i]);
    pthread_mutex_unlock(&p->mu);
}

static int queue_index(const gf_play *p, const char *name)
{
    for (size_t q = 0; name && q < p->n_queues; q++)
        if (strcmp(p->queues[q].name, name) == 0)
            return (int)q;
    return -1;
}

static int region_index(const gf_play *p, const char *name)
{
    for (size_t r = 0; name && r < p->n_regions; r++)
        if (strcmp(p->regions[r], name) == 0)
            return (int)r;
    return -1;
}

static void on_match(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    gf_play *p = closure;
    Gamefn__V1__Match *x = gamefn__v1__match__unpack(NULL, (size_t)natsMsg_GetDataLength(msg),
                                                     (const uint8_t *)natsMsg_GetData(msg));
    pthread_mutex_lock(&p->mu);
    uint32_t mi = x && x->match_id ? gf_play_match_ref(p, x->match_id) : 0;
    if (mi && !p->m[mi - 1].seen) {
        play_match *m = &p->m[mi - 1];
        m->seen = true;
        m->queue = queue_index(p, x->queue);
        m->region = (int8_t)region_index(p, x->region);
        m->merged = x->merged;
        if (x->merged && m->queue >= 0 && m->region >= 0)
            p->merged_at[m->queue][m->region] = gf_clock_mono_ms();
        m->created_unix_ms = x->created_unix_ms;
        for (size_t k = 0; k < x->n_teams; k++)
            for (size_t j = 0; j < x->teams[k]->n_tickets; j++) {
                float r = (float)x->teams[k]->tickets[j]->rating;
                if (m->expected == 0 || r < m->rating_lo)
                    m->rating_lo = r;
                if (m->expected == 0 || r > m->rating_hi)
                    m->rating_hi = r;
                m->expected++;
            }
        p->matches_seen++;
        if (m->assigned > 0 && m->assigned >= m->expected)
            record(p, m); /* the assignments came first */
    }
    pthread_mutex_unlock(&p->mu);
    gamefn__v1__match__free_unpacked(x, NULL);
    natsMsg_Destroy(msg);
}

gf_err gf_play_matches_start(gf_play *p)
{
    if (natsConnection_Subscribe(&p->tap, p->nc, GF_WIRE_SUBJ_MATCH_FOUND ".>", on_match, p) !=
        NATS_OK)
        return GF_ERR_NATS;
    natsSubscription_SetPendingLimits(p->tap, -1, -1);
    return GF_OK;
}
