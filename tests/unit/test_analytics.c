/*
 * test_analytics.c — the analytics function's pure parts: record keys (format, parse,
 * every malformed key refused), query validation (typed errors naming the field), and
 * adding per-partition records up against a brute-force count of random events, in
 * total and per minute, for each dimension; and its config table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analytics.h"
#include "gamefn/util.h"
#include "gamefn/v1/analytics.pb-c.h"

#define T0 INT64_C(1795966320000) /* 2026-11-29T15:32:00Z */

static void keys(void **state)
{
    (void)state;
    char key[AN_KEY_MAX];
    assert_int_equal(an_key_format(T0, 7, key, sizeof key), GF_OK);
    assert_string_equal(key, "20261129.15.32.p07");
    int64_t minute = 0;
    unsigned p = 0;
    assert_int_equal(an_key_parse(key, &minute, &p), GF_OK);
    assert_int_equal(minute, T0);
    assert_int_equal(p, 7);
    assert_int_equal(an_key_format(0, 0, key, sizeof key), GF_OK);
    assert_string_equal(key, "19700101.00.00.p00");
    assert_int_equal(an_hour_filter(T0 + 59999, key, sizeof key), GF_OK);
    assert_string_equal(key, "20261129.15.>");
    assert_int_equal(an_key_format(T0 + 1, 7, key, sizeof key), GF_ERR_INVALID);
    assert_int_equal(an_key_format(-60000, 7, key, sizeof key), GF_ERR_INVALID);
    assert_int_equal(an_key_format(T0, 100, key, sizeof key), GF_ERR_INVALID);
    assert_int_equal(an_key_format(T0, 7, key, 10), GF_ERR_INVALID);
    static const char *const bad[] = {
        "",
        "20261129.15.32.p7",
        "20261129.15.32.p077",
        "20261129.15.32.q07",
        "20261130.15.32p07",
        "20261129.24.00.p07",
        "20261129.15.60.p07",
        "20260230.15.32.p07",
        "2026112.15.32.p07x",
        "+0261129.15.32.p07",
        "20261129.15.3 .p07",
        "20261129.1.32.p07 ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (an_key_parse(bad[i], &minute, &p) != GF_ERR_INVALID)
            fail_msg("'%s' parsed", bad[i]);
    assert_int_equal(an_key_parse(NULL, &minute, &p), GF_ERR_INVALID);
}

static gf_err parse(int64_t from, int64_t to, int group_by, an_request *r, char *field, char *why)
{
    Gamefn__V1__AnalyticsQueryRequest q = GAMEFN__V1__ANALYTICS_QUERY_REQUEST__INIT;
    q.from_unix_ms = from;
    q.to_unix_ms = to;
    q.group_by = (Gamefn__V1__AnalyticsGroupBy)group_by;
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_pack(&q.base, &buf, &len), GF_OK);
    gf_err err = an_request_parse(buf, len, 86400000, r, field, 64, why, 160);
    free(buf);
    return err;
}

static void requests(void **state)
{
    (void)state;
    an_request r;
    char field[64], why[160];
    assert_int_equal(parse(T0, T0 + 60000, 2, &r, field, why), GF_OK);
    assert_int_equal(r.group_by, GF_ROLLUP_QUEUE);
    assert_int_equal(parse(T0, T0 + 86400000, 0, &r, field, why), GF_OK); /* exactly the max */
    static const struct {
        int64_t from, to;
        int group_by;
        const char *field, *why;
    } bad[] = {
        {T0 + 1, T0 + 60000, 0, "from_unix_ms", "start of a minute"},
        {-60000, T0, 0, "from_unix_ms", "start of a minute"},
        {T0, T0 + 1, 0, "to_unix_ms", "after from_unix_ms"},
        {T0, T0, 0, "to_unix_ms", "after from_unix_ms"},
        {T0, T0 - 60000, 0, "to_unix_ms", "after from_unix_ms"},
        {T0, T0 + 86400000 + 60000, 0, "to_unix_ms",
         "range of 1441 minutes exceeds the maximum of 1440"},
        {T0, T0 + 60000, 3, "group_by", "unknown value 3"},
        {T0, T0 + 60000, -1, "group_by", "unknown value -1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(bad[i].from, bad[i].to, bad[i].group_by, &r, field, why),
                         GF_ERR_INVALID);
        assert_string_equal(field, bad[i].field);
        if (!strstr(why, bad[i].why))
            fail_msg("case %zu: '%s'", i, why);
    }
    static const uint8_t garbage[] = {0xff, 0xff, 0xff};
    assert_int_equal(an_request_parse(garbage, sizeof garbage, 86400000, &r, field, 64, why, 160),
                     GF_ERR_INVALID);
    assert_string_equal(field, "");
    assert_string_equal(why, "not an AnalyticsQueryRequest");
}

enum { MINUTES = 5, PARTS = 4, EVENTS = 4000 };
static const char *const types[] = {"kill", "score", "login", "crash"};
static const char *const dcs[] = {"eu-west", "us-east", NULL};
static const char *const queues[] = {"1v1", "5v5", "ffa", NULL};

typedef struct brute {
    uint64_t by[GF_ROLLUP_DIMS][MINUTES + 1][4]; /* [dim][minute or MINUTES = all][name] */
    uint64_t total[MINUTES + 1];
} brute;

static void added_up_against_brute_force(void **state)
{
    (void)state;
    gf_rollup *recs[MINUTES][PARTS] = {{NULL}};
    brute b = {0};
    srand(7);
    for (int i = 0; i < EVENTS; i++) {
        int m = rand() % MINUTES, p = rand() % PARTS;
        int t = rand() % 4, d = rand() % 3, q = rand() % 4;
        if (!recs[m][p])
            assert_int_equal(gf_rollup_alloc(T0 + m * 60000, 0, &recs[m][p]), GF_OK);
        assert_int_equal(gf_rollup_add(recs[m][p], types[t], dcs[d], queues[q], 1), GF_OK);
        for (int slot = 0; slot < 2; slot++) {
            int s = slot ? MINUTES : m;
            b.total[s]++;
            b.by[GF_ROLLUP_TYPE][s][t]++;
            if (dcs[d])
                b.by[GF_ROLLUP_DATACENTER][s][d]++;
            if (queues[q])
                b.by[GF_ROLLUP_QUEUE][s][q]++;
        }
    }
    /* A record outside the range is ignored. */
    gf_rollup *outside = NULL;
    assert_int_equal(gf_rollup_alloc(T0 + MINUTES * 60000, 0, &outside), GF_OK);
    assert_int_equal(gf_rollup_add(outside, "kill", NULL, NULL, 99), GF_OK);

    for (int dim = 0; dim < GF_ROLLUP_DIMS; dim++) {
        an_request req = {
            .from = T0, .to = T0 + MINUTES * 60000, .group_by = dim, .per_minute = true};
        an_query *q = NULL;
        assert_int_equal(an_query_alloc(&req, &q), GF_OK);
        for (int p = 0; p < PARTS; p++) /* partitions in any order */
            for (int m = MINUTES - 1; m >= 0; m--)
                if (recs[m][p])
                    assert_int_equal(an_query_add(q, recs[m][p]), GF_OK);
        assert_int_equal(an_query_add(q, outside), GF_OK);
        uint8_t *buf = NULL;
        size_t len = 0;
        assert_int_equal(an_query_reply(q, &buf, &len), GF_OK);
        an_query_free(q);
        Gamefn__V1__AnalyticsQueryReply *r =
            gamefn__v1__analytics_query_reply__unpack(NULL, len, buf);
        free(buf);
        assert_non_null(r);
        assert_int_equal(r->total, b.total[MINUTES]);
        assert_int_equal(r->n_minutes, MINUTES);
        const char *const *names = dim == 0 ? types : dim == 1 ? dcs : queues;
        uint64_t named = 0;
        for (int s = 0; s <= MINUTES; s++) {
            Gamefn__V1__AnalyticsCount **counts = s == MINUTES ? r->counts : r->minutes[s]->counts;
            size_t n = s == MINUTES ? r->n_counts : r->minutes[s]->n_counts;
            if (s < MINUTES) {
                assert_int_equal(r->minutes[s]->minute_unix_ms, T0 + s * 60000);
                assert_int_equal(r->minutes[s]->total, b.total[s]);
            }
            uint64_t sum = 0;
            for (size_t k = 0; k < n; k++) {
                if (k > 0) /* largest first */
                    assert_true(counts[k - 1]->count >= counts[k]->count);
                int which = 0;
                while (!names[which] || strcmp(names[which], counts[k]->name) != 0)
                    which++;
                assert_int_equal(counts[k]->count, b.by[dim][s][which]);
                sum += counts[k]->count;
            }
            if (s == MINUTES)
                named = sum;
        }
        assert_int_equal(r->other, 0);
        assert_int_equal(r->unattributed, r->total - named);
        if (dim == GF_ROLLUP_TYPE)
            assert_int_equal(r->unattributed, 0);
        assert_int_equal(r->records, MINUTES * PARTS);
        gamefn__v1__analytics_query_reply__free_unpacked(r, NULL);
    }
    for (int m = 0; m < MINUTES; m++)
        for (int p = 0; p < PARTS; p++)
            gf_rollup_free(recs[m][p]);
    gf_rollup_free(outside);
}

static void config_table(void **state)
{
    (void)state;
    gf_config_error err;
    assert_int_equal(gf_config_table_check(&analytics_config_table, &err), GF_OK);
    an_config c;
    struct gf_config_arena *arena = NULL;
    assert_int_equal(
        gf_config_parse_table("analytics", "", 0, &analytics_config_table, &c, &arena, &err),
        GF_OK);
    assert_string_equal(c.bucket, "analytics");
    assert_int_equal(c.max_range_ms, 86400000);
    assert_int_equal(c.events.window, 1024);
    gf_config_arena_free(arena);
    const char *bad = "bucket: \"a.b\"\n";
    assert_int_equal(gf_config_parse_table("analytics", bad, strlen(bad), &analytics_config_table,
                                           &c, &arena, &err),
                     GF_ERR_CONFIG);
    assert_non_null(strstr(err.message, "bucket"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys),
        cmocka_unit_test(requests),
        cmocka_unit_test(added_up_against_brute_force),
        cmocka_unit_test(config_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
