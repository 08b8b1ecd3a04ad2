/*
 * report_log.c — the report's event-log sections (report.h): analytics (events per
 * minute by type, from the analytics function) and crashes (the most frequent crash
 * groups, from the crashes function), drawn from summary.json as `gamefn analytics
 * --json --per-minute` and `gamefn crashes --json` print them.
 *
 * Design notes: both are tables, no plot: a run has a few minutes and a few types, and
 * the counts are exact, so the numbers themselves are what a reader checks (the totals
 * row against the events the game produced).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gamefn/clock.h"
#include "report.h"

enum { MINUTES_SHOWN = 120, GROUPS_SHOWN = 10, TYPES_MAX = 16 };

static long long count_of(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* `name`'s count in a [{name, count}] list, 0 when absent. */
static long long count_named(json_t *counts, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(counts, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
            return count_of(c, "count");
    }
    return 0;
}

/* "2026-12-01T06:41:00Z" of Unix ms, as HH:MM:SS when `seconds`, else HH:MM. */
static void clock_of(int64_t unix_ms, bool seconds, char *buf, size_t size)
{
    char full[GF_CLOCK_RFC3339_MAX];
    gf_clock_rfc3339(unix_ms * 1000000, 0, full, sizeof full);
    snprintf(buf, size, "%.*s", seconds ? 8 : 5, strlen(full) > 11 ? full + 11 : full);
}

/* Opens section `id`; when its data is not loaded, says why, closes it and returns
 * false. */
static bool section(gf_buf *out, const char *id, const char *title, gf_run_state state,
                    const char *absent, const char *malformed)
{
    gf_buf_printf(out, "<section id=\"%s\"><h2>%s</h2>\n", id, title);
    if (state == GF_RUN_LOADED)
        return true;
    gf_report_not_measured(out, NULL, state == GF_RUN_ABSENT ? absent : malformed);
    gf_buf_puts(out, "</section>\n");
    return false;
}

void gf_report_analytics(const gf_run *run, gf_buf *out)
{
    if (!section(out, "analytics", "Analytics: events per minute", run->analytics_state,
                 "summary.json has no analytics (no analytics function answered)",
                 "summary.json's analytics are malformed"))
        return;
    json_t *an = run->analytics, *totals = json_object_get(an, "counts");
    json_t *minutes = json_object_get(an, "minutes");
    gf_buf_puts(out, "<p class=\"expl\">The analytics function's exact counts by event type, "
                     "per UTC minute of the run (<code>gamefn analytics --per-minute</code>; "
                     "events of other runs in the same minutes count too).</p>\n"
                     "<table class=\"analytics\"><tr><th>minute (UTC)</th>");
    size_t ntypes = json_array_size(totals) < TYPES_MAX ? json_array_size(totals) : TYPES_MAX;
    for (size_t t = 0; t < ntypes; t++) {
        gf_buf_puts(out, "<th>");
        gf_buf_html(out, json_string_value(json_object_get(json_array_get(totals, t), "name")));
        gf_buf_puts(out, "</th>");
    }
    gf_buf_puts(out, "<th>all</th></tr>\n");
    size_t n = json_array_size(minutes), first = n > MINUTES_SHOWN ? n - MINUTES_SHOWN : 0;
    for (size_t i = first; i < n; i++) {
        json_t *m = json_array_get(minutes, i);
        char hhmm[16];
        clock_of(count_of(m, "minute_unix_ms"), false, hhmm, sizeof hhmm);
        gf_buf_printf(out, "<tr><td>%s</td>", hhmm);
        for (size_t t = 0; t < ntypes; t++) {
            const char *name =
                json_string_value(json_object_get(json_array_get(totals, t), "name"));
            gf_buf_printf(out, "<td class=\"num\">%lld</td>",
                          count_named(json_object_get(m, "counts"), name));
        }
        gf_buf_printf(out, "<td class=\"num\">%lld</td></tr>\n", count_of(m, "total"));
    }
    gf_buf_puts(out, "<tr class=\"total\"><th>the run</th>");
    for (size_t t = 0; t < ntypes; t++)
        gf_buf_printf(out, "<td class=\"num\" data-type=\"%zu\">%lld</td>", t,
                      count_of(json_array_get(totals, t), "count"));
    gf_buf_printf(out, "<td class=\"num\" data-total>%lld</td></tr>\n</table>\n",
                  count_of(an, "total"));
    if (first)
        gf_buf_printf(out, "<p class=\"expl\">The first %zu minutes are not shown.</p>\n", first);
    if (json_array_size(totals) > ntypes)
        gf_buf_printf(out, "<p class=\"expl\">%zu more event types are in the total only.</p>\n",
                      json_array_size(totals) - ntypes);
    gf_buf_puts(out, "</section>\n");
}

void gf_report_crashes(const gf_run *run, gf_buf *out)
{
    if (!section(out, "crashes", "Crashes", run->crashes_state,
                 "summary.json has no crashes (no crashes function answered)",
                 "summary.json's crashes are malformed"))
        return;
    json_t *cr = run->crashes, *top = json_object_get(cr, "top");
    long long crashes = count_of(cr, "crashes"), groups = count_of(cr, "fingerprints");
    gf_buf_printf(out,
                  "<p><b data-crashes>%lld</b> crash report%s in <b data-groups>%lld</b> crash "
                  "group%s (fingerprints: a hash of the crashing thread's normalised top "
                  "frames) during the run%s</p>\n",
                  crashes, crashes == 1 ? "" : "s", groups, groups == 1 ? "" : "s",
                  json_array_size(top) ? "; the most frequent:" : ".");
    if (json_array_size(top)) {
        gf_buf_puts(out, "<table class=\"crashes\"><tr><th>fingerprint</th><th>count</th>"
                         "<th>first seen (UTC)</th><th>last seen (UTC)</th><th>signature</th>"
                         "</tr>\n");
        size_t i;
        json_t *g;
        json_array_foreach(top, i, g)
        {
            if (i == GROUPS_SHOWN)
                break;
            char first[16], last[16];
            clock_of(count_of(g, "first_seen_unix_ms"), true, first, sizeof first);
            clock_of(count_of(g, "last_seen_unix_ms"), true, last, sizeof last);
            gf_buf_puts(out, "<tr><td><code>");
            gf_buf_html(out, json_string_value(json_object_get(g, "fingerprint")));
            gf_buf_printf(out, "</code></td><td class=\"num\">%lld</td><td>%s</td><td>%s</td><td>",
                          count_of(g, "count"), first, last);
            const char *sig = json_string_value(json_object_get(g, "signature"));
            gf_buf_html(out, sig ? sig : "");
            gf_buf_puts(out, "</td></tr>\n");
        }
        gf_buf_puts(out, "</table>\n");
    }
    gf_buf_puts(out, "</section>\n");
}
