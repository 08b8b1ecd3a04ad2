/*
 * tick.c — one tick, start to finish, and the result's lifetime.
 *
 * Design notes: the steps run in a fixed order (validate, expire, dedup, partition,
 * layout, search, diagnose) over one context; each step's scratch is freed as soon as the
 * next no longer needs it, and every byte goes through the counting allocator, so
 * stats.bytes_peak is the true high-water mark of the engine's own memory (the caller's
 * tickets are not counted). Output arrays are sized by upper bounds known before the
 * search (members <= valid tickets, matches <= valid players / players per match), so
 * the search never reallocates.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* The result and the buffers its matches point into. */
typedef struct result_box {
    gf_match_result pub; /* first member: a gf_match_result * is a result_box * */
    gf_match_member *members;
    gf_match_dc_choice *dcs;
    gf_match_workspace *ws; /* where the arrays came from (a reference), or NULL */
} result_box;

static const char *const why_names[GF_MATCH_WHY__COUNT] = {
    [GF_MATCH_WHY_INVALID] = "invalid",
    [GF_MATCH_WHY_EXPIRED] = "expired",
    [GF_MATCH_WHY_POPULATION] = "population",
    [GF_MATCH_WHY_SKILL] = "skill",
    [GF_MATCH_WHY_PING] = "ping",
    [GF_MATCH_WHY_NO_COMMON_DC] = "no_common_datacenter",
    [GF_MATCH_WHY_SHAPE] = "shape",
};

const char *const gf_match_phase_names[GF_MATCH_PHASES] = {"ingest", "dedup",  "partition",
                                                           "layout", "search", "diagnose"};

/* Thread CPU time in ms; only for stats.phase_ms. */
static double cpu_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *gf_match_why_str(gf_match_why why)
{
    if ((int)why < 0 || why >= GF_MATCH_WHY__COUNT)
        return "unknown";
    return why_names[why];
}

void gf_match_result_free(gf_match_result *res)
{
    if (!res)
        return;
    result_box *box = (result_box *)res;
    gf_match_workspace *ws = box->ws;
    void *arrays[] = {box->members, box->dcs, res->matches, res->unmatched, res->pools, box};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        if (!arrays[i])
            continue;
        if (ws)
            gf_mt_ws_give(ws, arrays[i]);
        else
            free(arrays[i]);
    }
    gf_mt_ws_unref(ws);
}

static gf_err alloc_output(gf_mt_ctx *c, result_box *box)
{
    size_t players = 0;
    uint32_t min_players = GF_MATCH_MAX_PLAYERS;
    for (uint32_t p = 0; p < c->nparts; p++) {
        uint32_t need = (uint32_t)c->parts[p].teams * c->parts[p].team_size;
        if (need < min_players)
            min_players = need;
        players += c->parts[p].players;
    }
    c->matches_cap = players / (min_players ? min_players : 1);
    c->members_cap = c->nv;
    c->dcs_cap = c->matches_cap * c->ndc;
    c->res->matches = gf_mt_alloc_result(&c->mem, c->matches_cap, sizeof(gf_match));
    box->members = gf_mt_alloc_result(&c->mem, c->members_cap, sizeof *box->members);
    box->dcs = gf_mt_alloc_result(&c->mem, c->dcs_cap, sizeof *box->dcs);
    if (!c->res->matches || !box->members || !box->dcs)
        return GF_ERR_NOMEM;
    c->members_buf = c->members_next = box->members;
    c->dcs_buf = c->dcs_next = box->dcs;
    return GF_OK;
}

static void free_scratch(gf_mt_ctx *c)
{
    size_t cells = (size_t)c->nv * c->pstride;
    gf_mt_free(&c->mem, c->turn, c->nv, sizeof *c->turn);
    c->turn = NULL;
    gf_mt_free(&c->mem, c->seeds, c->nseeds, sizeof *c->seeds);
    gf_mt_free(&c->mem, c->alive, c->alive_words, sizeof *c->alive);
    c->alive = NULL;
    gf_mt_free(&c->mem, c->ping, cells, sizeof *c->ping);
    gf_mt_free(&c->mem, c->twin, c->nv, sizeof *c->twin);
    c->twin = NULL;
    gf_mt_free(&c->mem, c->cold, c->nv, sizeof *c->cold);
    gf_mt_free(&c->mem, c->hot, c->nv, sizeof *c->hot);
    c->hot = NULL;
    c->cold = NULL;
    gf_mt_free(&c->mem, c->parts, c->nparts, sizeof *c->parts);
    gf_mt_free(&c->mem, c->keys, c->nv, sizeof *c->keys);
    c->keys = NULL;
    gf_mt_free(&c->mem, c->rec, c->n, sizeof *c->rec);
    gf_mt_free(&c->mem, c->rec_ping, c->n * c->ndc, sizeof *c->rec_ping);
    gf_mt_free(&c->mem, c->ids, c->ids_cap, sizeof *c->ids);
    gf_mt_free(&c->mem, c->bad, c->n, sizeof *c->bad);
    gf_mt_free(&c->mem, c->hist, gf_mt_radix_scratch(), 1);
    c->hist = NULL;
    c->seeds = NULL;
    c->ids = NULL;
    c->ping = c->rec_ping = NULL;
    c->rec = NULL;
    c->parts = NULL;
    c->bad = NULL;
}

gf_err gf_match_tick(const gf_match_config *cfg, const gf_match_ticket *tickets, size_t n,
                     int64_t now_ms, gf_match_result **out)
{
    return gf_match_tick_ws(NULL, cfg, tickets, n, now_ms, out);
}

gf_err gf_match_tick_ws(gf_match_workspace *ws, const gf_match_config *cfg,
                        const gf_match_ticket *tickets, size_t n, int64_t now_ms,
                        gf_match_result **out)
{
    gf_err err = GF_OK;
    gf_mt_ctx c;
    result_box *box = NULL;

    if (!out)
        return GF_ERR_INVALID;
    *out = NULL;
    if (gf_match_config_check(cfg, NULL, 0) != GF_OK || n > GF_MATCH_MAX_POOL ||
        (n > 0 && !tickets) || now_ms < 0 || now_ms > GF_MT_MAX_NOW)
        return GF_ERR_INVALID;

    memset(&c, 0, sizeof c);
    c.mem.ws = ws;
    c.cfg = cfg;
    c.in = tickets;
    c.n = n;
    c.now = now_ms;
    c.ndc = (uint32_t)cfg->datacenters_len;
    c.nq = (uint32_t)cfg->queues_len;
    for (uint32_t d = 0; d < c.ndc; d++)
        c.dc_region[d] = (uint8_t)gf_match_config_dc_region(cfg, d);
    c.nreg = (uint32_t)gf_match_config_regions(cfg);
    c.window = (uint32_t)cfg->search_window;

    box = gf_mt_alloc_result(&c.mem, 1, sizeof *box);
    if (!box)
        return GF_ERR_NOMEM;
    memset(box, 0, sizeof *box);
    if (ws) {
        box->ws = ws;
        gf_mt_ws_ref(ws);
    }
    c.res = &box->pub;
    c.res->pools_len = (size_t)c.nq * c.nreg;
    c.res->pools = gf_mt_alloc_result(&c.mem, c.res->pools_len, sizeof *c.res->pools);
    if (c.res->pools)
        memset(c.res->pools, 0, c.res->pools_len * sizeof *c.res->pools);
    c.bad = gf_mt_alloc(&c.mem, n, sizeof *c.bad);
    c.hist = gf_mt_alloc(&c.mem, gf_mt_radix_scratch(), 1);
    if (!c.res->pools || !c.bad || !c.hist) {
        err = GF_ERR_NOMEM;
        goto out;
    }
    for (uint32_t q = 0; q < c.nq; q++) {
        for (uint32_t r = 0; r < c.nreg; r++) {
            c.res->pools[(size_t)q * c.nreg + r].queue = q;
            c.res->pools[(size_t)q * c.nreg + r].region = r;
        }
    }

    double t0 = cpu_ms(), t1 = 0;
    double *phase = c.res->stats.phase_ms;
    if ((err = gf_mt_ingest(&c)) != GF_OK)
        goto out;
    t1 = cpu_ms();
    phase[0] = t1 - t0;
    t0 = t1;
    if ((err = gf_mt_dedup(&c)) != GF_OK)
        goto out;
    c.res->stats.tickets = n;
    t1 = cpu_ms();
    phase[1] = t1 - t0;
    t0 = t1;
    if ((err = gf_mt_partition(&c)) != GF_OK)
        goto out;
    t1 = cpu_ms();
    phase[2] = t1 - t0;
    t0 = t1;
    for (uint32_t p = 0; p < c.nparts; p++) {
        uint32_t need = 2u * c.parts[p].teams * c.parts[p].team_size;
        if (need > c.window)
            c.window = need;
    }
    if ((err = gf_mt_layout(&c)) != GF_OK)
        goto out;
    t1 = cpu_ms();
    phase[3] = t1 - t0;
    t0 = t1;
    if ((err = alloc_output(&c, box)) != GF_OK)
        goto out;
    if ((err = gf_mt_search(&c)) != GF_OK)
        goto out;
    t1 = cpu_ms();
    phase[4] = t1 - t0;
    t0 = t1;
    if ((err = gf_mt_diagnose(&c)) != GF_OK)
        goto out;
    phase[5] = cpu_ms() - t0;

out:
    free_scratch(&c);
    c.res->stats.bytes_peak = c.mem.peak;
    c.res->stats.bytes_total = c.mem.total;
    if (err != GF_OK) {
        gf_match_result_free(c.res);
        return err;
    }
    *out = c.res;
    return GF_OK;
}
