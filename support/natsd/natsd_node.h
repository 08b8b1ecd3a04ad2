/*
 * support/natsd/natsd_node.h — private to the harness: one nats-server process
 * (struct gf_natsd) as natsd.c manages it, shared with natsd_cluster.c, which
 * builds clusters out of such nodes.
 *
 * Ownership: gf_natsd_node_new allocates, gf_natsd_node_free stops the process,
 * removes the node's directory and frees. Single-threaded like natsd.h.
 */
#ifndef GAMEFN_TEST_NATSD_NODE_H
#define GAMEFN_TEST_NATSD_NODE_H

#include <limits.h>
#include <stdbool.h>

#include "natsd.h"
#include "proc.h"

enum {
    NATSD_MAX_NODES = 5,
    NATSD_DEFAULT_TIMEOUT_MS = 10000,
    NATSD_STOP_GRACE_MS = 10000,
    NATSD_PROBE_TIMEOUT_MS = 2000,
    NATSD_CLUSTER_ATTEMPTS = 3,
};

struct gf_natsd {
    gf_proc proc;
    char dir[PATH_MAX];
    char conf_path[PATH_MAX + 16];
    char log_path[PATH_MAX + 32];
    char bin[PATH_MAX];
    char name[64];
    char url[64];
    int port;         /* 0 until the first start reported it */
    int monitor_port; /* idem */
    bool jetstream;
    int timeout_ms;
    char *extra_config;
    /* cluster membership (cluster_size 0 = standalone) */
    char cluster_name[64];
    int cluster_size;
    int cluster_port;
    int route_ports[NATSD_MAX_NODES];
};

/* A node object for an existing directory; nothing started yet. NULL on error. */
gf_natsd *gf_natsd_node_new(const char *dir, const char *name, const gf_natsd_opts *opts);

/* Writes <dir>/nats.conf atomically from the node's fields (unknown ports as -1). */
int gf_natsd_node_write_config(const gf_natsd *s);

/* Starts the process (stale ports files removed first). */
int gf_natsd_node_spawn(gf_natsd *s);

/* Polls until ready, the process exits, or the deadline (gf_clock_mono_ms) passes.
 * full_mesh: also require cluster_size - 1 routes (a forming cluster). */
int gf_natsd_node_wait_ready(gf_natsd *s, long long deadline, bool full_mesh);

void gf_natsd_node_free(gf_natsd *s);

#endif
