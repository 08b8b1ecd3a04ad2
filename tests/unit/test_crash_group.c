/*
 * test_crash_group.c — the crashes function's pure parts: a fingerprint's group (adding,
 * merging in any order gives the same group, the sample rule, bounded build counts),
 * its encoding (round trip; malformed records refused), keys, query validation with
 * typed errors, the top and detail replies, and the UTF-8-safe cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crashes.h"
#include "gamefn/util.h"

typedef struct crash {
    Gamefn__V1__GameEvent ev;
    Gamefn__V1__CrashEvent c;
    char id[64], source[16], build[16];
} crash;

static void make(crash *k, const char *source, uint64_t seq, int64_t at, const char *stack,
                 const char *build)
{
    gamefn__v1__game_event__init(&k->ev);
    gamefn__v1__crash_event__init(&k->c);
    snprintf(k->source, sizeof k->source, "%s", source);
    snprintf(k->id, sizeof k->id, "%s-%llu", source, (unsigned long long)seq);
    snprintf(k->build, sizeof k->build, "%s", build);
    k->ev.event_id = k->id;
    k->ev.source_id = k->source;
    k->ev.source_seq = seq;
    k->ev.player_id = "p1";
    k->ev.event_type = "crash";
    k->ev.occurred_unix_ms = at;
    k->c.signature = "SIGSEGV";
    k->c.message = "boom";
    k->c.stack = (char *)(uintptr_t)stack;
    k->c.build = k->build;
    k->c.platform = "linux";
    k->ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH;
    k->ev.crash = &k->c;
}

static const char *stack_a = "#0 0x0000000000401136 in render (x=1) at /src/r.cpp:12\n"
                             "#1 0x0000000000401200 in main () at /src/main.cpp:3\n";
static const char *stack_a2 = "#0 0x00007f0000001136 in render (x=7) at /home/ci/r.cpp:99\n"
                              "#1 0x00007f0000001200 in main () at /home/ci/main.cpp:4\n";

static void fingerprint_of(const char *stack, char *hex)
{
    crash k;
    make(&k, "gs", 1, 1, stack, "b");
    gf_fingerprint fp;
    assert_int_equal(cr_fingerprint_of(&k.ev, 8, &fp, NULL, 0), GF_OK);
    memcpy(hex, fp.hex, sizeof fp.hex);
}

static void group_add_and_merge(void **state)
{
    (void)state;
    char fa[33], fa2[33];
    fingerprint_of(stack_a, fa);
    fingerprint_of(stack_a2, fa2);
    assert_string_equal(fa, fa2); /* another build, other addresses and paths: same bug */

    /* 40 crashes over 3 "partitions"; build names beyond the bound fold into other. */
    cr_group parts[3], all, other_order;
    for (int p = 0; p < 3; p++)
        assert_int_equal(cr_group_init(&parts[p], fa), GF_OK);
    crash k;
    for (int i = 0; i < 40; i++) {
        char build[16];
        snprintf(build, sizeof build, "b%02d", i % 35);
        make(&k, i % 2 ? "gs-b" : "gs-a", (uint64_t)i + 1, 1000 + (i * 7919) % 500, stack_a, build);
        assert_int_equal(cr_group_add(&parts[i % 3], &k.ev, 8), GF_OK);
    }
    assert_int_equal(cr_group_init(&all, fa), GF_OK);
    assert_int_equal(cr_group_init(&other_order, fa), GF_OK);
    for (int p = 0; p < 3; p++)
        assert_int_equal(cr_group_merge(&all, &parts[p]), GF_OK);
    for (int p = 2; p >= 0; p--)
        assert_int_equal(cr_group_merge(&other_order, &parts[p]), GF_OK);
    uint8_t *x = NULL, *y = NULL;
    size_t xl = 0, yl = 0;
    assert_int_equal(cr_group_encode(&all, &x, &xl), GF_OK);
    assert_int_equal(cr_group_encode(&other_order, &y, &yl), GF_OK);
    assert_int_equal(xl, yl);
    assert_memory_equal(x, y, xl); /* the same group in either order */
    free(x);
    free(y);
    assert_int_equal(all.count, 40);
    assert_int_equal(all.first_seen_unix_ms, 1000);
    int64_t last = 0;
    for (int i = 0; i < 40; i++)
        if (1000 + (i * 7919) % 500 > last)
            last = 1000 + (i * 7919) % 500;
    assert_int_equal(all.last_seen_unix_ms, last);
    assert_int_equal(all.sample.occurred_unix_ms, 1000); /* i = 0: the earliest */
    assert_string_equal(all.sample.event_id, "gs-a-1");
    uint64_t builds = all.builds.other;
    for (size_t i = 0; i < all.builds.n; i++)
        builds += all.builds.items[i].count;
    assert_int_equal(builds, 40);
    assert_int_equal(all.builds.n, CR_COUNTS_MAX);
    assert_int_equal(all.frames, 2);
    assert_string_equal(all.normalized, "render() at r.cpp\nmain() at main.cpp\n");

    /* a tie on time: the lower source, then the lower seq */
    cr_group tie;
    assert_int_equal(cr_group_init(&tie, fa), GF_OK);
    make(&k, "gs-b", 1, 5, stack_a, "b");
    assert_int_equal(cr_group_add(&tie, &k.ev, 8), GF_OK);
    make(&k, "gs-a", 9, 5, stack_a, "b");
    assert_int_equal(cr_group_add(&tie, &k.ev, 8), GF_OK);
    make(&k, "gs-a", 3, 5, stack_a, "b");
    assert_int_equal(cr_group_add(&tie, &k.ev, 8), GF_OK);
    assert_string_equal(tie.sample.event_id, "gs-a-3");

    /* not a crash; another fingerprint */
    make(&k, "gs-a", 1, 5, stack_a, "b");
    k.ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD__NOT_SET;
    assert_int_equal(cr_group_add(&tie, &k.ev, 8), GF_ERR_INVALID);
    cr_group b;
    assert_int_equal(cr_group_init(&b, "0123456789abcdef0123456789abcdef"), GF_OK);
    assert_int_equal(cr_group_merge(&tie, &b), GF_ERR_INVALID);
    assert_int_equal(cr_group_init(&b, "0123456789ABCDEF0123456789abcdef"), GF_ERR_INVALID);
    assert_int_equal(cr_group_init(&b, "0123"), GF_ERR_INVALID);

    for (int p = 0; p < 3; p++)
        cr_group_fini(&parts[p]);
    cr_group_fini(&all);
    cr_group_fini(&other_order);
    cr_group_fini(&tie);
}

static void encoding(void **state)
{
    (void)state;
    char fa[33];
    fingerprint_of(stack_a, fa);
    cr_group g, back;
    crash k;
    assert_int_equal(cr_group_init(&g, fa), GF_OK);
    for (int i = 0; i < 5; i++) {
        make(&k, "gs", (uint64_t)i + 1, 100 + i, stack_a, i % 2 ? "1.0" : "");
        assert_int_equal(cr_group_add(&g, &k.ev, 8), GF_OK);
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(cr_group_encode(&g, &buf, &len), GF_OK);
    assert_int_equal(cr_group_decode(buf, len, &back), GF_OK);
    uint8_t *again = NULL;
    size_t again_len = 0;
    assert_int_equal(cr_group_encode(&back, &again, &again_len), GF_OK);
    assert_int_equal(again_len, len);
    assert_memory_equal(again, buf, len);
    free(again);
    cr_group_fini(&back);

    /* malformed: each field broken in turn */
    Gamefn__V1__CrashGroup *m = gamefn__v1__crash_group__unpack(NULL, len, buf);
    assert_non_null(m);
    for (int c = 0; c < 6; c++) {
        Gamefn__V1__CrashGroup t = *m;
        Gamefn__V1__CrashCount swapped[2], *ptrs[2];
        switch (c) {
        case 0:
            t.fingerprint = "zz";
            break;
        case 1:
            t.count = 0;
            break;
        case 2:
            t.first_seen_unix_ms = t.last_seen_unix_ms + 1;
            break;
        case 3:
            t.count = 6; /* builds add up to 5 */
            break;
        case 4: /* builds out of order */
            swapped[0] = *m->builds[1];
            swapped[1] = *m->builds[0];
            ptrs[0] = &swapped[0];
            ptrs[1] = &swapped[1];
            t.builds = ptrs;
            break;
        default:
            t.frames = 65;
            break;
        }
        uint8_t *bad = NULL;
        size_t bad_len = 0;
        assert_int_equal(gf_pack(&t.base, &bad, &bad_len), GF_OK);
        if (cr_group_decode(bad, bad_len, &back) != GF_ERR_INVALID)
            fail_msg("malformed case %d accepted", c);
        free(bad);
    }
    gamefn__v1__crash_group__free_unpacked(m, NULL);
    static const uint8_t garbage[] = {0x0a, 0xff};
    assert_int_equal(cr_group_decode(garbage, sizeof garbage, &back), GF_ERR_INVALID);
    free(buf);
    cr_group_fini(&g);
}

static gf_err parse_request(const Gamefn__V1__CrashesQueryRequest *q, cr_request *r, char *field,
                            char *why)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_pack(&q->base, &buf, &len), GF_OK);
    gf_err err = cr_request_parse(buf, len, r, field, 64, why, 160);
    free(buf);
    return err;
}

static void keys_and_requests(void **state)
{
    (void)state;
    const char *fp = "0123456789abcdef0123456789abcdef";
    char key[CR_KEY_MAX], back[33];
    unsigned p = 0;
    assert_int_equal(cr_key_format(fp, 7, key, sizeof key), GF_OK);
    assert_string_equal(key, "0123456789abcdef0123456789abcdef.p07");
    assert_int_equal(cr_key_parse(key, back, &p), GF_OK);
    assert_string_equal(back, fp);
    assert_int_equal(p, 7);
    static const char *const bad_keys[] = {
        "0123456789abcdef0123456789abcdef.p7", "0123456789abcdef0123456789abcdeF.p07",
        "0123456789abcdef0123456789abcdef.q07", "0123456789abcdef0123456789abcdef.p0x", ""};
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++)
        assert_int_equal(cr_key_parse(bad_keys[i], back, &p), GF_ERR_INVALID);
    assert_int_equal(cr_key_format("nope", 1, key, sizeof key), GF_ERR_INVALID);

    Gamefn__V1__CrashesQueryRequest q = GAMEFN__V1__CRASHES_QUERY_REQUEST__INIT;
    Gamefn__V1__CrashTopQuery top = GAMEFN__V1__CRASH_TOP_QUERY__INIT;
    Gamefn__V1__CrashDetailQuery detail = GAMEFN__V1__CRASH_DETAIL_QUERY__INIT;
    cr_request r;
    char field[64], why[160];
    assert_int_equal(parse_request(&q, &r, field, why), GF_ERR_INVALID);
    assert_string_equal(field, "query");
    q.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_TOP;
    q.top = &top;
    assert_int_equal(parse_request(&q, &r, field, why), GF_ERR_INVALID);
    assert_string_equal(field, "top.limit");
    top.limit = 101;
    assert_int_equal(parse_request(&q, &r, field, why), GF_ERR_INVALID);
    top.limit = 100;
    top.since_unix_ms = -1;
    assert_int_equal(parse_request(&q, &r, field, why), GF_ERR_INVALID);
    assert_string_equal(field, "top.since_unix_ms");
    top.since_unix_ms = 5;
    assert_int_equal(parse_request(&q, &r, field, why), GF_OK);
    assert_int_equal(r.kind, CR_QUERY_TOP);
    assert_int_equal(r.limit, 100);
    q.query_case = GAMEFN__V1__CRASHES_QUERY_REQUEST__QUERY_DETAIL;
    q.detail = &detail;
    detail.fingerprint = "0123";
    assert_int_equal(parse_request(&q, &r, field, why), GF_ERR_INVALID);
    assert_string_equal(field, "detail.fingerprint");
    detail.fingerprint = (char *)(uintptr_t)fp;
    assert_int_equal(parse_request(&q, &r, field, why), GF_OK);
    assert_string_equal(r.fingerprint, fp);
    static const uint8_t garbage[] = {0xff};
    assert_int_equal(cr_request_parse(garbage, 1, &r, field, 64, why, 160), GF_ERR_INVALID);
    assert_string_equal(why, "not a CrashesQueryRequest");
}

static void top_reply(void **state)
{
    (void)state;
    cr_top *t = NULL;
    assert_int_equal(cr_top_alloc(&t), GF_OK);
    crash k;
    /* three fingerprints by signature (no frames): 5, 3 and 3 crashes */
    static const char *const sigs[] = {"A", "B", "C"};
    static const int counts[] = {5, 3, 3};
    static const int64_t last[] = {100, 200, 300};
    char hex[3][33];
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < counts[s]; i++) {
            make(&k, "gs", (uint64_t)(s * 10 + i + 1), last[s] - i, "", "b");
            k.c.signature = (char *)(uintptr_t)sigs[s];
            gf_fingerprint fp;
            assert_int_equal(cr_fingerprint_of(&k.ev, 8, &fp, NULL, 0), GF_OK);
            memcpy(hex[s], fp.hex, 33);
            cr_group g;
            assert_int_equal(cr_group_init(&g, fp.hex), GF_OK);
            assert_int_equal(cr_group_add(&g, &k.ev, 8), GF_OK);
            assert_int_equal(cr_top_add(t, &g), GF_OK); /* one group per crash: merged */
            cr_group_fini(&g);
        }
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(cr_top_reply(t, 2, 0, &buf, &len), GF_OK);
    Gamefn__V1__CrashesQueryReply *r = gamefn__v1__crashes_query_reply__unpack(NULL, len, buf);
    assert_non_null(r);
    assert_int_equal(r->fingerprints, 3);
    assert_int_equal(r->crashes, 11);
    assert_int_equal(r->n_top, 2);
    assert_string_equal(r->top[0]->fingerprint, hex[0]);
    assert_int_equal(r->top[0]->count, 5);
    assert_string_equal(r->top[1]->fingerprint, hex[2]); /* tie on 3: the later last_seen */
    assert_int_equal(r->top[1]->first_seen_unix_ms, 298);
    gamefn__v1__crashes_query_reply__free_unpacked(r, NULL);
    free(buf);
    assert_int_equal(cr_top_reply(t, 100, 150, &buf, &len), GF_OK); /* seen since 150 */
    r = gamefn__v1__crashes_query_reply__unpack(NULL, len, buf);
    assert_int_equal(r->fingerprints, 2);
    assert_int_equal(r->crashes, 6);
    gamefn__v1__crashes_query_reply__free_unpacked(r, NULL);
    free(buf);
    cr_top_free(t);

    char cut[8];
    assert_string_equal(cr_utf8_cut("abcdef", 4, cut), "abcd");
    assert_string_equal(cr_utf8_cut("ab\xc3\xa9z", 3, cut), "ab"); /* é is not split */
    assert_string_equal(cr_utf8_cut("ab\xc3\xa9z", 4, cut), "ab\xc3\xa9");
    assert_string_equal(cr_utf8_cut("a\xe2\x82\xac", 3, cut), "a");
}

static void config_table(void **state)
{
    (void)state;
    gf_config_error err;
    assert_int_equal(gf_config_table_check(&crashes_config_table, &err), GF_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(group_add_and_merge), cmocka_unit_test(encoding),
        cmocka_unit_test(keys_and_requests),   cmocka_unit_test(top_reply),
        cmocka_unit_test(config_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
