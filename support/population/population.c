/*
 * support/population/population.c — the synthetic population (see population.h for the model).
 *
 * Design notes: every ticket draws from its own generator, seeded from (seed, serial),
 * so tickets do not depend on each other or on how a run is cut into calls. The draws
 * happen in a fixed order inside one ticket; changing that order changes the traces, so
 * add new draws at the end.
 */
#include "population.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_LEN 24 /* "t" / "p" + 20 digits + "-k" */
#define PI     3.14159265358979323846

static const gf_match_dc dcs[] = {
    {"us-east", "na"},        {"us-west", "na"},        {"eu-west", "eu"}, {"eu-central", "eu"},
    {"ap-northeast", "asia"}, {"ap-southeast", "asia"}, {"sa-east", "sa"}, {"me-central", "me"},
};
#define NDC (sizeof dcs / sizeof dcs[0])

static const double dc_pos[NDC][2] = {
    {39.04, -77.49},  /* Ashburn */
    {45.60, -121.20}, /* Oregon */
    {53.35, -6.26},   /* Dublin */
    {50.11, 8.68},    /* Frankfurt */
    {35.68, 139.69},  /* Tokyo */
    {1.35, 103.82},   /* Singapore */
    {-23.55, -46.63}, /* Sao Paulo */
    {24.45, 54.38},   /* Abu Dhabi */
};

static const gf_pop_metro metros[] = {
    {"new-york", GF_POP_NA, 40.71, -74.01, 9},      {"chicago", GF_POP_NA, 41.88, -87.63, 6},
    {"dallas", GF_POP_NA, 32.78, -96.80, 6},        {"los-angeles", GF_POP_NA, 34.05, -118.24, 8},
    {"toronto", GF_POP_NA, 43.65, -79.38, 6},       {"london", GF_POP_EU, 51.51, -0.13, 9},
    {"paris", GF_POP_EU, 48.86, 2.35, 8},           {"berlin", GF_POP_EU, 52.52, 13.40, 7},
    {"madrid", GF_POP_EU, 40.42, -3.70, 6},         {"warsaw", GF_POP_EU, 52.23, 21.01, 5},
    {"tokyo", GF_POP_ASIA, 35.68, 139.69, 6},       {"seoul", GF_POP_ASIA, 37.57, 126.98, 5},
    {"singapore", GF_POP_ASIA, 1.35, 103.82, 4},    {"sao-paulo", GF_POP_SA, -23.55, -46.63, 5},
    {"buenos-aires", GF_POP_SA, -34.60, -58.38, 3}, {"sydney", GF_POP_OCE, -33.87, 151.21, 4},
    {"dubai", GF_POP_ME, 25.20, 55.27, 2},          {"riyadh", GF_POP_ME, 24.71, 46.68, 1},
};
#define NMETRO (sizeof metros / sizeof metros[0])

static const char *const region_names[GF_POP__REGIONS] = {"NA", "EU", "Asia", "SA", "OCE", "ME"};

const gf_match_dc *gf_pop_datacenters(size_t *n)
{
    if (n)
        *n = NDC;
    return dcs;
}

const gf_pop_metro *gf_pop_metros(size_t *n)
{
    if (n)
        *n = NMETRO;
    return metros;
}

const char *gf_pop_region_name(int region)
{
    return region >= 0 && region < GF_POP__REGIONS ? region_names[region] : "?";
}

/* ---- generator ------------------------------------------------------------------ */

void gf_pop_rng_seed(gf_pop_rng *r, uint64_t seed, uint64_t stream)
{
    r->state = seed * 0x9e3779b97f4a7c15ull ^ (stream + 0x632be59bd9b4e019ull);
    (void)gf_pop_rng_next(r);
}

uint64_t gf_pop_rng_next(gf_pop_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double gf_pop_rng_uniform(gf_pop_rng *r)
{
    return (double)(gf_pop_rng_next(r) >> 11) * 0x1.0p-53;
}

double gf_pop_rng_normal(gf_pop_rng *r)
{
    double u1 = 1.0 - gf_pop_rng_uniform(r); /* (0, 1] */
    double u2 = gf_pop_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * PI * u2);
}

static double uniform_in(gf_pop_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * gf_pop_rng_uniform(r);
}

static double great_circle_km(double lat1, double lon1, double lat2, double lon2)
{
    double p1 = lat1 * PI / 180, p2 = lat2 * PI / 180;
    double dp = p2 - p1, dl = (lon2 - lon1) * PI / 180;
    double a = sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2);
    return 2 * 6371.0 * atan2(sqrt(a), sqrt(1 - a));
}

static uint32_t pick_metro(gf_pop_rng *r)
{
    double total = 0;
    for (size_t i = 0; i < NMETRO; i++)
        total += metros[i].weight;
    double x = gf_pop_rng_uniform(r) * total;
    for (size_t i = 0; i < NMETRO; i++) {
        if (x < metros[i].weight)
            return (uint32_t)i;
        x -= metros[i].weight;
    }
    return NMETRO - 1;
}

static uint32_t pick_party(gf_pop_rng *r, uint32_t max_party)
{
    static const double share[GF_POP_MAX_PARTY] = {60, 20, 10, 6, 4};
    double x = gf_pop_rng_uniform(r) * 100;
    uint32_t size = GF_POP_MAX_PARTY;
    for (uint32_t i = 0; i < GF_POP_MAX_PARTY; i++) {
        if (x < share[i]) {
            size = i + 1;
            break;
        }
        x -= share[i];
    }
    return size < max_party ? size : max_party;
}

/* Fills ticket i of the batch. */
static void make_ticket(gf_pop_batch *b, size_t i, uint64_t seed, uint64_t serial, uint32_t queue,
                        int64_t queued_ms, uint32_t max_party)
{
    static const double last_mile_median[3] = {8, 20, 45};
    gf_pop_rng r;
    gf_match_ticket *t = &b->tickets[i];
    gf_pop_info *info = &b->info[i];
    char *str = &b->strings[i * (GF_POP_MAX_PARTY + 1) * ID_LEN];
    gf_match_player *pl = &b->players[i * GF_POP_MAX_PARTY];
    gf_match_ping *pg = &b->pings[i * NDC];
    gf_match_attr *at = &b->attrs[i * 2];

    gf_pop_rng_seed(&r, seed, serial);
    uint32_t metro = pick_metro(&r);
    double lat = metros[metro].lat + uniform_in(&r, -0.5, 0.5);
    double lon = metros[metro].lon + uniform_in(&r, -0.5, 0.5);
    double c = gf_pop_rng_uniform(&r);
    uint8_t conn = c < 0.50 ? 0 : c < 0.85 ? 1 : 2;
    double last_mile = last_mile_median[conn] * exp(0.5 * gf_pop_rng_normal(&r));
    double miss = uniform_in(&r, 0.01, 0.05);

    size_t np = 0;
    double best_ms = INFINITY;
    size_t best_dc = 0;
    for (size_t d = 0; d < NDC; d++) {
        double km = great_circle_km(lat, lon, dc_pos[d][0], dc_pos[d][1]);
        double ms =
            km / 100.0 * uniform_in(&r, 1.3, 2.0) + last_mile + fabs(2.0 * gf_pop_rng_normal(&r));
        ms = round(ms * 10) / 10; /* clients report tenths of a millisecond */
        if (ms > GF_MATCH_MAX_PING_MS)
            ms = GF_MATCH_MAX_PING_MS;
        bool lost = gf_pop_rng_uniform(&r) < miss;
        if (ms < best_ms) {
            best_ms = ms;
            best_dc = d;
        }
        if (!lost)
            pg[np++] = (gf_match_ping){.dc = (uint32_t)d, .ms = ms};
    }
    if (np == 0) /* every probe lost: the client retries the nearest one */
        pg[np++] = (gf_match_ping){.dc = (uint32_t)best_dc, .ms = best_ms};

    uint32_t party = pick_party(&r, max_party);
    double shared = gf_pop_rng_normal(&r);
    snprintf(str, ID_LEN, "t%llu", (unsigned long long)serial);
    for (uint32_t k = 0; k < party; k++) {
        char *id = str + (k + 1) * ID_LEN;
        snprintf(id, ID_LEN, "p%llu-%u", (unsigned long long)serial, k);
        double z = 0.8 * shared + 0.6 * gf_pop_rng_normal(&r);
        pl[k].id = id;
        pl[k].skill = 1500 + 300 * z;
        pl[k].sigma = uniform_in(&r, 25, 100);
    }
    bool pc = gf_pop_rng_uniform(&r) < 0.6;
    bool kbm = pc && gf_pop_rng_uniform(&r) < 0.85;
    at[0] = (gf_match_attr){.key = "platform", .value = pc ? "pc" : "console"};
    at[1] = (gf_match_attr){.key = "input", .value = kbm ? "kbm" : "pad"};

    /* Weibull(k = 1.5) with median 90 s: scale = median / ln(2)^(1/k). */
    double scale = 90000.0 / pow(log(2.0), 1.0 / 1.5);
    double u = 1.0 - gf_pop_rng_uniform(&r);
    info->metro = metro;
    info->connection = conn;
    info->patience_ms = (int64_t)(scale * pow(-log(u), 1.0 / 1.5));
    info->resubmit_ms = gf_pop_rng_uniform(&r) < 0.02 ? (int64_t)uniform_in(&r, 0, 1000) : -1;

    t->id = str;
    t->queue = queue;
    t->region = GF_MATCH_REGION_AUTO;
    t->queued_ms = queued_ms;
    t->players = pl;
    t->players_len = party;
    t->pings = pg;
    t->pings_len = np;
    t->attrs = at;
    t->attrs_len = 2;
}

void gf_pop_batch_free(gf_pop_batch *b)
{
    if (!b)
        return;
    free(b->tickets);
    free(b->info);
    free(b->players);
    free(b->pings);
    free(b->attrs);
    free(b->strings);
    free(b);
}

gf_err gf_pop_generate(uint64_t seed, const gf_pop_params *params, uint32_t queue,
                       uint64_t first_serial, const int64_t *queued_ms, size_t n,
                       gf_pop_batch **out)
{
    uint32_t max_party = params ? params->max_party : GF_POP_MAX_PARTY;
    gf_pop_batch *b = NULL;

    if (!out || (n && !queued_ms) || max_party < 1 || max_party > GF_POP_MAX_PARTY ||
        n > (size_t)1 << 28)
        return GF_ERR_INVALID;
    *out = NULL;
    b = calloc(1, sizeof *b);
    if (!b)
        return GF_ERR_NOMEM;
    size_t m = n ? n : 1;
    b->tickets = calloc(m, sizeof *b->tickets);
    b->info = calloc(m, sizeof *b->info);
    b->players = calloc(m * GF_POP_MAX_PARTY, sizeof *b->players);
    b->pings = calloc(m * NDC, sizeof *b->pings);
    b->attrs = calloc(m * 2, sizeof *b->attrs);
    b->strings = calloc(m * (GF_POP_MAX_PARTY + 1) * ID_LEN, 1);
    if (!b->tickets || !b->info || !b->players || !b->pings || !b->attrs || !b->strings) {
        gf_pop_batch_free(b);
        return GF_ERR_NOMEM;
    }
    b->n = n;
    for (size_t i = 0; i < n; i++)
        make_ticket(b, i, seed, first_serial + i, queue, queued_ms[i], max_party);
    *out = b;
    return GF_OK;
}
