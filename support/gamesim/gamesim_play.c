/*
 * gamesim_play.c — what a simulated match does while it plays: how long it lasts and
 * the gameplay events its players produce (see gamesim.h, gf_gamesim_opts "Play").
 *
 * Design notes: every draw comes from the server's own generator (the population
 * model's gf_pop_rng), seeded from opts.seed and the server's id, so the events do not
 * depend on how the workers interleave servers. Events are a Poisson process per match (rate:
 * players x events_per_player_s), emitted on the worker's passes (every 20 ms) up to `now`, so a
 * late pass catches up instead of losing events. All of it runs under the sim's lock.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gamesim_internal.h"

static const char *const weapons[] = {"rifle", "smg", "shotgun", "sniper", "pistol", "knife"};
static const char *const zones[] = {"spawn", "alpha", "bravo", "charlie", "delta", "market"};
static const char *const reasons[] = {"kill", "assist", "capture", "objective"};
static const int64_t deltas[] = {100, 50, 150, 200};
static const char *const signatures[] = {"sim-renderer-null-texture", "sim-net-desync-assert",
                                         "sim-audio-buffer-underrun"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

static size_t pick(gf_pop_rng *r, size_t n)
{
    return (size_t)(gf_pop_rng_uniform(r) * (double)n) % n;
}

/* Milliseconds to the next event of a match with `players` players. */
static int64_t gap_ms(gf_gamesim *s, sim_server *sv, size_t players)
{
    double rate = s->o.events_per_player_s * (double)players / 1000.0; /* per ms */
    double u = 1.0 - gf_pop_rng_uniform(&sv->rng);
    return (int64_t)ceil(-log(u) / rate);
}

void gf__sim_play_start(gf_gamesim *s, sim_server *sv, int64_t now)
{
    if (!sv->rng_seeded) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (const char *p = sv->id; *p; p++)
            h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
        gf_pop_rng_seed(&sv->rng, s->o.seed, h);
        sv->rng_seeded = true;
    }
    int64_t play = s->o.play_ms;
    if (play >= 0 && s->o.play_max_ms > play)
        play += (int64_t)(gf_pop_rng_uniform(&sv->rng) * (double)(s->o.play_max_ms - play));
    sv->play_until = play < 0 ? INT64_MAX : now + play;
    sv->crash_at = 0;
    sv->next_event = INT64_MAX;
    free(sv->zones);
    sv->zones = NULL;
    if (!s->o.on_event || s->o.events_per_player_s <= 0 || sv->players.n == 0)
        return;
    sv->zones = calloc(sv->players.n, sizeof *sv->zones);
    sv->next_event = now + gap_ms(s, sv, sv->players.n);
    /* The simulator's first match with events and one in every crash_every after it
     * report a crash: a few at a low rate, and some even in a short run. */
    if (s->o.crash_every > 0 && s->plays++ % s->o.crash_every == 0 && play > 0)
        sv->crash_at = now + 1 + (int64_t)(gf_pop_rng_uniform(&sv->rng) * (double)(play - 1));
}

static void emit(gf_gamesim *s, sim_server *sv, gf_gamesim_event *e)
{
    e->server_id = sv->id;
    e->datacenter = s->dcs[sv->dc].name;
    e->match_id = sv->match_id;
    s->o.on_event(s->o.event_arg, e);
    s->stats.events++;
}

/* One kill, score or zone change of a random player of the match. */
static void one_event(gf_gamesim *s, sim_server *sv)
{
    size_t n = sv->players.n, who = pick(&sv->rng, n);
    gf_gamesim_event e = {.player_id = sv->players.v[who]};
    double kind = gf_pop_rng_uniform(&sv->rng);
    if (kind < 0.4 && n > 1) {
        size_t victim = (who + 1 + pick(&sv->rng, n - 1)) % n;
        e.type = "kill";
        e.kill.victim_player_id = sv->players.v[victim];
        e.kill.weapon = weapons[pick(&sv->rng, N(weapons))];
        e.kill.headshot = gf_pop_rng_uniform(&sv->rng) < 0.25;
        e.kill.distance_m = (float)(1.0 + gf_pop_rng_uniform(&sv->rng) * 120.0);
    } else if (kind < 0.8) {
        size_t r = pick(&sv->rng, N(reasons));
        e.type = "score";
        e.score.delta = deltas[r];
        e.score.board = "global";
        e.score.reason = reasons[r];
    } else {
        uint8_t from = sv->zones ? sv->zones[who] : 0;
        uint8_t to = (uint8_t)(1 + pick(&sv->rng, N(zones) - 1));
        if (to == from)
            to = (uint8_t)(to % (N(zones) - 1) + 1);
        e.type = "zone_change";
        e.zone_change.from_zone = from ? zones[from] : "";
        e.zone_change.to_zone = zones[to];
        if (sv->zones)
            sv->zones[who] = to;
    }
    emit(s, sv, &e);
}

void gf__sim_play_events(gf_gamesim *s, sim_server *sv, int64_t now)
{
    if (!s->o.on_event || sv->players.n == 0)
        return;
    if (sv->crash_at && now >= sv->crash_at) {
        char message[128];
        snprintf(message, sizeof message, "simulated crash in match %s", sv->match_id);
        gf_gamesim_event e = {.player_id = sv->players.v[pick(&sv->rng, sv->players.n)],
                              .type = "crash"};
        e.crash.signature = signatures[pick(&sv->rng, N(signatures))];
        e.crash.message = message;
        e.crash.build = "gamesim";
        e.crash.platform = "linux";
        emit(s, sv, &e);
        s->stats.crashes++;
        sv->crash_at = 0;
    }
    int64_t until = now < sv->play_until ? now : sv->play_until;
    for (int k = 0; k < 1000 && sv->next_event <= until; k++) {
        one_event(s, sv);
        sv->next_event += gap_ms(s, sv, sv->players.n);
    }
}

void gf__sim_play_end(sim_server *sv)
{
    free(sv->zones);
    sv->zones = NULL;
    sv->next_event = INT64_MAX;
    sv->crash_at = 0;
}
