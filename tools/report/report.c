/*
 * report.c — the report's document: the verdict, quality figures, invariants, the
 * event log's lists, restarts, parameters and input problems (report.h). The sections
 * with data tables and plots are in report_sections.c.
 *
 * Design notes: the verdict is computed before anything is written, from the data alone
 * (quality.c), so the header a reader sees first never depends on whether a plot drew.
 */
#include "report.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const plot_names[GF_PLOT__COUNT] = {
    "wait",       "skill-spread", "delta-ping", "queues", "matches",
    "allocation", "fleet",        "events",     "lag",
};

const char *gf_report_plot_name(gf_plot_id id)
{
    return id < GF_PLOT__COUNT ? plot_names[id] : "?";
}

static const char css[] =
    "body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "margin:0;color:#1d1d1f;background:#f6f7f9}"
    "main,nav{max-width:1100px;margin:0 auto;padding:0 20px}"
    "header.verdict{padding:18px 20px 14px;border-bottom:4px solid}"
    "header.verdict>div{max-width:1100px;margin:0 auto}"
    "header h1{margin:0 0 4px;font-size:26px}"
    "header.healthy{background:#e7f6ec;border-color:#1b7f3b}.healthy h1{color:#1b7f3b}"
    "header.incomplete{background:#fff5d6;border-color:#a67c00}.incomplete h1{color:#8a6500}"
    "header.unhealthy{background:#fde8ea;border-color:#b00020}.unhealthy h1{color:#b00020}"
    "header ul{margin:6px 0 0;padding-left:22px}header li.fail{color:#b00020}"
    "header li.missing{color:#8a6500}header li.note{color:#555}"
    ".sub{color:#444;margin:0}"
    "nav{padding-top:10px;font-size:13px}nav a{margin-right:12px;color:#2457a6}"
    "section{background:#fff;border:1px solid #e1e4e8;border-radius:6px;margin:16px 0;"
    "padding:4px 18px 14px}"
    "h2{font-size:19px;margin:14px 0 8px}"
    "table{border-collapse:collapse;margin:8px 0;font-size:14px}"
    "th,td{border-bottom:1px solid #e6e6e6;padding:4px 10px;text-align:left;vertical-align:top}"
    "th{background:#f2f4f7}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".st{font-weight:600;white-space:nowrap}.met{color:#1b7f3b}.missed{color:#b00020}"
    ".unmeasured{color:#8a6500}.na,.info{color:#666}"
    "figure.plot{margin:10px 0}figure.plot svg{width:100%;max-width:960px;height:auto;"
    "display:block}figcaption{color:#555;font-size:13px}"
    ".not-measured{color:#8a6500;background:#fff8e1;padding:6px 10px;border-radius:4px}"
    ".expl{color:#444;font-size:13px}code{font-size:13px}"
    "footer{max-width:1100px;margin:0 auto;padding:10px 20px 30px;color:#777;font-size:12px}";

void gf_report_not_measured(gf_buf *out, const char *plot, const char *why)
{
    gf_buf_puts(out, "<p class=\"not-measured\"");
    if (plot)
        gf_buf_printf(out, " data-plot=\"%s\"", plot);
    gf_buf_puts(out, ">Not measured: ");
    gf_buf_html(out, why);
    gf_buf_puts(out, ".</p>\n");
}

static void verdict_list(gf_buf *out, const gf_verdict_list *l, const char *cls)
{
    for (size_t i = 0; i < l->n; i++) {
        gf_buf_printf(out, "<li class=\"%s\">", cls);
        gf_buf_html(out, l->line[i]);
        gf_buf_puts(out, "</li>\n");
    }
    if (l->dropped)
        gf_buf_printf(out, "<li class=\"%s\">... and %zu more</li>\n", cls, l->dropped);
}

static const char *param_string(const gf_run *run, const char *key)
{
    return json_string_value(json_object_get(run->params, key));
}

static void header(const gf_run *run, const gf_verdict *v, gf_buf *out)
{
    static const char *const cls[] = {"healthy", "incomplete", "unhealthy"};
    static const char *const title[] = {"Healthy", "Incomplete", "Not healthy"};
    gf_buf_printf(out,
                  "<header id=\"verdict\" class=\"verdict %s\" data-verdict=\"%s\"><div>\n"
                  "<h1>gamefn run: %s</h1>\n<p class=\"sub\">",
                  cls[v->level], cls[v->level], title[v->level]);
    const char *id = param_string(run, "id"), *started = param_string(run, "started");
    json_t *secs = json_object_get(run->params, "elapsed_s");
    if (!json_is_number(secs))
        secs = json_object_get(run->params, "seconds");
    gf_buf_puts(out, "run ");
    gf_buf_html(out, id ? id : "(no id)");
    if (started) {
        gf_buf_puts(out, " &middot; started ");
        gf_buf_html(out, started);
    }
    if (json_is_number(secs))
        gf_buf_printf(out, " &middot; %.0f s", json_number_value(secs));
    gf_buf_puts(out, " &middot; population ");
    gf_buf_html(out, run->population);
    gf_buf_puts(out, "</p>\n");
    if (v->level == GF_HEALTHY)
        gf_buf_puts(out, "<p class=\"sub\">Every invariant count is 0, every quality goal is "
                         "met and no function restarted.</p>\n");
    gf_buf_puts(out, "<ul>\n");
    verdict_list(out, &v->fails, "fail");
    verdict_list(out, &v->missing, "missing");
    verdict_list(out, &v->notes, "note");
    gf_buf_puts(out, "</ul>\n</div></header>\n");
}

static void nav(gf_buf *out)
{
    static const char *const links[][2] = {
        {"quality", "Quality"},
        {"invariants", "Invariants"},
        {"waits", "Waits"},
        {"match-quality", "Skill &amp; ping"},
        {"queues", "Queues"},
        {"matches", "Matches"},
        {"allocation", "Allocation"},
        {"fleet", "Fleet"},
        {"events", "Events &amp; lag"},
        {"leaderboard", "Leaderboard"},
        {"dlq", "DLQ &amp; gaps"},
        {"analytics", "Analytics"},
        {"crashes", "Crashes"},
        {"restarts", "Restarts"},
        {"run", "Parameters"},
        {"problems", "Input problems"},
    };
    gf_buf_puts(out, "<nav>");
    for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
        gf_buf_printf(out, "<a href=\"#%s\">%s</a>", links[i][0], links[i][1]);
    gf_buf_puts(out, "</nav>\n");
}

static void quality(const gf_figure *figs, gf_buf *out)
{
    static const char *const st_cls[] = {"met", "missed", "unmeasured", "na", "info"};
    static const char *const st_txt[] = {"met", "missed", "not measured", "goal n/a", "reported"};
    gf_buf_puts(out, "<section id=\"quality\"><h2>Quality figures</h2>\n"
                     "<p class=\"expl\">Measured from the run's own rows (nearest-rank "
                     "percentiles), shown whether or not they meet their goals.</p>\n"
                     "<table><tr><th>figure</th><th>goal</th><th>measured</th><th>status</th>"
                     "</tr>\n");
    for (int i = 0; i < GF_FIG__COUNT; i++) {
        const gf_figure *f = &figs[i];
        gf_buf_puts(out, "<tr><td>");
        gf_buf_html(out, f->what);
        gf_buf_puts(out, "</td><td>");
        gf_buf_html(out, f->goal ? f->goal : "-");
        gf_buf_puts(out, "</td><td>");
        gf_buf_html(out, f->measured);
        gf_buf_printf(out, "</td><td class=\"st %s\">%s</td></tr>\n", st_cls[f->status],
                      st_txt[f->status]);
    }
    gf_buf_puts(out, "</table></section>\n");
}

static void invariant_row(const gf_run_invariant *inv, const char *name, gf_buf *out)
{
    const char *expl = gf_quality_invariant_explanation(name);
    gf_buf_puts(out, "<tr><td><code>");
    gf_buf_html(out, name);
    gf_buf_puts(out, "</code></td>");
    if (!inv)
        gf_buf_puts(out, "<td class=\"num\">-</td><td class=\"st unmeasured\">not checked</td>");
    else
        gf_buf_printf(out, "<td class=\"num\">%lld</td><td class=\"st %s\">%s</td>",
                      (long long)inv->count, inv->count ? "missed" : "met",
                      inv->count ? "VIOLATED" : "ok");
    gf_buf_puts(out, "<td>");
    gf_buf_html(out, expl ? expl : inv && inv->explanation ? inv->explanation : "");
    if (inv && inv->detail) {
        gf_buf_puts(out, "<br><span class=\"expl\">checker: ");
        gf_buf_html(out, inv->detail);
        gf_buf_puts(out, "</span>");
    }
    if (inv && json_array_size(inv->examples)) {
        gf_buf_puts(out, "<br><span class=\"expl\">e.g. ");
        for (size_t i = 0; i < json_array_size(inv->examples) && i < 5; i++) {
            gf_buf_puts(out, i ? ", <code>" : "<code>");
            gf_buf_html(out, json_string_value(json_array_get(inv->examples, i)));
            gf_buf_puts(out, "</code>");
        }
        gf_buf_puts(out, "</span>");
    }
    gf_buf_puts(out, "</td></tr>\n");
}

static void invariants(const gf_run *run, gf_buf *out)
{
    gf_buf_puts(out, "<section id=\"invariants\"><h2>Invariants (independent checker)</h2>\n"
                     "<p class=\"expl\">Recomputed after the run by the checker from the audit "
                     "and event streams, not from the functions' own counters. Every count must "
                     "be 0.</p>\n");
    if (run->check_state != GF_RUN_LOADED) {
        gf_report_not_measured(out, NULL,
                               run->check_state == GF_RUN_ABSENT
                                   ? "the run has no check.json (the checker did not run)"
                                   : "check.json is malformed (see Input problems)");
        gf_buf_puts(out, "</section>\n");
        return;
    }
    if (run->checked_at) {
        gf_buf_puts(out, "<p class=\"expl\">Checked at ");
        gf_buf_html(out, run->checked_at);
        gf_buf_puts(out, ".</p>\n");
    }
    gf_buf_puts(out, "<table><tr><th>invariant</th><th>count</th><th>status</th>"
                     "<th>meaning</th></tr>\n");
    size_t n;
    const char *const *req = gf_quality_required_invariants(&n);
    for (size_t i = 0; i < n; i++) {
        const gf_run_invariant *inv = NULL;
        for (size_t j = 0; j < run->ninvariants; j++)
            if (strcmp(run->invariants[j].name, req[i]) == 0)
                inv = &run->invariants[j];
        invariant_row(inv, req[i], out);
    }
    for (size_t j = 0; j < run->ninvariants; j++) {
        bool known = false;
        for (size_t i = 0; i < n; i++)
            known = known || strcmp(run->invariants[j].name, req[i]) == 0;
        if (!known)
            invariant_row(&run->invariants[j], run->invariants[j].name, out);
    }
    gf_buf_puts(out, "</table></section>\n");
}

static void leaderboard(const gf_run *run, gf_buf *out)
{
    gf_buf_puts(out, "<section id=\"leaderboard\"><h2>Leaderboard top 10</h2>\n");
    if (run->lb_state != GF_RUN_LOADED) {
        gf_report_not_measured(out, NULL,
                               run->lb_state == GF_RUN_ABSENT
                                   ? "summary.json has no leaderboard"
                                   : "summary.json's leaderboard is malformed");
    } else if (run->nlb == 0) {
        gf_buf_puts(out, "<p>The leaderboard is empty.</p>\n");
    } else {
        if (run->lb_board) {
            gf_buf_puts(out, "<p class=\"expl\">Board ");
            gf_buf_html(out, run->lb_board);
            gf_buf_puts(out, ".</p>\n");
        }
        gf_buf_puts(out, "<table><tr><th>rank</th><th>player</th><th>score</th></tr>\n");
        for (size_t i = 0; i < run->nlb; i++) {
            gf_buf_printf(out, "<tr><td class=\"num\">%lld</td><td>", (long long)run->lb[i].rank);
            gf_buf_html(out, run->lb[i].player);
            gf_buf_printf(out, "</td><td class=\"num\">%.15g</td></tr>\n", run->lb[i].score);
        }
        gf_buf_puts(out, "</table>\n");
    }
    gf_buf_puts(out, "</section>\n");
}

static void dlq(const gf_run *run, gf_buf *out)
{
    gf_buf_puts(out, "<section id=\"dlq\"><h2>Dead letters and gaps</h2>\n");
    if (run->dlq_state != GF_RUN_LOADED) {
        gf_report_not_measured(out, NULL,
                               run->dlq_state == GF_RUN_ABSENT
                                   ? "summary.json has no dlq (dead-letter count)"
                                   : "summary.json's dlq is malformed");
    } else {
        gf_buf_printf(out,
                      "<p>Dead-letter stream: <b>%lld</b> message%s. A message lands there "
                      "after failing max_deliver times; it can be inspected and re-driven.</p>\n",
                      (long long)run->dlq_messages, run->dlq_messages == 1 ? "" : "s");
        if (json_object_size(run->dlq_by_consumer)) {
            gf_buf_puts(out, "<table><tr><th>consumer</th><th>dead letters</th></tr>\n");
            const char *k;
            json_t *v;
            json_object_foreach(run->dlq_by_consumer, k, v)
            {
                gf_buf_puts(out, "<tr><td>");
                gf_buf_html(out, k);
                gf_buf_printf(out, "</td><td class=\"num\">%lld</td></tr>\n",
                              (long long)json_integer_value(v));
            }
            gf_buf_puts(out, "</table>\n");
        }
    }
    if (run->gaps_state != GF_RUN_LOADED) {
        char why[400];
        snprintf(why, sizeof why, "%s%s",
                 run->gaps_state != GF_RUN_ABSENT ? "summary.json's gaps are malformed"
                 : run->gaps_not_counted          ? "gaps not counted: "
                                         : "summary.json has no gaps (per-source sequence gaps)",
                 run->gaps_state == GF_RUN_ABSENT && run->gaps_not_counted ? run->gaps_not_counted
                                                                           : "");
        gf_report_not_measured(out, NULL, why);
    } else {
        gf_buf_puts(out, "<table><tr><th>sequence gaps</th><th>count</th><th>meaning</th></tr>\n");
        const struct {
            const char *name;
            int64_t v;
            const char *text;
        } rows[] = {
            {"open", run->gaps_open,
             "holes in a source's sequence never filled: lost events "
             "(must be 0)"},
            {"suspected", run->gaps_suspected, "holes reported as possible gaps during the run"},
            {"closed", run->gaps_closed, "suspected holes later filled (a late spool replay)"},
        };
        for (size_t i = 0; i < 3; i++) {
            if (rows[i].v < 0)
                continue;
            gf_buf_printf(out, "<tr><td>%s</td><td class=\"num\">%lld</td><td>%s</td></tr>\n",
                          rows[i].name, (long long)rows[i].v, rows[i].text);
        }
        gf_buf_puts(out, "</table>\n");
    }
    gf_buf_puts(out, "</section>\n");
}

static void restarts(const gf_run *run, gf_buf *out)
{
    gf_buf_puts(out, "<section id=\"restarts\"><h2>Restarts</h2>\n");
    if (run->restarts_state != GF_RUN_LOADED) {
        gf_report_not_measured(out, NULL,
                               run->restarts_state == GF_RUN_ABSENT
                                   ? "summary.json has no restarts list"
                                   : "summary.json's restarts are malformed");
    } else if (run->nrestarts == 0) {
        gf_buf_puts(out, "<p>No function restarted.</p>\n");
    } else {
        gf_buf_puts(out, "<table><tr><th>t (s)</th><th>function</th><th>instance</th>"
                         "<th>reason</th><th>planned</th></tr>\n");
        for (size_t i = 0; i < run->nrestarts; i++) {
            const gf_run_restart *r = &run->restarts[i];
            if (isnan(r->t))
                gf_buf_puts(out, "<tr><td class=\"num\">-</td><td>");
            else
                gf_buf_printf(out, "<tr><td class=\"num\">%.1f</td><td>", r->t);
            gf_buf_html(out, r->function);
            gf_buf_puts(out, "</td><td>");
            gf_buf_html(out, r->instance ? r->instance : "");
            gf_buf_puts(out, "</td><td>");
            gf_buf_html(out, r->reason ? r->reason : "");
            gf_buf_printf(out, "</td><td>%s</td></tr>\n",
                          r->planned ? "yes (injected)" : "<b class=\"missed\">no</b>");
        }
        gf_buf_puts(out, "</table>\n");
    }
    gf_buf_puts(out, "</section>\n");
}

static void params(const gf_run *run, gf_buf *out)
{
    gf_buf_puts(out, "<section id=\"run\"><h2>Run parameters</h2>\n"
                     "<table><tr><th>parameter</th><th>value</th></tr>\n");
    const char *k;
    json_t *v;
    json_object_foreach(run->params, k, v)
    {
        gf_buf_puts(out, "<tr><td><code>");
        gf_buf_html(out, k);
        gf_buf_puts(out, "</code></td><td>");
        if (json_is_string(v)) {
            gf_buf_html(out, json_string_value(v));
        } else if (json_is_real(v)) {
            gf_buf_printf(out, "%.12g", json_real_value(v));
        } else {
            char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS |
                                        JSON_REAL_PRECISION(12));
            if (s && strlen(s) > 300)
                strcpy(s + 296, "...");
            gf_buf_html(out, s ? s : "?");
            free(s);
        }
        gf_buf_puts(out, "</td></tr>\n");
    }
    gf_buf_puts(out, "</table></section>\n");
}

static void problems(const gf_run *run, const gf_report_result *res, gf_buf *out)
{
    gf_buf_puts(out, "<section id=\"problems\"><h2>Input problems</h2>\n");
    if (!run->nproblems && !run->problems_dropped && !res->plots_failed) {
        gf_buf_puts(out, "<p>None: every file present was read whole.</p>\n");
    } else {
        gf_buf_puts(out, "<p class=\"expl\">What was left out of this report, and why. A "
                         "malformed file is left out whole.</p><ul>\n");
        for (size_t i = 0; i < run->nproblems; i++) {
            gf_buf_puts(out, "<li>");
            gf_buf_html(out, run->problems[i]);
            gf_buf_puts(out, "</li>\n");
        }
        if (run->problems_dropped)
            gf_buf_printf(out, "<li>... and %zu more</li>\n", run->problems_dropped);
        if (res->plots_failed) {
            gf_buf_printf(out, "<li>%zu plot%s could not be drawn; the first: ", res->plots_failed,
                          res->plots_failed == 1 ? "" : "s");
            gf_buf_html(out, res->first_failure);
            gf_buf_puts(out, "</li>\n");
        }
        gf_buf_puts(out, "</ul>\n");
    }
    gf_buf_puts(out, "<p class=\"expl\">Files of the run: ");
    for (int f = 0; f < GF_RUN__FILES; f++) {
        static const char *const st[] = {"absent", "malformed", "read"};
        gf_buf_printf(out, "%s<code>%s</code> %s", f ? ", " : "", gf_run_file_name((gf_run_file)f),
                      st[run->file_state[f]]);
        if (run->file_state[f] == GF_RUN_LOADED)
            gf_buf_printf(out, " (%zu rows)", run->tables[f]->nrows);
    }
    gf_buf_puts(out, ".</p></section>\n");
}

void gf_report_render(const gf_run *run, const gf_report_opts *o, gf_buf *out,
                      gf_report_result *res)
{
    memset(res, 0, sizeof *res);
    gf_quality_figures(run, res->figures);
    gf_quality_verdict(run, res->figures, &res->verdict);
    const gf_verdict *v = &res->verdict;

    /* the body first: plots that fail are listed under Input problems, at the end */
    gf_buf body = {0};
    quality(res->figures, &body);
    invariants(run, &body);
    gf_report_waits(run, o, &body, res);
    gf_report_match_quality(run, o, &body, res);
    gf_buf_puts(&body, "<section id=\"queues\"><h2>Tickets waiting per queue</h2>\n");
    gf_report_plot(run, o, GF_PLOT_QUEUES, &body, res);
    gf_buf_puts(&body, "</section>\n");
    gf_report_matches(run, o, &body, res);
    gf_report_allocation(run, o, &body, res);
    gf_buf_puts(&body, "<section id=\"fleet\"><h2>Game server fleet</h2>\n"
                       "<p class=\"expl\">Summed over datacenters: <b>busy</b> servers are in "
                       "a match, <b>free</b> ones can take one, <b>warm</b> ones are the free "
                       "ones that are awake (no wake-up before a match).</p>\n");
    gf_report_plot(run, o, GF_PLOT_FLEET, &body, res);
    gf_buf_puts(&body, "</section>\n");
    gf_report_events(run, o, &body, res);
    leaderboard(run, &body);
    dlq(run, &body);
    gf_report_analytics(run, &body);
    gf_report_crashes(run, &body);
    restarts(run, &body);
    params(run, &body);
    problems(run, res, &body);

    gf_buf_puts(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                     "'none'; style-src 'unsafe-inline'\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<meta name=\"generator\" content=\"gamefn-report\">\n");
    gf_buf_printf(out, "<meta name=\"gamefn-plots\" content=\"%zu\">\n<title>gamefn run ",
                  res->plots_drawn);
    const char *id = param_string(run, "id");
    gf_buf_html(out, id ? id : "");
    gf_buf_printf(out, ": %s</title>\n<style>%s</style></head>\n<body>\n",
                  gf_quality_level_name(v->level), css);
    header(run, v, out);
    nav(out);
    gf_buf_puts(out, "<main>\n");
    gf_buf_put(out, body.p, body.len);
    if (body.oom)
        out->oom = true;
    gf_buf_free(&body);
    gf_buf_puts(out, "</main>\n<footer>Generated by gamefn-report");
    if (o->generated_at) {
        gf_buf_puts(out, " at ");
        gf_buf_html(out, o->generated_at);
    }
    gf_buf_puts(out, " from <code>");
    gf_buf_html(out, run->dir);
    gf_buf_puts(out, "</code>");
    if (o->gnuplot_version) {
        gf_buf_puts(out, "; plots by ");
        gf_buf_html(out, o->gnuplot_version);
    }
    gf_buf_puts(out, ". Format and how to read it: docs/REPORT.md.</footer>\n</body></html>\n");
}
