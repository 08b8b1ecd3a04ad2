/* match_fixture.c — see match_fixture.h. */
#include "match_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

void fx_init(fx *f, gf_match_mode mode, const char *shape)
{
    static const char *const names[] = {"a", "b", "c", "d"};
    static const char *const regions[] = {"r1", "r1", "r2", "r3"};
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 4; i++)
        f->dcs[i] = (gf_match_dc){names[i], regions[i]};
    f->cfg.datacenters = f->dcs;
    f->cfg.datacenters_len = 4;
    f->cfg.queues = f->queues;
    f->cfg.search_window = 32;
    f->cfg.clock_skew_ms = 5000;
    (void)fx_queue(f, "q", mode, shape, NULL);
}

uint32_t fx_queue(fx *f, const char *name, gf_match_mode mode, const char *shape,
                  const char *playlist)
{
    uint32_t q = (uint32_t)f->cfg.queues_len++;
    gf_match_queue_defaults(&f->queues[q], name, mode, shape);
    f->queues[q].playlist = playlist;
    char why[256] = "";
    assert_int_equal(gf_match_config_prepare(&f->cfg, why, sizeof why), GF_OK);
    return q;
}

uint32_t fx_add(fx *f, uint32_t q, int64_t age_ms, double skill, int party, const char *pings)
{
    assert_true(f->n < FX_MAX && party >= 1 && party <= FX_PLAYERS);
    uint32_t i = (uint32_t)f->n++;
    gf_match_ticket *t = &f->t[i];
    snprintf(f->ids[i][0], sizeof f->ids[i][0], "t%u", i);
    for (int k = 0; k < party; k++) {
        snprintf(f->ids[i][k + 1], sizeof f->ids[i][k + 1], "p%u-%d", i, k);
        f->players[i][k] = (gf_match_player){f->ids[i][k + 1], skill, 0};
    }
    size_t np = 0;
    for (const char *p = pings; p && *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        char dc = *p;
        assert_int_equal(p[1], ':');
        char *end = NULL;
        double ms = strtod(p + 2, &end);
        f->pings[i][np++] = (gf_match_ping){(uint32_t)(dc - 'a'), ms};
        p = end;
    }
    *t = (gf_match_ticket){.id = f->ids[i][0],
                           .queue = q,
                           .region = GF_MATCH_REGION_AUTO,
                           .queued_ms = FX_NOW - age_ms,
                           .players = f->players[i],
                           .players_len = (size_t)party,
                           .pings = f->pings[i],
                           .pings_len = np};
    return i;
}

gf_match_result *fx_tick(fx *f)
{
    gf_match_result *r = NULL;
    assert_int_equal(gf_match_tick(&f->cfg, f->t, f->n, FX_NOW, &r), GF_OK);
    assert_non_null(r);
    return r;
}

const gf_match *fx_match_of(const gf_match_result *r, uint32_t i)
{
    for (size_t m = 0; m < r->matches_len; m++) {
        for (uint32_t k = 0; k < r->matches[m].members_len; k++) {
            if (r->matches[m].members[k].ticket == i)
                return &r->matches[m];
        }
    }
    return NULL;
}

const gf_match_unmatched *fx_unmatched(const gf_match_result *r, uint32_t i)
{
    for (size_t k = 0; k < r->unmatched_len; k++) {
        if (r->unmatched[k].ticket == i)
            return &r->unmatched[k];
    }
    return NULL;
}
