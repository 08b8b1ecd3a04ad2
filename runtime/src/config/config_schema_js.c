/*
 * config_schema_js.c — the jetstream section as gf_cfg_table rows: streams,
 * consumers and buckets, with the validate hooks that hold each object to the rules
 * nats-server 2.9 applies (names, subjects, limits it would refuse at provisioning).
 *
 * Design notes: the same row format as config_schema.c. Defaults are the server's
 * own where it has one (duplicate window 2m, max_waiting 512, max_ack_pending 1000)
 * and this design's otherwise (max_deliver 5, file storage, 1 replica), so a config
 * that leaves a key out provisions what the docs say.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config_check.h"
#include "config_schema.h"
#include "gamefn/config.h"
#include "gamefn/names.h"

/* ---- jetstream ---------------------------------------------------------- */

static const gf_cfg_enum_value retention_names[] = {
    {"limits", GF_RETENTION_LIMITS},
    {"interest", GF_RETENTION_INTEREST},
    {"workqueue", GF_RETENTION_WORKQUEUE},
    {NULL, 0},
};
static const gf_cfg_enum_value storage_names[] = {
    {"file", GF_STORAGE_FILE}, {"memory", GF_STORAGE_MEMORY}, {NULL, 0}};
static const gf_cfg_enum_value discard_names[] = {
    {"old", GF_DISCARD_OLD}, {"new", GF_DISCARD_NEW}, {NULL, 0}};
static const gf_cfg_enum_value deliver_names[] = {
    {"all", GF_DELIVER_ALL}, {"new", GF_DELIVER_NEW}, {"last", GF_DELIVER_LAST}, {NULL, 0}};
static const gf_cfg_enum_value ack_policy_names[] = {
    {"explicit", GF_ACK_EXPLICIT}, {"all", GF_ACK_ALL}, {NULL, 0}};

static bool stream_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_stream_config *s = obj;
    char why[GF_NAME_WHY_MAX];
    if (!gf_cfg_stream_ok(s->name, "name", p))
        return false;
    if (s->mirror && (s->subjects_len > 0 || s->sources_len > 0)) {
        p->key = "mirror";
        snprintf(p->text, sizeof(p->text), "a mirror has no subjects or sources of its own");
        return false;
    }
    if (s->mirror && (!gf_name_asset_ok(s->mirror, why, sizeof why) ||
                      (strcmp(s->mirror, s->name) == 0 &&
                       snprintf(why, sizeof why, "is the stream itself") > 0))) {
        p->key = "mirror";
        snprintf(p->text, sizeof(p->text), "%s", why);
        return false;
    }
    if (!s->mirror && s->subjects_len == 0 && s->sources_len == 0) {
        p->key = "subjects";
        snprintf(p->text, sizeof(p->text), "a stream needs subjects, sources or a mirror");
        return false;
    }
    for (size_t i = 0; i < s->sources_len; i++) {
        if (!gf_name_asset_ok(s->sources[i], why, sizeof why) ||
            (strcmp(s->sources[i], s->name) == 0 &&
             snprintf(why, sizeof why, "is the stream itself") > 0)) {
            p->key = "sources";
            snprintf(p->text, sizeof(p->text), "entry %zu %s", i, why);
            return false;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(s->sources[j], s->sources[i]) == 0) {
                p->key = "sources";
                snprintf(p->text, sizeof(p->text), "entry %zu repeats entry %zu", i, j);
                return false;
            }
        }
    }
    for (size_t i = 0; i < s->subjects_len; i++) {
        if (!gf_name_subject_ok(s->subjects[i], true, why, sizeof why)) {
            p->key = "subjects";
            snprintf(p->text, sizeof(p->text), "entry %zu %s", i, why);
            return false;
        }
    }
    if (s->max_age_ms > 0 && s->duplicate_window_ms > s->max_age_ms) {
        p->key = "duplicate_window";
        snprintf(p->text, sizeof(p->text), "must not be longer than max_age");
        return false;
    }
    return true;
}

static const gf_cfg_field stream_rows[] = {
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_stream_config, name),
     .required = true,
     .help = "stream name, up to 255 bytes (no spaces, '.', '*', '>', '/', '\\')"},
    {.key = "description",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_stream_config, description),
     .help = "free text shown by tools"},
    {.key = "subjects",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(gf_stream_config, subjects),
     .count_offset = offsetof(gf_stream_config, subjects_len),
     .help = "subjects stored (wildcards allowed); may be left out when sources or mirror is "
             "set"},
    {.key = "sources",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(gf_stream_config, sources),
     .count_offset = offsetof(gf_stream_config, sources_len),
     .min = 0,
     .max = 64,
     .help = "streams whose messages the server copies into this one (each keeps its subject); "
             "nats-server 2.9 applies a copied message's Nats-Expected-* headers again, so do not "
             "source streams written by compare-and-set (KV buckets): mirror them"},
    {.key = "mirror",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_stream_config, mirror),
     .help = "a stream this one is a read-only copy of, with the same sequence numbers (e.g. "
             "KV_tickets for an audit); no subjects or sources then"},
    {.key = "retention",
     .type = GF_CFG_ENUM,
     .offset = offsetof(gf_stream_config, retention),
     .def = "limits",
     .enums = retention_names,
     .help = "limits: keep until limits; interest: until every consumer acked; workqueue: "
             "until one consumer acked"},
    {.key = "storage",
     .type = GF_CFG_ENUM,
     .offset = offsetof(gf_stream_config, storage),
     .def = "file",
     .enums = storage_names,
     .help = "file survives restarts; memory does not"},
    {.key = "discard",
     .type = GF_CFG_ENUM,
     .offset = offsetof(gf_stream_config, discard),
     .def = "old",
     .enums = discard_names,
     .help = "at a limit: drop the oldest messages, or refuse new ones"},
    {.key = "replicas",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_stream_config, replicas),
     .def = "1",
     .min = 1,
     .max = 5,
     .help = "copies in a cluster (1 on a single node)"},
    {.key = "allow_direct",
     .type = GF_CFG_BOOL,
     .offset = offsetof(gf_stream_config, allow_direct),
     .def = "false",
     .help = "answer direct gets (any replica, no JetStream API request): cheap reads of "
             "the last message on a subject"},
    {.key = "max_age",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_stream_config, max_age_ms),
     .def = "0",
     .help = "drop messages older than this (0 = keep forever)"},
    {.key = "duplicate_window",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_stream_config, duplicate_window_ms),
     .def = "2m",
     .help = "Nats-Msg-Id deduplication window (not longer than max_age)"},
    {.key = "max_msgs",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_stream_config, max_msgs),
     .def = "0",
     .min = 0,
     .max = GF_CFG_NO_MAX,
     .help = "message count limit (0 = none)"},
    {.key = "max_bytes",
     .type = GF_CFG_SIZE,
     .offset = offsetof(gf_stream_config, max_bytes),
     .def = "0",
     .help = "size limit (0 = none)"},
    {.key = "max_msg_size",
     .type = GF_CFG_SIZE,
     .offset = offsetof(gf_stream_config, max_msg_size),
     .def = "0",
     .min = 0,
     .max = 64 * MIB,
     .help = "largest message accepted (0 = the server's max_payload)"},
};

const gf_cfg_table gf__cfg_stream_table = {"stream", sizeof(gf_stream_config), stream_rows,
                                           NROWS(stream_rows), stream_validate};

/* A partitioned group's name becomes a lease key token and, with "-p<NN>", a durable
 * name; its filter must say where the partition number goes. */
static bool partitioned_validate(const gf_consumer_config *c, gf_cfg_problem *p)
{
    bool placeholder = c->filter_subject && strstr(c->filter_subject, "{partition}");
    char why[GF_NAME_WHY_MAX];
    if (c->partitions == 0) {
        if (placeholder) {
            p->key = "filter_subject";
            snprintf(p->text, sizeof(p->text), "has {partition} but partitions is not set");
            return false;
        }
        /* A pull endpoint's handlers finish out of order: acking one must not ack the
         * others. */
        const char *only = c->ack_policy != GF_ACK_EXPLICIT ? "ack_policy"
                           : c->linger_ms > 0               ? "linger"
                           : c->fetch_batch > 0             ? "fetch_batch"
                                                            : NULL;
        if (only) {
            p->key = only;
            snprintf(p->text, sizeof(p->text), "is for partitioned groups only (partitions > 0)");
            return false;
        }
        return true;
    }
    if (c->fetch_batch > 0 && c->max_ack_pending > 0 && c->fetch_batch > c->max_ack_pending) {
        p->key = "fetch_batch";
        snprintf(p->text, sizeof(p->text),
                 "%lld is more than max_ack_pending (%lld): a batch could never fill",
                 (long long)c->fetch_batch, (long long)c->max_ack_pending);
        return false;
    }
    if (c->linger_ms * 2 > c->lease_ttl_ms) {
        p->key = "linger";
        snprintf(p->text, sizeof(p->text), "must be at most half of lease_ttl");
        return false;
    }
    if (!gf_name_id_ok(c->name, GF_CFG_GROUP_MAX, why, sizeof why)) {
        p->key = "name";
        snprintf(p->text, sizeof(p->text), "partitioned group name %s", why);
        return false;
    }
    if (!placeholder) {
        p->key = c->filter_subject ? "filter_subject" : "partitions";
        snprintf(p->text, sizeof(p->text),
                 "a partitioned group needs a filter_subject with {partition}, e.g. "
                 "\"gamefn.v1.evp.{partition}.>\"");
        return false;
    }
    if (!gf_name_bucket_ok(c->lease_bucket, why, sizeof why)) {
        p->key = "lease_bucket";
        snprintf(p->text, sizeof(p->text), "lease_bucket %s", why);
        return false;
    }
    return true;
}

static bool consumer_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_consumer_config *c = obj;
    char why[GF_NAME_WHY_MAX];
    if (!gf_name_asset_ok(c->name, why, sizeof why)) {
        p->key = "name";
        snprintf(p->text, sizeof(p->text), "consumer name %s", why);
        return false;
    }
    if (!gf_name_asset_ok(c->stream, why, sizeof why)) {
        p->key = "stream";
        snprintf(p->text, sizeof(p->text), "stream name %s", why);
        return false;
    }
    if (c->filter_subject && !gf_name_subject_ok(c->filter_subject, true, why, sizeof why)) {
        p->key = "filter_subject";
        snprintf(p->text, sizeof(p->text), "filter_subject %s", why);
        return false;
    }
    if (c->max_deliver == 0 || c->max_ack_pending == 0) {
        p->key = c->max_deliver == 0 ? "max_deliver" : "max_ack_pending";
        snprintf(p->text, sizeof(p->text), "0 is not allowed (use -1 for unlimited)");
        return false;
    }
    for (size_t i = 0; i < c->backoff_ms_len; i++) {
        if (c->backoff_ms[i] <= 0) {
            p->key = "backoff";
            snprintf(p->text, sizeof(p->text), "entry %zu must be greater than 0", i);
            return false;
        }
    }
    /* The server refuses a backoff list longer than max_deliver. */
    if (c->max_deliver > 0 && c->backoff_ms_len > (size_t)c->max_deliver) {
        p->key = "backoff";
        snprintf(p->text, sizeof(p->text), "has %zu entries, more than max_deliver (%lld)",
                 c->backoff_ms_len, (long long)c->max_deliver);
        return false;
    }
    return partitioned_validate(c, p);
}

static const gf_cfg_field consumer_rows[] = {
    {.key = "stream",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_consumer_config, stream),
     .required = true,
     .help = "stream it reads (must be in jetstream.streams)"},
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_consumer_config, name),
     .required = true,
     .help = "durable name, unique per stream (the rules of stream names)"},
    {.key = "description",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_consumer_config, description),
     .help = "free text shown by tools"},
    {.key = "filter_subject",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_consumer_config, filter_subject),
     .help = "only messages on this subject (wildcards allowed); unset = whole stream"},
    {.key = "deliver",
     .type = GF_CFG_ENUM,
     .offset = offsetof(gf_consumer_config, deliver),
     .def = "all",
     .enums = deliver_names,
     .help = "where a new consumer starts"},
    {.key = "ack_wait",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_consumer_config, ack_wait_ms),
     .def = "30s",
     .min = 1,
     .max = MS_D,
     .help = "redeliver a message not acked within this"},
    {.key = "max_deliver",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_consumer_config, max_deliver),
     .def = "5",
     .min = -1,
     .max = 1000000,
     .help = "deliveries before the message goes to the DLQ (-1 = unlimited; not 0)"},
    {.key = "backoff",
     .type = GF_CFG_DURATION_LIST,
     .offset = offsetof(gf_consumer_config, backoff_ms),
     .count_offset = offsetof(gf_consumer_config, backoff_ms_len),
     .min = 0,
     .max = 64,
     .help = "redelivery delays, one per delivery, the last one repeating (at most "
             "max_deliver entries); when set, the server replaces ack_wait with backoff[0]"},
    {.key = "max_ack_pending",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_consumer_config, max_ack_pending),
     .def = "1000",
     .min = -1,
     .max = 1000000,
     .help = "unacked messages outstanding (-1 = unlimited; not 0)"},
    {.key = "max_waiting",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_consumer_config, max_waiting),
     .def = "512",
     .min = 1,
     .max = 100000,
     .help = "pull requests the server queues"},
    {.key = "partitions",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_consumer_config, partitions),
     .def = "0",
     .min = 0,
     .max = 100,
     .help = "0: one consumer; N: a partitioned group of N durables <name>-p00.. (filter_subject "
             "has {partition}), each owned by one replica at a time"},
    {.key = "lease_bucket",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_consumer_config, lease_bucket),
     .def = "leases",
     .help = "partitioned: KV bucket of the ownership leases part.<name>.<NN> (in "
             "jetstream.buckets)"},
    {.key = "lease_ttl",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_consumer_config, lease_ttl_ms),
     .def = "10s",
     .min = 1000,
     .max = 10 * MS_M,
     .help = "partitioned: a dead owner's partitions move after this; renewed every quarter"},
    {.key = "ack_policy",
     .type = GF_CFG_ENUM,
     .offset = offsetof(gf_consumer_config, ack_policy),
     .def = "explicit",
     .enums = ack_policy_names,
     .help = "partitioned: explicit acks every message; all acks a batch with one ack of its "
             "last message (fewer server operations; fixed when the consumer is created)"},
    {.key = "fetch_batch",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_consumer_config, fetch_batch),
     .def = "0",
     .min = 0,
     .max = 10000,
     .help = "partitioned: the largest batch (0 = runtime.fetch_batch); at most max_ack_pending"},
    {.key = "linger",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_consumer_config, linger_ms),
     .def = "0",
     .min = 0,
     .max = MS_M,
     .help = "partitioned: after a fetch that was not a full batch, the next one waits until "
             "this long after it began, so more events share a batch and its effect writes "
             "(adds up to this much latency); at most half of lease_ttl"},
};

const gf_cfg_table gf__cfg_consumer_table = {"consumer", sizeof(gf_consumer_config), consumer_rows,
                                             NROWS(consumer_rows), consumer_validate};

static bool bucket_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_bucket_config *b = obj;
    return gf_cfg_bucket_ok(b->name, "name", p);
}

static const gf_cfg_field bucket_rows[] = {
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_bucket_config, name),
     .required = true,
     .help = "bucket name ([A-Za-z0-9_-], up to 252 bytes); backed by stream KV_<name>"},
    {.key = "description",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_bucket_config, description),
     .help = "free text shown by tools"},
    {.key = "history",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_bucket_config, history),
     .def = "1",
     .min = 1,
     .max = 64,
     .help = "revisions kept per key"},
    {.key = "ttl",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_bucket_config, ttl_ms),
     .def = "0",
     .help = "keys expire this long after their last write (0 = never)"},
    {.key = "storage",
     .type = GF_CFG_ENUM,
     .offset = offsetof(gf_bucket_config, storage),
     .def = "file",
     .enums = storage_names,
     .help = "file survives restarts; memory does not"},
    {.key = "replicas",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_bucket_config, replicas),
     .def = "1",
     .min = 1,
     .max = 5,
     .help = "copies in a cluster (1 on a single node)"},
    {.key = "max_value_size",
     .type = GF_CFG_SIZE,
     .offset = offsetof(gf_bucket_config, max_value_size),
     .def = "0",
     .min = 0,
     .max = 64 * MIB,
     .help = "largest value accepted (0 = the server's max_payload)"},
    {.key = "max_bytes",
     .type = GF_CFG_SIZE,
     .offset = offsetof(gf_bucket_config, max_bytes),
     .def = "0",
     .help = "size limit of the bucket (0 = none)"},
};

const gf_cfg_table gf__cfg_bucket_table = {"bucket", sizeof(gf_bucket_config), bucket_rows,
                                           NROWS(bucket_rows), bucket_validate};

static const gf_cfg_field jetstream_rows[] = {
    {.key = "streams",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(gf_jetstream_config, streams),
     .count_offset = offsetof(gf_jetstream_config, streams_len),
     .sub = &gf__cfg_stream_table,
     .help = "streams to provision"},
    {.key = "consumers",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(gf_jetstream_config, consumers),
     .count_offset = offsetof(gf_jetstream_config, consumers_len),
     .sub = &gf__cfg_consumer_table,
     .help = "durable pull consumers to provision"},
    {.key = "buckets",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(gf_jetstream_config, buckets),
     .count_offset = offsetof(gf_jetstream_config, buckets_len),
     .sub = &gf__cfg_bucket_table,
     .help = "key-value buckets to provision"},
};

const gf_cfg_table gf__cfg_jetstream_table = {"jetstream", sizeof(gf_jetstream_config),
                                              jetstream_rows, NROWS(jetstream_rows), NULL};
