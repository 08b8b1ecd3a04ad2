/*
 * render.c — LagReport as a table or JSON (see render.h).
 */
#include "render.h"

#include <inttypes.h>
#include <jansson.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/config.h"
#include "level.h"

static const char *level_name(int level)
{
    return lag_level_name((lag_level)level);
}

static void retention_text(const Gamefn__V1__ConsumerLag *c, char *buf, size_t size)
{
    char a[32];
    if (c->max_age_ms > 0)
        snprintf(buf, size, "%s", gf_config_format_duration(c->max_age_ms, a, sizeof a));
    else if (c->max_msgs > 0)
        snprintf(buf, size, "%" PRId64 " msgs", c->max_msgs);
    else if (c->max_bytes > 0)
        snprintf(buf, size, "%s", gf_config_format_size(c->max_bytes, a, sizeof a));
    else
        snprintf(buf, size, "unlimited");
}

static void consumers_text(FILE *f, const Gamefn__V1__LagReport *r)
{
    fprintf(f, "%-12s %-22s %9s %9s %11s %9s %14s %10s %-9s %s\n", "STREAM", "CONSUMER", "PENDING",
            "IN_FLIGHT", "REDELIVERED", "LAG", "OLDEST_UNACKED", "RETENTION", "LEVEL", "REASON");
    for (size_t i = 0; i < r->n_consumers; i++) {
        const Gamefn__V1__ConsumerLag *c = r->consumers[i];
        char age[32] = "-", ret[32];
        if (c->oldest_unacked_seq)
            lag_format_age(c->oldest_unacked_age_ms, age, sizeof age);
        retention_text(c, ret, sizeof ret);
        char level[48];
        if (c->level != c->computed)
            snprintf(level, sizeof level, "%s (now %s)", level_name(c->level),
                     level_name(c->computed));
        else
            snprintf(level, sizeof level, "%s", level_name(c->level));
        fprintf(f,
                "%-12s %-22s %9" PRIu64 " %9" PRIu64 " %11" PRIu64 " %9" PRIu64
                " %14s %10s %-9s %s\n",
                c->stream, c->consumer, c->pending, c->ack_pending, c->redelivered, c->lag, age,
                ret, level, c->reason);
    }
    if (r->n_consumers == 0)
        fprintf(f, "(no durable consumers)\n");
}

static void gaps_text(FILE *f, const Gamefn__V1__LagReport *r)
{
    const Gamefn__V1__GapSummary *g = r->gaps;
    if (!g || !g->observing) {
        fprintf(f, "\ngaps: not observed (gap detection disabled, or no monitor leader)\n");
        return;
    }
    char since[GF_CLOCK_RFC3339_MAX];
    fprintf(f,
            "\ngaps in %s: reading since %s, at seq %" PRIu64 " (%" PRIu64 " behind)\n"
            "  %" PRIu64 " events from %" PRIu64 " sources (%" PRIu64
            " without source headers, %" PRIu64 " duplicate or older)\n"
            "  open holes %" PRIu64 " (%" PRIu64 " events missing); suspected gaps %" PRIu64
            " (%" PRIu64 " events), closed later %" PRIu64 ", abandoned %" PRIu64 "\n",
            g->stream, gf_clock_rfc3339(g->started_unix_ms * 1000000, 0, since, sizeof since),
            g->last_stream_seq, g->behind, g->events, g->sources, g->unsourced, g->old,
            g->open_holes, g->missing, g->suspected, g->suspected_seqs, g->closed, g->abandoned);
    if (r->n_open_gaps || r->open_gaps_unlisted)
        fprintf(f, "  open suspected gaps (%zu listed, %" PRIu64 " more):\n", r->n_open_gaps,
                r->open_gaps_unlisted);
    for (size_t i = 0; i < r->n_open_gaps; i++) {
        const Gamefn__V1__SuspectedGap *s = r->open_gaps[i];
        char at[GF_CLOCK_RFC3339_MAX];
        fprintf(f,
                "    source %s seq %" PRIu64 "..%" PRIu64 " (%" PRIu64 " events) reported %s%s\n",
                s->source_id, s->first, s->last, s->last - s->first + 1,
                gf_clock_rfc3339(s->reported_unix_ms * 1000000, 3, at, sizeof at),
                s->definite ? " (definite: the source went a window past it)" : "");
    }
}

void lag_render_text(FILE *f, const Gamefn__V1__LagReport *r, int64_t now_unix_ms)
{
    char age[32], every[32];
    fprintf(f,
            "lag monitor %s (lease token %" PRIu64 "): as of %s ago, polled every %s in %" PRId64
            " ms; warning at %" PRIu64 ", critical above %" PRIu64 "\n\n",
            r->monitor_id[0] ? r->monitor_id : "(direct poll)", r->lease_token,
            lag_format_age(now_unix_ms - r->as_of_unix_ms, age, sizeof age),
            gf_config_format_duration(r->interval_ms, every, sizeof every), r->poll_ms, r->warning,
            r->critical);
    consumers_text(f, r);
    gaps_text(f, r);
    for (size_t i = 0; i < r->n_retention_warnings; i++)
        fprintf(f, "\nretention warning: %s\n", r->retention_warnings[i]);
    for (size_t i = 0; i < r->n_errors; i++)
        fprintf(f, "\nerror: %s\n", r->errors[i]);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static int put(json_t *o, const char *k, json_t *v)
{
    return json_object_set_new(o, k, v);
}

static json_t *consumer_json(const Gamefn__V1__ConsumerLag *c)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int rc = put(o, "stream", json_string(c->stream)) |
             put(o, "consumer", json_string(c->consumer)) |
             put(o, "filter_subject", json_string(c->filter_subject)) |
             put(o, "pending", json_integer((json_int_t)c->pending)) |
             put(o, "ack_pending", json_integer((json_int_t)c->ack_pending)) |
             put(o, "redelivered", json_integer((json_int_t)c->redelivered)) |
             put(o, "lag", json_integer((json_int_t)c->lag)) |
             put(o, "ack_floor_stream_seq", json_integer((json_int_t)c->ack_floor_stream_seq)) |
             put(o, "oldest_unacked_seq", json_integer((json_int_t)c->oldest_unacked_seq)) |
             put(o, "oldest_unacked_unix_ms", json_integer(c->oldest_unacked_unix_ms)) |
             put(o, "oldest_unacked_age_ms", json_integer(c->oldest_unacked_age_ms)) |
             put(o, "max_age_ms", json_integer(c->max_age_ms)) |
             put(o, "max_msgs", json_integer(c->max_msgs)) |
             put(o, "max_bytes", json_integer(c->max_bytes)) |
             put(o, "behind_msgs", json_integer((json_int_t)c->behind_msgs)) |
             put(o, "level", json_string(level_name(c->level))) |
             put(o, "computed", json_string(level_name(c->computed))) |
             put(o, "reason", json_string(c->reason)) |
             put(o, "level_since_unix_ms", json_integer(c->level_since_unix_ms));
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *gaps_json(const Gamefn__V1__LagReport *r)
{
    const Gamefn__V1__GapSummary *g = r->gaps;
    Gamefn__V1__GapSummary none = GAMEFN__V1__GAP_SUMMARY__INIT;
    if (!g)
        g = &none;
    json_t *o = json_object(), *open = json_array();
    if (!o || !open) {
        json_decref(o);
        json_decref(open);
        return NULL;
    }
    int rc = put(o, "observing", json_boolean(g->observing)) |
             put(o, "stream", json_string(g->stream)) |
             put(o, "events", json_integer((json_int_t)g->events)) |
             put(o, "unsourced", json_integer((json_int_t)g->unsourced)) |
             put(o, "old", json_integer((json_int_t)g->old)) |
             put(o, "sources", json_integer((json_int_t)g->sources)) |
             put(o, "open_holes", json_integer((json_int_t)g->open_holes)) |
             put(o, "missing", json_integer((json_int_t)g->missing)) |
             put(o, "suspected", json_integer((json_int_t)g->suspected)) |
             put(o, "suspected_seqs", json_integer((json_int_t)g->suspected_seqs)) |
             put(o, "closed", json_integer((json_int_t)g->closed)) |
             put(o, "abandoned", json_integer((json_int_t)g->abandoned)) |
             put(o, "last_stream_seq", json_integer((json_int_t)g->last_stream_seq)) |
             put(o, "started_unix_ms", json_integer(g->started_unix_ms)) |
             put(o, "behind", json_integer((json_int_t)g->behind)) |
             put(o, "open_gaps_unlisted", json_integer((json_int_t)r->open_gaps_unlisted));
    for (size_t i = 0; i < r->n_open_gaps && rc == 0; i++) {
        const Gamefn__V1__SuspectedGap *s = r->open_gaps[i];
        json_t *e = json_object();
        rc = !e || put(e, "source_id", json_string(s->source_id)) |
                       put(e, "first", json_integer((json_int_t)s->first)) |
                       put(e, "last", json_integer((json_int_t)s->last)) |
                       put(e, "opened_unix_ms", json_integer(s->opened_unix_ms)) |
                       put(e, "reported_unix_ms", json_integer(s->reported_unix_ms)) |
                       put(e, "definite", json_boolean(s->definite));
        if (e && json_array_append_new(open, e) != 0)
            rc = -1;
    }
    rc |= put(o, "open_gaps", open);
    if (rc != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *strings_json(char **items, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(items[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

gf_err lag_render_json(FILE *f, const Gamefn__V1__LagReport *r)
{
    json_t *o = json_object(), *consumers = json_array();
    gf_err err = o && consumers ? GF_OK : GF_ERR_NOMEM;
    for (size_t i = 0; err == GF_OK && i < r->n_consumers; i++)
        if (json_array_append_new(consumers, consumer_json(r->consumers[i])) != 0)
            err = GF_ERR_NOMEM;
    if (err == GF_OK &&
        (put(o, "as_of_unix_ms", json_integer(r->as_of_unix_ms)) |
         put(o, "monitor_id", json_string(r->monitor_id)) |
         put(o, "lease_token", json_integer((json_int_t)r->lease_token)) |
         put(o, "interval_ms", json_integer(r->interval_ms)) |
         put(o, "poll_ms", json_integer(r->poll_ms)) |
         put(o, "warning", json_integer((json_int_t)r->warning)) |
         put(o, "critical", json_integer((json_int_t)r->critical)) |
         put(o, "consumers", json_incref(consumers)) | put(o, "gaps", gaps_json(r)) |
         put(o, "retention_warnings",
             strings_json(r->retention_warnings, r->n_retention_warnings)) |
         put(o, "errors", strings_json(r->errors, r->n_errors))) != 0)
        err = GF_ERR_NOMEM;
    if (err == GF_OK && (json_dumpf(o, f, JSON_COMPACT) != 0 || fputc('\n', f) == EOF))
        err = GF_ERR_IO;
    json_decref(consumers);
    json_decref(o);
    return err;
}
