/*
 * summary.c — summary.json and the printed summary (see summary.h).
 */
#define _GNU_SOURCE
#include "summary.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack.h"

/* "a=1,b=3" as {"a": 1, "b": 3}. */
static json_t *replicas_object(const char *spec)
{
    json_t *o = json_object();
    char *copy = strdup(spec ? spec : "");
    for (char *save = NULL, *item = copy ? strtok_r(copy, ",", &save) : NULL; item;
         item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (eq) {
            *eq = '\0';
            json_object_set_new(o, item, json_integer(atoi(eq + 1)));
        }
    }
    free(copy);
    return o;
}

gf_err gf_summary_write(const char *run_dir, const gf_summary_run *r, const gf_sup *sup)
{
    char path[GF_STACK_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/sim.json", run_dir);
    json_t *sim = json_load_file(path, 0, NULL);
    json_t *run = json_pack("{s:s, s:s, s:i, s:f, s:I, s:s, s:s}", "id", r->id, "started",
                            r->started, "seconds", r->seconds, "elapsed_s", r->elapsed_s, "seed",
                            (json_int_t)r->seed, "population", r->population, "status", r->status);
    json_t *low = json_object_get(sim, "low_pop_region");
    if (json_is_string(low))
        json_object_set(run, "low_pop_region", low);
    json_object_set_new(run, "replicas", replicas_object(r->replicas));
    json_t *restarts = json_array();
    for (size_t i = 0; i < sup->n_restarts; i++) {
        const gf_sup_restart *x = &sup->restarts[i];
        json_array_append_new(restarts, json_pack("{s:f, s:s, s:s, s:s, s:b}", "t", x->t,
                                                  "function", x->function, "instance", x->instance,
                                                  "reason", x->reason, "planned", 0));
    }
    json_t *root = json_pack("{s:i, s:o, s:o}", "format", 1, "run", run, "restarts", restarts);
    static const char *const copied[] = {"leaderboard", "dlq", "gaps", "analytics", "crashes"};
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        json_t *v = json_object_get(sim, copied[i]);
        if (json_is_object(v))
            json_object_set(root, copied[i], v);
    }
    char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
    snprintf(path, sizeof path, "%s/summary.json", run_dir);
    gf_err err = text ? gf_stack_write_file(path, text, strlen(text)) : GF_ERR_NOMEM;
    free(text);
    json_decref(root);
    json_decref(sim);
    return err;
}

long long gf_summary_print_check(FILE *out, const char *run_dir, const char *why_missing)
{
    char path[GF_STACK_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/check.json", run_dir);
    json_t *root = json_load_file(path, 0, NULL);
    json_t *inv = json_object_get(root, "invariants");
    if (!json_is_array(inv)) {
        fprintf(out, "  invariants: not checked (%s)\n", why_missing);
        json_decref(root);
        return -1;
    }
    long long broken = 0;
    size_t i;
    json_t *e;
    fprintf(out, "  invariants (independent checker, gamefn check; each must be 0):\n");
    json_array_foreach(inv, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *count = json_object_get(e, "count");
        if (!name || !json_is_integer(count))
            continue;
        long long n = json_integer_value(count);
        const char *detail = json_string_value(json_object_get(e, "detail"));
        broken += n;
        fprintf(out, "    %-28s %6lld  %s%s%s\n", name, n, n ? "BROKEN" : "ok",
                detail && detail[0] ? "  " : "", detail ? detail : "");
    }
    json_decref(root);
    return broken;
}

void gf_summary_print_restarts(FILE *out, const gf_sup *sup)
{
    if (sup->n_restarts == 0) {
        fprintf(out, "  restarts: none\n");
        return;
    }
    fprintf(out, "  restarts: %zu\n", sup->n_restarts);
    for (size_t i = 0; i < sup->n_restarts; i++) {
        const gf_sup_restart *r = &sup->restarts[i];
        if (r->delay_ms >= 0)
            fprintf(out, "    %7.1f s  %s %s; restarted after %.1f s\n", r->t, r->instance,
                    r->reason, (double)r->delay_ms / 1000.0);
        else
            fprintf(out, "    %7.1f s  %s %s; gave up (it keeps failing at start)\n", r->t,
                    r->instance, r->reason);
    }
}
