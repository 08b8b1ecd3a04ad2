/*
 * bench/match.c — `gamefn-bench match`: one matchmaking tick over a synthetic pool.
 *
 *   gamefn-bench match --pool N --mode sbmm|ping_first|hybrid --shape 1v1|5v5|ffa16
 *                      --seed S [--naive] [--json] [--max-age SECONDS] [--repeat R]
 *
 * Design notes: the pool comes from support/population (seeded); queue ages are drawn
 * U(0, max-age) from their own stream of the same seed. The tick runs R times on the same
 * pool (each run from scratch); tick_ms is the median wall time, cpu time is printed
 * beside it because the machine is shared. Quality and violations come from the
 * independent checker (match_check.c); --naive also runs the all-pairs reference on the
 * same pool and prints the speedup and its quality. With --json the last line is one JSON
 * object.
 */
#define _GNU_SOURCE /* getopt_long */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "gamefn/clock.h"
#include "gamefn/match/tick.h"
#include "match_ref.h"
#include "population.h"

#define BENCH_NOW_MS INT64_C(1767225600000) /* a fixed instant: runs are replayable */

typedef struct opts {
    size_t pool;
    int mode;
    const char *mode_name;
    const char *shape;
    uint64_t seed;
    bool naive, json;
    double max_age_s;
    int repeat;
} opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-bench match [--pool N] [--mode sbmm|ping_first|hybrid]\n"
               "                          [--shape 1v1|5v5|ffa16|NvN...] [--seed S] [--naive]\n"
               "                          [--json] [--max-age SECONDS] [--repeat R]\n"
               "defaults: --pool 10000 --mode hybrid --shape 5v5 --seed 1 --max-age 60 "
               "--repeat 1\n");
}

/* 0: run; 1: --help printed; 2: usage error (printed). */
static int parse(int argc, char **argv, opts *o)
{
    enum {
        OPT_POOL = 256,
        OPT_MODE,
        OPT_SHAPE,
        OPT_SEED,
        OPT_MAX_AGE,
        OPT_REPEAT,
        OPT_NAIVE,
        OPT_JSON
    };
    static const struct option longopts[] = {
        {"pool", required_argument, NULL, OPT_POOL},
        {"mode", required_argument, NULL, OPT_MODE},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"seed", required_argument, NULL, OPT_SEED},
        {"max-age", required_argument, NULL, OPT_MAX_AGE},
        {"repeat", required_argument, NULL, OPT_REPEAT},
        {"naive", no_argument, NULL, OPT_NAIVE},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->pool = 10000;
    o->mode = GF_MATCH_HYBRID;
    o->mode_name = "hybrid";
    o->shape = "5v5";
    o->seed = 1;
    o->max_age_s = 60;
    o->repeat = 1;
    optind = 0; /* a fresh scan: argv is the subcommand's */
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'h':
            usage(stdout);
            return 1;
        case OPT_NAIVE:
            o->naive = true;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case OPT_POOL: {
            unsigned long long v = strtoull(optarg, &end, 10);
            if (*end || v < 1 || v > GF_MATCH_MAX_POOL) {
                fprintf(stderr, "gamefn-bench match: --pool must be 1..%u\n", GF_MATCH_MAX_POOL);
                return 2;
            }
            o->pool = (size_t)v;
            break;
        }
        case OPT_MODE:
            if (strcmp(optarg, "sbmm") == 0)
                o->mode = GF_MATCH_SBMM;
            else if (strcmp(optarg, "ping_first") == 0)
                o->mode = GF_MATCH_PING_FIRST;
            else if (strcmp(optarg, "hybrid") == 0)
                o->mode = GF_MATCH_HYBRID;
            else {
                fprintf(stderr, "gamefn-bench match: --mode must be sbmm, ping_first or hybrid\n");
                return 2;
            }
            o->mode_name = optarg;
            break;
        case OPT_SHAPE: {
            int64_t t = 0, sz = 0;
            if (gf_match_shape_parse(optarg, &t, &sz) != GF_OK) {
                fprintf(stderr, "gamefn-bench match: bad --shape '%s'\n", optarg);
                return 2;
            }
            o->shape = optarg;
            break;
        }
        case OPT_SEED:
            o->seed = strtoull(optarg, &end, 10);
            if (*end) {
                fprintf(stderr, "gamefn-bench match: --seed must be an integer\n");
                return 2;
            }
            break;
        case OPT_MAX_AGE:
            o->max_age_s = strtod(optarg, &end);
            if (*end || !(o->max_age_s >= 0 && o->max_age_s <= 3600)) {
                fprintf(stderr, "gamefn-bench match: --max-age must be 0..3600 s\n");
                return 2;
            }
            break;
        case OPT_REPEAT: {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 100) {
                fprintf(stderr, "gamefn-bench match: --repeat must be 1..100\n");
                return 2;
            }
            o->repeat = (int)v;
            break;
        }
        default: /* getopt_long said what is wrong */
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gamefn-bench match: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return 0;
}

/* This thread's CPU time (the engine is single-threaded): the tick's work without
 * the machine's other load. Wall time is gf_clock_mono_ns(). */
static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double wall_ms(void)
{
    return (double)gf_clock_mono_ns() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void naive_progress(size_t done, size_t total)
{
    fprintf(stderr, "naive: %zu/%zu seeds (%.0f%%)\n", done, total,
            100.0 * (double)done / (double)total);
}

static void print_quality(const char *who, const gf_ref_quality *q)
{
    printf("%-7s matches %zu, tickets matched %zu, players matched %zu\n", who, q->matches,
           q->tickets, q->players);
    printf("%-7s skill spread mean %.1f p95 %.1f; delta ping mean %.1f ms p95 %.1f ms; "
           "team diff mean %.1f; violations %zu\n",
           who, q->spread_mean, q->spread_p95, q->dping_mean, q->dping_p95, q->team_diff_mean,
           q->violations);
    printf("%-7s not from the starvation fallback: matches %zu, skill spread mean %.1f p95 %.1f; "
           "delta ping p95 %.1f ms; matches with no member at both caps %zu\n",
           who, q->plain_matches, q->plain_spread_mean, q->plain_spread_p95, q->plain_dping_p95,
           q->below_matches);
}

int gf_bench_match(int argc, char **argv)
{
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;

    int exit_code = 1;
    gf_match_dc dcs[GF_MATCH_MAX_DCS];
    size_t ndc = 0;
    const gf_match_dc *pop_dcs = gf_pop_datacenters(&ndc);
    memcpy(dcs, pop_dcs, ndc * sizeof *dcs);
    gf_match_queue q;
    gf_match_queue_defaults(&q, "bench", (gf_match_mode)o.mode, o.shape);
    gf_match_config cfg = {.datacenters = dcs,
                           .datacenters_len = ndc,
                           .queues = &q,
                           .queues_len = 1,
                           .search_window = 0, /* the default */
                           .clock_skew_ms = 5000};
    char why[256];
    if (gf_match_config_prepare(&cfg, why, sizeof why) != GF_OK) {
        fprintf(stderr, "gamefn-bench match: config: %s\n", why);
        return 2;
    }

    int64_t *queued = malloc(o.pool * sizeof *queued);
    double *times = malloc((size_t)o.repeat * sizeof *times);
    gf_pop_batch *pool = NULL;
    gf_match_result *res = NULL;
    gf_match_workspace *ws = NULL;
    double cold_ms = 0, *cpus = NULL;
    gf_ref_matches eng = {0}, nai = {0};
    gf_ref_quality qe, qn;
    double cpu_ms = 0, naive_ms = 0;
    cpus = malloc((size_t)o.repeat * sizeof *cpus);
    if (!queued || !times || !cpus || gf_match_workspace_create(&ws) != GF_OK)
        goto out;
    gf_pop_rng rng;
    gf_pop_rng_seed(&rng, o.seed, UINT64_MAX); /* a stream no ticket uses */
    for (size_t i = 0; i < o.pool; i++)
        queued[i] = BENCH_NOW_MS - (int64_t)(gf_pop_rng_uniform(&rng) * o.max_age_s * 1000.0);
    gf_pop_params pp = {
        .max_party = (uint32_t)(q.team_size < GF_POP_MAX_PARTY ? q.team_size : GF_POP_MAX_PARTY)};
    if (gf_pop_generate(o.seed, &pp, 0, 0, queued, o.pool, &pool) != GF_OK) {
        fprintf(stderr, "gamefn-bench match: cannot generate the pool\n");
        goto out;
    }

    printf("pool %zu tickets, mode %s, shape %s (%" PRId64 "x%" PRId64 "), seed %" PRIu64
           ", ages U(0, %.0f s), %zu datacenters\n",
           o.pool, o.mode_name, o.shape, q.teams, q.team_size, o.seed, o.max_age_s, ndc);
    /* Run 0 is the cold tick (fresh workspace: every page new); runs 1..R reuse the
     * workspace as a long-running matcher does, and are the figure reported. */
    for (int r = 0; r <= o.repeat; r++) {
        gf_match_result_free(res);
        res = NULL;
        double w0 = wall_ms(), c0 = thread_cpu_ms();
        gf_err err = gf_match_tick_ws(ws, &cfg, pool->tickets, pool->n, BENCH_NOW_MS, &res);
        double w1 = wall_ms(), c1 = thread_cpu_ms();
        if (err != GF_OK) {
            fprintf(stderr, "gamefn-bench match: tick failed: %s\n", gf_err_str(err));
            goto out;
        }
        if (r == 0) {
            cold_ms = w1 - w0;
            continue;
        }
        times[r - 1] = w1 - w0;
        cpus[r - 1] = c1 - c0;
    }
    qsort(times, (size_t)o.repeat, sizeof *times, cmp_double);
    qsort(cpus, (size_t)o.repeat, sizeof *cpus, cmp_double);
    double tick_ms = times[o.repeat / 2];
    cpu_ms = cpus[o.repeat / 2];
    double bytes_per_ticket = (double)res->stats.bytes_peak / (double)o.pool;
    double total_per_ticket = (double)res->stats.bytes_total / (double)o.pool;

    if (gf_ref_from_result(res, &eng) != 0)
        goto out;
    gf_ref_check(&cfg, pool->tickets, pool->n, BENCH_NOW_MS, &eng, &qe);
    printf("engine  tick %.2f ms (median of %d warm ticks; min %.2f; thread cpu median %.2f, "
           "min %.2f; cold first tick %.2f ms)\n",
           tick_ms, o.repeat, times[0], cpu_ms, cpus[0], cold_ms);
    print_quality("engine", &qe);
    size_t why_count[GF_MATCH_WHY__COUNT] = {0};
    for (size_t i = 0; i < res->unmatched_len; i++)
        why_count[res->unmatched[i].why]++;
    printf("engine  unmatched %zu:", res->unmatched_len);
    for (int w = 0; w < GF_MATCH_WHY__COUNT; w++) {
        if (why_count[w])
            printf(" %s %zu", gf_match_why_str((gf_match_why)w), why_count[w]);
    }
    printf("\nengine  phases (thread cpu ms):");
    for (int ph = 0; ph < GF_MATCH_PHASES; ph++)
        printf(" %s %.2f", gf_match_phase_names[ph], res->stats.phase_ms[ph]);
    printf("\nengine  memory peak %zu bytes = %.1f bytes/ticket (total allocated %.1f "
           "bytes/ticket); walks %zu, tickets looked at %zu\n",
           res->stats.bytes_peak, bytes_per_ticket, total_per_ticket, res->stats.seeds_tried,
           res->stats.candidates_seen);
    printf("engine  exact search (seeds at their caps): %zu searched, %zu matched, %zu cut "
           "short by a bound, %zu steps\n",
           res->stats.exact_searches, res->stats.exact_matches, res->stats.exact_cut,
           res->stats.exact_steps);
    /* Starvation: each ticket left unmatched, against the pool at its turn as a seed. */
    gf_ref_turns turns;
    double a0 = wall_ms();
    gf_ref_check_turns(&cfg, pool->tickets, pool->n, BENCH_NOW_MS, res, &turns);
    printf("checker unmatched at their caps: %zu, of which a valid group held them at their "
           "turn: %zu (undecided %zu)\n"
           "checker unmatched below their caps: %zu, of which a valid group held them at their "
           "turn: %zu = %.2f %% (undecided %zu) [%.0f ms]\n",
           turns.capped, turns.capped_group, turns.capped_undecided, turns.below, turns.below_group,
           turns.below ? 100.0 * (double)turns.below_group / (double)turns.below : 0,
           turns.below_undecided, wall_ms() - a0);

    if (o.naive) {
        fflush(stdout);
        double w0 = wall_ms();
        if (gf_ref_naive(&cfg, pool->tickets, pool->n, BENCH_NOW_MS, &nai, naive_progress) != 0)
            goto out;
        naive_ms = wall_ms() - w0;
        gf_ref_check(&cfg, pool->tickets, pool->n, BENCH_NOW_MS, &nai, &qn);
        printf("naive   tick %.2f ms; speedup %.1fx\n", naive_ms, naive_ms / tick_ms);
        print_quality("naive", &qn);
        printf("ratio   engine/naive: skill spread p95 %.3f, delta ping p95 %.3f, tickets "
               "matched %.3f\n",
               qn.spread_p95 > 0 ? qe.spread_p95 / qn.spread_p95 : 0,
               qn.dping_p95 > 0 ? qe.dping_p95 / qn.dping_p95 : 0,
               qn.tickets ? (double)qe.tickets / (double)qn.tickets : 0);
        printf("ratio   engine/naive, not from the starvation fallback: skill spread p95 %.3f, "
               "delta ping p95 %.3f\n",
               qn.plain_spread_p95 > 0 ? qe.plain_spread_p95 / qn.plain_spread_p95 : 0,
               qn.plain_dping_p95 > 0 ? qe.plain_dping_p95 / qn.plain_dping_p95 : 0);
    }
    if (o.json) {
        printf("{\"pool\":%zu,\"mode\":\"%s\",\"shape\":\"%s\",\"seed\":%" PRIu64
               ",\"tick_ms\":%.3f,\"tick_cpu_ms\":%.3f,\"tick_cold_ms\":%.3f,\"matches\":%zu,"
               "\"tickets_matched\":%zu,"
               "\"players_matched\":%zu,\"skill_spread_mean\":%.2f,\"skill_spread_p95\":%.2f,"
               "\"delta_ping_mean\":%.2f,\"delta_ping_p95\":%.2f,\"team_diff_mean\":%.2f,"
               "\"violations\":%zu,\"bytes_per_ticket\":%.1f,\"bytes_total_per_ticket\":%.1f,"
               "\"starved_matches\":%zu,\"plain_skill_spread_p95\":%.2f,"
               "\"plain_delta_ping_p95\":%.2f,\"below_cap_matches\":%zu,"
               "\"capped_unmatched\":%zu,\"capped_starved\":%zu,\"capped_undecided\":%zu,"
               "\"below_unmatched\":%zu,\"below_missed\":%zu,\"below_undecided\":%zu,"
               "\"below_missed_in_window\":%zu,\"exact_searches\":%zu,\"exact_matches\":%zu,"
               "\"exact_cut\":%zu",
               o.pool, o.mode_name, o.shape, o.seed, tick_ms, cpu_ms, cold_ms, qe.matches,
               qe.tickets, qe.players, qe.spread_mean, qe.spread_p95, qe.dping_mean, qe.dping_p95,
               qe.team_diff_mean, qe.violations, bytes_per_ticket, total_per_ticket,
               qe.matches - qe.plain_matches, qe.plain_spread_p95, qe.plain_dping_p95,
               qe.below_matches, turns.capped, turns.capped_group, turns.capped_undecided,
               turns.below, turns.below_group, turns.below_undecided, turns.below_in_window,
               res->stats.exact_searches, res->stats.exact_matches, res->stats.exact_cut);
        if (o.naive)
            printf(",\"naive_ms\":%.3f,\"speedup\":%.2f,\"naive_matches\":%zu,"
                   "\"naive_tickets_matched\":%zu,\"naive_skill_spread_p95\":%.2f,"
                   "\"naive_delta_ping_p95\":%.2f,\"naive_violations\":%zu,"
                   "\"naive_below_cap_matches\":%zu",
                   naive_ms, naive_ms / tick_ms, qn.matches, qn.tickets, qn.spread_p95,
                   qn.dping_p95, qn.violations, qn.below_matches);
        printf("}\n");
    }
    /* A ticket at its caps left unmatched while a valid group held it is a violation of
     * the engine's promise, like a broken limit. */
    exit_code = qe.violations || turns.capped_group || (o.naive && qn.violations) ? 3 : 0;
out:
    gf_ref_matches_free(&eng);
    gf_ref_matches_free(&nai);
    gf_match_result_free(res);
    gf_match_workspace_free(ws);
    gf_pop_batch_free(pool);
    free(queued);
    free(times);
    free(cpus);
    return exit_code;
}
