/*
 * The analytics and crashes consumers end to end on a real nats-server: random events
 * (every payload type; generic ones with and without datacenter and queue; crashes from a
 * few bugs in many builds, at different addresses) are produced while two replicas of
 * each consume them; one replica of each is SIGKILLed mid-stream and a new one started,
 * and a share of the events is published again after the duplicate window (same source
 * and seq, a new Msg-Id) and again within it (same Msg-Id). Then every query answer must
 * equal a brute-force recount of what was produced: analytics per type, datacenter and
 * queue, in total and per minute; crashes per fingerprint (count, first and last seen,
 * the sample, partitions), top and detail. Malformed queries get typed errors, and the
 * CLI shows the same numbers.
 */
#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crashes.h"
#include "gamefn/clock.h"
#include "gamefn/partition.h"
#include "gamefn/util.h"
#include "gamefn/v1/analytics.pb-c.h"
#include "gamefn/v1/crashes.pb-c.h"
#include "gamefn/v1/error.pb-c.h"
#include "obs_support.h"

#define ANALYTICS "functions/analytics/gamefn-analytics"
#define CRASHES   "functions/crashes/gamefn-crashes"

enum { EVENTS = 2400, MINUTES = 6, PLAYERS = 60, SOURCES = 4, BUGS = 5 };

static void options(gf_fnenv_opts *o)
{
    memset(o, 0, sizeof *o);
    o->server_config = gf_ev_mapping;
    o->streams = gf_ev_stream;
    o->runtime = "  drain_timeout: 5s\n"
                 "  fetch_batch: 64\n"
                 "  fetch_expiry: 1s\n"
                 "  heartbeat: 250ms\n";
    o->consumers = "    - stream: EVENTS\n"
                   "      name: analytics\n"
                   "      partitions: 16\n"
                   "      filter_subject: \"gamefn.v1.evp.{partition}.>\"\n"
                   "      lease_ttl: 3s\n"
                   "      ack_wait: 2s\n"
                   "      max_deliver: 5\n"
                   "      backoff: [100ms, 200ms]\n"
                   "      max_ack_pending: 5000\n"
                   "    - stream: EVENTS\n"
                   "      name: crashes\n"
                   "      partitions: 16\n"
                   "      filter_subject: \"gamefn.v1.evp.{partition}.>\"\n"
                   "      lease_ttl: 3s\n"
                   "      ack_wait: 2s\n"
                   "      max_deliver: 5\n"
                   "      backoff: [100ms, 200ms]\n"
                   "      max_ack_pending: 5000\n";
    o->buckets = "    - name: analytics\n"
                 "    - name: crashes\n"
                 "    - name: dlq_reasons\n";
}

/* ---- what was produced ------------------------------------------------------------------ */

static const char *const types[] = {"kill", "score", "zone_change", "crash", "login", "match_end"};
static const char *const dcs[] = {"eu-west", "us-east", "ap-northeast"};
static const char *const queues[] = {"1v1-hybrid", "5v5-sbmm"};

typedef struct produced {
    char player[16], source[16], build[16];
    uint64_t seq;
    int type, dc, queue; /* dc / queue -1: absent */
    int bug;             /* crashes */
    int64_t occurred;
} produced;

static produced events[EVENTS];
static int64_t base_minute;

/* Bug b's stack in build v: the same frames, other addresses, paths and arguments. */
static void stack_of(int bug, int build, char *buf, size_t size)
{
    snprintf(buf, size,
             "Thread 1 (crashed)\n"
             "#0 0x%08x in fn%d_leaf (x=%d) at /ci/b%d/src/bug%d.cpp:%d\n"
             "#1 0x%08x in fn%d_mid () at /ci/b%d/src/mid.cpp:%d\n"
             "#2 0x%08x in main () at /ci/b%d/src/main.cpp:7\n",
             0x401000 + build * 64, bug, build, build, bug, 10 + build, 0x402000 + build * 32, bug,
             build, 20 + build, 0x403000 + build, build);
}

static void build_event(const produced *p, Gamefn__V1__GameEvent *ev, char *id, size_t id_size,
                        obs_payload *payload)
{
    obs_event_init(ev, id, id_size, p->source, p->seq, p->player, types[p->type]);
    ev->occurred_unix_ms = p->occurred;
    obs_event_payload(ev, p->type, payload); /* 4, 5: generic */
    if (p->type == 3) {
        ev->crash->build = (char *)(uintptr_t)p->build;
        ev->crash->platform = p->seq % 2 ? "linux" : "windows";
    }
}

/* Publishes p (msg_id NULL = its event id), attributes and stack built here. */
static void publish(gf_fnenv *env, jsCtx *js, const produced *p, const char *msg_id)
{
    Gamefn__V1__GameEvent ev;
    char id[64], stack[512];
    obs_payload payload;
    Gamefn__V1__GenericEvent__AttributesEntry attrs[2], *ap[2];
    build_event(p, &ev, id, sizeof id, &payload);
    if (msg_id)
        snprintf(id, sizeof id, "%s", msg_id); /* the event id (and Msg-Id) of a replay */
    if (p->type == 3) {
        stack_of(p->bug, atoi(p->build + 1), stack, sizeof stack);
        ev.crash->stack = stack;
    } else if (p->type >= 4) {
        const char *keys[2] = {"datacenter", "queue"};
        const char *values[2] = {p->dc >= 0 ? dcs[p->dc] : NULL,
                                 p->queue >= 0 ? queues[p->queue] : NULL};
        size_t n = 0;
        for (int k = 0; k < 2; k++) {
            if (!values[k])
                continue;
            gamefn__v1__generic_event__attributes_entry__init(&attrs[n]);
            attrs[n].key = (char *)(uintptr_t)keys[k];
            attrs[n].value = (char *)(uintptr_t)values[k];
            ap[n] = &attrs[n];
            n++;
        }
        ev.generic->attributes = ap;
        ev.generic->n_attributes = n;
    }
    (void)env;
    assert_int_equal(obs_publish(js, &ev, false), 0);
}

static void produce_plan(void)
{
    srand(20261130);
    uint64_t seq[SOURCES] = {0};
    base_minute = gf_clock_unix_ms() / 60000 * 60000 - 20 * 60000;
    for (int i = 0; i < EVENTS; i++) {
        produced *p = &events[i];
        int s = rand() % SOURCES;
        snprintf(p->source, sizeof p->source, "gs-%d", s);
        p->seq = ++seq[s];
        snprintf(p->player, sizeof p->player, "p%d", rand() % PLAYERS);
        p->type = rand() % 6;
        p->dc = rand() % 4 - 1;
        p->queue = rand() % 3 - 1;
        p->bug = rand() % BUGS;
        snprintf(p->build, sizeof p->build, "v%d", rand() % 40);
        p->occurred = base_minute + rand() % (MINUTES * 60000);
    }
}

/* ---- queries ------------------------------------------------------------------------------ */

static natsMsg *request(gf_fnenv *env, const char *subject, const ProtobufCMessage *m,
                        const void *raw, size_t raw_len)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (m)
        assert_int_equal(gf_pack(m, &buf, &len), GF_OK);
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_Request(&reply, env->nc, subject, m ? (const void *)buf : raw,
                                          (int)(m ? len : raw_len), 10000);
    free(buf);
    return s == NATS_OK ? reply : NULL;
}

/* The error code and field of a reply ("" and 0 for a success). */
static int error_of(natsMsg *reply, char *field, size_t size)
{
    const char *code = NULL;
    field[0] = '\0';
    if (natsMsgHeader_Get(reply, "Nats-Service-Error-Code", &code) != NATS_OK)
        return 0;
    Gamefn__V1__Error *e = gamefn__v1__error__unpack(NULL, (size_t)natsMsg_GetDataLength(reply),
                                                     (const uint8_t *)natsMsg_GetData(reply));
    if (e) {
        snprintf(field, size, "%s", e->field);
        gamefn__v1__error__free_unpacked(e, NULL);
    }
    return atoi(code);
}

/* The successful reply to `subject`, unpacked with desc; NULL for an error reply or none. */
static void *query(gf_fnenv *env, const char *subject, const ProtobufCMessage *m,
                   const ProtobufCMessageDescriptor *desc)
{
    natsMsg *reply = request(env, subject, m, NULL, 0);
    char field[64];
    void *r = NULL;
    if (reply && !error_of(reply, field, sizeof field))
        r = protobuf_c_message_unpack(desc, NULL, (size_t)natsMsg_GetDataLength(reply),
                                      (const uint8_t *)natsMsg_GetData(reply));
    natsMsg_Destroy(reply);
    return r;
}

static Gamefn__V1__AnalyticsQueryReply *analytics(gf_fnenv *env, int group_by, bool per_minute)
{
    Gamefn__V1__AnalyticsQueryRequest q = GAMEFN__V1__ANALYTICS_QUERY_REQUEST__INIT;
    q.from_unix_ms = base_minute;
    q.to_unix_ms = base_minute + MINUTES * 60000;
    q.group_by = (Gamefn__V1__AnalyticsGroupBy)group_by;
    q.per_minute = per_minute;
    return query(env, "gamefn.v1.analytics.query", &q.base,
                 &gamefn__v1__analytics_query_reply__descriptor);
}

static uint64_t analytics_total(gf_fnenv *env)
{
    Gamefn__V1__AnalyticsQueryReply *r = analytics(env, 0, false);
    uint64_t n = r ? r->total : 0;
    if (r)
        gamefn__v1__analytics_query_reply__free_unpacked(r, NULL);
    return n;
}

static bool all_counted(gf_fnenv *env, void *arg)
{
    (void)arg;
    return analytics_total(env) == EVENTS;
}

static Gamefn__V1__CrashesQueryReply *crashes_top(gf_fnenv *env, uint32_t limit)
{
    Gamefn__V1__CrashesQueryRequest q = GAMEFN__V1__CRASHES_QUERY_REQUEST__INIT;
    Gamefn__V1__CrashTopQuery top = GAMEFN__V1__CRASH_TOP_QUERY__INIT;
    top.limit = limit;
    q.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_TOP;
    q.top = &top;
    return query(env, "gamefn.v1.crashes.query", &q.base,
                 &gamefn__v1__crashes_query_reply__descriptor);
}

static uint64_t crashes_expected(void)
{
    uint64_t n = 0;
    for (int i = 0; i < EVENTS; i++)
        n += events[i].type == 3;
    return n;
}

static bool all_grouped(gf_fnenv *env, void *arg)
{
    (void)arg;
    Gamefn__V1__CrashesQueryReply *r = crashes_top(env, 100);
    bool ok = r && r->crashes == crashes_expected();
    if (r)
        gamefn__v1__crashes_query_reply__free_unpacked(r, NULL);
    return ok;
}

/* ---- brute force ------------------------------------------------------------------------- */

static const char *name_of(const produced *p, int dim)
{
    if (dim == 0)
        return types[p->type];
    if (p->type < 4)
        return NULL; /* typed payloads carry no attributes */
    if (dim == 1)
        return p->dc >= 0 ? dcs[p->dc] : NULL;
    return p->queue >= 0 ? queues[p->queue] : NULL;
}

static uint64_t recount(int dim, const char *name, int minute)
{
    uint64_t n = 0;
    for (int i = 0; i < EVENTS; i++) {
        const produced *p = &events[i];
        if (minute >= 0 && (p->occurred - base_minute) / 60000 != minute)
            continue;
        const char *got = name_of(p, dim);
        if (name ? got && strcmp(got, name) == 0 : got == NULL)
            n++;
    }
    return n;
}

static void check_counts(Gamefn__V1__AnalyticsCount **counts, size_t n, uint64_t total,
                         uint64_t unattributed, int dim, int minute)
{
    uint64_t sum = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t want = recount(dim, counts[k]->name, minute);
        if (counts[k]->count != want)
            fail_msg("dim %d minute %d %s: %" PRIu64 ", recount %" PRIu64, dim, minute,
                     counts[k]->name, counts[k]->count, want);
        sum += counts[k]->count;
    }
    assert_int_equal(unattributed, recount(dim, NULL, minute));
    assert_int_equal(sum + unattributed, total);
}

static void check_analytics(gf_fnenv *env)
{
    for (int dim = 0; dim < 3; dim++) {
        Gamefn__V1__AnalyticsQueryReply *r = analytics(env, dim, true);
        assert_non_null(r);
        assert_int_equal(r->total, EVENTS);
        assert_int_equal(r->other, 0);
        check_counts(r->counts, r->n_counts, r->total, r->unattributed, dim, -1);
        uint64_t minutes_total = 0;
        for (size_t m = 0; m < r->n_minutes; m++) {
            const Gamefn__V1__AnalyticsMinute *row = r->minutes[m];
            int minute = (int)((row->minute_unix_ms - base_minute) / 60000);
            check_counts(row->counts, row->n_counts, row->total, row->unattributed, dim, minute);
            minutes_total += row->total;
        }
        assert_int_equal(r->n_minutes, MINUTES);
        assert_int_equal(minutes_total, EVENTS);
        gamefn__v1__analytics_query_reply__free_unpacked(r, NULL);
    }
}

typedef struct fp_truth {
    char hex[33];
    uint64_t count;
    int64_t first, last;
    const produced *sample;
    unsigned partitions; /* bitmask */
} fp_truth;

static void crash_truth(fp_truth *t, int *n)
{
    *n = 0;
    for (int i = 0; i < EVENTS; i++) {
        const produced *p = &events[i];
        if (p->type != 3)
            continue;
        Gamefn__V1__GameEvent ev;
        char id[64], stack[512];
        obs_payload payload;
        build_event(p, &ev, id, sizeof id, &payload);
        stack_of(p->bug, atoi(p->build + 1), stack, sizeof stack);
        ev.crash->stack = stack;
        gf_fingerprint fp;
        assert_int_equal(cr_fingerprint_of(&ev, 8, &fp, NULL, 0), GF_OK);
        int k = 0;
        while (k < *n && strcmp(t[k].hex, fp.hex) != 0)
            k++;
        if (k == *n) {
            memset(&t[k], 0, sizeof t[k]);
            memcpy(t[k].hex, fp.hex, sizeof fp.hex);
            t[k].first = INT64_MAX;
            t[k].last = INT64_MIN;
            (*n)++;
        }
        fp_truth *f = &t[k];
        f->count++;
        f->first = p->occurred < f->first ? p->occurred : f->first;
        f->last = p->occurred > f->last ? p->occurred : f->last;
        f->partitions |= 1u << gf_partition_of(p->player, 16);
        if (!f->sample || p->occurred < f->sample->occurred ||
            (p->occurred == f->sample->occurred &&
             (strcmp(p->source, f->sample->source) < 0 ||
              (strcmp(p->source, f->sample->source) == 0 && p->seq < f->sample->seq))))
            f->sample = p;
    }
}

static void check_crashes(gf_fnenv *env)
{
    fp_truth truth[BUGS];
    int n = 0;
    crash_truth(truth, &n);
    assert_int_equal(n, BUGS); /* 40 builds of each bug: one fingerprint per bug */
    Gamefn__V1__CrashesQueryReply *r = crashes_top(env, 100);
    assert_non_null(r);
    assert_int_equal(r->fingerprints, BUGS);
    assert_int_equal(r->crashes, crashes_expected());
    for (size_t i = 0; i < r->n_top; i++) {
        const Gamefn__V1__CrashSummary *s = r->top[i];
        if (i > 0)
            assert_true(r->top[i - 1]->count >= s->count);
        int k = 0;
        while (k < n && strcmp(truth[k].hex, s->fingerprint) != 0)
            k++;
        assert_true(k < n);
        assert_int_equal(s->count, truth[k].count);
        assert_int_equal(s->first_seen_unix_ms, truth[k].first);
        assert_int_equal(s->last_seen_unix_ms, truth[k].last);
        assert_string_equal(s->build, truth[k].sample->build);
    }
    /* detail of each: merged from the partitions that saw it */
    for (int k = 0; k < n; k++) {
        Gamefn__V1__CrashesQueryRequest q = GAMEFN__V1__CRASHES_QUERY_REQUEST__INIT;
        Gamefn__V1__CrashDetailQuery d = GAMEFN__V1__CRASH_DETAIL_QUERY__INIT;
        d.fingerprint = truth[k].hex;
        q.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_DETAIL;
        q.detail = &d;
        Gamefn__V1__CrashesQueryReply *dr = query(env, "gamefn.v1.crashes.query", &q.base,
                                                  &gamefn__v1__crashes_query_reply__descriptor);
        assert_non_null(dr);
        assert_non_null(dr->detail);
        assert_int_equal(dr->detail->count, truth[k].count);
        assert_int_equal((unsigned)__builtin_popcount(truth[k].partitions), dr->partitions);
        char want_id[64];
        snprintf(want_id, sizeof want_id, "%s-%" PRIu64, truth[k].sample->source,
                 truth[k].sample->seq);
        assert_string_equal(dr->detail->sample_event_id, want_id);
        assert_int_equal(dr->detail->frames, 3);
        uint64_t builds = dr->detail->other_builds;
        for (size_t b = 0; b < dr->detail->n_builds; b++)
            builds += dr->detail->builds[b]->count;
        assert_int_equal(builds, truth[k].count);
        gamefn__v1__crashes_query_reply__free_unpacked(dr, NULL);
    }
    gamefn__v1__crashes_query_reply__free_unpacked(r, NULL);
}

/* ---- the test ------------------------------------------------------------------------------ */

static void exact_through_kills_and_duplicates(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc a1 = {0}, a2 = {0}, a3 = {0}, c1 = {0}, c2 = {0}, c3 = {0};
    options(&o);
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    obs_provision(&env);
    jsCtx *js = gf_ev_js(env.nc);
    assert_non_null(js);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &a1, ANALYTICS, "analytics", "a1", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &a2, ANALYTICS, "analytics", "a2", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &c1, CRASHES, "crashes", "c1", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &c2, CRASHES, "crashes", "c2", NULL), 0);

    produce_plan();
    for (int i = 0; i < EVENTS / 2; i++)
        publish(&env, js, &events[i], NULL);
    assert_int_equal(gf_ev_flush(js), 0);
    /* a replica of each dies while it works through the first half */
    for (int tries = 0; tries < 200 && analytics_total(&env) < EVENTS / 8; tries++)
        gf_clock_sleep_ms(20);
    gf_proc_signal(&a1, SIGKILL);
    gf_proc_signal(&c1, SIGKILL);
    print_message("killed a replica of each at %" PRIu64 " of %d events counted\n",
                  analytics_total(&env), EVENTS / 2);
    assert_int_equal(gf_proc_wait(&a1, 5000), 0);
    assert_int_equal(gf_proc_wait(&c1, 5000), 0);
    for (int i = EVENTS / 2; i < EVENTS; i++)
        publish(&env, js, &events[i], NULL);
    /* duplicates: within the window (same Msg-Id: the stream drops them) and after it (a new
     * Msg-Id: stored again, and the consumers must not count them twice) */
    for (int i = 0; i < EVENTS; i += 7) {
        char replay[80];
        snprintf(replay, sizeof replay, "%s-%" PRIu64 "-replay", events[i].source, events[i].seq);
        publish(&env, js, &events[i], i % 2 ? NULL : replay);
    }
    assert_int_equal(gf_ev_flush(js), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &a3, ANALYTICS, "analytics", "a3", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &c3, CRASHES, "crashes", "c3", NULL), 0);

    if (!gf_fnenv_eventually(all_counted, &env, NULL, 60000))
        fail_msg("analytics counted %" PRIu64 " of %d", analytics_total(&env), EVENTS);
    assert_true(gf_fnenv_eventually(all_grouped, &env, NULL, 60000));
    gf_clock_sleep_ms(500); /* nothing more arrives: no late double count */
    check_analytics(&env);
    check_crashes(&env);

    /* the CLI shows the same */
    cli_result out;
    char from[40], to[40];
    gf_clock_rfc3339(base_minute * 1000000, 0, from, sizeof from);
    gf_clock_rfc3339((base_minute + MINUTES * 60000) * 1000000, 0, to, sizeof to);
    const char *args[] = {"analytics", "--from", from, "--to", to, "--json", NULL};
    assert_int_equal((out = cli_runv(&env, NULL, args)).code, 0);
    json_t *root = cli_json_line(&out);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "total")), EVENTS);
    json_decref(root);
    cli_result_free(&out);
    const char *by_dc[] = {"analytics", "--from", from, "--to", to, "--by", "datacenter", NULL};
    assert_int_equal((out = cli_runv(&env, NULL, by_dc)).code, 0);
    assert_non_null(strstr(out.out, "eu-west"));
    assert_non_null(strstr(out.out, "(no datacenter)"));
    cli_result_free(&out);
    const char *top[] = {"crashes", "--limit", "3", NULL};
    out = cli_runv(&env, NULL, top);
    cli_expect(&out, 0, "5 fingerprints");
    fp_truth truth[BUGS];
    int n = 0;
    crash_truth(truth, &n);
    const char *show[] = {"crashes", "show", truth[0].hex, NULL};
    assert_int_equal((out = cli_runv(&env, NULL, show)).code, 0);
    assert_non_null(strstr(out.out, "fn0_leaf() at bug0.cpp") ? out.out : strstr(out.out, "_leaf"));
    cli_result_free(&out);

    assert_true(gf_fnenv_stop(&a2, 15000));
    assert_true(gf_fnenv_stop(&a3, 15000));
    assert_true(gf_fnenv_stop(&c2, 15000));
    assert_true(gf_fnenv_stop(&c3, 15000));
    jsCtx_Destroy(js);
    gf_fnenv_free(&env);
}

static void malformed_queries_get_typed_errors(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_fnenv_opts o;
    gf_proc a = {0}, c = {0};
    options(&o);
    assert_int_equal(gf_fnenv_start_opts(&env, &o), 0);
    obs_provision(&env);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &a, ANALYTICS, "analytics", "a", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &c, CRASHES, "crashes", "c", NULL), 0);
    char field[64];

    static const struct {
        int64_t from, to;
        int group_by;
        const char *field;
    } bad[] = {
        {1, 60000, 0, "from_unix_ms"},
        {60000, 60000, 0, "to_unix_ms"},
        {0, 2 * 86400000LL, 0, "to_unix_ms"},
        {0, 60000, 9, "group_by"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Gamefn__V1__AnalyticsQueryRequest q = GAMEFN__V1__ANALYTICS_QUERY_REQUEST__INIT;
        q.from_unix_ms = bad[i].from;
        q.to_unix_ms = bad[i].to;
        q.group_by = (Gamefn__V1__AnalyticsGroupBy)bad[i].group_by;
        natsMsg *reply = request(&env, "gamefn.v1.analytics.query", &q.base, NULL, 0);
        assert_non_null(reply);
        assert_int_equal(error_of(reply, field, sizeof field), 1); /* INVALID_ARGUMENT */
        assert_string_equal(field, bad[i].field);
        natsMsg_Destroy(reply);
    }
    natsMsg *reply = request(&env, "gamefn.v1.analytics.query", NULL, "\xff\xff", 2);
    assert_non_null(reply);
    assert_int_equal(error_of(reply, field, sizeof field), 1);
    natsMsg_Destroy(reply);
    /* an empty range of a valid query: zero, not an error */
    Gamefn__V1__AnalyticsQueryRequest empty = GAMEFN__V1__ANALYTICS_QUERY_REQUEST__INIT;
    empty.from_unix_ms = 0;
    empty.to_unix_ms = 60000;
    reply = request(&env, "gamefn.v1.analytics.query", &empty.base, NULL, 0);
    assert_int_equal(error_of(reply, field, sizeof field), 0);
    natsMsg_Destroy(reply);

    Gamefn__V1__CrashesQueryRequest q = GAMEFN__V1__CRASHES_QUERY_REQUEST__INIT;
    reply = request(&env, "gamefn.v1.crashes.query", &q.base, NULL, 0);
    assert_int_equal(error_of(reply, field, sizeof field), 1);
    assert_string_equal(field, "query");
    natsMsg_Destroy(reply);
    Gamefn__V1__CrashTopQuery top = GAMEFN__V1__CRASH_TOP_QUERY__INIT;
    q.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_TOP;
    q.top = &top; /* limit 0 */
    reply = request(&env, "gamefn.v1.crashes.query", &q.base, NULL, 0);
    assert_int_equal(error_of(reply, field, sizeof field), 1);
    assert_string_equal(field, "top.limit");
    natsMsg_Destroy(reply);
    Gamefn__V1__CrashDetailQuery d = GAMEFN__V1__CRASH_DETAIL_QUERY__INIT;
    d.fingerprint = "not-hex";
    q.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_DETAIL;
    q.detail = &d;
    reply = request(&env, "gamefn.v1.crashes.query", &q.base, NULL, 0);
    assert_int_equal(error_of(reply, field, sizeof field), 1);
    assert_string_equal(field, "detail.fingerprint");
    natsMsg_Destroy(reply);
    d.fingerprint = "0123456789abcdef0123456789abcdef";
    reply = request(&env, "gamefn.v1.crashes.query", &q.base, NULL, 0);
    assert_int_equal(error_of(reply, field, sizeof field), 2); /* NOT_FOUND */
    natsMsg_Destroy(reply);

    cli_result out;
    const char *bad_cli[][4] = {{"analytics", "--by", "planet", NULL},
                                {"analytics", "--from", "noon", NULL},
                                {"crashes", "--limit", "0", NULL},
                                {"crashes", "show", NULL, NULL},
                                {"crashes", "bogus", NULL, NULL}};
    for (size_t i = 0; i < sizeof bad_cli / sizeof bad_cli[0]; i++) {
        assert_int_equal((out = cli_runv(&env, NULL, bad_cli[i])).code, 2);
        cli_result_free(&out);
    }
    /* The CLI's exit codes (docs/OPERATIONS.md): refused 7, unknown name 4, no service 6. */
    const char *show[] = {"crashes", "show", "nothex", NULL};
    assert_int_equal((out = cli_runv(&env, NULL, show)).code, 7);
    assert_non_null(strstr(out.out, "INVALID_ARGUMENT"));
    assert_non_null(strstr(out.out, "detail.fingerprint"));
    cli_result_free(&out);
    const char *unknown[] = {"crashes", "show", "0123456789abcdef0123456789abcdef", NULL};
    out = cli_runv(&env, NULL, unknown);
    cli_expect(&out, 4, "NOT_FOUND");

    assert_true(gf_fnenv_stop(&a, 15000));
    assert_true(gf_fnenv_stop(&c, 15000));
    const char *gone[][3] = {{"analytics", "--json", NULL}, {"crashes", NULL, NULL}};
    for (size_t i = 0; i < 2; i++) {
        out = cli_runv(&env, NULL, gone[i]);
        cli_expect(&out, 6, "no function instance serves");
    }
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_through_kills_and_duplicates),
        cmocka_unit_test(malformed_queries_get_typed_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
