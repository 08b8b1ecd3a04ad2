/*
 * ticker — publishes the matcher tick of every tick group at the configured interval.
 *
 * Design notes:
 * - The tick rule (one leader by a lease with a fencing token, the period, the tick
 *   headers, a clean stop handing over at once) is the runtime's tick endpoint, in one
 *   place (runtime/src/endpoints/endpoint_tick.c): this function is its publisher role
 *   (GF_TICK_PUBLISH), the matchers its handlers. Every instance competes for the lease
 *   "tick.ticker.ticks" in bucket `leases` (ttl three intervals, at least 1 s); only the
 *   holder publishes, one tick per tick group each interval, all of one round sharing
 *   Gamefn-Tick-Seq (docs/PROTOCOL.md §14).
 * - The tick groups come from functions.matcher.matchmaking (gamefn/tickets/config.h),
 *   read from the file this instance was started with; the interval from
 *   functions.ticker.interval.
 *
 * Threads: init and fini run on the main thread; the runtime's ticker thread reads the
 * subject list, which stays unchanged until fini.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/function.h"
#include "gamefn/log.h"
#include "gamefn/tickets/config.h"
#include "ticker_config.h"

typedef struct ticker {
    gf_config *mm_config;
    gf_mm_tables tables;
    char **subjects; /* NULL-terminated: gamefn.v1.tick.matcher.<group> */
} ticker;

static void fini(gf_fn *fn)
{
    ticker *t = gf_fn_state(fn);
    if (!t)
        return;
    for (size_t i = 0; t->subjects && t->subjects[i]; i++)
        free(t->subjects[i]);
    free(t->subjects);
    gf_config_free(t->mm_config);
    free(t);
    gf_fn_set_state(fn, NULL);
}

static gf_err init(gf_fn *fn)
{
    char why[256] = "";
    gf_config_error cerr;
    ticker *t = calloc(1, sizeof *t);
    if (!t)
        return GF_ERR_NOMEM;
    gf_fn_set_state(fn, t);
    gf_err err = gf_mm_config_load(gf_fn_config(fn)->path, &t->mm_config, &cerr);
    if (err != GF_OK) {
        gf_log_error("ticker cannot start", "why=\"%s\"", cerr.message);
        return err;
    }
    const gf_mm_config *mm = gf_config_function(t->mm_config);
    if ((err = gf_mm_tables_build(&mm->matchmaking, &t->tables, why, sizeof why)) != GF_OK) {
        gf_log_error("ticker cannot start", "why=\"%s\"", why);
        return err;
    }
    t->subjects = calloc(t->tables.groups_len + 1, sizeof *t->subjects);
    if (!t->subjects)
        return GF_ERR_NOMEM;
    for (size_t g = 0; g < t->tables.groups_len; g++) {
        size_t n = sizeof GF_MM_TICK_SUBJECT + 1 + strlen(t->tables.groups[g].name);
        if (!(t->subjects[g] = malloc(n)))
            return GF_ERR_NOMEM;
        snprintf(t->subjects[g], n, "%s.%s", GF_MM_TICK_SUBJECT, t->tables.groups[g].name);
    }
    gf_log_info("tick groups", "groups=%zu interval_ms=%lld", t->tables.groups_len,
                (long long)((const ticker_config *)gf_fn_section(fn))->interval_ms);
    return GF_OK;
}

static const char *const *tick_subjects(gf_fn *fn)
{
    const ticker *t = gf_fn_state(fn);
    return (const char *const *)t->subjects;
}

static int64_t tick_period(gf_fn *fn)
{
    return ((const ticker_config *)gf_fn_section(fn))->interval_ms;
}

static const gf_endpoint endpoints[] = {
    {.name = "ticks",
     .kind = GF_ENDPOINT_TICK,
     .tick = {.role = GF_TICK_PUBLISH,
              .subject = GF_MM_TICK_SUBJECT ".*", /* what $SRV INFO shows */
              .subjects = tick_subjects,          /* one tick per tick group */
              .period = tick_period,              /* functions.ticker.interval */
              .period_ms = 250,
              .lease_bucket = "leases"}},
};

static const gf_function ticker_function = {
    .name = "ticker",
    .version = GAMEFN_RELEASE, /* the release: functions/CMakeLists.txt */
    .description = "Publishes the matcher tick of every tick group (one leader by lease).",
    .config = &ticker_config_table,
    .endpoints = endpoints,
    .endpoints_len = sizeof endpoints / sizeof endpoints[0],
    .init = init,
    .fini = fini,
};

int main(int argc, char **argv)
{
    return gf_function_main(&ticker_function, argc, argv);
}
