/*
 * gamefn/config.h — YAML configuration, parsed once into immutable structs.
 *
 * One file (config/gamefn.yaml by default) describes a deployment:
 *
 *   nats:       servers, credentials, TLS, reconnect policy        -> gf_nats_config
 *   log:        level                                               -> gf_log_config
 *   runtime:    drain timeout, in-flight bound, instance id         -> gf_runtime_config
 *   jetstream:  streams, consumers, buckets to provision            -> gf_jetstream_config
 *   functions:  one section per function, each with its own table   -> gf_config_function()
 *
 * Parsing is table-driven: every option is one row of a gf_cfg_field table
 * (key, type, offset, default, bounds). The same machinery parses the runtime's
 * sections and a function's own section, so every function gets the same
 * errors for free: unknown keys, wrong types, out-of-range values and broken
 * YAML fail with "file:line:column: key 'a.b.c': what is wrong".
 *
 * A function only validates its own entry under `functions:`; entries of other
 * functions are skipped (they are validated by those functions at their start).
 * gf_config_load_all() validates every entry, for `gamefn check-config`.
 *
 * Environment variables override deployment values only, after the file is read:
 *   GAMEFN_NATS_URL        comma-separated server URLs (replaces nats.servers)
 *   GAMEFN_NATS_CREDS      nats.credentials       GAMEFN_NATS_NKEY_SEED  nats.nkey_seed
 *   GAMEFN_NATS_USER       nats.user              GAMEFN_NATS_PASSWORD   nats.password
 *   GAMEFN_LOG_LEVEL       log.level              GAMEFN_INSTANCE_ID     runtime.instance_id
 *
 * Units: every duration is int64_t milliseconds (YAML "250ms", "5s", "2m", "1h", "7d");
 * every size is int64_t bytes (YAML "512", "64KiB", "1MiB", "10GiB"; also KB/MB/GB = 1000^n).
 *
 * YAML accepted: one document whose top level is a mapping. A null value ("key:", "~",
 * "null") counts as absent: the default applies, or the required key is missing.
 * Anchors, aliases and explicit tags are refused (each key's type comes from its row).
 * Duplicate keys in a mapping are errors. docs/CONFIG.md is the reference of every key.
 *
 * Ownership: gf_config_load() allocates one gf_config that owns every string and
 * array in it; gf_config_free() releases all of it. Pointers into it are borrowed
 * and valid until then. Nothing mutates a loaded config.
 *
 * Threads: loading reads the environment (getenv), so do not call setenv() meanwhile;
 * otherwise loads are independent. A loaded config is immutable and may be read from
 * any thread.
 */
#ifndef GAMEFN_CONFIG_H
#define GAMEFN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gamefn/err.h"
#include "gamefn/log.h"

/* ---- table-driven schema ------------------------------------------------ */

typedef enum gf_cfg_type {
    GF_CFG_STRING,        /* const char *            */
    GF_CFG_INT,           /* int64_t                 */
    GF_CFG_DOUBLE,        /* double (NaN/inf refused) */
    GF_CFG_BOOL,          /* bool: true/false        */
    GF_CFG_DURATION,      /* int64_t milliseconds    */
    GF_CFG_SIZE,          /* int64_t bytes           */
    GF_CFG_ENUM,          /* int, from `enums`       */
    GF_CFG_STRING_LIST,   /* const char **, count at count_offset (size_t) */
    GF_CFG_DURATION_LIST, /* int64_t * (ms), count at count_offset (size_t) */
    GF_CFG_OBJECT,        /* nested struct at offset, described by `sub`   */
    GF_CFG_OBJECT_LIST,   /* array of `sub->size`-byte structs; pointer at offset,
                             count at count_offset (size_t) */
} gf_cfg_type;

typedef struct gf_cfg_enum_value {
    const char *name;
    int value;
} gf_cfg_enum_value;

struct gf_cfg_table;

/* `max` at or above this means "no upper bound" (use it for a lower bound alone:
 * min = 1, max = GF_CFG_NO_MAX). */
#define GF_CFG_NO_MAX 1e300

typedef struct gf_cfg_field {
    const char *key;
    gf_cfg_type type;
    size_t offset;       /* offsetof(struct, member) */
    size_t count_offset; /* lists only: offsetof(struct, member_len) */
    bool required;       /* absent -> error; otherwise `def` applies */
    const char *def;     /* default, written as the YAML scalar would be ("5s", "info", "3");
                            NULL = zero/NULL/empty */
    double min, max;     /* INT/DOUBLE/DURATION/SIZE and list lengths: inclusive bounds;
                            min == max == 0 means unbounded */
    const gf_cfg_enum_value *enums; /* ENUM: terminated by {NULL, 0} */
    const struct gf_cfg_table *sub; /* OBJECT, OBJECT_LIST */
    const char *help;               /* one line, for docs and `--help-config` */
} gf_cfg_field;

/* What a table's validate hook found wrong. */
typedef struct gf_cfg_problem {
    const char *key; /* a key of this table whose value is wrong (the error then points at
                        that value), or NULL for the object as a whole */
    char text[200];  /* what is wrong, e.g. "must be at most half of fetch_expiry" */
} gf_cfg_problem;

/* Cross-field check, called once the object is filled (defaults applied). Returns true
 * when the object is fine; otherwise fills *problem and returns false. Must not keep
 * `obj` or write into it. */
typedef bool (*gf_cfg_validate_fn)(const void *obj, gf_cfg_problem *problem);

typedef struct gf_cfg_table {
    const char *name;
    size_t size; /* sizeof the struct this table fills */
    const gf_cfg_field *fields;
    size_t nfields;
    gf_cfg_validate_fn validate; /* optional (NULL): cross-field checks */
} gf_cfg_table;

/* For validate hooks: true when `name` is a valid KV bucket (resp. stream) name by
 * gamefn/names.h; otherwise points *p at `key` with "bucket name <why>" (resp. "stream
 * name <why>") and returns false. One wording for every section that names one. */
bool gf_cfg_bucket_ok(const char *name, const char *key, gf_cfg_problem *p);
bool gf_cfg_stream_ok(const char *name, const char *key, gf_cfg_problem *p);

/* ---- errors ------------------------------------------------------------- */

typedef struct gf_config_error {
    char file[256];
    int line, column;  /* 1-based; 0 when not tied to a place in the file */
    char key[128];     /* dotted path, e.g. "jetstream.streams[1].max_age" */
    char text[256];    /* what is wrong */
    char message[768]; /* "file:line:column: key 'k': text", ready to print */
} gf_config_error;

/* ---- runtime sections --------------------------------------------------- */

typedef struct gf_tls_config {
    bool enabled;
    const char *ca_file;   /* trusted CAs; NULL = system default */
    const char *cert_file; /* client certificate chain (mutual TLS) */
    const char *key_file;
} gf_tls_config;

/* How a connection writes what it publishes (docs/CONFIG.md, nats.flush). */
typedef enum gf_nats_flush {
    GF_NATS_FLUSH_IMMEDIATE, /* one write per message (nats.c SendAsap): lowest latency */
    GF_NATS_FLUSH_BATCHED,   /* nats.c's flusher thread, about one write per millisecond */
} gf_nats_flush;

typedef struct gf_nats_config {
    const char **servers; /* at least one URL */
    size_t servers_len;
    const char *credentials; /* .creds file (JWT + seed) */
    const char *nkey_seed;   /* file holding an nkey seed */
    const char *user;
    const char *password;
    gf_tls_config tls;
    int64_t connect_timeout_ms;
    int64_t reconnect_wait_ms;     /* base delay between attempts */
    int64_t reconnect_jitter_ms;   /* + uniform random jitter up to this */
    int64_t reconnect_max_wait_ms; /* backoff doubles up to this */
    int64_t ping_interval_ms;
    int64_t reconnect_buffer; /* bytes buffered while disconnected */
    int64_t api_timeout_ms;   /* JetStream API calls */
    const char *inbox_prefix; /* reply subjects of our requests; NULL = nats.c's "_INBOX" */
    int flush;                /* gf_nats_flush */
} gf_nats_config;

typedef struct gf_log_config {
    int level; /* gf_log_level */
} gf_log_config;

typedef struct gf_runtime_config {
    const char *instance_id;     /* NULL -> generated at start */
    int64_t drain_timeout_ms;    /* bound on shutdown after SIGTERM */
    int64_t max_in_flight;       /* pull endpoints: handlers running at once per endpoint */
    int64_t fetch_batch;         /* pull consumers: messages per fetch */
    int64_t fetch_expiry_ms;     /* pull consumers: how long one fetch waits */
    int64_t heartbeat_ms;        /* not used with nats.c 3.4.1 (docs/NATS-FACTS.md §3) */
    const char **reply_prefixes; /* replies are published only under these ("_INBOX.") */
    size_t reply_prefixes_len;
    int64_t request_deadline_ms; /* a request handler running longer is stuck; 0 = none */
    int64_t max_queued_requests; /* per request endpoint; more are dropped (and counted) */
} gf_runtime_config;

typedef enum gf_retention {
    GF_RETENTION_LIMITS,
    GF_RETENTION_INTEREST,
    GF_RETENTION_WORKQUEUE
} gf_retention;
typedef enum gf_storage { GF_STORAGE_FILE, GF_STORAGE_MEMORY } gf_storage;
typedef enum gf_discard { GF_DISCARD_OLD, GF_DISCARD_NEW } gf_discard;
typedef enum gf_deliver { GF_DELIVER_ALL, GF_DELIVER_NEW, GF_DELIVER_LAST } gf_deliver;
/* How a consumer's messages are acknowledged: each one (explicit), or every message up
 * to the one acked (all: partitioned groups only, whose batches finish in order). */
typedef enum gf_ack_policy { GF_ACK_EXPLICIT, GF_ACK_ALL } gf_ack_policy;

typedef struct gf_stream_config {
    const char *name;
    const char *description;
    const char **subjects; /* may be empty when sources or mirror is set */
    size_t subjects_len;
    const char **sources; /* streams whose messages it copies (e.g. EVENTS), in order */
    size_t sources_len;
    const char *mirror; /* a stream it is a copy of (e.g. KV_tickets); NULL = none */
    int retention;      /* gf_retention */
    int storage;        /* gf_storage */
    int discard;        /* gf_discard */
    int64_t replicas;
    int64_t max_age_ms;          /* 0 = unlimited */
    int64_t duplicate_window_ms; /* Nats-Msg-Id dedup window */
    int64_t max_msgs;            /* 0 = unlimited */
    int64_t max_bytes;           /* 0 = unlimited */
    int64_t max_msg_size;        /* 0 = server default */
    bool allow_direct;           /* direct gets ($JS.API.DIRECT.GET.<name>) answered */
} gf_stream_config;

typedef struct gf_consumer_config {
    const char *stream;
    const char *name; /* durable name */
    const char *description;
    const char *filter_subject; /* NULL = whole stream */
    int deliver;                /* gf_deliver */
    int64_t ack_wait_ms;
    int64_t max_deliver; /* -1 = unlimited */
    int64_t *backoff_ms; /* redelivery delays; may be empty */
    size_t backoff_ms_len;
    int64_t max_ack_pending;
    int64_t max_waiting;
    /* A partitioned consumer group (partitions > 0): `name` is the group and this entry is
     * the template of `partitions` durables "<name>-p<NN>" (NN = 00..partitions-1), each
     * filtered on filter_subject with "{partition}" replaced by its number, owned by one
     * replica at a time through the lease "part.<name>.<NN>" in lease_bucket. */
    int64_t partitions; /* 0 = a plain consumer */
    const char *lease_bucket;
    int64_t lease_ttl_ms;
    /* Partitioned groups only: the ack policy (gf_ack_policy), the largest batch (0 =
     * runtime.fetch_batch), and how long after a short fetch the next one waits, so
     * that more events share a batch (and its writes). */
    int ack_policy;
    int64_t fetch_batch;
    int64_t linger_ms;
} gf_consumer_config;

typedef struct gf_bucket_config {
    const char *name;
    const char *description;
    int64_t history; /* 1..64 */
    int64_t ttl_ms;  /* 0 = keys never expire */
    int storage;     /* gf_storage */
    int64_t replicas;
    int64_t max_value_size; /* 0 = unlimited */
    int64_t max_bytes;      /* 0 = unlimited */
} gf_bucket_config;

typedef struct gf_jetstream_config {
    gf_stream_config *streams;
    size_t streams_len;
    gf_consumer_config *consumers;
    size_t consumers_len;
    gf_bucket_config *buckets;
    size_t buckets_len;
} gf_jetstream_config;

/* A function's own section: `functions.<name>`, parsed with `table`. */
typedef struct gf_config_section {
    const char *name;
    const gf_cfg_table *table;
} gf_config_section;

typedef struct gf_config {
    const char *path; /* the file it came from */
    gf_nats_config nats;
    gf_log_config log;
    gf_runtime_config runtime;
    gf_jetstream_config jetstream;
    const void *function; /* struct filled by the section's table (defaults if absent); NULL
                             if no section was asked for */
    struct gf_config_arena *arena; /* private: owns all memory */
} gf_config;

/* Reads and validates `path`. `section` may be NULL. On error returns GF_ERR_CONFIG
 * (or GF_ERR_IO / GF_ERR_NOMEM), fills *err, and *out stays NULL. */
gf_err gf_config_load(const char *path, const gf_config_section *section, gf_config **out,
                      gf_config_error *err);

/* Same, and every entry under `functions:` with the table of its name in `sections`
 * (n of them; entries of those names that are absent are not checked). An entry whose
 * name is not among them is an error: "unknown function 'x'", with the closest name
 * suggested. cfg->function stays NULL. For `gamefn check-config`, which links every
 * function's table (tools/gamefn/functions.c). */
gf_err gf_config_load_all(const char *path, const gf_config_section *sections, size_t n,
                          gf_config **out, gf_config_error *err);

/* Same as gf_config_load, from a string; `name` stands for the file name in error messages.
 * Environment overrides are applied too. */
gf_err gf_config_load_string(const char *name, const char *yaml, size_t len,
                             const gf_config_section *section, gf_config **out,
                             gf_config_error *err);

void gf_config_free(gf_config *cfg);

/* Lookups by name in the jetstream section; NULL when absent. */
const gf_stream_config *gf_config_stream(const gf_config *cfg, const char *name);
const gf_consumer_config *gf_config_consumer(const gf_config *cfg, const char *stream,
                                             const char *name);
const gf_bucket_config *gf_config_bucket(const gf_config *cfg, const char *name);

/* The names of one partition of a partitioned consumer group. */
typedef struct gf_partition_names {
    char durable[256];   /* "<group>-p<NN>", NN two digits: "leaderboard-p07" */
    char filter[512];    /* the group's filter_subject, "{partition}" -> "7" */
    char lease_key[256]; /* "part.<group>.<NN>" in the group's lease_bucket */
} gf_partition_names;

/* The plain consumer config of partition `partition` (0..group->partitions-1) of a
 * partitioned group: the group's settings with the durable name and filter of that
 * partition and partitions 0. Its strings point into *names (and the group), which
 * must outlive *out. GF_ERR_INVALID for a plain consumer, a partition out of range or
 * names that do not fit. Pure. */
gf_err gf_config_consumer_partition(const gf_consumer_config *group, unsigned partition,
                                    gf_consumer_config *out, gf_partition_names *names);

/* Parses a YAML document fragment (the value of one key) with an arbitrary table.
 * For pure modules that own a config table of their own (e.g. matchmaking queues)
 * and for tests. `out` must point to table->size bytes; strings and arrays are
 * owned by *arena_out; free with gf_config_arena_free(). An empty fragment gives every
 * default. On error *out is left untouched and *arena_out is NULL. */
struct gf_config_arena;
gf_err gf_config_parse_table(const char *name, const char *yaml, size_t len,
                             const gf_cfg_table *table, void *out,
                             struct gf_config_arena **arena_out, gf_config_error *err);
void gf_config_arena_free(struct gf_config_arena *arena);

/* Parsers for single scalars, shared with CLI flags: "250ms" -> 250, "64KiB" -> 65536.
 * Return GF_ERR_INVALID on bad syntax or overflow. */
gf_err gf_config_parse_duration_ms(const char *text, int64_t *out);
gf_err gf_config_parse_size(const char *text, int64_t *out);

/* ---- formatting, tables, reference ---------------------------------------- */

/* The inverse of the parsers, for logs and messages ("stream EVENTS: max_age is 1h on the
 * server, 7d in config"): the largest unit that is exact. 90000 -> "90s", 0 -> "0",
 * 8388608 -> "8MiB", 1000 -> "1KB", 1500 -> "1500". Negative values print as plain
 * integers. Always NUL-terminates; returns buf. */
char *gf_config_format_duration(int64_t ms, char *buf, size_t size);
char *gf_config_format_size(int64_t bytes, char *buf, size_t size);

/* The struct filled for the section passed to gf_config_load() (cfg->function). */
const void *gf_config_function(const gf_config *cfg);

/* The runtime's own tables: "" or NULL -> the top level (nats, log, runtime, jetstream);
 * "nats", "nats.tls", "log", "runtime", "jetstream", "stream", "consumer", "bucket" ->
 * that table. NULL for any other name. Static. */
const gf_cfg_table *gf_config_schema(const char *name);

/* Checks a table itself (for tests of a function's table): keys unique and non-empty,
 * every default parses and is in range, enums non-empty, OBJECT/OBJECT_LIST have `sub`,
 * lists have a count_offset, offsets inside `size`. GF_OK or GF_ERR_INVALID with *err
 * naming the field. */
gf_err gf_config_table_check(const gf_cfg_table *table, gf_config_error *err);

/* Prints `table` as a Markdown table (key | type | default | range | description), one row
 * per key, nested objects flattened as "prefix.key" and lists of objects as "key[].sub".
 * `prefix` may be NULL or "". Returns GF_ERR_IO if writing fails. */
gf_err gf_config_write_reference(FILE *f, const gf_cfg_table *table, const char *prefix);

#endif
