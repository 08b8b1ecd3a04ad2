/*
 * config_schema.c — the runtime's own sections as gf_cfg_table rows: nats, log,
 * runtime and the top level, plus their validate hooks; gf_config_schema().
 *
 * Design notes: one row per option, as in redis' config table: the key, its type,
 * where it lands, its default (YAML text, read by the same parser as the file) and
 * its bounds. The bounds are sanity limits (a typo such as "replicas: 50" fails at
 * start, not at provisioning), not tuning advice. Whatever a single row cannot say
 * (options that exclude each other, NATS name rules) is a validate hook; checks
 * across objects are in config_check.c. docs/CONFIG.md is generated from these rows.
 * The jetstream tables are in config_schema_js.c.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config_check.h"
#include "config_schema.h"
#include "core/reply.h"
#include "gamefn/config.h"
#include "gamefn/limits.h"
#include "gamefn/names.h"

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

static const gf_cfg_enum_value flush_names[] = {
    {"immediate", GF_NATS_FLUSH_IMMEDIATE},
    {"batched", GF_NATS_FLUSH_BATCHED},
    {NULL, 0},
};

static bool nats_validate(const void *obj, gf_cfg_problem *p)
{
    const gf_nats_config *n = obj;
    for (size_t i = 0; i < n->servers_len; i++) {
        const char *why = gf__cfg_check_server_url(n->servers[i]);
        if (why) {
            p->key = "servers";
            snprintf(p->text, sizeof(p->text), "entry %zu %s", i, why);
            return false;
        }
    }
    if (n->inbox_prefix && !gf__cfg_inbox_prefix_ok(n->inbox_prefix)) {
        p->key = "inbox_prefix";
        snprintf(p->text, sizeof(p->text),
                 "must be subject tokens of letters, digits, '_' and '-' joined by '.' "
                 "(no wildcards, no empty token), at most 128 bytes");
        return false;
    }
    if (n->reconnect_max_wait_ms < n->reconnect_wait_ms) {
        p->key = "reconnect_max_wait";
        snprintf(p->text, sizeof(p->text), "must be at least reconnect_wait");
        return false;
    }
    return gf__cfg_check_nats_auth(n, p);
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
    {.key = "inbox_prefix",
     .type = GF_CFG_STRING,
     .offset = offsetof(gf_nats_config, inbox_prefix),
     .help = "prefix of this client's reply subjects, e.g. _INBOX.gw for a gateway user "
             "(docs/OPERATIONS.md, Permissions); unset = _INBOX"},
    {.key = "flush",
     .type = GF_CFG_ENUM,
     .offset = offsetof(gf_nats_config, flush),
     .def = "immediate",
     .enums = flush_names,
     .help = "immediate: a write per message (replies ~1 ms sooner); batched: about one "
             "write per millisecond, less CPU under load (docs/NATS-FACTS.md §1)"},
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
    char why[GF_NAME_WHY_MAX];
    if (r->instance_id && !gf_name_id_ok(r->instance_id, GF_WIRE_ID_MAX, why, sizeof why)) {
        p->key = "instance_id";
        snprintf(p->text, sizeof(p->text), "instance_id %s", why);
        return false;
    }
    for (size_t i = 0; i < r->reply_prefixes_len; i++) {
        const char *problem = gf__reply_prefix_problem(r->reply_prefixes[i]);
        if (problem) {
            p->key = "reply_prefixes";
            snprintf(p->text, sizeof(p->text), "entry %zu %s", i, problem);
            return false;
        }
    }
    /* The server refuses a pull request whose idle heartbeat exceeds half its expiry
     * (docs/NATS-FACTS.md §3). */
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
     .max = 1024,
     .help = "pull endpoints: handlers running at once per endpoint (one worker thread each); "
             "messages are fetched only for idle workers"},
    {.key = "fetch_batch",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_runtime_config, fetch_batch),
     .def = "64",
     .min = 1,
     .max = 10000,
     .help = "pull endpoints: most messages asked for per fetch; partitioned endpoints: the "
             "largest batch handed to on_batch"},
    {.key = "fetch_expiry",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_runtime_config, fetch_expiry_ms),
     .def = "5s",
     .min = 10,
     .max = MS_H,
     .help = "pull consumers: the longest one fetch waits for messages (pull endpoints wait "
             "at most 500 ms, partitioned ones 1 s, to notice a stop); also how often an idle "
             "endpoint checks that its consumer exists"},
    {.key = "heartbeat",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_runtime_config, heartbeat_ms),
     .def = "1s",
     .min = 0,
     .max = MS_M,
     .help = "not used with nats.c 3.4.1, whose heartbeat timer misfires (a long poll is "
             "bounded by fetch_expiry instead); at most half of fetch_expiry"},
    {.key = "reply_prefixes",
     .type = GF_CFG_STRING_LIST,
     .offset = offsetof(gf_runtime_config, reply_prefixes),
     .count_offset = offsetof(gf_runtime_config, reply_prefixes_len),
     .def = "[\"_INBOX.\"]",
     .min = 1,
     .max = 16,
     .help = "replies go only to subjects under these prefixes (whole tokens ending in '.'); "
             "never $JS., $KV., $O., $SYS., $SRV. or gamefn."},
    {.key = "request_deadline",
     .type = GF_CFG_DURATION,
     .offset = offsetof(gf_runtime_config, request_deadline_ms),
     .def = "30s",
     .min = 0,
     .max = MS_H,
     .help = "request handlers: one running longer makes the instance unhealthy (no $SRV.PING "
             "answer) until it returns (0 = no deadline)"},
    {.key = "max_queued_requests",
     .type = GF_CFG_INT,
     .offset = offsetof(gf_runtime_config, max_queued_requests),
     .def = "65536",
     .min = 1,
     .max = 1048576,
     .help = "request endpoints: requests waiting for a handler; more are dropped and counted "
             "in $SRV STATS (num_dropped)"},
};

static const gf_cfg_table runtime_table = {"runtime", sizeof(gf_runtime_config), runtime_rows,
                                           NROWS(runtime_rows), runtime_validate};

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
     .sub = &gf__cfg_jetstream_table,
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
        {"jetstream", &gf__cfg_jetstream_table},
        {"stream", &gf__cfg_stream_table},
        {"consumer", &gf__cfg_consumer_table},
        {"bucket", &gf__cfg_bucket_table},
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
