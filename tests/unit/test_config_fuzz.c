/* Robustness: truncated prefixes of a valid file, random byte strings and random
 * mutations of a valid file never crash or leak (run under ASan), and every failure
 * is a GF_ERR_CONFIG with a message. Deterministic: fixed seeds. */
#include "test_config_util.h"

static const char sample[] =
    "# a sample with every section\n"
    "nats:\n"
    "  servers: [\"nats://127.0.0.1:4222\", \"tls://b:4443\"]\n"
    "  user: u\n"
    "  password: \"p w\"\n"
    "  tls: {enabled: true, ca_file: ca.pem, cert_file: c.pem, key_file: k.pem}\n"
    "  connect_timeout: 2s\n"
    "  reconnect_buffer: 8MiB\n"
    "log:\n"
    "  level: debug\n"
    "runtime:\n"
    "  instance_id: node-1\n"
    "  heartbeat: 1s\n"
    "jetstream:\n"
    "  streams:\n"
    "    - name: EVENTS\n"
    "      subjects: [\"gamefn.v1.evp.>\"]\n"
    "      max_age: 7d\n"
    "      duplicate_window: 10m\n"
    "    - name: MATCHES\n"
    "      subjects:\n"
    "        - gamefn.v1.match.found.>\n"
    "      retention: workqueue\n"
    "  consumers:\n"
    "    - stream: MATCHES\n"
    "      name: allocator\n"
    "      backoff: [1s, 5s, 30s]\n"
    "  buckets:\n"
    "    - {name: tickets, history: 5}\n"
    "    - name: dedup\n"
    "      ttl: 8d\n"
    "functions:\n"
    "  sink:\n"
    "    s: 'quoted: text'\n"
    "    i: 42\n"
    "    d: 2.5\n"
    "    b: true\n"
    "    dur: 1m30s\n"
    "    size: 64KiB\n"
    "    e: blue\n"
    "    list: [x, y]\n"
    "    durs: [1s, 2s]\n"
    "    obj: {x: 1, y: z}\n"
    "    kids:\n"
    "      - name: a\n"
    "        n: 3\n"
    "  other: |\n"
    "    literal block\n";

static const gf_config_section section = {.name = "sink", .table = &sink_table};

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static int setup(void **state)
{
    unset_gamefn_env();
    return 0;
}

/* Loads; checks the outcome is either a config or a clean error. */
static void try_load(const char *buf, size_t len)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    memset(&err, 0, sizeof(err));
    gf_err rc = gf_config_load_string("fuzz.yaml", buf, len, &section, &cfg, &err);
    if (rc == GF_OK) {
        assert_non_null(cfg);
        assert_non_null(cfg->function);
        assert_true(cfg->nats.servers_len >= 1);
        gf_config_free(cfg);
        return;
    }
    assert_int_equal(rc, GF_ERR_CONFIG);
    assert_null(cfg);
    assert_true(err.message[0] != '\0');
    assert_true(strlen(err.message) < sizeof(err.message));
    assert_true(err.line >= 0 && err.column >= 0);

    /* The same input through the fragment parser. */
    sink out;
    struct gf_config_arena *arena = NULL;
    if (gf_config_parse_table("fuzz.yaml", buf, len, &sink_table, &out, &arena, &err) == GF_OK)
        gf_config_arena_free(arena);
    else
        assert_null(arena);
}

static void sample_is_valid(void **state)
{
    gf_config *cfg = NULL;
    gf_config_error err;
    if (gf_config_load_string("s.yaml", sample, strlen(sample), &section, &cfg, &err) != GF_OK)
        fail_msg("%s", err.message);
    const sink *s = cfg->function;
    assert_int_equal(s->kids_len, 1);
    assert_int_equal(s->kids[0].n, 3);
    gf_config_free(cfg);
}

static void truncated_prefixes(void **state)
{
    size_t n = strlen(sample);
    int ok = 0;
    for (size_t len = 0; len <= n; len++) {
        /* A heap copy of exactly len bytes, so ASan sees any read past the end. */
        char *copy = malloc(len ? len : 1);
        assert_non_null(copy);
        memcpy(copy, sample, len);
        gf_config *cfg = NULL;
        gf_config_error err;
        gf_err rc = gf_config_load_string("p.yaml", copy, len, &section, &cfg, &err);
        assert_true(rc == GF_OK || rc == GF_ERR_CONFIG);
        ok += rc == GF_OK;
        gf_config_free(cfg);
        try_load(copy, len);
        free(copy);
    }
    /* Some prefixes end on a complete, valid document; the whole file is one. */
    assert_true(ok >= 1);
}

static void random_bytes(void **state)
{
    static const char alphabet[] = "{}[]:,-#&*!|>'\"\n \t\\%@`?~.0123456789abcxyzsdbieEk_"
                                   "\x01\x7f\xc3\xa9\xff";
    rng_state = 0x9E3779B97F4A7C15ULL;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = rng() % 160;
        char *buf = malloc(len ? len : 1);
        assert_non_null(buf);
        for (size_t i = 0; i < len; i++) {
            uint64_t r = rng();
            buf[i] = (r & 7) == 0 ? (char)(r >> 8) : alphabet[(r >> 8) % (sizeof(alphabet) - 1)];
        }
        try_load(buf, len);
        free(buf);
    }
}

static void random_mutations(void **state)
{
    size_t n = strlen(sample);
    rng_state = 0x2545F4914F6CDD1DULL;
    static const char tokens[] = ":-[]{},#'\"\n \t0aZ&*!";
    for (int iter = 0; iter < 3000; iter++) {
        char *buf = malloc(n + 16);
        assert_non_null(buf);
        memcpy(buf, sample, n);
        size_t len = n;
        int edits = 1 + (int)(rng() % 4);
        for (int e = 0; e < edits && len > 0; e++) {
            size_t at = rng() % len;
            switch (rng() % 4) {
            case 0: /* replace */
                buf[at] = tokens[rng() % (sizeof(tokens) - 1)];
                break;
            case 1: /* delete */
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                break;
            case 2: /* insert */
                if (len < n + 15) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = tokens[rng() % (sizeof(tokens) - 1)];
                    len++;
                }
                break;
            default: /* random byte */
                buf[at] = (char)rng();
                break;
            }
        }
        try_load(buf, len);
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(sample_is_valid, setup),
        cmocka_unit_test_setup(truncated_prefixes, setup),
        cmocka_unit_test_setup(random_bytes, setup),
        cmocka_unit_test_setup(random_mutations, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
