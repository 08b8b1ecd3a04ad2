/*
 * config_schema.c — the runtime's own sections as gf_cfg_table rows: nats, log,
 * runtime and jetstream (streams, consumers, buckets), plus their validate hooks.
 *
 * Design notes: one row per option, as in redis' config table: the key, its type,
 * where it lands, its default (YAML text, read by the same parser as the file) and
 * its bounds. The bounds are sanity limits (a typo such as "replicas: 50" fails at
 * start, not at provisioning), not tuning advice. Whatever a single row cannot say
 * (options that exclude each other, NATS name rules) is a validate hook; checks
 * across objects are in config_check.c. docs/CONFIG.md is generated from these rows.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config_check.h"
#include "gamefn/config.h"

#define MS_S        1000.0
#define MS_M        (60 * MS_S)
#define MS_H        (60 * MS_M)
#define MS_D        (24 * MS_H)
#define MIB         (1024.0 * 1024.0)
#define NROWS(rows) (sizeof(rows) / sizeof((rows)[0]))

/* ---- nats --------------------------------------------------------------- */

static bool tls_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_tls_config *t = obj;
    if (t->key_file && !t->cert_file) {
        p->key = "key_file";
        snprintf(p->text, sizeof(p->text), "key_file is set but cert_file is not");
        return false;
    }
    if (t->cert_file && !t->key_file) {
        p->key = "cert_file";
        snprintf(p->text, sizeof(p->text), "cert_file is set but key_file is not");
        return false;
    }
    return true;
}

static const gf_cfg_field tls_rows[] = {
    {.key = "enabled",
     .type = GF_CFG_BOOL,
     .offset = offsetof(gf_tls_config, enabled),
     .def = "false",
     .help = "require TLS to the servers (also implied by tls:// URLs)"},
    {.key = "ca_file",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_tls_config, ca_file),
     .help = "PEM file of trusted CAs; unset = system roots"},
    {.key = "cert_file",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_tls_config, cert_file),
     .help = "PEM client certificate chain, for mutual TLS (needs key_file)"},
    {.key = "key_file",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_tls_config, key_file),
     .help = "PEM private key of cert_file (needs cert_file)"},
};

static const gf_cfg_table tls_table = {"nats.tls", sizeof(gf_tls_config), tls_rows, NROWS(tls_rows),
                                       tls_validate};

static bool nats_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_nats_config *n = obj;
    for (size_t i = 0; i < n->servers_len; i++) {
        const char *why = cfg_check_server_url(n->servers[i]);
        if (why) {
            p->key = "servers";
            snprintf(p->text, sizeof(p->text), "entry %zu %s", i, why);
            return false;
        }
    }
    if (n->reconnect_max_wait_ms < n->reconnect_wait_ms) {
        p->key = "reconnect_max_wait";
        snprintf(p->text, sizeof(p->text), "must be at least reconnect_wait");
        return false;
    }
    return cfg_check_nats_auth(n, p);
}

static const gf_cfg_field nats_rows[] = {
    {.key = "servers",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(gf_nats_config, servers),
     .count_offset = offsetof(gf_nats_config, servers_len),
     .def = "[\"nats://127.0.0.1:4222\"]",
     .min = 1,
     .max = GF_CFG_NO_MAX,
     .help = "server URLs (nats://host:port, tls://host:port or host:port); env GAMEFN_NATS_URL"},
    {.key = "credentials",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_nats_config, credentials),
     .help = ".creds file (user JWT + nkey seed); env GAMEFN_NATS_CREDS"},
    {.key = "nkey_seed",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_nats_config, nkey_seed),
     .help = "file holding an nkey seed; env GAMEFN_NATS_NKEY_SEED"},
    {.key = "user",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_nats_config, user),
     .help = "user name; env GAMEFN_NATS_USER"},
    {.key = "password",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_nats_config, password),
     .help = "password (prefer env GAMEFN_NATS_PASSWORD to keep it out of files)"},
    {.key = "tls",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(gf_nats_config, tls),
     .sub = &tls_table,
     .help = "TLS to the servers"},
    {.key = "connect_timeout",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_nats_config, connect_timeout_ms),
     .def = "2s",
     .min = 10,
     .max = 10 * MS_M,
     .help = "bound on one connection attempt"},
    {.key = "reconnect_wait",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_nats_config, reconnect_wait_ms),
     .def = "250ms",
     .min = 1,
     .max = 10 * MS_M,
     .help = "first delay between reconnect attempts (then doubles)"},
    {.key = "reconnect_jitter",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_nats_config, reconnect_jitter_ms),
     .def = "250ms",
     .min = 0,
     .max = 10 * MS_M,
     .help = "random extra delay up to this, so replicas do not reconnect in step"},
    {.key = "reconnect_max_wait",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_nats_config, reconnect_max_wait_ms),
     .def = "5s",
     .min = 1,
     .max = MS_H,
     .help = "cap of the doubling reconnect delay (at least reconnect_wait)"},
    {.key = "ping_interval",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_nats_config, ping_interval_ms),
     .def = "20s",
     .min = 100,
     .max = MS_H,
     .help = "client PINGs that detect a dead connection"},
    {.key = "reconnect_buffer",
     .type = GF_CFG_SIZE,
     .offset = offsetof(gf_nats_config, reconnect_buffer),
     .def = "8MiB",
     .min = 0,
     .max = 1024 * MIB,
     .help = "publishes buffered while disconnected"},
    {.key = "api_timeout",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_nats_config, api_timeout_ms),
     .def = "5s",
     .min = 10,
     .max = 10 * MS_M,
     .help = "JetStream API calls (provisioning, KV, consumer info)"},
};

static const gf_cfg_table nats_table = {"nats", sizeof(gf_nats_config), nats_rows, NROWS(nats_rows),
                                        nats_validate};

/* ---- log ---------------------------------------------------------------- */

static const gf_cfg_enum_value level_names[] = {
    {"debug", GF_LOG_DEBUG}, {"info", GF_LOG_INFO}, {"warn", GF_LOG_WARN},
    {"error", GF_LOG_ERROR}, {"off", GF_LOG_OFF},   {NULL, 0},
};

static const gf_cfg_field log_rows[] = {
    {.key = "level",
     .type = GF_CFG_ENUM,
     .offset = offsetof(gf_log_config, level),
     .def = "info",
     .enums = level_names,
     .help = "lowest level written to stderr; env GAMEFN_LOG_LEVEL"},
};

static const gf_cfg_table log_table = {"log", sizeof(gf_log_config), log_rows, NROWS(log_rows),
                                       NULL};

/* ---- runtime ------------------------------------------------------------ */

static bool runtime_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_runtime_config *r = obj;
    const char *why = r->instance_id ? cfg_check_instance_id(r->instance_id) : NULL;
    if (why) {
        p->key = "instance_id";
        snprintf(p->text, sizeof(p->text), "instance_id %s", why);
        return false;
    }
    /* The server refuses a pull request whose idle heartbeat exceeds half its expiry. */
    if (r->heartbeat_ms > 0 && r->heartbeat_ms > r->fetch_expiry_ms / 2) {
        p->key = "heartbeat";
        snprintf(p->text, sizeof(p->text), "must be at most half of fetch_expiry");
        return false;
    }
    return true;
}

static const gf_cfg_field runtime_rows[] = {
    {.key = "instance_id",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_runtime_config, instance_id),
     .help = "this replica's id ([A-Za-z0-9_-], up to 64); unset = generated at start; "
             "env GAMEFN_INSTANCE_ID"},
    {.key = "drain_timeout",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_runtime_config, drain_timeout_ms),
     .def = "10s",
     .min = 0,
     .max = MS_H,
     .help = "after SIGTERM, time allowed to finish in-flight work before exiting"},
    {.key = "max_in_flight",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_runtime_config, max_in_flight),
     .def = "64",
     .min = 1,
     .max = 65536,
     .help = "pull consumers: messages handled concurrently per instance"},
    {.key = "fetch_batch",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_runtime_config, fetch_batch),
     .def = "64",
     .min = 1,
     .max = 10000,
     .help = "pull consumers: messages asked for per fetch"},
    {.key = "fetch_expiry",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_runtime_config, fetch_expiry_ms),
     .def = "5s",
     .min = 10,
     .max = MS_H,
     .help = "pull consumers: how long one fetch waits for messages"},
    {.key = "heartbeat",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_runtime_config, heartbeat_ms),
     .def = "1s",
     .min = 0,
     .max = MS_M,
     .help = "pull consumers: idle heartbeat asked of the server (0 = none; at most half of "
             "fetch_expiry)"},
};

static const gf_cfg_table runtime_table = {"runtime", sizeof(gf_runtime_config), runtime_rows,
                                           NROWS(runtime_rows), runtime_validate};

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

static bool stream_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_stream_config *s = obj;
    const char *why = cfg_check_name(s->name);
    if (why) {
        p->key = "name";
        snprintf(p->text, sizeof(p->text), "stream name %s", why);
        return false;
    }
    for (size_t i = 0; i < s->subjects_len; i++) {
        if ((why = cfg_check_subject(s->subjects[i])) != NULL) {
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
     .help = "stream name (no spaces, '.', '*', '>', '/', '\\')"},
    {.key = "description",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_stream_config, description),
     .help = "free text shown by tools"},
    {.key = "subjects",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(gf_stream_config, subjects),
     .count_offset = offsetof(gf_stream_config, subjects_len),
     .required = true,
     .min = 1,
     .max = GF_CFG_NO_MAX,
     .help = "subjects stored (wildcards allowed)"},
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

static const gf_cfg_table stream_table = {"stream", sizeof(gf_stream_config), stream_rows,
                                          NROWS(stream_rows), stream_validate};

static bool consumer_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_consumer_config *c = obj;
    const char *why = cfg_check_name(c->name);
    if (why) {
        p->key = "name";
        snprintf(p->text, sizeof(p->text), "consumer name %s", why);
        return false;
    }
    if ((why = cfg_check_name(c->stream)) != NULL) {
        p->key = "stream";
        snprintf(p->text, sizeof(p->text), "stream name %s", why);
        return false;
    }
    if (c->filter_subject && (why = cfg_check_subject(c->filter_subject)) != NULL) {
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
    return true;
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
     .help = "durable name, unique per stream"},
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
};

static const gf_cfg_table consumer_table = {"consumer", sizeof(gf_consumer_config), consumer_rows,
                                            NROWS(consumer_rows), consumer_validate};

static bool bucket_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_bucket_config *b = obj;
    const char *why = cfg_check_bucket_name(b->name);
    if (why) {
        p->key = "name";
        snprintf(p->text, sizeof(p->text), "bucket name %s", why);
        return false;
    }
    return true;
}

static const gf_cfg_field bucket_rows[] = {
    {.key = "name",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_bucket_config, name),
     .required = true,
     .help = "bucket name ([A-Za-z0-9_-]); backed by stream KV_<name>"},
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

static const gf_cfg_table bucket_table = {"bucket", sizeof(gf_bucket_config), bucket_rows,
                                          NROWS(bucket_rows), bucket_validate};

static const gf_cfg_field jetstream_rows[] = {
    {.key = "streams",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(gf_jetstream_config, streams),
     .count_offset = offsetof(gf_jetstream_config, streams_len),
     .sub = &stream_table,
     .help = "streams to provision"},
    {.key = "consumers",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(gf_jetstream_config, consumers),
     .count_offset = offsetof(gf_jetstream_config, consumers_len),
     .sub = &consumer_table,
     .help = "durable pull consumers to provision"},
    {.key = "buckets",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(gf_jetstream_config, buckets),
     .count_offset = offsetof(gf_jetstream_config, buckets_len),
     .sub = &bucket_table,
     .help = "key-value buckets to provision"},
};

static const gf_cfg_table jetstream_table = {"jetstream", sizeof(gf_jetstream_config),
                                             jetstream_rows, NROWS(jetstream_rows), NULL};

/* ---- top level ---------------------------------------------------------- */

static const gf_cfg_field root_rows[] = {
    {.key = "nats",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(gf_config, nats),
     .sub = &nats_table,
     .help = "connection to NATS"},
    {.key = "log",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(gf_config, log),
     .sub = &log_table,
     .help = "logging"},
    {.key = "runtime",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(gf_config, runtime),
     .sub = &runtime_table,
     .help = "process behaviour shared by every function"},
    {.key = "jetstream",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(gf_config, jetstream),
     .sub = &jetstream_table,
     .help = "streams, consumers and buckets"},
};

static const gf_cfg_table root_table = {"top level", sizeof(gf_config), root_rows, NROWS(root_rows),
                                        NULL};

const gf_cfg_table *gf_config_schema(const char *name)
{
    static const struct {
        const char *name;
        const gf_cfg_table *table;
    } all[] = {
        {"", &root_table},
        {"nats", &nats_table},
        {"log", &log_table},
        {"runtime", &runtime_table},
        {"jetstream", &jetstream_table},
        {"stream", &stream_table},
        {"consumer", &consumer_table},
        {"bucket", &bucket_table},
        {"nats.tls", &tls_table},
    };
    if (!name)
        name = "";
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(all[i].name, name) == 0)
            return all[i].table;
    }
    return NULL;
}
