/*
 * observers.c — what the event consumers made of the run's events, read at its end for
 * the summary and the report (see playsim.h): the leaderboard's top 10 of this run's
 * players, the dead letters stored during the run, the lag monitor's gap counts (from a
 * poll made at once: a `fresh` query), the analytics' counts per minute by type and the
 * most frequent crash groups. The requests and the JSON of the analytics and crashes
 * answers are the CLI's own (tools/gamefn/query.h).
 *
 * Design notes:
 * - First the consumers settle: every durable consumer of EVENTS has nothing pending
 *   or in flight (the producers have flushed, so nothing more comes), or the timeout.
 * - The data directory outlives a run (the leaderboard, DLQ and EVENTS keep earlier
 *   runs' data): the top 10 is of this run's players (ids start with the run's nonce),
 *   found by paging the global board from rank 1, each with its rank on the board; the
 *   dead letters are counted per subject against the counts at the start.
 * - Each part is left out (NULL) when nothing answers: a build without the consumers;
 *   the gaps say why instead ({"not_counted": why}), since a missing gap count must not
 *   pass for none.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/analytics.pb-c.h"
#include "gamefn/v1/crashes.pb-c.h"
#include "gamefn/v1/lag.pb-c.h"
#include "gamefn/v1/leaderboard.pb-c.h"
#include "playsim.h"
#include "query.h"

enum {
    PAGE = 100,
    MAX_PAGES = 50,
    TOP = 10,
    CRASH_GROUPS = 20, /* the report lists the most frequent ones */
    QUERY_MS = 2000,
    LAG_QUERY_MS = 5000, /* a fresh lag query waits for a poll (up to 3 s at the monitor) */
};

/* One request/reply (query.h): the reply decoded with `rd` (caller frees with
 * protobuf_c_message_free_unpacked), NULL when nobody answered, the answer is an error
 * or it does not decode; *result (may be NULL) says which. */
static void *query(gf_play *p, const char *subject, const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *rd, int64_t timeout_ms,
                   gf_query_result *result)
{
    ProtobufCMessage *rep = NULL;
    gf_query_result r = gf_query(p->nc, subject, req, rd, timeout_ms, &rep, NULL);
    if (result)
        *result = r;
    return rep;
}

static void release(void *reply)
{
    if (reply)
        protobuf_c_message_free_unpacked(reply, NULL);
}

/* Subject -> messages of the DLQ stream now (an object), NULL without the stream. */
static json_t *dlq_counts(gf_play *p)
{
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Info.SubjectsFilter = ">";
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, p->js, "DLQ", &o, NULL) != NATS_OK || !si)
        return NULL;
    json_t *by = json_object();
    for (int i = 0; si->State.Subjects && i < si->State.Subjects->Count; i++)
        json_object_set_new(by, si->State.Subjects->List[i].Subject,
                            json_integer((json_int_t)si->State.Subjects->List[i].Msgs));
    jsStreamInfo_Destroy(si);
    return by;
}

uint64_t gf_play_events_last_seq(gf_play *p)
{
    jsStreamInfo *si = NULL;
    uint64_t seq = 0;
    if (js_GetStreamInfo(&si, p->js, "EVENTS", NULL, NULL) == NATS_OK && si)
        seq = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return seq;
}

bool gf_play_durable(const jsConsumerInfo *ci)
{
    return ci->Config && ci->Config->Durable && ci->Config->Durable[0];
}

void gf_play_observers_start(gf_play *p)
{
    p->dlq_before = dlq_counts(p);
    p->events_base = gf_play_events_last_seq(p);
}

bool gf_play_observers_settle(gf_play *p, int64_t timeout_ms)
{
    for (int64_t until = gf_clock_mono_ms() + timeout_ms;; gf_clock_sleep_ms(250)) {
        jsConsumerInfoList *list = NULL;
        uint64_t behind = 0;
        if (js_Consumers(&list, p->js, "EVENTS", NULL, NULL) == NATS_OK && list)
            for (int i = 0; i < list->Count; i++)
                if (gf_play_durable(list->List[i])) /* not a reader's ephemeral consumer */
                    behind += list->List[i]->NumPending + (uint64_t)list->List[i]->NumAckPending;
        jsConsumerInfoList_Destroy(list);
        if (behind == 0)
            return true;
        if (gf_clock_mono_ms() >= until) {
            gf_log_warn("the event consumers did not catch up", "behind=%llu",
                        (unsigned long long)behind);
            return false;
        }
    }
}

/* The dead letters stored during the run, per consumer ("leaderboard-p03" counts as
 * "leaderboard"): {"messages": N, "by_consumer": {...}}. */
static json_t *dlq_json(gf_play *p)
{
    json_t *now = dlq_counts(p), *count;
    if (!now)
        return NULL;
    json_t *by = json_object();
    json_int_t total = 0;
    const char *subject;
    json_object_foreach(now, subject, count)
    {
        json_int_t n =
            json_integer_value(count) - json_integer_value(json_object_get(p->dlq_before, subject));
        const char *last = strrchr(subject, '.');
        if (n <= 0 || !last)
            continue;
        char name[64];
        gf_play_group_name(last + 1, name, sizeof name);
        json_object_set_new(by, name,
                            json_integer(json_integer_value(json_object_get(by, name)) + n));
        total += n;
    }
    json_decref(now);
    return json_pack("{s:I, s:o}", "messages", total, "by_consumer", by);
}

/* The global board's best 10 of this run's players, with their ranks on the board. */
static json_t *leaderboard_json(gf_play *p)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%sp", p->nonce);
    json_t *top = json_array();
    bool answered = false;
    for (uint64_t start = 1, page = 0; page < MAX_PAGES && json_array_size(top) < TOP; page++) {
        Gamefn__V1__PageQuery q = GAMEFN__V1__PAGE_QUERY__INIT;
        Gamefn__V1__LeaderboardQueryRequest r = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__INIT;
        q.start_rank = start;
        q.limit = PAGE;
        r.board = "global";
        r.query_case = GAMEFN__V1__LEADERBOARD_QUERY_REQUEST__QUERY_PAGE;
        r.page = &q;
        Gamefn__V1__LeaderboardQueryReply *rep =
            query(p, GF_WIRE_SUBJ_LEADERBOARD_QUERY, &r.base,
                  &gamefn__v1__leaderboard_query_reply__descriptor, QUERY_MS, NULL);
        if (!rep)
            break;
        answered = true;
        for (size_t i = 0; i < rep->n_entries && json_array_size(top) < TOP; i++) {
            const Gamefn__V1__LeaderboardEntry *e = rep->entries[i];
            if (strncmp(e->player_id, prefix, strlen(prefix)) == 0)
                json_array_append_new(top, json_pack("{s:I, s:s, s:I}", "rank", (json_int_t)e->rank,
                                                     "player", e->player_id, "score",
                                                     (json_int_t)e->score));
        }
        bool last = rep->n_entries < PAGE;
        release(rep);
        if (last)
            break;
        start += PAGE;
    }
    if (!answered) {
        json_decref(top);
        return NULL;
    }
    return json_pack("{s:s, s:o}", "board", "global", "top", top);
}

/* The lag monitor's gap counts, {"open", "suspected", "closed"}, from a poll made now
 * (a `fresh` query: one request, about one poll's time), or {"not_counted": why}. The
 * report must be from after `since` (Unix ms: every event of the run stored): an older
 * one may count holes of events then in flight; a monitor that does not poll on demand
 * (an older build) answers with its last report, which is then not used. */
static json_t *gaps_json(gf_play *p, int64_t since)
{
    Gamefn__V1__LagQueryRequest r = GAMEFN__V1__LAG_QUERY_REQUEST__INIT;
    r.fresh = true;
    gf_query_result res;
    Gamefn__V1__LagReport *rep = query(p, "gamefn.v1.lag.query", &r.base,
                                       &gamefn__v1__lag_report__descriptor, LAG_QUERY_MS, &res);
    char why[160] = "";
    if (!rep)
        snprintf(why, sizeof why, "the lag monitor %s gamefn.v1.lag.query",
                 res == GF_QUERY_NO_SERVICE ? "does not run: nobody answered"
                 : res == GF_QUERY_TIMEOUT  ? "did not answer in 5 s"
                                            : "refused or garbled its answer to");
    else if (!rep->gaps || !rep->gaps->observing)
        snprintf(why, sizeof why,
                 "the lag monitor does not look for gaps (no leader, or "
                 "functions.lag.gaps disabled)");
    else if (rep->as_of_unix_ms < since)
        snprintf(why, sizeof why,
                 "the lag monitor's report is from %.1f s before the run's last "
                 "event was stored (it does not poll on demand)",
                 (double)(since - rep->as_of_unix_ms) / 1000.0);
    if (why[0]) {
        gf_log_warn("gaps not counted", "why=\"%s\"", why);
        release(rep);
        return json_pack("{s:s}", "not_counted", why);
    }
    if (rep->gaps->behind)
        gf_log_info("the gap observer had not read the run's last events at that poll",
                    "behind=%llu", (unsigned long long)rep->gaps->behind);
    json_t *out =
        json_pack("{s:I, s:I, s:I}", "open", (json_int_t)rep->gaps->open_holes, "suspected",
                  (json_int_t)rep->gaps->suspected, "closed", (json_int_t)rep->gaps->closed);
    release(rep);
    return out;
}

/* The analytics function's counts per minute by event type over the run's minutes
 * (other events in those minutes count too), as `gamefn analytics --json --per-minute`
 * prints them. */
static json_t *analytics_json(gf_play *p)
{
    Gamefn__V1__AnalyticsQueryRequest r = GAMEFN__V1__ANALYTICS_QUERY_REQUEST__INIT;
    r.from_unix_ms = p->t0_unix / 60000 * 60000;
    r.to_unix_ms = (gf_clock_unix_ms() / 60000 + 1) * 60000;
    r.group_by = GAMEFN__V1__ANALYTICS_GROUP_BY__ANALYTICS_GROUP_BY_TYPE;
    r.per_minute = true;
    Gamefn__V1__AnalyticsQueryReply *rep =
        query(p, "gamefn.v1.analytics.query", &r.base,
              &gamefn__v1__analytics_query_reply__descriptor, QUERY_MS, NULL);
    json_t *out = rep ? gf_query_analytics_json(rep) : NULL;
    release(rep);
    return out;
}

/* The most frequent crash groups (fingerprints) seen since the run started, as
 * `gamefn crashes --json --since <start>` prints them. */
static json_t *crashes_json(gf_play *p)
{
    Gamefn__V1__CrashTopQuery top = GAMEFN__V1__CRASH_TOP_QUERY__INIT;
    Gamefn__V1__CrashesQueryRequest r = GAMEFN__V1__CRASHES_QUERY_REQUEST__INIT;
    top.limit = CRASH_GROUPS;
    top.since_unix_ms = p->t0_unix;
    r.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_TOP;
    r.top = &top;
    Gamefn__V1__CrashesQueryReply *rep =
        query(p, "gamefn.v1.crashes.query", &r.base, &gamefn__v1__crashes_query_reply__descriptor,
              QUERY_MS, NULL);
    json_t *out = rep ? gf_query_crashes_top_json(rep) : NULL;
    release(rep);
    return out;
}

void gf_play_observers_json(gf_play *p, json_t *root, int64_t stored_unix_ms)
{
    json_t *extra[] = {analytics_json(p), crashes_json(p)};
    static const char *const extra_names[] = {"analytics", "crashes"};
    for (size_t i = 0; i < 2; i++)
        if (extra[i])
            json_object_set_new(root, extra_names[i], extra[i]);
    json_t *parts[] = {dlq_json(p), leaderboard_json(p), gaps_json(p, stored_unix_ms)};
    static const char *const names[] = {"dlq", "leaderboard", "gaps"};
    for (size_t i = 0; i < 3; i++)
        if (parts[i])
            json_object_set_new(root, names[i], parts[i]);
}

void gf_play_observers_free(gf_play *p)
{
    json_decref(p->dlq_before);
    p->dlq_before = NULL;
}
