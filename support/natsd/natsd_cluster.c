/*
 * natsd_cluster.c — loopback JetStream clusters of 3 or 5 harness nodes.
 *
 * Design notes:
 * - Cluster ports cannot be chosen by the servers: every node's `routes` must
 *   list them up front. We bind n sockets to 127.0.0.1:0 at once (distinct free
 *   ports from the kernel) and close them just before spawning. If a node still
 *   loses its port to someone else ("address already in use" in its log), the
 *   whole attempt is torn down and retried with new ports (3 attempts).
 * - Client and monitoring ports are picked by each server (-1) as for a single
 *   node, and pinned in the config once the cluster is ready, so a node restarts
 *   on the same URL with the same store and the same routes.
 * - Ready means: every node healthy, routed to all n-1 others, and aware of the
 *   JetStream meta leader.
 * - A whole-cluster restart stops every node before starting any, so no stream keeps
 *   a quorum across it; ready then takes longer (elections), hence a longer deadline.
 */
#include "natsd_dir.h"
#include "natsd_node.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gamefn/clock.h"

struct gf_natsd_cluster {
    int n;
    char dir[PATH_MAX];
    char urls[NATSD_MAX_NODES * 32];
    gf_natsd *nodes[NATSD_MAX_NODES];
};

/* n distinct free loopback ports, held together so the kernel cannot repeat one. */
static int pick_ports(int n, int *ports)
{
    int fds[NATSD_MAX_NODES];
    int rc = 0, opened = 0;
    for (; opened < n; opened++) {
        struct sockaddr_in a;
        socklen_t alen = sizeof a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fds[opened] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[opened] < 0 || bind(fds[opened], (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(fds[opened], (struct sockaddr *)&a, &alen) != 0) {
            fprintf(stderr, "natsd: cannot reserve a loopback port: %s\n", strerror(errno));
            if (fds[opened] >= 0)
                close(fds[opened]);
            rc = -1;
            break;
        }
        ports[opened] = ntohs(a.sin_port);
    }
    for (int i = 0; i < opened; i++)
        close(fds[i]);
    return rc;
}

static bool log_mentions(const gf_natsd *s, const char *needle)
{
    char line[1024];
    bool found = false;
    FILE *f = fopen(s->log_path, "r");
    if (!f)
        return false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void cluster_free_nodes(gf_natsd_cluster *c)
{
    for (int i = 0; i < c->n; i++) {
        gf_natsd_node_free(c->nodes[i]);
        c->nodes[i] = NULL;
    }
}

/* One attempt at forming the cluster. 0 ok, 1 port lost to someone else (retry), -1 error. */
static int cluster_try(gf_natsd_cluster *c, const gf_natsd_opts *opts)
{
    int ports[NATSD_MAX_NODES];
    const char *suffix = strrchr(c->dir, '-') + 1;
    if (pick_ports(c->n, ports) != 0)
        return -1;
    for (int i = 0; i < c->n; i++) {
        char dir[sizeof c->dir + 16], name[64];
        snprintf(dir, sizeof dir, "%s/n%d", c->dir, i);
        snprintf(name, sizeof name, "gf-%s-n%d", suffix, i);
        if (mkdir(dir, 0700) != 0) {
            fprintf(stderr, "natsd: mkdir %s: %s\n", dir, strerror(errno));
            return -1;
        }
        gf_natsd *s = gf_natsd_node_new(dir, name, opts);
        if (!s) {
            gf_natsd_dir_remove(dir);
            return -1;
        }
        c->nodes[i] = s;
        s->jetstream = true; /* a cluster here is a JetStream cluster */
        snprintf(s->cluster_name, sizeof s->cluster_name, "gf-%s", suffix);
        s->cluster_size = c->n;
        s->cluster_port = ports[i];
        memcpy(s->route_ports, ports, sizeof ports);
        if (gf_natsd_node_write_config(s) != 0)
            return -1;
    }
    for (int i = 0; i < c->n; i++) {
        if (gf_natsd_node_spawn(c->nodes[i]) != 0)
            return -1;
    }
    long long deadline = gf_clock_mono_ms() + c->nodes[0]->timeout_ms;
    for (int i = 0; i < c->n; i++) {
        if (gf_natsd_node_wait_ready(c->nodes[i], deadline, true) == 0)
            continue;
        for (int j = 0; j < c->n; j++) {
            if (log_mentions(c->nodes[j], "address already in use")) {
                fprintf(stderr, "natsd: %s lost its cluster port %d; retrying\n", c->nodes[j]->name,
                        c->nodes[j]->cluster_port);
                return 1;
            }
        }
        gf_natsd_dump_log(c->nodes[i], 30);
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        if (gf_natsd_node_write_config(c->nodes[i]) != 0)
            return -1;
    }
    return 0;
}

int gf_natsd_cluster_start(int n, const gf_natsd_opts *opts, gf_natsd_cluster **out)
{
    gf_natsd_cluster *c = NULL;
    if (!out) {
        fprintf(stderr, "gf_natsd_cluster_start: out is NULL\n");
        return -1;
    }
    *out = NULL;
    if (n != 3 && n != 5) {
        fprintf(stderr, "gf_natsd_cluster_start: %d nodes asked; a cluster has 3 or 5\n", n);
        return -1;
    }
    if (opts && opts->no_jetstream) {
        fprintf(stderr, "gf_natsd_cluster_start: clusters always run JetStream\n");
        return -1;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "natsd: out of memory\n");
        return -1;
    }
    c->n = n;
    gf_natsd_dir_sweep();
    if (gf_natsd_dir_create("gamefn-cluster", c->dir, sizeof c->dir) != 0)
        goto fail;
    int r = 1;
    for (int attempt = 0; attempt < NATSD_CLUSTER_ATTEMPTS && r == 1; attempt++) {
        r = cluster_try(c, opts);
        if (r != 0)
            cluster_free_nodes(c);
    }
    if (r != 0)
        goto fail;
    size_t off = 0;
    for (int i = 0; i < n; i++)
        off += (size_t)snprintf(c->urls + off, sizeof c->urls - off, "%s%s", i ? "," : "",
                                c->nodes[i]->url);
    *out = c;
    return 0;
fail:
    gf_natsd_cluster_free(c);
    return -1;
}

int gf_natsd_cluster_size(const gf_natsd_cluster *c)
{
    return c ? c->n : 0;
}

gf_natsd *gf_natsd_cluster_node(gf_natsd_cluster *c, int i)
{
    if (!c || i < 0 || i >= c->n)
        return NULL;
    return c->nodes[i];
}

const char *gf_natsd_cluster_urls(const gf_natsd_cluster *c)
{
    return c->urls;
}

int gf_natsd_cluster_restart(gf_natsd_cluster *c, bool wait_ready)
{
    if (!c)
        return -1;
    /* SIGTERM all first so they go down together, as in an outage, then reap one by one. */
    for (int i = 0; i < c->n; i++)
        gf_proc_signal(&c->nodes[i]->proc, SIGTERM);
    for (int i = 0; i < c->n; i++)
        gf_natsd_stop(c->nodes[i]);
    for (int i = 0; i < c->n; i++) {
        if (gf_natsd_node_spawn(c->nodes[i]) != 0)
            return -1;
    }
    if (!wait_ready)
        return 0;
    /* A meta leader first, then every replicated stream's own election (election timeouts
     * of 4 to 9 s on 2.9.10) before /healthz says ok: allow more than a first start. */
    long long deadline = gf_clock_mono_ms() + 3LL * c->nodes[0]->timeout_ms;
    for (int i = 0; i < c->n; i++) {
        if (gf_natsd_node_wait_ready(c->nodes[i], deadline, true) != 0) {
            gf_natsd_dump_log(c->nodes[i], 30);
            return -1;
        }
    }
    return 0;
}

void gf_natsd_cluster_free(gf_natsd_cluster *c)
{
    if (!c)
        return;
    /* SIGTERM all first so they shut down in parallel, then reap one by one. */
    for (int i = 0; i < c->n; i++) {
        if (c->nodes[i])
            gf_proc_signal(&c->nodes[i]->proc, SIGTERM);
    }
    cluster_free_nodes(c);
    gf_natsd_dir_remove(c->dir);
    free(c);
}
