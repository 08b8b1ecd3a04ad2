/*
 * test_match_population.c — the benchmark's synthetic population (support/population):
 * replayable (same seed, same tickets, however the run is cut), different seeds differ,
 * every ticket is valid for the engine, and the model's shares come out as configured.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/match/ticket.h"
#include "population.h"

#define N 20000

static int64_t times[N];

static bool same_ticket(const gf_match_ticket *a, const gf_match_ticket *b)
{
    if (strcmp(a->id, b->id) != 0 || a->queued_ms != b->queued_ms ||
        a->players_len != b->players_len || a->pings_len != b->pings_len)
        return false;
    for (size_t i = 0; i < a->players_len; i++) {
        if (strcmp(a->players[i].id, b->players[i].id) != 0 ||
            a->players[i].skill != b->players[i].skill)
            return false;
    }
    for (size_t i = 0; i < a->pings_len; i++) {
        if (a->pings[i].dc != b->pings[i].dc || a->pings[i].ms != b->pings[i].ms)
            return false;
    }
    return true;
}

static void test_replayable(void **state)
{
    (void)state;
    for (int i = 0; i < N; i++)
        times[i] = 1700000000000 + i;
    gf_pop_batch *a = NULL, *b = NULL, *tail = NULL, *other = NULL;
    assert_int_equal(gf_pop_generate(42, NULL, 0, 0, times, 1000, &a), GF_OK);
    assert_int_equal(gf_pop_generate(42, NULL, 0, 0, times, 1000, &b), GF_OK);
    /* Tickets 600..999 generated on their own are the same tickets. */
    assert_int_equal(gf_pop_generate(42, NULL, 0, 600, times + 600, 400, &tail), GF_OK);
    assert_int_equal(gf_pop_generate(43, NULL, 0, 0, times, 1000, &other), GF_OK);
    size_t differ = 0;
    for (int i = 0; i < 1000; i++) {
        assert_true(same_ticket(&a->tickets[i], &b->tickets[i]));
        assert_true(a->info[i].patience_ms == b->info[i].patience_ms);
        if (i >= 600)
            assert_true(same_ticket(&a->tickets[i], &tail->tickets[i - 600]));
        differ += a->tickets[i].players[0].skill != other->tickets[i].players[0].skill;
    }
    assert_true(differ > 990);
    gf_pop_batch_free(a);
    gf_pop_batch_free(b);
    gf_pop_batch_free(tail);
    gf_pop_batch_free(other);
}

static void test_model_shares_and_validity(void **state)
{
    (void)state;
    size_t ndc = 0, nmetro = 0;
    const gf_match_dc *dcs = gf_pop_datacenters(&ndc);
    const gf_pop_metro *metros = gf_pop_metros(&nmetro);
    assert_int_equal(ndc, 8);
    assert_true(nmetro >= 12 && nmetro <= 20);
    gf_match_dc copy[8];
    memcpy(copy, dcs, sizeof copy);
    gf_match_queue q;
    gf_match_queue_defaults(&q, "q", GF_MATCH_HYBRID, "5v5");
    gf_match_config cfg = {.datacenters = copy,
                           .datacenters_len = 8,
                           .queues = &q,
                           .queues_len = 1,
                           .search_window = 32,
                           .clock_skew_ms = 5000};
    assert_int_equal(gf_match_config_prepare(&cfg, NULL, 0), GF_OK);

    for (int i = 0; i < N; i++)
        times[i] = 1700000000000;
    gf_pop_batch *b = NULL;
    assert_int_equal(gf_pop_generate(7, NULL, 0, 0, times, N, &b), GF_OK);
    double region[GF_POP__REGIONS] = {0}, sum = 0, sq = 0, probes = 0, missing = 0;
    size_t players = 0, party[6] = {0}, resubmit = 0;
    static double patience[N];
    for (int i = 0; i < N; i++) {
        const gf_match_ticket *t = &b->tickets[i];
        assert_int_equal(gf_match_ticket_check(&cfg, t, 1700000000000), GF_MATCH_BAD_NONE);
        region[metros[b->info[i].metro].region]++;
        party[t->players_len]++;
        for (size_t k = 0; k < t->players_len; k++) {
            sum += t->players[k].skill;
            sq += t->players[k].skill * t->players[k].skill;
            players++;
        }
        probes += 8;
        missing += 8 - (double)t->pings_len;
        patience[i] = (double)b->info[i].patience_ms;
        resubmit += b->info[i].resubmit_ms >= 0;
    }
    double mean = sum / players, sd = sqrt(sq / players - mean * mean);
    assert_true(fabs(mean - 1500) < 10);
    assert_true(fabs(sd - 300) < 10);
    const double want[GF_POP__REGIONS] = {35, 35, 15, 8, 4, 3};
    for (int r = 0; r < GF_POP__REGIONS; r++) {
        double share = 100 * region[r] / N;
        if (fabs(share - want[r]) > 1.5)
            fail_msg("region %s: %.1f%%, want %.0f%%", gf_pop_region_name(r), share, want[r]);
    }
    assert_true(fabs(100.0 * party[1] / N - 60) < 1.5);
    assert_true(fabs(100.0 * party[5] / N - 4) < 1);
    double miss = 100 * missing / probes;
    assert_true(miss > 1 && miss < 5);
    assert_true(fabs(100.0 * resubmit / N - 2) < 0.6);
    /* Median patience 90 s. */
    size_t below = 0;
    for (int i = 0; i < N; i++)
        below += patience[i] < 90000;
    assert_true(fabs(100.0 * below / N - 50) < 2);
    /* Capped parties for small shapes. */
    gf_pop_params solo = {.max_party = 1};
    gf_pop_batch *s = NULL;
    assert_int_equal(gf_pop_generate(7, &solo, 0, 0, times, 1000, &s), GF_OK);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(s->tickets[i].players_len, 1);
    gf_pop_batch_free(s);
    gf_pop_batch_free(b);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    gf_pop_batch *b = NULL;
    gf_pop_params p = {.max_party = 0};
    assert_int_equal(gf_pop_generate(1, &p, 0, 0, times, 10, &b), GF_ERR_INVALID);
    assert_int_equal(gf_pop_generate(1, NULL, 0, 0, NULL, 10, &b), GF_ERR_INVALID);
    assert_int_equal(gf_pop_generate(1, NULL, 0, 0, times, 10, NULL), GF_ERR_INVALID);
    assert_int_equal(gf_pop_generate(1, NULL, 0, 0, NULL, 0, &b), GF_OK);
    assert_int_equal(b->n, 0);
    gf_pop_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replayable),
        cmocka_unit_test(test_model_shares_and_validity),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
