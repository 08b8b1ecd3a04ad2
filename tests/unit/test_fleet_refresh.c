/*
 * test_fleet_refresh.c — the heartbeat refresh (functions/fleet: fleet_heartbeat_skips,
 * fleet_config_refresh_ms): a table of heartbeats on stored records, each skipped or
 * written; and live servers simulated for an hour of heartbeats, late and with single
 * heartbeats lost, whose record is never stale when a heartbeat reaches the fleet, for
 * several interval/timeout pairs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_config.h"
#include "fleet_record.h"

enum { TIMEOUT = 10000, REFRESH = 3000 }; /* the defaults: 2 s interval, 10 s timeout */

/* A stored copy of next (pack, unpack), as the mirror would hold it. Caller frees. */
static Gamefn__V1__ServerRecord *round_trip(const Gamefn__V1__ServerRecord *r)
{
    size_t n = gamefn__v1__server_record__get_packed_size(r);
    uint8_t *buf = malloc(n + 1);
    assert_non_null(buf);
    gamefn__v1__server_record__pack(r, buf);
    Gamefn__V1__ServerRecord *out = gamefn__v1__server_record__unpack(NULL, n, buf);
    free(buf);
    assert_non_null(out);
    return out;
}

typedef enum { K_FREE, K_ALLOCATED, K_DRAINING } rec_kind;

/* A record registered at `stamped` (capacity 10, two attributes), then allocated to m-1
 * with 2 players, or DRAINING; stale_unix_ms = stale, or stamped + TIMEOUT when 0. */
static Gamefn__V1__ServerRecord *stored(rec_kind kind, int64_t stamped, int64_t stale)
{
    Gamefn__V1__RegisterServerRequest req = GAMEFN__V1__REGISTER_SERVER_REQUEST__INIT;
    Gamefn__V1__RegisterServerRequest__AttributesEntry a[2] = {
        GAMEFN__V1__REGISTER_SERVER_REQUEST__ATTRIBUTES_ENTRY__INIT,
        GAMEFN__V1__REGISTER_SERVER_REQUEST__ATTRIBUTES_ENTRY__INIT};
    Gamefn__V1__RegisterServerRequest__AttributesEntry *ap[2] = {&a[0], &a[1]};
    a[0].key = "map";
    a[0].value = "dust";
    a[1].key = "mode";
    a[1].value = "duel";
    req.server_id = "gs-7";
    req.datacenter = "eu-west";
    req.address = "203.0.113.7";
    req.port = 7777;
    req.capacity = 10;
    req.version = "1.2.3";
    req.attributes = ap;
    req.n_attributes = 2;
    fleet_next reg, alloc;
    fleet_apply_register(NULL, &req, stamped, TIMEOUT, &reg);
    Gamefn__V1__ServerRecord *r = &reg.rec;
    char *players[] = {"p1", "p2"}, *tickets[] = {"t1", "t2"};
    if (kind == K_ALLOCATED) {
        fleet_apply_allocate(&reg.rec, "m-1", players, 2, tickets, 2, stamped, &alloc);
        r = &alloc.rec;
        r->players = 2;
    } else if (kind == K_DRAINING) {
        r->state = GAMEFN__V1__SERVER_STATE__SERVER_STATE_DRAINING;
        r->free_since_unix_ms = 0;
    }
    if (stale)
        r->stale_unix_ms = stale;
    return round_trip(r);
}

typedef struct skip_case {
    const char *name;
    rec_kind kind;
    int64_t stamped, stale; /* the record's stamps (stale 0: stamped + TIMEOUT) */
    uint32_t players;
    bool draining;
    const char *finished;
    int64_t now, refresh;
    bool skip;
} skip_case;

static void heartbeat_skip_table(void **state)
{
    (void)state;
    const skip_case cases[] = {
        {"unchanged, 2 s after the write", K_FREE, 1000, 0, 0, false, "", 3000, REFRESH, true},
        {"unchanged, 1 ms inside the refresh period", K_FREE, 1000, 0, 0, false, "", 3999, REFRESH,
         true},
        {"unchanged, refresh period reached", K_FREE, 1000, 0, 0, false, "", 4000, REFRESH, false},
        {"unchanged, 8 s after the write", K_FREE, 1000, 0, 0, false, "", 9000, REFRESH, false},
        {"unchanged, stale already", K_FREE, 1000, 0, 0, false, "", 12000, REFRESH, false},
        {"unchanged, same instant as the write", K_FREE, 1000, 0, 0, false, "", 1000, REFRESH,
         true},
        {"refresh 0 (timeout below 4 intervals)", K_FREE, 1000, 0, 0, false, "", 3000, 0, false},
        {"players changed", K_FREE, 1000, 0, 1, false, "", 3000, REFRESH, false},
        {"players above the capacity (the write path refuses it)", K_FREE, 1000, 0, 11, false, "",
         3000, REFRESH, false},
        {"draining starts", K_FREE, 1000, 0, 0, true, "", 3000, REFRESH, false},
        {"DRAINING, draining again", K_DRAINING, 1000, 0, 0, true, "", 3000, REFRESH, true},
        {"DRAINING, draining not repeated (one-way)", K_DRAINING, 1000, 0, 0, false, "", 3000,
         REFRESH, true},
        {"ALLOCATED, same players", K_ALLOCATED, 1000, 0, 2, false, "", 3000, REFRESH, true},
        {"ALLOCATED, a player left", K_ALLOCATED, 1000, 0, 1, false, "", 3000, REFRESH, false},
        {"ALLOCATED, draining starts", K_ALLOCATED, 1000, 0, 2, true, "", 3000, REFRESH, false},
        {"game over for the running match", K_ALLOCATED, 1000, 0, 0, false, "m-1", 3000, REFRESH,
         false},
        {"game over for the running match, same players", K_ALLOCATED, 1000, 0, 2, false, "m-1",
         3000, REFRESH, false},
        {"game over for a match already over (a retry)", K_FREE, 1000, 0, 0, false, "m-0", 3000,
         REFRESH, false},
        {"stamped in this clock's future", K_FREE, 4000, 0, 0, false, "", 3000, REFRESH, false},
        {"written under a 5 s timeout", K_FREE, 1000, 6000, 0, false, "", 3000, REFRESH, false},
        {"written under a 30 s timeout", K_FREE, 1000, 31000, 0, false, "", 3000, REFRESH, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const skip_case *c = &cases[i];
        Gamefn__V1__ServerRecord *old = stored(c->kind, c->stamped, c->stale);
        Gamefn__V1__HeartbeatRequest h = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
        h.server_id = "gs-7";
        h.datacenter = "eu-west";
        h.players = c->players;
        h.draining = c->draining;
        h.finished_match_id = (char *)(uintptr_t)c->finished;
        bool got = fleet_heartbeat_skips(old, &h, c->now, TIMEOUT, c->refresh);
        if (got != c->skip)
            fail_msg("case %zu (%s): %s, want %s", i, c->name, got ? "skipped" : "written",
                     c->skip ? "skipped" : "written");
        gamefn__v1__server_record__free_unpacked(old, NULL);
    }
    Gamefn__V1__HeartbeatRequest h = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    assert_false(fleet_heartbeat_skips(NULL, &h, 3000, TIMEOUT, REFRESH)); /* no copy: write */
}

/* A field a newer schema added (kept as an unknown field) survives a skip as it survives a
 * rewrite: it is the same in both, so it does not force a write. */
static void unknown_fields_do_not_force_a_write(void **state)
{
    (void)state;
    Gamefn__V1__ServerRecord *old = stored(K_FREE, 1000, 0);
    size_t n = gamefn__v1__server_record__get_packed_size(old);
    uint8_t *buf = malloc(n + 4);
    assert_non_null(buf);
    gamefn__v1__server_record__pack(old, buf);
    buf[n] = 0xa0; /* field 100, varint */
    buf[n + 1] = 0x06;
    buf[n + 2] = 0x2a; /* = 42 */
    Gamefn__V1__ServerRecord *newer = gamefn__v1__server_record__unpack(NULL, n + 3, buf);
    free(buf);
    assert_non_null(newer);
    assert_int_equal(newer->base.n_unknown_fields, 1);
    Gamefn__V1__HeartbeatRequest h = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
    h.server_id = "gs-7";
    h.datacenter = "eu-west";
    assert_true(fleet_heartbeat_skips(newer, &h, 3000, TIMEOUT, REFRESH));
    h.players = 3;
    assert_false(fleet_heartbeat_skips(newer, &h, 3000, TIMEOUT, REFRESH));
    gamefn__v1__server_record__free_unpacked(newer, NULL);
    gamefn__v1__server_record__free_unpacked(old, NULL);
}

static uint64_t next_rand(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return *seed >> 33;
}

/* A server sends a heartbeat every interval for an hour (at most 20,000 of them); each
 * reaches the fleet up to half an interval late, and one in seven is lost (never two in a
 * row: two lost heartbeats may be a death by design once skips are allowed). When a
 * heartbeat arrives, the record must not be stale yet — it is not stale to anyone before
 * (the allocator, the sweep): the heartbeat that is written is the one that keeps it. The
 * fleet writes only when fleet_heartbeat_skips says so; the writes are counted. */
static void live_server_never_looks_stale(void **state)
{
    (void)state;
    const struct {
        int64_t interval, timeout;
    } configs[] = {{2000, 10000}, {500, 3000}, {5000, 25000}, {100, 1000},
                   {2000, 6000},  {500, 1500}, {1000, 60000}, {2000, 8000}};
    /* (A timeout of 2 intervals, the least allowed, writes every heartbeat as ever and
     * survives a lost one only if the next is not late: left out.) */
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        int64_t iv = configs[c].interval, to = configs[c].timeout;
        fleet_config cfg = {.heartbeat_interval_ms = iv, .heartbeat_timeout_ms = to};
        int64_t refresh = fleet_config_refresh_ms(&cfg);
        uint64_t seed = 42 + c;
        Gamefn__V1__ServerRecord *rec = stored(K_FREE, 0, to);
        Gamefn__V1__HeartbeatRequest h = GAMEFN__V1__HEARTBEAT_REQUEST__INIT;
        h.server_id = "gs-7";
        h.datacenter = "eu-west";
        long sent = 3600000 / iv < 20000 ? 3600000 / iv : 20000, arrived = 0, writes = 0;
        bool lost_last = false;
        int64_t now = 0;
        for (long k = 1; k <= sent; k++) {
            bool lost = !lost_last && next_rand(&seed) % 7 == 0;
            lost_last = lost;
            if (lost)
                continue;
            now = k * iv + (int64_t)(next_rand(&seed) % (uint64_t)(iv / 2 + 1));
            arrived++;
            if (fleet_stale(rec, now))
                fail_msg("interval %lld timeout %lld: stale at heartbeat %ld (%lld ms after its "
                         "stamp)",
                         (long long)iv, (long long)to, k,
                         (long long)(now - rec->last_heartbeat_unix_ms));
            if (fleet_heartbeat_skips(rec, &h, now, to, refresh))
                continue;
            fleet_next next;
            fleet_game_over g = {.decided = NULL};
            fleet_problem p;
            assert_int_equal(fleet_apply_heartbeat(rec, &h, now, to, &next, &g, &p), GF_OK);
            Gamefn__V1__ServerRecord *written = round_trip(&next.rec);
            gamefn__v1__server_record__free_unpacked(rec, NULL);
            rec = written;
            writes++;
        }
        if (refresh == 0) {
            assert_int_equal(writes, arrived);
        } else {
            /* Two writes are at least `refresh` apart (as the stamps count). */
            if (writes > now / refresh + 1)
                fail_msg("interval %lld timeout %lld: %ld writes in %lld ms", (long long)iv,
                         (long long)to, writes, (long long)now);
            if (writes * 4 > arrived * 3)
                fail_msg("interval %lld timeout %lld: %ld writes for %ld heartbeats", (long long)iv,
                         (long long)to, writes, arrived);
        }
        gamefn__v1__server_record__free_unpacked(rec, NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(heartbeat_skip_table),
        cmocka_unit_test(unknown_fields_do_not_force_a_write),
        cmocka_unit_test(live_server_never_looks_stale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
