/* The producer spool: round trip, restarts, rotation, acks, the seq counter, the size
 * bound, fsync policies, bad arguments and state files, and the ack-floor ring. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gamefn/ack_floor.h"
#include "gamefn/log.h"
#include "gamefn/spool.h"
#include "spool_fixture.h"
#include "spool_internal.h"

static void round_trip(void **state)
{
    sfx_env *e = *state;
    gf_spool *sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), 1);
    sfx_rec r;
    for (uint64_t s = 1; s <= 200; s++) {
        sfx_make(&r, s, (size_t)(s * 13) % 900);
        assert_int_equal(gf_spool_append(sp, &r.rec), GF_OK);
    }
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 200);
    for (uint64_t i = 0; i < 200; i++)
        assert_int_equal(e->seqs[i], i + 1);
    assert_int_equal(sfx_replay(sp, 150, e->seqs, 4096), 50);
    assert_int_equal(e->seqs[0], 151);

    gf_spool_stats st;
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.next_seq, 201);
    assert_int_equal(st.appended, 200);
    assert_int_equal(st.records, 200);
    assert_int_equal(st.segments, 1);
    assert_int_equal(st.acked_floor, 0);
    assert_int_equal(st.dropped + st.torn_records + st.corrupt_records + st.skipped_records, 0);
    assert_true(st.bytes > 200 * 16);
    gf_spool_close(sp);
}

static void restart_recovers_order_and_floor(void **state)
{
    sfx_env *e = *state;
    gf_spool *sp = sfx_open(&e->cfg);
    sfx_append(sp, 50, 40);
    gf_spool_close(sp);

    sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), 51);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 50);
    assert_int_equal(gf_spool_ack(sp, 20), GF_OK);
    sfx_append(sp, 5, 40);
    gf_spool_close(sp);

    sp = sfx_open(&e->cfg);
    gf_spool_stats st;
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.acked_floor, 20);
    assert_int_equal(st.next_seq, 56);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 35);
    assert_int_equal(e->seqs[0], 21);
    assert_int_equal(e->seqs[34], 55);
    gf_spool_close(sp);
}

static const gf_spool_fsync all_policies[] = {GF_SPOOL_FSYNC_ALWAYS, GF_SPOOL_FSYNC_INTERVAL,
                                              GF_SPOOL_FSYNC_NEVER};

/* A producer appends 30 records under `policy` in boot "boot-1" and dies; the spool is
 * reopened in boot `boot_after`. Every record is back (a process crash loses nothing
 * the OS has), the last one being base + 29. */
static gf_spool *crash_and_reopen(sfx_env *e, gf_spool_fsync policy, const char *boot_after,
                                  uint64_t base)
{
    e->cfg.fsync = policy;
    e->cfg.seq_reserve = 100;
    e->cfg.boot_id = "boot-1";
    sfx_crash_after(&e->cfg, 30, 100);
    e->cfg.boot_id = boot_after;
    gf_spool *sp = sfx_open(&e->cfg);
    size_t n = sfx_replay(sp, 0, e->seqs, 4096);
    assert_int_equal(e->seqs[n - 1], base + 29);
    return sp;
}

static void crash_keeps_every_record_under_each_policy(void **state)
{
    sfx_env *e = *state;
    uint64_t base = 1;
    for (size_t i = 0; i < 3; i++) {
        /* In the same boot the counter continues right after the last one (no gap). */
        gf_spool *sp = crash_and_reopen(e, all_policies[i], "boot-1", base);
        assert_int_equal(gf_spool_next_seq(sp), base + 30);
        gf_spool_stats st;
        gf_spool_stats_get(sp, &st);
        assert_int_equal(st.pending_at_open, 30);
        assert_int_equal(gf_spool_ack(sp, base + 29), GF_OK);
        base += 30;
        gf_spool_close(sp);
    }
}

/* After a reboot (another boot id) the tail the OS held may be gone: under interval
 * and never the rest of the reservation is skipped, so no seq is ever reused. */
static void reboot_skips_the_reservation(void **state)
{
    sfx_env *e = *state;
    uint64_t base = 1;
    for (size_t i = 0; i < 3; i++) {
        /* Unknown ("") counts as another boot. */
        gf_spool *sp = crash_and_reopen(e, all_policies[i], i == 2 ? "" : "boot-2", base);
        /* always: the counter continues exactly; otherwise past the reservation. */
        uint64_t want = all_policies[i] == GF_SPOOL_FSYNC_ALWAYS ? base + 30 : base + 100;
        assert_int_equal(gf_spool_next_seq(sp), want);
        assert_int_equal(gf_spool_ack(sp, want - 1), GF_OK);
        base = want;
        gf_spool_close(sp);
    }
    /* Acknowledged and deleted: the same boot continues above the floor. */
    e->cfg.boot_id = "boot-3";
    sfx_crash_after(&e->cfg, 5, 10);
    gf_spool *sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_ack(sp, base + 4), GF_OK);
    assert_int_equal(sfx_count_segments(e->dir), 0);
    gf_spool_close(sp);
    sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), base + 5);
    gf_spool_close(sp);
}

/* A state file of version 1 (no boot field) is read, as written in an unknown boot. */
static void version_1_state_file_is_read(void **state)
{
    sfx_env *e = *state;
    e->cfg.fsync = GF_SPOOL_FSYNC_INTERVAL;
    e->cfg.seq_reserve = 100;
    e->cfg.boot_id = "boot-1";
    sfx_crash_after(&e->cfg, 3, 10);
    uint8_t v1[36] = {'G', 'F', 'S', 'P', 'O', 'O', 'L', '1', 1, 0, 0, 0};
    gf_spool_put_le(v1 + 12, 1, 8);   /* ack floor */
    gf_spool_put_le(v1 + 20, 100, 8); /* the reservation */
    gf_spool_check(v1, 28, NULL, 0, v1 + 28);
    sfx_write_file(e->state, v1, sizeof v1);
    gf_spool *sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), 101);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 2);
    gf_spool_close(sp);
}

static void rotation_and_deletion(void **state)
{
    sfx_env *e = *state;
    e->cfg.segment_bytes = 4096;
    gf_spool *sp = sfx_open(&e->cfg);
    sfx_append(sp, 100, 400); /* 465..470-byte frames: 8 per 4 KiB segment */
    gf_spool_stats st;
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.segments, 13);
    assert_int_equal(sfx_count_segments(e->dir), 13);
    uint64_t bytes = st.bytes;

    assert_int_equal(gf_spool_ack(sp, 7), GF_OK); /* the first segment holds 1..8 */
    assert_int_equal(sfx_count_segments(e->dir), 13);
    assert_int_equal(gf_spool_ack(sp, 8), GF_OK);
    assert_int_equal(sfx_count_segments(e->dir), 12);
    assert_int_equal(gf_spool_ack(sp, 50), GF_OK);
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.segments, sfx_count_segments(e->dir));
    assert_true(st.bytes < bytes);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 50);
    assert_int_equal(e->seqs[0], 51);
    assert_int_equal(gf_spool_ack(sp, 3), GF_OK); /* below the floor: no-op */
    assert_int_equal(gf_spool_ack(sp, 101), GF_ERR_INVALID);

    /* Acking everything deletes the open segment too; appends start a new one. */
    assert_int_equal(gf_spool_ack(sp, 100), GF_OK);
    assert_int_equal(sfx_count_segments(e->dir), 0);
    sfx_append(sp, 3, 400);
    assert_int_equal(sfx_count_segments(e->dir), 1);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 3);
    assert_int_equal(e->seqs[0], 101);
    gf_spool_close(sp);
}

static void counter_survives_deleting_every_segment(void **state)
{
    sfx_env *e = *state;
    gf_spool *sp = sfx_open(&e->cfg);
    sfx_append(sp, 30, 10);
    assert_int_equal(gf_spool_ack(sp, 30), GF_OK);
    assert_int_equal(sfx_count_segments(e->dir), 0);
    gf_spool_close(sp);

    sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), 31);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 0);
    gf_spool_close(sp);

    /* The same after a crash that followed the ack. */
    sfx_crash_after(&e->cfg, 5, 10);
    sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), 36);
    assert_int_equal(gf_spool_ack(sp, 35), GF_OK);
    gf_spool_close(sp);
    sfx_crash_after(&e->cfg, 0, 10);
    sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), 36);
    gf_spool_close(sp);
}

static void size_limit_refuses_and_uses_the_seq(void **state)
{
    sfx_env *e = *state;
    e->cfg.segment_bytes = 4096;
    e->cfg.max_bytes = 8192;
    gf_spool *sp = sfx_open(&e->cfg);
    sfx_rec r;
    uint64_t ok = 0, refused = 0;
    for (int i = 0; i < 40; i++) {
        sfx_make(&r, gf_spool_next_seq(sp), 400);
        gf_err err = gf_spool_append(sp, &r.rec);
        assert_true(err == GF_OK || err == GF_ERR_UNAVAILABLE);
        ok += err == GF_OK;
        refused += err == GF_ERR_UNAVAILABLE;
    }
    gf_spool_stats st;
    gf_spool_stats_get(sp, &st);
    assert_int_equal(ok, 17); /* 8 + 8 in two full segments, 1 in a third */
    assert_int_equal(st.dropped, refused);
    assert_int_equal(st.next_seq, 41);
    assert_true(st.bytes <= 8192);

    /* Acks make room again. */
    assert_int_equal(gf_spool_ack(sp, 9), GF_OK);
    sfx_make(&r, gf_spool_next_seq(sp), 400);
    assert_int_equal(gf_spool_append(sp, &r.rec), GF_OK);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 9);
    assert_int_equal(e->seqs[0], 10);
    assert_int_equal(e->seqs[7], 17);
    assert_int_equal(e->seqs[8], 41);
    gf_spool_close(sp);
}

static void fsync_policies(void **state)
{
    sfx_env *e = *state;
    gf_spool_stats st;
    e->cfg.fsync = GF_SPOOL_FSYNC_ALWAYS;
    gf_spool *sp = sfx_open(&e->cfg);
    sfx_append(sp, 10, 10);
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.syncs, 10);
    gf_spool_close(sp);

    e->cfg.fsync = GF_SPOOL_FSYNC_INTERVAL;
    e->cfg.fsync_interval_ms = 50;
    sp = sfx_open(&e->cfg);
    sfx_append(sp, 10, 10); /* the clock stands still: no sync */
    assert_int_equal(gf_spool_sync(sp), GF_OK);
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.syncs, 0);
    e->now += 50;
    assert_int_equal(gf_spool_sync(sp), GF_OK);
    assert_int_equal(gf_spool_sync(sp), GF_OK); /* nothing new to sync */
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.syncs, 1);
    e->now += 50;
    sfx_append(sp, 2, 10); /* the first append is due, the second not */
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.syncs, 2);
    gf_spool_close(sp);

    e->cfg.fsync = GF_SPOOL_FSYNC_NEVER;
    sp = sfx_open(&e->cfg);
    sfx_append(sp, 10, 10);
    e->now += 1000;
    assert_int_equal(gf_spool_sync(sp), GF_OK);
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.syncs, 0);
    assert_int_equal(gf_spool_flush(sp), GF_OK);
    gf_spool_stats_get(sp, &st);
    assert_int_equal(st.syncs, 1);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 32);
    gf_spool_close(sp);
}

static gf_err stop_after_three(void *ctx, const gf_spool_record *rec)
{
    uint64_t *seen = ctx;
    sfx_check(rec);
    *seen = rec->seq;
    return rec->seq % 3 == 0 ? GF_ERR_RETRY : GF_OK;
}

static void replay_stops_and_resumes(void **state)
{
    sfx_env *e = *state;
    gf_spool *sp = sfx_open(&e->cfg);
    sfx_append(sp, 10, 10);
    uint64_t last = 0, rounds = 0;
    while (gf_spool_replay(sp, last, stop_after_three, &last) == GF_ERR_RETRY)
        rounds++;
    assert_int_equal(rounds, 3);
    assert_int_equal(last, 10);
    gf_spool_close(sp);
}

static void bad_arguments(void **state)
{
    sfx_env *e = *state;
    gf_spool *sp = sfx_open(&e->cfg);
    gf_spool *other = NULL;
    assert_int_equal(gf_spool_open(&e->cfg, &other), GF_ERR_CONFLICT);
    assert_null(other);

    sfx_rec r;
    sfx_make(&r, 2, 10);
    assert_int_equal(gf_spool_append(sp, &r.rec), GF_ERR_INVALID); /* next is 1 */
    sfx_make(&r, 1, 10);
    r.rec.subject = "";
    assert_int_equal(gf_spool_append(sp, &r.rec), GF_ERR_INVALID);
    r.rec.subject = NULL;
    assert_int_equal(gf_spool_append(sp, &r.rec), GF_ERR_INVALID);
    char big[300];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sfx_make(&r, 1, 10);
    r.rec.msg_id = big;
    assert_int_equal(gf_spool_append(sp, &r.rec), GF_ERR_INVALID);
    sfx_make(&r, 1, 10);
    r.rec.data_len = GF_SPOOL_DATA_MAX + 1;
    assert_int_equal(gf_spool_append(sp, &r.rec), GF_ERR_INVALID);
    sfx_make(&r, 1, 0);
    r.rec.data = NULL;
    assert_int_equal(gf_spool_append(sp, &r.rec), GF_OK); /* empty data is fine */
    assert_int_equal(gf_spool_next_seq(sp), 2);
    gf_spool_close(sp);

    gf_spool_config bad[] = {
        {.dir = NULL},
        {.dir = ""},
        {.dir = e->dir, .fsync = 7},
        {.dir = e->dir, .fsync_interval_ms = 60001},
        {.dir = e->dir, .segment_bytes = 4095},
        {.dir = e->dir, .segment_bytes = 1u << 20, .max_bytes = 1u << 19},
        {.dir = e->dir, .seq_reserve = 1048577},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gf_spool_open(&bad[i], &other), GF_ERR_INVALID);
        assert_null(other);
    }
    gf_spool_close(NULL);
}

static void malformed_state_file_refuses_to_open(void **state)
{
    sfx_env *e = *state;
    gf_spool *sp = sfx_open(&e->cfg);
    sfx_append(sp, 5, 10);
    assert_int_equal(gf_spool_ack(sp, 2), GF_OK);
    gf_spool_close(sp);

    const char *path = e->state;
    size_t len = 0;
    uint8_t *good = sfx_read_file(path, &len);
    assert_int_equal(len, 52);
    uint8_t bad[64];
    gf_log_set_level(GF_LOG_OFF);            /* every refusal logs an error */
    for (size_t cut = 0; cut < len; cut++) { /* truncated */
        sfx_write_file(path, good, cut);
        assert_int_equal(gf_spool_open(&e->cfg, &sp), GF_ERR_INVALID);
    }
    for (size_t i = 0; i < len * 8; i++) { /* any flipped bit */
        memcpy(bad, good, len);
        bad[i / 8] ^= (uint8_t)(1u << (i % 8));
        sfx_write_file(path, bad, len);
        assert_int_equal(gf_spool_open(&e->cfg, &sp), GF_ERR_INVALID);
    }
    memcpy(bad, good, len);
    bad[len] = 0;
    sfx_write_file(path, bad, len + 1); /* trailing byte */
    assert_int_equal(gf_spool_open(&e->cfg, &sp), GF_ERR_INVALID);

    /* Well-formed, but the floor above the highest seq used. */
    int dirfd = open(e->dir, 0);
    assert_true(dirfd >= 0);
    gf_spool_state st = {.ack_floor = 9, .seq_used = 5};
    assert_int_equal(gf_spool_state_write(dirfd, &st), GF_OK);
    close(dirfd);
    assert_int_equal(gf_spool_open(&e->cfg, &sp), GF_ERR_INVALID);

    gf_log_set_level(GF_LOG_ERROR);
    /* The good file back: nothing was changed by the refusals. */
    sfx_write_file(path, good, len);
    sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), 6);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 3);
    gf_spool_close(sp);

    /* No state file at all: recovered from the segments, every record replayed. */
    assert_int_equal(unlink(path), 0);
    sp = sfx_open(&e->cfg);
    assert_int_equal(gf_spool_next_seq(sp), 6);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 5);
    gf_spool_close(sp);
    free(good);
}

static void ack_floor_ring(void **state)
{
    gf_ack_floor a;
    assert_int_equal(gf_ack_floor_init(&a, 0, 0), GF_ERR_INVALID);
    assert_int_equal(gf_ack_floor_init(&a, 100, 64), GF_OK);
    assert_false(gf_ack_floor_can_send(&a, 100));
    assert_true(gf_ack_floor_can_send(&a, 101));
    assert_true(gf_ack_floor_can_send(&a, 164));
    assert_false(gf_ack_floor_can_send(&a, 165));
    assert_int_equal(gf_ack_floor_mark(&a, 165), GF_ERR_INVALID);
    assert_int_equal(gf_ack_floor_mark(&a, 0), GF_ERR_INVALID);
    assert_int_equal(gf_ack_floor_mark(&a, 50), GF_OK);
    assert_int_equal(a.floor, 100);
    gf_ack_floor_fini(&a);

    /* Random acks inside the window against a brute-force floor. */
    enum { N = 20000, W = 100 };
    static bool acked[N + W + 2];
    memset(acked, 0, sizeof acked);
    srand(7);
    assert_int_equal(gf_ack_floor_init(&a, 0, W), GF_OK);
    uint64_t ref = 0, sent = 0;
    uint64_t pending[W];
    size_t np = 0;
    while (ref < N) {
        while (np < W && gf_ack_floor_can_send(&a, sent + 1) && sent < N)
            pending[np++] = ++sent;
        size_t k = (size_t)rand() % np;
        uint64_t s = pending[k];
        pending[k] = pending[--np];
        assert_int_equal(gf_ack_floor_mark(&a, s), GF_OK);
        acked[s] = true;
        while (acked[ref + 1])
            ref++;
        assert_int_equal(a.floor, ref);
    }
    gf_ack_floor_fini(&a);
}

int main(void)
{
    gf_log_init("test_spool", GF_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(round_trip, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(restart_recovers_order_and_floor, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(crash_keeps_every_record_under_each_policy, sfx_setup,
                                        sfx_teardown),
        cmocka_unit_test_setup_teardown(reboot_skips_the_reservation, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(version_1_state_file_is_read, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(rotation_and_deletion, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(counter_survives_deleting_every_segment, sfx_setup,
                                        sfx_teardown),
        cmocka_unit_test_setup_teardown(size_limit_refuses_and_uses_the_seq, sfx_setup,
                                        sfx_teardown),
        cmocka_unit_test_setup_teardown(fsync_policies, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(replay_stops_and_resumes, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(bad_arguments, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(malformed_state_file_refuses_to_open, sfx_setup,
                                        sfx_teardown),
        cmocka_unit_test(ack_floor_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
