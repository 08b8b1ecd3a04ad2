/*
 * The partitioned consumer's membership list and fair share (runtime/src/endpoints/
 * partition_share.c), without a server: the list's text round trip and its malformed
 * lines, expiry and refresh of members, targets that add up to P for every k and every
 * rank, blocks that tile 0..P-1, and which partition is given back first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "endpoints/partition_share.h"

static void members_round_trip_and_skip_malformed_lines(void **state)
{
    const char text[] = "2000 b.x\n"
                        "garbage\n"
                        "1000 a.y\n"
                        "-5 neg\n"
                        "3000 two words\n"
                        "\n"
                        "4000 c.z";
    gf__members ms;
    gf__members_decode(text, sizeof text - 1, &ms);
    assert_int_equal(ms.n, 3);
    assert_string_equal(ms.m[0].holder, "b.x");
    assert_int_equal(ms.m[2].expires_unix_ms, 4000);

    char buf[256];
    size_t len = gf__members_encode(&ms, buf, sizeof buf);
    assert_true(len > 0);
    assert_string_equal(buf, "2000 b.x\n1000 a.y\n4000 c.z\n");
    gf__members again;
    gf__members_decode(buf, len, &again);
    assert_int_equal(again.n, 3);
    assert_int_equal(gf__members_encode(&ms, buf, 10), 0); /* does not fit */
}

static void update_drops_expired_refreshes_self_and_sorts(void **state)
{
    gf__members ms;
    const char text[] = "500 old\n2000 zed\n1500 me\n3000 amy\n";
    gf__members_decode(text, sizeof text - 1, &ms);
    gf__members_update(&ms, "me", 1000, 10000, false);
    assert_int_equal(ms.n, 3); /* "old" expired at 500 */
    assert_string_equal(ms.m[0].holder, "amy");
    assert_string_equal(ms.m[1].holder, "me");
    assert_int_equal(ms.m[1].expires_unix_ms, 11000);
    assert_string_equal(ms.m[2].holder, "zed");

    gf__members_update(&ms, "me", 1000, 10000, true); /* leaving */
    assert_int_equal(ms.n, 2);
    assert_string_equal(ms.m[0].holder, "amy");
    assert_string_equal(ms.m[1].holder, "zed");
}

/* For every P and k: targets add up to P, differ by at most one, and the blocks tile
 * 0..P-1 in member order. */
static void shares_add_up_and_blocks_tile(void **state)
{
    for (unsigned p = 1; p <= GF_PARTITIONS_MAX; p++) {
        for (size_t k = 1; k <= 12; k++) {
            gf__members ms = {.n = k};
            for (size_t i = 0; i < k; i++) {
                snprintf(ms.m[i].holder, sizeof ms.m[i].holder, "m%02zu", i);
                ms.m[i].expires_unix_ms = 1;
            }
            unsigned sum = 0, next = 0, lo = p, hi = 0;
            for (size_t i = 0; i < k; i++) {
                unsigned target = 0, start = 0;
                gf__share_of(&ms, ms.m[i].holder, p, &target, &start);
                assert_int_equal(start, next);
                next += target;
                sum += target;
                lo = target < lo ? target : lo;
                hi = target > hi ? target : hi;
            }
            assert_int_equal(sum, p);
            assert_true(hi - lo <= 1);
        }
    }
}

static void a_member_missing_from_the_list_counts_itself(void **state)
{
    gf__members ms = {.n = 1};
    strcpy(ms.m[0].holder, "b");
    unsigned target = 0, start = 0;
    gf__share_of(&ms, "a", 16, &target, &start); /* sorts before b: first block */
    assert_int_equal(target, 8);
    assert_int_equal(start, 0);
    gf__share_of(&ms, "c", 16, &target, &start);
    assert_int_equal(target, 8);
    assert_int_equal(start, 8);
}

static void acquisition_starts_with_the_block(void **state)
{
    unsigned order[16];
    gf__share_order(16, 10, 3, order);
    assert_int_equal(order[0], 10);
    assert_int_equal(order[2], 12);
    assert_int_equal(order[6], 0); /* wraps */
    bool seen[16] = {false};
    for (unsigned i = 0; i < 16; i++)
        seen[order[i]] = true;
    for (unsigned i = 0; i < 16; i++)
        assert_true(seen[i]);
}

static void partitions_outside_the_block_are_given_back_first(void **state)
{
    bool owned[16] = {false};
    /* block 4..7 (target 4); owns 5, 6 in the block and 1, 12 outside. */
    owned[5] = owned[6] = owned[1] = owned[12] = true;
    unsigned first = gf__share_release_pick(16, 4, 4, owned);
    assert_true(first == 1 || first == 12);
    owned[first] = false;
    unsigned second = gf__share_release_pick(16, 4, 4, owned);
    assert_true(second == 1 || second == 12);
    assert_true(second != first);
    owned[second] = false;
    assert_int_equal(gf__share_release_pick(16, 4, 4, owned), 6); /* then the block's end */
    owned[5] = owned[6] = false;
    assert_int_equal(gf__share_release_pick(16, 4, 4, owned), 16); /* nothing owned */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(members_round_trip_and_skip_malformed_lines),
        cmocka_unit_test(update_drops_expired_refreshes_self_and_sorts),
        cmocka_unit_test(shares_add_up_and_blocks_tile),
        cmocka_unit_test(a_member_missing_from_the_list_counts_itself),
        cmocka_unit_test(acquisition_starts_with_the_block),
        cmocka_unit_test(partitions_outside_the_block_are_given_back_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
