/*
 * tests/harness/natsd.h — real nats-server processes for tests and benchmarks.
 *
 * Each server listens on 127.0.0.1 only, on ports the server picks itself, with
 * JetStream storage in a fresh temporary directory. Start returns once the server
 * accepts clients and JetStream is ready (for a cluster: a meta leader exists).
 * Stop/kill act on the server's own pid only. gf_natsd_free() stops the server if
 * it still runs and removes its directory, so a test that frees everything leaves
 * no process and no files behind.
 *
 * The nats-server binary: $GAMEFN_NATS_SERVER, else nats-server on PATH, else
 * /usr/sbin/nats-server.
 */
#ifndef GAMEFN_TEST_NATSD_H
#define GAMEFN_TEST_NATSD_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct gf_natsd gf_natsd;
typedef struct gf_natsd_cluster gf_natsd_cluster;

typedef struct gf_natsd_opts {
    bool no_jetstream;        /* JetStream is on unless this is set */
    const char *extra_config; /* appended to the generated config file (e.g. mappings {...}) */
    int start_timeout_ms;     /* 0 = 10000 */
} gf_natsd_opts;

/* opts may be NULL. Returns 0, or -1 with a message on stderr. */
int gf_natsd_start(const gf_natsd_opts *opts, gf_natsd **out);
const char *gf_natsd_url(const gf_natsd *s);  /* "nats://127.0.0.1:<port>" */
int gf_natsd_port(const gf_natsd *s);
int gf_natsd_monitor_port(const gf_natsd *s); /* HTTP monitoring, for /varz /jsz /healthz */
pid_t gf_natsd_pid(const gf_natsd *s);        /* 0 when stopped */
const char *gf_natsd_dir(const gf_natsd *s);  /* its temporary directory */

int gf_natsd_stop(gf_natsd *s);               /* SIGTERM, wait (then SIGKILL after 10 s) */
int gf_natsd_kill(gf_natsd *s);               /* SIGKILL, wait */
int gf_natsd_restart(gf_natsd *s);            /* same ports, config and store; waits until ready */
void gf_natsd_free(gf_natsd *s);              /* stop if running, remove dir; NULL is fine */

/* A cluster of n nodes (3 or 5) on loopback, JetStream on every node. */
int gf_natsd_cluster_start(int n, const gf_natsd_opts *opts, gf_natsd_cluster **out);
int gf_natsd_cluster_size(const gf_natsd_cluster *c);
gf_natsd *gf_natsd_cluster_node(gf_natsd_cluster *c, int i);
const char *gf_natsd_cluster_urls(const gf_natsd_cluster *c); /* "nats://..,nats://..,.." */
void gf_natsd_cluster_free(gf_natsd_cluster *c);

#endif
