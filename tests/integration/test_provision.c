/*
 * test_provision.c — JetStream provisioning against a real nats-server
 * (support/natsd/natsd.h). Configs are built by hand as gf_jetstream_config.
 *
 * What is proven:
 *  - the deployment's assets provisioned twice: CREATED then UNCHANGED for every
 *    one, and the server's view (config, creation time, state, read from the
 *    monitoring port) identical before and after the second run;
 *  - an existing stream that differs (subjects, max_age) is a CONFLICT whose
 *    message names the field and both values, and the stream is left exactly as
 *    it was (config, creation time, messages);
 *  - update=true applies an editable change (max_age) and refuses an immutable
 *    one (storage) without applying the editable part either;
 *  - a stream with sources and no subjects copies the writes of the buckets it sources;
 *    its sources are compared and updated like its subjects; a mirror of a bucket
 *    (the AUDIT_* streams) copies every write, compare-and-set included;
 *  - bucket (history) and consumer (ack_wait) conflicts and updates;
 *  - bad configs are refused before any request; gf_provision_all stops at the
 *    first failing asset; concurrent provisioners of the same assets both succeed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nats/nats.h>

#include "gamefn/provision.h"
#include "harness_util.h"
#include "natsd.h"

#define SEC       1000LL
#define MIN       (60 * SEC)
#define HOUR      (60 * MIN)
#define DAY       (24 * HOUR)
#define NS_PER_MS 1000000LL

typedef struct fixture {
    gf_natsd *server;
    natsConnection *nc;
    jsCtx *js;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    th_js_server_start(&f->server, &f->nc, &f->js);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    th_js_server_stop(f->server, f->nc, f->js);
    free(f);
    return 0;
}

/* ---- helpers -------------------------------------------------------------- */

static gf_stream_config stream_cfg(const char *name, const char **subjects, size_t n)
{
    gf_stream_config c = {
        .name = name,
        .subjects = subjects,
        .subjects_len = n,
        .retention = GF_RETENTION_LIMITS,
        .storage = GF_STORAGE_FILE,
        .discard = GF_DISCARD_OLD,
        .replicas = 1,
    };
    return c;
}

static gf_bucket_config bucket_cfg(const char *name, int64_t history, int64_t ttl_ms)
{
    gf_bucket_config b = {.name = name,
                          .history = history,
                          .ttl_ms = ttl_ms,
                          .storage = GF_STORAGE_FILE,
                          .replicas = 1};
    return b;
}

static jsStreamInfo *stream_info(fixture *f, const char *name)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, f->js, name, NULL, &jerr);
    if (s != NATS_OK)
        fail_msg("stream info %s: %s (%d)", name, natsStatus_GetText(s), (int)jerr);
    return si;
}

static bool stream_exists(fixture *f, const char *name)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, f->js, name, NULL, &jerr);
    jsStreamInfo_Destroy(si);
    if (s != NATS_OK && s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr)
        fail_msg("stream info %s: %s", name, natsStatus_GetText(s));
    return s == NATS_OK;
}

static jsConsumerInfo *consumer_info(fixture *f, const char *stream, const char *name)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetConsumerInfo(&ci, f->js, stream, name, NULL, &jerr);
    if (s != NATS_OK)
        fail_msg("consumer info %s/%s: %s (%d)", stream, name, natsStatus_GetText(s), (int)jerr);
    return ci;
}

static void publish(fixture *f, const char *subject, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(js_Publish(NULL, f->js, subject, "x", 1, NULL, NULL), NATS_OK);
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (strstr(haystack, needle) == NULL)
        fail_msg("\"%s\" not found in \"%s\"", needle, haystack);
}

/* One JetStream API answer, parsed; only `keep` fields are kept. */
static json_t *api_info(fixture *f, const char *subject, const char *const *keep, int nkeep)
{
    natsMsg *reply = NULL;
    json_error_t jerr;
    natsStatus s = natsConnection_Request(&reply, f->nc, subject, NULL, 0, 5000);
    if (s != NATS_OK)
        fail_msg("%s: %s", subject, natsStatus_GetText(s));
    json_t *all =
        json_loadb(natsMsg_GetData(reply), (size_t)natsMsg_GetDataLength(reply), 0, &jerr);
    natsMsg_Destroy(reply);
    if (all == NULL)
        fail_msg("%s: not JSON: %s", subject, jerr.text);
    if (json_object_get(all, "error") != NULL)
        fail_msg("%s: error answer", subject);
    json_t *out = json_object();
    for (int i = 0; i < nkeep; i++)
        json_object_set(out, keep[i], json_object_get(all, keep[i]));
    json_decref(all);
    return out;
}

/* The server's own view of every stream and consumer, straight from the
 * JetStream API (so fields nats.c does not parse are included too), without the
 * parts that change by themselves: name -> {created, config, state,
 * consumers: name -> {created, config}}. */
static json_t *server_view(fixture *f)
{
    static const char *const stream_keep[] = {"created", "config", "state"};
    static const char *const consumer_keep[] = {"created", "config"};
    jsStreamNamesList *streams = NULL;
    char subject[512];
    json_t *view = json_object();

    assert_int_equal(js_StreamNames(&streams, f->js, NULL, NULL), NATS_OK);
    for (int i = 0; i < streams->Count; i++) {
        const char *name = streams->List[i];
        snprintf(subject, sizeof subject, "$JS.API.STREAM.INFO.%s", name);
        json_t *st = api_info(f, subject, stream_keep, 3);
        json_t *consumers = json_object();
        jsConsumerNamesList *cl = NULL;
        jsErrCode jerr = 0;
        natsStatus s = js_ConsumerNames(&cl, f->js, name, NULL, &jerr);
        assert_true(s == NATS_OK || s == NATS_NOT_FOUND); /* NOT_FOUND: no consumers */
        for (int k = 0; cl != NULL && k < cl->Count; k++) {
            snprintf(subject, sizeof subject, "$JS.API.CONSUMER.INFO.%s.%s", name, cl->List[k]);
            json_object_set_new(consumers, cl->List[k], api_info(f, subject, consumer_keep, 2));
        }
        jsConsumerNamesList_Destroy(cl);
        json_object_set_new(st, "consumers", consumers);
        json_object_set_new(view, name, st);
    }
    jsStreamNamesList_Destroy(streams);
    return view;
}

/* ---- the deployment's assets, twice ------------------------------------------ */

static const char *events_subjects[] = {"gamefn.v1.evp.>"};
static const char *matches_subjects[] = {"gamefn.v1.match.found.>"};
static const char *dlq_subjects[] = {"gamefn.v1.dlq.>"};
static const char *advisory_subjects[] = {
    "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>",
    "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>",
};
static const char *short_subjects[] = {"test.short.a", "test.short.b.*"};
static int64_t allocator_backoff[] = {1 * SEC, 5 * SEC, 30 * SEC};

typedef struct full_config {
    gf_stream_config streams[5];
    gf_bucket_config buckets[5];
    gf_consumer_config consumers[2];
    gf_jetstream_config js;
} full_config;

static void full_config_init(full_config *c)
{
    c->streams[0] = stream_cfg("EVENTS", events_subjects, 1);
    c->streams[0].max_age_ms = 7 * DAY;
    c->streams[0].duplicate_window_ms = 10 * MIN;
    c->streams[1] = stream_cfg("MATCHES", matches_subjects, 1);
    c->streams[1].retention = GF_RETENTION_WORKQUEUE;
    c->streams[1].max_age_ms = 1 * HOUR;
    c->streams[1].duplicate_window_ms = 2 * MIN;
    c->streams[2] = stream_cfg("DLQ", dlq_subjects, 1);
    c->streams[2].max_age_ms = 30 * DAY;
    c->streams[3] = stream_cfg("ADVISORIES", advisory_subjects, 2);
    c->streams[3].max_age_ms = 7 * DAY;
    /* test-only: every server default the config leaves open */
    c->streams[4] = stream_cfg("SHORT", short_subjects, 2);
    c->streams[4].storage = GF_STORAGE_MEMORY;
    c->streams[4].discard = GF_DISCARD_NEW;
    c->streams[4].replicas = 0;
    c->streams[4].max_age_ms = 30 * SEC; /* shorter than the default duplicate window */
    c->streams[4].max_msgs = 1000;
    c->streams[4].max_bytes = 1 << 20;
    c->streams[4].max_msg_size = 4096;
    c->streams[4].description = "short-lived test stream";

    c->buckets[0] = bucket_cfg("tickets", 5, 0);
    c->buckets[1] = bucket_cfg("fleet", 1, 0);
    c->buckets[2] = bucket_cfg("leases", 1, 0);
    c->buckets[3] = bucket_cfg("players", 1, 0);
    c->buckets[4] = bucket_cfg("dedup", 1, 8 * DAY);
    c->buckets[4].max_value_size = 1024;
    c->buckets[4].max_bytes = 64 << 20;
    c->buckets[4].description = "event-id dedup";

    c->consumers[0] = (gf_consumer_config){
        .stream = "MATCHES",
        .name = "allocator",
        .deliver = GF_DELIVER_ALL,
        .ack_wait_ms = 30 * SEC,
        .max_deliver = 5,
        .backoff_ms = allocator_backoff,
        .backoff_ms_len = 3,
    };
    c->consumers[1] = (gf_consumer_config){
        .stream = "EVENTS",
        .name = "leaderboard-p0",
        .filter_subject = "gamefn.v1.evp.0.>",
        .deliver = GF_DELIVER_ALL,
        .ack_wait_ms = 20 * SEC,
        .max_deliver = -1,
        .max_ack_pending = 2000,
        .max_waiting = 64,
        .description = "leaderboard partition 0",
    };
    c->js = (gf_jetstream_config){c->streams, 5, c->consumers, 2, c->buckets, 5};
}

static void provision_each(fixture *f, full_config *c, gf_provision_outcome want)
{
    gf_provision_result res;
    for (size_t i = 0; i < c->js.streams_len; i++) {
        assert_int_equal(gf_provision_stream(f->js, &c->streams[i], false, &res), GF_OK);
        if (res.outcome != want)
            fail_msg("stream %s: outcome %d, want %d (%s)", c->streams[i].name, res.outcome, want,
                     res.message);
    }
    for (size_t i = 0; i < c->js.buckets_len; i++) {
        assert_int_equal(gf_provision_bucket(f->js, &c->buckets[i], false, &res), GF_OK);
        if (res.outcome != want)
            fail_msg("bucket %s: outcome %d, want %d (%s)", c->buckets[i].name, res.outcome, want,
                     res.message);
    }
    for (size_t i = 0; i < c->js.consumers_len; i++) {
        assert_int_equal(gf_provision_consumer(f->js, &c->consumers[i], false, &res), GF_OK);
        if (res.outcome != want)
            fail_msg("consumer %s: outcome %d, want %d (%s)", c->consumers[i].name, res.outcome,
                     want, res.message);
    }
}

static void test_full_config_twice(void **state)
{
    fixture *f = *state;
    full_config c;
    gf_provision_result res;
    full_config_init(&c);

    provision_each(f, &c, GF_PROVISION_CREATED);

    /* what was created is what was configured (spot checks in server units) */
    jsStreamInfo *si = stream_info(f, "EVENTS");
    assert_int_equal(si->Config->MaxAge, 7 * DAY * NS_PER_MS);
    assert_int_equal(si->Config->Duplicates, 10 * MIN * NS_PER_MS);
    jsStreamInfo_Destroy(si);
    si = stream_info(f, "MATCHES");
    assert_int_equal(si->Config->Retention, js_WorkQueuePolicy);
    jsStreamInfo_Destroy(si);
    si = stream_info(f, "SHORT");
    assert_int_equal(si->Config->Storage, js_MemoryStorage);
    assert_int_equal(si->Config->MaxMsgSize, 4096);
    jsStreamInfo_Destroy(si);
    si = stream_info(f, "KV_dedup");
    assert_int_equal(si->Config->MaxAge, 8 * DAY * NS_PER_MS);
    assert_int_equal(si->Config->MaxMsgsPerSubject, 1);
    jsStreamInfo_Destroy(si);
    si = stream_info(f, "KV_tickets");
    assert_int_equal(si->Config->MaxMsgsPerSubject, 5);
    jsStreamInfo_Destroy(si);
    jsConsumerInfo *ci = consumer_info(f, "MATCHES", "allocator");
    assert_int_equal(ci->Config->MaxDeliver, 5);
    assert_int_equal(ci->Config->BackOffLen, 3);
    assert_int_equal(ci->Config->BackOff[2], 30 * SEC * NS_PER_MS);
    assert_int_equal(ci->Config->AckPolicy, js_AckExplicit);
    assert_true(ci->Config->DeliverSubject == NULL || ci->Config->DeliverSubject[0] == '\0');
    jsConsumerInfo_Destroy(ci);
    ci = consumer_info(f, "EVENTS", "leaderboard-p0");
    assert_string_equal(ci->Config->FilterSubject, "gamefn.v1.evp.0.>");
    assert_int_equal(ci->Config->AckWait, 20 * SEC * NS_PER_MS);
    assert_int_equal(ci->Config->MaxWaiting, 64);
    jsConsumerInfo_Destroy(ci);

    json_t *before = server_view(f);
    assert_int_equal(json_object_size(before), 10); /* 5 streams + 5 buckets */
    json_t *matches = json_object_get(before, "MATCHES");
    assert_true(json_is_string(json_object_get(matches, "created")));
    assert_true(json_is_object(json_object_get(matches, "config")));
    json_t *alloc = json_object_get(json_object_get(matches, "consumers"), "allocator");
    assert_true(json_is_object(json_object_get(alloc, "config")));
    provision_each(f, &c, GF_PROVISION_UNCHANGED);
    assert_int_equal(gf_provision_all(f->js, &c.js, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);
    assert_string_equal(res.message, "0 created, 0 updated, 12 unchanged");
    /* update=true with nothing to change sends nothing either */
    assert_int_equal(gf_provision_all(f->js, &c.js, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);
    json_t *after = server_view(f);
    if (!json_equal(before, after)) {
        char *a = json_dumps(before, JSON_SORT_KEYS), *b = json_dumps(after, JSON_SORT_KEYS);
        fail_msg("server view changed:\n%s\n%s", a, b);
    }
    json_decref(after);
    /* the view does see changes: one message makes it differ */
    publish(f, "gamefn.v1.evp.3.p1.kill", 1);
    after = server_view(f);
    assert_false(json_equal(before, after));
    json_decref(before);
    json_decref(after);
}

/* ---- conflicts on an existing stream ---------------------------------------- */

static const char *pre_subjects[] = {"pre.a"};

/* Creates PRE by hand (1h, file, pre.a) with 3 messages, as another tool would. */
static void make_pre(fixture *f, const char *name, const char **subjects, int64_t *created)
{
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.MaxAge = 1 * HOUR * NS_PER_MS;
    sc.Storage = js_FileStorage;
    jsStreamInfo *si = NULL;
    assert_int_equal(js_AddStream(&si, f->js, &sc, NULL, NULL), NATS_OK);
    *created = si->Created;
    jsStreamInfo_Destroy(si);
    publish(f, subjects[0], 3);
}

static void assert_pre_untouched(fixture *f, const char *name, const char *subject, int64_t created,
                                 int64_t max_age_ms)
{
    jsStreamInfo *si = stream_info(f, name);
    assert_int_equal(si->Created, created);
    assert_int_equal(si->Config->SubjectsLen, 1);
    assert_string_equal(si->Config->Subjects[0], subject);
    assert_int_equal(si->Config->MaxAge, max_age_ms * NS_PER_MS);
    assert_int_equal(si->Config->Storage, js_FileStorage);
    assert_int_equal(si->State.Msgs, 3);
    jsStreamInfo_Destroy(si);
}

static void test_stream_conflicts(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    int64_t created;
    make_pre(f, "PRE", pre_subjects, &created);

    /* different subjects */
    const char *other[] = {"pre.b"};
    gf_stream_config c = stream_cfg("PRE", other, 1);
    c.max_age_ms = 1 * HOUR;
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "stream PRE");
    assert_contains(res.message, "subjects is [pre.a] on the server, [pre.b] in config");
    assert_pre_untouched(f, "PRE", "pre.a", created, 1 * HOUR);

    /* different max_age */
    c = stream_cfg("PRE", pre_subjects, 1);
    c.max_age_ms = 7 * DAY;
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "stream PRE: max_age is 1h on the server, 7d in config");
    assert_pre_untouched(f, "PRE", "pre.a", created, 1 * HOUR);

    /* same settings: nothing to do, even though the stream was not made by us */
    c.max_age_ms = 1 * HOUR;
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);
}

static void test_stream_update(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    int64_t created;
    const char *subjects[] = {"upd.a"};
    make_pre(f, "UPD", subjects, &created);

    /* immutable (storage) together with an editable change: nothing applied */
    gf_stream_config c = stream_cfg("UPD", subjects, 1);
    c.max_age_ms = 7 * DAY;
    c.storage = GF_STORAGE_MEMORY;
    assert_int_equal(gf_provision_stream(f->js, &c, true, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "storage is file on the server, memory in config");
    assert_contains(res.message, "cannot be changed in place");
    assert_contains(res.message, "max_age is 1h on the server, 7d in config");
    assert_pre_untouched(f, "UPD", "upd.a", created, 1 * HOUR);

    /* editable only: applied in place, messages kept */
    c.storage = GF_STORAGE_FILE;
    assert_int_equal(gf_provision_stream(f->js, &c, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UPDATED);
    assert_contains(res.message, "max_age is 1h on the server, 7d in config");
    assert_pre_untouched(f, "UPD", "upd.a", created, 7 * DAY);

    assert_int_equal(gf_provision_stream(f->js, &c, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);

    /* an editable change the server refuses: subjects that overlap another stream */
    const char *other[] = {"upd.other"};
    gf_stream_config neighbour = stream_cfg("UPD_NEIGHBOUR", other, 1);
    assert_int_equal(gf_provision_stream(f->js, &neighbour, false, &res), GF_OK);
    const char *overlap[] = {"upd.a", "upd.other"};
    gf_stream_config grab = c;
    grab.subjects = overlap;
    grab.subjects_len = 2;
    assert_int_equal(gf_provision_stream(f->js, &grab, true, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "subjects is [upd.a] on the server, [upd.a, upd.other] in config");
    assert_contains(res.message, "the server refused the update");
    assert_contains(res.message, "overlap");
    assert_pre_untouched(f, "UPD", "upd.a", created, 7 * DAY);

    /* a new stream whose subjects another stream already takes */
    gf_stream_config thief = stream_cfg("THIEF", other, 1);
    assert_int_equal(gf_provision_stream(f->js, &thief, false, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "stream THIEF: create failed: subjects overlap");
    assert_false(stream_exists(f, "THIEF"));

    /* retention is immutable too */
    c.retention = GF_RETENTION_INTEREST;
    assert_int_equal(gf_provision_stream(f->js, &c, true, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "retention is limits on the server, interest in config");
    assert_pre_untouched(f, "UPD", "upd.a", created, 7 * DAY);
}

/* ---- sources ----------------------------------------------------------------------- */

static uint64_t stream_msgs_eventually(fixture *f, const char *name, uint64_t want)
{
    uint64_t n = 0;
    for (int i = 0; i < 100 && n < want; i++) {
        jsStreamInfo *si = stream_info(f, name);
        n = si->State.Msgs;
        jsStreamInfo_Destroy(si);
        if (n < want)
            nats_Sleep(50);
    }
    return n;
}

/* A stream with sources and no subjects of its own: created, then unchanged; writes to
 * the sourced buckets arrive; a new source is a difference that an update applies;
 * neither subjects nor sources nor mirror is refused. (Plain puts only: nats-server
 * 2.9.10 applies a sourced message's Nats-Expected-Last-Subject-Sequence again, against
 * the sourcing stream, so compare-and-set writes are refused there; see the mirror test.) */
static void test_stream_sources(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    gf_bucket_config ba = bucket_cfg("aud_a", 1, 0), bb = bucket_cfg("aud_b", 1, 0);
    assert_int_equal(gf_provision_bucket(f->js, &ba, false, &res), GF_OK);
    assert_int_equal(gf_provision_bucket(f->js, &bb, false, &res), GF_OK);

    const char *one[] = {"KV_aud_a"}, *two[] = {"KV_aud_a", "KV_aud_b"};
    gf_stream_config c = stream_cfg("AUD", NULL, 0);
    c.sources = one;
    c.sources_len = 1;
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_CREATED);
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);
    jsStreamInfo *si = stream_info(f, "AUD");
    assert_int_equal(si->Config->SubjectsLen, 0);
    assert_int_equal(si->Config->SourcesLen, 1);
    jsStreamInfo_Destroy(si);

    kvStore *kv = NULL, *kvb = NULL;
    assert_int_equal(js_KeyValue(&kv, f->js, "aud_a"), NATS_OK);
    /* Distinct keys: with history 1 a key's older value may be gone before the source's
     * consumer (started asynchronously) copied it (docs/NATS-FACTS.md §6). */
    assert_int_equal(kvStore_PutString(NULL, kv, "k1", "v1"), NATS_OK);
    assert_int_equal(kvStore_PutString(NULL, kv, "k2", "v1"), NATS_OK);
    assert_int_equal(kvStore_PutString(NULL, kv, "k3", "v1"), NATS_OK);
    assert_int_equal(stream_msgs_eventually(f, "AUD", 3), 3);

    c.sources = two;
    c.sources_len = 2;
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "sources is [KV_aud_a] on the server, [KV_aud_a, KV_aud_b]");
    assert_int_equal(gf_provision_stream(f->js, &c, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UPDATED);
    assert_int_equal(js_KeyValue(&kvb, f->js, "aud_b"), NATS_OK);
    assert_int_equal(kvStore_PutString(NULL, kvb, "k4", "x"), NATS_OK);
    assert_int_equal(stream_msgs_eventually(f, "AUD", 4), 4);
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);
    kvStore_Destroy(kv);
    kvStore_Destroy(kvb);

    gf_stream_config none = stream_cfg("NONE", NULL, 0);
    assert_int_equal(gf_provision_stream(f->js, &none, false, &res), GF_ERR_INVALID);
    assert_false(stream_exists(f, "NONE"));
}

/* A mirror of a KV bucket (the AUDIT_* streams): every write, compare-and-set
 * included, is copied with the bucket's own sequence (= the key's revision); the
 * mirror cannot change in place, and it does not answer the bucket's direct gets. */
static void test_stream_mirror(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    gf_bucket_config b = bucket_cfg("aud_m", 5, 0); /* every revision kept until copied */
    assert_int_equal(gf_provision_bucket(f->js, &b, false, &res), GF_OK);
    gf_stream_config c = stream_cfg("AUD_M", NULL, 0);
    c.mirror = "KV_aud_m";
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_CREATED);
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);
    nats_Sleep(300); /* the mirror's consumer starts asynchronously */

    /* The mirror does not answer the bucket's direct gets (nats-server would make it, were
     * the bucket direct when the mirror was created), and the bucket is direct again. */
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, f->js, "AUD_M", NULL, NULL), NATS_OK);
    assert_false(si->Config->MirrorDirect);
    jsStreamInfo_Destroy(si);
    assert_int_equal(js_GetStreamInfo(&si, f->js, "KV_aud_m", NULL, NULL), NATS_OK);
    assert_true(si->Config->AllowDirect);
    jsStreamInfo_Destroy(si);

    /* An update (its own direct gets, a max_age) is made the same way: nats-server sets
     * mirror_direct from the origin on every update too. */
    c.allow_direct = true;
    c.max_age_ms = 3600000;
    assert_int_equal(gf_provision_stream(f->js, &c, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UPDATED);
    assert_int_equal(js_GetStreamInfo(&si, f->js, "AUD_M", NULL, NULL), NATS_OK);
    assert_false(si->Config->MirrorDirect);
    assert_true(si->Config->AllowDirect);
    jsStreamInfo_Destroy(si);
    assert_int_equal(js_GetStreamInfo(&si, f->js, "KV_aud_m", NULL, NULL), NATS_OK);
    assert_true(si->Config->AllowDirect);
    jsStreamInfo_Destroy(si);

    kvStore *kv = NULL;
    uint64_t rev = 0, rev1 = 0;
    assert_int_equal(js_KeyValue(&kv, f->js, "aud_m"), NATS_OK);
    /* A read right after each write sees it (a mirror answering would lag). */
    for (int i = 0; i < 500; i++) {
        char key[16];
        kvEntry *e = NULL;
        snprintf(key, sizeof key, "r%d", i);
        assert_int_equal(kvStore_Create(NULL, kv, key, "x", 1), NATS_OK);
        assert_int_equal(kvStore_Get(&e, kv, key), NATS_OK);
        kvEntry_Destroy(e);
    }
    assert_int_equal(kvStore_PutString(NULL, kv, "other", "x"), NATS_OK);
    assert_int_equal(kvStore_Create(&rev1, kv, "k1", "v1", 2), NATS_OK);
    assert_int_equal(kvStore_Update(&rev, kv, "k1", "v2", 2, rev1), NATS_OK);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.ExpectLastSubjectSeq = rev;
    po.MsgId = "cas-k1-3";
    assert_int_equal(js_Publish(NULL, f->js, "$KV.aud_m.k1", "v3", 2, &po, NULL), NATS_OK);
    assert_int_equal(kvStore_Delete(kv, "k1"), NATS_OK);
    assert_int_equal(stream_msgs_eventually(f, "AUD_M", 505), 505);
    natsMsg *m = NULL;
    assert_int_equal(js_GetMsg(&m, f->js, "AUD_M", rev1, NULL, NULL), NATS_OK);
    assert_string_equal(natsMsg_GetSubject(m), "$KV.aud_m.k1");
    natsMsg_Destroy(m);
    kvStore_Destroy(kv);

    c.mirror = "KV_other";
    assert_int_equal(gf_provision_stream(f->js, &c, true, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "mirror is \"KV_aud_m\" on the server");
    assert_contains(res.message, "cannot be changed in place");
    c.subjects = (const char *[]){"x"};
    c.subjects_len = 1;
    assert_int_equal(gf_provision_stream(f->js, &c, false, &res), GF_ERR_INVALID);
}

/* ---- buckets ------------------------------------------------------------------ */

static void test_bucket_conflict_and_update(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    gf_bucket_config b = bucket_cfg("hist", 5, 0);

    assert_int_equal(gf_provision_bucket(f->js, &b, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_CREATED);
    kvStore *kv = NULL;
    assert_int_equal(js_KeyValue(&kv, f->js, "hist"), NATS_OK);
    assert_int_equal(kvStore_PutString(NULL, kv, "k", "v1"), NATS_OK);

    b.history = 3;
    assert_int_equal(gf_provision_bucket(f->js, &b, false, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "bucket hist: history is 5 on the server, 3 in config");
    jsStreamInfo *si = stream_info(f, "KV_hist");
    assert_int_equal(si->Config->MaxMsgsPerSubject, 5);
    jsStreamInfo_Destroy(si);

    /* storage cannot change, even with update */
    b.storage = GF_STORAGE_MEMORY;
    assert_int_equal(gf_provision_bucket(f->js, &b, true, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "storage is file on the server, memory in config");
    b.storage = GF_STORAGE_FILE;

    /* history and ttl can */
    b.ttl_ms = 1 * MIN;
    assert_int_equal(gf_provision_bucket(f->js, &b, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UPDATED);
    si = stream_info(f, "KV_hist");
    assert_int_equal(si->Config->MaxMsgsPerSubject, 3);
    assert_int_equal(si->Config->MaxAge, 1 * MIN * NS_PER_MS);
    assert_true(si->Config->AllowDirect); /* settings we do not manage are kept */
    assert_true(si->Config->AllowRollup);
    jsStreamInfo_Destroy(si);
    kvEntry *e = NULL;
    assert_int_equal(kvStore_Get(&e, kv, "k"), NATS_OK);
    assert_string_equal(kvEntry_ValueString(e), "v1");
    kvEntry_Destroy(e);
    kvStore_Destroy(kv);

    assert_int_equal(gf_provision_bucket(f->js, &b, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);

    /* A bucket with discard old (made by an old client, or by hand) drops its oldest
     * revisions at max_bytes instead of refusing the write: reported, and updated. */
    si = stream_info(f, "KV_hist");
    si->Config->Discard = js_DiscardOld;
    assert_int_equal(js_UpdateStream(NULL, f->js, si->Config, NULL, NULL), NATS_OK);
    jsStreamInfo_Destroy(si);
    assert_int_equal(gf_provision_bucket(f->js, &b, false, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "bucket hist: discard is old on the server, new in config");
    assert_int_equal(gf_provision_bucket(f->js, &b, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UPDATED);
    si = stream_info(f, "KV_hist");
    assert_int_equal(si->Config->Discard, js_DiscardNew);
    jsStreamInfo_Destroy(si);
}

/* nats-server 2.9.10 fits a stream into a lowered max_bytes / max_msgs by deleting its
 * oldest messages, discard new or not: an update that would do so to a discard-new
 * stream or bucket (live tickets, waiting matches) is refused with nothing changed. */
static void test_limit_below_contents(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    gf_bucket_config b = bucket_cfg("shrink", 1, 0);
    assert_int_equal(gf_provision_bucket(f->js, &b, false, &res), GF_OK);
    kvStore *kv = NULL;
    assert_int_equal(js_KeyValue(&kv, f->js, "shrink"), NATS_OK);
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(kvStore_PutString(NULL, kv, key, "a live record"), NATS_OK);
    }
    b.max_bytes = 1;
    assert_int_equal(gf_provision_bucket(f->js, &b, true, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "bucket shrink: max_bytes 1 is below the ");
    assert_contains(res.message, "bytes stream KV_shrink holds");
    assert_contains(res.message, "nothing was changed");
    jsStreamInfo *si = stream_info(f, "KV_shrink");
    assert_int_equal(si->Config->MaxBytes, -1);
    assert_int_equal(si->State.Msgs, 20);
    jsStreamInfo_Destroy(si);
    /* Room for what it holds: applied, every record kept. */
    b.max_bytes = 1 << 20;
    assert_int_equal(gf_provision_bucket(f->js, &b, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UPDATED);
    si = stream_info(f, "KV_shrink");
    assert_int_equal(si->Config->MaxBytes, 1 << 20);
    assert_int_equal(si->State.Msgs, 20);
    jsStreamInfo_Destroy(si);
    kvStore_Destroy(kv);

    /* A discard-new stream's max_msgs the same; a discard-old stream's is the policy. */
    const char *subjects_new[] = {"shrink.new"}, *subjects_old[] = {"shrink.old"};
    gf_stream_config keep = stream_cfg("SHRINK_NEW", subjects_new, 1);
    keep.discard = GF_DISCARD_NEW;
    gf_stream_config drop = stream_cfg("SHRINK_OLD", subjects_old, 1);
    assert_int_equal(gf_provision_stream(f->js, &keep, false, &res), GF_OK);
    assert_int_equal(gf_provision_stream(f->js, &drop, false, &res), GF_OK);
    publish(f, "shrink.new", 10);
    publish(f, "shrink.old", 10);
    keep.max_msgs = drop.max_msgs = 4;
    assert_int_equal(gf_provision_stream(f->js, &keep, true, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "stream SHRINK_NEW: max_msgs 4 is below the 10 messages");
    assert_int_equal(gf_provision_stream(f->js, &drop, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UPDATED);
    si = stream_info(f, "SHRINK_NEW");
    assert_int_equal(si->State.Msgs, 10);
    jsStreamInfo_Destroy(si);
    si = stream_info(f, "SHRINK_OLD");
    assert_int_equal(si->State.Msgs, 4);
    jsStreamInfo_Destroy(si);
}

/* ---- consumers ------------------------------------------------------------------ */

static void test_consumer_conflict_and_update(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    const char *subjects[] = {"cons.>"};
    gf_stream_config s = stream_cfg("CONS", subjects, 1);
    assert_int_equal(gf_provision_stream(f->js, &s, false, &res), GF_OK);

    gf_consumer_config c = {.stream = "CONS",
                            .name = "worker",
                            .filter_subject = "cons.a",
                            .deliver = GF_DELIVER_ALL,
                            .ack_wait_ms = 10 * SEC,
                            .max_deliver = 3};
    assert_int_equal(gf_provision_consumer(f->js, &c, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_CREATED);

    c.ack_wait_ms = 20 * SEC;
    assert_int_equal(gf_provision_consumer(f->js, &c, false, &res), GF_ERR_CONFLICT);
    assert_contains(res.message,
                    "consumer CONS/worker: ack_wait is 10s on the server, 20s in config");
    jsConsumerInfo *ci = consumer_info(f, "CONS", "worker");
    assert_int_equal(ci->Config->AckWait, 10 * SEC * NS_PER_MS);
    jsConsumerInfo_Destroy(ci);

    /* deliver policy cannot change in place */
    c.deliver = GF_DELIVER_NEW;
    assert_int_equal(gf_provision_consumer(f->js, &c, true, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "deliver_policy is all on the server, new in config");
    c.deliver = GF_DELIVER_ALL;

    c.max_deliver = 0; /* unlimited: the server says -1 */
    assert_int_equal(gf_provision_consumer(f->js, &c, true, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UPDATED);
    ci = consumer_info(f, "CONS", "worker");
    assert_int_equal(ci->Config->AckWait, 20 * SEC * NS_PER_MS);
    assert_int_equal(ci->Config->MaxDeliver, -1);
    jsConsumerInfo_Destroy(ci);
    assert_int_equal(gf_provision_consumer(f->js, &c, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);

    /* max_ack_pending -1 (unlimited): 2.9.10 stores its default instead; that
     * must not make every later run a conflict */
    gf_consumer_config unbounded = {.stream = "CONS",
                                    .name = "unbounded",
                                    .ack_wait_ms = SEC,
                                    .max_deliver = -1,
                                    .max_ack_pending = -1};
    assert_int_equal(gf_provision_consumer(f->js, &unbounded, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_CREATED);
    assert_int_equal(gf_provision_consumer(f->js, &unbounded, false, &res), GF_OK);
    assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);

    /* a consumer on a stream that does not exist */
    gf_consumer_config orphan = {.stream = "NOSTREAM", .name = "x", .ack_wait_ms = SEC};
    assert_int_equal(gf_provision_consumer(f->js, &orphan, false, &res), GF_ERR_NOT_FOUND);
    assert_contains(res.message, "stream NOSTREAM does not exist");
}

/* ---- bad input and gf_provision_all -------------------------------------------- */

static void test_invalid_configs(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    const char *ok_subjects[] = {"bad.x"};
    const char *bad_subjects[] = {"bad..x"};

    gf_stream_config streams[8];
    for (int i = 0; i < 8; i++)
        streams[i] = stream_cfg("BAD", ok_subjects, 1);
    streams[0].name = "BAD.NAME";
    streams[1].subjects_len = 0;
    streams[2].subjects = bad_subjects;
    streams[3].max_age_ms = -1;
    streams[4].max_age_ms = 1 * MIN;
    streams[4].duplicate_window_ms = 10 * MIN;
    streams[5].max_msg_size = 1LL << 40;
    streams[6].replicas = 9;
    streams[7].retention = 7;
    for (int i = 0; i < 8; i++) {
        res.message[0] = '\0';
        gf_err err = gf_provision_stream(f->js, &streams[i], false, &res);
        if (err != GF_ERR_INVALID)
            fail_msg("stream case %d: %s (%s)", i, gf_err_str(err), res.message);
        assert_true(res.message[0] != '\0');
    }
    assert_false(stream_exists(f, "BAD"));

    gf_bucket_config buckets[4] = {bucket_cfg("badb", 0, 0), bucket_cfg("badb", 65, 0),
                                   bucket_cfg("bad.b", 1, 0), bucket_cfg("badb", 1, -5)};
    for (int i = 0; i < 4; i++) {
        gf_err err = gf_provision_bucket(f->js, &buckets[i], false, &res);
        if (err != GF_ERR_INVALID)
            fail_msg("bucket case %d: %s (%s)", i, gf_err_str(err), res.message);
    }
    assert_false(stream_exists(f, "KV_badb"));

    int64_t zero_backoff[] = {SEC, 0};
    gf_consumer_config consumers[4] = {
        {.stream = "CONS", .name = "bad name"},
        {.stream = "CONS", .name = "bad", .backoff_ms = zero_backoff, .backoff_ms_len = 2},
        {.stream = "CONS",
         .name = "bad",
         .backoff_ms = allocator_backoff,
         .backoff_ms_len = 3,
         .max_deliver = 2},
        {.stream = "CONS", .name = "bad", .deliver = 9},
    };
    for (int i = 0; i < 4; i++) {
        gf_err err = gf_provision_consumer(f->js, &consumers[i], false, &res);
        if (err != GF_ERR_INVALID)
            fail_msg("consumer case %d: %s (%s)", i, gf_err_str(err), res.message);
    }
}

static void test_all_stops_at_first_error(void **state)
{
    fixture *f = *state;
    gf_provision_result res;
    int64_t created;
    const char *mine[] = {"stop.a"};
    make_pre(f, "STOP2", (const char *[]){"stop.b"}, &created);

    gf_stream_config streams[2] = {stream_cfg("STOP1", mine, 1),
                                   stream_cfg("STOP2", (const char *[]){"stop.other"}, 1)};
    streams[1].max_age_ms = 1 * HOUR;
    gf_bucket_config buckets[1] = {bucket_cfg("stopb", 1, 0)};
    gf_consumer_config consumers[1] = {{.stream = "STOP1", .name = "c", .ack_wait_ms = SEC}};
    gf_jetstream_config js = {streams, 2, consumers, 1, buckets, 1};

    assert_int_equal(gf_provision_all(f->js, &js, false, &res), GF_ERR_CONFLICT);
    assert_contains(res.message, "stream STOP2: subjects is [stop.b] on the server");
    /* Order: buckets, streams, consumers (a stream may source a bucket). */
    assert_true(stream_exists(f, "KV_stopb")); /* before the failure */
    assert_true(stream_exists(f, "STOP1"));    /* before the failure */
    jsStreamInfo *si = stream_info(f, "STOP1");
    assert_int_equal(si->State.Consumers, 0);
    jsStreamInfo_Destroy(si);
}

typedef struct racer {
    natsConnection *nc;
    gf_jetstream_config *cfg;
    gf_err err;
    gf_provision_result res;
} racer;

static void *race(void *p)
{
    racer *r = p;
    jsCtx *js = NULL;
    if (natsConnection_JetStream(&js, r->nc, NULL) != NATS_OK) {
        r->err = GF_ERR_NATS;
        return NULL;
    }
    r->err = gf_provision_all(js, r->cfg, false, &r->res);
    jsCtx_Destroy(js);
    return NULL;
}

/* Functions starting at once provision the same assets: every one succeeds. Four
 * provisioners per round, 20 rounds of fresh assets: the lost create comes back as "name
 * already in use" or, on nats-server 2.9.10, as "subjects overlap" with the stream the
 * winner just made (a CI run saw a replica exit on it). */
enum { RACERS = 4, RACE_ROUNDS = 20 };

static void test_concurrent_provisioners(void **state)
{
    fixture *f = *state;
    natsConnection *nc[RACERS] = {f->nc};
    for (int i = 1; i < RACERS; i++)
        assert_int_equal(natsConnection_ConnectTo(&nc[i], gf_natsd_url(f->server)), NATS_OK);
    for (int round = 0; round < RACE_ROUNDS; round++) {
        char name[32], subject[32], bucket[32];
        snprintf(name, sizeof name, "RACE%d", round);
        snprintf(subject, sizeof subject, "race%d.>", round);
        snprintf(bucket, sizeof bucket, "race%d", round);
        const char *subjects[] = {subject};
        gf_stream_config streams[1] = {stream_cfg(name, subjects, 1)};
        streams[0].max_age_ms = 1 * HOUR;
        gf_bucket_config buckets[1] = {bucket_cfg(bucket, 2, 0)};
        gf_consumer_config consumers[1] = {{.stream = name, .name = "c", .ack_wait_ms = 5 * SEC}};
        gf_jetstream_config js = {streams, 1, consumers, 1, buckets, 1};

        racer r[RACERS];
        pthread_t th[RACERS];
        for (int i = 0; i < RACERS; i++) {
            r[i] = (racer){.nc = nc[i], .cfg = &js};
            assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
        }
        for (int i = 0; i < RACERS; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < RACERS; i++) {
            if (r[i].err != GF_OK)
                fail_msg("round %d, provisioner %d: %s (%s)", round, i, gf_err_str(r[i].err),
                         r[i].res.message);
        }
        jsConsumerInfo_Destroy(consumer_info(f, name, "c"));
        gf_provision_result res;
        assert_int_equal(gf_provision_all(f->js, &js, false, &res), GF_OK);
        assert_int_equal(res.outcome, GF_PROVISION_UNCHANGED);
    }
    for (int i = 1; i < RACERS; i++)
        natsConnection_Destroy(nc[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_config_twice),
        cmocka_unit_test(test_stream_conflicts),
        cmocka_unit_test(test_stream_update),
        cmocka_unit_test(test_stream_sources),
        cmocka_unit_test(test_stream_mirror),
        cmocka_unit_test(test_bucket_conflict_and_update),
        cmocka_unit_test(test_limit_below_contents),
        cmocka_unit_test(test_consumer_conflict_and_update),
        cmocka_unit_test(test_invalid_configs),
        cmocka_unit_test(test_all_stops_at_first_error),
        cmocka_unit_test(test_concurrent_provisioners),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    nats_CloseAndWait(2000);
    return rc;
}
