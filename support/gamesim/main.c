/*
 * gamefn-gamesim — simulated game servers and orchestrator adapter (gamesim.h) as a
 * program, for the local stack and by-hand experiments.
 *
 *   gamefn-gamesim [--config FILE] [--servers DC=N[:MAX],...] [--capacity N]
 *                  [--play DURATION] [--start-delay DURATION] [--address HOST]
 *                  [--port-base PORT] [--prefix ID] [--no-adapter] [--seconds N]
 *
 * NATS comes from the config file (nats:) or GAMEFN_NATS_URL, like every function.
 * Stats are logged every 10 s and at exit; SIGTERM or SIGINT deregisters the servers
 * and exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gamefn/config.h"
#include "gamefn/conn.h"
#include "gamefn/log.h"
#include "gamesim.h"

enum { MAX_DCS = 32 };

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gamefn-gamesim [--config FILE] [--servers DC=N[:MAX],...] [--capacity N]\n"
            "                      [--play DURATION] [--start-delay DURATION] [--address HOST]\n"
            "                      [--port-base PORT] [--prefix ID] [--no-adapter] [--seconds N]\n"
            "  --servers      servers per datacenter at start, and the most the adapter runs\n"
            "                 (default local=2:8)\n"
            "  --play         how long a match lasts once every player joined (default 5s)\n"
            "  --start-delay  time a started server takes to register (default 1s)\n"
            "  --no-adapter   ignore FleetScaleRequests (a fixed fleet)\n");
}

/* "a=2:8,b=1" into dcs; names point into `spec` (modified). */
static int parse_servers(char *spec, gf_gamesim_dc *dcs, size_t *n)
{
    *n = 0;
    for (char *save = NULL, *item = strtok_r(spec, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || *n == MAX_DCS)
            return -1;
        *eq = '\0';
        char *end = NULL;
        long initial = strtol(eq + 1, &end, 10), max = initial;
        if (end && *end == ':')
            max = strtol(end + 1, &end, 10);
        if (!item[0] || !end || *end || initial < 0 || max < initial || max > 100000)
            return -1;
        dcs[(*n)++] = (gf_gamesim_dc){.name = item, .initial = (int)initial, .max = (int)max};
    }
    return *n > 0 ? 0 : -1;
}

static void log_stats(gf_gamesim *sim, const char *msg)
{
    gf_gamesim_stats st;
    gf_gamesim_stats_get(sim, &st);
    gf_log_info(msg,
                "servers=%u free=%u busy=%u hibernating=%u allocations=%llu games=%llu "
                "tokens_ok=%llu tokens_bad=%llu gone=%llu started=%llu woken=%llu "
                "hibernated=%llu heartbeat_failures=%llu",
                st.servers, st.free, st.busy, st.hibernating, (unsigned long long)st.allocations,
                (unsigned long long)st.games_finished, (unsigned long long)st.tokens_ok,
                (unsigned long long)st.tokens_bad, (unsigned long long)st.allocations_gone,
                (unsigned long long)st.started, (unsigned long long)st.woken,
                (unsigned long long)st.hibernated, (unsigned long long)st.heartbeat_failures);
}

int main(int argc, char **argv)
{
    const char *path = getenv("GAMEFN_CONFIG");
    char default_servers[] = "local=2:8", *servers = default_servers;
    gf_gamesim_opts o = {.play_ms = 5000, .start_delay_ms = 1000, .adapter = true};
    long seconds = 0;
    if (!path || !path[0])
        path = "config/gamefn.yaml";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t ms = 0;
        if (strcmp(a, "--no-adapter") == 0) {
            o.adapter = false;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        if (strcmp(a, "--config") == 0)
            path = v;
        else if (strcmp(a, "--servers") == 0)
            servers = argv[i];
        else if (strcmp(a, "--capacity") == 0)
            o.capacity = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--address") == 0)
            o.address = v;
        else if (strcmp(a, "--port-base") == 0)
            o.port_base = (uint32_t)strtoul(v, NULL, 10);
        else if (strcmp(a, "--prefix") == 0)
            o.id_prefix = v;
        else if (strcmp(a, "--seconds") == 0)
            seconds = strtol(v, NULL, 10);
        else if ((strcmp(a, "--play") == 0 || strcmp(a, "--start-delay") == 0) &&
                 gf_config_parse_duration_ms(v, &ms) == GF_OK)
            *(a[2] == 'p' ? &o.play_ms : &o.start_delay_ms) = ms;
        else {
            usage(stderr);
            return 2;
        }
    }
    gf_gamesim_dc dcs[MAX_DCS];
    if (parse_servers(servers, dcs, &o.n_dcs) != 0 || o.capacity > 1024 || seconds < 0) {
        fprintf(stderr, "gamefn-gamesim: bad --servers, --capacity or --seconds\n");
        return 2;
    }
    o.dcs = dcs;
    gf_log_init("gamesim", GF_LOG_INFO);
    gf_config *cfg = NULL;
    gf_config_error cerr;
    if (gf_config_load(path, NULL, &cfg, &cerr) != GF_OK) {
        fprintf(stderr, "gamefn-gamesim: %s\n", cerr.message);
        return 2;
    }
    gf_log_set_level((gf_log_level)cfg->log.level);

    /* Signals are taken by sigtimedwait below; block them before any thread starts. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    gf_conn *conn = NULL;
    gf_gamesim *sim = NULL;
    int code = 1;
    if (gf_conn_open(&cfg->nats, "gamesim", NULL, 30000, &conn) != GF_OK) {
        gf_log_error("cannot connect to NATS", NULL);
        goto out;
    }
    gf_err err = gf_gamesim_start(gf_conn_nats(conn), &o, &sim);
    if (err != GF_OK) {
        gf_log_error("simulator not started (are the fleet and tickets buckets provisioned?)",
                     "err=%s", gf_err_str(err));
        goto out;
    }
    gf_log_info("started", "datacenters=%zu adapter=%d play_ms=%lld", o.n_dcs, o.adapter,
                (long long)o.play_ms);
    for (long s = 1;; s++) {
        struct timespec one = {1, 0};
        if (sigtimedwait(&sigs, NULL, &one) > 0 || (seconds > 0 && s >= seconds))
            break;
        if (s % 10 == 0)
            log_stats(sim, "stats");
    }
    log_stats(sim, "stopping");
    code = 0;
out:
    gf_gamesim_stop(sim);
    gf_conn_close(conn, 2000);
    gf_config_free(cfg);
    return code;
}
