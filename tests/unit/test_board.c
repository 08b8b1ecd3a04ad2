/* The leaderboard ranking against a brute-force sorted array: random upserts and
 * removals with many ties, both orders, top / page / around / rank including the
 * edges; snapshots round trip; malformed snapshot chunks change nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "board.h"
#include "gamefn/v1/state.pb-c.h"

enum { POOL = 3000, MAXN = POOL };

typedef struct ref_entry {
    char id[GF_BOARD_ID_MAX + 1];
    int64_t score, updated;
} ref_entry;

typedef struct ref {
    gf_board_order order;
    ref_entry e[MAXN];
    size_t n;
} ref;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int cmp_tail(const ref_entry *a, const ref_entry *b)
{
    if (a->updated != b->updated)
        return a->updated < b->updated ? -1 : 1;
    return strcmp(a->id, b->id); /* tokens: byte order, a prefix first */
}

static int cmp_desc(const void *x, const void *y)
{
    const ref_entry *a = x, *b = y;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return cmp_tail(a, b);
}

static int cmp_asc(const void *x, const void *y)
{
    const ref_entry *a = x, *b = y;
    if (a->score != b->score)
        return a->score < b->score ? -1 : 1;
    return cmp_tail(a, b);
}

static void ref_sort(ref *r)
{
    qsort(r->e, r->n, sizeof r->e[0], r->order == GF_BOARD_DESCENDING ? cmp_desc : cmp_asc);
}

static ref_entry *ref_find(ref *r, const char *id)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->e[i].id, id) == 0)
            return &r->e[i];
    return NULL;
}

static void ref_upsert(ref *r, const char *id, int64_t score, int64_t updated)
{
    ref_entry *e = ref_find(r, id);
    if (e == NULL) {
        e = &r->e[r->n++];
        snprintf(e->id, sizeof e->id, "%s", id);
    }
    e->score = score;
    e->updated = updated;
}

static void ref_remove(ref *r, const char *id)
{
    ref_entry *e = ref_find(r, id);
    *e = r->e[--r->n];
}

/* Ids with shared prefixes and various lengths: p1, p10, p100, x-..., long ones. */
static void pool_id(size_t i, char out[GF_BOARD_ID_MAX + 1])
{
    char tmp[128];
    if (i % 7 == 0)
        snprintf(tmp, sizeof tmp, "long_player_id_with_many_bytes-%zu-%040zu", i, i);
    else
        snprintf(tmp, sizeof tmp, i % 3 ? "p%zu" : "x-%zu", i);
    tmp[GF_BOARD_ID_MAX] = '\0';
    memcpy(out, tmp, GF_BOARD_ID_MAX + 1);
}

static void check_entry(const gf_board_entry *got, const ref_entry *want, uint64_t rank)
{
    assert_int_equal(got->rank, rank);
    assert_string_equal(got->player_id, want->id);
    assert_int_equal(got->score, want->score);
    assert_int_equal(got->updated_unix_ms, want->updated);
}

static void check_range(const ref *r, const gf_board_entry *got, size_t n, uint64_t first)
{
    for (size_t i = 0; i < n; i++)
        check_entry(&got[i], &r->e[first - 1 + i], first + i);
}

static void check_queries(const gf_board *b, ref *r, uint64_t *rng)
{
    static gf_board_entry out[MAXN + 8];
    ref_sort(r);
    assert_int_equal(gf_board_size(b), r->n);
    size_t limit = 1 + rnd(rng) % 120;
    size_t n = gf_board_top(b, limit, out);
    assert_int_equal(n, limit < r->n ? limit : r->n);
    check_range(r, out, n, 1);
    for (int k = 0; k < 4; k++) {
        uint64_t start = 1 + rnd(rng) % (r->n + 5);
        n = gf_board_page(b, start, limit, out);
        size_t want = start > r->n ? 0 : (r->n - start + 1 < limit ? r->n - start + 1 : limit);
        assert_int_equal(n, want);
        check_range(r, out, n, start);
    }
    assert_int_equal(gf_board_page(b, 0, 10, out), 0);
    if (r->n == 0)
        return;
    size_t picks[3] = {0, r->n - 1, (size_t)(rnd(rng) % r->n)}; /* both edges, one inside */
    for (int k = 0; k < 3; k++) {
        uint64_t rank = picks[k] + 1;
        size_t before = (size_t)(rnd(rng) % 51), after = (size_t)(rnd(rng) % 51);
        assert_int_equal(gf_board_around(b, r->e[picks[k]].id, before, after, out, &n), GF_OK);
        uint64_t first = rank > before ? rank - before : 1;
        uint64_t last = rank + after < r->n ? rank + after : r->n;
        assert_int_equal(n, last - first + 1);
        check_range(r, out, n, first);
        uint64_t got = 0;
        assert_int_equal(gf_board_rank(b, r->e[picks[k]].id, &got), GF_OK);
        assert_int_equal(got, rank);
    }
}

static void random_operations(gf_board_order order, uint64_t seed, int64_t score_range)
{
    static ref r;
    r.order = order;
    r.n = 0;
    gf_board *b = NULL;
    assert_int_equal(gf_board_alloc(order, &b), GF_OK);
    uint64_t rng = seed;
    char id[GF_BOARD_ID_MAX + 1];
    for (int op = 0; op < 30000; op++) {
        pool_id((size_t)(rnd(&rng) % POOL), id);
        bool present = ref_find(&r, id) != NULL;
        if (present && rnd(&rng) % 5 == 0) {
            assert_int_equal(gf_board_remove(b, id), GF_OK);
            ref_remove(&r, id);
        } else {
            int64_t mag = (int64_t)(rnd(&rng) % ((uint64_t)score_range + 1));
            int64_t score = rnd(&rng) % 2 ? -mag : mag;
            int64_t updated = (int64_t)(rnd(&rng) % 8);
            assert_int_equal(gf_board_upsert(b, id, score, updated), GF_OK);
            ref_upsert(&r, id, score, updated);
        }
        if (op % 100 == 0)
            check_queries(b, &r, &rng);
    }
    check_queries(b, &r, &rng);
    gf_board_entry e;
    assert_int_equal(gf_board_get(b, "nobody", &e), GF_ERR_NOT_FOUND);
    assert_int_equal(gf_board_remove(b, "nobody"), GF_ERR_NOT_FOUND);
    size_t n = 0;
    assert_int_equal(gf_board_around(b, "nobody", 1, 1, &e, &n), GF_ERR_NOT_FOUND);
    assert_int_equal(n, 0);
    gf_board_free(b);
}

static void agrees_with_brute_force(void **state)
{
    random_operations(GF_BOARD_DESCENDING, 1, 5); /* ties everywhere */
    random_operations(GF_BOARD_ASCENDING, 2, 5);
    random_operations(GF_BOARD_DESCENDING, 3, GF_BOARD_SCORE_MAX);
    random_operations(GF_BOARD_ASCENDING, 4, GF_BOARD_SCORE_MAX);
}

static void ties_and_bad_input(void **state)
{
    gf_board *b = NULL;
    assert_int_equal(gf_board_alloc((gf_board_order)2, &b), GF_ERR_INVALID);
    assert_int_equal(gf_board_alloc(GF_BOARD_DESCENDING, &b), GF_OK);
    assert_int_equal(gf_board_upsert(b, "b", 10, 5), GF_OK);
    assert_int_equal(gf_board_upsert(b, "a", 10, 5), GF_OK);
    assert_int_equal(gf_board_upsert(b, "ab", 10, 5), GF_OK);
    assert_int_equal(gf_board_upsert(b, "c", 10, 4), GF_OK); /* earlier: first */
    assert_int_equal(gf_board_upsert(b, "d", 11, 9), GF_OK); /* better: above all */
    static const char *const want[] = {"d", "c", "a", "ab", "b"};
    gf_board_entry out[8];
    assert_int_equal(gf_board_top(b, 8, out), 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(out[i].player_id, want[i]);
        assert_int_equal(out[i].rank, i + 1);
    }
    char long_id[70];
    memset(long_id, 'z', 65);
    long_id[65] = '\0';
    assert_int_equal(gf_board_upsert(b, long_id, 1, 1), GF_ERR_INVALID);
    long_id[64] = '\0';
    assert_int_equal(gf_board_upsert(b, long_id, 1, 1), GF_OK);
    assert_int_equal(gf_board_upsert(b, "", 1, 1), GF_ERR_INVALID);
    assert_int_equal(gf_board_upsert(b, "a b", 1, 1), GF_ERR_INVALID);
    assert_int_equal(gf_board_upsert(b, NULL, 1, 1), GF_ERR_INVALID);
    assert_int_equal(gf_board_upsert(b, "e", GF_BOARD_SCORE_MAX + 1, 1), GF_ERR_INVALID);
    assert_int_equal(gf_board_upsert(b, "e", -GF_BOARD_SCORE_MAX - 1, 1), GF_ERR_INVALID);
    assert_int_equal(gf_board_upsert(b, "e", 0, -1), GF_ERR_INVALID);
    assert_int_equal(gf_board_remove(b, "a.b"), GF_ERR_INVALID);
    assert_int_equal(gf_board_size(b), 6);
    gf_board_free(b);
    gf_board_free(NULL);
}

/* ---- snapshots ---------------------------------------------------------------- */

static gf_board *random_board(gf_board_order order, size_t n, uint64_t seed)
{
    gf_board *b = NULL;
    assert_int_equal(gf_board_alloc(order, &b), GF_OK);
    uint64_t rng = seed;
    char id[GF_BOARD_ID_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        pool_id(i, id);
        int64_t score = (int64_t)(rnd(&rng) % 50) - 25;
        assert_int_equal(gf_board_upsert(b, id, score, (int64_t)(rnd(&rng) % 4)), GF_OK);
    }
    return b;
}

static void assert_same(const gf_board *a, const gf_board *b)
{
    static gf_board_entry x[MAXN], y[MAXN];
    assert_int_equal(gf_board_size(a), gf_board_size(b));
    size_t n = gf_board_top(a, MAXN, x);
    assert_int_equal(gf_board_top(b, MAXN, y), n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(x[i].rank, y[i].rank);
        assert_int_equal(x[i].score, y[i].score);
        assert_int_equal(x[i].updated_unix_ms, y[i].updated_unix_ms);
        assert_string_equal(x[i].player_id, y[i].player_id);
    }
}

/* Loads a board from chunks of `chunk` ranks each. */
static gf_board *reload(const gf_board *b, size_t chunk)
{
    gf_board *c = NULL;
    assert_int_equal(gf_board_alloc(gf_board_order_get(b), &c), GF_OK);
    uint64_t total = 0;
    do {
        uint8_t *buf = NULL;
        size_t len = 0;
        assert_int_equal(gf_board_snapshot_encode(b, gf_board_size(c) + 1, chunk, &buf, &len),
                         GF_OK);
        assert_int_equal(gf_board_snapshot_load(c, buf, len, &total), GF_OK);
        free(buf);
    } while (gf_board_size(c) < total);
    assert_int_equal(total, gf_board_size(b));
    return c;
}

static void snapshot_round_trip(void **state)
{
    static const size_t sizes[] = {0, 1, 2, 99, 2500};
    static const size_t chunks[] = {1, 7, 1000, GF_BOARD_CHUNK_MAX};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++)
            for (int order = 0; order < 2; order++) {
                gf_board *b = random_board((gf_board_order)order, sizes[i], i * 31 + k);
                gf_board *c = reload(b, chunks[k]);
                assert_same(b, c);
                gf_board_free(c);
                gf_board_free(b);
            }
    gf_board *b = random_board(GF_BOARD_DESCENDING, 10, 1);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_board_snapshot_encode(b, 0, 5, &buf, &len), GF_ERR_INVALID);
    assert_int_equal(gf_board_snapshot_encode(b, 12, 5, &buf, &len), GF_ERR_INVALID);
    assert_int_equal(gf_board_snapshot_encode(b, 1, 0, &buf, &len), GF_ERR_INVALID);
    assert_null(buf);
    gf_board_free(b);
}

typedef struct chunk_spec {
    uint32_t version;
    int order;
    uint64_t total, first;
    const char *ids[3];
    int64_t scores[3], times[3];
    size_t n, n_scores;
} chunk_spec;

static size_t pack_chunk(const chunk_spec *c, uint8_t *buf)
{
    Gamefn__V1__BoardSnapshotChunk m = GAMEFN__V1__BOARD_SNAPSHOT_CHUNK__INIT;
    char *ids[3];
    for (size_t i = 0; i < c->n; i++)
        ids[i] = (char *)(uintptr_t)c->ids[i];
    m.version = c->version;
    m.order = (Gamefn__V1__BoardOrder)c->order;
    m.total_players = c->total;
    m.first_rank = c->first;
    m.n_player_id = c->n;
    m.player_id = ids;
    m.n_score = c->n_scores;
    m.score = (int64_t *)(uintptr_t)c->scores;
    m.n_updated_unix_ms = c->n;
    m.updated_unix_ms = (int64_t *)(uintptr_t)c->times;
    return gamefn__v1__board_snapshot_chunk__pack(&m, buf);
}

static void malformed_chunks_change_nothing(void **state)
{
    /* The board holds a(9), b(5) descending; each chunk would go at rank 3. */
    static const chunk_spec bad[] = {
        {2, 0, 4, 3, {"c", "d"}, {4, 3}, {0, 0}, 2, 2},                       /* version */
        {1, 1, 4, 3, {"c", "d"}, {4, 3}, {0, 0}, 2, 2},                       /* order */
        {1, 0, 4, 1, {"c", "d"}, {4, 3}, {0, 0}, 2, 2},                       /* first rank */
        {1, 0, 4, 3, {"c", "d"}, {4, 3}, {0, 0}, 2, 1},                       /* columns differ */
        {1, 0, 3, 3, {"c", "d"}, {4, 3}, {0, 0}, 2, 2},                       /* total too small */
        {1, 0, 4, 3, {"c", "d.e"}, {4, 3}, {0, 0}, 2, 2},                     /* id */
        {1, 0, 4, 3, {"c", ""}, {4, 3}, {0, 0}, 2, 2},                        /* empty id */
        {1, 0, 4, 3, {"c", "d"}, {4, -(INT64_C(1) << 62) - 1}, {0, 0}, 2, 2}, /* score */
        {1, 0, 4, 3, {"c", "d"}, {4, 3}, {0, -1}, 2, 2},                      /* time */
        {1, 0, 4, 3, {"c", "d"}, {3, 4}, {0, 0}, 2, 2}, /* not in rank order */
        {1, 0, 4, 3, {"c", "d"}, {6, 3}, {0, 0}, 2, 2}, /* ranks above b */
        {1, 0, 4, 3, {"c", "c"}, {4, 3}, {0, 0}, 2, 2}, /* the same player twice */
        {1, 0, 4, 3, {"c", "a"}, {4, 3}, {0, 0}, 2, 2}, /* a is already there */
    };
    gf_board *b = NULL;
    assert_int_equal(gf_board_alloc(GF_BOARD_DESCENDING, &b), GF_OK);
    assert_int_equal(gf_board_upsert(b, "a", 9, 0), GF_OK);
    assert_int_equal(gf_board_upsert(b, "b", 5, 0), GF_OK);
    uint8_t buf[512];
    uint64_t total = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len = pack_chunk(&bad[i], buf);
        assert_int_equal(gf_board_snapshot_load(b, buf, len, &total), GF_ERR_INVALID);
        assert_int_equal(gf_board_size(b), 2);
    }
    chunk_spec good = {1, 0, 4, 3, {"c", "d"}, {4, 3}, {0, 0}, 2, 2};
    size_t len = pack_chunk(&good, buf);
    assert_int_equal(gf_board_snapshot_load(b, buf, len, &total), GF_OK);
    assert_int_equal(total, 4);
    assert_int_equal(gf_board_size(b), 4);
    gf_board_free(b);
}

static void garbage_and_truncated_chunks(void **state)
{
    gf_board *src = random_board(GF_BOARD_ASCENDING, 40, 9);
    uint8_t *good = NULL;
    size_t len = 0;
    assert_int_equal(gf_board_snapshot_encode(src, 1, 40, &good, &len), GF_OK);
    uint64_t rng = 77, total = 0;
    for (size_t cut = 0; cut <= len; cut++) {
        gf_board *b = NULL;
        assert_int_equal(gf_board_alloc(GF_BOARD_ASCENDING, &b), GF_OK);
        uint8_t *p = malloc(cut ? cut : 1); /* exact size: ASan sees any over-read */
        memcpy(p, good, cut);
        if (cut > 0 && cut % 3 == 0)
            p[rnd(&rng) % cut] ^= (uint8_t)(1u << (rnd(&rng) % 8));
        gf_err err = gf_board_snapshot_load(b, p, cut, &total);
        assert_true(err == GF_OK || err == GF_ERR_INVALID);
        if (err != GF_OK)
            assert_int_equal(gf_board_size(b), 0);
        free(p);
        gf_board_free(b);
    }
    free(good);
    gf_board_free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ties_and_bad_input),
        cmocka_unit_test(agrees_with_brute_force),
        cmocka_unit_test(snapshot_round_trip),
        cmocka_unit_test(malformed_chunks_change_nothing),
        cmocka_unit_test(garbage_and_truncated_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
