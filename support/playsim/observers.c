/*
 * observers.c — what the event consumers made of the run's events, read at its end for
 * the summary and the report (see playsim.h): the leaderboard's top 10 of this run's
 * players, the dead letters stored during the run, the lag monitor's gap counts, and
 * (for the summary) the analytics' counts by type and the crash groups seen.
 *
 * Design notes:
 * - First the consumers settle: every durable consumer of EVENTS has nothing pending
 *   or in flight (the producers have flushed, so nothing more comes), or the timeout.
 * - The data directory outlives a run (the leaderboard, DLQ and EVENTS keep earlier
 *   runs' data): the top 10 is of this run's players (ids start with the run's nonce),
 *   found by paging the global board from rank 1, each with its rank on the board; the
 *   dead letters are counted per subject against the counts at the start.
 * - Each part is left out (NULL) when nothing answers: a build without the consumers.
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
#include "gamefn/wire_error.h"
#include "playsim.h"

enum { PAGE = 100, MAX_PAGES = 50, TOP = 10 };

/* One request/reply with protobuf bodies: the reply decoded with `rd` (caller frees with
 * protobuf_c_message_free_unpacked), NULL when nobody answered, the answer is an error
 * or it does not decode. */
static void *query(gf_play *p, const char *subject, const ProtobufCMessage *req,
                   const ProtobufCMessageDescriptor *rd)
{
    uint8_t buf[512];
    size_t len = protobuf_c_message_get_packed_size(req);
    if (len > sizeof buf)
        return NULL;
    protobuf_c_message_pack(req, buf);
    natsMsg *m = NULL;
    if (natsConnection_Request(&m, p->nc, subject, buf, (int)len, 2000) != NATS_OK)
        return NULL;
    const char *code = NULL;
    ProtobufCMessage *rep = NULL;
    if (!natsMsg_IsNoResponders(m) &&
        natsMsgHeader_Get(m, GF_WIRE_HDR_ERROR_CODE, &code) != NATS_OK)
        rep = protobuf_c_message_unpack(rd, NULL, (size_t)natsMsg_GetDataLength(m),
                                        (const uint8_t *)natsMsg_GetData(m));
    natsMsg_Destroy(m);
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
                  &gamefn__v1__leaderboard_query_reply__descriptor);
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

/* The lag monitor's last report, or NULL when no monitor answers. */
static Gamefn__V1__LagReport *lag_report(gf_play *p)
{
    Gamefn__V1__LagQueryRequest r = GAMEFN__V1__LAG_QUERY_REQUEST__INIT;
    return query(p, "gamefn.v1.lag.query", &r.base, &gamefn__v1__lag_report__descriptor);
}

/* The lag monitor's gap counts, {"open", "suspected", "closed"}, from a report made
 * after `since` (Unix ms: every event of the run stored): an older one may count holes
 * of events then in flight. The monitor reports once per functions.lag.interval
 * (10 s); this waits up to wait_ms for a report that recent. */
static json_t *gaps_json(gf_play *p, int64_t since, int64_t wait_ms)
{
    Gamefn__V1__LagReport *rep = NULL;
    for (int64_t until = gf_clock_mono_ms() + wait_ms;; gf_clock_sleep_ms(500)) {
        release(rep);
        rep = lag_report(p);
        if (!rep || !rep->gaps || !rep->gaps->observing) {
            release(rep);
            return NULL; /* no monitor, or it does not look for gaps */
        }
        if (rep->as_of_unix_ms >= since)
            break;
        if (gf_clock_mono_ms() >= until) {
            gf_log_warn("no lag report after the run's end: gaps not counted", "as_of_unix_ms=%lld",
                        (long long)rep->as_of_unix_ms);
            release(rep);
            return NULL;
        }
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

/* The analytics function's counts by event type over the minutes of the run (other
 * events in those minutes count too): {"events": N, "by_type": {...}}. */
static json_t *analytics_json(gf_play *p)
{
    Gamefn__V1__AnalyticsQueryRequest r = GAMEFN__V1__ANALYTICS_QUERY_REQUEST__INIT;
    r.from_unix_ms = p->t0_unix / 60000 * 60000;
    r.to_unix_ms = (gf_clock_unix_ms() / 60000 + 1) * 60000;
    r.group_by = GAMEFN__V1__ANALYTICS_GROUP_BY__ANALYTICS_GROUP_BY_TYPE;
    Gamefn__V1__AnalyticsQueryReply *rep = query(p, "gamefn.v1.analytics.query", &r.base,
                                                 &gamefn__v1__analytics_query_reply__descriptor);
    if (!rep)
        return NULL;
    json_t *by = json_object();
    for (size_t i = 0; i < rep->n_counts; i++)
        json_object_set_new(by, rep->counts[i]->name,
                            json_integer((json_int_t)rep->counts[i]->count));
    json_t *out = json_pack("{s:I, s:o}", "events", (json_int_t)rep->total, "by_type", by);
    release(rep);
    return out;
}

/* The crash groups (fingerprints) the crashes function saw during the run. */
static json_t *crashes_json(gf_play *p)
{
    Gamefn__V1__CrashTopQuery top = GAMEFN__V1__CRASH_TOP_QUERY__INIT;
    Gamefn__V1__CrashesQueryRequest r = GAMEFN__V1__CRASHES_QUERY_REQUEST__INIT;
    top.limit = 100;
    top.since_unix_ms = p->t0_unix;
    r.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_TOP;
    r.top = &top;
    Gamefn__V1__CrashesQueryReply *rep =
        query(p, "gamefn.v1.crashes.query", &r.base, &gamefn__v1__crashes_query_reply__descriptor);
    if (!rep)
        return NULL;
    json_t *out = json_pack("{s:I}", "fingerprints", (json_int_t)rep->fingerprints);
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
    json_t *parts[] = {dlq_json(p), leaderboard_json(p), gaps_json(p, stored_unix_ms, 15000)};
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
