/*
 * gamefn-report-synth — writes a synthetic run directory in the report's format
 * (docs/REPORT.md): for the report's tests, and as a working example for the programs
 * that write the real thing (the local-run supervisor, the simulated game, the checker).
 *
 *   gamefn-report-synth DIR [--seconds N] [--seed S] [--unhealthy] [--hostile]
 *                           [--without NAME[,NAME...]] [--partial]
 *
 *   --unhealthy  plant what a reader must see: invariant counts > 0, an unplanned
 *                restart, waits that miss their goals, an open event gap
 *   --hostile    put HTML and script in every free-text string (player names, reasons,
 *                parameters, checker details): the report must show them as text
 *   --without    leave files out (summary.json cannot be), e.g. events.tsv,lag.tsv
 *   --partial    end tickets.tsv with half a line, as a writer killed mid-write would
 *
 * The run: 5 regions (sa is the low-population one, its merge off for the first half
 * and on for the second), 3 modes, 2 shapes, 8 datacenters, 4 consumers; one row per
 * second in the sampled files. Seeded: the same seed writes the same files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "population.h" /* gf_pop_rng: the population model's seeded generator */

/* lognormal with the given median */
static double lognormal(gf_pop_rng *r, double median, double sigma)
{
    return median * exp(sigma * gf_pop_rng_normal(r));
}

static const char *const regions[] = {"na", "eu", "asia", "sa", "me"};
static const double region_rate[] = {14, 14, 6, 2.5, 1.2}; /* tickets per second */
static const char *const modes[] = {"hybrid", "sbmm", "ping_first"};
static const char *const shapes[] = {"5v5", "1v1"};
static const char *const dcs[] = {"us-east",      "us-west",      "eu-west", "eu-central",
                                  "ap-northeast", "ap-southeast", "sa-east", "me-central"};
static const char *const consumers[] = {"leaderboard", "analytics", "crashes", "history"};

typedef struct opts {
    const char *dir;
    int seconds;
    uint64_t seed;
    bool unhealthy, hostile, partial;
    char without[512];
} opts;

static bool wanted(const opts *o, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = o->without; (p = strstr(p, name)); p += n)
        if ((p == o->without || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return false;
    return true;
}

static FILE *open_file(const opts *o, const char *name)
{
    if (!wanted(o, name))
        return NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", o->dir, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "gamefn-report-synth: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

static void close_file(FILE *f, const char *name)
{
    if (f && fclose(f) != 0) {
        fprintf(stderr, "gamefn-report-synth: %s: write failed\n", name);
        exit(1);
    }
}

static const char *hostile(const opts *o, const char *plain, const char *evil)
{
    return o->hostile ? evil : plain;
}

static void tickets_and_matches(const opts *o, gf_pop_rng *r)
{
    FILE *ft = open_file(o, "tickets.tsv"), *fm = open_file(o, "matches.tsv");
    if (ft)
        fputs("t\tticket\tmode\tshape\tregion\tparty\tmerge\toutcome\twait_ms\tdelta_ping_ms\n",
              ft);
    if (fm)
        fputs("t\tmatch\tmode\tshape\tregion\tdatacenter\tmerge\tplayers\tskill_spread\t"
              "alloc_ms\n",
              fm);
    uint64_t ticket = 0, match = 0;
    for (int s = 0; s < o->seconds; s++) {
        for (size_t g = 0; g < sizeof regions / sizeof regions[0]; g++) {
            bool low = strcmp(regions[g], "sa") == 0;
            bool merge_on = low && s >= o->seconds / 2;
            int n = (int)(region_rate[g] + gf_pop_rng_uniform(r) * 2);
            for (int i = 0; i < n; i++) {
                const char *mode = modes[gf_pop_rng_next(r) % 3];
                const char *shape = gf_pop_rng_uniform(r) < 0.7 ? "5v5" : "1v1";
                double wait =
                    low ? lognormal(r, merge_on ? 2000 : 8000, 0.5) : lognormal(r, 900, 0.8);
                if (o->unhealthy)
                    wait *= 4;
                double u = gf_pop_rng_uniform(r);
                const char *outcome = u < 0.92 ? "assigned" : u < 0.98 ? "cancelled" : "timed_out";
                if (ft) {
                    fprintf(ft, "%.3f\tt-%llu\t%s\t%s\t%s\t%d\t%s\t%s\t%.0f\t",
                            s + gf_pop_rng_uniform(r), (unsigned long long)++ticket, mode, shape,
                            regions[g], 1 + (int)(gf_pop_rng_next(r) % 3), merge_on ? "on" : "off",
                            outcome, wait);
                    if (strcmp(outcome, "assigned") == 0)
                        fprintf(ft, "%.1f\n",
                                strcmp(mode, "ping_first") == 0
                                    ? -log(1 - gf_pop_rng_uniform(r)) * 5
                                    : -log(1 - gf_pop_rng_uniform(r)) * 18);
                    else
                        fputs("-\n", ft);
                }
            }
            int m = n / 4 + (gf_pop_rng_uniform(r) < 0.5);
            for (int i = 0; i < m && fm; i++) {
                const char *mode = modes[gf_pop_rng_next(r) % 3];
                double spread = strcmp(mode, "sbmm") == 0     ? lognormal(r, 70, 0.4)
                                : strcmp(mode, "hybrid") == 0 ? lognormal(r, 180, 0.5)
                                                              : lognormal(r, 650, 0.3);
                fprintf(fm, "%.3f\tm-%llu\t%s\t%s\t%s\t%s\t%s\t10\t%.0f\t",
                        s + gf_pop_rng_uniform(r), (unsigned long long)++match, mode,
                        shapes[gf_pop_rng_next(r) % 2], regions[g], dcs[gf_pop_rng_next(r) % 8],
                        low && s >= o->seconds / 2 ? "on" : "off", spread);
                if (gf_pop_rng_uniform(r) < 0.99)
                    fprintf(fm, "%.1f\n", lognormal(r, 12, 0.5));
                else
                    fputs("-\n", fm);
            }
        }
    }
    if (ft && o->partial)
        fputs("12.5\tt-999999\thybr", ft); /* a writer killed mid-line */
    close_file(ft, "tickets.tsv");
    close_file(fm, "matches.tsv");
}

static void sampled(const opts *o, gf_pop_rng *r)
{
    FILE *fq = open_file(o, "queues.tsv"), *ff = open_file(o, "fleet.tsv");
    FILE *fe = open_file(o, "events.tsv"), *fl = open_file(o, "lag.tsv");
    if (fq)
        fputs("t\tqueue\twaiting\n", fq);
    if (ff)
        fputs("t\tdatacenter\twarm\tfree\tbusy\n", ff);
    if (fe)
        fputs("t\tproduced\tstored\tapplied\n", fe);
    if (fl)
        fputs("t\tconsumer\tpending\tack_pending\n", fl);
    double produced = 0, stored = 0, applied = 0;
    for (int s = 0; s <= o->seconds; s++) {
        double day = sin((double)s / (o->seconds + 1) * M_PI);
        for (size_t m = 0; fq && m < 3; m++)
            for (size_t h = 0; h < 2; h++)
                fprintf(fq, "%d\t%s-%s\t%.0f\n", s, modes[m], shapes[h],
                        (h == 0 ? 40 : 12) * (0.6 + day) + gf_pop_rng_uniform(r) * 8);
        for (size_t d = 0; ff && d < 8; d++) {
            double busy = floor((d < 4 ? 30 : 10) * (0.4 + day) + gf_pop_rng_uniform(r) * 3);
            double warm = 4 + floor(gf_pop_rng_uniform(r) * 3), free_ = warm + 6;
            fprintf(ff, "%d\t%s\t%.0f\t%.0f\t%.0f\n", s, dcs[d], warm, free_, busy);
        }
        double rate = 900 * (0.5 + day) + gf_pop_rng_uniform(r) * 50;
        produced += rate;
        stored += rate - (s % 7 == 0 ? 3 : 0);
        applied = stored - 40 * gf_pop_rng_uniform(r);
        if (fe)
            fprintf(fe, "%d\t%.0f\t%.0f\t%.0f\n", s, produced, stored, applied);
        for (size_t c = 0; fl && c < 4; c++) {
            double pending =
                c == 1 ? 200 * day + gf_pop_rng_uniform(r) * 30 : gf_pop_rng_uniform(r) * 20;
            if (o->unhealthy && c == 2 && s > o->seconds / 2)
                pending = 1500 + 80.0 * (s - o->seconds / 2);
            fprintf(fl, "%d\t%s\t%.0f\t%.0f\n", s, consumers[c], pending,
                    floor(gf_pop_rng_uniform(r) * 8));
        }
    }
    close_file(fq, "queues.tsv");
    close_file(ff, "fleet.tsv");
    close_file(fe, "events.tsv");
    close_file(fl, "lag.tsv");
}

static void write_json(const opts *o, const char *name, json_t *root)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", o->dir, name);
    if (json_dump_file(root, path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0) {
        fprintf(stderr, "gamefn-report-synth: %s: write failed\n", path);
        exit(1);
    }
    json_decref(root);
}

/* summary.json's analytics and crashes, as gamefn analytics --json --per-minute and
 * gamefn crashes --json print them: per minute of the run kill 100 + 7i, score 90 + 5i,
 * zone_change 40 + i, crash 2 + i % 2 (i from 0), the crashes in three groups. */
static void event_log(const opts *o, json_t *root)
{
    static const char *const types[] = {"kill", "score", "zone_change", "crash"};
    long long total[4] = {0};
    int64_t start = INT64_C(1735732800000); /* 2025-01-01T12:00:00Z, the run's start */
    json_t *minutes = json_array();
    for (int i = 0; i * 60 < o->seconds; i++) {
        long long n[4] = {100 + 7 * i, 90 + 5 * i, 40 + i, 2 + i % 2};
        json_t *counts = json_array();
        for (int t = 0; t < 4; t++) {
            json_array_append_new(
                counts, json_pack("{s:s, s:I}", "name", types[t], "count", (json_int_t)n[t]));
            total[t] += n[t];
        }
        json_array_append_new(minutes, json_pack("{s:I, s:I, s:o, s:i, s:i}", "minute_unix_ms",
                                                 (json_int_t)(start + 60000 * i), "total",
                                                 (json_int_t)(n[0] + n[1] + n[2] + n[3]), "counts",
                                                 counts, "other", 0, "unattributed", 0));
    }
    json_t *counts = json_array();
    for (int t = 0; t < 4; t++)
        json_array_append_new(
            counts, json_pack("{s:s, s:I}", "name", types[t], "count", (json_int_t)total[t]));
    json_object_set_new(
        root, "analytics",
        json_pack("{s:I, s:I, s:s, s:I, s:o, s:i, s:i, s:o, s:i}", "from_unix_ms",
                  (json_int_t)start, "to_unix_ms",
                  (json_int_t)(start + 60000 * json_array_size(minutes)), "group_by", "type",
                  "total", (json_int_t)(total[0] + total[1] + total[2] + total[3]), "counts",
                  counts, "other", 0, "unattributed", 0, "minutes", minutes, "records", 16));
    long long crashes = total[3], first = crashes - crashes / 3 - crashes / 4;
    long long group[3] = {first, crashes / 3, crashes / 4};
    const char *sig[3] = {hostile(o, "SIGSEGV in render", "<script>alert('crash')</script>"),
                          "SIGABRT in audio", "assert in netcode"};
    json_t *top = json_array();
    for (int g = 0; g < 3; g++)
        json_array_append_new(
            top, json_pack("{s:s, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:i}", "fingerprint",
                           g == 0   ? "a44a9e6c2475f636552ea437ca26cb09"
                           : g == 1 ? "508bba56a1f3bb6b6c8450f1490dd2b3"
                                    : "7b4e2f6b1036efa87b7d5bf20ac6a9cd",
                           "count", (json_int_t)group[g], "first_seen_unix_ms",
                           (json_int_t)(start + 5000 + 1000 * g), "last_seen_unix_ms",
                           (json_int_t)(start + 1000 * (int64_t)o->seconds - 2000 * g), "signature",
                           sig[g], "message", "synthetic crash", "build", "1.2.3", "platform",
                           "linux", "builds", 1));
    json_object_set_new(root, "crashes",
                        json_pack("{s:o, s:i, s:I}", "top", top, "fingerprints", 3, "crashes",
                                  (json_int_t)crashes));
}

static void summary(const opts *o)
{
    json_t *restarts = json_array();
    json_array_append_new(restarts, json_pack("{s:f, s:s, s:s, s:s, s:b}", "t", 20.5, "function",
                                              "allocator", "instance", "allocator-2", "reason",
                                              "SIGKILL (fault injection)", "planned", 1));
    if (o->unhealthy)
        json_array_append_new(restarts,
                              json_pack("{s:f, s:s, s:s, s:s, s:b}", "t", 31.0, "function",
                                        "matcher", "instance", "matcher-1", "reason",
                                        hostile(o, "exited with status 139 (SIGSEGV)",
                                                "<script>alert('restart')</script>"),
                                        "planned", 0));
    json_t *top = json_array();
    for (int i = 0; i < 10; i++) {
        char name[64];
        snprintf(name, sizeof name, "player-%03d", 17 * i + 3);
        const char *player =
            i == 0 ? hostile(o, name, "<img src=x onerror=alert(1)>&amp;\"'") : name;
        json_array_append_new(top, json_pack("{s:i, s:s, s:i}", "rank", i + 1, "player", player,
                                             "score", 5000 - 310 * i));
    }
    json_t *root = json_pack(
        "{s:i, s:{s:s, s:s, s:i, s:f, s:i, s:s, s:s, s:s, s:{s:i, s:i}, s:s}, s:o, "
        "s:{s:s, s:o}, s:{s:i, s:{s:i, s:i}}, s:{s:i, s:i, s:i}}",
        "format", 1, "run", "id", hostile(o, "synthetic-1", "</title><script>alert(2)</script>"),
        "started", "2025-01-01T12:00:00Z", "seconds", o->seconds, "elapsed_s",
        (double)o->seconds + 0.4, "seed", (int)o->seed, "population", "mid", "low_pop_region", "sa",
        "status", "completed", "replicas", "matcher", 3, "allocator", 2, "note",
        hostile(o, "generated by gamefn-report-synth", "a <b>bold</b> & \"quoted\" note"),
        "restarts", restarts, "leaderboard", "board", "score", "top", top, "dlq", "messages",
        o->unhealthy ? 2 : 0, "by_consumer", "leaderboard", o->unhealthy ? 2 : 0, "analytics", 0,
        "gaps", "suspected", 3, "closed", 3 - (o->unhealthy ? 1 : 0), "open", o->unhealthy ? 1 : 0);
    event_log(o, root);
    write_json(o, "summary.json", root);
}

static void check(const opts *o)
{
    if (!wanted(o, "check.json"))
        return;
    static const char *const names[] = {"double_claims", "players_in_two_matches",
                                        "tickets_lost",  "limit_violations",
                                        "events_lost",   "events_double_applied"};
    json_t *inv = json_array();
    for (size_t i = 0; i < 6; i++) {
        int count = o->unhealthy && (i == 0 || i == 3) ? (int)i + 2 : 0;
        json_t *e = json_pack("{s:s, s:i}", "name", names[i], "count", count);
        if (count)
            json_object_set_new(e, "examples", json_pack("[s, s]", "t-12", "t-40"));
        json_array_append_new(inv, e);
    }
    json_array_append_new(inv, json_pack("{s:s, s:i, s:s, s:s}", "name", "orphaned_claims", "count",
                                         0, "detail", hostile(o, "0 of 1,204 claims", "<i>x</i>"),
                                         "explanation", "claims never released"));
    write_json(o, "check.json",
               json_pack("{s:i, s:s, s:o}", "format", 1, "checked_at", "2025-01-01T12:01:05Z",
                         "invariants", inv));
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"seconds", required_argument, NULL, 's'}, {"seed", required_argument, NULL, 'S'},
        {"unhealthy", no_argument, NULL, 'u'},     {"hostile", no_argument, NULL, 'H'},
        {"without", required_argument, NULL, 'w'}, {"partial", no_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    opts o = {.seconds = 60, .seed = 1};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            o.seconds = atoi(optarg);
            break;
        case 'S':
            o.seed = strtoull(optarg, NULL, 10);
            break;
        case 'u':
            o.unhealthy = true;
            break;
        case 'H':
            o.hostile = true;
            break;
        case 'w':
            snprintf(o.without, sizeof o.without, "%s", optarg);
            break;
        case 'p':
            o.partial = true;
            break;
        case 'h':
            printf("usage: gamefn-report-synth DIR [--seconds N] [--seed S] [--unhealthy] "
                   "[--hostile] [--without NAME,...] [--partial]\n");
            return 0;
        default:
            return 2;
        }
    }
    if (argc - optind != 1 || o.seconds < 2 || o.seconds > 100000) {
        fprintf(stderr, "usage: gamefn-report-synth DIR [--seconds 2..100000] [options]\n");
        return 2;
    }
    o.dir = argv[optind];
    if (mkdir(o.dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "gamefn-report-synth: %s: %s\n", o.dir, strerror(errno));
        return 1;
    }
    gf_pop_rng r;
    gf_pop_rng_seed(&r, o.seed, 0);
    summary(&o);
    check(&o);
    tickets_and_matches(&o, &r);
    sampled(&o, &r);
    return 0;
}
