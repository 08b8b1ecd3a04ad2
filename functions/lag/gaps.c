/*
 * gaps.c — the headers-only reader that feeds the gap tracker (see gaps.h).
 */
#include "gaps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/gap_tracker.h"
#include "gamefn/log.h"
#include "gap_list.h"

struct lag_gaps {
    lag_gap_config cfg;
    natsConnection *nc; /* borrowed, for the unsubscribe at stop */
    natsSubscription *sub;
    gf_gap_tracker *tracker;
    lag_gap_list list;
    uint64_t unsourced;
    uint64_t last_seq;
    uint64_t behind;
    bool caught_up;
    int64_t started_unix_ms;
    int64_t last_tick_mono, last_prune_mono;
    bool failed; /* the subscription broke: reported once */
};

static void on_report(void *ctx, const gf_gap_report *r)
{
    lag_gaps *g = ctx;
    char src[96];
    gf_log_quote(src, sizeof src, r->source_id);
    if (r->kind == GF_GAP_SUSPECTED) {
        lag_gap e = {.first = r->first,
                     .last = r->last,
                     .opened_unix_ms = r->opened_unix_ms,
                     .reported_unix_ms = r->at_unix_ms,
                     .definite = r->definite};
        snprintf(e.source_id, sizeof e.source_id, "%s", r->source_id);
        gf_log_warn("suspected gap: events never stored",
                    "stream=%s source=%s first=%" PRIu64 " last=%" PRIu64 " missing=%" PRIu64
                    " definite=%s",
                    g->cfg.stream, src, r->first, r->last, r->last - r->first + 1,
                    r->definite ? "true" : "false");
        size_t max = g->cfg.max_listed > 0 ? (size_t)g->cfg.max_listed : 1;
        if (g->cfg.max_listed == 0 || lag_gap_list_add(&g->list, &e, max) != GF_OK)
            g->list.unlisted++;
    } else {
        gf_log_info("gap closed: the missing events arrived late",
                    "stream=%s source=%s first=%" PRIu64 " last=%" PRIu64, g->cfg.stream, src,
                    r->first, r->last);
        lag_gap_list_close(&g->list, r->source_id, r->first, r->last);
    }
}

static bool header_u64(natsMsg *m, const char *key, uint64_t *out)
{
    const char *v = NULL;
    if (natsMsgHeader_Get(m, key, &v) != NATS_OK || !v || *v < '1' || *v > '9')
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno == ERANGE || *end != '\0')
        return false;
    *out = n;
    return true;
}

static void observe(lag_gaps *g, natsMsg *m)
{
    jsMsgMetaData *md = NULL;
    if (natsMsg_GetMetaData(&md, m) != NATS_OK)
        return; /* not a stream message (a status or heartbeat nats.c let through) */
    g->last_seq = md->Sequence.Stream;
    g->behind = md->NumPending;
    g->caught_up = md->NumPending == 0;
    int64_t stored_ms = md->Timestamp / 1000000;
    jsMsgMetaData_Destroy(md);
    const char *source = NULL;
    uint64_t seq = 0;
    if (natsMsgHeader_Get(m, LAG_HDR_SOURCE, &source) != NATS_OK || !source ||
        !header_u64(m, LAG_HDR_SOURCE_SEQ, &seq) ||
        gf_gap_observe(g->tracker, source, seq, stored_ms) != GF_OK)
        g->unsourced++;
}

gf_err lag_gaps_start(natsConnection *nc, jsCtx *js, const lag_gap_config *cfg,
                      int64_t start_unix_ms, lag_gaps **out, char *why, size_t why_size)
{
    *out = NULL;
    lag_gaps *g = calloc(1, sizeof *g);
    if (!g)
        return GF_ERR_NOMEM;
    g->cfg = *cfg;
    g->nc = nc;
    g->started_unix_ms = start_unix_ms;
    gf_gap_config tc = {.grace_ms = cfg->grace_ms,
                        .window = (uint32_t)cfg->window,
                        .max_holes = (uint32_t)cfg->max_holes,
                        .report = on_report,
                        .ctx = g};
    gf_err err = gf_gap_alloc(&tc, &g->tracker);
    if (err != GF_OK) {
        snprintf(why, why_size, "gap tracker: %s", gf_err_str(err));
        free(g);
        return err;
    }
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, js, cfg->stream, NULL, &jerr);
    if (s == NATS_OK && si->Config->SubjectsLen < 1)
        s = NATS_INVALID_ARG;
    if (s == NATS_OK) {
        jsSubOptions so;
        jsSubOptions_Init(&so);
        so.Stream = cfg->stream;
        so.Ordered = true;
        so.Config.HeadersOnly = true;
        if (start_unix_ms > 0) { /* else from the stream's start */
            so.Config.DeliverPolicy = js_DeliverByStartTime;
            so.Config.OptStartTime = start_unix_ms * 1000000;
        }
        /* one subject: that one; several: every subject of the stream */
        const char *subject = si->Config->SubjectsLen == 1 ? si->Config->Subjects[0] : ">";
        s = js_SubscribeSync(&g->sub, js, subject, NULL, &so, &jerr);
        if (s == NATS_OK)
            s = natsSubscription_SetPendingLimits(g->sub, 1000000, 256 * 1024 * 1024);
    }
    jsStreamInfo_Destroy(si);
    if (s != NATS_OK) {
        snprintf(why, why_size, "stream %s: %s (%s)", cfg->stream, natsStatus_GetText(s),
                 nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "");
        lag_gaps_stop(g);
        return s == NATS_NOT_FOUND ? GF_ERR_NOT_FOUND : GF_ERR_NATS;
    }
    g->last_tick_mono = g->last_prune_mono = gf_clock_mono_ms();
    *out = g;
    return GF_OK;
}

/* Housekeeping when idle: the wall clock moves the tracker only while caught up; idle
 * sources and old list entries are forgotten once a minute. */
static void idle(lag_gaps *g)
{
    int64_t mono = gf_clock_mono_ms(), now = gf_clock_unix_ms();
    if ((g->caught_up || g->last_seq == 0) && mono - g->last_tick_mono >= 200) {
        gf_gap_tick(g->tracker, now);
        g->last_tick_mono = mono;
    }
    if (mono - g->last_prune_mono >= 60000) {
        size_t n = gf_gap_prune(g->tracker, now - g->cfg.forget_after_ms);
        lag_gap_list_expire(&g->list, now - g->cfg.forget_after_ms);
        if (n)
            gf_log_info("forgot idle sources", "count=%zu", n);
        g->last_prune_mono = mono;
    }
}

void lag_gaps_pump(lag_gaps *g, int64_t budget_ms)
{
    int64_t deadline = gf_clock_mono_ms() + budget_ms;
    for (;;) {
        int64_t left = deadline - gf_clock_mono_ms();
        if (left <= 0)
            break;
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, g->sub, left < 50 ? left : 50);
        if (s == NATS_OK) {
            observe(g, m);
            natsMsg_Destroy(m);
            continue;
        }
        if (s != NATS_TIMEOUT && !g->failed) {
            g->failed = true;
            gf_log_error("gap observer stopped reading", "stream=%s err=%s", g->cfg.stream,
                         natsStatus_GetText(s));
        }
        if (s != NATS_TIMEOUT)
            gf_clock_sleep_ms(left < 50 ? left : 50);
        idle(g);
    }
    idle(g);
}

gf_err lag_gaps_report(const lag_gaps *g, Gamefn__V1__LagReport *report)
{
    Gamefn__V1__GapSummary *sum = report->gaps;
    gf_gap_stats st;
    gf_gap_stats_get(g->tracker, &st);
    sum->observing = !g->failed;
    sum->events = st.events;
    sum->unsourced = g->unsourced;
    sum->old = st.old;
    sum->sources = st.sources;
    sum->open_holes = st.open_holes;
    sum->missing = st.missing;
    sum->suspected = st.suspected;
    sum->suspected_seqs = st.suspected_seqs;
    sum->closed = st.closed;
    sum->abandoned = st.abandoned;
    sum->last_stream_seq = g->last_seq;
    sum->started_unix_ms = g->started_unix_ms;
    sum->behind = g->behind;
    size_t n = g->list.len;
    report->open_gaps_unlisted = g->list.unlisted;
    if (n == 0)
        return GF_OK;
    report->open_gaps = calloc(n, sizeof *report->open_gaps);
    Gamefn__V1__SuspectedGap *items = calloc(n, sizeof *items);
    if (!report->open_gaps || !items) {
        free(report->open_gaps);
        free(items);
        report->open_gaps = NULL;
        return GF_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const lag_gap *e = &g->list.items[i];
        gamefn__v1__suspected_gap__init(&items[i]);
        items[i].source_id = (char *)(uintptr_t)e->source_id; /* borrowed until the next pump */
        items[i].first = e->first;
        items[i].last = e->last;
        items[i].opened_unix_ms = e->opened_unix_ms;
        items[i].reported_unix_ms = e->reported_unix_ms;
        items[i].definite = e->definite;
        report->open_gaps[i] = &items[i];
    }
    report->n_open_gaps = n;
    return GF_OK;
}

void lag_gaps_stop(lag_gaps *g)
{
    if (!g)
        return;
    /* The ephemeral consumer goes with the unsubscribe; events may still be arriving
     * (docs/NATS-FACTS.md §4). */
    gf_sub_forget(g->nc, g->sub, GF_SUB_FORGET_WAIT_MS);
    gf_gap_free(g->tracker);
    lag_gap_list_free(&g->list);
    free(g);
}
