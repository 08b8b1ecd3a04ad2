/*
 * support/natsd/natsd.h — real nats-server processes for tests and benchmarks.
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
 *
 * Threads: none of these functions may be called concurrently on one server or
 * cluster; call them from the main thread (servers die with the thread that
 * started them, see proc.h). Ownership: start allocates, free releases; the
 * strings returned are owned by the server object and live until it is freed.
 */
#ifndef GAMEFN_TEST_NATSD_H
#define GAMEFN_TEST_NATSD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct gf_natsd gf_natsd;
typedef struct gf_natsd_cluster gf_natsd_cluster;

/* The event subject mapping of deploy/local/nats.conf.in (docs/PROTOCOL.md §9), for
 * gf_natsd_opts.extra_config of tests and benchmarks of the event log. */
#define GF_NATSD_EVENT_MAPPING                                                                     \
    "mappings {\n"                                                                                 \
    "  \"gamefn.v1.event.*.*\": "                                                                  \
    "\"gamefn.v1.evp.{{partition(16,1)}}.{{wildcard(1)}}.{{wildcard(2)}}\"\n"                      \
    "}\n"

typedef struct gf_natsd_opts {
    bool no_jetstream;        /* JetStream is on unless this is set */
    const char *extra_config; /* appended to the generated config file (e.g. mappings {...}) */
    int start_timeout_ms;     /* 0 = 10000 */
} gf_natsd_opts;

/* opts may be NULL. Returns 0, or -1 with a message on stderr. */
int gf_natsd_start(const gf_natsd_opts *opts, gf_natsd **out);
const char *gf_natsd_url(const gf_natsd *s); /* "nats://127.0.0.1:<port>" */
int gf_natsd_port(const gf_natsd *s);
int gf_natsd_monitor_port(const gf_natsd *s); /* HTTP monitoring, for /varz /jsz /healthz */
pid_t gf_natsd_pid(const gf_natsd *s);        /* 0 when stopped */
const char *gf_natsd_dir(const gf_natsd *s);  /* its temporary directory */

int gf_natsd_stop(gf_natsd *s);    /* SIGTERM, wait (then SIGKILL after 10 s) */
int gf_natsd_kill(gf_natsd *s);    /* SIGKILL, wait */
int gf_natsd_restart(gf_natsd *s); /* same ports, config and store; waits until ready */
void gf_natsd_free(gf_natsd *s);   /* stop if running, remove dir; NULL is fine */

/* Logs, monitoring and probes, for tests that inspect a server. */
const char *gf_natsd_name(const gf_natsd *s);     /* server_name, as in stream info Leader */
const char *gf_natsd_log_path(const gf_natsd *s); /* server output, appended across restarts */
void gf_natsd_dump_log(const gf_natsd *s, int max_lines); /* last lines to stderr */
/* GET http://127.0.0.1:<monitor port><path> (e.g. "/jsz?streams=1"). Returns 0 with
 * the JSON body in *out (caller json_decref()s it), -1 if the server does not answer. */
int gf_natsd_monitor_json(const gf_natsd *s, const char *path, json_t **out);
/* Server version ("2.9.10") read from the INFO line of any server at a nats://host:port
 * URL (no nats.c needed). Returns 0, or -1 with a message on stderr. */
int gf_natsd_probe_version(const char *url, char *buf, size_t size);

/* A cluster of n nodes (3 or 5) on loopback, JetStream on every node. Nodes are
 * indexed from 0 and belong to the cluster: stop/kill/restart them, never free them.
 * Start returns once every node is healthy, fully routed and knows the JetStream
 * meta leader. A restarted node is ready once healthy and it knows the meta leader
 * (the server's /healthz also waits for its replicated assets to catch up). */
int gf_natsd_cluster_start(int n, const gf_natsd_opts *opts, gf_natsd_cluster **out);
int gf_natsd_cluster_size(const gf_natsd_cluster *c);
gf_natsd *gf_natsd_cluster_node(gf_natsd_cluster *c, int i);
const char *gf_natsd_cluster_urls(const gf_natsd_cluster *c); /* "nats://..,nats://..,.." */
/* The whole cluster down and up again (a site outage, or a restart of every node at
 * once): every node is stopped (SIGTERM, in parallel), then all are started again on the
 * same ports, stores and routes. With wait_ready, returns once every node is ready as at
 * start (healthy, fully routed, knows the meta leader); without, as soon as the processes
 * run, for a test that acts while the cluster comes up. 0, or -1 with a message on
 * stderr. */
int gf_natsd_cluster_restart(gf_natsd_cluster *c, bool wait_ready);
void gf_natsd_cluster_free(gf_natsd_cluster *c);

#endif
