/* The runtime sections: defaults, jetstream assets and their semantic checks, a
 * function's own section, lookups, and the shipped config/gamefn.yaml. */
#include "test_config_util.h"

static int setup(void **state)
{
    unset_gamefn_env();
    return 0;
}

static gf_err load(const char *yaml, const gf_config_section *section, gf_config **cfg,
                   gf_config_error *err)
{
    *cfg = NULL;
    gf_err rc = gf_config_load_string("t.yaml", yaml, strlen(yaml), section, cfg, err);
    if (rc != GF_OK)
        assert_null(*cfg);
    return rc;
}

static void defaults_apply(void **state)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    assert_int_equal(load("log: {}\n", NULL, &cfg, &err), GF_OK);
    const gf_nats_config *n = &cfg->nats;
    assert_int_equal(n->servers_len, 1);
    assert_string_equal(n->servers[0], "nats://127.0.0.1:4222");
    assert_null(n->credentials);
    assert_null(n->nkey_seed);
    assert_null(n->user);
    assert_null(n->password);
    assert_false(n->tls.enabled);
    assert_null(n->tls.ca_file);
    assert_int_equal(n->connect_timeout_ms, 2000);
    assert_int_equal(n->reconnect_wait_ms, 250);
    assert_int_equal(n->reconnect_jitter_ms, 250);
    assert_int_equal(n->reconnect_max_wait_ms, 5000);
    assert_int_equal(n->ping_interval_ms, 20000);
    assert_int_equal(n->reconnect_buffer, 8 * 1024 * 1024);
    assert_int_equal(n->api_timeout_ms, 5000);
    assert_int_equal(n->flush, GF_NATS_FLUSH_IMMEDIATE);
    assert_int_equal(cfg->log.level, GF_LOG_INFO);
    assert_null(cfg->runtime.instance_id);
    assert_int_equal(cfg->runtime.drain_timeout_ms, 10000);
    assert_int_equal(cfg->runtime.max_in_flight, 64);
    assert_int_equal(cfg->runtime.fetch_batch, 64);
    assert_int_equal(cfg->runtime.fetch_expiry_ms, 5000);
    assert_int_equal(cfg->runtime.heartbeat_ms, 1000);
    assert_int_equal(cfg->jetstream.streams_len, 0);
    assert_int_equal(cfg->jetstream.consumers_len, 0);
    assert_int_equal(cfg->jetstream.buckets_len, 0);
    assert_null(cfg->function);
    assert_null(gf_config_function(cfg));
    assert_string_equal(cfg->path, "t.yaml");
    gf_config_free(cfg);

    assert_int_equal(load("nats: {flush: batched}\n", NULL, &cfg, &err), GF_OK);
    assert_int_equal(cfg->nats.flush, GF_NATS_FLUSH_BATCHED);
    gf_config_free(cfg);
}

static const char assets_yaml[] = "jetstream:\n"
                                  "  streams:\n"
                                  "    - name: S\n"
                                  "      subjects: [s.>]\n"
                                  "    - name: T\n"
                                  "      subjects: [t.*, u]\n"
                                  "      retention: workqueue\n"
                                  "      storage: memory\n"
                                  "      discard: new\n"
                                  "      replicas: 3\n"
                                  "      max_age: 1h\n"
                                  "      duplicate_window: 10m\n"
                                  "      max_msgs: 1000\n"
                                  "      max_bytes: 1GiB\n"
                                  "      max_msg_size: 1MiB\n"
                                  "  consumers:\n"
                                  "    - {stream: S, name: c}\n"
                                  "    - stream: T\n"
                                  "      name: c\n"
                                  "      filter_subject: t.x\n"
                                  "      deliver: new\n"
                                  "      ack_wait: 30s\n"
                                  "      max_deliver: -1\n"
                                  "      backoff: [1s, 5s, 30s]\n"
                                  "      max_ack_pending: -1\n"
                                  "      max_waiting: 1\n"
                                  "  buckets:\n"
                                  "    - name: b\n"
                                  "    - name: dedup\n"
                                  "      history: 64\n"
                                  "      ttl: 8d\n"
                                  "      storage: memory\n"
                                  "      replicas: 5\n"
                                  "      max_value_size: 64KiB\n"
                                  "      max_bytes: 10MB\n";

static void assets_and_their_defaults(void **state)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    assert_int_equal(load(assets_yaml, NULL, &cfg, &err), GF_OK);

    const gf_stream_config *s = gf_config_stream(cfg, "S");
    assert_non_null(s);
    assert_int_equal(s->subjects_len, 1);
    assert_string_equal(s->subjects[0], "s.>");
    assert_int_equal(s->retention, GF_RETENTION_LIMITS);
    assert_int_equal(s->storage, GF_STORAGE_FILE);
    assert_int_equal(s->discard, GF_DISCARD_OLD);
    assert_int_equal(s->replicas, 1);
    assert_int_equal(s->max_age_ms, 0);
    assert_int_equal(s->duplicate_window_ms, 120000);
    assert_int_equal(s->max_msgs, 0);
    assert_int_equal(s->max_bytes, 0);
    assert_null(s->description);

    const gf_stream_config *t = gf_config_stream(cfg, "T");
    assert_non_null(t);
    assert_int_equal(t->subjects_len, 2);
    assert_int_equal(t->retention, GF_RETENTION_WORKQUEUE);
    assert_int_equal(t->storage, GF_STORAGE_MEMORY);
    assert_int_equal(t->discard, GF_DISCARD_NEW);
    assert_int_equal(t->replicas, 3);
    assert_int_equal(t->max_age_ms, 3600000);
    assert_int_equal(t->duplicate_window_ms, 600000);
    assert_int_equal(t->max_msgs, 1000);
    assert_int_equal(t->max_bytes, 1073741824);
    assert_int_equal(t->max_msg_size, 1048576);

    const gf_consumer_config *c = gf_config_consumer(cfg, "S", "c");
    assert_non_null(c);
    assert_null(c->filter_subject);
    assert_int_equal(c->deliver, GF_DELIVER_ALL);
    assert_int_equal(c->ack_wait_ms, 30000);
    assert_int_equal(c->max_deliver, 5);
    assert_int_equal(c->backoff_ms_len, 0);
    assert_int_equal(c->max_ack_pending, 1000);
    assert_int_equal(c->max_waiting, 512);
    assert_int_equal(c->ack_policy, GF_ACK_EXPLICIT);
    assert_int_equal(c->fetch_batch, 0);
    assert_int_equal(c->linger_ms, 0);
    const gf_consumer_config *d = gf_config_consumer(cfg, "T", "c");
    assert_non_null(d);
    assert_true(d != c);
    assert_string_equal(d->filter_subject, "t.x");
    assert_int_equal(d->deliver, GF_DELIVER_NEW);
    assert_int_equal(d->max_deliver, -1);
    assert_int_equal(d->backoff_ms_len, 3);
    assert_int_equal(d->backoff_ms[2], 30000);
    assert_int_equal(d->max_ack_pending, -1);
    assert_int_equal(d->max_waiting, 1);

    const gf_bucket_config *b = gf_config_bucket(cfg, "b");
    assert_non_null(b);
    assert_int_equal(b->history, 1);
    assert_int_equal(b->ttl_ms, 0);
    assert_int_equal(b->storage, GF_STORAGE_FILE);
    assert_int_equal(b->replicas, 1);
    assert_int_equal(b->max_value_size, 0);
    const gf_bucket_config *dd = gf_config_bucket(cfg, "dedup");
    assert_non_null(dd);
    assert_int_equal(dd->history, 64);
    assert_int_equal(dd->ttl_ms, 8 * 86400000LL);
    assert_int_equal(dd->storage, GF_STORAGE_MEMORY);
    assert_int_equal(dd->replicas, 5);
    assert_int_equal(dd->max_value_size, 65536);
    assert_int_equal(dd->max_bytes, 10000000);

    /* lookups that miss */
    assert_null(gf_config_stream(cfg, "s"));
    assert_null(gf_config_stream(cfg, NULL));
    assert_null(gf_config_stream(NULL, "S"));
    assert_null(gf_config_consumer(cfg, "S", "d"));
    assert_null(gf_config_consumer(cfg, "U", "c"));
    assert_null(gf_config_bucket(cfg, "B"));
    gf_config_free(cfg);
}

typedef struct sem_case {
    const char *yaml;
    int line, col;
    const char *key;
    const char *text;
} sem_case;

static const sem_case semantic[] = {
    /* duplicate names */
    {"jetstream:\n  streams:\n    - {name: A, subjects: [a]}\n    - {name: A, subjects: [b]}\n", 4,
     14, "jetstream.streams[1].name", "duplicate stream name 'A' (first at line 3)"},
    {"jetstream:\n  buckets:\n    - name: b\n    - name: c\n    - name: b\n", 5, 13,
     "jetstream.buckets[2].name", "duplicate bucket name 'b' (first at line 3)"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w}\n    - {stream: S, name: w}\n",
     5, 25, "jetstream.consumers[1].name",
     "duplicate consumer on this stream: 'w' (first at line 4)"},
    {"jetstream:\n  streams: [{name: KV_b, subjects: [a]}]\n  buckets: [{name: b}]\n", 2, 20,
     "jetstream.streams[0].name", "backing stream of bucket 'b'"},
    /* partitioned consumer groups */
    {"jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  buckets: [{name: leases}]\n"
     "  consumers:\n    - {stream: S, name: g, partitions: 4, filter_subject: a.x}\n",
     5, 59, "jetstream.consumers[0].filter_subject", "needs a filter_subject with {partition}"},
    {"jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  consumers:\n"
     "    - {stream: S, name: g, filter_subject: \"a.{partition}\"}\n",
     4, 44, "jetstream.consumers[0].filter_subject", "has {partition} but partitions is not set"},
    {"jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  consumers:\n"
     "    - {stream: S, name: g, partitions: 4, filter_subject: \"a.{partition}\"}\n",
     4, 7, "jetstream.consumers[0].lease_bucket",
     "lease bucket is not in jetstream.buckets: 'leases'"},
    {"jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  buckets: [{name: leases}]\n"
     "  consumers:\n    - {stream: S, name: \"g=1\", partitions: 4, filter_subject: "
     "\"a.{partition}\"}\n",
     5, 25, "jetstream.consumers[0].name", "partitioned group name may hold only"},
    /* batch keys of partitioned groups: not on a plain consumer, a batch that cannot fill,
     * a linger past half the lease, a policy the server does not have */
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w, ack_policy: all}\n",
     4, 40, "jetstream.consumers[0].ack_policy", "is for partitioned groups only"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w, linger: 1s}\n",
     4, 36, "jetstream.consumers[0].linger", "is for partitioned groups only"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w, fetch_batch: 10}\n",
     4, 41, "jetstream.consumers[0].fetch_batch", "is for partitioned groups only"},
    {"jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  buckets: [{name: leases}]\n"
     "  consumers:\n    - {stream: S, name: g, partitions: 4, filter_subject: \"a.{partition}\", "
     "max_ack_pending: 100, fetch_batch: 101}\n",
     5, 111, "jetstream.consumers[0].fetch_batch", "101 is more than max_ack_pending (100)"},
    {"jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  buckets: [{name: leases}]\n"
     "  consumers:\n    - {stream: S, name: g, partitions: 4, filter_subject: \"a.{partition}\", "
     "lease_ttl: 4s, linger: 2001ms}\n",
     5, 99, "jetstream.consumers[0].linger", "must be at most half of lease_ttl"},
    {"jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  buckets: [{name: leases}]\n"
     "  consumers:\n    - {stream: S, name: g, partitions: 4, filter_subject: \"a.{partition}\", "
     "ack_policy: none}\n",
     5, 88, "jetstream.consumers[0].ack_policy", "is not one of: explicit, all"},
    /* a consumer on a stream that is not configured */
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n    - stream: X\n"
     "      name: w\n",
     4, 15, "jetstream.consumers[0].stream", "not in jetstream.streams: 'X'"},
    /* names NATS forbids */
    {"jetstream:\n  streams: [{name: A.B, subjects: [a]}]\n", 2, 20, "jetstream.streams[0].name",
     "stream name contains one of '.'"},
    {"jetstream:\n  streams: [{name: \"A B\", subjects: [a]}]\n", 2, 20,
     "jetstream.streams[0].name", "stream name contains whitespace"},
    {"jetstream:\n  streams: [{name: \"A*\", subjects: [a]}]\n", 2, 20, "jetstream.streams[0].name",
     "contains one of"},
    {"jetstream:\n  streams: [{name: \"A>\", subjects: [a]}]\n", 2, 20, "jetstream.streams[0].name",
     "contains one of"},
    {"jetstream:\n  streams: [{name: A/B, subjects: [a]}]\n", 2, 20, "jetstream.streams[0].name",
     "contains one of"},
    {"jetstream:\n  streams: [{name: \"A\\\\B\", subjects: [a]}]\n", 2, 20,
     "jetstream.streams[0].name", "contains one of"},
    {"jetstream:\n  streams: [{name: \"\", subjects: [a]}]\n", 2, 20, "jetstream.streams[0].name",
     "stream name is empty"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: \"my worker\"}\n",
     4, 25, "jetstream.consumers[0].name", "consumer name contains whitespace"},
    {"jetstream:\n  buckets:\n    - name: my.bucket\n", 3, 13, "jetstream.buckets[0].name",
     "bucket name may hold only letters, digits, '_' and '-'"},
    /* subjects */
    {"jetstream:\n  streams:\n    - name: S\n      subjects: []\n", 4, 17,
     "jetstream.streams[0].subjects", "a stream needs subjects, sources or a mirror"},
    {"jetstream:\n  streams:\n    - name: S\n      subjects: [a.b, \"a..b\"]\n", 4, 17,
     "jetstream.streams[0].subjects", "entry 1 has an empty token"},
    {"jetstream:\n  streams:\n    - name: S\n      subjects: [\"a.>.b\"]\n", 4, 17,
     "jetstream.streams[0].subjects", "'>' before the last token"},
    {"jetstream:\n  streams:\n    - name: S\n      subjects: [\"a.b*\"]\n", 4, 17,
     "jetstream.streams[0].subjects", "inside a token"},
    {"jetstream:\n  streams:\n    - name: S\n      subjects: [\"a b\"]\n", 4, 17,
     "jetstream.streams[0].subjects", "whitespace"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w, filter_subject: \"a.\"}\n",
     4, 44, "jetstream.consumers[0].filter_subject", "filter_subject has an empty token"},
    /* stream and consumer limits the server would refuse */
    {"jetstream:\n  streams:\n    - name: S\n      subjects: [a]\n      max_age: 1m\n", 3, 7,
     "jetstream.streams[0].duplicate_window", "must not be longer than max_age"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w, max_deliver: 0}\n",
     4, 41, "jetstream.consumers[0].max_deliver", "0 is not allowed (use -1 for unlimited)"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w, max_deliver: 2, backoff: [1s, 2s, 3s]}\n",
     4, 53, "jetstream.consumers[0].backoff", "has 3 entries, more than max_deliver (2)"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w, backoff: [1s, 0]}\n",
     4, 37, "jetstream.consumers[0].backoff", "entry 1 must be greater than 0"},
    {"jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
     "    - {stream: S, name: w, max_deliver: -2}\n",
     4, 41, "jetstream.consumers[0].max_deliver", "out of range (-1..1000000)"},
    /* nats */
    {"nats:\n  servers: []\n", 2, 12, "nats.servers", "list has 0 entries; allowed: at least 1"},
    {"nats:\n  servers: [\"nats://a:1\", \"\"]\n", 2, 12, "nats.servers", "entry 1 is empty"},
    {"nats:\n  servers: [\"nats://a:1,nats://b:2\"]\n", 2, 12, "nats.servers", "contains ','"},
    {"nats:\n  servers: [\"http://a:1\"]\n", 2, 12, "nats.servers", "scheme other than"},
    {"nats:\n  tls:\n    key_file: k.pem\n", 3, 15, "nats.tls.key_file",
     "key_file is set but cert_file is not"},
    {"nats:\n  tls:\n    enabled: true\n    cert_file: c.pem\n", 4, 16, "nats.tls.cert_file",
     "cert_file is set but key_file is not"},
    {"nats:\n  credentials: a.creds\n  user: u\n  password: p\n", 2, 16, "nats.credentials",
     "credentials cannot be combined with user/password"},
    {"nats:\n  credentials: a.creds\n  nkey_seed: s.nk\n", 2, 16, "nats.credentials",
     "combined with nkey_seed"},
    {"nats:\n  nkey_seed: s.nk\n  user: u\n", 2, 14, "nats.nkey_seed", "combined with user"},
    {"nats:\n  password: p\n", 2, 13, "nats.password", "password is set but user is not"},
    {"nats:\n  reconnect_wait: 10s\n", 2, 3, "nats.reconnect_max_wait",
     "must be at least reconnect_wait"},
    {"nats:\n  inbox_prefix: \"_INBOX.gw.\"\n", 2, 17, "nats.inbox_prefix", "no empty token"},
    {"nats:\n  inbox_prefix: \"_INBOX.*\"\n", 2, 17, "nats.inbox_prefix", "no wildcards"},
    /* runtime */
    {"runtime:\n  heartbeat: 3s\n", 2, 14, "runtime.heartbeat", "at most half of fetch_expiry"},
    {"runtime:\n  instance_id: \"a.b\"\n", 2, 16, "runtime.instance_id",
     "may hold only letters, digits"},
};

static void semantic_checks(void **state)
{
    int failures = 0;
    for (size_t i = 0; i < sizeof(semantic) / sizeof(semantic[0]); i++) {
        const sem_case *c = &semantic[i];
        gf_config *cfg = NULL;
        gf_config_error err;
        gf_err rc = load(c->yaml, NULL, &cfg, &err);
        if (rc != GF_ERR_CONFIG || err.line != c->line || err.column != c->col ||
            strcmp(err.key, c->key) != 0 || !strstr(err.text, c->text)) {
            print_error("case %zu: got rc %d '%s' (key '%s' %d:%d)\n      want '%s' (key '%s' "
                        "%d:%d)\n",
                        i, rc, err.message, err.key, err.line, err.column, c->text, c->key, c->line,
                        c->col);
            failures++;
        }
        gf_config_free(cfg);
    }
    assert_int_equal(failures, 0);
}

/* The boundaries that are accepted. */
static void semantic_boundaries_pass(void **state)
{
    static const char *const good[] = {
        "jetstream:\n  streams: [{name: S, subjects: [a]}]\n  consumers:\n"
        "    - {stream: S, name: w, max_deliver: 3, backoff: [1s, 2s, 3s]}\n",
        "jetstream:\n  streams:\n    - {name: S, subjects: [a], max_age: 2m}\n",
        "jetstream:\n  streams:\n    - {name: \"S-1_x\", subjects: [\"$JS.EVENT.ADVISORY.>\", "
        "\"*\"]}\n",
        "runtime:\n  heartbeat: 2500ms\n  fetch_expiry: 5s\n  instance_id: node-1_a\n",
        "runtime:\n  heartbeat: 0\n",
        "nats:\n  servers: [\"127.0.0.1:4222\", \"tls://h:4443\"]\n  user: u\n  password: p\n"
        "  tls: {enabled: true, cert_file: c.pem, key_file: k.pem}\n",
        "nats:\n  credentials: a.creds\n",
        "jetstream:\n  streams: [{name: S, subjects: [a]}]\n  buckets: [{name: S}]\n",
        "jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  buckets: [{name: leases}]\n"
        "  consumers:\n    - {stream: S, name: g, partitions: 100, filter_subject: "
        "\"a.{partition}.>\"}\n",
        "jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  buckets: [{name: leases}]\n"
        "  consumers:\n    - {stream: S, name: g, partitions: 4, filter_subject: "
        "\"a.{partition}.>\", ack_policy: all, fetch_batch: 1000, max_ack_pending: 1000, "
        "linger: 5s}\n",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        gf_config *cfg = NULL;
        gf_config_error err;
        if (load(good[i], NULL, &cfg, &err) != GF_OK)
            fail_msg("case %zu: %s", i, err.message);
        gf_config_free(cfg);
    }
}

/* A partitioned group's batch keys load, and each partition's durable inherits them. */
static void partitioned_batch_keys(void **state)
{
    (void)state;
    const char *yaml =
        "jetstream:\n  streams: [{name: S, subjects: [a.>]}]\n  buckets: [{name: leases}]\n"
        "  consumers:\n    - {stream: S, name: g, partitions: 4, filter_subject: "
        "\"a.{partition}.>\", ack_policy: all, fetch_batch: 800, linger: 750ms}\n";
    gf_config *cfg = NULL;
    gf_config_error err;
    if (load(yaml, NULL, &cfg, &err) != GF_OK)
        fail_msg("%s", err.message);
    const gf_consumer_config *g = gf_config_consumer(cfg, "S", "g");
    assert_non_null(g);
    gf_consumer_config p3;
    gf_partition_names names;
    assert_int_equal(gf_config_consumer_partition(g, 3, &p3, &names), GF_OK);
    assert_string_equal(p3.name, "g-p03");
    assert_int_equal(p3.ack_policy, GF_ACK_ALL);
    assert_int_equal(p3.fetch_batch, 800);
    assert_int_equal(p3.linger_ms, 750);
    gf_config_free(cfg);
}

/* A function's own section, with a nested object and a list of objects. */
typedef struct fn_rule {
    const char *name;
    double weight;
} fn_rule;

typedef struct fn_cfg {
    const char *queue;
    int64_t tick_ms;
    struct {
        bool enabled;
        int64_t limit;
    } burst;
    fn_rule *rules;
    size_t rules_len;
} fn_cfg;

static const gf_cfg_field fn_rule_rows[] = {
    {.key = "name", .type = GF_CFG_STRING, .offset = offsetof(fn_rule, name), .required = true},
    {.key = "weight",
     .type = GF_CFG_DOUBLE,
     .offset = offsetof(fn_rule, weight),
     .def = "1",
     .min = 0,
     .max = 100},
};
static const gf_cfg_table fn_rule_table = {"rule", sizeof(fn_rule), fn_rule_rows, 2, NULL};

typedef struct fn_burst {
    bool enabled;
    int64_t limit;
} fn_burst;
static const gf_cfg_field fn_burst_rows[] = {
    {.key = "enabled", .type = GF_CFG_BOOL, .offset = offsetof(fn_burst, enabled), .def = "true"},
    {.key = "limit",
     .type = GF_CFG_INT,
     .offset = offsetof(fn_burst, limit),
     .def = "10",
     .min = 1,
     .max = 1000},
};
static const gf_cfg_table fn_burst_table = {"burst", sizeof(fn_burst), fn_burst_rows, 2, NULL};

static const gf_cfg_field fn_rows[] = {
    {.key = "queue", .type = GF_CFG_STRING, .offset = offsetof(fn_cfg, queue), .required = true},
    {.key = "tick",
     .type = GF_CFG_DURATION,
     .offset = offsetof(fn_cfg, tick_ms),
     .def = "1s",
     .min = 10,
     .max = 60000},
    {.key = "burst",
     .type = GF_CFG_OBJECT,
     .offset = offsetof(fn_cfg, burst),
     .sub = &fn_burst_table},
    {.key = "rules",
     .type = GF_CFG_OBJECT_LIST,
     .offset = offsetof(fn_cfg, rules),
     .count_offset = offsetof(fn_cfg, rules_len),
     .sub = &fn_rule_table},
};
static const gf_cfg_table fn_table = {"matcher", sizeof(fn_cfg), fn_rows, 4, NULL};

static void function_section(void **state)
{
    const gf_config_section section = {.name = "matcher", .table = &fn_table};
    gf_config *cfg = NULL;
    gf_config_error err;

    const char *yaml = "functions:\n"
                       "  other:\n"
                       "    anything: [goes, here]\n" /* other functions' entries are skipped */
                       "  matcher:\n"
                       "    queue: ranked\n"
                       "    tick: 250ms\n"
                       "    burst:\n"
                       "      limit: 20\n"
                       "    rules:\n"
                       "      - name: a\n"
                       "      - {name: b, weight: 2.5}\n";
    assert_int_equal(load(yaml, &section, &cfg, &err), GF_OK);
    const fn_cfg *f = gf_config_function(cfg);
    assert_non_null(f);
    assert_ptr_equal(f, cfg->function);
    assert_string_equal(f->queue, "ranked");
    assert_int_equal(f->tick_ms, 250);
    assert_true(f->burst.enabled);
    assert_int_equal(f->burst.limit, 20);
    assert_int_equal(f->rules_len, 2);
    assert_string_equal(f->rules[0].name, "a");
    assert_true(f->rules[0].weight == 1);
    assert_true(f->rules[1].weight == 2.5);
    gf_config_free(cfg);

    /* Errors inside the section carry the full path. */
    const char *bad =
        "functions:\n  matcher:\n    queue: q\n    rules:\n      - {name: a, weigth: 1}\n";
    assert_int_equal(load(bad, &section, &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.message, "t.yaml:5:19: key 'functions.matcher.rules[0].weigth': "
                                     "unknown key 'weigth' (did you mean 'weight'?)");
    const char *range = "functions:\n  matcher:\n    queue: q\n    burst: {limit: 0}\n";
    assert_int_equal(load(range, &section, &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.key, "functions.matcher.burst.limit");
    assert_int_equal(err.line, 4);
    assert_int_equal(err.column, 20);

    /* The section absent: its required key is missing (pointing at functions:). */
    assert_int_equal(load("functions:\n  other: {}\n", &section, &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.key, "functions.matcher.queue");
    assert_string_equal(err.text, "required key is missing");
    assert_int_equal(err.line, 2);
    assert_int_equal(load("log: {}\n", &section, &cfg, &err), GF_ERR_CONFIG);
    assert_string_equal(err.key, "functions.matcher.queue");

    /* Without a section the functions are not read at all... */
    assert_int_equal(load(bad, NULL, &cfg, &err), GF_OK);
    assert_null(cfg->function);
    gf_config_free(cfg);
    /* ...and an entry with only comments gives the defaults. */
    static const gf_cfg_field opt_rows[] = {
        {.key = "tick", .type = GF_CFG_DURATION, .offset = 0, .def = "2s"},
    };
    static const gf_cfg_table opt_table = {"opt", sizeof(int64_t), opt_rows, 1, NULL};
    const gf_config_section opt = {.name = "echo", .table = &opt_table};
    assert_int_equal(load("functions:\n  echo:\n    # tick: 5s\n", &opt, &cfg, &err), GF_OK);
    assert_int_equal(*(const int64_t *)cfg->function, 2000);
    gf_config_free(cfg);
    assert_int_equal(load("log: {}\n", &opt, &cfg, &err), GF_OK);
    assert_int_equal(*(const int64_t *)cfg->function, 2000);
    gf_config_free(cfg);
}

static void shipped_config_loads(void **state)
{
    const char *root = source_dir();
    if (!root)
        skip();
    char path[1024];
    snprintf(path, sizeof(path), "%s/config/gamefn.yaml", root);
    static const gf_cfg_field echo_rows[] = {
        {.key = "delay", .type = GF_CFG_DURATION, .offset = 0, .def = "0"},
    };
    static const gf_cfg_table echo_table = {"echo", sizeof(int64_t), echo_rows, 1, NULL};
    const gf_config_section echo = {.name = "echo", .table = &echo_table};
    gf_config *cfg = NULL;
    gf_config_error err;
    if (gf_config_load(path, &echo, &cfg, &err) != GF_OK)
        fail_msg("%s", err.message);

    assert_int_equal(cfg->nats.servers_len, 1);
    assert_string_equal(cfg->nats.servers[0], "nats://127.0.0.1:4222");
    assert_int_equal(cfg->log.level, GF_LOG_INFO);
    assert_int_equal(cfg->runtime.drain_timeout_ms, 10000);

    /* The assets fixed in the design (prompts/assets.txt). */
    assert_int_equal(cfg->jetstream.streams_len, 9);
    const gf_stream_config *ev = gf_config_stream(cfg, "EVENTS");
    assert_non_null(ev);
    assert_string_equal(ev->subjects[0], "gamefn.v1.evp.>");
    assert_int_equal(ev->retention, GF_RETENTION_LIMITS);
    assert_int_equal(ev->storage, GF_STORAGE_FILE);
    assert_int_equal(ev->max_age_ms, 7 * 86400000LL);
    assert_int_equal(ev->duplicate_window_ms, 600000);
    /* At a size limit, refuse rather than drop what consumers have not read yet. */
    assert_int_equal(ev->discard, GF_DISCARD_NEW);
    const gf_stream_config *m = gf_config_stream(cfg, "MATCHES");
    assert_non_null(m);
    assert_string_equal(m->subjects[0], "gamefn.v1.match.found.>");
    assert_int_equal(m->retention, GF_RETENTION_WORKQUEUE);
    assert_int_equal(m->max_age_ms, 3600000);
    assert_int_equal(m->duplicate_window_ms, 120000);
    assert_int_equal(m->discard, GF_DISCARD_NEW);
    const gf_stream_config *dlq = gf_config_stream(cfg, "DLQ");
    assert_non_null(dlq);
    assert_string_equal(dlq->subjects[0], "gamefn.v1.dlq.>");
    assert_int_equal(dlq->max_age_ms, 30 * 86400000LL);
    assert_int_equal(dlq->duplicate_window_ms, 3600000);
    assert_int_equal(dlq->discard, GF_DISCARD_NEW);
    const gf_stream_config *snaps = gf_config_stream(cfg, "LB_SNAPSHOTS");
    assert_non_null(snaps);
    assert_string_equal(snaps->subjects[0], "gamefn.v1.lb.snapshot.>");
    const gf_stream_config *adv = gf_config_stream(cfg, "ADVISORIES");
    assert_non_null(adv);
    assert_int_equal(adv->subjects_len, 2);
    assert_string_equal(adv->subjects[0], "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>");
    assert_string_equal(adv->subjects[1], "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>");
    assert_int_equal(adv->max_age_ms, 7 * 86400000LL);
    const gf_stream_config *alerts = gf_config_stream(cfg, "ALERTS");
    assert_non_null(alerts);
    assert_string_equal(alerts->subjects[0], "gamefn.v1.alert.>");
    /* The matchmaking audit: one mirror per bucket. */
    const char *const audits[][2] = {{"AUDIT_TICKETS", "KV_tickets"},
                                     {"AUDIT_MATCHES", "KV_matches"},
                                     {"AUDIT_PLAYERS", "KV_players"}};
    for (size_t i = 0; i < 3; i++) {
        const gf_stream_config *a = gf_config_stream(cfg, audits[i][0]);
        assert_non_null(a);
        assert_string_equal(a->mirror, audits[i][1]);
        assert_int_equal(a->subjects_len, 0);
    }

    const gf_consumer_config *alloc = gf_config_consumer(cfg, "MATCHES", "allocator");
    assert_non_null(alloc);
    assert_int_equal(alloc->ack_wait_ms, 30000);
    assert_int_equal(alloc->max_deliver, 5);
    assert_int_equal(alloc->backoff_ms_len, 3);
    /* backoff[0] is the ack wait on 2.9.10: it covers the 1.5 s allocation deadline. */
    assert_int_equal(alloc->backoff_ms[0], 5000);
    assert_int_equal(alloc->backoff_ms[1], 15000);
    assert_int_equal(alloc->backoff_ms[2], 30000);
    const gf_consumer_config *lb = gf_config_consumer(cfg, "EVENTS", "leaderboard");
    assert_non_null(lb);
    assert_int_equal(lb->partitions, 16);
    assert_string_equal(lb->filter_subject, "gamefn.v1.evp.{partition}.>");
    assert_non_null(gf_config_consumer(cfg, "ADVISORIES", "dlq"));

    static const struct {
        const char *name;
        int64_t history, ttl_ms;
    } buckets[] = {{"tickets", 64, 3600000LL},
                   {"matches", 1, 86400000LL},
                   {"fleet", 1, 0},
                   {"leases", 1, 0},
                   {"players", 64, 0},
                   {"dedup", 1, 8 * 86400000LL},
                   {"leaderboard", 1, 0},
                   {"dlq_reasons", 1, 7 * 86400000LL},
                   {"lag", 1, 0},
                   {"analytics", 1, 30 * 86400000LL},
                   {"crashes", 1, 90 * 86400000LL}};
    assert_int_equal(cfg->jetstream.buckets_len, 11);
    for (size_t i = 0; i < 11; i++) {
        const gf_bucket_config *b = gf_config_bucket(cfg, buckets[i].name);
        assert_non_null(b);
        assert_int_equal(b->history, buckets[i].history);
        assert_int_equal(b->ttl_ms, buckets[i].ttl_ms);
    }
    assert_int_equal(*(const int64_t *)cfg->function, 0);
    gf_config_free(cfg);
}

/* A partitioned group expands to one plain consumer per partition. */
static void partitioned_group_expands(void **state)
{
    gf_consumer_config group = {.stream = "EVENTS",
                                .name = "leaderboard",
                                .filter_subject = "gamefn.v1.evp.{partition}.>",
                                .partitions = 16,
                                .ack_wait_ms = 10000};
    gf_consumer_config one;
    gf_partition_names names;
    assert_int_equal(gf_config_consumer_partition(&group, 7, &one, &names), GF_OK);
    assert_string_equal(one.name, "leaderboard-p07");
    assert_string_equal(one.filter_subject, "gamefn.v1.evp.7.>");
    assert_string_equal(names.lease_key, "part.leaderboard.07");
    assert_int_equal(one.partitions, 0);
    assert_int_equal(one.ack_wait_ms, 10000);
    assert_string_equal(one.stream, "EVENTS");
    assert_int_equal(gf_config_consumer_partition(&group, 16, &one, &names), GF_ERR_INVALID);
    group.partitions = 0;
    assert_int_equal(gf_config_consumer_partition(&group, 0, &one, &names), GF_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(defaults_apply, setup),
        cmocka_unit_test_setup(assets_and_their_defaults, setup),
        cmocka_unit_test_setup(semantic_checks, setup),
        cmocka_unit_test_setup(semantic_boundaries_pass, setup),
        cmocka_unit_test_setup(function_section, setup),
        cmocka_unit_test_setup(shipped_config_loads, setup),
        cmocka_unit_test(partitioned_group_expands),
        cmocka_unit_test_setup(partitioned_batch_keys, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
