/*
 * gamesim_internal.h — the simulator's state, shared by gamesim.c (lifecycle, NATS
 * callbacks, joins) and gamesim_run.c (the worker: servers and adapter).
 *
 * Locking: `lock` guards every field of gf_gamesim and of each sim_server below the
 * "under lock" line. The worker drops the lock around every request it sends.
 * Servers are allocated one by one and never freed before stop, so a sim_server
 * pointer stays valid while the sim runs.
 */
#ifndef GAMEFN_GAMESIM_INTERNAL_H
#define GAMEFN_GAMESIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "gamefn/join_key.h"
#include "gamefn/kv_watch.h"
#include "gamefn/limits.h"
#include "gamefn/v1/fleet.pb-c.h"
#include "gamesim.h"
#include "population.h"

enum { SIM_KEYS_MAX = 8 };

typedef enum sim_phase {
    SIM_STARTING,    /* registers at register_at */
    SIM_RUNNING,     /* registered, heartbeating */
    SIM_HIBERNATING, /* stopped by the adapter; may be woken */
    SIM_DEAD,        /* killed by a test: silent, never comes back */
} sim_phase;

typedef struct sim_ids {
    char **v;
    size_t n;
} sim_ids;

typedef struct sim_server {
    char id[GF_WIRE_ID_MAX + 1];
    size_t dc; /* index into the sim's datacenters */
    uint32_t port;
    /* under lock */
    sim_phase phase;
    int64_t register_at;    /* mono ms */
    int64_t next_heartbeat; /* mono ms */
    int64_t interval_ms;
    char match_id[GF_WIRE_ID_MAX + 1]; /* "" = no match */
    int64_t allocated_unix_ms;         /* the record's, for ordering replies and updates */
    sim_ids players, joined;
    int64_t collect_until; /* mono ms: tokens expected by then */
    int64_t next_collect;  /* mono ms */
    bool playing, finishing, gone;
    int64_t play_until; /* mono ms */
    /* play (gamesim_play.c) */
    gf_pop_rng rng; /* this server's generator */
    bool rng_seeded;
    int64_t next_event; /* mono ms */
    int64_t crash_at;   /* mono ms; 0 = this match does not crash */
    uint8_t *zones;     /* [players.n]: each player's zone, 0 = not spawned */
    char last_finished[GF_WIRE_ID_MAX + 1];
} sim_server;

typedef struct sim_dc {
    char *name;
    int max;
    Gamefn__V1__FleetScaleRequest *pending; /* newest unhandled request, under lock */
    int64_t last_issued;                    /* under lock */
    int added; /* servers created in it (their ids count), under lock */
} sim_dc;

struct gf_gamesim {
    natsConnection *nc;
    jsCtx *js;
    kvStore *matches, *fleet;
    gf_gamesim_opts o; /* copy; o.dcs not used after start (see dcs) */
    char address[GF_WIRE_ADDRESS_MAX + 1];
    char prefix[32];
    sim_dc *dcs;
    size_t n_dcs;
    natsSubscription *join_sub, **scale_subs;
    pthread_t *threads; /* the workers */
    size_t n_threads;   /* started */
    struct sim_worker *workers;
    gf_kv_watch *watch; /* the fleet bucket */
    atomic_int stop;

    pthread_mutex_t lock;
    sim_server **sv; /* under lock */
    size_t n_sv, cap_sv;
    uint32_t *index; /* under lock: open addressing by server id, sv index + 1, 0 = empty */
    size_t index_size;
    uint32_t next_port;
    gf_join_key keys[SIM_KEYS_MAX]; /* under lock: from the newest reply */
    size_t n_keys;
    gf_gamesim_stats stats; /* counters, under lock */
    uint64_t plays;         /* matches started with events, under lock (crash_every) */
    uint64_t collected;     /* matches whose tokens were presented, under lock (verify_every) */
};

/* gamesim.c */
sim_server *gf__sim_find(gf_gamesim *s, const char *server_id); /* under lock */
sim_server *gf__sim_add(gf_gamesim *s, size_t dc, sim_phase phase, int64_t register_at);
void gf__sim_ids_free(sim_ids *ids);
void gf__sim_clear_match(sim_server *sv); /* under lock: no match, nothing collected */
/* Takes the allocation a record shows (under lock); `now` mono ms. */
void gf__sim_apply_record(gf_gamesim *s, sim_server *sv, const Gamefn__V1__ServerRecord *rec,
                          int64_t now);
void gf__sim_set_keys(gf_gamesim *s, Gamefn__V1__JoinKey *const *keys, size_t n); /* under lock */
/* Admits player_id to the match `match` of sv after its token was judged `err` (GF_OK:
 * valid; `checked` false: not verified, opts.verify_every), counting the outcome. Takes
 * the lock. */
gf_err gf__sim_admit(gf_gamesim *s, sim_server *sv, const char *match, const char *player_id,
                     gf_err err, bool checked);

/* gamesim_play.c (under lock) */
void gf__sim_play_start(gf_gamesim *s, sim_server *sv, int64_t now); /* sets play_until */
void gf__sim_play_events(gf_gamesim *s, sim_server *sv, int64_t now);
void gf__sim_play_end(sim_server *sv);

/* gamesim_run.c */
typedef struct sim_worker {
    gf_gamesim *s;
    size_t index; /* steps servers index, index + n, index + 2n, ...; 0 runs the adapter */
    size_t n;
} sim_worker;
void *gf__sim_worker(void *arg); /* arg: a sim_worker */
/* One request/reply with a protobuf body; *out decoded with `rd` on success. A typed
 * error reply is returned as its gf_err (NOT_FOUND, ...). */
gf_err gf__sim_call(gf_gamesim *s, const char *subject, const ProtobufCMessage *req,
                    const ProtobufCMessageDescriptor *rd, ProtobufCMessage **out);

#endif
