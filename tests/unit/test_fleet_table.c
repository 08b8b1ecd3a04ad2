/*
 * test_fleet_table.c — the fleet mirror's table (functions/fleet/fleet_table.h):
 * revisions, malformed values, datacenter ranges, allocation order and spread,
 * resync, finding the server of a match, broken keys held apart for the sweep.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_table.h"

static const int64_t now = 1000000;

/* Packs a record into buf; returns the length. */
static size_t record(uint8_t *buf, const char *dc, const char *id, Gamefn__V1__ServerState state,
                     int64_t free_since, int64_t stale, uint32_t capacity, const char *match)
{
    Gamefn__V1__ServerRecord r = GAMEFN__V1__SERVER_RECORD__INIT;
    r.server_id = fleet_str(id);
    r.datacenter = fleet_str(dc);
    r.address = "127.0.0.1";
    r.port = 7000;
    r.capacity = capacity;
    r.state = state;
    r.free_since_unix_ms = free_since;
    r.stale_unix_ms = stale;
    if (match)
        r.allocated_match_id = fleet_str(match);
    return gamefn__v1__server_record__pack(&r, buf);
}

static void put(fleet_table *t, const char *dc, const char *id, uint64_t rev, int64_t free_since)
{
    uint8_t buf[512];
    char key[FLEET_KEY_MAX];
    snprintf(key, sizeof key, "%s.%s", dc, id);
    size_t len = record(buf, dc, id, GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, free_since,
                        now + 10000, 10, NULL);
    assert_int_equal(fleet_table_put(t, key, rev, buf, len, now), GF_OK);
}

static void count_entry(const fleet_entry *e, void *arg)
{
    (void)e;
    (*(size_t *)arg)++;
}

static size_t count_dc(fleet_table *t, const char *dc)
{
    size_t n = 0;
    fleet_table_each(t, dc, count_entry, &n);
    return n;
}

static void revisions_and_ranges(void **state)
{
    (void)state;
    fleet_table *t = NULL;
    assert_int_equal(fleet_table_new(&t), GF_OK);
    put(t, "dc", "b", 5, 1);
    put(t, "dc", "a", 6, 1);
    put(t, "dc2", "a", 7, 1);
    put(t, "dc-x", "a", 8, 1);
    put(t, "d", "z", 9, 1);
    assert_int_equal(fleet_table_count(t), 5);
    /* "dc." must not take "dc2." or "dc-x." keys. */
    assert_int_equal(count_dc(t, "dc"), 2);
    assert_int_equal(count_dc(t, "dc2"), 1);
    assert_int_equal(count_dc(t, "dc-x"), 1);
    assert_int_equal(count_dc(t, "nope"), 0);
    assert_int_equal(count_dc(t, NULL), 5);

    /* An older revision never replaces a newer one; a newer one does. */
    uint64_t v = fleet_table_version(t);
    uint8_t buf[512];
    size_t len = record(buf, "dc", "a", GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED, 0,
                        now + 10000, 10, "m-1");
    assert_int_equal(fleet_table_put(t, "dc.a", 3, buf, len, now), GF_OK);
    assert_int_equal(fleet_table_get(t, "dc.a")->rec->state,
                     GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE);
    assert_int_equal(fleet_table_version(t), v);
    assert_int_equal(fleet_table_put(t, "dc.a", 10, buf, len, now), GF_OK);
    assert_int_equal(fleet_table_get(t, "dc.a")->rec->state,
                     GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED);
    /* The version counts servers coming free, what waiting allocators wait for: an
     * allocation is not one, a FREE record after it is, a FREE one again is not. */
    assert_int_equal(fleet_table_version(t), v);
    len = record(buf, "dc", "a", GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, 1, now + 10000, 10,
                 NULL);
    assert_int_equal(fleet_table_put(t, "dc.a", 11, buf, len, now), GF_OK);
    assert_true(fleet_table_version(t) > v);
    v = fleet_table_version(t);
    assert_int_equal(fleet_table_put(t, "dc.a", 12, buf, len, now), GF_OK);
    assert_int_equal(fleet_table_version(t), v);
    len = record(buf, "dc", "a", GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED, 0, now + 10000,
                 10, "m-1");
    assert_int_equal(fleet_table_put(t, "dc.a", 13, buf, len, now), GF_OK);

    /* Malformed values and values under another key are refused and forget the key. */
    assert_int_equal(fleet_table_put(t, "dc.b", 14, (const uint8_t *)"\xff\xff", 2, now),
                     GF_ERR_INVALID);
    assert_null(fleet_table_get(t, "dc.b"));
    len = record(buf, "dc2", "a", GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, 1, now, 10, NULL);
    assert_int_equal(fleet_table_put(t, "dc.zz", 15, buf, len, now), GF_ERR_INVALID);
    assert_null(fleet_table_get(t, "dc.zz"));

    /* Deletes: an older delete is ignored. */
    fleet_table_delete(t, "dc2.a", 6);
    assert_non_null(fleet_table_get(t, "dc2.a"));
    fleet_table_delete(t, "dc2.a", 13);
    assert_null(fleet_table_get(t, "dc2.a"));

    /* find_match */
    fleet_candidate c;
    assert_true(fleet_table_find_match(t, "m-1", &c));
    assert_string_equal(c.key, "dc.a");
    assert_int_equal(c.revision, 13);
    fleet_candidates_free(&c, 1);
    assert_false(fleet_table_find_match(t, "m-2", &c));
    assert_false(fleet_table_find_match(t, "", &c));
    fleet_table_free(t);
}

static void candidates_order_and_filters(void **state)
{
    (void)state;
    fleet_table *t = NULL;
    assert_int_equal(fleet_table_new(&t), GF_OK);
    uint8_t buf[512];
    /* Ten FREE servers freed at times 1..10; s5 is stale, s6 too small, s7 allocated. */
    for (int i = 1; i <= 10; i++) {
        char id[8], key[32];
        snprintf(id, sizeof id, "s%d", i);
        snprintf(key, sizeof key, "eu.%s", id);
        Gamefn__V1__ServerState st = i == 7 ? GAMEFN__V1__SERVER_STATE__SERVER_STATE_ALLOCATED
                                            : GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE;
        size_t len = record(buf, "eu", id, st, i == 7 ? 0 : i, i == 5 ? now : now + 1,
                            i == 6 ? 2 : 10, i == 7 ? "m-x" : NULL);
        assert_int_equal(fleet_table_put(t, key, (uint64_t)i, buf, len, now), GF_OK);
    }
    fleet_candidate c[16];
    size_t n = fleet_table_candidates(t, "eu", 4, now, NULL, c, 16);
    /* Allowed: s1..s4, s8..s10, most recently freed first. */
    const char *want[] = {"eu.s10", "eu.s9", "eu.s8", "eu.s4", "eu.s3", "eu.s2", "eu.s1"};
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(c[i].key, want[i]);
    fleet_candidates_free(c, n);

    /* A match id rotates the first 16 (here all seven, in their order); every allowed
     * server is still offered exactly once. */
    int first_seen[7] = {0};
    for (int m = 0; m < 128; m++) {
        char mid[16];
        snprintf(mid, sizeof mid, "m-%d", m);
        n = fleet_table_candidates(t, "eu", 4, now, mid, c, 16);
        assert_int_equal(n, 7);
        size_t lead = 7;
        for (size_t k = 0; k < 7; k++)
            if (strcmp(c[0].key, want[k]) == 0)
                lead = k;
        assert_true(lead < 7);
        first_seen[lead]++;
        for (size_t i = 0; i < 7; i++)
            assert_string_equal(c[i].key, want[(lead + i) % 7]);
        fleet_candidates_free(c, n);
    }
    for (int k = 0; k < 7; k++)
        assert_true(first_seen[k] > 0); /* every one leads sometimes */

    /* max caps the copy; players above capacity filter. */
    n = fleet_table_candidates(t, "eu", 4, now, NULL, c, 2);
    assert_int_equal(n, 2);
    assert_string_equal(c[0].key, "eu.s10");
    fleet_candidates_free(c, n);
    n = fleet_table_candidates(t, "eu", 11, now, NULL, c, 16);
    assert_int_equal(n, 0);
    n = fleet_table_candidates(t, "us", 1, now, NULL, c, 16);
    assert_int_equal(n, 0);

    /* A lost compare-and-set marks its revision superseded: no candidate until the newer
     * revision arrives; a mark on another revision does nothing. */
    fleet_table_superseded(t, "eu.s10", 9);
    fleet_table_superseded(t, "eu.s9", 9);
    n = fleet_table_candidates(t, "eu", 4, now, NULL, c, 16);
    assert_int_equal(n, 6);
    assert_string_equal(c[0].key, "eu.s10");
    assert_string_equal(c[1].key, "eu.s8");
    fleet_candidates_free(c, n);
    size_t len =
        record(buf, "eu", "s9", GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, 9, now + 1, 10, NULL);
    assert_int_equal(fleet_table_put(t, "eu.s9", 20, buf, len, now), GF_OK);
    n = fleet_table_candidates(t, "eu", 4, now, NULL, c, 16);
    assert_int_equal(n, 7);
    fleet_candidates_free(c, n);
    fleet_table_free(t);
}

static void resync_drops_unseen(void **state)
{
    (void)state;
    fleet_table *t = NULL;
    assert_int_equal(fleet_table_new(&t), GF_OK);
    put(t, "eu", "a", 1, 1);
    put(t, "eu", "b", 2, 1);
    put(t, "eu", "c", 3, 1);
    fleet_table_resync_begin(t);
    put(t, "eu", "a", 1, 1); /* replayed */
    put(t, "eu", "c", 4, 1); /* replayed, changed */
    assert_int_equal(fleet_table_resync_end(t), 1);
    assert_null(fleet_table_get(t, "eu.b"));
    assert_int_equal(fleet_table_get(t, "eu.c")->revision, 4);
    assert_int_equal(fleet_table_count(t), 2);
    fleet_table_free(t);
    fleet_table_free(NULL);
}

static void broken_count(const fleet_broken *b, void *arg)
{
    (void)b;
    (*(size_t *)arg)++;
}

/* Unusable values are no entry (never a candidate) but are held, with why and since
 * when, until a valid record, a delete or a resync that does not see them. */
static void broken_keys_held_apart(void **state)
{
    (void)state;
    static const fleet_dc_config dcs[] = {{.name = "eu"}, {.name = "us"}};
    static const fleet_config cfg = {.datacenters = (fleet_dc_config *)(uintptr_t)dcs,
                                     .datacenters_len = 2};
    fleet_table *t = NULL;
    fleet_candidate c[4];
    uint8_t buf[512];
    size_t len, n = 0;
    assert_int_equal(fleet_table_new(&t), GF_OK);
    fleet_table_set_datacenters(t, &cfg);

    /* Garbage, an invalid record, another key's record, an unconfigured datacenter. */
    assert_int_equal(fleet_table_put(t, "eu.g", 1, (const uint8_t *)"\xff\xff", 2, now),
                     GF_ERR_INVALID);
    len = record(buf, "eu", "v", 9, 1, now + 10000, 10, NULL);
    assert_int_equal(fleet_table_put(t, "eu.v", 2, buf, len, now), GF_ERR_INVALID);
    len = record(buf, "eu", "x", GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, 1, now + 10000, 10,
                 NULL);
    assert_int_equal(fleet_table_put(t, "eu.k", 3, buf, len, now), GF_ERR_INVALID);
    assert_int_equal(fleet_table_put(t, "nokey", 4, buf, len, now), GF_ERR_INVALID);
    len = record(buf, "zz", "a", GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, 1, now + 10000, 10,
                 NULL);
    assert_int_equal(fleet_table_put(t, "zz.a", 5, buf, len, now), GF_ERR_INVALID);
    /* The id index shares the bucket: neither an entry nor broken (held apart). */
    assert_int_equal(fleet_table_put(t, "ids/a", 6, (const uint8_t *)"1 eu", 4, now), GF_OK);
    assert_int_equal(fleet_table_count(t), 0);
    assert_int_equal(fleet_table_broken_count(t), 5);
    assert_int_equal(fleet_table_candidates(t, "eu", 1, now, "m", c, 4), 0);
    assert_string_equal(fleet_table_broken_get(t, "eu.g")->why,
                        "not a ServerRecord (does not decode)");
    assert_non_null(strstr(fleet_table_broken_get(t, "eu.v")->why, "state"));
    assert_non_null(strstr(fleet_table_broken_get(t, "eu.k")->why, "another key"));
    assert_non_null(strstr(fleet_table_broken_get(t, "zz.a")->why, "not configured"));

    /* The clock starts with a revision: the same one again keeps it, a new one restarts it. */
    assert_int_equal(fleet_table_put(t, "eu.g", 1, (const uint8_t *)"\xff", 1, now + 500),
                     GF_ERR_INVALID);
    assert_int_equal(fleet_table_broken_get(t, "eu.g")->since_unix_ms, now);
    assert_int_equal(fleet_table_put(t, "eu.g", 7, (const uint8_t *)"\xff", 1, now + 500),
                     GF_ERR_INVALID);
    assert_int_equal(fleet_table_broken_get(t, "eu.g")->since_unix_ms, now + 500);

    /* A valid record replaces it (an older broken revision then changes nothing); a
     * broken one replaces a valid one. */
    put(t, "eu", "g", 8, 1);
    assert_null(fleet_table_broken_get(t, "eu.g"));
    assert_int_equal(fleet_table_put(t, "eu.g", 7, (const uint8_t *)"\xff", 1, now), GF_OK);
    assert_null(fleet_table_broken_get(t, "eu.g"));
    assert_int_equal(fleet_table_candidates(t, "eu", 1, now, "m", c, 4), 1);
    fleet_candidates_free(c, 1);
    assert_int_equal(fleet_table_put(t, "eu.g", 9, (const uint8_t *)"\xff", 1, now),
                     GF_ERR_INVALID);
    assert_null(fleet_table_get(t, "eu.g"));
    assert_int_equal(fleet_table_candidates(t, "eu", 1, now, "m", c, 4), 0);

    /* A delete at or after its revision removes it; an older one does not. */
    fleet_table_delete(t, "eu.v", 1);
    assert_non_null(fleet_table_broken_get(t, "eu.v"));
    fleet_table_delete(t, "eu.v", 3);
    assert_null(fleet_table_broken_get(t, "eu.v"));

    /* A resync drops what it did not see. */
    fleet_table_resync_begin(t);
    assert_int_equal(fleet_table_put(t, "eu.k", 3, buf, len, now), GF_ERR_INVALID);
    assert_int_equal(fleet_table_resync_end(t), 4); /* 3 broken keys and ids/a */
    fleet_table_broken_each(t, broken_count, &n);
    assert_int_equal(n, 1);
    assert_non_null(fleet_table_broken_get(t, "eu.k"));
    fleet_table_free(t);
}

/* ---- the server-id index ---- */

typedef struct orphans {
    char keys[8][FLEET_KEY_MAX];
    size_t n;
} orphans;

static void orphan_seen(const fleet_id_entry *id, void *arg)
{
    orphans *o = arg;
    assert_true(o->n < 8);
    snprintf(o->keys[o->n++], FLEET_KEY_MAX, "%s", id->key);
}

static orphans orphan_ids(fleet_table *t, int64_t at)
{
    orphans o = {.n = 0};
    fleet_table_orphan_ids(t, at, 1500, orphan_seen, &o);
    return o;
}

static void put_id(fleet_table *t, const char *key, uint64_t rev, const char *value)
{
    assert_int_equal(fleet_table_put(t, key, rev, (const uint8_t *)value, strlen(value), now),
                     GF_OK);
}

static void index_keys_held_apart(void **state)
{
    (void)state;
    fleet_table *t = NULL;
    uint8_t buf[512];
    assert_int_equal(fleet_table_new(&t), GF_OK);
    put(t, "eu", "live", 1, now);
    put_id(t, "ids/live", 2, "1 eu");       /* its record is there */
    put_id(t, "ids/gone", 3, "1 eu");       /* old, no record: orphan */
    put_id(t, "ids/young", 4, "999000 us"); /* no record, claimed 1 s before now */
    put_id(t, "ids/junk", 5, "not an index");
    size_t len = record(buf, "eu", "bad", GAMEFN__V1__SERVER_STATE__SERVER_STATE_FREE, now,
                        now + 10000, 10, "m-x"); /* invalid (FREE with a match): broken */
    assert_int_equal(fleet_table_put(t, "eu.bad", 6, buf, len, now), GF_ERR_INVALID);
    put_id(t, "ids/bad", 7, "1 eu"); /* its record is there, if broken */
    assert_int_equal(fleet_table_count(t), 1);
    assert_int_equal(fleet_table_id_count(t), 4); /* the junk is not held */

    orphans o = orphan_ids(t, now);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.keys[0], "ids/gone");
    o = orphan_ids(t, now + 600); /* the young one is 1.6 s old now */
    assert_int_equal(o.n, 2);
    assert_string_equal(o.keys[0], "ids/gone");
    assert_string_equal(o.keys[1], "ids/young");

    /* A register rewrote it (claimed now): young again. An older revision is ignored. */
    put_id(t, "ids/gone", 9, "1000000 eu");
    put_id(t, "ids/gone", 8, "1 eu");
    o = orphan_ids(t, now + 600);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.keys[0], "ids/young");
    /* Deleted (an older delete is ignored); made junk: no longer held. */
    fleet_table_delete(t, "ids/young", 3);
    assert_int_equal(fleet_table_id_count(t), 4);
    fleet_table_delete(t, "ids/young", 10);
    put_id(t, "ids/gone", 11, "garbage");
    assert_int_equal(fleet_table_id_count(t), 2);
    assert_int_equal(orphan_ids(t, now + 600).n, 0);
    /* The live record deleted: its index is an orphan. */
    fleet_table_delete(t, "eu.live", 12);
    o = orphan_ids(t, now);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.keys[0], "ids/live");

    /* A resync drops what it did not mention. */
    fleet_table_resync_begin(t);
    put_id(t, "ids/live", 2, "1 eu");
    assert_int_equal(fleet_table_resync_end(t), 2); /* ids/bad and eu.bad */
    assert_int_equal(fleet_table_id_count(t), 1);
    fleet_table_free(t);
}

static void key_and_id_helpers(void **state)
{
    (void)state;
    char dc[GF_WIRE_NAME_MAX + 1], id[GF_WIRE_ID_MAX + 1], key[FLEET_KEY_MAX],
        value[FLEET_ID_VALUE_MAX];
    int64_t at = 0;
    assert_true(fleet_key_split("eu.gs-1", dc, id));
    assert_string_equal(dc, "eu");
    assert_string_equal(id, "gs-1");
    assert_false(fleet_key_split("nokey", dc, id));
    assert_false(fleet_key_split(".a", dc, id));
    assert_false(fleet_key_split("eu.", dc, id));
    assert_false(fleet_key_split("eu.a.b", dc, id));
    assert_false(fleet_key_split("ids/a", dc, id));
    assert_true(fleet_id_key("gs-1", key));
    assert_string_equal(key, "ids/gs-1");
    assert_true(fleet_is_id_key(key));
    assert_false(fleet_is_id_key("eu.gs-1"));
    assert_false(fleet_id_key("a.b", key));
    size_t len = fleet_id_value("eu", 1234, value);
    assert_string_equal(value, "1234 eu");
    assert_true(fleet_id_parse(value, len, dc, &at));
    assert_string_equal(dc, "eu");
    assert_int_equal(at, 1234);
    static const char *const bad[] = {"",      "1234",     " eu",        "12x4 eu",
                                      "1234 ", "1234 e.u", "1234 eu zz", "99999999999999999999 eu"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(fleet_id_parse(bad[i], strlen(bad[i]), dc, &at));
    assert_false(fleet_id_parse(NULL, 0, dc, &at));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(revisions_and_ranges), cmocka_unit_test(candidates_order_and_filters),
        cmocka_unit_test(resync_drops_unseen),  cmocka_unit_test(broken_keys_held_apart),
        cmocka_unit_test(key_and_id_helpers),   cmocka_unit_test(index_keys_held_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
