/*
 * run_json.c — summary.json and check.json (run.h; the keys are docs/REPORT.md's).
 *
 * Design notes: every value is checked for its type and range before use; a section with
 * a wrong value is left out whole and the problem says which key of which entry, so the
 * report never shows half of a list as if it were all of it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define COUNT_MAX 1e15

/* A JSON value of an optional key: its string, or NULL (absent). *bad when it is there
 * but not a string. */
static const char *opt_string(json_t *obj, const char *key, bool *bad)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        *bad = true;
        return NULL;
    }
    return json_string_value(v);
}

/* A whole number in [0, COUNT_MAX]: true and *out, else false. */
bool gf_run_count_value(json_t *v, int64_t *out)
{
    if (!json_is_integer(v))
        return false;
    json_int_t n = json_integer_value(v);
    if (n < 0 || (double)n > COUNT_MAX)
        return false;
    *out = (int64_t)n;
    return true;
}

static bool number_value(json_t *v, double lo, double hi, double *out)
{
    if (!json_is_number(v))
        return false;
    double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi)
        return false;
    *out = d;
    return true;
}

static void read_params(gf_run *run, json_t *p)
{
    bool bad = false;
    run->population = opt_string(p, "population", &bad);
    if (bad)
        gf_run_problem(run, "summary.json: run.population must be a string");
    run->population_given = run->population != NULL;
    if (!run->population)
        run->population = "mid";
    bad = false;
    run->low_pop_region = opt_string(p, "low_pop_region", &bad);
    if (bad)
        gf_run_problem(run, "summary.json: run.low_pop_region must be a string");
    bad = false;
    run->status = opt_string(p, "status", &bad);
    if (bad)
        gf_run_problem(run, "summary.json: run.status must be a string");
    static const char *const durations[] = {"seconds", "elapsed_s"};
    for (size_t i = 0; i < 2; i++) {
        json_t *v = json_object_get(p, durations[i]);
        double d;
        if (v && !number_value(v, 0, 1e7, &d))
            gf_run_problem(run, "summary.json: run.%s must be a number of seconds in [0, 1e7]",
                           durations[i]);
    }
}

static void read_restarts(gf_run *run, json_t *a)
{
    if (!a) {
        run->restarts_state = GF_RUN_ABSENT;
        return;
    }
    run->restarts_state = GF_RUN_UNUSABLE;
    if (!json_is_array(a)) {
        gf_run_problem(run, "summary.json: restarts must be an array");
        return;
    }
    size_t n = json_array_size(a);
    run->restarts = calloc(n ? n : 1, sizeof *run->restarts);
    if (!run->restarts) {
        gf_run_problem(run, "summary.json: restarts: out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(a, i);
        gf_run_restart *x = &run->restarts[i];
        bool bad = !json_is_object(r);
        x->function = bad ? NULL : opt_string(r, "function", &bad);
        x->instance = bad ? NULL : opt_string(r, "instance", &bad);
        x->reason = bad ? NULL : opt_string(r, "reason", &bad);
        json_t *t = json_object_get(r, "t");
        x->t = NAN;
        if (t && !number_value(t, 0, 1e7, &x->t))
            bad = true;
        json_t *planned = json_object_get(r, "planned");
        if (planned && !json_is_boolean(planned))
            bad = true;
        x->planned = json_is_true(planned);
        if (bad || !x->function) {
            gf_run_problem(run,
                           "summary.json: restarts[%zu]: needs \"function\" (a string); "
                           "\"instance\" and \"reason\" are strings, \"t\" seconds in [0, 1e7], "
                           "\"planned\" true or false",
                           i);
            free(run->restarts);
            run->restarts = NULL;
            return;
        }
    }
    run->nrestarts = n;
    run->restarts_state = GF_RUN_LOADED;
}

static void read_leaderboard(gf_run *run, json_t *lb)
{
    if (!lb) {
        run->lb_state = GF_RUN_ABSENT;
        return;
    }
    run->lb_state = GF_RUN_UNUSABLE;
    bool bad = !json_is_object(lb);
    run->lb_board = bad ? NULL : opt_string(lb, "board", &bad);
    json_t *top = json_object_get(lb, "top");
    if (bad || !json_is_array(top)) {
        gf_run_problem(run,
                       "summary.json: leaderboard must be {\"board\": string, \"top\": [...]}");
        return;
    }
    size_t n = json_array_size(top);
    for (size_t i = 0; i < n && i < GF_RUN_LB_MAX; i++) {
        json_t *e = json_array_get(top, i);
        gf_run_lb_entry *x = &run->lb[i];
        bad = !json_is_object(e);
        x->player = bad ? NULL : opt_string(e, "player", &bad);
        if (bad || !x->player || !gf_run_count_value(json_object_get(e, "rank"), &x->rank) ||
            x->rank < 1 || !number_value(json_object_get(e, "score"), -1e300, 1e300, &x->score)) {
            gf_run_problem(run,
                           "summary.json: leaderboard.top[%zu]: needs \"rank\" (a whole number "
                           ">= 1), \"player\" (a string) and \"score\" (a number)",
                           i);
            run->nlb = 0;
            return;
        }
    }
    run->nlb = n < GF_RUN_LB_MAX ? n : GF_RUN_LB_MAX;
    run->lb_state = GF_RUN_LOADED;
}

static void read_dlq(gf_run *run, json_t *d)
{
    if (!d) {
        run->dlq_state = GF_RUN_ABSENT;
        return;
    }
    run->dlq_state = GF_RUN_UNUSABLE;
    json_t *by = json_object_get(d, "by_consumer");
    bool ok =
        json_is_object(d) && gf_run_count_value(json_object_get(d, "messages"), &run->dlq_messages);
    if (ok && by) {
        const char *k;
        json_t *v;
        int64_t c;
        ok = json_is_object(by);
        json_object_foreach(by, k, v) ok = ok && gf_run_count_value(v, &c);
    }
    if (!ok) {
        gf_run_problem(run, "summary.json: dlq must be {\"messages\": count, \"by_consumer\": "
                            "{name: count}} with whole numbers >= 0");
        return;
    }
    run->dlq_by_consumer = by;
    run->dlq_state = GF_RUN_LOADED;
}

static void read_gaps(gf_run *run, json_t *g)
{
    json_t *why = json_object_get(g, "not_counted");
    if (!g || (json_is_string(why) && !json_object_get(g, "open"))) {
        run->gaps_not_counted = json_string_value(why);
        run->gaps_state = GF_RUN_ABSENT;
        return;
    }
    run->gaps_state = GF_RUN_UNUSABLE;
    run->gaps_suspected = run->gaps_closed = -1;
    bool ok = json_is_object(g) && gf_run_count_value(json_object_get(g, "open"), &run->gaps_open);
    json_t *s = json_object_get(g, "suspected"), *c = json_object_get(g, "closed");
    ok = ok && (!s || gf_run_count_value(s, &run->gaps_suspected)) &&
         (!c || gf_run_count_value(c, &run->gaps_closed));
    if (!ok) {
        gf_run_problem(run, "summary.json: gaps must be {\"open\": count, \"suspected\": count, "
                            "\"closed\": count} with whole numbers >= 0");
        return;
    }
    run->gaps_state = GF_RUN_LOADED;
}

void gf_run_read_summary(gf_run *run, json_t *root)
{
    run->params = NULL;
    if (!json_is_object(root)) {
        gf_run_problem(run, "summary.json: not a JSON object");
        return;
    }
    json_t *format = json_object_get(root, "format");
    if (format && !(json_is_integer(format) && json_integer_value(format) == 1))
        gf_run_problem(run, "summary.json: format is not 1 (this report reads format 1)");
    json_t *p = json_object_get(root, "run");
    if (!json_is_object(p)) {
        gf_run_problem(run, "summary.json: no \"run\" object (the run's parameters)");
        return;
    }
    run->params = p;
    read_params(run, p);
    read_restarts(run, json_object_get(root, "restarts"));
    read_leaderboard(run, json_object_get(root, "leaderboard"));
    read_dlq(run, json_object_get(root, "dlq"));
    read_gaps(run, json_object_get(root, "gaps"));
    gf_run_read_log(run, root);
}

static bool examples_ok(json_t *ex)
{
    if (!ex)
        return true;
    if (!json_is_array(ex))
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(ex, i, v) if (!json_is_string(v)) return false;
    return true;
}

void gf_run_read_check(gf_run *run, json_t *root)
{
    run->check_state = GF_RUN_UNUSABLE;
    json_t *inv = json_object_get(root, "invariants");
    if (!json_is_object(root) || !json_is_array(inv)) {
        gf_run_problem(run, "check.json: needs an \"invariants\" array");
        return;
    }
    json_t *format = json_object_get(root, "format");
    if (format && !(json_is_integer(format) && json_integer_value(format) == 1))
        gf_run_problem(run, "check.json: format is not 1 (this report reads format 1)");
    bool bad = false;
    run->checked_at = opt_string(root, "checked_at", &bad);
    if (bad) {
        gf_run_problem(run, "check.json: checked_at must be a string");
        return;
    }
    size_t n = json_array_size(inv);
    gf_run_invariant *a = calloc(n ? n : 1, sizeof *a);
    if (!a) {
        gf_run_problem(run, "check.json: out of memory");
        return;
    }
    for (size_t i = 0; i < n && !bad; i++) {
        json_t *e = json_array_get(inv, i);
        gf_run_invariant *x = &a[i];
        bad = !json_is_object(e);
        x->name = bad ? NULL : opt_string(e, "name", &bad);
        x->detail = bad ? NULL : opt_string(e, "detail", &bad);
        x->explanation = bad ? NULL : opt_string(e, "explanation", &bad);
        x->examples = bad ? NULL : json_object_get(e, "examples");
        if (bad || !x->name || !x->name[0] || strlen(x->name) > 64 ||
            !gf_run_count_value(json_object_get(e, "count"), &x->count) ||
            !examples_ok(x->examples)) {
            gf_run_problem(run,
                           "check.json: invariants[%zu]: needs \"name\" (1-64 characters) and "
                           "\"count\" (a whole number >= 0); \"detail\" and \"explanation\" are "
                           "strings, \"examples\" an array of strings",
                           i);
            bad = true;
            break;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(a[j].name, x->name) == 0) {
                gf_run_problem(run, "check.json: invariant \"%s\" appears twice", x->name);
                bad = true;
            }
    }
    if (bad) {
        free(a);
        return;
    }
    run->invariants = a;
    run->ninvariants = n;
    run->check_state = GF_RUN_LOADED;
}
