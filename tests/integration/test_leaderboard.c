/*
 * The leaderboard function end to end on a real nats-server (the event mapping, EVENTS,
 * its partitioned group, bucket `leaderboard`, LB_SNAPSHOTS):
 *  - the reference design's acceptance test: 10,000 events produced, the consumer
 *    stopped midway for a while and restarted: exactly 10,000 unique events applied, 0
 *    duplicates, recomputed from what was produced (each delta carries a count in its
 *    high bits), with producer retries and spool replays (same source/seq, new Msg-Id);
 *  - 3 replicas, one SIGKILLed mid-batch and one added midway: every event once, and
 *    per-player order (a `set` board ends at each player's last event);
 *  - top, page, around and rank against a brute-force reference on random data with
 *    ties, on a descending incr board, an ascending best board and a daily board across a
 *    period reset (yesterday = "previous");
 *  - no scores yet vs unknown board vs unknown period vs page past the end;
 *  - a restarted replica rebuilds from the last snapshot plus a replay after it and
 *    answers the same as before;
 *  - poison (a ScoreEvent for a board not in config) and malformed events reach the DLQ
 *    with their reasons while the partition goes on; after the fix, `gamefn dlq
 *    redrive` twice applies the event once; `gamefn lb` answers and names errors.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/v1/error.pb-c.h"
#include "gamefn/v1/state.pb-c.h"
#include "period.h"
#include "lb_support.h"

#define COUNT_SHIFT 20 /* score = applications << 20 + sum of small parts */
#define DAY_MS      INT64_C(86400000)

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* ---- producing ------------------------------------------------------------------------- */

typedef struct produced {
    size_t players;
    int64_t *sum;     /* expected global score per player */
    int64_t *updated; /* occurred_unix_ms of the player's last event */
    uint64_t *count;
    int64_t *last; /* "last" board: the player's last value */
} produced;

static void produced_init(produced *p, size_t players)
{
    p->players = players;
    p->sum = calloc(players, sizeof *p->sum);
    p->updated = calloc(players, sizeof *p->updated);
    p->count = calloc(players, sizeof *p->count);
    p->last = calloc(players, sizeof *p->last);
}

static void produced_fini(produced *p)
{
    free(p->sum);
    free(p->updated);
    free(p->count);
    free(p->last);
}

static void publish(jsCtx *js, const char *source, uint64_t seq, size_t player, int64_t delta,
                    const char *board, int64_t occurred, const char *msg_id)
{
    char pid[16];
    uint8_t *data = NULL;
    size_t len = 0;
    snprintf(pid, sizeof pid, "pl%zu", player % 100000);
    assert_int_equal(gf_ev_score(source, seq, pid, delta, board, occurred, &data, &len), 0);
    assert_int_equal(gf_ev_publish(js, pid, "score", data, len, source, seq, msg_id, true), 0);
    free(data);
}

/* Event i of the stream: a global delta carrying a count, and the same player's `last`. */
static void produce_one(jsCtx *js, produced *p, size_t i, uint64_t *seqs, int64_t base, bool record)
{
    static const char *const sources[] = {"gs-a", "gs-b", "gs-c"};
    size_t s = i % 3;
    size_t player = (i * 7919) % p->players;
    int64_t delta = ((int64_t)1 << COUNT_SHIFT) + (int64_t)(i % 997) + 1;
    int64_t occurred = base + (int64_t)i;
    uint64_t seq = ++seqs[s];
    publish(js, sources[s], seq, player, delta, NULL, occurred, NULL);
    if (record) {
        p->sum[player] += delta;
        p->count[player]++;
        p->updated[player] = occurred;
    }
    if (i % 100 == 0) /* a producer retry: same Msg-Id */
        publish(js, sources[s], seq, player, delta, NULL, occurred, NULL);
    if (i % 150 == 0) { /* a spool replay after the duplicate window: a new Msg-Id */
        char id[64];
        snprintf(id, sizeof id, "replay-%zu", i);
        publish(js, sources[s], seq, player, delta, NULL, occurred, id);
    }
}

/* ---- checking --------------------------------------------------------------------------- */

/* A reference board from per-player arrays (players without a count have no score). */
static void ref_from(ref_board *ref, size_t players, const int64_t *score, const int64_t *updated,
                     const uint64_t *count, bool ascending)
{
    ref->e = calloc(players, sizeof(ref_entry));
    ref->n = players;
    ref->ascending = ascending;
    for (size_t i = 0; i < players; i++) {
        snprintf(ref->e[i].player, sizeof ref->e[i].player, "pl%zu", i % 100000);
        ref->e[i].score = score[i];
        ref->e[i].updated = updated[i];
        ref->e[i].has = count[i] > 0;
    }
    ref_rank(ref);
}

/* Pages through a whole board and compares it with the reference. */
static bool board_matches(gf_fnenv *env, const char *board, const char *period,
                          const ref_board *ref, bool report)
{
    bool ok = true;
    for (uint64_t start = 1; ok && (start <= ref->n || start == 1); start += 100) {
        int code = 0;
        Gamefn__V1__LeaderboardQueryReply *r = lb_page(env, board, period, start, 100, &code);
        ok = r && (r->pending == 0 || !report) && ref_matches(ref, start - 1, r, report);
        if (!r && report)
            fprintf(stderr, "board %s page %" PRIu64 ": error %d\n", board, start, code);
        lb_reply_free(r);
    }
    return ok;
}

static bool global_matches(gf_fnenv *env, void *arg)
{
    const produced *p = arg;
    ref_board ref;
    ref_from(&ref, p->players, p->sum, p->updated, p->count, false);
    bool ok = board_matches(env, "global", NULL, &ref, false);
    free(ref.e);
    return ok;
}

static void assert_global(gf_fnenv *env, produced *p)
{
    if (gf_fnenv_eventually(global_matches, env, p, 60000))
        return;
    ref_board ref;
    ref_from(&ref, p->players, p->sum, p->updated, p->count, false);
    board_matches(env, "global", NULL, &ref, true);
    free(ref.e);
    fail_msg("board global does not match what was produced");
}

/* Applications per player from the scores (high bits): their sum and the doubles. */
static void count_applied(gf_fnenv *env, const produced *p, uint64_t *applied, uint64_t *doubles,
                          uint64_t *lost)
{
    *applied = *doubles = *lost = 0;
    for (size_t i = 0; i < p->players; i++) {
        char player[16];
        int64_t score = 0;
        int code = 0;
        snprintf(player, sizeof player, "pl%zu", i % 100000);
        Gamefn__V1__LeaderboardQueryReply *r = lb_rank(env, "global", NULL, player, &code);
        if (r && r->n_entries == 1)
            score = r->entries[0]->score;
        lb_reply_free(r);
        uint64_t c = (uint64_t)(score >> COUNT_SHIFT);
        *applied += c;
        *doubles += c > p->count[i] ? c - p->count[i] : 0;
        *lost += c < p->count[i] ? p->count[i] - c : 0;
    }
}

/* ---- the acceptance test ----------------------------------------------------------------- */

static void ten_thousand_events_stop_restart_exactly_once(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_proc a = {0}, b = {0};
    produced p;
    produced_init(&p, 200);
    assert_int_equal(lb_env_start(&env, "1m", NULL), 0);
    jsCtx *js = gf_ev_js(env.nc);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &a, LB_BIN, "leaderboard", "a", NULL), 0);
    uint64_t seqs[3] = {0};
    int64_t base = gf_clock_unix_ms() - 60000;
    for (size_t i = 0; i < 10000; i++) {
        produce_one(js, &p, i, seqs, base, true);
        if (i == 5000) { /* the consumer stops midway, for a while, while events go on */
            assert_int_equal(gf_ev_flush(js), 0);
            assert_true(gf_fnenv_stop(&a, 15000));
        }
        if (i == 7500)
            gf_clock_sleep_ms(2000);
    }
    assert_int_equal(gf_ev_flush(js), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &b, LB_BIN, "leaderboard", "b", NULL), 0);
    assert_global(&env, &p);
    uint64_t applied, doubles, lost;
    count_applied(&env, &p, &applied, &doubles, &lost);
    printf("acceptance: 10000 produced, %" PRIu64 " applied, %" PRIu64 " duplicates, %" PRIu64
           " lost\n",
           applied, doubles, lost);
    assert_int_equal(applied, 10000);
    assert_int_equal(doubles, 0);
    assert_int_equal(lost, 0);
    assert_true(gf_fnenv_stop(&b, 15000));
    jsCtx_Destroy(js);
    produced_fini(&p);
    gf_fnenv_free(&env);
}

/* ---- replicas killed and added ----------------------------------------------------------- */

typedef struct last_want {
    const produced *p;
} last_want;

/* Board "last" (set): every player at the value of its last event in stream order. */
static bool last_matches(gf_fnenv *env, void *arg)
{
    const produced *p = arg;
    for (size_t i = 0; i < p->players; i++) {
        char player[16];
        int code = 0;
        snprintf(player, sizeof player, "pl%zu", i % 100000);
        Gamefn__V1__LeaderboardQueryReply *r = lb_rank(env, "last", NULL, player, &code);
        bool ok = r && r->n_entries == 1 && r->entries[0]->score == p->last[i];
        lb_reply_free(r);
        if (!ok)
            return false;
    }
    return true;
}

static void replicas_killed_and_added_once_and_in_order(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_proc r[4] = {{0}};
    produced p;
    produced_init(&p, 300);
    assert_int_equal(lb_env_start(&env, "1m", NULL), 0);
    jsCtx *js = gf_ev_js(env.nc);
    const char *names[] = {"r1", "r2", "r3", "r4"};
    for (int i = 0; i < 3; i++)
        assert_int_equal(gf_fnenv_spawn_ready(&env, &r[i], LB_BIN, "leaderboard", names[i], NULL),
                         0);
    uint64_t seqs[3] = {0}, lseq = 0;
    int64_t base = gf_clock_unix_ms() - 60000;
    for (size_t i = 0; i < 8000; i++) {
        produce_one(js, &p, i, seqs, base, true);
        size_t player = (i * 104729) % p.players;
        p.last[player]++; /* values grow per player: the last in stream order is the max */
        publish(js, "gs-last", ++lseq, player, p.last[player], "last", base + (int64_t)i, NULL);
        if (i == 2500) { /* killed while batches are in flight */
            assert_int_equal(gf_ev_flush(js), 0);
            gf_clock_sleep_ms(50);
            gf_proc_signal(&r[1], SIGKILL);
            assert_int_equal(gf_proc_wait(&r[1], 5000), 0);
        }
        if (i == 5000)
            assert_int_equal(gf_fnenv_spawn_ready(&env, &r[3], LB_BIN, "leaderboard", "r4", NULL),
                             0);
    }
    assert_int_equal(gf_ev_flush(js), 0);
    assert_global(&env, &p);
    assert_true(gf_fnenv_eventually(last_matches, &env, &p, 30000));
    uint64_t applied, doubles, lost;
    count_applied(&env, &p, &applied, &doubles, &lost);
    printf("replicas: 8000 produced, %" PRIu64 " applied, %" PRIu64 " duplicates, %" PRIu64
           " lost\n",
           applied, doubles, lost);
    assert_int_equal(applied, 8000);
    assert_int_equal(doubles + lost, 0);
    for (int i = 0; i < 4; i++) {
        if (i != 1)
            assert_true(gf_fnenv_stop(&r[i], 15000));
    }
    gf_proc_cleanup(&r[1]);
    jsCtx_Destroy(js);
    produced_fini(&p);
    gf_fnenv_free(&env);
}

/* ---- queries against brute force ------------------------------------------------------------ */

typedef struct boards_ref {
    size_t players;
    int64_t *score[4], *updated[4]; /* global, lap, daily yesterday, daily today */
    uint64_t *count[4];
} boards_ref;

static void boards_ref_init(boards_ref *b, size_t players)
{
    b->players = players;
    for (int k = 0; k < 4; k++) {
        b->score[k] = calloc(players, sizeof(int64_t));
        b->updated[k] = calloc(players, sizeof(int64_t));
        b->count[k] = calloc(players, sizeof(uint64_t));
    }
}

static void boards_ref_fini(boards_ref *b)
{
    for (int k = 0; k < 4; k++) {
        free(b->score[k]);
        free(b->updated[k]);
        free(b->count[k]);
    }
}

static bool all_boards_match(gf_fnenv *env, const boards_ref *b, const char *yesterday,
                             const char *today, bool report)
{
    static const char *const names[] = {"global", "lap", "daily", "daily"};
    const char *periods[] = {NULL, NULL, yesterday, today};
    bool ok = true;
    for (int k = 0; k < 4 && ok; k++) {
        ref_board ref;
        ref_from(&ref, b->players, b->score[k], b->updated[k], b->count[k], k == 1);
        ok = board_matches(env, names[k], periods[k], &ref, report);
        free(ref.e);
    }
    return ok;
}

typedef struct match_arg {
    const boards_ref *b;
    const char *yesterday, *today;
} match_arg;

static bool match_pred(gf_fnenv *env, void *arg)
{
    const match_arg *m = arg;
    return all_boards_match(env, m->b, m->yesterday, m->today, false);
}

static void check_queries(gf_fnenv *env, const boards_ref *b, int k, const char *board,
                          const char *period, uint64_t *rng)
{
    ref_board ref;
    ref_from(&ref, b->players, b->score[k], b->updated[k], b->count[k], k == 1);
    int code = 0;
    Gamefn__V1__LeaderboardQueryReply *r = lb_top(env, board, period, 10, &code);
    assert_true(ref_matches(&ref, 0, r, true));
    assert_int_equal(r->n_entries, ref.n < 10 ? ref.n : 10);
    lb_reply_free(r);
    /* a page past the end: no entries, total_players still said */
    r = lb_page(env, board, period, ref.n + 5, 10, &code);
    assert_non_null(r);
    assert_int_equal(r->n_entries, 0);
    assert_int_equal(r->total_players, ref.n);
    lb_reply_free(r);
    for (int t = 0; t < 20; t++) {
        size_t at = rnd(rng) % ref.n;
        uint32_t before = (uint32_t)(rnd(rng) % 6), after = (uint32_t)(rnd(rng) % 6);
        r = lb_around(env, board, period, ref.e[at].player, before, after, &code);
        size_t first = at >= before ? at - before : 0;
        size_t last = at + after < ref.n ? at + after : ref.n - 1;
        assert_true(ref_matches(&ref, first, r, true));
        assert_int_equal(r->n_entries, last - first + 1);
        lb_reply_free(r);
        r = lb_rank(env, board, period, ref.e[at].player, &code);
        assert_true(ref_matches(&ref, at, r, true));
        assert_int_equal(r->n_entries, 1);
        lb_reply_free(r);
    }
    free(ref.e);
}

static void queries_match_brute_force_across_a_period_reset(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_proc a = {0};
    boards_ref b;
    boards_ref_init(&b, 250);
    assert_int_equal(lb_env_start(&env, "1m", "      - {name: quiet, period: weekly}\n"), 0);
    jsCtx *js = gf_ev_js(env.nc);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &a, LB_BIN, "leaderboard", "a", NULL), 0);
    int64_t now = gf_clock_unix_ms();
    int64_t base[2] = {now - DAY_MS - 100000, now - 100000}; /* yesterday, today */
    uint64_t rng = 12345, seq = 0;
    for (size_t i = 0; i < 4000; i++) {
        size_t pl = rnd(&rng) % b.players;
        int64_t occurred = base[i % 2] + (int64_t)i;
        int kind = (int)(rnd(&rng) % 3);
        if (kind == 0) { /* global incr, small deltas: ties */
            int64_t d = (int64_t)(rnd(&rng) % 5) + 1;
            publish(js, "gs-q", ++seq, pl, d, NULL, occurred, NULL);
            b.score[0][pl] += d;
            b.updated[0][pl] = occurred;
            b.count[0][pl]++;
        } else if (kind == 1) { /* lap: best, ascending */
            int64_t v = (int64_t)(rnd(&rng) % 40) + 1;
            publish(js, "gs-q", ++seq, pl, v, "lap", occurred, NULL);
            if (b.count[1][pl] == 0 || v < b.score[1][pl]) {
                b.score[1][pl] = v;
                b.updated[1][pl] = occurred;
            }
            b.count[1][pl]++;
        } else { /* daily incr: yesterday's and today's boards */
            int64_t d = (int64_t)(rnd(&rng) % 4) + 1;
            int day = 2 + (int)(i % 2);
            publish(js, "gs-q", ++seq, pl, d, "daily", occurred, NULL);
            b.score[day][pl] += d;
            b.updated[day][pl] = occurred;
            b.count[day][pl]++;
        }
    }
    assert_int_equal(gf_ev_flush(js), 0);
    gf_period yesterday, today;
    assert_int_equal(gf_period_of(GF_PERIOD_DAILY, base[0], &yesterday), GF_OK);
    assert_int_equal(gf_period_of(GF_PERIOD_DAILY, base[1], &today), GF_OK);
    match_arg m = {&b, yesterday.id, today.id};
    if (!gf_fnenv_eventually(match_pred, &env, &m, 60000)) {
        all_boards_match(&env, &b, yesterday.id, today.id, true);
        fail_msg("the boards do not match the brute-force reference");
    }
    check_queries(&env, &b, 0, "global", NULL, &rng);
    check_queries(&env, &b, 1, "lap", NULL, &rng);
    check_queries(&env, &b, 2, "daily", yesterday.id, &rng);
    check_queries(&env, &b, 3, "daily", today.id, &rng);
    /* "current" and "previous" by the replica's clock (unless the day just turned) */
    gf_period now_p;
    assert_int_equal(gf_period_of(GF_PERIOD_DAILY, gf_clock_unix_ms(), &now_p), GF_OK);
    if (strcmp(now_p.id, today.id) == 0) {
        check_queries(&env, &b, 3, "daily", "current", &rng);
        check_queries(&env, &b, 2, "daily", "previous", &rng);
    }
    /* no scores yet (OK, empty) vs unknown board vs periods not kept or malformed */
    int code = 0;
    Gamefn__V1__LeaderboardQueryReply *r = lb_top(&env, "quiet", NULL, 10, &code);
    assert_non_null(r);
    assert_int_equal(r->n_entries, 0);
    assert_int_equal(r->total_players, 0);
    assert_true(r->as_of_stream_seq > 0);
    assert_int_equal(r->pending, 0);
    lb_reply_free(r);
    assert_null(lb_top(&env, "nope", NULL, 10, &code));
    assert_int_equal(code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND);
    assert_null(lb_top(&env, "daily", "1999-01-01", 10, &code));
    assert_int_equal(code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND);
    assert_null(lb_top(&env, "daily", "yesterday", 10, &code));
    assert_int_equal(code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT);
    assert_null(lb_top(&env, "global", "previous", 10, &code));
    assert_int_equal(code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND);
    assert_null(lb_rank(&env, "global", NULL, "nobody", &code));
    assert_int_equal(code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_NOT_FOUND);
    assert_null(lb_top(&env, "global", NULL, 101, &code));
    assert_int_equal(code, GAMEFN__V1__ERROR_CODE__ERROR_CODE_INVALID_ARGUMENT);
    assert_true(gf_fnenv_stop(&a, 15000));
    jsCtx_Destroy(js);
    boards_ref_fini(&b);
    gf_fnenv_free(&env);
}

/* ---- rebuild from snapshot + replay ---------------------------------------------------------- */

static bool snapshot_exists(gf_fnenv *env, void *arg)
{
    uint64_t *as_of = arg;
    natsMsg *m = NULL;
    if (js_GetLastMsg(&m, env->js, "LB_SNAPSHOTS", "gamefn.v1.lb.snapshot.manifest", NULL, NULL) !=
        NATS_OK)
        return false;
    Gamefn__V1__LeaderboardSnapshot *s = gamefn__v1__leaderboard_snapshot__unpack(
        NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
    natsMsg_Destroy(m);
    bool ok = s && s->as_of_stream_seq >= *as_of;
    if (s)
        gamefn__v1__leaderboard_snapshot__free_unpacked(s, NULL);
    return ok;
}

static void restarted_replica_rebuilds_from_snapshot_and_answers_the_same(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_proc a = {0}, b = {0};
    produced p;
    produced_init(&p, 500);
    assert_int_equal(lb_env_start(&env, "1s", NULL), 0);
    jsCtx *js = gf_ev_js(env.nc);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &a, LB_BIN, "leaderboard", "a", NULL), 0);
    uint64_t seqs[3] = {0};
    int64_t base = gf_clock_unix_ms() - 60000;
    for (size_t i = 0; i < 4000; i++)
        produce_one(js, &p, i, seqs, base, true);
    assert_int_equal(gf_ev_flush(js), 0);
    assert_global(&env, &p);
    uint64_t min_as_of = 1;
    assert_true(gf_fnenv_eventually(snapshot_exists, &env, &min_as_of, 20000));
    assert_true(gf_fnenv_wait_log(&a, "leaderboard snapshot written", 5000));
    assert_true(gf_fnenv_stop(&a, 15000)); /* no newer snapshot from here on */
    for (size_t i = 4000; i < 5000; i++)   /* written after the snapshot: replayed */
        produce_one(js, &p, i, seqs, base, true);
    assert_int_equal(gf_ev_flush(js), 0);
    /* A fresh replica: snapshot, then the replay of what came after, then the consumer. */
    assert_int_equal(gf_fnenv_spawn_ready(&env, &b, LB_BIN, "leaderboard", "b", NULL), 0);
    assert_true(gf_fnenv_wait_log(&b, "leaderboard snapshot loaded", 1000));
    assert_true(gf_fnenv_wait_log(&b, "leaderboard rebuilt", 1000));
    assert_int_equal(gf_fnenv_log_count(&b, "snapshot_as_of=0 "), 0);
    assert_global(&env, &p);
    int code = 0;
    Gamefn__V1__LeaderboardQueryReply *r = lb_top(&env, "global", NULL, 100, &code);
    assert_non_null(r);
    assert_int_equal(r->total_players, 500);
    lb_reply_free(r);
    assert_true(gf_fnenv_stop(&b, 15000));
    jsCtx_Destroy(js);
    produced_fini(&p);
    gf_fnenv_free(&env);
}

/* ---- poison: an unknown board, dead-lettered, re-driven after the fix -------------------- */

static bool dlq_lists(gf_fnenv *env, void *arg)
{
    const char *want = arg;
    cli_result r = cli_run(env, NULL, "dlq", "ls", "--consumer", "leaderboard", NULL);
    bool ok = r.code == 0 && strstr(r.out, want) != NULL;
    cli_result_free(&r);
    return ok;
}

typedef struct score_want {
    const char *board, *player;
    int64_t score;
} score_want;

static bool score_is(gf_fnenv *env, void *arg)
{
    const score_want *w = arg;
    int code = 0;
    Gamefn__V1__LeaderboardQueryReply *r = lb_rank(env, w->board, NULL, w->player, &code);
    bool ok = r && r->n_entries == 1 && r->entries[0]->score == w->score;
    lb_reply_free(r);
    return ok;
}

static void poison_and_malformed_dead_lettered_then_redriven_once(void **state)
{
    (void)state;
    gf_fnenv env;
    gf_proc a = {0}, b = {0}, mover = {0};
    cli_result r = {0};
    assert_int_equal(lb_env_start(&env, "1m", NULL), 0);
    jsCtx *js = gf_ev_js(env.nc);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &mover, DLQ_BIN, "dlq", "mover", NULL), 0);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &a, LB_BIN, "leaderboard", "a", NULL), 0);
    int64_t now = gf_clock_unix_ms();
    publish(js, "gs-p", 1, 1, 500, "bonus", now, NULL); /* a board nobody configured */
    publish(js, "gs-p", 2, 1, 7, NULL, now, NULL);      /* the partition goes on */
    assert_int_equal(gf_ev_flush(js), 0);
    score_want global = {"global", "pl1", 7};
    assert_true(gf_fnenv_eventually(score_is, &env, &global, 20000));
    assert_true(gf_fnenv_eventually(dlq_lists, &env, (void *)"unknown board 'bonus'", 20000));
    /* malformed: dead-lettered with their reasons, the leaderboard keeps working */
    assert_int_equal(gf_ev_publish_raw(env.js, "gamefn.v1.event.pl1.score", "junk", 4, "m1"), 0);
    uint8_t *big = calloc(1, 70000);
    assert_int_equal(gf_ev_publish_raw(env.js, "gamefn.v1.event.pl1.score", big, 70000, "m2"), 0);
    free(big);
    assert_true(gf_fnenv_eventually(dlq_lists, &env, (void *)"not a GameEvent", 20000));
    assert_true(gf_fnenv_eventually(dlq_lists, &env, (void *)"exceeds 65536", 20000));
    assert_true(gf_proc_running(&a));
    publish(js, "gs-p", 3, 1, 3, NULL, now, NULL);
    assert_int_equal(gf_ev_flush(js), 0);
    global.score = 10;
    assert_true(gf_fnenv_eventually(score_is, &env, &global, 20000));

    /* The fix: board bonus configured; the letter re-driven twice. */
    assert_true(gf_fnenv_stop(&a, 15000));
    FILE *f = fopen(env.config_path, "a");
    assert_non_null(f);
    fprintf(f, "      - {name: bonus}\n");
    fclose(f);
    assert_int_equal(gf_fnenv_spawn_ready(&env, &b, LB_BIN, "leaderboard", "b", NULL), 0);
    cli_result_free(&r);
    r = cli_run(&env, NULL, "dlq", "ls", "--json", "--consumer", "leaderboard", NULL);
    assert_int_equal(r.code, 0);
    char *at = strstr(r.out, "unknown board");
    assert_non_null(at);
    char *seq = NULL;
    for (char *p = at; p > r.out && !seq; p--) /* this letter's "dlq_seq":N */
        seq = strncmp(p, "\"dlq_seq\":", 10) == 0 ? p + 10 : NULL;
    assert_non_null(seq);
    char seqtext[24];
    snprintf(seqtext, sizeof seqtext, "%lld", strtoll(seq, NULL, 10));
    cli_result_free(&r);
    r = cli_run(&env, NULL, "dlq", "redrive", seqtext, NULL);
    assert_int_equal(r.code, 0);
    cli_result_free(&r);
    r = cli_run(&env, NULL, "dlq", "redrive", seqtext, NULL);
    assert_int_equal(r.code, 0);
    score_want bonus = {"bonus", "pl1", 500};
    assert_true(gf_fnenv_eventually(score_is, &env, &bonus, 20000));
    gf_clock_sleep_ms(1500);
    assert_true(score_is(&env, &bonus)); /* once, not twice */
    assert_true(score_is(&env, &global));
    cli_result_free(&r);
    r = cli_run(&env, NULL, "lb", "rank", "pl1", "--board", "bonus", NULL);
    cli_expect(&r, 0, "500");
    r = cli_run(&env, NULL, "lb", "top", "--board", "nope", NULL); /* an unknown name */
    cli_expect(&r, 4, "NOT_FOUND");
    assert_true(gf_fnenv_stop(&b, 15000));
    assert_true(gf_fnenv_stop(&mover, 15000));
    jsCtx_Destroy(js);
    gf_fnenv_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ten_thousand_events_stop_restart_exactly_once),
        cmocka_unit_test(replicas_killed_and_added_once_and_in_order),
        cmocka_unit_test(queries_match_brute_force_across_a_period_reset),
        cmocka_unit_test(restarted_replica_rebuilds_from_snapshot_and_answers_the_same),
        cmocka_unit_test(poison_and_malformed_dead_lettered_then_redriven_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
