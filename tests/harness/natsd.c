/*
 * natsd.c — real nats-server processes (single node and loopback clusters) for
 * tests and benchmarks.
 *
 * Design notes:
 * - Ports without races: a first start writes "127.0.0.1:-1" for the client and
 *   monitoring listeners, so the server binds free ports itself, and reports them
 *   in the JSON ports file (`ports_file_dir`, "<exe>_<pid>.ports"). Once ready,
 *   the config is rewritten with the ports it got, so gf_natsd_restart() comes
 *   back on the same URL with the same store.
 * - Cluster ports cannot be chosen by the servers: every node's `routes` must
 *   list them up front. We bind n sockets to 127.0.0.1:0 at once (distinct free
 *   ports from the kernel), close them just before spawning, and if a node still
 *   loses its port to someone else ("address already in use" in its log), the
 *   whole cluster attempt is torn down and retried with new ports.
 * - Readiness is judged from outside, never by nats.c: the ports file exists, the
 *   client port greets with INFO, GET /healthz is "ok" (on 2.9.10 that includes
 *   contact with the JetStream meta leader and caught-up replicated assets), /jsz
 *   says JetStream is enabled, and for a forming cluster every node sees n-1 routes
 *   and a meta leader. A server that exits while we wait fails the start at once.
 * - The server's stdout/stderr go to <dir>/nats-server.log (appended across
 *   restarts); failures print its tail. Processes come from proc.c, so they die
 *   with the test (PR_SET_PDEATHSIG) even when the test crashes.
 * - Stop is SIGTERM then SIGKILL after 10 s, always followed by waitpid on the
 *   server's own pid.
 */
#define _XOPEN_SOURCE 700 /* nftw */

#include "natsd.h"

#include "natsd_probe.h"
#include "proc.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

struct gf_natsd_cluster {
    int n;
    char dir[PATH_MAX];
    char urls[NATSD_MAX_NODES * 32];
    gf_natsd *nodes[NATSD_MAX_NODES];
};

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int find_binary(char *out, size_t size)
{
    const char *env = getenv("GAMEFN_NATS_SERVER");
    if (env && *env) {
        if (access(env, X_OK) != 0) {
            fprintf(stderr, "natsd: GAMEFN_NATS_SERVER=%s is not executable: %s\n", env,
                    strerror(errno));
            return -1;
        }
        snprintf(out, size, "%s", env);
        return 0;
    }
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len > 0 && snprintf(out, size, "%.*s/nats-server", (int)len, path) < (int)size &&
            access(out, X_OK) == 0)
            return 0;
        path += len;
        if (*path == ':')
            path++;
    }
    snprintf(out, size, "/usr/sbin/nats-server");
    if (access(out, X_OK) == 0)
        return 0;
    fprintf(stderr, "natsd: no nats-server (set GAMEFN_NATS_SERVER or install nats-server)\n");
    return -1;
}

/* Paths go into the config inside double quotes; refuse what would need escaping. */
static bool config_safe(const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\' || *s == '\n' || *s == '\r')
            return false;
    }
    return true;
}

static int make_temp_dir(const char *prefix, char *out, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    if (snprintf(out, size, "%s/%s-XXXXXX", tmp, prefix) >= (int)size) {
        fprintf(stderr, "natsd: TMPDIR path too long\n");
        return -1;
    }
    if (!mkdtemp(out)) {
        fprintf(stderr, "natsd: mkdtemp %s: %s\n", out, strerror(errno));
        out[0] = '\0';
        return -1;
    }
    if (!config_safe(out)) {
        fprintf(stderr, "natsd: temp dir %s has characters a config cannot hold\n", out);
        rmdir(out);
        out[0] = '\0';
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0 && errno != ENOENT)
        fprintf(stderr, "natsd: remove %s: %s\n", path, strerror(errno));
    return 0;
}

static void remove_tree(const char *dir)
{
    if (dir[0])
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes the config atomically (tmp + rename) so a restart never reads half a file.
 * Unknown ports are written as -1: the server picks them. */
static int write_config(const gf_natsd *s)
{
    char tmp_path[sizeof s->conf_path + 8];
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", s->conf_path);
    FILE *f = fopen(tmp_path, "w");
    if (!f) {
        fprintf(stderr, "natsd: cannot write %s: %s\n", tmp_path, strerror(errno));
        return -1;
    }
    fprintf(f, "# generated by gamefn tests/harness/natsd.c\n");
    fprintf(f, "server_name: \"%s\"\n", s->name);
    fprintf(f, "listen: \"127.0.0.1:%d\"\n", s->port ? s->port : -1);
    fprintf(f, "http: \"127.0.0.1:%d\"\n", s->monitor_port ? s->monitor_port : -1);
    fprintf(f, "ports_file_dir: \"%s\"\n", s->dir);
    if (s->jetstream)
        fprintf(f, "jetstream {\n  store_dir: \"%s/store\"\n}\n", s->dir);
    if (s->cluster_size > 0) {
        fprintf(f, "cluster {\n  name: \"%s\"\n  listen: \"127.0.0.1:%d\"\n  routes: [\n",
                s->cluster_name, s->cluster_port);
        for (int i = 0; i < s->cluster_size; i++)
            fprintf(f, "    \"nats-route://127.0.0.1:%d\"\n", s->route_ports[i]);
        fprintf(f, "  ]\n}\n");
    }
    if (s->extra_config)
        fprintf(f, "\n# extra_config\n%s\n", s->extra_config);
    int rc = 0;
    if (ferror(f))
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp_path, s->conf_path) != 0)
        rc = -1;
    if (rc != 0) {
        fprintf(stderr, "natsd: writing %s failed: %s\n", s->conf_path, strerror(errno));
        unlink(tmp_path);
    }
    return rc;
}

/* Allocates a server object in an existing directory; does not start it. */
static gf_natsd *node_new(const char *dir, const char *name, const gf_natsd_opts *opts)
{
    gf_natsd *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "natsd: out of memory\n");
        return NULL;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(s->conf_path, sizeof s->conf_path, "%s/nats.conf", dir);
    snprintf(s->log_path, sizeof s->log_path, "%s/nats-server.log", dir);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->jetstream = !(opts && opts->no_jetstream);
    s->timeout_ms = opts && opts->start_timeout_ms > 0 ? opts->start_timeout_ms
                                                        : NATSD_DEFAULT_TIMEOUT_MS;
    if (opts && opts->extra_config) {
        s->extra_config = strdup(opts->extra_config);
        if (!s->extra_config) {
            fprintf(stderr, "natsd: out of memory\n");
            free(s);
            return NULL;
        }
    }
    if (find_binary(s->bin, sizeof s->bin) != 0) {
        free(s->extra_config);
        free(s);
        return NULL;
    }
    return s;
}

static int node_spawn(gf_natsd *s)
{
    char *argv[] = {s->bin, "-c", s->conf_path, NULL};
    gf_natsd_probe_clear_ports(s->dir);
    if (gf_proc_spawn(&s->proc, argv, NULL, s->log_path) != 0) {
        fprintf(stderr, "natsd: cannot start %s\n", s->bin);
        return -1;
    }
    return 0;
}

/* One readiness check; 1 = ready, 0 = not yet (reason in why). */
static int node_check(gf_natsd *s, bool full_mesh, char *why, size_t why_size)
{
    json_t *info = NULL, *body = NULL;
    int status = 0, ready = 0;

    if (s->port == 0) {
        int client = 0, monitor = 0, cluster = 0;
        if (gf_natsd_probe_ports_file(s->dir, s->proc.pid, &client, &monitor, &cluster) != 1) {
            snprintf(why, why_size, "no ports file yet");
            return 0;
        }
        s->port = client;
        s->monitor_port = monitor;
        snprintf(s->url, sizeof s->url, "nats://127.0.0.1:%d", client);
        if (monitor == 0) {
            snprintf(why, why_size, "ports file lists no monitoring port");
            return 0;
        }
    }
    if (gf_natsd_probe_info("127.0.0.1", s->port, NATSD_PROBE_TIMEOUT_MS, &info, why,
                            why_size) != 0)
        goto out;
    if (gf_natsd_probe_http(s->monitor_port, "/healthz", NATSD_PROBE_TIMEOUT_MS, &status, &body,
                            why, why_size) != 0)
        goto out;
    const char *health = json_string_value(json_object_get(body, "status"));
    if (status != 200 || !health || strcmp(health, "ok") != 0) {
        const char *e = json_string_value(json_object_get(body, "error"));
        snprintf(why, why_size, "/healthz: HTTP %d %s", status, e ? e : "");
        goto out;
    }
    if (s->jetstream) {
        json_decref(body);
        body = NULL;
        if (gf_natsd_probe_http(s->monitor_port, "/jsz", NATSD_PROBE_TIMEOUT_MS, &status, &body,
                                why, why_size) != 0)
            goto out;
        if (json_is_true(json_object_get(body, "disabled")) ||
            !json_is_object(json_object_get(body, "config"))) {
            snprintf(why, why_size, "/jsz: JetStream not enabled");
            goto out;
        }
        if (s->cluster_size > 0) {
            json_t *meta = json_object_get(body, "meta_cluster");
            const char *leader = json_string_value(json_object_get(meta, "leader"));
            if (!leader || !*leader) {
                snprintf(why, why_size, "/jsz: no JetStream meta leader yet");
                goto out;
            }
        }
    }
    if (full_mesh && s->cluster_size > 1) {
        json_decref(body);
        body = NULL;
        if (gf_natsd_probe_http(s->monitor_port, "/routez", NATSD_PROBE_TIMEOUT_MS, &status,
                                &body, why, why_size) != 0)
            goto out;
        json_int_t routes = json_integer_value(json_object_get(body, "num_routes"));
        if (routes < s->cluster_size - 1) {
            snprintf(why, why_size, "/routez: %lld of %d routes", (long long)routes,
                     s->cluster_size - 1);
            goto out;
        }
    }
    ready = 1;
out:
    json_decref(info);
    json_decref(body);
    return ready;
}

/* Polls until ready, the process exits, or the deadline passes. */
static int node_wait_ready(gf_natsd *s, long long deadline, bool full_mesh)
{
    char why[512] = "not checked yet";
    for (;;) {
        if (!gf_proc_running(&s->proc)) {
            int st = s->proc.exit_status;
            fprintf(stderr, "natsd: %s exited while starting (%s %d)\n", s->name,
                    WIFEXITED(st) ? "exit code" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            return -1;
        }
        if (node_check(s, full_mesh, why, sizeof why) == 1)
            return 0;
        if (mono_ms() >= deadline) {
            fprintf(stderr, "natsd: %s not ready in time: %s\n", s->name, why);
            return -1;
        }
        sleep_ms(25);
    }
}

static int node_stop(gf_natsd *s, int sig)
{
    if (s->proc.pid <= 0)
        return 0;
    gf_proc_signal(&s->proc, sig);
    if (gf_proc_wait(&s->proc, sig == SIGKILL ? -1 : NATSD_STOP_GRACE_MS) != 0) {
        fprintf(stderr, "natsd: %s ignored SIGTERM for %d ms; killing it\n", s->name,
                NATSD_STOP_GRACE_MS);
        gf_proc_cleanup(&s->proc);
    }
    return 0;
}

static void node_free(gf_natsd *s)
{
    if (!s)
        return;
    node_stop(s, SIGTERM);
    remove_tree(s->dir);
    free(s->extra_config);
    free(s);
}

int gf_natsd_start(const gf_natsd_opts *opts, gf_natsd **out)
{
    char dir[PATH_MAX];
    gf_natsd *s = NULL;
    if (!out) {
        fprintf(stderr, "gf_natsd_start: out is NULL\n");
        return -1;
    }
    *out = NULL;
    if (make_temp_dir("gamefn-natsd", dir, sizeof dir) != 0)
        return -1;
    /* The mkdtemp suffix is unique on this machine: use it as the server name. */
    char name[64];
    snprintf(name, sizeof name, "gf-%s", strrchr(dir, '-') + 1);
    s = node_new(dir, name, opts);
    if (!s) {
        remove_tree(dir);
        return -1;
    }
    if (write_config(s) != 0 || node_spawn(s) != 0)
        goto fail;
    if (node_wait_ready(s, mono_ms() + s->timeout_ms, false) != 0)
        goto fail;
    if (write_config(s) != 0) /* pin the ports it chose, for restarts */
        goto fail;
    *out = s;
    return 0;
fail:
    gf_natsd_dump_log(s, 30);
    node_free(s);
    return -1;
}

const char *gf_natsd_url(const gf_natsd *s)
{
    return s->url;
}

int gf_natsd_port(const gf_natsd *s)
{
    return s->port;
}

int gf_natsd_monitor_port(const gf_natsd *s)
{
    return s->monitor_port;
}

pid_t gf_natsd_pid(const gf_natsd *s)
{
    return s->proc.pid > 0 ? s->proc.pid : 0;
}

const char *gf_natsd_dir(const gf_natsd *s)
{
    return s->dir;
}

const char *gf_natsd_name(const gf_natsd *s)
{
    return s->name;
}

const char *gf_natsd_log_path(const gf_natsd *s)
{
    return s->log_path;
}

void gf_natsd_dump_log(const gf_natsd *s, int max_lines)
{
    if (s)
        gf_proc_dump_file(s->log_path, max_lines);
}

int gf_natsd_stop(gf_natsd *s)
{
    return s ? node_stop(s, SIGTERM) : -1;
}

int gf_natsd_kill(gf_natsd *s)
{
    return s ? node_stop(s, SIGKILL) : -1;
}

int gf_natsd_restart(gf_natsd *s)
{
    if (!s)
        return -1;
    node_stop(s, SIGTERM);
    if (node_spawn(s) != 0)
        return -1;
    if (node_wait_ready(s, mono_ms() + s->timeout_ms, false) != 0) {
        gf_natsd_dump_log(s, 30);
        node_stop(s, SIGKILL);
        return -1;
    }
    return 0;
}

void gf_natsd_free(gf_natsd *s)
{
    node_free(s);
}

int gf_natsd_monitor_json(const gf_natsd *s, const char *path, json_t **out)
{
    char err[256];
    int status = 0;
    if (!s || !path || !out || s->monitor_port == 0)
        return -1;
    if (gf_natsd_probe_http(s->monitor_port, path, NATSD_PROBE_TIMEOUT_MS, &status, out, err,
                            sizeof err) != 0) {
        fprintf(stderr, "natsd: %s: %s\n", s->name, err);
        return -1;
    }
    return 0;
}

int gf_natsd_probe_version(const char *url, char *buf, size_t size)
{
    char host[256], err[256];
    json_t *info = NULL;
    int rc = -1;
    const char *p = url ? strstr(url, "://") : NULL;
    p = p ? p + 3 : url;
    const char *at = p ? strchr(p, '@') : NULL; /* user:pass@host:port */
    if (at)
        p = at + 1;
    const char *colon = p ? strrchr(p, ':') : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 4222;
    size_t hlen = colon ? (size_t)(colon - p) : (p ? strcspn(p, "/,") : 0);
    if (!p || hlen == 0 || hlen >= sizeof host || port < 1 || port > 65535 ||
        (end && *end && *end != '/' && *end != ',')) {
        fprintf(stderr, "natsd: cannot parse host:port from URL '%s'\n", url ? url : "(null)");
        return -1;
    }
    memcpy(host, p, hlen);
    host[hlen] = '\0';
    if (gf_natsd_probe_info(host, (int)port, NATSD_PROBE_TIMEOUT_MS, &info, err, sizeof err) != 0) {
        fprintf(stderr, "natsd: %s\n", err);
        return -1;
    }
    const char *v = json_string_value(json_object_get(info, "version"));
    if (!v) {
        fprintf(stderr, "natsd: INFO from %s has no version\n", url);
        goto out;
    }
    snprintf(buf, size, "%s", v);
    rc = 0;
out:
    json_decref(info);
    return rc;
}

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
        node_free(c->nodes[i]);
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
        gf_natsd *s = node_new(dir, name, opts);
        if (!s) {
            remove_tree(dir);
            return -1;
        }
        c->nodes[i] = s;
        s->jetstream = true; /* a cluster here is a JetStream cluster */
        snprintf(s->cluster_name, sizeof s->cluster_name, "gf-%s", suffix);
        s->cluster_size = c->n;
        s->cluster_port = ports[i];
        memcpy(s->route_ports, ports, sizeof ports);
        if (write_config(s) != 0)
            return -1;
    }
    for (int i = 0; i < c->n; i++) {
        if (node_spawn(c->nodes[i]) != 0)
            return -1;
    }
    long long deadline = mono_ms() + c->nodes[0]->timeout_ms;
    for (int i = 0; i < c->n; i++) {
        if (node_wait_ready(c->nodes[i], deadline, true) == 0)
            continue;
        for (int j = 0; j < c->n; j++) {
            if (log_mentions(c->nodes[j], "address already in use")) {
                fprintf(stderr, "natsd: %s lost its cluster port %d; retrying\n",
                        c->nodes[j]->name, c->nodes[j]->cluster_port);
                return 1;
            }
        }
        gf_natsd_dump_log(c->nodes[i], 30);
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        if (write_config(c->nodes[i]) != 0)
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
    if (make_temp_dir("gamefn-cluster", c->dir, sizeof c->dir) != 0)
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
    remove_tree(c->dir);
    free(c);
}
