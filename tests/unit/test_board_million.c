/* A board of one million players: only correctness (no timing): the ranking is a
 * strict order with dense ranks, every rank query agrees with the pages, removals
 * and a chunked snapshot keep it so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "board.h"

enum { PLAYERS = 1000000, PAGE = 4096 };

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void id_of(uint64_t i, char *out)
{
    snprintf(out, 16, "p%07llu", (unsigned long long)i);
}

static bool before(const gf_board_entry *a, const gf_board_entry *b)
{
    if (a->score != b->score)
        return a->score > b->score;
    if (a->updated_unix_ms != b->updated_unix_ms)
        return a->updated_unix_ms < b->updated_unix_ms;
    return strcmp(a->player_id, b->player_id) < 0;
}

/* Walks every rank in pages: strictly ordered, ranks 1..n without a hole. */
static void check_order(const gf_board *b)
{
    static gf_board_entry page[PAGE];
    gf_board_entry prev = {0};
    uint64_t rank = 1, n = gf_board_size(b);
    while (rank <= n) {
        size_t got = gf_board_page(b, rank, PAGE, page);
        assert_true(got > 0);
        for (size_t i = 0; i < got; i++, rank++) {
            assert_int_equal(page[i].rank, rank);
            if (rank > 1)
                assert_true(before(&prev, &page[i]));
            prev = page[i];
        }
    }
    assert_int_equal(rank, n + 1);
    assert_int_equal(gf_board_page(b, n + 1, PAGE, page), 0);
}

static void check_sample(const gf_board *b, uint64_t *rng, size_t samples)
{
    gf_board_entry e, p;
    char id[16];
    for (size_t k = 0; k < samples; k++) {
        id_of(rnd(rng) % PLAYERS, id);
        gf_err err = gf_board_get(b, id, &e);
        if (err == GF_ERR_NOT_FOUND)
            continue;
        assert_int_equal(err, GF_OK);
        assert_int_equal(gf_board_page(b, e.rank, 1, &p), 1);
        assert_string_equal(p.player_id, id);
    }
}

static void million_players(void **state)
{
    gf_board *b = NULL;
    assert_int_equal(gf_board_alloc(GF_BOARD_DESCENDING, &b), GF_OK);
    uint64_t rng = 12345;
    char id[16];
    for (uint64_t i = 0; i < PLAYERS; i++) {
        id_of(i, id);
        int64_t score = (int64_t)(rnd(&rng) % 100000); /* ~10 players a score: ties */
        assert_int_equal(gf_board_upsert(b, id, score, (int64_t)(rnd(&rng) % 1000)), GF_OK);
    }
    assert_int_equal(gf_board_size(b), PLAYERS);
    check_order(b);
    check_sample(b, &rng, 2000);

    for (int k = 0; k < 100000; k++) { /* churn: moves and removals */
        id_of(rnd(&rng) % PLAYERS, id);
        if (k % 2)
            assert_int_equal(gf_board_upsert(b, id, (int64_t)(rnd(&rng) % 100000), 5000), GF_OK);
        else if (gf_board_remove(b, id) == GF_ERR_NOT_FOUND)
            continue;
    }
    check_order(b);
    check_sample(b, &rng, 2000);

    gf_board *c = NULL;
    assert_int_equal(gf_board_alloc(GF_BOARD_DESCENDING, &c), GF_OK);
    uint64_t total = 0;
    do {
        uint8_t *buf = NULL;
        size_t len = 0;
        assert_int_equal(gf_board_snapshot_encode(b, gf_board_size(c) + 1, 100000, &buf, &len),
                         GF_OK);
        assert_int_equal(gf_board_snapshot_load(c, buf, len, &total), GF_OK);
        free(buf);
    } while (gf_board_size(c) < total);
    assert_int_equal(gf_board_size(c), gf_board_size(b));
    check_order(c);
    check_sample(c, &rng, 2000);
    gf_board_free(c);
    gf_board_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(million_players),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
