/*
 * The event producer (gamefn/producer.h) against a real nats-server with the event
 * subject mapping: N events stored exactly once with gap-free seqs (borrowed and
 * owned connections, a restart in between); a full stream (max_msgs, discard new)
 * spools and replays once the stream is enlarged; a full spool drops (counted,
 * returned, logged) and loses nothing else; a torn spool tail is cut and never
 * published; bad events are refused at emit and never spooled; "no stream captures
 * the subject" is told apart from "NATS is down". Every check of what was stored reads
 * the stream back (producer_check.h), never the producer's counters alone.
 */
#define _GNU_SOURCE /* nftw, popen, truncate */
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/log.h"
#include "gamefn/producer.h"
#include "harness_util.h"
#include "producer_check.h"

typedef struct env {
    gf_natsd *srv;
    natsConnection *nc;
    jsCtx *js;
    char spool[300];
    char url[64];
} env;

static void env_start(env *e, bool events_stream, int64_t max_msgs)
{
    memset(e, 0, sizeof *e);
    gf_natsd_opts o = {.extra_config = pcx_mapping};
    assert_int_equal(gf_natsd_start(&o, &e->srv), 0);
    snprintf(e->url, sizeof e->url, "%s", gf_natsd_url(e->srv));
    const char *urls[] = {e->url};
    e->nc = th_connect(urls, 1);
    e->js = th_js(e->nc);
    if (events_stream)
        pcx_add_events(e->js, 1, max_msgs);
    snprintf(e->spool, sizeof e->spool, "%s/spool-%lld", th_tmpdir, (long long)gf_clock_mono_ns());
}

static void env_stop(env *e)
{
    jsCtx_Destroy(e->js);
    natsConnection_Destroy(e->nc);
    gf_natsd_free(e->srv);
    nftw(e->spool, th_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static gf_producer_config config(env *e, const char *source)
{
    gf_producer_config c;
    memset(&c, 0, sizeof c);
    c.source_id = source;
    c.spool_dir = e->spool;
    c.url = e->url;
    c.retry_max_ms = 500; /* tests wait for recoveries: probe often */
    return c;
}

static gf_producer *open_producer(const gf_producer_config *c)
{
    gf_producer *p = NULL;
    assert_int_equal(gf_producer_open(c, &p), GF_OK);
    return p;
}

/* Event i: a score, a kill or a generic event of player p<i % 37>. */
static gf_err emit_nth(gf_producer *p, uint64_t i, gf_producer_receipt *r)
{
    char player[16];
    snprintf(player, sizeof player, "p%" PRIu64, i % 37);
    gf_event ev;
    memset(&ev, 0, sizeof ev);
    ev.player_id = player;
    if (i % 3 == 0) {
        ev.type = "score";
        ev.score.delta = (int64_t)i + 1;
    } else if (i % 3 == 1) {
        ev.type = "kill";
        ev.kill.victim_player_id = "p-bob";
    } else {
        ev.type = "match_end"; /* a type of its own: generic, here without payload */
    }
    return gf_producer_emit(p, &ev, r);
}

static void emit_range(gf_producer *p, uint64_t first, uint64_t last)
{
    for (uint64_t i = first; i <= last; i++) {
        gf_producer_receipt r;
        gf_err err = emit_nth(p, i, &r);
        if (err != GF_OK)
            fail_msg("emit %" PRIu64 ": %s %s %s", i, gf_err_str(err), r.field, r.why);
        assert_int_equal(r.seq, i);
    }
}

static gf_producer_stats stats(gf_producer *p)
{
    gf_producer_stats st;
    gf_producer_stats_get(p, &st);
    return st;
}

typedef bool (*stats_pred)(const gf_producer_stats *st, uint64_t arg);

/* Polls the producer's stats every 20 ms until pred holds, at most timeout_ms. */
static bool eventually(gf_producer *p, stats_pred pred, uint64_t arg, int timeout_ms)
{
    for (int64_t until = gf_clock_mono_ms() + timeout_ms; gf_clock_mono_ms() < until;) {
        gf_producer_stats st = stats(p);
        if (pred(&st, arg))
            return true;
        gf_clock_sleep_ms(20);
    }
    return false;
}

static bool in_state(const gf_producer_stats *st, uint64_t state)
{
    return st->state == (gf_producer_state)state;
}

static bool acknowledged_at_least(const gf_producer_stats *st, uint64_t n)
{
    return st->acknowledged >= n;
}

/* ---- N events, exactly once ------------------------------------------------ */

static void produces_n_exactly_once(void **state)
{
    env e;
    env_start(&e, true, 0);
    enum { N = 10000 };

    /* Owned connection: half of the events. */
    gf_producer_config c = config(&e, "gs-1");
    gf_producer *p = open_producer(&c);
    emit_range(p, 1, N / 2);
    assert_int_equal(gf_producer_flush(p, 30000), GF_OK);
    gf_producer_stats st = stats(p);
    assert_int_equal(st.produced, N / 2);
    assert_int_equal(st.acknowledged, N / 2);
    assert_int_equal(st.spooled, 0);
    assert_int_equal(st.replayed, 0);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.state, GF_PRODUCER_OK);
    gf_producer_close(p, 5000);

    /* Reopened on the same spool, borrowing the test's connection: the counter goes on. */
    c.url = NULL;
    c.nc = e.nc;
    p = open_producer(&c);
    assert_int_equal(stats(p).next_seq, N / 2 + 1);
    emit_range(p, N / 2 + 1, N);
    assert_int_equal(gf_producer_flush(p, 30000), GF_OK);
    st = stats(p);
    assert_int_equal(st.acknowledged, N / 2);
    assert_int_equal(st.duplicates, 0);
    gf_producer_close(p, 5000);
    /* Closed with everything acknowledged: the floor is written, the segments gone. */
    char seg[400];
    snprintf(seg, sizeof seg, "%s/seg-00000000000000000001.log", e.spool);
    assert_false(th_path_exists(seg));

    pcx_stored s;
    pcx_read(e.js, "EVENTS", &s);
    assert_int_equal(s.messages, N);
    pcx_expect(&s, "gs-1", 1, N, NULL, 0);
    pcx_free(&s);
    env_stop(&e);
}

/* ---- a full stream ----------------------------------------------------------- */

static void full_stream_spools_then_replays(void **state)
{
    env e;
    env_start(&e, true, 1000);
    gf_producer_config c = config(&e, "gs-full");
    gf_producer *p = open_producer(&c);
    emit_range(p, 1, 3000);
    assert_true(eventually(p, in_state, GF_PRODUCER_STREAM_FULL, 30000));
    assert_int_equal(gf_producer_flush(p, 500), GF_ERR_TIMEOUT);
    gf_producer_stats st = stats(p);
    assert_int_equal(st.js_code, 10077);
    assert_int_equal(st.acknowledged, 1000);
    assert_int_equal(st.spooled, 2000);
    assert_true(st.stops >= 1);
    assert_int_equal(th_stream_msgs(e.js, "EVENTS"), 1000);

    /* Still accepted into the spool while the stream refuses. */
    emit_range(p, 3001, 3100);
    /* Enlarged: the probe gets through and the rest follows in order. */
    jsStreamInfo *si = NULL;
    assert_int_equal(js_GetStreamInfo(&si, e.js, "EVENTS", NULL, NULL), NATS_OK);
    si->Config->MaxMsgs = -1;
    assert_int_equal(js_UpdateStream(NULL, e.js, si->Config, NULL, NULL), NATS_OK);
    jsStreamInfo_Destroy(si);
    assert_int_equal(gf_producer_flush(p, 60000), GF_OK);
    st = stats(p);
    assert_int_equal(st.state, GF_PRODUCER_OK);
    assert_int_equal(st.acknowledged, 3100);
    assert_int_equal(st.spooled, 0);
    assert_int_equal(st.dropped, 0);
    assert_true(st.replayed >= 1); /* the refused events went out again */
    gf_producer_close(p, 5000);

    pcx_stored s;
    pcx_read(e.js, "EVENTS", &s);
    assert_int_equal(s.messages, 3100);
    pcx_expect(&s, "gs-full", 1, 3100, NULL, 0);
    pcx_free(&s);
    env_stop(&e);
}

/* ---- a full spool ------------------------------------------------------------ */

static void spool_full_drops_loudly_and_loses_nothing_else(void **state)
{
    env e;
    env_start(&e, true, 0);
    assert_int_equal(gf_natsd_stop(e.srv), 0); /* NATS away: everything stays spooled */
    gf_producer_config c = config(&e, "gs-small");
    c.spool_max_bytes = 64 * 1024;
    c.spool_segment_bytes = 4096;
    gf_producer *p = open_producer(&c);
    uint64_t dropped[4096];
    size_t ndropped = 0;
    gf_log_set_level(GF_LOG_OFF); /* every drop is logged at error level */
    for (uint64_t i = 1; i <= 1500; i++) {
        gf_producer_receipt r;
        gf_err err = emit_nth(p, i, &r);
        assert_int_equal(r.seq, i);
        if (err == GF_ERR_UNAVAILABLE)
            dropped[ndropped++] = i;
        else
            assert_int_equal(err, GF_OK);
    }
    gf_log_set_level(GF_LOG_WARN);
    assert_true(ndropped > 0);
    assert_true(ndropped < 1500);
    gf_producer_stats st = stats(p);
    assert_int_equal(st.dropped, ndropped);
    assert_int_equal(st.produced, 1500 - ndropped);
    assert_int_equal(st.spooled, 1500 - ndropped);
    assert_true(st.spool_bytes <= c.spool_max_bytes);

    /* NATS back: every accepted event arrives; the dropped seqs are gaps. */
    assert_int_equal(gf_natsd_restart(e.srv), 0);
    assert_int_equal(gf_producer_flush(p, 60000), GF_OK);
    st = stats(p);
    assert_int_equal(st.acknowledged, 1500 - ndropped);
    assert_int_equal(st.spooled, 0);
    assert_int_equal(st.acked_floor, 1500);
    gf_producer_close(p, 5000);

    pcx_stored s;
    pcx_read(e.js, "EVENTS", &s);
    assert_int_equal(s.messages, 1500 - ndropped);
    pcx_expect(&s, "gs-small", 1, 1500, dropped, ndropped);
    pcx_free(&s);
    env_stop(&e);
}

/* ---- a torn spool tail ----------------------------------------------------------- */

/* The path of the spool's only segment file. */
static void only_segment(const char *dir, char *path, size_t size)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/seg-*.log", dir);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    assert_non_null(fgets(path, (int)size, f));
    path[strcspn(path, "\n")] = '\0';
    assert_null(fgets(cmd, sizeof cmd, f)); /* only one */
    pclose(f);
}

static void torn_tail_is_cut_and_never_published(void **state)
{
    env e;
    env_start(&e, true, 0);
    assert_int_equal(gf_natsd_stop(e.srv), 0);
    gf_producer_config c = config(&e, "gs-torn");
    c.fsync = GF_PRODUCER_FSYNC_ALWAYS;
    gf_producer *p = open_producer(&c);
    emit_range(p, 1, 10);
    gf_producer_close(p, 0); /* NATS away: the 10 stay spooled */

    /* What a SIGKILL in the middle of appending the 10th leaves: its head, not its end
     * (cut 7 bytes short), and some garbage the file system put behind it. */
    char seg[600];
    only_segment(e.spool, seg, sizeof seg);
    struct stat sb;
    assert_int_equal(stat(seg, &sb), 0);
    assert_int_equal(truncate(seg, sb.st_size - 7), 0);
    int fd = open(seg, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "\0\0\0garbage", 10), 10);
    close(fd);

    assert_int_equal(gf_natsd_restart(e.srv), 0);
    p = open_producer(&c);
    gf_producer_stats st = stats(p);
    assert_int_equal(st.torn_records, 1);
    assert_int_equal(st.spooled, 9);
    /* The torn record was never accepted (its emit had not returned), so its seq is
     * free again in the same boot: the next event takes it and nothing is missing. */
    assert_int_equal(st.next_seq, 10);
    emit_range(p, 10, 12);
    assert_int_equal(gf_producer_flush(p, 30000), GF_OK);
    gf_producer_close(p, 5000);

    pcx_stored s;
    pcx_read(e.js, "EVENTS", &s); /* every stored message validates: no garbage */
    assert_int_equal(s.messages, 12);
    pcx_expect(&s, "gs-torn", 1, 12, NULL, 0);
    pcx_free(&s);
    env_stop(&e);
}

/* ---- bad events --------------------------------------------------------------- */

static void bad_events_are_refused_at_emit(void **state)
{
    env e;
    env_start(&e, true, 0);
    gf_producer_config c = config(&e, "gs-bad");
    gf_producer *p = open_producer(&c);
    emit_range(p, 1, 1);
    gf_producer_stats before = stats(p);

    static char stack[40000];
    memset(stack, 's', sizeof stack - 1);
    gf_event_attr dup[] = {{"a", "1"}, {"a", "2"}};
    static uint8_t blob[40000];
    struct {
        gf_event ev;
        const char *field;
    } cases[] = {
        {{.player_id = "p.1", .type = "kill"}, "player_id"},
        {{.player_id = "p1", .type = ""}, "event_type"},
        {{.player_id = "p1", .type = "a b"}, "event_type"},
        {{.player_id = "p1", .type = "kill"}, "kill.victim_player_id"},
        {{.player_id = "p1", .type = "score"}, "score.delta"},
        {{.player_id = "p1", .type = "zone_change"}, "zone_change.to_zone"},
        {{.player_id = "p1", .type = "crash", .crash = {.signature = "s", .stack = stack}},
         "crash.stack"},
        {{.player_id = "p1", .type = "x", .generic = {.attributes = dup, .attributes_len = 2}},
         "generic.attributes[a]"},
        {{.player_id = "p1", .type = "x", .generic = {.data = blob, .data_len = sizeof blob}},
         "generic.data"},
        {{.player_id = "p1", .type = "score", .score = {.delta = 1}, .occurred_unix_ms = -1},
         "occurred_unix_ms"},
        {{.player_id = "p1", .type = "score", .score = {.delta = 1}, .match_id = "m*"}, "match_id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_producer_receipt r;
        assert_int_equal(gf_producer_emit(p, &cases[i].ev, &r), GF_ERR_INVALID);
        if (strcmp(r.field, cases[i].field) != 0)
            fail_msg("case %zu: field '%s' (%s), want '%s'", i, r.field, r.why, cases[i].field);
        assert_true(r.why[0] != '\0');
        assert_int_equal(r.seq, 0);
    }
    /* The largest payloads the field limits allow still fit 64 KiB encoded. */
    static char big[32769];
    memset(big, 'b', sizeof big - 1);
    gf_event huge = {.player_id = "p1", .type = "x", .generic = {.data = big, .data_len = 32768}};
    gf_event_attr many[16];
    static char values[16][129];
    for (int i = 0; i < 16; i++) {
        static char keys[16][8];
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        memset(values[i], 'v', 128);
        many[i] = (gf_event_attr){keys[i], values[i]};
    }
    huge.generic.attributes = many;
    huge.generic.attributes_len = 16;
    assert_int_equal(gf_producer_emit(p, &huge, NULL), GF_OK); /* 32 KiB + 2 KiB fits */
    static char stack2[32769];
    memset(stack2, 's', 32768);
    static char message[1025];
    memset(message, 'm', 1024);
    gf_event crash = {.player_id = "p1", .type = "crash"};
    crash.crash.signature = "sig";
    crash.crash.stack = stack2;
    crash.crash.message = message;
    assert_int_equal(gf_producer_emit(p, &crash, NULL), GF_OK);

    gf_producer_stats after = stats(p);
    assert_int_equal(after.invalid, sizeof cases / sizeof cases[0]);
    assert_int_equal(after.next_seq, before.next_seq + 2); /* only the two good ones */
    assert_int_equal(after.produced, before.produced + 2);
    assert_int_equal(gf_producer_flush(p, 30000), GF_OK);
    gf_producer_close(p, 5000);

    pcx_stored s;
    pcx_read(e.js, "EVENTS", &s);
    assert_int_equal(s.messages, 3);
    pcx_expect(&s, "gs-bad", 1, 3, NULL, 0);
    pcx_free(&s);
    env_stop(&e);
}

/* ---- no stream vs NATS down ---------------------------------------------------- */

static void no_stream_is_told_from_nats_down(void **state)
{
    env e;
    env_start(&e, false, 0); /* no EVENTS stream */
    gf_producer_config c = config(&e, "gs-nostream");
    c.give_up_ms = 2000;
    gf_producer *p = open_producer(&c);
    emit_range(p, 1, 5);
    assert_true(eventually(p, in_state, GF_PRODUCER_NO_STREAM, 30000));
    gf_producer_stats st = stats(p);
    assert_non_null(strstr(st.reason, "no stream captures gamefn.v1.evp."));
    assert_int_equal(st.spooled, 5);

    /* Provisioned: the events go out. */
    pcx_add_events(e.js, 1, 0);
    assert_int_equal(gf_producer_flush(p, 30000), GF_OK);

    /* NATS down: another state, events still accepted. */
    assert_int_equal(gf_natsd_stop(e.srv), 0);
    emit_range(p, 6, 10);
    assert_true(eventually(p, in_state, GF_PRODUCER_DISCONNECTED, 30000));
    assert_int_equal(gf_natsd_restart(e.srv), 0);
    assert_int_equal(gf_producer_flush(p, 30000), GF_OK);
    assert_true(eventually(p, acknowledged_at_least, 10, 1000));
    gf_producer_close(p, 5000);

    pcx_stored s;
    pcx_read(e.js, "EVENTS", &s);
    assert_int_equal(s.messages, 10);
    pcx_expect(&s, "gs-nostream", 1, 10, NULL, 0);
    pcx_free(&s);
    env_stop(&e);
}

/* A spool directory belongs to one source; a new spool is a new source. */
static void spool_keeps_its_source(void **state)
{
    env e;
    env_start(&e, true, 0);
    gf_producer_config c = config(&e, "gs-a");
    gf_producer *p = open_producer(&c);
    char first[65];
    snprintf(first, sizeof first, "%s", stats(p).source_id);
    assert_int_equal(strncmp(first, "gs-a-", 5), 0);
    assert_int_equal(strlen(first), 13);
    emit_range(p, 1, 3);
    assert_int_equal(gf_producer_flush(p, 30000), GF_OK);
    gf_producer *second = NULL;
    gf_log_set_level(GF_LOG_OFF);
    assert_int_equal(gf_producer_open(&c, &second), GF_ERR_CONFLICT); /* locked */
    gf_producer_close(p, 0);
    c.source_id = "gs-b";
    assert_int_equal(gf_producer_open(&c, &second), GF_ERR_CONFIG);
    c.source_id = "bad.id";
    assert_int_equal(gf_producer_open(&c, &second), GF_ERR_INVALID);
    c.source_id = "a-name-longer-than-fifty-five-bytes-which-leaves-no-room-for-it";
    assert_int_equal(gf_producer_open(&c, &second), GF_ERR_INVALID);
    c.source_id = "gs-a";
    c.window = 2000000;
    assert_int_equal(gf_producer_open(&c, &second), GF_ERR_INVALID);
    gf_log_set_level(GF_LOG_WARN);

    /* The same spool: the same source, the counter goes on. */
    c.window = 0;
    p = open_producer(&c);
    assert_string_equal(stats(p).source_id, first);
    assert_int_equal(stats(p).next_seq, 4);
    gf_producer_close(p, 0);

    /* The spool lost (a new container): a new source id, seqs from 1 again, and none of
     * its events is taken for a duplicate of the old spool's. */
    char lost[sizeof e.spool];
    memcpy(lost, e.spool, sizeof lost);
    assert_true(strlen(lost) + 5 <= sizeof e.spool);
    strcat(e.spool, "-new");
    c.spool_dir = e.spool;
    p = open_producer(&c);
    gf_producer_stats st = stats(p);
    assert_string_not_equal(st.source_id, first);
    assert_int_equal(strncmp(st.source_id, "gs-a-", 5), 0);
    assert_int_equal(st.next_seq, 1);
    emit_range(p, 1, 3);
    assert_int_equal(gf_producer_flush(p, 30000), GF_OK);
    st = stats(p);
    assert_int_equal(st.duplicates, 0);
    gf_producer_close(p, 0);

    pcx_stored s;
    pcx_read(e.js, "EVENTS", &s);
    assert_int_equal(s.messages, 6);
    pcx_expect(&s, first, 1, 3, NULL, 0);
    pcx_expect(&s, st.source_id, 1, 3, NULL, 0);
    pcx_free(&s);
    nftw(lost, th_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    env_stop(&e);
}

int main(void)
{
    gf_log_init("test_producer", GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(produces_n_exactly_once),
        cmocka_unit_test(full_stream_spools_then_replays),
        cmocka_unit_test(spool_full_drops_loudly_and_loses_nothing_else),
        cmocka_unit_test(torn_tail_is_cut_and_never_published),
        cmocka_unit_test(bad_events_are_refused_at_emit),
        cmocka_unit_test(no_stream_is_told_from_nats_down),
        cmocka_unit_test(spool_keeps_its_source),
    };
    return cmocka_run_group_tests(tests, th_group_setup, th_group_teardown);
}
