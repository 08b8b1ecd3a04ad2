/* Spool recovery after crashes and damage: a torn last record cut at every byte
 * offset, garbage behind the last record, a flipped bit in the middle, a stale frame
 * of another segment. Every case is built by a producer process that dies without
 * closing the spool (sfx_crash_after), then damaged on disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "gamefn/log.h"
#include "gamefn/spool.h"
#include "spool_fixture.h"

static size_t file_size(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (size_t)sb.st_size;
}

static void check_seqs(const uint64_t *got, size_t n, uint64_t first)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], first + i);
}

/* Opens the spool, checks what recovery counted and the next seq, and that seqs
 * 1..records replay; returns the open spool. */
static gf_spool *open_expect(sfx_env *e, uint64_t torn, uint64_t corrupt, uint64_t next_seq,
                             size_t records)
{
    gf_spool *sp = sfx_open(&e->cfg);
    gf_spool_stats s;
    gf_spool_stats_get(sp, &s);
    assert_int_equal(s.torn_records, torn);
    assert_int_equal(s.corrupt_records, corrupt);
    assert_int_equal(s.next_seq, next_seq);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), records);
    check_seqs(e->seqs, records, 1);
    return sp;
}

static void torn_tail_at_every_byte_offset(void **state)
{
    sfx_env *e = *state;
    sfx_crash_after(&e->cfg, 4, 50);
    sfx_first_segment(e->dir, e->seg, sizeof e->seg);
    size_t good = file_size(e->seg);
    sfx_crash_after(&e->cfg, 1, 300); /* the record that will be torn: seq 5 */
    size_t seg_len = 0, state_len = 0;
    uint8_t *seg = sfx_read_file(e->seg, &seg_len);
    uint8_t *st = sfx_read_file(e->state, &state_len);
    assert_true(seg_len > good + 300);

    gf_log_set_level(GF_LOG_OFF); /* each cut logs a warning */
    for (size_t cut = good; cut < seg_len; cut++) {
        sfx_write_file(e->seg, seg, cut);
        sfx_write_file(e->state, st, state_len);
        /* Seq 5 never completed, so it is free again. */
        gf_spool *sp = open_expect(e, cut > good, 0, 5, 4);
        assert_int_equal(file_size(e->seg), good);
        sfx_append(sp, 1, 77); /* a new seq 5 lands cleanly behind the cut */
        gf_spool_close(sp);
        gf_spool_close(open_expect(e, 0, 0, 6, 5));
    }
    gf_log_set_level(GF_LOG_ERROR);
    free(seg);
    free(st);
}

static void garbage_behind_the_last_record(void **state)
{
    sfx_env *e = *state;
    sfx_crash_after(&e->cfg, 5, 40);
    sfx_first_segment(e->dir, e->seg, sizeof e->seg);
    size_t len = 0;
    uint8_t *seg = sfx_read_file(e->seg, &len);
    static const size_t lengths[] = {1, 3, 4, 15, 16, 17, 100, 4000};
    uint8_t *buf = malloc(len + 8192);
    assert_non_null(buf);
    srand(11);
    gf_log_set_level(GF_LOG_OFF);
    for (int pattern = 0; pattern < 4; pattern++) {
        for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
            size_t n = lengths[i];
            memcpy(buf, seg, len);
            for (size_t k = 0; k < n; k++)
                buf[len + k] = pattern == 1 ? 0 : (uint8_t)rand();
            if (pattern >= 2) /* a plausible header: magic and a small length */
                memcpy(buf + len, "GFR1\x30\0\0\0", n < 8 ? n : 8);
            if (pattern == 3 && n > 40) /* ... and a real frame's tail after it */
                memcpy(buf + len + 16, seg + 16, n - 16 < len - 16 ? n - 16 : len - 16);
            sfx_write_file(e->seg, buf, len + n);

            gf_spool_close(open_expect(e, 1, 0, 6, 5));
            assert_int_equal(file_size(e->seg), len);
        }
    }
    gf_log_set_level(GF_LOG_ERROR);
    free(buf);
    free(seg);
}

static void flipped_bit_in_the_middle(void **state)
{
    sfx_env *e = *state;
    sfx_crash_after(&e->cfg, 2, 60);
    sfx_first_segment(e->dir, e->seg, sizeof e->seg);
    size_t start = file_size(e->seg); /* record 3 spans [start, end) */
    sfx_crash_after(&e->cfg, 1, 60);
    size_t end = file_size(e->seg);
    sfx_crash_after(&e->cfg, 7, 60);
    size_t len = 0, state_len = 0;
    uint8_t *seg = sfx_read_file(e->seg, &len);
    uint8_t *st = sfx_read_file(e->state, &state_len);
    const size_t at[] = {start, start + 5, start + 9, start + 20, end - 1};

    gf_log_set_level(GF_LOG_OFF); /* each case logs an error */
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        seg[at[i]] ^= 0x10;
        sfx_write_file(e->seg, seg, len);
        seg[at[i]] ^= 0x10;
        sfx_write_file(e->state, st, state_len);

        /* Records 1, 2 replay; the skipped seqs 4..10 are never reused. */
        gf_spool *sp = open_expect(e, 0, 1, 11, 2);
        gf_spool_stats s;
        gf_spool_stats_get(sp, &s);
        assert_int_equal(s.skipped_records, 7);
        assert_int_equal(file_size(e->seg), len);
        sfx_append(sp, 1, 60); /* into a new segment: the damaged one is sealed */
        assert_int_equal(sfx_count_segments(e->dir), 2);
        gf_spool_close(sp);

        sp = sfx_open(&e->cfg); /* reported again while the segment exists */
        gf_spool_stats_get(sp, &s);
        assert_int_equal(s.corrupt_records, 1);
        assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 3);
        assert_int_equal(e->seqs[2], 11);
        assert_int_equal(gf_spool_ack(sp, 11), GF_OK); /* acked: both deleted */
        assert_int_equal(sfx_count_segments(e->dir), 0);
        gf_spool_close(sp);
        sfx_rmdir(e->dir);
        assert_int_equal(mkdir(e->dir, 0700), 0);
    }
    gf_log_set_level(GF_LOG_ERROR);
    free(seg);
    free(st);
}

static void damage_in_an_older_segment(void **state)
{
    sfx_env *e = *state;
    e->cfg.segment_bytes = 4096;
    sfx_crash_after(&e->cfg, 30, 400); /* 8 records a segment: 1..8, 9..16, ... */
    assert_int_equal(sfx_count_segments(e->dir), 4);
    sfx_first_segment(e->dir, e->seg, sizeof e->seg);
    size_t len = 0;
    uint8_t *seg = sfx_read_file(e->seg, &len);
    seg[len / 2] ^= 1; /* inside record 4 or 5 */
    sfx_write_file(e->seg, seg, len);

    gf_log_set_level(GF_LOG_OFF);
    gf_spool *sp = sfx_open(&e->cfg);
    gf_log_set_level(GF_LOG_ERROR);
    gf_spool_stats s;
    gf_spool_stats_get(sp, &s);
    assert_int_equal(s.corrupt_records, 1);
    size_t n = sfx_replay(sp, 0, e->seqs, 4096);
    assert_int_equal(n, 30 - 1 - s.skipped_records);
    assert_int_equal(e->seqs[n - 22], 9); /* segments 2..4 whole */
    check_seqs(e->seqs + n - 22, 22, 9);
    assert_int_equal(s.next_seq, 31);
    gf_spool_close(sp);
    free(seg);
}

static void stale_frame_of_another_segment_is_not_a_record(void **state)
{
    sfx_env *e = *state;
    e->cfg.segment_bytes = 4096;
    sfx_crash_after(&e->cfg, 12, 400);
    sfx_first_segment(e->dir, e->seg, sizeof e->seg);
    char second[320];
    snprintf(second, sizeof second, "%s/seg-%020d.log", e->dir, 9);
    size_t len1 = 0, len2 = 0;
    uint8_t *a = sfx_read_file(e->seg, &len1);
    uint8_t *b = sfx_read_file(second, &len2);
    uint8_t *both = malloc(len1 + len2);
    assert_non_null(both);
    memcpy(both, a, len1);
    memcpy(both + len1, b, len2); /* valid frames, but salted for segment 9 */
    sfx_write_file(e->seg, both, len1 + len2);

    gf_log_set_level(GF_LOG_OFF);
    gf_spool *sp = sfx_open(&e->cfg);
    gf_log_set_level(GF_LOG_ERROR);
    gf_spool_stats s;
    gf_spool_stats_get(sp, &s);
    assert_int_equal(s.torn_records, 1);
    assert_int_equal(file_size(e->seg), len1);
    assert_int_equal(sfx_replay(sp, 0, e->seqs, 4096), 12);
    check_seqs(e->seqs, 12, 1);
    gf_spool_close(sp);
    free(both);
    free(a);
    free(b);
}

int main(void)
{
    gf_log_init("test_spool_recovery", GF_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(torn_tail_at_every_byte_offset, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(garbage_behind_the_last_record, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(flipped_bit_in_the_middle, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(damage_in_an_older_segment, sfx_setup, sfx_teardown),
        cmocka_unit_test_setup_teardown(stale_frame_of_another_segment_is_not_a_record, sfx_setup,
                                        sfx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
