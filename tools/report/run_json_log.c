/*
 * run_json_log.c — summary.json's event-log sections (run.h): "analytics" and "crashes",
 * in the shape `gamefn analytics --json --per-minute` and `gamefn crashes --json` print
 * (tools/gamefn/query.h writes both). Only what the report shows is checked; anything
 * else in them is ignored. A section of the wrong shape is left out whole and named
 * under "Input problems", like every other part of summary.json.
 */
#include <stdbool.h>

#include "run.h"

/* [{name: string, count: count}], the same list shape at every level. */
static bool counts_ok(json_t *a)
{
    size_t i;
    json_t *c;
    int64_t n;
    if (!json_is_array(a))
        return false;
    json_array_foreach(a, i, c)
    {
        if (!json_is_string(json_object_get(c, "name")) ||
            !gf_run_count_value(json_object_get(c, "count"), &n))
            return false;
    }
    return true;
}

static bool analytics_ok(json_t *an)
{
    int64_t n;
    size_t i;
    json_t *m, *minutes = json_object_get(an, "minutes");
    if (!gf_run_count_value(json_object_get(an, "total"), &n) ||
        !counts_ok(json_object_get(an, "counts")) || (minutes && !json_is_array(minutes)))
        return false;
    json_array_foreach(minutes, i, m)
    {
        if (!gf_run_count_value(json_object_get(m, "minute_unix_ms"), &n) ||
            !gf_run_count_value(json_object_get(m, "total"), &n) ||
            !counts_ok(json_object_get(m, "counts")))
            return false;
    }
    return true;
}

static bool crashes_ok(json_t *cr)
{
    int64_t n;
    size_t i;
    json_t *g, *top = json_object_get(cr, "top");
    if (!gf_run_count_value(json_object_get(cr, "fingerprints"), &n) ||
        !gf_run_count_value(json_object_get(cr, "crashes"), &n) || !json_is_array(top))
        return false;
    json_array_foreach(top, i, g)
    {
        json_t *sig = json_object_get(g, "signature");
        if (!json_is_string(json_object_get(g, "fingerprint")) ||
            !gf_run_count_value(json_object_get(g, "count"), &n) ||
            !gf_run_count_value(json_object_get(g, "first_seen_unix_ms"), &n) ||
            !gf_run_count_value(json_object_get(g, "last_seen_unix_ms"), &n) ||
            (sig && !json_is_string(sig)))
            return false;
    }
    return true;
}

static void read_one(gf_run *run, json_t *v, bool (*ok)(json_t *), gf_run_state *state,
                     json_t **out, const char *problem)
{
    *out = NULL;
    *state = v ? GF_RUN_UNUSABLE : GF_RUN_ABSENT;
    if (!v)
        return;
    if (!json_is_object(v) || !ok(v)) {
        gf_run_problem(run, "%s", problem);
        return;
    }
    *out = v;
    *state = GF_RUN_LOADED;
}

void gf_run_read_log(gf_run *run, json_t *root)
{
    read_one(run, json_object_get(root, "analytics"), analytics_ok, &run->analytics_state,
             &run->analytics,
             "summary.json: analytics must be {\"total\": count, \"counts\": [{\"name\", "
             "\"count\"}], \"minutes\": [{\"minute_unix_ms\", \"total\", \"counts\"}]} "
             "(gamefn analytics --json)");
    read_one(run, json_object_get(root, "crashes"), crashes_ok, &run->crashes_state, &run->crashes,
             "summary.json: crashes must be {\"fingerprints\": count, \"crashes\": count, "
             "\"top\": [{\"fingerprint\", \"count\", \"first_seen_unix_ms\", "
             "\"last_seen_unix_ms\"}]} (gamefn crashes --json)");
}
