/*
 * monitor.c — the lag monitor's leader loop (see monitor.h).
 *
 * Design notes.
 *  - One thread does everything: lease, polls (every interval, or at once when asked on
 *    gamefn.v1.lag.poll), alert publishing, the gap observer's reading (its wait between
 *    polls is the observer's pump) and the report. Nothing is shared with the query
 *    endpoint, which reads the report from KV and asks for a poll by message.
 *  - `tracked` is this tenure's view of each consumer: the debouncer (published level and
 *    the trailing state that lowers it) and the sequence of the consumer's last alert in
 *    the alert stream, which is the compare-and-set expectation of the next one. It is
 *    rebuilt from the alert stream at each acquisition, never trusted across tenures.
 *  - An alert that could not be stored (timeout, stream away) leaves the published level
 *    where it was, so the next poll tries the same transition again.
 */
#include "monitor.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/kv.h"
#include "gamefn/lease.h"
#include "gamefn/log.h"
#include "gamefn/partition.h"
#include "gamefn/publish.h"
#include "gamefn/util.h"
#include "gamefn/v1/lag.pb-c.h"
#include "gaps.h"
#include "level.h"
#include "poll.h"
#include "retention.h"

enum { RETENTION_MAX = 4, ERRORS_MAX = LAG_POLL_ERRORS_MAX + 1 };

typedef struct tracked {
    char stream[256], consumer[256];
    lag_debounce deb;
    uint64_t subject_seq; /* the last alert's sequence in the alert stream; 0 = none */
    int64_t level_since;  /* unix ms the level was published, 0 = before this tenure */
    bool seen;            /* in the current poll */
} tracked;

struct lag_monitor {
    const lag_config *cfg;
    natsConnection *nc;
    jsCtx *js;
    char instance[96];
    kvStore *lease_kv, *report_kv;
    gf_publish *pub;
    gf_lease lease;
    bool leader;
    tracked *t;
    size_t n, cap;
    lag_gaps *gaps;
    char gap_error[256];
    char retention[RETENTION_MAX][512];
    size_t retention_len;
    int64_t next_poll_mono;
    int64_t last_poll_mono;
    natsSubscription *demand; /* gamefn.v1.lag.poll, synchronous: read by the loop */
    bool asked;               /* a poll was asked for since the last one */
    bool slow;                /* the last poll took over a tenth of the interval (said once) */
    pthread_t thread;
    bool started;
    atomic_int quit;
};

/* ---- tracked consumers -------------------------------------------------------------- */

static tracked *find(lag_monitor *m, const char *stream, const char *consumer)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->t[i].stream, stream) == 0 && strcmp(m->t[i].consumer, consumer) == 0)
            return &m->t[i];
    return NULL;
}

static void alert_subject(const char *stream, const char *consumer, char *buf, size_t size)
{
    snprintf(buf, size, LAG_ALERT_SUBJECT ".%s.%s", stream, consumer);
}

/* Reads the subject's last alert: its level and sequence (none: OK, 0). */
static gf_err load_alert(lag_monitor *m, tracked *t)
{
    char subject[600];
    alert_subject(t->stream, t->consumer, subject, sizeof subject);
    natsMsg *msg = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetLastMsg(&msg, m->js, m->cfg->alert_stream, subject, NULL, &jerr);
    lag_level level = LAG_OK;
    uint64_t seq = 0;
    if (s == NATS_OK) {
        Gamefn__V1__LagAlert *a = gamefn__v1__lag_alert__unpack(
            NULL, (size_t)natsMsg_GetDataLength(msg), (const uint8_t *)natsMsg_GetData(msg));
        if (a && (unsigned)a->level < LAG_LEVELS)
            level = (lag_level)a->level;
        seq = natsMsg_GetSequence(msg);
        if (a)
            gamefn__v1__lag_alert__free_unpacked(a, NULL);
    }
    natsMsg_Destroy(msg);
    if (s != NATS_OK && s != NATS_NOT_FOUND) {
        gf_log_warn("cannot read the last alert", "subject=%s err=%s", subject,
                    natsStatus_GetText(s));
        return GF_ERR_UNAVAILABLE;
    }
    lag_debounce_init(&t->deb, level);
    t->subject_seq = seq;
    return GF_OK;
}

static tracked *track(lag_monitor *m, const char *stream, const char *consumer)
{
    tracked *t = find(m, stream, consumer);
    if (t)
        return t;
    tracked *grown = gf_grow(m->t, &m->cap, m->n + 1, sizeof *m->t);
    if (!grown)
        return NULL;
    m->t = grown;
    t = &m->t[m->n];
    memset(t, 0, sizeof *t);
    snprintf(t->stream, sizeof t->stream, "%s", stream);
    snprintf(t->consumer, sizeof t->consumer, "%s", consumer);
    if (load_alert(m, t) != GF_OK)
        return NULL; /* try again next poll, rather than guess the published level */
    m->n++;
    return t;
}

/* ---- alerts --------------------------------------------------------------------------- */

/* Publishes t's transition to `level`; GF_OK once stored (t->subject_seq moves on). */
static gf_err publish_alert(lag_monitor *m, tracked *t, lag_level level, const char *reason,
                            Gamefn__V1__ConsumerLag *lag)
{
    char subject[600], msg_id[GF_PUBLISH_MSG_ID_MAX], expect[32];
    alert_subject(t->stream, t->consumer, subject, sizeof subject);
    int n = snprintf(msg_id, sizeof msg_id, "lag.%s.%s.%" PRIu64 ".%d", t->stream, t->consumer,
                     t->subject_seq, (int)level);
    if (n < 0 || (size_t)n >= sizeof msg_id) { /* very long names: a hash of them */
        snprintf(msg_id, sizeof msg_id, "lag.%08x.%" PRIu64 ".%d",
                 (unsigned)gf_partition_fnv1a32(subject, strlen(subject)), t->subject_seq,
                 (int)level);
    }
    snprintf(expect, sizeof expect, "%" PRIu64, t->subject_seq);

    Gamefn__V1__LagAlert a = GAMEFN__V1__LAG_ALERT__INIT;
    a.stream = t->stream;
    a.consumer = t->consumer;
    a.level = (Gamefn__V1__LagLevel)level;
    a.previous = (Gamefn__V1__LagLevel)t->deb.level;
    a.reason = (char *)(uintptr_t)reason;
    a.lag = lag;
    a.at_unix_ms = gf_clock_unix_ms();
    a.monitor_id = m->instance;
    a.lease_token = m->lease.token;
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_err err = gf_pack(&a.base, &buf, &len);
    if (err != GF_OK)
        return err;
    gf_publish_header h = {"Nats-Expected-Last-Subject-Sequence", expect};
    gf_publish_msg msg = {.subject = subject,
                          .msg_id = msg_id,
                          .data = buf,
                          .len = len,
                          .headers = &h,
                          .headers_len = 1};
    gf_publish_result res;
    err = gf_publish_send_sync(m->pub, &msg, &res);
    free(buf);
    if (err == GF_OK) {
        t->subject_seq = res.seq;
        gf_log(level > t->deb.level || level >= LAG_CRITICAL ? GF_LOG_WARN : GF_LOG_INFO,
               "lag level changed", "stream=%s consumer=%s level=%s previous=%s reason=\"%s\"",
               t->stream, t->consumer, lag_level_name(level), lag_level_name(t->deb.level), reason);
    } else if (err == GF_ERR_CONFLICT) {
        /* someone else wrote the subject (a leader we did not know of): re-read it */
        gf_log_warn("alert refused: the subject moved, re-reading it", "subject=%s", subject);
        load_alert(m, t);
    } else {
        gf_log_warn("alert not stored, retrying next poll", "subject=%s err=%s", subject,
                    gf_err_str(err));
    }
    return err;
}

/* ---- the report ------------------------------------------------------------------------ */

static void fill_lag(Gamefn__V1__ConsumerLag *c, const lag_sample *s, const lag_verdict *v,
                     const tracked *t)
{
    lag_sample_fill(c, s, v);
    if (t) {
        c->level = (Gamefn__V1__LagLevel)t->deb.level;
        c->level_since_unix_ms = t->level_since;
    }
}

static void write_report(lag_monitor *m, const lag_poll_result *r, Gamefn__V1__ConsumerLag *lags,
                         char **errors, size_t errors_len)
{
    Gamefn__V1__LagReport rep = GAMEFN__V1__LAG_REPORT__INIT;
    Gamefn__V1__GapSummary sum = GAMEFN__V1__GAP_SUMMARY__INIT;
    Gamefn__V1__ConsumerLag **ptrs = calloc(r->len ? r->len : 1, sizeof *ptrs);
    char *warnings[RETENTION_MAX];
    if (!ptrs)
        return;
    for (size_t i = 0; i < r->len; i++)
        ptrs[i] = &lags[i];
    for (size_t i = 0; i < m->retention_len; i++)
        warnings[i] = m->retention[i];
    rep.as_of_unix_ms = gf_clock_unix_ms();
    rep.monitor_id = m->instance;
    rep.lease_token = m->lease.token;
    rep.interval_ms = m->cfg->interval_ms;
    rep.poll_ms = r->took_ms;
    rep.warning = (uint64_t)m->cfg->warning;
    rep.critical = (uint64_t)m->cfg->critical;
    rep.consumers = ptrs;
    rep.n_consumers = r->len;
    rep.gaps = &sum;
    sum.stream = (char *)(uintptr_t)m->cfg->gaps.stream;
    if (m->gaps)
        lag_gaps_report(m->gaps, &rep);
    rep.retention_warnings = warnings;
    rep.n_retention_warnings = m->retention_len;
    rep.errors = errors;
    rep.n_errors = errors_len;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (gf_pack(&rep.base, &buf, &len) == GF_OK) {
        uint64_t rev = 0;
        natsStatus s = kvStore_Put(&rev, m->report_kv, LAG_REPORT_KEY, buf, (int)len);
        if (s != NATS_OK)
            gf_log_warn("cannot store the lag report", "err=%s", natsStatus_GetText(s));
    }
    free(buf);
    if (rep.n_open_gaps) {
        free(rep.open_gaps[0]); /* one array of items (lag_gaps_report) */
        free(rep.open_gaps);
    }
    free(ptrs);
}

/* ---- one poll ------------------------------------------------------------------------- */

static bool lease_fresh(const lag_monitor *m)
{
    return m->leader && m->lease.expires_unix_ms - gf_clock_unix_ms() > m->cfg->lease_ttl_ms / 5;
}

static bool monitored(const lag_monitor *m, const char *stream)
{
    if (m->cfg->streams_len == 0)
        return true;
    for (size_t i = 0; i < m->cfg->streams_len; i++)
        if (strcmp(m->cfg->streams[i], stream) == 0)
            return true;
    return false;
}

/* Consumers tracked but absent from this poll (and not because their stream could not be
 * read): an alert back to OK if they were raised, then forgotten. */
static void forget_vanished(lag_monitor *m, const lag_poll_result *r, bool may_publish)
{
    size_t kept = 0;
    for (size_t i = 0; i < m->n; i++) {
        tracked *t = &m->t[i];
        bool keep = t->seen || lag_poll_unreadable(r, t->stream);
        if (!keep && t->deb.level != LAG_OK && monitored(m, t->stream))
            keep = !may_publish ||
                   publish_alert(m, t, LAG_OK, "consumer no longer exists", NULL) != GF_OK;
        if (keep)
            m->t[kept++] = *t;
    }
    m->n = kept;
}

static void poll_once(lag_monitor *m)
{
    lag_poll_result r;
    char why[256] = "";
    gf_err err = lag_poll(m->nc, m->js, m->cfg->streams, m->cfg->streams_len, &r, why, sizeof why);
    if (err != GF_OK) {
        gf_log_warn("lag poll failed", "err=%s why=\"%s\"", gf_err_str(err), why);
        return;
    }
    Gamefn__V1__ConsumerLag *lags = calloc(r.len ? r.len : 1, sizeof *lags);
    lag_verdict *verdicts = calloc(r.len ? r.len : 1, sizeof *verdicts);
    if (!lags || !verdicts)
        goto out;
    lag_thresholds th = {(uint64_t)m->cfg->warning, (uint64_t)m->cfg->critical};
    bool may_publish = lease_fresh(m);
    int64_t mono = gf_clock_mono_ms();
    for (size_t i = 0; i < m->n; i++)
        m->t[i].seen = false;
    for (size_t i = 0; i < r.len; i++) {
        const lag_sample *s = &r.samples[i];
        lag_classify(&th, &s->in, &verdicts[i]);
        tracked *t = track(m, s->stream, s->consumer);
        if (t) {
            t->seen = true;
            lag_debounce next = t->deb;
            lag_level was = t->deb.level;
            if (lag_debounce_step(&next, verdicts[i].level, mono, m->cfg->clear_after_ms)) {
                lag_level to = next.level;
                next.level = was; /* published only once stored */
                t->deb = next;
                fill_lag(&lags[i], s, &verdicts[i], t);
                lags[i].level = (Gamefn__V1__LagLevel)to;
                lags[i].level_since_unix_ms = gf_clock_unix_ms();
                if (may_publish && publish_alert(m, t, to, verdicts[i].reason, &lags[i]) == GF_OK) {
                    t->deb.level = to;
                    t->level_since = lags[i].level_since_unix_ms;
                }
            } else {
                t->deb = next;
            }
        }
        fill_lag(&lags[i], s, &verdicts[i], t);
    }
    forget_vanished(m, &r, may_publish);

    char *errors[ERRORS_MAX];
    size_t errors_len = 0;
    for (size_t i = 0; i < r.errors_len; i++)
        errors[errors_len++] = r.errors[i];
    if (m->gap_error[0])
        errors[errors_len++] = m->gap_error;
    if (lease_fresh(m))
        write_report(m, &r, lags, errors, errors_len);
    gf_log_debug("lag poll", "consumers=%zu took_ms=%" PRId64, r.len, r.took_ms);
    bool slow = r.took_ms * 10 > m->cfg->interval_ms;
    if (slow && !m->slow)
        gf_log_warn("lag poll took over a tenth of the interval: consumer infos of lagging "
                    "filtered consumers cost the server a scan each; raise functions.lag.interval",
                    "consumers=%zu took_ms=%" PRId64 " interval_ms=%" PRId64, r.len, r.took_ms,
                    m->cfg->interval_ms);
    m->slow = slow;
out:
    free(lags);
    free(verdicts);
    lag_poll_free(&r);
}

/* ---- leadership ------------------------------------------------------------------------ */

static void warn_retention(void *ctx, const char *text)
{
    lag_monitor *m = ctx;
    gf_log_warn("retention cannot hold the configured outage", "warning=\"%s\"", text);
    if (m->retention_len < RETENTION_MAX)
        snprintf(m->retention[m->retention_len++], sizeof m->retention[0], "%s", text);
}

/* The retention stream as the server has it, against functions.lag's outage. */
static void check_retention(lag_monitor *m)
{
    m->retention_len = 0;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    if (js_GetStreamInfo(&si, m->js, m->cfg->retention_stream, NULL, &jerr) != NATS_OK) {
        char text[320];
        snprintf(text, sizeof text, "stream %s not found: its retention is not checked",
                 m->cfg->retention_stream);
        warn_retention(m, text);
        return;
    }
    lag_retention_input in = {.stream = m->cfg->retention_stream,
                              .max_msgs = si->Config->MaxMsgs > 0 ? si->Config->MaxMsgs : 0,
                              .max_bytes = si->Config->MaxBytes > 0 ? si->Config->MaxBytes : 0,
                              .max_age_ms = si->Config->MaxAge / 1000000,
                              .discard_new = si->Config->Discard == js_DiscardNew,
                              .peak_events_per_s = m->cfg->peak_events_per_s,
                              .outage_ms = m->cfg->outage_ms,
                              .avg_event_size = m->cfg->avg_event_size};
    jsStreamInfo_Destroy(si);
    lag_retention_check(&in, warn_retention, m);
}

/* Every consumer that has alerts: tracked from its last one, so one that vanished while
 * raised is brought back to OK by the first poll. */
static void load_alert_subjects(lag_monitor *m)
{
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Info.SubjectsFilter = LAG_ALERT_SUBJECT ".>";
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, m->js, m->cfg->alert_stream, &o, &jerr);
    if (s != NATS_OK) {
        gf_log_warn("cannot list the alert subjects", "stream=%s err=%s", m->cfg->alert_stream,
                    natsStatus_GetText(s));
        return;
    }
    const jsStreamStateSubjects *subs = si->State.Subjects;
    size_t prefix = strlen(LAG_ALERT_SUBJECT ".");
    for (int i = 0; subs && i < subs->Count; i++) {
        const char *rest = subs->List[i].Subject + prefix;
        const char *dot = strchr(rest, '.');
        char stream[256];
        if (!dot || (size_t)(dot - rest) >= sizeof stream)
            continue;
        snprintf(stream, sizeof stream, "%.*s", (int)(dot - rest), rest);
        track(m, stream, dot + 1);
    }
    jsStreamInfo_Destroy(si);
}

static void acquire(lag_monitor *m)
{
    m->leader = true;
    gf_log_info("became lag monitor leader", "token=%" PRIu64, m->lease.token);
    m->n = 0;
    load_alert_subjects(m);
    check_retention(m);
    m->gap_error[0] = '\0';
    if (m->cfg->gaps.enabled) {
        char why[256] = "";
        int64_t start = gf_clock_unix_ms() - m->cfg->gaps.lookback_ms;
        gf_err err = lag_gaps_start(m->nc, m->js, &m->cfg->gaps, start, &m->gaps, why, sizeof why);
        if (err != GF_OK) {
            snprintf(m->gap_error, sizeof m->gap_error, "gap observer: %s", why);
            gf_log_error("gap observer not started", "why=\"%s\"", why);
        }
    }
    m->next_poll_mono = gf_clock_mono_ms();
}

static void release(lag_monitor *m)
{
    lag_gaps_stop(m->gaps);
    m->gaps = NULL;
    m->n = 0;
    m->leader = false;
}

/* Takes the requests for a poll that arrived (a synchronous subscription read by this
 * thread alone: no callback can outlive the monitor). */
static void take_demands(lag_monitor *m)
{
    int queued = 0;
    while (natsSubscription_GetPending(m->demand, &queued, NULL) == NATS_OK && queued > 0) {
        natsMsg *msg = NULL;
        if (natsSubscription_NextMsg(&msg, m->demand, 1) != NATS_OK)
            break;
        natsMsg_Destroy(msg);
        m->asked = true;
    }
}

static void *run(void *arg)
{
    lag_monitor *m = arg;
    int64_t renew_every = m->cfg->lease_ttl_ms / 4;
    int64_t next_lease = 0;
    while (!atomic_load(&m->quit)) {
        int64_t mono = gf_clock_mono_ms();
        if (mono >= next_lease) {
            gf_err err = gf_lease_tick(&m->lease, gf_clock_unix_ms());
            if (err == GF_OK && !m->leader) {
                acquire(m);
            } else if (err != GF_OK && m->leader) {
                gf_log_warn("lost lag monitor leadership", "err=%s", gf_err_str(err));
                release(m);
            }
            next_lease = mono + renew_every;
        }
        take_demands(m);
        bool demanded = m->asked && gf_clock_mono_ms() - m->last_poll_mono >= LAG_DEMAND_GAP_MS;
        if (m->leader && (demanded || gf_clock_mono_ms() >= m->next_poll_mono)) {
            m->asked = false;
            m->last_poll_mono = gf_clock_mono_ms();
            poll_once(m);
            m->next_poll_mono += m->cfg->interval_ms;
            if (m->next_poll_mono < gf_clock_mono_ms()) /* fell behind: do not burst */
                m->next_poll_mono = gf_clock_mono_ms() + m->cfg->interval_ms;
        }
        int64_t until = next_lease;
        if (m->leader && m->next_poll_mono < until)
            until = m->next_poll_mono;
        int64_t wait = until - gf_clock_mono_ms();
        if (wait > 100)
            wait = 100; /* notice quit promptly */
        if (m->gaps)
            lag_gaps_pump(m->gaps, wait);
        else
            gf_clock_sleep_ms(wait);
    }
    bool was = m->leader;
    release(m);
    if (gf_lease_release(&m->lease) == GF_OK && was)
        gf_log_info("released lag monitor leadership", "token=%" PRIu64, m->lease.token);
    return NULL;
}

gf_err lag_monitor_start(const lag_config *cfg, natsConnection *nc, jsCtx *js,
                         const char *instance_id, lag_monitor **out)
{
    *out = NULL;
    lag_monitor *m = calloc(1, sizeof *m);
    if (!m)
        return GF_ERR_NOMEM;
    m->cfg = cfg;
    m->nc = nc;
    m->js = js;
    snprintf(m->instance, sizeof m->instance, "%s", instance_id);
    gf_err err = gf_kv_open(js, cfg->lease_bucket, &m->lease_kv);
    if (err == GF_OK)
        err = gf_kv_open(js, cfg->report_bucket, &m->report_kv);
    if (err == GF_OK)
        err = gf_publish_open(nc, NULL, &m->pub);
    if (err == GF_OK && natsConnection_SubscribeSync(&m->demand, nc, LAG_POLL_SUBJECT) != NATS_OK)
        err = GF_ERR_NATS;
    if (err == GF_OK) {
        gf_lease_init(&m->lease, js, m->lease_kv, LAG_LEASE_KEY, instance_id, cfg->lease_ttl_ms);
        err = pthread_create(&m->thread, NULL, run, m) == 0 ? GF_OK : GF_ERR_NOMEM;
        m->started = err == GF_OK;
    }
    if (err != GF_OK) {
        lag_monitor_stop(m);
        return err;
    }
    *out = m;
    return GF_OK;
}

void lag_monitor_stop(lag_monitor *m)
{
    if (!m)
        return;
    atomic_store(&m->quit, 1);
    if (m->started)
        pthread_join(m->thread, NULL);
    gf_sub_forget(m->nc, m->demand, GF_SUB_FORGET_WAIT_MS); /* a poll request may be arriving */
    gf_publish_close(m->pub, 2000);
    kvStore_Destroy(m->report_kv);
    kvStore_Destroy(m->lease_kv);
    free(m->t);
    free(m);
}
