/*
 * events.c — the simulated servers' gameplay events, emitted through the producer
 * library (gamefn/producer.h) into EVENTS, and the producers' events log the checker
 * compares the stream with (see playsim.h).
 *
 * Design notes:
 * - One producer per datacenter's simulator (a game server host): source id
 *   "sim-<datacenter>" plus the incarnation the producer draws for a new spool. Each
 *   run spools into <run dir>/spool/<datacenter>, a fresh directory, so every run's
 *   sources are new: nothing is taken for a duplicate of an earlier run's events.
 * - The producer does what a game server's would: validates, spools (fsync left to the
 *   OS: the simulated servers die with this process anyway), publishes in sequence
 *   order within the window, resends until acknowledged.
 * - At the end every producer flushes and closes; the log (format 1 of
 *   docs/OPERATIONS.md "The events log") lists per source the emitted range and the
 *   acknowledged floor (a fresh spool numbers 1..produced without gaps). A spool that
 *   was emptied is deleted; one with events not acknowledged is kept and named.
 * - on_event runs on a simulator's worker with its lock held: emit appends to the
 *   spool and returns; it never waits for NATS.
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gamefn/log.h"
#include "gamefn/producer.h"
#include "playsim.h"

/* The simulated servers' event types; emits taken by a producer are counted per type. */
static const char *const types[] = {"kill", "score", "zone_change", "crash"};
enum { TYPES = sizeof types / sizeof types[0] };

struct play_events {
    gf_producer *prod[PLAY_MAX_DCS];
    atomic_ullong emitted[TYPES];
    char spool[1100];
    atomic_ullong invalid, failed; /* emits refused (a bug in the simulator) or not spooled */
    uint64_t produced, acknowledged, dropped; /* of the producers closed at the end */
    atomic_int stopping;
};

gf_err gf_play_events_start(gf_play *p)
{
    play_events *ev = calloc(1, sizeof *ev);
    if (!ev)
        return GF_ERR_NOMEM;
    p->events = ev;
    snprintf(ev->spool, sizeof ev->spool, "%s/spool", p->run_dir);
    if (mkdir(ev->spool, 0700) != 0)
        return GF_ERR_IO;
    for (size_t d = 0; d < p->n_dcs; d++) {
        char source[PLAY_NAME + 8], dir[1200];
        snprintf(source, sizeof source, "sim-%s", p->dcs[d]);
        snprintf(dir, sizeof dir, "%s/%s", ev->spool, p->dcs[d]);
        gf_producer_config cfg = {
            .source_id = source, .spool_dir = dir, .nc = p->nc, .fsync = GF_PRODUCER_FSYNC_NEVER};
        gf_err err = gf_producer_open(&cfg, &ev->prod[d]);
        if (err != GF_OK) {
            gf_log_error("cannot open an event producer", "source=%s spool=%s err=%s", source, dir,
                         gf_err_str(err));
            return err;
        }
    }
    return GF_OK;
}

void gf_play_events_on_event(void *arg, const gf_gamesim_event *e)
{
    gf_play *p = arg;
    play_events *ev = p->events;
    gf_producer *prod = NULL;
    for (size_t d = 0; d < p->n_dcs; d++)
        if (strcmp(p->dcs[d], e->datacenter) == 0)
            prod = ev->prod[d];
    if (!prod || atomic_load(&ev->stopping))
        return;
    gf_event g = {.player_id = e->player_id, .type = e->type, .match_id = e->match_id};
    if (strcmp(e->type, "kill") == 0) {
        g.kill.victim_player_id = e->kill.victim_player_id;
        g.kill.weapon = e->kill.weapon;
        g.kill.headshot = e->kill.headshot;
        g.kill.distance_m = e->kill.distance_m;
    } else if (strcmp(e->type, "score") == 0) {
        g.score.delta = e->score.delta;
        g.score.board = e->score.board;
        g.score.reason = e->score.reason;
    } else if (strcmp(e->type, "zone_change") == 0) {
        g.zone_change.from_zone = e->zone_change.from_zone;
        g.zone_change.to_zone = e->zone_change.to_zone;
    } else {
        g.crash.signature = e->crash.signature;
        g.crash.message = e->crash.message;
        g.crash.build = e->crash.build;
        g.crash.platform = e->crash.platform;
    }
    gf_producer_receipt r;
    gf_err err = gf_producer_emit(prod, &g, &r);
    if (err == GF_ERR_INVALID) {
        if (atomic_fetch_add(&ev->invalid, 1) == 0)
            gf_log_error("the producer refused a simulated event", "type=%s field=%s why=%s",
                         e->type, r.field, r.why);
    } else if (err != GF_OK && err != GF_ERR_UNAVAILABLE) {
        atomic_fetch_add(&ev->failed, 1); /* UNAVAILABLE: dropped, counted by the producer */
    }
    for (size_t i = 0; err == GF_OK && i < TYPES; i++)
        if (strcmp(e->type, types[i]) == 0)
            atomic_fetch_add(&ev->emitted[i], 1);
}

json_t *gf_play_events_by_type(gf_play *p)
{
    json_t *by = json_object();
    for (size_t i = 0; by && p->events && i < TYPES; i++)
        json_object_set_new(by, types[i],
                            json_integer((json_int_t)atomic_load(&p->events->emitted[i])));
    return by;
}

void gf_play_events_counts(gf_play *p, uint64_t *produced, uint64_t *stored, uint64_t *failed)
{
    play_events *ev = p->events;
    *produced = ev->produced;
    *stored = ev->acknowledged;
    *failed = atomic_load(&ev->invalid) + atomic_load(&ev->failed) + ev->dropped;
    for (size_t d = 0; d < p->n_dcs; d++) {
        if (!ev->prod[d])
            continue;
        gf_producer_stats st;
        gf_producer_stats_get(ev->prod[d], &st);
        *produced += st.produced;
        *stored += st.acknowledged;
        *failed += st.dropped;
    }
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

uint64_t gf_play_events_stop(gf_play *p, int64_t timeout_ms)
{
    play_events *ev = p->events;
    if (!ev)
        return 0;
    atomic_store(&ev->stopping, 1);
    int64_t each = timeout_ms / (p->n_dcs ? (int64_t)p->n_dcs : 1);
    for (size_t d = 0; d < p->n_dcs; d++)
        if (ev->prod[d])
            gf_producer_flush(ev->prod[d], each);
    char path[1200];
    snprintf(path, sizeof path, "%s/events.log", p->run_dir);
    FILE *f = fopen(path, "w");
    if (f)
        fprintf(f, "gamefn-events-log 1\n"
                   "# gamefn-playsim: one producer per simulated datacenter, a fresh spool each\n");
    uint64_t unacked = 0;
    for (size_t d = 0; d < p->n_dcs; d++) {
        if (!ev->prod[d])
            continue;
        gf_producer_stats st;
        gf_producer_stats_get(ev->prod[d], &st);
        if (f && st.produced)
            fprintf(f, "emit %s 1-%" PRIu64 "\n", st.source_id, st.produced);
        if (f && st.acked_floor)
            fprintf(f, "ack %s 1-%" PRIu64 "\n", st.source_id, st.acked_floor);
        unacked += st.spooled;
        ev->produced += st.produced;
        ev->acknowledged += st.acknowledged;
        ev->dropped += st.dropped;
        gf_producer_close(ev->prod[d], 0);
        ev->prod[d] = NULL;
    }
    if (f)
        fclose(f);
    if (unacked == 0)
        nftw(ev->spool, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    else
        gf_log_warn("events not acknowledged by EVENTS at the end: kept in their spools",
                    "events=%" PRIu64 " spool=%s", unacked, ev->spool);
    return unacked;
}

void gf_play_events_free(gf_play *p)
{
    play_events *ev = p->events;
    if (!ev)
        return;
    for (size_t d = 0; d < PLAY_MAX_DCS; d++)
        gf_producer_close(ev->prod[d], 0);
    free(ev);
    p->events = NULL;
}
