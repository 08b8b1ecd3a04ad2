/*
 * obs_support.c — see obs_support.h.
 */
#include "obs_support.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gamefn/clock.h"
#include "gamefn/partition.h"
#include "gamefn/util.h"

void obs_event_init(Gamefn__V1__GameEvent *ev, char *event_id_buf, size_t buf_size,
                    const char *source, uint64_t seq, const char *player, const char *type)
{
    gamefn__v1__game_event__init(ev);
    snprintf(event_id_buf, buf_size, "%s-%" PRIu64, source, seq);
    ev->event_id = event_id_buf;
    ev->source_id = (char *)(uintptr_t)source;
    ev->source_seq = seq;
    ev->player_id = (char *)(uintptr_t)player;
    ev->event_type = (char *)(uintptr_t)type;
    ev->occurred_unix_ms = gf_clock_unix_ms();
}

int obs_publish(jsCtx *js, const Gamefn__V1__GameEvent *ev, bool sync)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (gf_pack(&ev->base, &buf, &len) != GF_OK)
        return -1;
    int rc = gf_ev_publish(js, ev->player_id, ev->event_type, buf, len, ev->source_id,
                           ev->source_seq, ev->event_id, !sync);
    free(buf);
    return rc;
}

void obs_event_payload(Gamefn__V1__GameEvent *ev, int kind, obs_payload *u)
{
    switch (kind) {
    case 0:
        gamefn__v1__kill_event__init(&u->kill);
        u->kill.victim_player_id = "p-victim";
        u->kill.weapon = "rail \"gun\"";
        u->kill.headshot = true;
        u->kill.distance_m = 12.5f;
        ev->payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_KILL;
        ev->kill = &u->kill;
        break;
    case 1:
        gamefn__v1__score_event__init(&u->score);
        u->score.delta = 25;
        u->score.reason = "capture";
        ev->payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_SCORE;
        ev->score = &u->score;
        break;
    case 2:
        gamefn__v1__zone_change_event__init(&u->zone);
        u->zone.from_zone = "spawn";
        u->zone.to_zone = "mid";
        ev->payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_ZONE_CHANGE;
        ev->zone_change = &u->zone;
        break;
    case 3:
        gamefn__v1__crash_event__init(&u->crash);
        u->crash.signature = "SIGSEGV in render";
        u->crash.message = "null deref";
        u->crash.stack = "#0 0x1 in render () at r.cpp:1\n";
        u->crash.build = "1.2.3";
        u->crash.platform = "linux";
        ev->payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_CRASH;
        ev->crash = &u->crash;
        break;
    default:
        gamefn__v1__generic_event__init(&u->generic);
        ev->payload_case = GAMEFN__V1__GAME_EVENT__PAYLOAD_GENERIC;
        ev->generic = &u->generic;
        break;
    }
}

int obs_publish_generic(jsCtx *js, const char *source, uint64_t seq, const char *player,
                        const char *type, bool sync)
{
    Gamefn__V1__GameEvent ev;
    obs_payload payload;
    char id[160];
    obs_event_init(&ev, id, sizeof id, source, seq, player, type);
    obs_event_payload(&ev, -1, &payload);
    return obs_publish(js, &ev, sync);
}

void obs_player_in(unsigned partition, const char *prefix, int i, char *buf, size_t size)
{
    for (int n = 0, found = 0;; n++) {
        snprintf(buf, size, "%s%d", prefix, n);
        if (gf_partition_of(buf, 16) == partition && found++ == i)
            return;
    }
}

void obs_provision(gf_fnenv *env)
{
    cli_result r = cli_run(env, NULL, "provision", NULL);
    if (r.code != 0)
        fail_msg("gamefn provision: %d: %s", r.code, r.out);
    cli_result_free(&r);
}

Gamefn__V1__LagReport *obs_lag_report(gf_fnenv *env)
{
    natsMsg *reply = NULL;
    if (natsConnection_Request(&reply, env->nc, "gamefn.v1.lag.query", NULL, 0, 2000) != NATS_OK)
        return NULL;
    const char *err = NULL;
    Gamefn__V1__LagReport *r = NULL;
    if (natsMsgHeader_Get(reply, "Nats-Service-Error-Code", &err) != NATS_OK)
        r = gamefn__v1__lag_report__unpack(NULL, (size_t)natsMsg_GetDataLength(reply),
                                           (const uint8_t *)natsMsg_GetData(reply));
    natsMsg_Destroy(reply);
    return r;
}

bool obs_lag_led_by(gf_fnenv *env, void *arg)
{
    Gamefn__V1__LagReport *r = obs_lag_report(env);
    bool ok = r && strcmp(r->monitor_id, arg) == 0;
    if (r)
        gamefn__v1__lag_report__free_unpacked(r, NULL);
    return ok;
}

void obs_start_with_monitor(gf_fnenv *env, const gf_fnenv_opts *o, gf_proc *m, const char *id)
{
    assert_int_equal(gf_fnenv_start_opts(env, o), 0);
    obs_provision(env);
    assert_int_equal(gf_fnenv_spawn_ready(env, m, OBS_LAG, "lag", id, NULL), 0);
    assert_true(gf_fnenv_eventually(obs_lag_led_by, env, (void *)(uintptr_t)id, 10000));
}
