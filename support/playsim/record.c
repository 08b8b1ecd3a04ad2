/*
 * record.c — the run directory's TSV files (docs/REPORT.md) and the progress block.
 *
 *   tickets.tsv  a row as each ticket ends: t mode shape region outcome wait_ms
 *                delta_ping_ms merge, and merged queue ticket party datacenter twin.
 *                `merge` says whether the merge was enabled for the ticket (off: the
 *                low-population region's "-nomerge" twins); `merged` whether its match
 *                was formed in a merged pool
 *   matches.tsv  written by matches.c; skill_spread is over the tickets' ratings as the
 *                matcher compared them (a party is one member, with its aggregated skill)
 *   queues.tsv   every second: t queue waiting (tickets sent and not ended)
 *   fleet.tsv    every second, per datacenter: t datacenter busy free warm
 *   events.tsv   every second: t produced stored applied failed (totals since the start;
 *                applied: events of the run the leaderboard group acknowledged, EVENTS'
 *                last sequence minus the one at the start minus the group's lag; "-"
 *                without a leaderboard)
 *   lag.tsv      every second, per consumer group: t consumer pending ack_pending
 *                (a partitioned group's durables summed: leaderboard-p00..p15 ->
 *                leaderboard)
 *
 * The files are written on the main thread, except tickets.tsv and matches.tsv rows,
 * which come from status callbacks under mu; every file is flushed once a second.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/util.h"
#include "playsim.h"

double gf_play_t(const gf_play *p, int64_t mono_ms)
{
    double t = (double)(mono_ms - p->t0_mono) / 1000.0;
    return t < 0 ? 0 : t;
}

static FILE *open_tsv(gf_play *p, const char *name, const char *header)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", p->run_dir, name);
    FILE *f = fopen(path, "w");
    if (f)
        fprintf(f, "%s\n", header);
    return f;
}

gf_err gf_play_record_open(gf_play *p)
{
    p->tickets_tsv = open_tsv(p, "tickets.tsv",
                              "t\tmode\tshape\tregion\toutcome\twait_ms\tdelta_ping_ms\tmerge\t"
                              "merged\tqueue\tticket\tparty\tdatacenter\ttwin");
    p->matches_tsv = open_tsv(p, "matches.tsv",
                              "t\tmode\tshape\tregion\tmerge\tskill_spread\talloc_ms\tmatch\t"
                              "queue\tdatacenter\ttickets\ttwin");
    p->queues_tsv = open_tsv(p, "queues.tsv", "t\tqueue\twaiting");
    p->fleet_tsv = open_tsv(p, "fleet.tsv", "t\tdatacenter\tbusy\tfree\twarm");
    p->events_tsv = open_tsv(p, "events.tsv", "t\tproduced\tstored\tapplied\tfailed");
    p->lag_tsv = open_tsv(p, "lag.tsv", "t\tconsumer\tpending\tack_pending");
    return p->tickets_tsv && p->matches_tsv && p->queues_tsv && p->fleet_tsv && p->events_tsv &&
                   p->lag_tsv
               ? GF_OK
               : GF_ERR_IO;
}

void gf_play_record_close(gf_play *p)
{
    FILE **files[] = {&p->tickets_tsv, &p->matches_tsv, &p->queues_tsv,
                      &p->fleet_tsv,   &p->events_tsv,  &p->lag_tsv};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (*files[i])
            fclose(*files[i]);
        *files[i] = NULL;
    }
}

void gf_play_ticket_record(gf_play *p, play_ticket *t, int64_t now)
{
    static const char *const outcome[] = {
        [PT_ASSIGNED] = "assigned", [PT_CANCELLED] = "cancelled", [PT_TIMED_OUT] = "timed_out"};
    if (t->recorded || t->state < PT_ASSIGNED || t->state > PT_TIMED_OUT)
        return;
    t->recorded = true;
    const play_queue *q = &p->queues[t->queue];
    double wait = (double)(t->end_ms - t->submit_ms);
    char delta[16] = "-", merged[4] = "-";
    if (t->state == PT_ASSIGNED && t->dc >= 0 && t->ping[t->dc] != 0xffff) {
        snprintf(delta, sizeof delta, "%d", (int)t->ping[t->dc] - (int)t->best_ping);
        double *v = gf_grow(p->waits, &p->cap_waits, p->n_waits + 1, sizeof *v);
        if (v) {
            p->waits = v;
            p->waits[p->n_waits++] = wait;
        }
    }
    if (t->match && p->m[t->match - 1].seen)
        snprintf(merged, sizeof merged, "%s", p->m[t->match - 1].merged ? "on" : "off");
    if (!p->tickets_tsv)
        return;
    fprintf(p->tickets_tsv, "%.3f\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%u\t%s\t%d\n",
            gf_play_t(p, now), q->mode, q->shape, t->region >= 0 ? p->regions[t->region] : "-",
            outcome[t->state], wait < 0 ? 0 : wait, delta, t->twin ? "off" : "on", merged, q->name,
            t->id, t->players, t->dc >= 0 ? p->dcs[t->dc] : "-", t->twin);
}

/* ---- once a second ------------------------------------------------------------------ */

void gf_play_group_name(const char *consumer, char *buf, size_t size)
{
    snprintf(buf, size, "%s", consumer);
    char *dash = strrchr(buf, '-');
    if (dash && dash[1] == 'p' && dash[2] >= '0' && dash[2] <= '9')
        *dash = '\0';
}

typedef struct lag_row {
    char name[64];
    uint64_t pending, ack_pending;
} lag_row;

static size_t sample_lag(gf_play *p, double t, lag_row *rows, size_t max)
{
    static const char *const streams[] = {"MATCHES", "EVENTS"};
    size_t n = 0;
    for (size_t s = 0; s < sizeof streams / sizeof streams[0]; s++) {
        jsConsumerInfoList *list = NULL;
        if (js_Consumers(&list, p->js, streams[s], NULL, NULL) != NATS_OK || !list)
            continue;
        for (int i = 0; i < list->Count; i++) {
            const jsConsumerInfo *ci = list->List[i];
            if (!gf_play_durable(ci))
                continue; /* a reader's ephemeral consumer (the gap observer, a check) */
            char name[64];
            gf_play_group_name(ci->Name, name, sizeof name);
            size_t r = 0;
            while (r < n && strcmp(rows[r].name, name) != 0)
                r++;
            if (r == n && n < max)
                snprintf(rows[n++].name, sizeof rows[0].name, "%s", name);
            if (r < n) {
                rows[r].pending += ci->NumPending;
                rows[r].ack_pending += (uint64_t)ci->NumAckPending;
            }
        }
        jsConsumerInfoList_Destroy(list);
    }
    for (size_t r = 0; r < n; r++) {
        fprintf(p->lag_tsv, "%.3f\t%s\t%llu\t%llu\n", t, rows[r].name,
                (unsigned long long)rows[r].pending, (unsigned long long)rows[r].ack_pending);
        uint64_t lag = rows[r].pending + rows[r].ack_pending;
        if (lag > p->lag_max) {
            p->lag_max = lag;
            snprintf(p->lag_max_name, sizeof p->lag_max_name, "%.63s", rows[r].name);
        }
    }
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gf_play_pct(double *v, size_t n, double pct)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    size_t rank = (size_t)ceil(pct / 100.0 * (double)n);
    return v[rank > 0 ? rank - 1 : 0];
}

/* The progress block: a status line, tickets waiting per shape and mode, the fleet. */
static void progress(gf_play *p, double t, const size_t *waiting, double matches_s, double events_s,
                     const lag_row *lag, size_t n_lag, uint64_t busy, uint64_t free_, bool draining)
{
    uint64_t lag_now = 0;
    const char *lag_name = "";
    for (size_t i = 0; i < n_lag; i++)
        if (lag[i].pending + lag[i].ack_pending >= lag_now) {
            lag_now = lag[i].pending + lag[i].ack_pending;
            lag_name = lag[i].name;
        }
    pthread_mutex_lock(&p->mu);
    size_t n = p->n_waits, sent = p->next_send, ended = 0;
    double *copy = n ? malloc(n * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, p->waits, n * sizeof *copy);
    for (size_t i = 0; i < p->n_t; i++)
        ended += p->t[i].state >= PT_ASSIGNED;
    /* Written by the MATCHES subscription's callback under the lock. */
    int64_t merged_at[PLAY_MAX_QUEUES][PLAY_MAX_REGIONS];
    memcpy(merged_at, p->merged_at, sizeof merged_at);
    pthread_mutex_unlock(&p->mu);
    double p50 = copy ? gf_play_pct(copy, n, 50) / 1000.0 : NAN;
    free(copy);
    printf("P gamefn local run  %3.0f/%d s%s  seed %llu  %s population\n", t, p->seconds,
           draining ? " (arrivals over: finishing)" : "", (unsigned long long)p->seed,
           p->population);
    char wait[32] = "-";
    if (!isnan(p50))
        snprintf(wait, sizeof wait, "%.2f s", p50);
    printf("P   tickets %zu sent, %zu assigned, %zu ended  |  %.1f matches/s  |  p50 wait %s"
           "  |  %.0f events/s  |  lag %llu%s%s\n",
           sent, n, ended, matches_s, wait, events_s, (unsigned long long)lag_now, n_lag ? " " : "",
           lag_name);
    printf("P   waiting       sbmm   ping  hybrid   merged regions now\n");
    static const char *const modes[] = {"sbmm", "ping_first", "hybrid"};
    int64_t now = gf_clock_mono_ms();
    for (size_t q = 0; q < p->n_queues; q++) {
        const play_queue *row = &p->queues[q];
        bool first = !row->is_twin;
        for (size_t k = 0; first && k < q; k++)
            first = p->queues[k].is_twin || strcmp(p->queues[k].shape, row->shape) != 0;
        if (!first)
            continue;
        char line[200], merged[96] = "";
        int len = snprintf(line, sizeof line, "P   %-10s", row->shape);
        for (size_t m = 0; m < 3; m++) {
            size_t count = 0;
            for (size_t k = 0; k < p->n_queues; k++)
                if (!p->queues[k].is_twin && strcmp(p->queues[k].shape, row->shape) == 0 &&
                    strcmp(p->queues[k].mode, modes[m]) == 0)
                    count += waiting[k];
            len += snprintf(line + len, sizeof line - (size_t)len, " %7zu", count);
        }
        for (size_t r = 0; r < p->n_regions; r++) {
            bool on = false;
            for (size_t k = 0; k < p->n_queues; k++)
                on = on || (strcmp(p->queues[k].shape, row->shape) == 0 && merged_at[k][r] &&
                            now - merged_at[k][r] < 3000);
            if (on)
                snprintf(merged + strlen(merged), sizeof merged - strlen(merged), "%s ",
                         p->regions[r]);
        }
        printf("%s   %s\n", line, merged[0] ? merged : "-");
    }
    printf("P   fleet: %llu servers busy, %llu free\n", (unsigned long long)busy,
           (unsigned long long)free_);
    printf("E\n");
    fflush(stdout);
}

void gf_play_sample(gf_play *p, int64_t now, bool draining)
{
    double t = gf_play_t(p, now);
    size_t waiting[PLAY_MAX_QUEUES] = {0};
    pthread_mutex_lock(&p->mu);
    for (size_t i = p->live_from; i < p->n_t; i++)
        if (p->t[i].state >= PT_SENT && p->t[i].state < PT_ASSIGNED)
            waiting[p->t[i].queue]++;
    uint64_t matches = p->matches_seen;
    pthread_mutex_unlock(&p->mu);
    for (size_t q = 0; q < p->n_queues; q++)
        fprintf(p->queues_tsv, "%.3f\t%s\t%zu\n", t, p->queues[q].name, waiting[q]);

    uint64_t busy = 0, free_ = 0;
    for (size_t d = 0; d < p->n_dcs; d++) {
        gf_gamesim_stats st;
        if (!p->sims[d])
            continue;
        gf_gamesim_stats_get(p->sims[d], &st);
        fprintf(p->fleet_tsv, "%.3f\t%s\t%u\t%u\t%u\n", t, p->dcs[d], st.busy,
                st.free + st.hibernating, st.free);
        busy += st.busy;
        free_ += st.free;
    }

    uint64_t produced = 0, stored = 0, failed = 0;
    gf_play_events_counts(p, &produced, &stored, &failed);
    /* EVENTS' last sequence before the consumers' lag: an event stored in between
     * counts as not applied yet, never as applied too early. */
    uint64_t last_seq = gf_play_events_last_seq(p);
    lag_row lag[32];
    memset(lag, 0, sizeof lag);
    size_t n_lag = sample_lag(p, t, lag, 32);
    char applied[24] = "-";
    for (size_t r = 0; r < n_lag && last_seq; r++) {
        uint64_t behind = lag[r].pending + lag[r].ack_pending;
        if (strcmp(lag[r].name, "leaderboard") != 0 || last_seq < p->events_base + behind)
            continue;
        uint64_t done = last_seq - p->events_base - behind;
        if (done > p->applied_last)
            p->applied_last = done; /* a total never goes back */
        snprintf(applied, sizeof applied, "%llu", (unsigned long long)p->applied_last);
    }
    fprintf(p->events_tsv, "%.3f\t%llu\t%llu\t%s\t%llu\n", t, (unsigned long long)produced,
            (unsigned long long)stored, applied, (unsigned long long)failed);

    double dt = p->last_sample ? (double)(now - p->last_sample) / 1000.0 : 0;
    double matches_s = dt > 0 ? (double)(matches - p->last_matches) / dt : 0;
    double events_s = dt > 0 ? (double)(produced - p->last_produced) / dt : 0;
    p->last_sample = now;
    p->last_matches = matches;
    p->last_produced = produced;
    FILE *files[] = {p->tickets_tsv, p->matches_tsv, p->queues_tsv,
                     p->fleet_tsv,   p->events_tsv,  p->lag_tsv};
    pthread_mutex_lock(&p->mu); /* tickets and matches rows come from callbacks */
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        fflush(files[i]);
    pthread_mutex_unlock(&p->mu);
    progress(p, t, waiting, matches_s, events_s, lag, n_lag, busy, free_, draining);
}
