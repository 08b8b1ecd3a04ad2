/*
 * gamefn-playsim — the simulated game that drives the local stack (playsim.h).
 *
 *   gamefn-playsim --run-dir DIR [--seconds N] [--seed S] [--population low|mid|high]
 *                  [--config FILE] [--drain S] [--low-pop-region NAME] [--rate R]
 *
 * --rate overrides the level's peak arrival rate (tickets/s), for calibrating a level.
 * NATS from the config (nats:) or GAMEFN_NATS_URL, like every function. The run: wait
 * for intake (the queue table: gamefn.v1.matchmaking.queues), start one game-server
 * simulator per datacenter, then N seconds of arrivals (one compressed day), then up to
 * --drain seconds (default: a quarter of the run, 3..15 s) for the tickets still
 * waiting, then cancel what is left (the game
 * closes), and write the figures. stdout carries the lines gamefn-local reads ("P"
 * progress, "E" end of a progress block, "S" summary, "M" message); logs go to stderr.
 * SIGTERM or SIGINT ends the run early, with everything written. Exit 0, or 1 if the
 * stack could not be reached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gamefn/clock.h"
#include "gamefn/config.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "gamefn/subjects.h"
#include "gamefn/v1/queue.pb-c.h"
#include "gamefn/wire_error.h"
#include "playsim.h"

enum { TICK_MS = 10, SERVERS_MAX = 400, WORKERS = 8 };

typedef struct opts {
    const char *run_dir, *config, *population, *low_region;
    int seconds;
    double drain, rate;
    uint64_t seed;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    static const struct option longopts[] = {
        {"run-dir", required_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 's'},
        {"seed", required_argument, NULL, 'e'},
        {"population", required_argument, NULL, 'p'},
        {"config", required_argument, NULL, 'c'},
        {"drain", required_argument, NULL, 'd'},
        {"low-pop-region", required_argument, NULL, 'l'},
        {"rate", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *o = (opts){.seconds = 60, .drain = -1, .seed = 1, .population = "mid", .low_region = "sa"};
    o->config = getenv("GAMEFN_CONFIG");
    if (!o->config || !o->config[0])
        o->config = "config/gamefn.yaml";
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            o->run_dir = optarg;
            break;
        case 's':
            o->seconds = atoi(optarg);
            break;
        case 'e':
            o->seed = strtoull(optarg, NULL, 10);
            break;
        case 'p':
            o->population = optarg;
            break;
        case 'c':
            o->config = optarg;
            break;
        case 'd':
            o->drain = atof(optarg);
            break;
        case 'l':
            o->low_region = optarg;
            break;
        case 'R':
            o->rate = atof(optarg);
            break;
        case 'h':
            printf(
                "usage: gamefn-playsim --run-dir DIR [--seconds N] [--seed S] [--population "
                "low|mid|high] [--config FILE] [--drain S] [--low-pop-region NAME] [--rate R]\n");
            exit(0);
        default:
            return -1;
        }
    }
    if (o->rate <= 0)
        o->rate = gf_arrivals_peak_rate(o->population);
    if (o->drain < 0) /* a quarter of the run, 3..15 s */
        o->drain = o->seconds / 4.0 < 3 ? 3 : o->seconds / 4.0 > 15 ? 15 : o->seconds / 4.0;
    if (!o->run_dir || o->seconds < 1 || o->drain > 600 || o->rate <= 0 || o->rate > 100000)
        return -1;
    return 0;
}

static bool stopping(gf_play *p, const sigset_t *sigs)
{
    struct timespec zero = {0, 0};
    if (sigtimedwait(sigs, NULL, &zero) > 0)
        atomic_store(&p->stop, 1);
    return atomic_load(&p->stop) != 0;
}

/* ---- the queue table --------------------------------------------------------------- */

static const char *mode_name(int mode)
{
    switch (mode) {
    case GAMEFN__V1__QUEUE_MODE__QUEUE_MODE_SBMM:
        return "sbmm";
    case GAMEFN__V1__QUEUE_MODE__QUEUE_MODE_PING_FIRST:
        return "ping_first";
    default:
        return "hybrid";
    }
}

/* Asks intake for the queue table until it answers (it may still be starting). */
static Gamefn__V1__ListQueuesReply *list_queues(gf_play *p, const sigset_t *sigs)
{
    bool said = false;
    for (int64_t until = gf_clock_mono_ms() + 60000; gf_clock_mono_ms() < until;) {
        natsMsg *m = NULL;
        natsStatus s =
            natsConnection_Request(&m, p->nc, GF_WIRE_SUBJ_MATCHMAKING_QUEUES, NULL, 0, 2000);
        const char *code = NULL;
        if (s == NATS_OK && !natsMsg_IsNoResponders(m) &&
            natsMsgHeader_Get(m, GF_WIRE_HDR_ERROR_CODE, &code) != NATS_OK) {
            Gamefn__V1__ListQueuesReply *r = gamefn__v1__list_queues_reply__unpack(
                NULL, (size_t)natsMsg_GetDataLength(m), (const uint8_t *)natsMsg_GetData(m));
            natsMsg_Destroy(m);
            return r;
        }
        natsMsg_Destroy(m);
        if (!said)
            printf("M   waiting for intake to answer gamefn.v1.matchmaking.queues\n");
        said = true;
        fflush(stdout);
        if (stopping(p, sigs))
            return NULL;
        gf_clock_sleep_ms(250);
    }
    return NULL;
}

/* The queues, datacenters and regions; a queue "<name>-nomerge" is <name>'s twin. */
static gf_err load_table(gf_play *p, const Gamefn__V1__ListQueuesReply *r, const char *low)
{
    if (r->n_queues == 0 || r->n_queues > PLAY_MAX_QUEUES || r->n_datacenters == 0 ||
        r->n_datacenters > PLAY_MAX_DCS || r->n_regions > PLAY_MAX_REGIONS)
        return GF_ERR_INVALID;
    for (size_t i = 0; i < r->n_regions; i++)
        snprintf(p->regions[i], PLAY_NAME, "%s", r->regions[i]);
    p->n_regions = r->n_regions;
    for (size_t d = 0; d < r->n_datacenters; d++) {
        snprintf(p->dcs[d], PLAY_NAME, "%s", r->datacenters[d]->name);
        p->dc_region[d] = -1;
        for (size_t k = 0; k < p->n_regions; k++)
            if (strcmp(p->regions[k], r->datacenters[d]->region) == 0)
                p->dc_region[d] = (int)k;
    }
    p->n_dcs = r->n_datacenters;
    for (size_t q = 0; q < r->n_queues; q++) {
        const Gamefn__V1__QueueInfo *in = r->queues[q];
        play_queue *out = &p->queues[q];
        snprintf(out->name, sizeof out->name, "%s", in->name);
        snprintf(out->mode, sizeof out->mode, "%s", mode_name(in->mode));
        snprintf(out->shape, sizeof out->shape, "%s", in->shape);
        out->team_size = in->team_size;
        out->twin = -1;
        size_t len = strlen(in->name);
        out->is_twin = len > 8 && strcmp(in->name + len - 8, "-nomerge") == 0;
    }
    p->n_queues = r->n_queues;
    for (size_t q = 0; q < p->n_queues; q++) {
        play_queue *qq = &p->queues[q];
        if (qq->is_twin)
            continue;
        char twin[PLAY_NAME + 8];
        snprintf(twin, sizeof twin, "%s-nomerge", qq->name);
        for (size_t k = 0; k < p->n_queues; k++)
            if (strcmp(p->queues[k].name, twin) == 0)
                qq->twin = (int)k;
        p->arr_queues[p->n_arr_queues] = (gf_arr_queue){
            .name = qq->name, .mode = qq->mode, .shape = qq->shape, .team_size = qq->team_size};
        p->arr_to_queue[p->n_arr_queues++] = q;
    }
    p->low_region = -1;
    for (size_t k = 0; k < p->n_regions; k++)
        if (strcmp(p->regions[k], low) == 0)
            p->low_region = (int)k;
    return p->n_arr_queues ? GF_OK : GF_ERR_INVALID;
}

/* ---- the servers -------------------------------------------------------------------- */

/* One simulator per datacenter. A server's requests are synchronous, so each runs its
 * servers on WORKERS threads: one thread stepping a busy datacenter's 150 servers
 * one request after another falls behind their 2 s heartbeats as soon as the cores are
 * busy, and the fleet removes them after 10 s of silence (the allocator then finds no
 * server). Each starts with a pool sized for the arrival rate, since the fleet's
 * forecast starts from nothing; the warm pool grows it from there. */
static gf_err start_servers(gf_play *p, const gf_config *cfg, double rate)
{
    int initial = (int)(rate / 10.0);
    initial = initial < 8 ? 8 : initial > SERVERS_MAX ? SERVERS_MAX : initial;
    for (size_t d = 0; d < p->n_dcs; d++) {
        gf_gamesim_dc dc = {.name = p->dcs[d], .initial = initial, .max = SERVERS_MAX};
        gf_gamesim_opts o = {.dcs = &dc,
                             .n_dcs = 1,
                             .capacity = 16,
                             .port_base = (uint32_t)(20000 + 1000 * d),
                             .play_ms = 3000,
                             .play_max_ms = 8000,
                             .start_delay_ms = 1000,
                             .adapter = true,
                             .workers = WORKERS,
                             .events_per_player_s = 0.25,
                             .crash_every = 50, /* 2 %, and each simulator's first */
                             .seed = p->seed,
                             .on_event = gf_play_events_on_event,
                             .event_arg = p};
        /* Each datacenter's servers on a connection of their own, as real servers are:
         * their heartbeats never wait behind the ticket clients' bursts. */
        char name[PLAY_NAME + 16];
        snprintf(name, sizeof name, "playsim-servers-%s", p->dcs[d]);
        gf_err err = gf_conn_open(&cfg->nats, name, &p->stop, 30000, &p->sim_conns[d]);
        if (err == GF_OK)
            err = gf_gamesim_start(gf_conn_nats(p->sim_conns[d]), &o, &p->sims[d]);
        if (err != GF_OK)
            return err;
    }
    return GF_OK;
}

/* ---- the run ------------------------------------------------------------------------- */

static void run(gf_play *p, const opts *o, const sigset_t *sigs)
{
    int64_t next_sample = p->t0_mono + 1000;
    int64_t arrivals_end = p->t0_mono + (int64_t)o->seconds * 1000;
    int64_t drain_end = arrivals_end + (int64_t)(o->drain * 1000);
    gf_arrival a;
    for (;;) {
        int64_t now = gf_clock_mono_ms();
        bool over = now >= arrivals_end || stopping(p, sigs);
        if (!over)
            while (gf_arrivals_next(p->arrivals, now - p->t0_mono, &a))
                gf_play_tickets_arrive(p, &a);
        gf_play_tickets_tick(p, now, over);
        if (now >= next_sample) {
            gf_play_sample(p, now, over);
            next_sample += 1000;
        }
        if (over && (atomic_load(&p->stop) || now >= drain_end || gf_play_tickets_live(p) == 0))
            break;
        gf_clock_sleep_ms(TICK_MS);
    }
    /* The game closes: whoever still waits cancels. */
    gf_play_tickets_cancel_all(p, gf_clock_mono_ms());
    /* Up to 15 s for the cancels' answers; a create still unanswered (an overloaded
     * intake) is cancelled once its answer comes. */
    for (int64_t until = gf_clock_mono_ms() + 15000;
         gf_clock_mono_ms() < until && gf_play_tickets_live(p) > 0; gf_clock_sleep_ms(TICK_MS))
        gf_play_tickets_tick(p, gf_clock_mono_ms(), true);
    gf_play_sample(p, gf_clock_mono_ms(), true);
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "gamefn-playsim: bad arguments (--run-dir DIR, --seconds >= 1, "
                        "--population low|mid|high); see --help\n");
        return 2;
    }
    gf_log_init("playsim", GF_LOG_INFO);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* before any thread: taken in the loop */

    static gf_play play;
    gf_play *p = &play;
    pthread_mutex_init(&p->mu, NULL);
    gf_config *cfg = NULL;
    gf_config_error cerr;
    gf_conn *conn = NULL;
    Gamefn__V1__ListQueuesReply *table = NULL;
    int code = 1;
    if (gf_config_load(o.config, NULL, &cfg, &cerr) != GF_OK) {
        fprintf(stderr, "gamefn-playsim: %s\n", cerr.message);
        return 2;
    }
    gf_log_set_level((gf_log_level)cfg->log.level);
    snprintf(p->run_dir, sizeof p->run_dir, "%s", o.run_dir);
    snprintf(p->population, sizeof p->population, "%s", o.population);
    p->seconds = o.seconds;
    p->seed = o.seed;
    if (gf_conn_open(&cfg->nats, "playsim", &p->stop, 30000, &conn) != GF_OK) {
        printf("M gamefn-playsim: cannot connect to NATS\n");
        goto out;
    }
    p->nc = gf_conn_nats(conn);
    p->js = gf_conn_js(conn);
    table = list_queues(p, &sigs);
    if (!table || load_table(p, table, o.low_region) != GF_OK) {
        printf("M gamefn-playsim: no usable queue table from intake\n");
        goto out;
    }
    p->t0_unix = gf_clock_unix_ms();
    snprintf(p->nonce, sizeof p->nonce, "%llx", (unsigned long long)(p->t0_unix % 0xffffffffff));
    gf_play_observers_start(p);
    gf_err err = gf_play_record_open(p);
    if (err == GF_OK)
        err = gf_play_tickets_start(p);
    if (err == GF_OK)
        err = gf_play_matches_start(p);
    if (err == GF_OK)
        err = gf_play_events_start(p);
    if (err == GF_OK)
        err = start_servers(p, cfg, o.rate);
    if (err == GF_OK)
        err = gf_arrivals_new(o.seed, o.rate, o.seconds, p->arr_queues, p->n_arr_queues,
                              &p->arrivals);
    if (err != GF_OK) {
        printf("M gamefn-playsim: cannot start (%s; is the stack provisioned?)\n", gf_err_str(err));
        goto out;
    }
    printf("M   %zu queues (%s's players also in their -nomerge twins), %zu datacenters; "
           "one simulated day in %d s\n",
           p->n_arr_queues, p->low_region >= 0 ? o.low_region : "nobody", p->n_dcs, o.seconds);
    fflush(stdout);
    p->t0_mono = gf_clock_mono_ms();
    run(p, &o, &sigs);
    /* The servers stop first (no event after this), then the producers flush. */
    for (size_t d = 0; d < PLAY_MAX_DCS; d++) {
        if (p->sims[d]) {
            gf_gamesim_stats st;
            gf_gamesim_stats_get(p->sims[d], &st);
            p->fleet.registers += st.registers;
            p->fleet.heartbeats += st.heartbeats;
            p->fleet.heartbeat_failures += st.heartbeat_failures;
            p->fleet.games_finished += st.games_finished;
            p->fleet.tokens_ok += st.tokens_ok;
            p->fleet.tokens_bad += st.tokens_bad;
            p->fleet.started += st.started;
            p->fleet.hibernated += st.hibernated;
        }
        gf_gamesim_stop(p->sims[d]);
        p->sims[d] = NULL;
    }
    gf_play_matches_flush(p);
    gf_play_events_stop(p, 10000);
    int64_t stored_unix_ms = gf_clock_unix_ms(); /* every event of the run is stored */
    /* The event consumers catch up (leaderboard, analytics, crashes: nothing pending or
     * in flight) before what they made of the run is read; the last sample shows it. */
    if (!atomic_load(&p->stop)) {
        printf("M   game over; waiting for the event consumers to catch up\n");
        fflush(stdout);
        gf_play_observers_settle(p, 30000);
        gf_play_sample(p, gf_clock_mono_ms(), true);
    }
    gf_play_figures(p, stored_unix_ms);
    code = 0;
out:
    for (size_t d = 0; d < PLAY_MAX_DCS; d++) {
        gf_gamesim_stop(p->sims[d]);
        gf_conn_close(p->sim_conns[d], 2000);
    }
    /* Closed (callbacks finished) before what the callbacks use is freed. */
    gf_sub_close(p->replies, 2000);
    gf_sub_close(p->statuses, 2000);
    gf_sub_close(p->tap, 2000);
    gf_play_record_close(p);
    gf_play_events_free(p);
    gf_play_observers_free(p);
    gf_arrivals_free(p->arrivals);
    gamefn__v1__list_queues_reply__free_unpacked(table, NULL);
    gf_conn_close(conn, 2000);
    gf_config_free(cfg);
    free(p->t);
    free(p->m);
    free(p->waits);
    gf_play_index_free(&p->t_index);
    gf_play_index_free(&p->m_index);
    fflush(stdout);
    return code;
}
