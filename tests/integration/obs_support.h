/*
 * obs_support.h — helpers for the event-log observer tests (lag monitor, gap observer,
 * history, analytics, crashes): the server and config pieces they share, publishing
 * GameEvents the way the producer library does (Nats-Msg-Id, Gamefn-Source,
 * Gamefn-Source-Seq). The gamefn CLI runs through cli_support.h (event_support.h).
 *
 * Ownership: events built with obs_event_init borrow their strings. Threads: the test's
 * main thread.
 */
#ifndef GAMEFN_TEST_OBS_SUPPORT_H
#define GAMEFN_TEST_OBS_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event_support.h"
#include "fn_support.h"
#include "gamefn/v1/event.pb-c.h"
#include "gamefn/v1/lag.pb-c.h"

/* The event partition mapping of deploy/local/nats.conf.in. */
#define OBS_MAPPING gf_ev_mapping

/* An event with its payload case left empty (set one before publishing). */
void obs_event_init(Gamefn__V1__GameEvent *ev, char *event_id_buf, size_t buf_size,
                    const char *source, uint64_t seq, const char *player, const char *type);

/* Publishes ev as a producer does (gf_ev_publish: Nats-Msg-Id = event_id and the source
 * headers); sync waits for the ack, else async (gf_ev_flush waits for them). 0 or -1. */
int obs_publish(jsCtx *js, const Gamefn__V1__GameEvent *ev, bool sync);

/* A typed payload for ev, kept in *space (which must outlive ev): kind 0 kill (victim
 * "p-victim", weapon `rail "gun"`, headshot, 12.5 m), 1 score (+25, "capture"), 2 zone
 * change ("spawn" -> "mid"), 3 crash (signature "SIGSEGV in render", message "null
 * deref", a one-frame stack, build "1.2.3", platform "linux"), else generic (no
 * attributes). ev->event_type is not changed. */
typedef union obs_payload {
    Gamefn__V1__KillEvent kill;
    Gamefn__V1__ScoreEvent score;
    Gamefn__V1__ZoneChangeEvent zone;
    Gamefn__V1__CrashEvent crash;
    Gamefn__V1__GenericEvent generic;
} obs_payload;
void obs_event_payload(Gamefn__V1__GameEvent *ev, int kind, obs_payload *space);

/* A generic event of `type` (no payload fields): the quickest valid one. */
int obs_publish_generic(jsCtx *js, const char *source, uint64_t seq, const char *player,
                        const char *type, bool sync);

/* `gamefn provision`; fails the test (with the output) if it does not exit 0. */
void obs_provision(gf_fnenv *env);

/* Starts env with o, provisions it, spawns the lag monitor `id` (LAG_BINARY) and waits
 * until it leads; fails the test otherwise. */
#define OBS_LAG "functions/lag/gamefn-lag"
void obs_start_with_monitor(gf_fnenv *env, const gf_fnenv_opts *o, gf_proc *m, const char *id);

/* The lag monitor's report as gamefn.v1.lag.query answers it, or NULL (free with
 * gamefn__v1__lag_report__free_unpacked). */
Gamefn__V1__LagReport *obs_lag_report(gf_fnenv *env);

/* For gf_fnenv_eventually: the report is the one of monitor `arg` (an instance id). */
bool obs_lag_led_by(gf_fnenv *env, void *arg);

/* A player id of the form "<prefix><n>" whose partition is `partition`, the i-th such
 * (i = 0, 1, ...). */
void obs_player_in(unsigned partition, const char *prefix, int i, char *buf, size_t size);

#endif
