/*
 * figures.c — the run's quality figures against the goals, as "S" lines for the summary
 * gamefn-local prints, and sim.json for summary.json (docs/REPORT.md).
 *
 * The figures are computed from the same rows tickets.tsv and matches.tsv hold, with
 * nearest-rank percentiles, so they are the report's own:
 *
 *   wait p50 / p99      assigned hybrid 5v5 tickets, from the first create to ASSIGNED;
 *                       goals < 2 s and < 30 s at mid population
 *   delta ping p95      assigned ping_first tickets: ping to the chosen datacenter minus
 *                       the ticket's best ping; goal <= 20 ms
 *   skill spread p95    matches whose tickets are all sbmm: highest minus lowest ticket
 *                       rating (a party counts once, with its aggregated skill)
 *   low-population p95  assigned tickets of the low-population region, merge on (their
 *                       queue) against off (the "-nomerge" twins); goal on <= off / 2
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/log.h"
#include "playsim.h"

typedef struct sample {
    double *v;
    size_t n;
} sample;

static void add(sample *s, double x)
{
    double *v = realloc(s->v, (s->n + 1) * sizeof *v);
    if (v) {
        s->v = v;
        s->v[s->n++] = x;
    }
}

static double pct(sample *s, double q)
{
    return gf_play_pct(s->v, s->n, q);
}

static const char *verdict(bool applies, bool met)
{
    return !applies ? "goal n/a at this population" : met ? "met" : "MISSED";
}

/* What the event consumers made of the run (sim.json's dlq, leaderboard, gaps). */
static void consumer_lines(json_t *root)
{
    json_t *lb = json_object_get(root, "leaderboard"), *dlq = json_object_get(root, "dlq"),
           *gaps = json_object_get(root, "gaps");
    json_t *first = json_array_get(json_object_get(lb, "top"), 0);
    if (first)
        printf("S   leaderboard global: %zu of this run's players in its top 10 shown, best %s "
               "with %lld (rank %lld)\n",
               json_array_size(json_object_get(lb, "top")),
               json_string_value(json_object_get(first, "player")),
               (long long)json_integer_value(json_object_get(first, "score")),
               (long long)json_integer_value(json_object_get(first, "rank")));
    else
        printf("S   leaderboard: %s\n",
               lb ? "no score of this run's players" : "no leaderboard answered");
    if (dlq)
        printf("S   dead letters stored during the run: %lld\n",
               (long long)json_integer_value(json_object_get(dlq, "messages")));
    json_t *why = json_object_get(gaps, "not_counted");
    if (gaps && !why)
        printf("S   gaps (lag monitor): %lld open, %lld suspected, %lld closed later\n",
               (long long)json_integer_value(json_object_get(gaps, "open")),
               (long long)json_integer_value(json_object_get(gaps, "suspected")),
               (long long)json_integer_value(json_object_get(gaps, "closed")));
    else
        printf("S   gaps: not counted (%s)\n", why ? json_string_value(why) : "no lag monitor");
    json_t *an = json_object_get(root, "analytics"), *c;
    if (an) {
        char line[512] = "";
        size_t used = 0, i;
        json_array_foreach(json_object_get(an, "counts"), i, c)
        {
            int n = snprintf(line + used, sizeof line - used, "%s%s %lld", used ? ", " : "",
                             json_string_value(json_object_get(c, "name")),
                             (long long)json_integer_value(json_object_get(c, "count")));
            if (n < 0 || (size_t)n >= sizeof line - used)
                break;
            used += (size_t)n;
        }
        printf("S   analytics, the run's minutes: %lld events (%s)\n",
               (long long)json_integer_value(json_object_get(an, "total")), line);
    }
    json_t *cr = json_object_get(root, "crashes");
    if (cr)
        printf("S   crash reports: %lld crashes in %lld crash groups (fingerprints) seen during "
               "the run\n",
               (long long)json_integer_value(json_object_get(cr, "crashes")),
               (long long)json_integer_value(json_object_get(cr, "fingerprints")));
}

static void ms_line(const char *label, sample *s, double q1, double q2)
{
    if (s->n == 0) {
        printf("S   %s: none\n", label);
        return;
    }
    printf("S   %s: p%.0f %.0f ms, p%.0f %.0f ms (%zu)\n", label, q1, pct(s, q1), q2, pct(s, q2),
           s->n);
}

void gf_play_figures(gf_play *p, int64_t stored_unix_ms)
{
    sample wait55 = {0}, delta = {0}, spread = {0}, low_on = {0}, low_off = {0}, alloc = {0};
    size_t n[PT_FAILED + 1] = {0}, merged = 0, aborted = 0, sent = 0;
    pthread_mutex_lock(&p->mu);
    sent = p->next_send;
    for (size_t i = 0; i < p->n_t && i < sent; i++) {
        const play_ticket *t = &p->t[i];
        const play_queue *q = &p->queues[t->queue];
        n[t->state]++;
        if (t->state < PT_ASSIGNED && n[PT_NEW] + n[PT_SENT] + n[PT_QUEUED] + n[PT_CLAIMED] <= 10)
            gf_log_warn("ticket unfinished at the end",
                        "ticket=%s state=%d queue=%s cancel_sent=%d", t->id, t->state, q->name,
                        t->cancel_sent);
        if (t->state != PT_ASSIGNED)
            continue;
        double wait = (double)(t->end_ms - t->submit_ms);
        if (strcmp(q->mode, "hybrid") == 0 && strcmp(q->shape, "5v5") == 0)
            add(&wait55, wait);
        if (strcmp(q->mode, "ping_first") == 0 && t->dc >= 0 && t->ping[t->dc] != 0xffff)
            add(&delta, (double)t->ping[t->dc] - t->best_ping);
        if (t->region == p->low_region && p->low_region >= 0)
            add(t->twin ? &low_off : &low_on, wait);
    }
    for (size_t i = 0; i < p->n_m; i++) {
        play_match *m = &p->m[i];
        if (!m->seen)
            continue;
        merged += m->merged;
        aborted += m->aborted;
        if (strcmp(gf_play_match_mode(p, m), "sbmm") == 0 && gf_play_match_spread(p, m) >= 0)
            add(&spread, gf_play_match_spread(p, m));
        if (!m->aborted && m->assigned_unix_ms > 0 && m->created_unix_ms > 0)
            add(&alloc, (double)(m->assigned_unix_ms - m->created_unix_ms));
    }
    uint64_t seen = p->matches_seen;
    pthread_mutex_unlock(&p->mu);

    bool mid = strcmp(p->population, "mid") == 0;
    double p50 = pct(&wait55, 50) / 1000.0, p99 = pct(&wait55, 99) / 1000.0;
    double d95 = pct(&delta, 95), s95 = pct(&spread, 95);
    double on95 = pct(&low_on, 95) / 1000.0, off95 = pct(&low_off, 95) / 1000.0;
    const char *low = p->low_region >= 0 ? p->regions[p->low_region] : "-";
    printf("S matchmaking: %zu tickets sent: %zu assigned, %zu cancelled (impatient players and "
           "the end of the run), %zu timed out, %zu refused, %zu unfinished\n",
           sent, n[PT_ASSIGNED], n[PT_CANCELLED], n[PT_TIMED_OUT], n[PT_FAILED],
           sent - n[PT_ASSIGNED] - n[PT_CANCELLED] - n[PT_TIMED_OUT] - n[PT_FAILED]);
    printf("S   %llu matches (%zu in a merged low-population pool, %zu dropped and redone)\n",
           (unsigned long long)seen, merged, aborted);
    if (wait55.n)
        printf("S   wait, hybrid 5v5: p50 %.2f s (goal < 2 s: %s), p99 %.1f s (goal < 30 s: %s) "
               "over %zu tickets\n",
               p50, verdict(mid, p50 < 2), p99, verdict(mid, p99 < 30), wait55.n);
    else
        printf("S   wait, hybrid 5v5: no ticket assigned\n");
    if (delta.n)
        printf("S   delta ping p95, ping_first: %.0f ms (goal <= 20 ms: %s) over %zu tickets\n",
               d95, verdict(true, d95 <= 20), delta.n);
    if (spread.n)
        printf("S   skill spread p95, sbmm: %.0f over %zu matches\n", s95, spread.n);
    if (low_on.n && low_off.n)
        printf("S   low-population region %s, p95 wait: merge on %.1f s (%zu tickets) vs off "
               "%.1f s (%zu) (goal on <= off / 2: %s)\n",
               low, on95, low_on.n, off95, low_off.n, verdict(true, on95 <= off95 / 2));
    ms_line("allocation (match formed -> server assigned)", &alloc, 50, 99);
    if (p->refused)
        printf("S   refused creates: %llu (last: %s)\n", (unsigned long long)p->refused,
               p->last_refusal);
    printf("S   duplicate submits: %llu, answered with the same ticket: %llu\n",
           (unsigned long long)p->resubmits, (unsigned long long)p->resubmit_same);
    const gf_gamesim_stats *f = &p->fleet;
    printf("S game servers: %llu games played, %llu join tokens verified (%llu refused), %llu "
           "registrations (%llu started and %llu hibernated by the adapter), %llu heartbeats "
           "(%llu failed)\n",
           (unsigned long long)f->games_finished, (unsigned long long)f->tokens_ok,
           (unsigned long long)f->tokens_bad, (unsigned long long)f->registers,
           (unsigned long long)f->started, (unsigned long long)f->hibernated,
           (unsigned long long)f->heartbeats, (unsigned long long)f->heartbeat_failures);
    uint64_t produced = 0, stored = 0, failed = 0;
    gf_play_events_counts(p, &produced, &stored, &failed);
    printf("S events: %llu produced by the game servers' producers, %llu acknowledged by EVENTS "
           "(%llu refused or dropped); highest consumer lag %llu%s%s\n",
           (unsigned long long)produced, (unsigned long long)stored, (unsigned long long)failed,
           (unsigned long long)p->lag_max, p->lag_max_name[0] ? " " : "", p->lag_max_name);

    json_t *fig =
        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "wait_p50_hybrid_5v5_s", isnan(p50) ? -1 : p50,
                  "wait_p99_hybrid_5v5_s", isnan(p99) ? -1 : p99, "delta_ping_p95_ping_first_ms",
                  isnan(d95) ? -1 : d95, "skill_spread_p95_sbmm", isnan(s95) ? -1 : s95,
                  "low_pop_p95_merge_on_s", isnan(on95) ? -1 : on95, "low_pop_p95_merge_off_s",
                  isnan(off95) ? -1 : off95);
    json_t *dcs = json_array();
    for (size_t d = 0; d < p->n_dcs; d++)
        json_array_append_new(dcs, json_string(p->dcs[d]));
    json_t *root =
        json_pack("{s:s, s:o, s:o}", "low_pop_region", low, "figures", fig, "datacenters", dcs);
    json_t *by_type = gf_play_events_by_type(p), *v;
    const char *type;
    printf("S   emitted by type:");
    json_object_foreach(by_type, type, v)
    {
        printf(" %s %lld", type, (long long)json_integer_value(v));
    }
    printf("\n");
    json_object_set_new(root, "emitted_by_type", by_type);
    gf_play_observers_json(p, root, stored_unix_ms);
    consumer_lines(root);
    char path[1200];
    snprintf(path, sizeof path, "%s/sim.json", p->run_dir);
    json_dump_file(root, path, JSON_INDENT(2));
    json_decref(root);
    free(wait55.v);
    free(delta.v);
    free(spread.v);
    free(low_on.v);
    free(low_off.v);
    free(alloc.v);
    fflush(stdout);
}
