/*
 * The effect record codec (gamefn/effect_record.h): records round-tripped, malformed
 * ones refused, dead marks kept sorted and bounded; and the consumer options' defaults
 * agree with their config table.
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

#include "gamefn/consumer_options.h"
#include "gamefn/effect_record.h"
#include "gamefn/util.h"
#include "gamefn/v1/state.pb-c.h"

static void effect_record_round_trip(void **state)
{
    (void)state;
    gf_effect_record r, back;
    assert_int_equal(gf_effect_record_init(&r, 4), GF_OK);
    r.owner_token = 42;
    assert_int_equal(gf_effect_record_set_effect(&r, (const uint8_t *)"abc", 3), GF_OK);
    for (uint64_t s = 1; s <= 10; s++) {
        if (s == 3 || s == 5)
            assert_int_equal(gf_effect_record_mark_dead(&r, "b", s, 100, NULL), GF_OK);
        else
            assert_int_equal(gf_effect_record_mark_applied(&r, "b", s, 100), GF_OK);
    }
    assert_int_equal(gf_effect_record_mark_applied(&r, "b", 7, 100), GF_ERR_CONFLICT);
    assert_int_equal(gf_effect_record_mark_dead(&r, "b", 7, 100, NULL), GF_ERR_CONFLICT);
    assert_int_equal(gf_effect_record_mark_dead(&r, "a", 2, 50, NULL), GF_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(gf_effect_record_encode(&r, &buf, &len), GF_OK);
    assert_int_equal(gf_effect_record_decode(buf, len, &back), GF_OK);
    assert_int_equal(back.owner_token, 42);
    assert_int_equal(back.ndead, 3);
    assert_string_equal(back.dead[0].source_id, "a"); /* sorted */
    assert_memory_equal(back.effect, "abc", 3);
    bool applied;
    /* 3 and 5 are below M - W (10 - 4) yet not applied: the dead marks say so */
    assert_int_equal(gf_effect_record_applied(&back, "b", 3, &applied), GF_OK);
    assert_false(applied);
    assert_int_equal(gf_effect_record_applied(&back, "b", 4, &applied), GF_OK);
    assert_true(applied);
    /* a re-drive of 3 applies it, once */
    assert_int_equal(gf_effect_record_mark_applied(&back, "b", 3, 200), GF_OK);
    assert_int_equal(gf_effect_record_applied(&back, "b", 3, &applied), GF_OK);
    assert_true(applied);
    assert_int_equal(gf_effect_record_mark_applied(&back, "b", 3, 200), GF_ERR_CONFLICT);
    /* prune the old marks */
    size_t srcs = 0, marks = 0;
    gf_effect_record_prune(&back, 0, 60, &srcs, &marks);
    assert_int_equal(marks, 1);
    uint64_t token = 0;
    uint8_t *effect = NULL;
    size_t elen = 0;
    assert_int_equal(gf_effect_record_peek(buf, len, &token, &effect, &elen), GF_OK);
    assert_int_equal(token, 42);
    assert_int_equal(elen, 3);
    free(effect);
    for (size_t cut = 0; cut < len; cut++) { /* truncations: refused or valid, no crash */
        gf_effect_record t;
        if (gf_effect_record_decode(buf, cut, &t) == GF_OK)
            gf_effect_record_fini(&t);
    }
    free(buf);
    gf_effect_record_fini(&r);
    gf_effect_record_fini(&back);
}

static void effect_record_malformed(void **state)
{
    (void)state;
    gf_effect_record r;
    Gamefn__V1__EffectRecord m = GAMEFN__V1__EFFECT_RECORD__INIT;
    uint8_t *buf = NULL;
    size_t len = 0;
    m.version = 1; /* no window */
    assert_int_equal(gf_pack(&m.base, &buf, &len), GF_OK);
    assert_int_equal(gf_effect_record_decode(buf, len, &r), GF_ERR_INVALID);
    free(buf);
    /* unsorted dead marks */
    gf_effect_record ok;
    assert_int_equal(gf_effect_record_init(&ok, 4), GF_OK);
    uint8_t *w = NULL;
    size_t wlen = 0;
    assert_int_equal(gf_dedup_encode(ok.applied, &w, &wlen), GF_OK);
    Gamefn__V1__DeadMark d[2] = {GAMEFN__V1__DEAD_MARK__INIT, GAMEFN__V1__DEAD_MARK__INIT};
    Gamefn__V1__DeadMark *dp[2] = {&d[0], &d[1]};
    d[0].source_id = (char *)"b";
    d[0].seq = 1;
    d[1].source_id = (char *)"a";
    d[1].seq = 1;
    m.applied.data = w;
    m.applied.len = wlen;
    m.n_dead = 2;
    m.dead = dp;
    assert_int_equal(gf_pack(&m.base, &buf, &len), GF_OK);
    assert_int_equal(gf_effect_record_decode(buf, len, &r), GF_ERR_INVALID);
    free(buf);
    m.n_dead = 0;
    m.version = 2;
    assert_int_equal(gf_pack(&m.base, &buf, &len), GF_OK);
    assert_int_equal(gf_effect_record_decode(buf, len, &r), GF_ERR_INVALID);
    free(buf);
    free(w);
    gf_effect_record_fini(&ok);
}

static void dead_marks_bounded(void **state)
{
    (void)state;
    gf_effect_record r;
    assert_int_equal(gf_effect_record_init(&r, 4), GF_OK);
    bool dropped = false;
    for (uint64_t s = 1; s <= GF_EFFECT_DEAD_MAX + 5; s++)
        assert_int_equal(gf_effect_record_mark_dead(&r, "z", s, (int64_t)s, &dropped), GF_OK);
    assert_true(dropped);
    assert_int_equal(r.ndead, GF_EFFECT_DEAD_MAX);
    assert_int_equal(r.dead[0].seq, 6); /* the oldest went first */
    gf_effect_record_fini(&r);
}

static void options_defaults_match_the_table(void **state)
{
    (void)state;
    gf_consumer_options table, def;
    struct gf_config_arena *arena = NULL;
    gf_config_error err;
    assert_int_equal(
        gf_config_parse_table("events", "", 0, &gf_consumer_options_table, &table, &arena, &err),
        GF_OK);
    gf_consumer_options_default(&def);
    assert_int_equal(table.window, def.window);
    assert_int_equal(table.dedup_horizon_ms, def.dedup_horizon_ms);
    assert_int_equal(table.dead_horizon_ms, def.dead_horizon_ms);
    assert_int_equal(table.cache_keys, def.cache_keys);
    assert_int_equal(table.max_rounds, def.max_rounds);
    assert_string_equal(table.reasons_bucket, def.reasons_bucket);
    gf_config_arena_free(arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(effect_record_round_trip),
        cmocka_unit_test(effect_record_malformed),
        cmocka_unit_test(dead_marks_bounded),
        cmocka_unit_test(options_defaults_match_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
