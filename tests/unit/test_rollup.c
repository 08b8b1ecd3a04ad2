/* Per-minute analytics rollups: counting, dimensions from events, the key bound,
 * merging across partitions in any order, the encoding and malformed bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/v1/state.pb-c.h"
#include "rollup.h"

#define MINUTE INT64_C(1796083200000) /* 2026-12-01T00:00:00Z */

static gf_rollup *make(uint32_t max_keys)
{
    gf_rollup *r = NULL;
    assert_int_equal(gf_rollup_alloc(MINUTE, max_keys, &r), GF_OK);
    return r;
}

static void counting(void **state)
{
    gf_rollup *r = NULL;
    assert_int_equal(gf_rollup_alloc(MINUTE + 1, 0, &r), GF_ERR_INVALID);
    assert_int_equal(gf_rollup_alloc(-60000, 0, &r), GF_ERR_INVALID);
    assert_int_equal(gf_rollup_alloc(MINUTE, GF_ROLLUP_KEYS_MAX + 1, &r), GF_ERR_INVALID);
    r = make(0);
    assert_int_equal(gf_rollup_minute(r), MINUTE);
    assert_int_equal(gf_rollup_minute_of(MINUTE + 59999), MINUTE);
    assert_int_equal(gf_rollup_add(r, "kill", "eu-west", "ranked", 2), GF_OK);
    assert_int_equal(gf_rollup_add(r, "kill", NULL, "", 1), GF_OK);
    assert_int_equal(gf_rollup_add(r, "score", "us-east", NULL, 4), GF_OK);
    assert_int_equal(gf_rollup_total(r), 7);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_TYPE, "kill"), 3);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_TYPE, "score"), 4);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_DATACENTER, "eu-west"), 2);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_QUEUE, "ranked"), 2);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_QUEUE, "casual"), 0);
    assert_int_equal(gf_rollup_keys(r, GF_ROLLUP_DATACENTER), 2);
    const char *name = NULL;
    uint64_t count = 0;
    assert_int_equal(gf_rollup_key(r, GF_ROLLUP_DATACENTER, 1, &name, &count), GF_OK);
    assert_string_equal(name, "us-east"); /* name order */
    assert_int_equal(gf_rollup_key(r, GF_ROLLUP_DATACENTER, 2, &name, &count), GF_ERR_NOT_FOUND);

    char long_name[40];
    memset(long_name, 'a', 33);
    long_name[33] = '\0';
    const char *bad_types[] = {NULL, "", "a.b", long_name};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++)
        assert_int_equal(gf_rollup_add(r, bad_types[i], NULL, NULL, 1), GF_ERR_INVALID);
    assert_int_equal(gf_rollup_add(r, "kill", "a b", NULL, 1), GF_ERR_INVALID);
    assert_int_equal(gf_rollup_add(r, "kill", NULL, "q*", 1), GF_ERR_INVALID);
    assert_int_equal(gf_rollup_add(r, "kill", NULL, NULL, 0), GF_ERR_INVALID);
    assert_int_equal(gf_rollup_add(r, "kill", NULL, NULL, UINT64_MAX), GF_ERR_INVALID);
    assert_int_equal(gf_rollup_total(r), 7); /* refusals changed nothing */
    gf_rollup_free(r);
    gf_rollup_free(NULL);
}

static void dimensions_from_events(void **state)
{
    gf_rollup *r = make(0);
    Gamefn__V1__GenericEvent__AttributesEntry dc =
                                                  GAMEFN__V1__GENERIC_EVENT__ATTRIBUTES_ENTRY__INIT,
                                              q = GAMEFN__V1__GENERIC_EVENT__ATTRIBUTES_ENTRY__INIT,
                                              x = GAMEFN__V1__GENERIC_EVENT__ATTRIBUTES_ENTRY__INIT;
    dc.key = "datacenter";
    dc.value = "eu-west";
    q.key = "queue";
    q.value = "not a token";
    x.key = "mode";
    x.value = "ffa";
    Gamefn__V1__GenericEvent__AttributesEntry *attrs[] = {&x, &dc, &q};
    Gamefn__V1__GenericEvent g = GAMEFN__V1__GENERIC_EVENT__INIT;
    g.attributes = attrs;
    g.n_attributes = 3;
    Gamefn__V1__GameEvent ev = GAMEFN__V1__GAME_EVENT__INIT;
    ev.event_type = "match_end";
    ev.occurred_unix_ms = MINUTE + 30000;
    ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC;
    ev.generic = &g;
    assert_int_equal(gf_rollup_add_event(r, &ev), GF_OK);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_TYPE, "match_end"), 1);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_DATACENTER, "eu-west"), 1);
    assert_int_equal(gf_rollup_keys(r, GF_ROLLUP_QUEUE), 0); /* invalid value: absent */

    Gamefn__V1__ScoreEvent score = GAMEFN__V1__SCORE_EVENT__INIT;
    ev.event_type = "score";
    ev.payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE;
    ev.score = &score;
    assert_int_equal(gf_rollup_add_event(r, &ev), GF_OK);
    assert_int_equal(gf_rollup_keys(r, GF_ROLLUP_DATACENTER), 1); /* typed: by type only */
    ev.occurred_unix_ms = MINUTE + 60000;                         /* the next minute */
    assert_int_equal(gf_rollup_add_event(r, &ev), GF_ERR_INVALID);
    ev.occurred_unix_ms = 0;
    assert_int_equal(gf_rollup_add_event(r, &ev), GF_ERR_INVALID);
    assert_int_equal(gf_rollup_total(r), 2);
    gf_rollup_free(r);
}

static void key_bound(void **state)
{
    gf_rollup *r = make(3);
    static const char *const types[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        assert_int_equal(gf_rollup_add(r, types[i], NULL, NULL, (uint64_t)i + 1), GF_OK);
    assert_int_equal(gf_rollup_keys(r, GF_ROLLUP_TYPE), 3);
    assert_int_equal(gf_rollup_other(r, GF_ROLLUP_TYPE), 4 + 5);
    assert_int_equal(gf_rollup_total(r), 15);

    /* A merge keeps the largest counts: e (5 + 20) and d (4) displace a, b. */
    gf_rollup *s = make(3);
    assert_int_equal(gf_rollup_add(s, "e", NULL, NULL, 20), GF_OK);
    assert_int_equal(gf_rollup_add(s, "d", NULL, NULL, 4), GF_OK);
    assert_int_equal(gf_rollup_add(s, "a", NULL, NULL, 1), GF_OK);
    gf_rollup *t = make(3);
    assert_int_equal(gf_rollup_merge(t, s), GF_OK);
    assert_int_equal(gf_rollup_add(t, "e", NULL, NULL, 5), GF_OK);
    assert_int_equal(gf_rollup_merge(r, t), GF_OK);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_TYPE, "e"), 25); /* r's 5 stay in other */
    assert_int_equal(gf_rollup_total(r), 15 + 30);
    uint64_t named = 0;
    for (size_t i = 0; i < gf_rollup_keys(r, GF_ROLLUP_TYPE); i++) {
        const char *name;
        uint64_t count;
        assert_int_equal(gf_rollup_key(r, GF_ROLLUP_TYPE, i, &name, &count), GF_OK);
        named += count;
    }
    assert_int_equal(named + gf_rollup_other(r, GF_ROLLUP_TYPE), gf_rollup_total(r));
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_TYPE, "d"), 4); /* t's 4 (r's in other) */
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_TYPE, "c"), 3);
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_TYPE, "b"), 0); /* 2: folded */
    assert_int_equal(gf_rollup_count(r, GF_ROLLUP_TYPE, "a"), 0); /* 1 + 1: folded */
    assert_int_equal(gf_rollup_other(r, GF_ROLLUP_TYPE), 9 + 4);

    gf_rollup *other = NULL;
    assert_int_equal(gf_rollup_alloc(MINUTE + 60000, 0, &other), GF_OK);
    assert_int_equal(gf_rollup_merge(r, other), GF_ERR_INVALID);
    gf_rollup_free(other);
    gf_rollup_free(t);
    gf_rollup_free(s);
    gf_rollup_free(r);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static bool same_bytes(const gf_rollup *a, const gf_rollup *b)
{
    uint8_t *x = NULL, *y = NULL;
    size_t xl = 0, yl = 0;
    assert_int_equal(gf_rollup_encode(a, &x, &xl), GF_OK);
    assert_int_equal(gf_rollup_encode(b, &y, &yl), GF_OK);
    bool eq = xl == yl && memcmp(x, y, xl) == 0;
    free(x);
    free(y);
    return eq;
}

/* 16 partitions count their share; merging them in any order equals counting all. */
static void merge_across_partitions(void **state)
{
    enum { P = 16 };
    uint64_t rng = 3;
    char type[16], dc[16], queue[16];
    for (int round = 0; round < 20; round++) {
        gf_rollup *all = make(0), *part[P];
        for (int p = 0; p < P; p++)
            part[p] = make(0);
        for (int i = 0; i < 2000; i++) {
            snprintf(type, sizeof type, "t%u", (unsigned)(rnd(&rng) % 12));
            snprintf(dc, sizeof dc, "dc%u", (unsigned)(rnd(&rng) % 5));
            snprintf(queue, sizeof queue, "q%u", (unsigned)(rnd(&rng) % 7));
            const char *d = rnd(&rng) % 3 ? dc : NULL, *q = rnd(&rng) % 2 ? queue : NULL;
            uint64_t n = 1 + rnd(&rng) % 3;
            assert_int_equal(gf_rollup_add(all, type, d, q, n), GF_OK);
            assert_int_equal(gf_rollup_add(part[rnd(&rng) % P], type, d, q, n), GF_OK);
        }
        int order[P];
        for (int p = 0; p < P; p++)
            order[p] = p;
        for (int p = P - 1; p > 0; p--) {
            int k = (int)(rnd(&rng) % (uint64_t)(p + 1)), tmp = order[p];
            order[p] = order[k];
            order[k] = tmp;
        }
        gf_rollup *sum = make(0);
        for (int p = 0; p < P; p++)
            assert_int_equal(gf_rollup_merge(sum, part[order[p]]), GF_OK);
        assert_true(same_bytes(all, sum));
        gf_rollup_free(sum);
        for (int p = 0; p < P; p++)
            gf_rollup_free(part[p]);
        gf_rollup_free(all);
    }
}

static void encode_decode(void **state)
{
    gf_rollup *r = make(0);
    assert_int_equal(gf_rollup_add(r, "kill", "eu-west", "ranked", 5), GF_OK);
    assert_int_equal(gf_rollup_add(r, "crash", NULL, NULL, 1), GF_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_rollup_encode(r, &buf, &len), GF_OK);
    gf_rollup *back = NULL;
    assert_int_equal(gf_rollup_decode(buf, len, 0, &back), GF_OK);
    assert_true(same_bytes(r, back));
    gf_rollup_free(back);
    assert_int_equal(gf_rollup_decode(buf, len, 1, &back), GF_ERR_INVALID); /* 2 types > 1 */
    assert_null(back);
    free(buf);
    gf_rollup *empty = make(0), *eback = NULL;
    assert_int_equal(gf_rollup_encode(empty, &buf, &len), GF_OK);
    assert_int_equal(gf_rollup_decode(buf, len, 0, &eback), GF_OK);
    assert_int_equal(gf_rollup_total(eback), 0);
    free(buf);
    gf_rollup_free(eback);
    gf_rollup_free(empty);
    gf_rollup_free(r);
}

typedef struct spec {
    int64_t minute;
    uint64_t total, other_type, other_dc;
    const char *types[3];
    uint64_t type_counts[3];
    size_t ntypes;
    const char *dc;
    uint64_t dc_count;
    bool valid;
} spec;

static void malformed_rollups(void **state)
{
    static const spec rows[] = {
        {MINUTE, 5, 0, 0, {"a", "b"}, {2, 3}, 2, "x", 5, true},
        {MINUTE + 1, 5, 0, 0, {"a", "b"}, {2, 3}, 2, NULL, 0, false},      /* unaligned */
        {-60000, 5, 0, 0, {"a", "b"}, {2, 3}, 2, NULL, 0, false},          /* negative */
        {MINUTE, 5, 0, 0, {"b", "a"}, {2, 3}, 2, NULL, 0, false},          /* unsorted */
        {MINUTE, 5, 0, 0, {"a", "a"}, {2, 3}, 2, NULL, 0, false},          /* duplicate */
        {MINUTE, 5, 0, 0, {"a", "b.c"}, {2, 3}, 2, NULL, 0, false},        /* not a token */
        {MINUTE, 5, 0, 0, {"a", ""}, {2, 3}, 2, NULL, 0, false},           /* empty name */
        {MINUTE, 5, 0, 0, {"a", "b"}, {5, 0}, 2, NULL, 0, false},          /* zero count */
        {MINUTE, 6, 0, 0, {"a", "b"}, {2, 3}, 2, NULL, 0, false},          /* types != total */
        {MINUTE, 6, 1, 0, {"a", "b"}, {2, 3}, 2, NULL, 0, true},           /* other adds up */
        {MINUTE, 5, 0, 0, {"a", "b"}, {2, 3}, 2, "x", 6, false},           /* dcs > total */
        {MINUTE, 5, 0, 1, {"a", "b"}, {2, 3}, 2, "x", 5, false},           /* dcs + other */
        {MINUTE, 5, UINT64_MAX, 0, {"a", "b"}, {2, 3}, 2, NULL, 0, false}, /* overflow */
    };
    uint8_t buf[1024];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const spec *s = &rows[i];
        Gamefn__V1__RollupCount c[4], *types[3], *dcs[1];
        for (size_t k = 0; k < s->ntypes; k++) {
            gamefn__v1__rollup_count__init(&c[k]);
            c[k].name = (char *)(uintptr_t)s->types[k];
            c[k].count = s->type_counts[k];
            types[k] = &c[k];
        }
        gamefn__v1__rollup_count__init(&c[3]);
        c[3].name = (char *)(uintptr_t)s->dc;
        c[3].count = s->dc_count;
        dcs[0] = &c[3];
        Gamefn__V1__MinuteRollup m = GAMEFN__V1__MINUTE_ROLLUP__INIT;
        m.minute_unix_ms = s->minute;
        m.total = s->total;
        m.by_type = types;
        m.n_by_type = s->ntypes;
        m.by_datacenter = dcs;
        m.n_by_datacenter = s->dc != NULL;
        m.other_type = s->other_type;
        m.other_datacenter = s->other_dc;
        size_t len = gamefn__v1__minute_rollup__pack(&m, buf);
        gf_rollup *r = NULL;
        assert_int_equal(gf_rollup_decode(buf, len, 0, &r), s->valid ? GF_OK : GF_ERR_INVALID);
        assert_true((r != NULL) == s->valid);
        gf_rollup_free(r);
    }
}

static void garbage_never_crashes(void **state)
{
    gf_rollup *r = make(0);
    assert_int_equal(gf_rollup_add(r, "kill", "eu-west", "ranked", 5), GF_OK);
    assert_int_equal(gf_rollup_add(r, "score", "us-east", "casual", 2), GF_OK);
    uint8_t *good = NULL;
    size_t len = 0;
    assert_int_equal(gf_rollup_encode(r, &good, &len), GF_OK);
    uint64_t rng = 17;
    for (int round = 0; round < 5000; round++) {
        size_t n = round < (int)len + 1 ? (size_t)round : (size_t)(rnd(&rng) % (len + 8));
        uint8_t *p = malloc(n ? n : 1); /* exact size: ASan sees any over-read */
        for (size_t i = 0; i < n; i++)
            p[i] = i < len && round % 3 ? good[i] : (uint8_t)rnd(&rng);
        if (n > 0 && round >= (int)len + 1)
            p[rnd(&rng) % n] ^= (uint8_t)(1u << (rnd(&rng) % 8));
        gf_rollup *back = NULL;
        gf_err err = gf_rollup_decode(p, n, 0, &back);
        assert_true(err == GF_OK || err == GF_ERR_INVALID);
        gf_rollup_free(back);
        free(p);
    }
    free(good);
    gf_rollup_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counting),
        cmocka_unit_test(dimensions_from_events),
        cmocka_unit_test(key_bound),
        cmocka_unit_test(merge_across_partitions),
        cmocka_unit_test(encode_decode),
        cmocka_unit_test(malformed_rollups),
        cmocka_unit_test(garbage_never_crashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
