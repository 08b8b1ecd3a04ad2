/*
 * query_json.c — the analytics and crashes functions' answers as JSON (see query.h):
 * `gamefn analytics --json`, `gamefn crashes --json` and the run report's sections.
 */
#include "query.h"

static const char *const dims[] = {"type", "datacenter", "queue"};

/* [{name, count}], NULL when out of memory. */
static json_t *counts_json(Gamefn__V1__AnalyticsCount **c, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *o = json_pack("{s:s, s:I}", "name", c[i]->name, "count", (json_int_t)c[i]->count);
        if (!o || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

json_t *gf_query_analytics_json(const Gamefn__V1__AnalyticsQueryReply *r)
{
    json_t *mins = json_array();
    for (size_t i = 0; mins && i < r->n_minutes; i++) {
        const Gamefn__V1__AnalyticsMinute *m = r->minutes[i];
        json_t *o =
            json_pack("{s:I, s:I, s:o, s:I, s:I}", "minute_unix_ms", (json_int_t)m->minute_unix_ms,
                      "total", (json_int_t)m->total, "counts", counts_json(m->counts, m->n_counts),
                      "other", (json_int_t)m->other, "unattributed", (json_int_t)m->unattributed);
        if (!o || json_array_append_new(mins, o) != 0) {
            json_decref(mins);
            mins = NULL;
        }
    }
    return mins ? json_pack("{s:I, s:I, s:s, s:I, s:o, s:I, s:I, s:o, s:I}", "from_unix_ms",
                            (json_int_t)r->from_unix_ms, "to_unix_ms", (json_int_t)r->to_unix_ms,
                            "group_by", dims[r->group_by < 3 ? r->group_by : 0], "total",
                            (json_int_t)r->total, "counts", counts_json(r->counts, r->n_counts),
                            "other", (json_int_t)r->other, "unattributed",
                            (json_int_t)r->unattributed, "minutes", mins, "records",
                            (json_int_t)r->records)
                : NULL;
}

static json_t *summary_json(const Gamefn__V1__CrashSummary *s)
{
    return json_pack(
        "{s:s, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:i}", "fingerprint", s->fingerprint, "count",
        (json_int_t)s->count, "first_seen_unix_ms", (json_int_t)s->first_seen_unix_ms,
        "last_seen_unix_ms", (json_int_t)s->last_seen_unix_ms, "signature", s->signature, "message",
        s->message, "build", s->build, "platform", s->platform, "builds", (int)s->builds);
}

json_t *gf_query_crashes_top_json(const Gamefn__V1__CrashesQueryReply *r)
{
    json_t *top = json_array();
    for (size_t i = 0; top && i < r->n_top; i++)
        if (json_array_append_new(top, summary_json(r->top[i])) != 0) {
            json_decref(top);
            top = NULL;
        }
    return top ? json_pack("{s:o, s:I, s:I}", "top", top, "fingerprints",
                           (json_int_t)r->fingerprints, "crashes", (json_int_t)r->crashes)
               : NULL;
}
