/*
 * function.c — gf_function_main: the whole life of a function instance.
 *
 * Design notes:
 * - SIGTERM and SIGINT are blocked before any thread exists (nats.c starts its
 *   threads on connect); one signal thread takes them with sigwait(), sets the
 *   stop flag (which the connect and provisioning loops poll) and wakes the main
 *   thread. No async signal handler runs, so shutdown is ordinary code.
 * - Shutdown order: stop taking new work on every endpoint (drain request and
 *   tick subscriptions, let pull handlers finish and ack, give partitions back), then fini,
 *   then $SRV, then drain the connection (flushes the last acks). Everything is
 *   bounded by runtime.drain_timeout; a handler still running at the deadline is
 *   abandoned (what that means for its work depends on the kind: a pull message is
 *   redelivered, a request is not) and the exit code is 1.
 * - The signal thread starts before the configuration is read: a SIGTERM while a
 *   large (or slow to read) file loads ends the process at once with 0, since
 *   nothing has started that would need draining. A SIGTERM while connecting or
 *   while provisioning retries is a clean stop too (0).
 * - Endpoints are driven only through their kind's operations (endpoints/endpoint.h):
 *   this file never looks at a kind.
 *
 * Folder runtime/src/function/: the lifecycle of a function instance (flags, config,
 * connect, provision, discovery, endpoints, signals, drain) and the gf_fn accessors.
 * It is the top layer and may use every other folder.
 */
#define _GNU_SOURCE /* getopt_long */
#include "gamefn/function.h"

#include <getopt.h>
#include <semaphore.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "endpoints/endpoint.h"
#include "gamefn/backoff.h"
#include "gamefn/clock.h"
#include "gamefn/conn.h"
#include "gamefn/limits.h"
#include "gamefn/log.h"
#include "gamefn/names.h"
#include "gamefn/provision.h"
#include "gamefn/srv.h"

enum { EXIT_CLEAN = 0, EXIT_FAILURE_RUN = 1, EXIT_USAGE = 2 };

/* One running instance. Written by the main thread before endpoints start and only
 * read afterwards; the endpoints see it through `host`. */
struct gf_fn {
    const gf_function *def;
    gf_config *cfg;
    char instance_id[GF_WIRE_ID_MAX + 1];
    char conn_name[160];
    gf_conn *conn;
    gf_srv *srv;
    void *state;
    gf__endpoint_host host;
    gf__endpoint_run *runs; /* def->endpoints_len entries */
    /* $SRV's check hook reads the endpoints between their start and their stop only:
     * `live` (guarded by check_mu) is set once all started and cleared before any stops;
     * `stopping` says which side of that window a not-live instance is on. */
    pthread_mutex_t check_mu;
    bool live, stopping;
};

/* The process's one stop flag (the only global besides the log sink): set once by
 * the signal thread (or the main thread on a failed start), read by every loop that
 * must end on shutdown. */
static atomic_int stop_requested;

struct options {
    const char *config_path;
    const char *instance;
    bool check_config;
};

static void usage(const gf_function *def, FILE *f)
{
    fprintf(f,
            "usage: %s [--config FILE] [--instance ID] [--check-config] [--version]\n"
            "\n%s\n\n"
            "  --config FILE    configuration (default: $GAMEFN_CONFIG, else config/gamefn.yaml)\n"
            "  --instance ID    instance id (default: runtime.instance_id, else random)\n"
            "  --check-config   load and validate the configuration, then exit\n"
            "  --version        print the version and exit\n",
            def->name, def->description ? def->description : "");
}

/* Returns -1 to continue, or an exit code. */
static int parse_flags(const gf_function *def, int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'}, {"instance", required_argument, NULL, 'i'},
        {"check-config", no_argument, NULL, 'k'}, {"version", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    o->config_path = getenv("GAMEFN_CONFIG");
    if (!o->config_path || !o->config_path[0])
        o->config_path = "config/gamefn.yaml";
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "c:i:hv", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            o->config_path = optarg;
            break;
        case 'i':
            o->instance = optarg;
            break;
        case 'k':
            o->check_config = true;
            break;
        case 'v':
            printf("%s %s\n", def->name, def->version);
            return EXIT_CLEAN;
        case 'h':
            usage(def, stdout);
            return EXIT_CLEAN;
        default:
            usage(def, stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", def->name, argv[optind]);
        usage(def, stderr);
        return EXIT_USAGE;
    }
    return -1;
}

/* 22 base62 characters from libsodium's CSPRNG, like a NATS NUID. */
static void random_instance_id(char *buf, size_t size)
{
    static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    size_t n = size - 1 < 22 ? size - 1 : 22;
    for (size_t i = 0; i < n; i++)
        buf[i] = alphabet[randombytes_uniform(sizeof alphabet - 1)];
    buf[n] = '\0';
}

/* The function's own streams and buckets, then what each endpoint needs. On failure
 * res->message names the asset and what is wrong. */
static gf_err provision_named(gf_fn *fn, gf_provision_result *res)
{
    const gf_function *def = fn->def;
    jsCtx *js = gf_conn_js(fn->conn);
    gf_err err = GF_OK;

    memset(res, 0, sizeof *res);
    /* Buckets before streams: a stream may source or mirror a bucket's KV_<name>. */
    for (size_t i = 0; def->buckets && def->buckets[i] && err == GF_OK; i++)
        err = gf_provision_bucket_named(js, fn->cfg, def->buckets[i], res);
    for (size_t i = 0; def->streams && def->streams[i] && err == GF_OK; i++)
        err = gf_provision_stream_named(js, fn->cfg, def->streams[i], res);
    for (size_t i = 0; i < def->endpoints_len && err == GF_OK; i++) {
        gf__endpoint_run *run = &fn->runs[i];
        const gf__endpoint_ops *ops = gf__endpoint_ops_of(run->ep->kind);
        if (ops->provision)
            err = ops->provision(run, res);
    }
    return err;
}

/* Provisioning retries while NATS or JetStream is not answering yet (a server that
 * just started, a cluster electing a leader); conflicts and config errors are final.
 * Each failure is logged once, here: a warning while retrying, an error at the end. */
static gf_err provision_with_retry(gf_fn *fn)
{
    gf_provision_result res;
    char quoted[600];
    for (int attempt = 1;; attempt++) {
        gf_err err = provision_named(fn, &res);
        if (err == GF_OK)
            return GF_OK;
        gf_log_quote(quoted, sizeof quoted, res.message);
        bool retryable = err == GF_ERR_TIMEOUT || err == GF_ERR_UNAVAILABLE;
        if (retryable && atomic_load(&stop_requested))
            return err; /* stopped while JetStream was not answering: a clean stop */
        if (!retryable) {
            gf_log_error("provision failed", "err=%s detail=%s", gf_err_str(err), quoted);
            return err;
        }
        int64_t delay = gf_backoff_ms(attempt, 400, 5000, 0);
        gf_log_warn("JetStream not ready, retrying provisioning",
                    "attempt=%d delay_ms=%lld err=%s detail=%s", attempt, (long long)delay,
                    gf_err_str(err), quoted);
        gf_clock_sleep_until(gf_clock_mono_ms() + delay, &stop_requested);
    }
}

static gf_err start_endpoints(gf_fn *fn)
{
    for (size_t i = 0; i < fn->def->endpoints_len; i++) {
        gf__endpoint_run *run = &fn->runs[i];
        gf_err err = gf__endpoint_ops_of(run->ep->kind)->start(run);
        if (err != GF_OK) {
            gf_log_error("endpoint failed to start", "endpoint=%s err=%s", run->ep->name,
                         gf_err_str(err));
            return err;
        }
    }
    return GF_OK;
}

/* $SRV's check hook (a nats.c thread): every endpoint brings its counters up to date
 * and says whether it is healthy; the first reason is reported. An instance whose
 * endpoints are not all taking work yet (or any more) is not healthy either, so a
 * PING answer means "ready": discovery starts before the endpoints do. */
static bool check_endpoints(void *closure, char *why, size_t why_size)
{
    gf_fn *fn = closure;
    bool healthy = true;
    char later[64]; /* reasons after the first are dropped */
    pthread_mutex_lock(&fn->check_mu);
    if (!fn->live) {
        snprintf(why, why_size, "%s", fn->stopping ? "stopping" : "starting");
        healthy = false;
    }
    for (size_t i = 0; fn->live && i < fn->def->endpoints_len; i++) {
        gf__endpoint_run *run = &fn->runs[i];
        const gf__endpoint_ops *ops = gf__endpoint_ops_of(run->ep->kind);
        if (ops->check &&
            !ops->check(run, healthy ? why : later, healthy ? why_size : sizeof later))
            healthy = false;
    }
    pthread_mutex_unlock(&fn->check_mu);
    return healthy;
}

static void set_live(gf_fn *fn, bool live)
{
    pthread_mutex_lock(&fn->check_mu);
    fn->stopping = fn->stopping || fn->live;
    fn->live = live;
    pthread_mutex_unlock(&fn->check_mu);
}

/* On failure `why` says what went wrong. */
static gf_err start_discovery(gf_fn *fn, char *why, size_t why_size)
{
    size_t n = fn->def->endpoints_len;
    gf_srv_endpoint *eps = calloc(n ? n : 1, sizeof *eps);
    if (!eps) {
        snprintf(why, why_size, "out of memory");
        return GF_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const gf__endpoint_run *run = &fn->runs[i];
        gf__endpoint_ops_of(run->ep->kind)->describe(run, &eps[i]);
        eps[i].name = run->ep->name;
    }
    gf_srv_info info = {
        .name = fn->def->name,
        .version = fn->def->version,
        .id = fn->instance_id,
        .description = fn->def->description,
        .endpoints = eps,
        .endpoints_len = n,
        .reply_prefixes = fn->cfg->runtime.reply_prefixes,
        .reply_prefixes_len = fn->cfg->runtime.reply_prefixes_len,
        .check = check_endpoints,
        .check_closure = fn,
    };
    gf_err err = gf_srv_start(gf_conn_nats(fn->conn), &info, &fn->srv, why, why_size);
    free(eps);
    return err;
}

/* The signal thread: takes SIGTERM/SIGINT (blocked in every other thread), sets the
 * stop flag that startup loops poll, and wakes the main thread. While the
 * configuration loads (`loading`), nothing needs draining and the load cannot be
 * interrupted (it may be blocked reading the file): the process exits 0 at once.
 * Detached; it stays blocked in sigwait() until the process exits. */
struct signal_watch {
    sigset_t set;
    sem_t wake;
    atomic_int loading;
};

static void *signal_thread(void *arg)
{
    struct signal_watch *w = arg;
    int sig = 0;
    while (sigwait(&w->set, &sig) == 0) {
        if (sig != SIGTERM && sig != SIGINT)
            continue;
        const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
        if (atomic_load(&w->loading)) {
            gf_log_info("stopping before start", "signal=%s phase=config", name);
            _exit(EXIT_CLEAN);
        }
        gf_log_info("stopping", "signal=%s", name);
        atomic_store(&stop_requested, 1);
        sem_post(&w->wake);
        return NULL;
    }
    return NULL;
}

/* Returns true if everything stopped before the deadline. */
static bool stop_endpoints(gf_fn *fn, int64_t deadline_ms)
{
    bool clean = true;
    for (size_t i = 0; i < fn->def->endpoints_len; i++) {
        gf__endpoint_run *run = &fn->runs[i];
        const gf__endpoint_ops *ops = gf__endpoint_ops_of(run->ep->kind);
        if (!ops->stop(run, deadline_ms)) {
            char quoted[200];
            gf_log_error("endpoint did not stop in time", "endpoint=%s kind=%s consequence=%s",
                         run->ep->name, ops->name,
                         gf_log_quote(quoted, sizeof quoted,
                                      ops->abandoned ? ops->abandoned : "its work is abandoned"));
            clean = false;
        }
    }
    return clean;
}

static int run(gf_fn *fn, sem_t *wake)
{
    int code = EXIT_FAILURE_RUN;
    const gf_runtime_config *rc = &fn->cfg->runtime;

    gf_err err = gf_conn_open(&fn->cfg->nats, fn->conn_name, &stop_requested, 0, &fn->conn);
    if (err == GF_ERR_CONFIG)
        return EXIT_USAGE;
    if (err != GF_OK) /* stopped by a signal while NATS was away: a clean stop */
        return atomic_load(&stop_requested) ? EXIT_CLEAN : EXIT_FAILURE_RUN;
    fn->host.nc = gf_conn_nats(fn->conn);
    fn->host.js = gf_conn_js(fn->conn);

    err = provision_with_retry(fn);
    if (err != GF_OK && atomic_load(&stop_requested) &&
        (err == GF_ERR_TIMEOUT || err == GF_ERR_UNAVAILABLE))
        return EXIT_CLEAN; /* stopped while JetStream was not answering: nothing started */
    if (err != GF_OK)
        return err == GF_ERR_CONFIG ? EXIT_USAGE : EXIT_FAILURE_RUN;
    if (fn->def->init && (err = fn->def->init(fn)) != GF_OK) {
        gf_log_error("init failed", "err=%s", gf_err_str(err));
        /* A setting the function cannot use (a key file it cannot read) is a mistake in
         * the configuration: exit 2, which a service manager does not restart. */
        return err == GF_ERR_CONFIG ? EXIT_USAGE : EXIT_FAILURE_RUN;
    }
    /* Discovery first: the host's srv is then fixed before any handler thread reads it. */
    char why[512] = "";
    if ((err = start_discovery(fn, why, sizeof why)) != GF_OK) {
        char quoted[600];
        gf_log_error("discovery failed to start", "err=%s detail=%s", gf_err_str(err),
                     gf_log_quote(quoted, sizeof quoted, why));
    } else {
        fn->host.srv = fn->srv;
        err = start_endpoints(fn);
    }
    if (err == GF_OK) {
        set_live(fn, true);
        gf_log_info("started", "version=%s instance=%s endpoints=%zu", fn->def->version,
                    fn->instance_id, fn->def->endpoints_len);
        while (sem_wait(wake) != 0)
            ;
        code = EXIT_CLEAN;
    }

    atomic_store(&stop_requested, 1);
    set_live(fn, false);
    int64_t deadline = gf_clock_mono_ms() + rc->drain_timeout_ms;
    bool abandoned = !stop_endpoints(fn, deadline);
    if (abandoned)
        code = EXIT_FAILURE_RUN;
    if (fn->def->fini)
        fn->def->fini(fn);
    fn->host.srv = NULL;
    gf_srv_stop(fn->srv);
    fn->srv = NULL;
    int64_t left = deadline - gf_clock_mono_ms();
    gf_conn_close(fn->conn, left > 100 ? left : 100);
    fn->conn = NULL;
    if (abandoned) {
        /* A handler thread is still running and uses fn: do not free under it. */
        fflush(stderr);
        _exit(EXIT_FAILURE_RUN);
    }
    if (code == EXIT_CLEAN)
        gf_log_info("stopped cleanly", "");
    return code;
}

int gf_function_main(const gf_function *def, int argc, char **argv)
{
    struct options opts = {0};
    gf_config_error cerr;
    gf_fn *fn = NULL;
    int code = EXIT_FAILURE_RUN;

    gf_log_init(def->name, GF_LOG_INFO);
    int flag_code = parse_flags(def, argc, argv, &opts);
    if (flag_code >= 0)
        return flag_code;

    /* Block the stop signals before any thread exists, so only the signal thread's
     * sigwait() sees them. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    /* Static: the detached signal thread may outlive this frame until exit. */
    static struct signal_watch watch;
    pthread_t tid;
    watch.set = signals;
    atomic_store(&watch.loading, 1);
    if (sem_init(&watch.wake, 0, 0) != 0 || pthread_create(&tid, NULL, signal_thread, &watch) != 0)
        return EXIT_FAILURE_RUN;
    pthread_detach(tid);

    if (sodium_init() < 0)
        return EXIT_FAILURE_RUN;
    fn = calloc(1, sizeof *fn);
    if (!fn)
        return EXIT_FAILURE_RUN;
    fn->def = def;
    pthread_mutex_init(&fn->check_mu, NULL);
    gf_config_section section = {.name = def->name, .table = def->config};
    if (gf_config_load(opts.config_path, def->config ? &section : NULL, &fn->cfg, &cerr) != GF_OK) {
        fprintf(stderr, "%s: %s\n", def->name, cerr.message);
        code = EXIT_USAGE;
        goto out;
    }
    char check_why[512];
    if (def->check &&
        def->check(fn->cfg, gf_config_function(fn->cfg), check_why, sizeof check_why) != GF_OK) {
        fprintf(stderr, "%s: %s: %s\n", def->name, opts.config_path, check_why);
        code = EXIT_USAGE;
        goto out;
    }
    if (opts.check_config) {
        printf("%s: %s: ok\n", def->name, opts.config_path);
        code = EXIT_CLEAN;
        goto out;
    }
    gf_log_set_level((gf_log_level)fn->cfg->log.level);

    char why[GF_NAME_WHY_MAX];
    if (opts.instance && !gf_name_id_ok(opts.instance, GF_WIRE_ID_MAX, why, sizeof why)) {
        fprintf(stderr, "%s: --instance %s (1..%d characters of [A-Za-z0-9_-])\n", def->name, why,
                GF_WIRE_ID_MAX);
        code = EXIT_USAGE;
        goto out;
    }
    if (opts.instance)
        snprintf(fn->instance_id, sizeof fn->instance_id, "%s", opts.instance);
    else if (fn->cfg->runtime.instance_id)
        snprintf(fn->instance_id, sizeof fn->instance_id, "%s", fn->cfg->runtime.instance_id);
    else
        random_instance_id(fn->instance_id, sizeof fn->instance_id);
    snprintf(fn->conn_name, sizeof fn->conn_name, "%s-%s", def->name, fn->instance_id);

    fn->runs = calloc(def->endpoints_len ? def->endpoints_len : 1, sizeof *fn->runs);
    if (!fn->runs)
        goto out;
    fn->host = (gf__endpoint_host){
        .fn = fn,
        .function_name = def->name,
        .instance_id = fn->instance_id,
        .cfg = fn->cfg,
        .stop = &stop_requested,
    };
    for (size_t i = 0; i < def->endpoints_len; i++) {
        const gf_endpoint *ep = &def->endpoints[i];
        if (!gf__endpoint_ops_of(ep->kind)) {
            fprintf(stderr, "%s: endpoint %zu (%s) has no known kind (%d)\n", def->name, i,
                    ep->name ? ep->name : "unnamed", (int)ep->kind);
            code = EXIT_USAGE;
            goto out;
        }
        fn->runs[i].host = &fn->host;
        fn->runs[i].ep = ep;
        fn->runs[i].index = i;
    }
    atomic_store(&watch.loading, 0);
    code = run(fn, &watch.wake);
out:
    if (fn) {
        gf_conn_close(fn->conn, 0);
        gf_config_free(fn->cfg);
        pthread_mutex_destroy(&fn->check_mu);
        free(fn->runs);
        free(fn);
    }
    nats_CloseAndWait(2000);
    return code;
}

/* ---- accessors ----------------------------------------------------------- */

const gf_config *gf_fn_config(const gf_fn *fn)
{
    return fn->cfg;
}

const void *gf_fn_section(const gf_fn *fn)
{
    return fn->cfg->function;
}

const char *gf_fn_instance_id(const gf_fn *fn)
{
    return fn->instance_id;
}

natsConnection *gf_fn_nats(gf_fn *fn)
{
    return gf_conn_nats(fn->conn);
}

jsCtx *gf_fn_js(gf_fn *fn)
{
    return gf_conn_js(fn->conn);
}

void gf_fn_set_state(gf_fn *fn, void *state)
{
    fn->state = state;
}

void *gf_fn_state(const gf_fn *fn)
{
    return fn->state;
}

bool gf_fn_stopping(const gf_fn *fn)
{
    return atomic_load(&stop_requested) != 0;
}
