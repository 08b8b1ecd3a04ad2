/*
 * test_publish_reply.c — the publisher's pure pieces (runtime/src/nats/publish_int.h):
 * reading JetStream publish answers and deciding what they mean, reading a stream
 * leader's STREAM.MSG.GET answer (base64 headers included), the Msg-Id, header and
 * KV key checks, the backoff. Tables of good, boundary and malformed input; every
 * malformed input is also fed from a buffer that ends exactly at its last byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/names.h"
#include "nats/publish_int.h"

/* A heap copy without a terminating NUL, so a read past `len` is an ASan error. */
static char *exact(const char *s, size_t len)
{
    char *p = malloc(len ? len : 1);
    assert_non_null(p);
    memcpy(p, s, len);
    return p;
}

static void test_reply_parse(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        bool no_resp, status;
        gf__pub_answer answer;
        uint64_t seq;
        bool dup;
        int code, err_code;
        gf__pub_verdict verdict;
    } cases[] = {
        /* clang-format off */
        {"{\"stream\":\"S\",\"seq\":42}", false, false, GF__PUB_ACK, 42, false, 0, 0, GF__PUB_DONE},
        {"{\"stream\":\"S\",\"seq\":7,\"duplicate\":true}", false, false, GF__PUB_ACK, 7, true, 0, 0, GF__PUB_DONE},
        {"{\"stream\":\"S\",\"seq\":7,\"duplicate\":false}", false, false, GF__PUB_ACK, 7, false, 0, 0, GF__PUB_DONE},
        {"{\"stream\":\"KV_b\",\"domain\":\"d\",\"seq\":18446744073709}", false, false, GF__PUB_ACK, 18446744073709ULL, false, 0, 0, GF__PUB_DONE},
        {"{\"error\":{\"code\":400,\"err_code\":10071,\"description\":\"wrong last sequence: 5\"},\"stream\":\"S\",\"seq\":0}", false, false, GF__PUB_API_ERROR, 0, false, 400, 10071, GF__PUB_CONFLICT},
        {"{\"error\":{\"code\":400,\"err_code\":10070,\"description\":\"wrong last msg ID: x\"}}", false, false, GF__PUB_API_ERROR, 0, false, 400, 10070, GF__PUB_CONFLICT},
        {"{\"error\":{\"code\":503,\"description\":\"proposal failed\"}}", false, false, GF__PUB_API_ERROR, 0, false, 503, 0, GF__PUB_RETRY},
        {"{\"error\":{\"code\":503,\"err_code\":10008,\"description\":\"JetStream system temporarily unavailable\"}}", false, false, GF__PUB_API_ERROR, 0, false, 503, 10008, GF__PUB_RETRY},
        /* A full stream (discard new): 503 on the wire, but final. */
        {"{\"error\":{\"code\":503,\"err_code\":10077,\"description\":\"maximum messages exceeded\"},\"stream\":\"S\",\"seq\":0}", false, false, GF__PUB_API_ERROR, 0, false, 503, 10077, GF__PUB_REFUSED},
        {"{\"error\":{\"code\":500,\"err_code\":10009,\"description\":\"not leader\"}}", false, false, GF__PUB_API_ERROR, 0, false, 500, 10009, GF__PUB_RETRY},
        {"{\"error\":{\"code\":400,\"err_code\":10054,\"description\":\"message size exceeds maximum allowed\"}}", false, false, GF__PUB_API_ERROR, 0, false, 400, 10054, GF__PUB_REFUSED},
        {"{\"error\":{\"code\":400}}", false, false, GF__PUB_API_ERROR, 0, false, 400, 0, GF__PUB_REFUSED},
        {"{\"error\":{\"code\":\"503\",\"err_code\":\"x\"}}", false, false, GF__PUB_API_ERROR, 0, false, 0, 0, GF__PUB_REFUSED},
        {"", true, true, GF__PUB_NO_RESPONDERS, 0, false, 0, 0, GF__PUB_RETRY},
        {"", false, true, GF__PUB_STATUS, 0, false, 0, 0, GF__PUB_RETRY},
        {"", false, false, GF__PUB_GARBAGE, 0, false, 0, 0, GF__PUB_REFUSED},
        {"{\"stream\":\"S\"}", false, false, GF__PUB_GARBAGE, 0, false, 0, 0, GF__PUB_REFUSED},
        {"{\"stream\":\"S\",\"seq\":0}", false, false, GF__PUB_GARBAGE, 0, false, 0, 0, GF__PUB_REFUSED},
        {"{\"stream\":\"S\",\"seq\":-3}", false, false, GF__PUB_GARBAGE, 0, false, 0, 0, GF__PUB_REFUSED},
        {"{\"stream\":\"S\",\"seq\":\"12\"}", false, false, GF__PUB_GARBAGE, 0, false, 0, 0, GF__PUB_REFUSED},
        {"{\"seq\":12", false, false, GF__PUB_GARBAGE, 0, false, 0, 0, GF__PUB_REFUSED},
        {"[1,2]", false, false, GF__PUB_GARBAGE, 0, false, 0, 0, GF__PUB_REFUSED},
        {"{\"error\":\"boom\",\"seq\":3}", false, false, GF__PUB_ACK, 3, false, 0, 0, GF__PUB_DONE},
        {"\x00\x01\x02", false, false, GF__PUB_GARBAGE, 0, false, 0, 0, GF__PUB_REFUSED},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i].body);
        if (i == sizeof cases / sizeof cases[0] - 1)
            len = 3;
        char *body = exact(cases[i].body, len);
        gf__pub_reply r;
        gf__publish_reply_parse(body, len, cases[i].no_resp, cases[i].status, &r);
        free(body);
        if (r.answer != cases[i].answer)
            fail_msg("case %zu (%s): answer %d, want %d", i, cases[i].body, r.answer,
                     cases[i].answer);
        assert_int_equal(r.seq, cases[i].seq);
        assert_int_equal(r.duplicate, cases[i].dup);
        assert_int_equal(r.code, cases[i].code);
        assert_int_equal(r.err_code, cases[i].err_code);
        assert_int_equal(gf__publish_verdict(&r), cases[i].verdict);
    }
}

static void test_hdrs_parse(void **state)
{
    (void)state;
    static const struct {
        const char *block;
        gf_err err;
        bool has_id;
        const char *id;
        gf__pub_kv_op op;
    } cases[] = {
        /* clang-format off */
        {"NATS/1.0\r\nNats-Msg-Id: abc-1\r\n\r\n", GF_OK, true, "abc-1", GF__PUB_KV_PUT},
        {"NATS/1.0\r\nKV-Operation: DEL\r\nNats-Msg-Id: x\r\n\r\n", GF_OK, true, "x", GF__PUB_KV_DEL},
        {"NATS/1.0\r\nKV-Operation: PURGE\r\nNats-Rollup: sub\r\n\r\n", GF_OK, false, "", GF__PUB_KV_PURGE},
        {"NATS/1.0\r\nkv-operation:DEL\r\nnats-msg-id:  y  \r\n\r\n", GF_OK, true, "y", GF__PUB_KV_DEL},
        {"NATS/1.0\r\nKV-Operation: DELETE\r\n\r\n", GF_OK, false, "", GF__PUB_KV_PUT},
        {"NATS/1.0\r\nNats-Msg-Id-Other: z\r\n\r\n", GF_OK, false, "", GF__PUB_KV_PUT},
        {"NATS/1.0\r\n\r\n", GF_OK, false, "", GF__PUB_KV_PUT},
        {"NATS/1.0 503\r\n\r\n", GF_OK, false, "", GF__PUB_KV_PUT},
        {"NATS/1.0\nNats-Msg-Id: lf-only\n\n", GF_OK, true, "lf-only", GF__PUB_KV_PUT},
        {"NATS/1.0\r\nNats-Msg-Id: \r\n\r\n", GF_ERR_INVALID, false, "", GF__PUB_KV_PUT},
        {"NATS/1.0\r\nNats-Msg-Id: a", GF_ERR_INVALID, false, "", GF__PUB_KV_PUT},
        {"NATS/1.0", GF_ERR_INVALID, false, "", GF__PUB_KV_PUT},
        {"NATS/0.9\r\n\r\n", GF_ERR_INVALID, false, "", GF__PUB_KV_PUT},
        {"HTTP/1.1 200\r\n\r\n", GF_ERR_INVALID, false, "", GF__PUB_KV_PUT},
        {"", GF_ERR_INVALID, false, "", GF__PUB_KV_PUT},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = strlen(cases[i].block);
        char *block = exact(cases[i].block, len);
        gf__pub_stored st;
        memset(&st, 0x5a, sizeof st);
        gf_err err = gf__publish_hdrs_parse(block, len, &st);
        free(block);
        if (err != cases[i].err)
            fail_msg("case %zu: err %d, want %d", i, err, cases[i].err);
        if (err != GF_OK)
            continue;
        assert_int_equal(st.has_msg_id, cases[i].has_id);
        if (st.has_msg_id)
            assert_string_equal(st.msg_id, cases[i].id);
        assert_int_equal(st.op, cases[i].op);
    }
    /* An id one byte over the limit is refused; at the limit it is kept whole. */
    char block[GF_PUBLISH_MSG_ID_MAX + 64];
    for (int over = 0; over <= 1; over++) {
        int n = snprintf(block, sizeof block, "NATS/1.0\r\nNats-Msg-Id: %0*d\r\n\r\n",
                         GF_PUBLISH_MSG_ID_MAX + over, 7);
        gf__pub_stored st;
        assert_int_equal(gf__publish_hdrs_parse(block, (size_t)n, &st),
                         over ? GF_ERR_INVALID : GF_OK);
        if (!over)
            assert_int_equal(strlen(st.msg_id), GF_PUBLISH_MSG_ID_MAX);
    }
}

static void test_stored_parse(void **state)
{
    (void)state;
/* "NATS/1.0\r\nKV-Operation: DEL\r\nNats-Msg-Id: m-1\r\n\r\n" in base64. */
#define DEL_HDRS "TkFUUy8xLjANCktWLU9wZXJhdGlvbjogREVMDQpOYXRzLU1zZy1JZDogbS0xDQoNCg=="
    static const struct {
        const char *body;
        gf_err err;
        bool found;
        uint64_t seq;
        bool has_id;
        gf__pub_kv_op op;
    } cases[] = {
        /* clang-format off */
        {"{\"type\":\"t\",\"message\":{\"subject\":\"$KV.b.k\",\"seq\":9,\"hdrs\":\"" DEL_HDRS "\",\"time\":\"x\"}}", GF_OK, true, 9, true, GF__PUB_KV_DEL},
        {"{\"message\":{\"subject\":\"$KV.b.k\",\"seq\":3,\"data\":\"eA==\"}}", GF_OK, true, 3, false, GF__PUB_KV_PUT},
        {"{\"error\":{\"code\":404,\"err_code\":10037,\"description\":\"no message found\"}}", GF_OK, false, 0, false, GF__PUB_KV_PUT},
        {"{\"error\":{\"code\":503,\"description\":\"not ready\"}}", GF_ERR_RETRY, false, 0, false, GF__PUB_KV_PUT},
        {"{\"error\":{\"code\":400,\"err_code\":10059,\"description\":\"stream not found\"}}", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"{\"message\":{\"seq\":3,\"hdrs\":\"!!notbase64\"}}", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"{\"message\":{\"seq\":3,\"hdrs\":\"SFRUUC8xLjE=\"}}", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"{\"message\":{\"seq\":3,\"hdrs\":17}}", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"{\"message\":{\"seq\":0}}", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"{\"message\":{}}", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"{\"message\":[]}", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"{}", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"{\"message\":{\"seq\":3", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        {"", GF_ERR_NATS, false, 0, false, GF__PUB_KV_PUT},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].body);
        char *body = exact(cases[i].body, n);
        gf__pub_stored st;
        gf_err err = gf__publish_stored_parse(body, n, &st);
        free(body);
        if (err != cases[i].err)
            fail_msg("case %zu: err %d, want %d", i, err, cases[i].err);
        assert_int_equal(st.found, cases[i].found);
        if (!st.found)
            continue;
        assert_int_equal(st.seq, cases[i].seq);
        assert_int_equal(st.has_msg_id, cases[i].has_id);
        if (st.has_msg_id)
            assert_string_equal(st.msg_id, "m-1");
        assert_int_equal(st.op, cases[i].op);
    }
}

static void test_msg_id(void **state)
{
    (void)state;
    char at_max[GF_PUBLISH_MSG_ID_MAX + 2];
    memset(at_max, 'a', sizeof at_max);
    at_max[GF_PUBLISH_MSG_ID_MAX] = '\0';
    assert_true(gf__publish_msg_id_ok(at_max));
    at_max[GF_PUBLISH_MSG_ID_MAX] = 'a';
    at_max[GF_PUBLISH_MSG_ID_MAX + 1] = '\0';
    assert_false(gf__publish_msg_id_ok(at_max));
    assert_true(gf__publish_msg_id_ok("e-1:player.7/x"));
    assert_true(gf__publish_msg_id_ok("~"));
    assert_false(gf__publish_msg_id_ok(NULL));
    assert_false(gf__publish_msg_id_ok(""));
    assert_false(gf__publish_msg_id_ok("a b"));
    assert_false(gf__publish_msg_id_ok("a\r\nNats-Expected-Stream: X"));
    assert_false(gf__publish_msg_id_ok("a\t"));
    assert_false(gf__publish_msg_id_ok("caf\xc3\xa9"));
    assert_false(gf__publish_msg_id_ok("\x7f"));
}

static void test_header_ok(void **state)
{
    (void)state;
    static const char *const reserved[] = {"Nats-Msg-Id", "KV-Operation", NULL};
    static const struct {
        const char *key, *value;
        bool ok;
    } cases[] = {
        /* clang-format off */
        {"Gf-Trace", "abc def", true},
        {"X", "", true},
        {"Nats-Expected-Stream", "EVENTS", true},
        {"Gf-Tab", "a\tb", true},
        {"Gf-Utf8", "caf\xc3\xa9", true},
        {"nats-msg-id", "x", false},
        {"NATS-MSG-ID", "x", false},
        {"KV-Operation", "DEL", false},
        {"", "x", false},
        {NULL, "x", false},
        {"Gf-Null", NULL, false},
        {"Bad Key", "x", false},
        {"Bad:Key", "x", false},
        {"Gf-Crlf", "a\r\nNats-Msg-Id: y", false},
        {"Gf-Lf", "a\nb", false},
        {"Gf-Del", "a\x7f", false},
        {"Caf\xc3\xa9", "x", false},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_publish_header h = {cases[i].key, cases[i].value};
        if (gf__publish_header_ok(&h, reserved) != cases[i].ok)
            fail_msg("case %zu (%s): want %d", i, cases[i].key ? cases[i].key : "NULL",
                     cases[i].ok);
    }
    gf_publish_header h = {"Nats-Msg-Id", "x"};
    assert_true(gf__publish_header_ok(&h, NULL));
}

static void test_header_bytes(void **state)
{
    (void)state;
    const char *keys[] = {"Nats-Msg-Id", "A"};
    const char *values[] = {"id-1", ""};
    /* "NATS/1.0\r\n" + "Nats-Msg-Id: id-1\r\n" + "A: \r\n" + "\r\n" */
    assert_int_equal(gf__publish_header_bytes(keys, values, 2), 10 + 19 + 5 + 2);
    assert_int_equal(gf__publish_header_bytes(keys, values, 0), 12);
}

static void test_backoff(void **state)
{
    (void)state;
    static const struct {
        int failures, jitter;
        int64_t want;
    } cases[] = {
        {1, 100, 50},       {1, 0, 25},     {2, 100, 100},   {3, 100, 200},
        {5, 100, 800},      {6, 100, 1000}, {60, 100, 1000}, {60, 0, 500},
        {1000000, 50, 750}, {0, 100, 50},   {2, -5, 50},     {2, 300, 100},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got = gf__publish_backoff_ms(50, 1000, cases[i].failures, cases[i].jitter);
        if (got != cases[i].want)
            fail_msg("case %zu: %lld, want %lld", i, (long long)got, (long long)cases[i].want);
    }
}

static void test_kv_key(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        bool ok;
    } cases[] = {
        /* clang-format off */
        {"ticket.t-42", true}, {"a", true}, {"a/b=c_d-e.f", true}, {"A9", true},
        {"", false}, {NULL, false}, {".a", false}, {"a.", false}, {"a..b", false},
        {"a*", false}, {"a>", false}, {"a b", false}, {"a:b", false}, {"caf\xc3\xa9", false},
        {"$KV", false},
        /* clang-format on */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[GF_NAME_WHY_MAX];
        why[0] = '\0';
        bool ok = gf_name_kv_key_ok(cases[i].key, why, sizeof why);
        if (ok != cases[i].ok)
            fail_msg("case %zu (%s): want %d (%s)", i, cases[i].key ? cases[i].key : "NULL",
                     cases[i].ok, why);
        assert_true(ok || why[0] != '\0');
    }
    char longest[GF_NAME_KV_KEY_MAX + 2];
    memset(longest, 'k', sizeof longest);
    longest[GF_NAME_KV_KEY_MAX] = '\0';
    assert_true(gf_name_kv_key_ok(longest, NULL, 0));
    longest[GF_NAME_KV_KEY_MAX] = 'k';
    longest[GF_NAME_KV_KEY_MAX + 1] = '\0';
    assert_false(gf_name_kv_key_ok(longest, NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reply_parse),  cmocka_unit_test(test_hdrs_parse),
        cmocka_unit_test(test_stored_parse), cmocka_unit_test(test_msg_id),
        cmocka_unit_test(test_header_ok),    cmocka_unit_test(test_header_bytes),
        cmocka_unit_test(test_backoff),      cmocka_unit_test(test_kv_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
