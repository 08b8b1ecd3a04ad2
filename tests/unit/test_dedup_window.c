/* The dedup window: exactness against a brute-force set under a simulated producer
 * (reorder within W, lost acks, crashes with a stale persisted floor that replay
 * events long after the window moved on), the encoding, malformed bytes, pruning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/ack_floor.h"
#include "gamefn/dedup_window.h"
#include "gamefn/v1/state.pb-c.h"

enum { SOURCES = 3, KEYS = 4, SEQS = 20000 };

/* xorshift64*: the tests' own random numbers, reproducible per seed. */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

typedef struct sim_src {
    char id[16];
    gf_ack_floor ring;  /* what this incarnation knows is acknowledged */
    uint64_t cursor;    /* next seq to publish (again, after a crash) */
    uint64_t persisted; /* the floor its spool recorded */
    uint64_t early;     /* a persisted floor from early in the run */
    bool has_early;
    uint64_t pending[4096], acking[4096];
    size_t np, na;
} sim_src;

typedef struct stored {
    uint8_t src;
    uint64_t seq;
} stored;

typedef struct sim {
    uint32_t w;
    uint64_t rng;
    sim_src src[SOURCES];
    stored *stream;
    size_t n, cap;
} sim;

static void take(uint64_t *arr, size_t *n, size_t k)
{
    arr[k] = arr[--*n];
}

static void store(sim *s, uint8_t src, uint64_t seq)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->stream = realloc(s->stream, s->cap * sizeof *s->stream);
        assert_non_null(s->stream);
    }
    s->stream[s->n++] = (stored){src, seq};
}

/* One step of one producer: publish, store (maybe losing the ack), ack, persist the
 * floor, or crash. Publishing follows the window guarantee through gf_ack_floor. */
static void step(sim *s, uint8_t i)
{
    sim_src *p = &s->src[i];
    uint64_t r = rnd(&s->rng) % 1000;
    if (r < 300) {
        if (p->cursor <= SEQS && gf_ack_floor_can_send(&p->ring, p->cursor) && p->np < 4096)
            p->pending[p->np++] = p->cursor++;
    } else if (r < 650 && p->np > 0) {
        size_t k = rnd(&s->rng) % p->np;
        store(s, i, p->pending[k]);
        if (rnd(&s->rng) % 100 < 85 && p->na < 4096) { /* else the ack is lost: retry */
            p->acking[p->na++] = p->pending[k];
            take(p->pending, &p->np, k);
        }
    } else if (r < 900 && p->na > 0) {
        size_t k = rnd(&s->rng) % p->na;
        gf_ack_floor_mark(&p->ring, p->acking[k]); /* a ghost's ack may not fit: lost */
        take(p->acking, &p->na, k);
    } else if (r < 910) {
        p->persisted = p->ring.floor;
        if (!p->has_early && p->persisted >= SEQS / 10) {
            p->early = p->persisted;
            p->has_early = true;
        }
    } else if (r < 912) {
        /* Crash: acks in flight are lost, publishes in flight may still land, and
         * the new incarnation republishes from its stale persisted floor. */
        p->na = 0;
        gf_ack_floor_fini(&p->ring);
        assert_int_equal(gf_ack_floor_init(&p->ring, p->persisted, s->w), GF_OK);
        p->cursor = p->persisted + 1;
    }
}

static void simulate(sim *s)
{
    for (uint8_t i = 0; i < SOURCES; i++) {
        snprintf(s->src[i].id, sizeof s->src[i].id, "server-%u", i);
        assert_int_equal(gf_ack_floor_init(&s->src[i].ring, 0, s->w), GF_OK);
        s->src[i].cursor = 1;
    }
    for (size_t guard = 0; guard < 50000000; guard++) {
        bool done = true;
        for (uint8_t i = 0; i < SOURCES; i++)
            done = done && s->src[i].ring.floor >= SEQS;
        if (done)
            break;
        step(s, (uint8_t)(rnd(&s->rng) % SOURCES));
    }
    /* Hours later: a producer whose spool still says `early` (it failed to record
     * acks since) restarts and replays its window from there. */
    for (uint8_t i = 0; i < SOURCES; i++) {
        sim_src *p = &s->src[i];
        assert_true(p->ring.floor >= SEQS);
        assert_true(p->has_early);
        for (uint64_t q = p->early + 1; q <= p->early + s->w && q <= SEQS; q++)
            store(s, i, q);
        gf_ack_floor_fini(&p->ring);
    }
}

static unsigned key_of(uint8_t src, uint64_t seq)
{
    return (unsigned)((seq * 2654435761u + src * 40503u) >> 7) % KEYS;
}

/* Re-encodes a window and checks the copy answers the same for every seq. */
static gf_dedup_window *reload(gf_dedup_window *win, const sim *s)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    gf_dedup_window *copy = NULL;
    assert_int_equal(gf_dedup_encode(win, &buf, &len), GF_OK);
    assert_int_equal(gf_dedup_decode(buf, len, &copy), GF_OK);
    for (uint8_t i = 0; i < SOURCES; i++)
        for (uint64_t q = 1; q <= SEQS; q += 7) {
            gf_dedup_verdict a, b;
            assert_int_equal(gf_dedup_check(win, s->src[i].id, q, &a), GF_OK);
            assert_int_equal(gf_dedup_check(copy, s->src[i].id, q, &b), GF_OK);
            assert_int_equal(a, b);
        }
    free(buf);
    gf_dedup_free(win);
    return copy;
}

/* Applies the stream in order per key, and compares every verdict with the truth. */
static void consume(sim *s, uint64_t *dups, uint64_t *far)
{
    gf_dedup_window *win[KEYS];
    static bool applied[SOURCES][SEQS + 1];
    static uint64_t max[SOURCES][KEYS];
    memset(applied, 0, sizeof applied);
    memset(max, 0, sizeof max);
    for (unsigned k = 0; k < KEYS; k++)
        assert_int_equal(gf_dedup_alloc(s->w, &win[k]), GF_OK);
    for (size_t j = 0; j < s->n; j++) {
        const stored *e = &s->stream[j];
        unsigned k = key_of(e->src, e->seq);
        gf_dedup_verdict v;
        assert_int_equal(gf_dedup_check(win[k], s->src[e->src].id, e->seq, &v), GF_OK);
        assert_int_equal(v == GF_DEDUP_DUPLICATE, applied[e->src][e->seq]);
        if (v == GF_DEDUP_DUPLICATE) {
            (*dups)++;
            *far += max[e->src][k] >= e->seq + s->w; /* decided below the window */
            continue;
        }
        assert_int_equal(gf_dedup_mark(win[k], s->src[e->src].id, e->seq, 1000 + (int64_t)j),
                         GF_OK);
        applied[e->src][e->seq] = true;
        if (e->seq > max[e->src][k])
            max[e->src][k] = e->seq;
        if (j % 997 == 0)
            win[k] = reload(win[k], s);
    }
    for (uint8_t i = 0; i < SOURCES; i++)
        for (uint64_t q = 1; q <= SEQS; q++)
            assert_true(applied[i][q]); /* every event was stored, so applied once */
    for (unsigned k = 0; k < KEYS; k++)
        gf_dedup_free(win[k]);
}

static void exact_against_brute_force(void **state)
{
    static const uint32_t windows[] = {1, 2, 7, 32, 256};
    for (size_t wi = 0; wi < sizeof windows / sizeof windows[0]; wi++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            sim *s = calloc(1, sizeof *s);
            assert_non_null(s);
            s->w = windows[wi];
            s->rng = seed * 0x9E3779B97F4A7C15ULL;
            simulate(s);
            uint64_t dups = 0, far = 0;
            consume(s, &dups, &far);
            assert_true(dups > 100);
            assert_true(far > 0); /* replays long after the window moved on */
            free(s->stream);
            free(s);
        }
}

static void check_and_mark_basics(void **state)
{
    gf_dedup_window *win = NULL;
    gf_dedup_verdict v;
    assert_int_equal(gf_dedup_alloc(0, &win), GF_ERR_INVALID);
    assert_int_equal(gf_dedup_alloc(GF_DEDUP_WINDOW_MAX + 1, &win), GF_ERR_INVALID);
    assert_int_equal(gf_dedup_alloc(4, &win), GF_OK);
    assert_int_equal(gf_dedup_w(win), 4);
    assert_int_equal(gf_dedup_check(win, "s1", 10, &v), GF_OK);
    assert_int_equal(v, GF_DEDUP_NEW);
    assert_int_equal(gf_dedup_mark(win, "s1", 10, 5), GF_OK);
    assert_int_equal(gf_dedup_mark(win, "s1", 10, 5), GF_ERR_CONFLICT);
    static const struct {
        uint64_t seq;
        gf_dedup_verdict want;
    } rows[] = {{10, GF_DEDUP_DUPLICATE}, {11, GF_DEDUP_NEW},      {9, GF_DEDUP_NEW},
                {7, GF_DEDUP_NEW},        {6, GF_DEDUP_DUPLICATE}, {1, GF_DEDUP_DUPLICATE}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        assert_int_equal(gf_dedup_check(win, "s1", rows[i].seq, &v), GF_OK);
        assert_int_equal(v, rows[i].want);
    }
    assert_int_equal(gf_dedup_mark(win, "s1", 8, 6), GF_OK);
    assert_int_equal(gf_dedup_mark(win, "s1", 13, 7), GF_OK); /* window now (9, 13] */
    assert_int_equal(gf_dedup_check(win, "s1", 8, &v), GF_OK);
    assert_int_equal(v, GF_DEDUP_DUPLICATE);
    assert_int_equal(gf_dedup_check(win, "s1", 11, &v), GF_OK);
    assert_int_equal(v, GF_DEDUP_NEW);
    assert_int_equal(gf_dedup_check(win, "s2", 1, &v), GF_OK); /* other sources apart */
    assert_int_equal(v, GF_DEDUP_NEW);

    char long_id[66];
    memset(long_id, 'a', 65);
    long_id[65] = '\0';
    const char *bad[] = {NULL, "", "a.b", "a b", "é", long_id};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gf_dedup_check(win, bad[i], 1, &v), GF_ERR_INVALID);
        assert_int_equal(gf_dedup_mark(win, bad[i], 1, 1), GF_ERR_INVALID);
    }
    long_id[64] = '\0'; /* 64 bytes is fine */
    assert_int_equal(gf_dedup_mark(win, long_id, 1, 1), GF_OK);
    assert_int_equal(gf_dedup_check(win, "s1", 0, &v), GF_ERR_INVALID);
    assert_int_equal(gf_dedup_mark(win, "s1", 20, -1), GF_ERR_INVALID);
    assert_int_equal(gf_dedup_sources(win), 2);
    gf_dedup_free(win);
    gf_dedup_free(NULL);
}

static gf_dedup_window *random_window(uint64_t *rng, uint32_t w, size_t sources)
{
    gf_dedup_window *win = NULL;
    assert_int_equal(gf_dedup_alloc(w, &win), GF_OK);
    char id[32];
    for (size_t i = 0; i < sources * 40; i++) {
        snprintf(id, sizeof id, "src-%llu", (unsigned long long)(rnd(rng) % sources));
        uint64_t seq = 1 + rnd(rng) % (3 * (uint64_t)w + 5);
        gf_dedup_verdict v;
        assert_int_equal(gf_dedup_check(win, id, seq, &v), GF_OK);
        if (v == GF_DEDUP_NEW)
            assert_int_equal(gf_dedup_mark(win, id, seq, (int64_t)i), GF_OK);
    }
    return win;
}

static void encode_decode_round_trip(void **state)
{
    uint64_t rng = 99;
    for (int round = 0; round < 200; round++) {
        uint32_t w = 1 + (uint32_t)(rnd(&rng) % 300);
        gf_dedup_window *win = random_window(&rng, w, (size_t)(rnd(&rng) % 6));
        uint8_t *a = NULL, *b = NULL;
        size_t alen = 0, blen = 0;
        gf_dedup_window *copy = NULL;
        assert_int_equal(gf_dedup_encode(win, &a, &alen), GF_OK);
        assert_int_equal(gf_dedup_decode(a, alen, &copy), GF_OK);
        assert_int_equal(gf_dedup_encode(copy, &b, &blen), GF_OK);
        assert_int_equal(alen, blen);
        assert_memory_equal(a, b, alen == 0 ? 1 : alen);
        assert_int_equal(gf_dedup_w(copy), w);
        assert_int_equal(gf_dedup_sources(copy), gf_dedup_sources(win));
        free(a);
        free(b);
        gf_dedup_free(win);
        gf_dedup_free(copy);
    }
}

/* Packs a hand-made DedupWindow (possibly invalid) into buf; returns its length. */
static size_t pack(uint32_t w, Gamefn__V1__DedupSource **srcs, size_t n, uint8_t *buf)
{
    Gamefn__V1__DedupWindow m = GAMEFN__V1__DEDUP_WINDOW__INIT;
    m.window = w;
    m.sources = srcs;
    m.n_sources = n;
    assert_true(gamefn__v1__dedup_window__get_packed_size(&m) < 4096);
    return gamefn__v1__dedup_window__pack(&m, buf);
}

static void malformed_messages_are_refused(void **state)
{
    uint64_t g_ok[] = {1, 2}, g_zero[] = {0}, g_far[] = {3, 5}, g_low[] = {10};
    char long_id[66];
    memset(long_id, 'x', 65);
    long_id[65] = '\0';
    static const struct {
        const char *id1, *id2;
        uint64_t max;
        int64_t updated;
        int gaps; /* 0 none, 1 ok, 2 zero, 3 beyond W, 4 below seq 1 */
        uint32_t w;
        bool valid;
    } rows[] = {
        {"a", "b", 10, 0, 1, 8, true},        {"a", "b", 10, 0, 0, 0, false},
        {"a", "b", 10, 0, 0, 1048577, false}, {"b", "a", 10, 0, 0, 8, false}, /* unsorted */
        {"a", "a", 10, 0, 0, 8, false},                                       /* duplicate id */
        {"a", "", 10, 0, 0, 8, false},        {"a", "c.d", 10, 0, 0, 8, false},
        {"a", "b", 0, 0, 0, 8, false},        {"a", "b", 10, -1, 0, 8, false},
        {"a", "b", 10, 0, 2, 8, false},       {"a", "b", 10, 0, 3, 8, false},
        {"a", "b", 10, 0, 4, 12, false},      {"a", "b", 10, 0, 1, 4, true},
        {"a", "b", 10, 0, 1, 3, false}, /* seq 7 is not above 10 - 3 */
    };
    uint8_t buf[4096];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        Gamefn__V1__DedupSource s1 = GAMEFN__V1__DEDUP_SOURCE__INIT;
        Gamefn__V1__DedupSource s2 = GAMEFN__V1__DEDUP_SOURCE__INIT;
        s1.source_id = (char *)(uintptr_t)rows[i].id1;
        s1.max_seq = 5;
        s2.source_id = (char *)(uintptr_t)rows[i].id2;
        s2.max_seq = rows[i].max;
        s2.updated_unix_ms = rows[i].updated;
        uint64_t *gaps[] = {NULL, g_ok, g_zero, g_far, g_low};
        size_t ngaps[] = {0, 2, 1, 2, 1};
        s2.gaps = gaps[rows[i].gaps];
        s2.n_gaps = ngaps[rows[i].gaps];
        Gamefn__V1__DedupSource *srcs[] = {&s1, &s2};
        size_t len = pack(rows[i].w, srcs, 2, buf);
        gf_dedup_window *win = NULL;
        assert_int_equal(gf_dedup_decode(buf, len, &win), rows[i].valid ? GF_OK : GF_ERR_INVALID);
        assert_true((win != NULL) == rows[i].valid);
        gf_dedup_free(win);
    }
    /* A 65-byte id. */
    Gamefn__V1__DedupSource s = GAMEFN__V1__DEDUP_SOURCE__INIT;
    s.source_id = long_id;
    s.max_seq = 1;
    Gamefn__V1__DedupSource *one[] = {&s};
    gf_dedup_window *win = NULL;
    size_t len = pack(8, one, 1, buf);
    assert_int_equal(gf_dedup_decode(buf, len, &win), GF_ERR_INVALID);
}

static void garbage_and_truncation_never_crash(void **state)
{
    uint64_t rng = 5;
    gf_dedup_window *win = random_window(&rng, 64, 5);
    uint8_t *good = NULL;
    size_t len = 0;
    assert_int_equal(gf_dedup_encode(win, &good, &len), GF_OK);
    for (size_t cut = 0; cut < len; cut++) {
        /* An exact heap copy: any over-read past `cut` is caught by ASan. */
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, good, cut);
        gf_dedup_window *copy = NULL;
        gf_err err = gf_dedup_decode(p, cut, &copy);
        assert_true(err == GF_OK || err == GF_ERR_INVALID);
        gf_dedup_free(copy);
        free(p);
    }
    for (int round = 0; round < 5000; round++) {
        size_t n = (size_t)(rnd(&rng) % 64);
        uint8_t *p = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)rnd(&rng);
        if (n > 0 && round % 2 == 0) /* start like a real message */
            memcpy(p, good, n < len ? n : len);
        if (n > 4 && round % 4 == 0)
            p[n / 2] ^= (uint8_t)(1u << (rnd(&rng) % 8));
        gf_dedup_window *copy = NULL;
        gf_err err = gf_dedup_decode(p, n, &copy);
        assert_true(err == GF_OK || err == GF_ERR_INVALID);
        gf_dedup_free(copy);
        free(p);
    }
    free(good);
    gf_dedup_free(win);
}

static void prune_drops_idle_sources(void **state)
{
    gf_dedup_window *win = NULL;
    gf_dedup_verdict v;
    assert_int_equal(gf_dedup_alloc(16, &win), GF_OK);
    assert_int_equal(gf_dedup_mark(win, "a", 1, 100), GF_OK);
    assert_int_equal(gf_dedup_mark(win, "b", 1, 200), GF_OK);
    assert_int_equal(gf_dedup_mark(win, "c", 1, 300), GF_OK);
    assert_int_equal(gf_dedup_mark(win, "a", 2, 400), GF_OK); /* a is active again */
    assert_int_equal(gf_dedup_prune(win, 250), 1);
    assert_int_equal(gf_dedup_sources(win), 2);
    assert_int_equal(gf_dedup_check(win, "b", 1, &v), GF_OK);
    assert_int_equal(v, GF_DEDUP_NEW); /* beyond the horizon: exactness is given up */
    assert_int_equal(gf_dedup_check(win, "a", 1, &v), GF_OK);
    assert_int_equal(v, GF_DEDUP_DUPLICATE);
    assert_int_equal(gf_dedup_prune(win, 1000), 2);
    assert_int_equal(gf_dedup_sources(win), 0);
    gf_dedup_free(win);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_and_mark_basics),
        cmocka_unit_test(exact_against_brute_force),
        cmocka_unit_test(encode_decode_round_trip),
        cmocka_unit_test(malformed_messages_are_refused),
        cmocka_unit_test(garbage_and_truncation_never_crash),
        cmocka_unit_test(prune_drops_idle_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
