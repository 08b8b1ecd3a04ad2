/*
 * run.c — the supervisor's side of one local run (see local.h).
 *
 * Design notes: one thread and one loop. SIGCHLD, SIGINT, SIGTERM and SIGHUP are
 * blocked and read from a signalfd; the loop polls it, the simulated game's stdout
 * (its progress and summary lines) and the pipe from the foreground process, with a
 * timeout at the next pending restart. The order of a run:
 *
 *   1. configs into the data directory, nats-server (ports file, /healthz)
 *   2. the join-token key pair (once), `gamefn provision`
 *   3. every function of the build, N replicas each (--replicas), policy RESTART
 *   4. the simulated game (gamefn-playsim): the run lasts until it exits
 *   5. `gamefn check` into check.json (the functions still up: the leaderboard answers
 *      for the boards), stop the functions (unless --keep), summary.json,
 *      `gamefn-report`, the printed summary; stop nats-server
 *
 * Stop order: the game (0), the functions (1), nats-server (9, by SIGINT: on SIGTERM
 * nats-server 2.9.10 exits 1 after a clean shutdown). A second Ctrl-C while
 * stopping kills what is left at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "gamefn/clock.h"
#include "local.h"
#include "progress.h"
#include "summary.h"
#include "supervise.h"

extern char **environ;

enum {
    ORDER_GAME = 0,
    ORDER_FUNCTIONS = 1,
    ORDER_NATS = 9,
    GRACE_GAME_MS = 20000,
    GRACE_FUNCTIONS_MS = 15000, /* runtime.drain_timeout (10 s) and some */
    GRACE_NATS_MS = 10000,
    MAX_REPLICAS = 16,
    ENV_MAX = 512,
};

typedef struct run {
    const gf_local_opts *o;
    int sfd, up_fd, down_fd, game_fd;
    gf_sup sup;
    gf_progress prog;
    char url[256], monitor[256];
    char run_id[64], run_dir[GF_STACK_PATH_MAX + 80], started[40];
    char replicas[512];
    char **env; /* environ + GAMEFN_NATS_URL + GAMEFN_CONFIG + one GAMEFN_INSTANCE_ID */
    size_t n_env;
    char instance_env[96]; /* env[n_env]: the instance id of the child being started */
    size_t game;           /* the game's slot in sup */
    bool have_game;
    int interrupts; /* SIGINT/SIGTERM/SIGHUP seen, or the foreground process gone */
    bool detached;
    char linebuf[8192];
    size_t linelen;
    char **summary; /* the game's "S " lines */
    size_t n_summary;
} run;

/* ---- small helpers -------------------------------------------------------------- */

static void say(run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(run *r, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    gf_progress_note(&r->prog, line);
}

/* Drains the signalfd: counts stop requests, ignores SIGCHLD (the reap loop polls). */
static void read_signals(run *r)
{
    struct signalfd_siginfo si;
    while (read(r->sfd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo != SIGCHLD)
            r->interrupts++;
}

static bool cancelled(void *arg)
{
    run *r = arg;
    read_signals(r);
    return r->interrupts > 0;
}

static bool env_add(run *r, const char *k, const char *v)
{
    if (r->n_env + 2 > ENV_MAX)
        return false;
    if (asprintf(&r->env[r->n_env], "%s=%s", k, v) < 0)
        return false;
    r->env[++r->n_env] = NULL; /* env_for's slot comes after */
    return true;
}

/* Our environment without the variables this run sets for its children. */
static bool env_init(run *r)
{
    r->env = calloc(ENV_MAX, sizeof *r->env);
    if (!r->env)
        return false;
    for (char **e = environ; *e && r->n_env + 8 < ENV_MAX; e++) {
        if (strncmp(*e, "GAMEFN_NATS_URL=", 16) == 0 || strncmp(*e, "GAMEFN_CONFIG=", 14) == 0 ||
            strncmp(*e, "GAMEFN_INSTANCE_ID=", 19) == 0)
            continue;
        if (!(r->env[r->n_env++] = strdup(*e)))
            return false;
    }
    return true;
}

static void env_free(run *r)
{
    for (size_t i = 0; r->env && i < r->n_env; i++)
        free(r->env[i]);
    free(r->env);
}

/* The environment of one child: r->env plus its GAMEFN_INSTANCE_ID. Valid until the
 * next call (children copy it: gf_sup_add, or exec at once). */
static char **env_for(run *r, const char *instance)
{
    snprintf(r->instance_env, sizeof r->instance_env, "GAMEFN_INSTANCE_ID=%s", instance);
    r->env[r->n_env] = r->instance_env;
    r->env[r->n_env + 1] = NULL;
    return r->env;
}

/* ---- replicas --------------------------------------------------------------------- */

/* Replica count of `name` in the --replicas spec (default 1). */
static int replicas_of(const char *spec, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = spec; p && *p;) {
        if (strncmp(p, name, n) == 0 && p[n] == '=')
            return atoi(p + n + 1);
        p = strchr(p, ',');
        p = p ? p + 1 : NULL;
    }
    return 1;
}

/* Every name in the spec must be a function of the build, with 0..16 replicas. */
static bool replicas_valid(run *r, char names[][32], size_t n)
{
    char copy[512];
    snprintf(copy, sizeof copy, "%s", r->o->replicas);
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *end = NULL;
        long count = eq ? strtol(eq + 1, &end, 10) : -1;
        if (eq)
            *eq = '\0';
        bool known = false;
        for (size_t i = 0; i < n; i++)
            known = known || strcmp(names[i], item) == 0;
        if (!eq || !end || *end || count < 0 || count > MAX_REPLICAS || !known) {
            char list[GF_STACK_MAX_FUNCTIONS * 34] = "";
            for (size_t i = 0; i < n; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                         names[i]);
            fprintf(stderr,
                    "gamefn-local: --replicas %s: want NAME=N (N 0..%d) with NAME one of: %s\n",
                    r->o->replicas, MAX_REPLICAS, list);
            return false;
        }
    }
    return true;
}

/* ---- starting --------------------------------------------------------------------- */

static void on_restart(void *arg, const gf_sup_restart *x, const gf_sup_proc *p)
{
    run *r = arg;
    if (x->delay_ms >= 0)
        say(r, "  ! %s %s at %.1f s; restarting it in %.1f s (restart %d)", x->instance, x->reason,
            x->t, (double)x->delay_ms / 1000.0, p->restarts);
    else
        say(r, "  ! %s %s at %.1f s, again within 2 s of starting: giving up on it; see %s",
            x->instance, x->reason, x->t, p->log_path ? p->log_path : "its log");
    char line[GF_PROGRESS_LINE_MAX];
    snprintf(line, sizeof line, "  restarts %zu (last: %s %s at %.1f s)", r->sup.n_restarts,
             x->instance, x->reason, x->t);
    gf_progress_extra(&r->prog, line);
}

static gf_err start_proc(run *r, const char *function, const char *instance, char *const argv[],
                         int out_fd, gf_sup_policy policy, int order, size_t *slot)
{
    char log[GF_STACK_PATH_MAX + 80];
    snprintf(log, sizeof log, "%s/%s.log", r->o->paths.logs, instance);
    gf_sup_spec spec = {.function = function,
                        .instance = instance,
                        .argv = argv,
                        .envp = env_for(r, instance),
                        .log_path = log,
                        .out_fd = out_fd,
                        .policy = policy,
                        .stop_order = order,
                        /* nats-server 2.9.10 shuts down cleanly on either, but exits 1 on
                         * SIGTERM: SIGINT lets its exit status say how it went */
                        .stop_signal = order == ORDER_NATS ? SIGINT : SIGTERM};
    gf_err err = gf_sup_add(&r->sup, &spec, slot);
    if (err != GF_OK)
        say(r, "gamefn-local: cannot start %s (%s): %s", instance, argv[0], strerror(errno));
    return err;
}

static gf_err start_nats(run *r)
{
    char conf[GF_STACK_PATH_MAX + 16], log[GF_STACK_PATH_MAX + 32], why[512];
    const gf_stack_paths *p = &r->o->paths;
    gf_err err = gf_stack_write_configs(p, why, sizeof why);
    if (err != GF_OK) {
        say(r, "gamefn-local: %s", why);
        return err;
    }
    snprintf(conf, sizeof conf, "%s/nats.conf", p->data);
    snprintf(log, sizeof log, "%s/nats-server.log", p->logs);
    char server[32] = "/usr/sbin/nats-server";
    if (access(server, X_OK) != 0)
        snprintf(server, sizeof server, "/usr/bin/nats-server");
    char *const argv[] = {server, "-c", conf, "-l", log, NULL};
    size_t slot = 0;
    if ((err = start_proc(r, "nats-server", "nats-server", argv, -1, GF_SUP_ONCE, ORDER_NATS,
                          &slot)) != GF_OK)
        return err;
    pid_t pid = r->sup.procs[slot].pid;
    err = gf_stack_nats_ports(p, pid, 15000, r->url, sizeof r->url, r->monitor, sizeof r->monitor);
    if (err == GF_OK)
        err = gf_stack_nats_healthy(r->monitor, 20000);
    if (err != GF_OK) {
        say(r, "gamefn-local: nats-server did not start; see %s", log);
        return err;
    }
    say(r, "== nats-server (pid %d) at %s, monitoring %s; no authentication: local use only",
        (int)pid, r->url, r->monitor);
    return env_add(r, "GAMEFN_NATS_URL", r->url) && env_add(r, "GAMEFN_CONFIG", p->config)
               ? GF_OK
               : GF_ERR_NOMEM;
}

static gf_err provision(run *r)
{
    const gf_stack_paths *p = &r->o->paths;
    char bin[GF_STACK_PATH_MAX + 32], log[GF_STACK_PATH_MAX + 32], why[512];
    if (gf_stack_keys(p, env_for(r, "keygen"), why, sizeof why) != GF_OK) {
        say(r, "gamefn-local: %s", why);
        return GF_ERR_IO;
    }
    snprintf(bin, sizeof bin, "%s/tools/gamefn", p->build);
    snprintf(log, sizeof log, "%s/provision.log", p->logs);
    char *const argv[] = {bin, "provision", NULL};
    int st = gf_stack_run_helper(argv, env_for(r, "provision"), log, NULL, 60000, cancelled, r);
    if (st == -2)
        return GF_ERR_UNAVAILABLE;
    if (st != 0) {
        say(r, "gamefn-local: gamefn provision failed; see %s", log);
        return GF_ERR_CONFIG;
    }
    say(r, "== provisioned every stream, consumer and bucket of config/gamefn.yaml");
    return GF_OK;
}

static gf_err start_functions(run *r)
{
    char names[GF_STACK_MAX_FUNCTIONS][32];
    size_t n = gf_stack_functions(&r->o->paths, names, GF_STACK_MAX_FUNCTIONS);
    if (n == 0) {
        say(r, "gamefn-local: no function binaries under %s/functions", r->o->paths.build);
        return GF_ERR_NOT_FOUND;
    }
    if (!replicas_valid(r, names, n))
        return GF_ERR_INVALID;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        int count = replicas_of(r->o->replicas, names[i]);
        used += (size_t)snprintf(r->replicas + used, sizeof r->replicas - used, "%s%s=%d",
                                 i ? "," : "", names[i], count);
        if (used >= sizeof r->replicas)
            used = sizeof r->replicas - 1;
        char bin[GF_STACK_PATH_MAX + 80], instance[64];
        snprintf(bin, sizeof bin, "%s/functions/%s/gamefn-%s", r->o->paths.build, names[i],
                 names[i]);
        for (int k = 1; k <= count; k++) {
            snprintf(instance, sizeof instance, "%s-%d", names[i], k);
            char *const argv[] = {bin, "--instance", instance, NULL};
            gf_err err =
                start_proc(r, names[i], instance, argv, -1, GF_SUP_RESTART, ORDER_FUNCTIONS, NULL);
            if (err != GF_OK)
                return err;
        }
    }
    say(r, "== functions: %s (logs in %s)", r->replicas, r->o->paths.logs);
    return GF_OK;
}

static gf_err start_game(run *r)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return GF_ERR_IO;
    char bin[GF_STACK_PATH_MAX + 64], secs[16], seed[24], population[8];
    snprintf(bin, sizeof bin, "%s/support/playsim/gamefn-playsim", r->o->paths.build);
    snprintf(secs, sizeof secs, "%d", r->o->seconds);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->o->seed);
    snprintf(population, sizeof population, "%s", r->o->population);
    char *const argv[] = {bin,      "--run-dir", r->run_dir,     "--seconds", secs,
                          "--seed", seed,        "--population", population,  NULL};
    r->sup.t0_ms = gf_clock_mono_ms();
    gf_err err =
        start_proc(r, "playsim", "playsim", argv, fds[1], GF_SUP_ONCE, ORDER_GAME, &r->game);
    close(fds[1]);
    if (err != GF_OK) {
        close(fds[0]);
        return err;
    }
    r->game_fd = fds[0];
    fcntl(r->game_fd, F_SETFL, O_NONBLOCK);
    r->have_game = true;
    say(r, "== simulated game: %d s, seed %llu, %s population; run data in %s", r->o->seconds,
        (unsigned long long)r->o->seed, r->o->population, r->run_dir);
    return GF_OK;
}

/* ---- the game's output ------------------------------------------------------------ */

static void game_line(run *r, char *line)
{
    if (line[0] == 'P' && (line[1] == ' ' || !line[1])) {
        gf_progress_line(&r->prog, line[1] ? line + 2 : "");
    } else if (line[0] == 'E' && !line[1]) {
        gf_progress_end(&r->prog);
    } else if (line[0] == 'S' && (line[1] == ' ' || !line[1])) {
        char **v = realloc(r->summary, (r->n_summary + 1) * sizeof *v);
        if (v && (v[r->n_summary] = strdup(line[1] ? line + 2 : "")))
            r->n_summary++;
        if (v)
            r->summary = v;
    } else {
        gf_progress_note(&r->prog, line[0] == 'M' && line[1] == ' ' ? line + 2 : line);
    }
}

/* Reads what the game wrote; false at EOF. */
static bool read_game(run *r)
{
    for (;;) {
        ssize_t n = read(r->game_fd, r->linebuf + r->linelen, sizeof r->linebuf - r->linelen - 1);
        if (n == 0)
            return false;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR;
        r->linelen += (size_t)n;
        r->linebuf[r->linelen] = '\0';
        char *start = r->linebuf, *nl;
        while ((nl = strchr(start, '\n'))) {
            *nl = '\0';
            game_line(r, start);
            start = nl + 1;
        }
        r->linelen = strlen(start);
        memmove(r->linebuf, start, r->linelen + 1);
        if (r->linelen == sizeof r->linebuf - 1)
            r->linelen = 0; /* a line that long is noise */
    }
}

/* ---- the loop ---------------------------------------------------------------------- */

typedef enum { UNTIL_GAME_ENDS, UNTIL_STOPPED } loop_mode;

/* Runs the loop until the game exits (or, kept, until asked to stop). Returns the
 * run's status: "completed", "interrupted" or "failed". */
static const char *loop(run *r, loop_mode mode)
{
    int64_t deadline = gf_clock_mono_ms() + ((int64_t)r->o->seconds + 180) * 1000;
    for (;;) {
        int64_t now = gf_clock_mono_ms();
        int64_t next = gf_sup_restart_due(&r->sup, now);
        int timeout = 1000;
        if (next >= 0 && next - now < timeout)
            timeout = next - now < 0 ? 0 : (int)(next - now);
        struct pollfd pfd[3] = {{.fd = r->sfd, .events = POLLIN},
                                {.fd = r->detached ? -1 : r->down_fd, .events = POLLIN},
                                {.fd = r->have_game ? r->game_fd : -1, .events = POLLIN}};
        if (poll(pfd, 3, timeout) < 0 && errno != EINTR)
            return "failed";
        if (pfd[1].revents) {
            char c;
            if (read(r->down_fd, &c, 1) <= 0)
                r->interrupts++; /* the foreground process is gone */
        }
        if (pfd[2].revents && !read_game(r)) {
            close(r->game_fd);
            r->game_fd = -1; /* EOF: the game is exiting; its exit status follows */
        }
        read_signals(r);
        if (r->interrupts)
            return "interrupted";
        gf_sup_exit exits[8];
        size_t n = gf_sup_reap(&r->sup, gf_clock_mono_ms(), exits, 8, on_restart, r);
        for (size_t i = 0; i < n; i++) {
            const gf_sup_proc *p = &r->sup.procs[exits[i].index];
            char how[128];
            gf_child_describe(exits[i].status, how, sizeof how);
            if (exits[i].index == r->game && mode == UNTIL_GAME_ENDS) {
                for (int k = 0; r->game_fd >= 0 && k < 1000 && read_game(r); k++) {
                    /* what the game wrote before exiting: its summary lines */
                }
                if (exits[i].status == 0)
                    return "completed";
                say(r, "gamefn-local: the simulated game %s; see %s", how, p->log_path);
                return "failed";
            }
            if (exits[i].index != r->game) {
                say(r, "gamefn-local: %s %s; see %s", p->instance, how, p->log_path);
                return "failed";
            }
        }
        if (r->sup.gave_up)
            return "failed";
        if (mode == UNTIL_GAME_ENDS && gf_clock_mono_ms() > deadline) {
            say(r, "gamefn-local: the simulated game did not finish in time");
            return "failed";
        }
    }
}

/* Stops what has stop order <= order; a second Ctrl-C meanwhile kills at once. */
static void stop_upto(run *r, int order, int64_t grace_ms)
{
    read_signals(r);
    gf_sup_stop(&r->sup, order, r->interrupts > 1 ? 0 : grace_ms);
}

/* ---- the end ------------------------------------------------------------------------ */

static bool have_command(run *r, char *bin, char *sub)
{
    char *const argv[] = {bin, sub, "--help", NULL};
    return access(bin, X_OK) == 0 && gf_stack_run_helper(argv, env_for(r, "gamefn"), "/dev/null",
                                                         NULL, 10000, NULL, NULL) == 0;
}

/* `gamefn check --json` into check.json; the reason when it could not run. */
static const char *check(run *r, int64_t since_ms)
{
    char bin[GF_STACK_PATH_MAX + 32], out[GF_STACK_PATH_MAX + 96], log[GF_STACK_PATH_MAX + 32],
        since[32], events[GF_STACK_PATH_MAX + 96];
    snprintf(bin, sizeof bin, "%s/tools/gamefn", r->o->paths.build);
    char sub[] = "check";
    if (!have_command(r, bin, sub))
        return "this build has no `gamefn check`";
    snprintf(out, sizeof out, "%s/check.json", r->run_dir);
    snprintf(log, sizeof log, "%s/check.log", r->o->paths.logs);
    snprintf(since, sizeof since, "%lld", (long long)since_ms);
    snprintf(events, sizeof events, "%s/events.log", r->run_dir);
    /* The game servers' producers' log: acknowledged events must all be in EVENTS. */
    char *argv[] = {bin, "check", "--json", "--since", since, "--events-log", events, NULL};
    if (access(events, R_OK) != 0)
        argv[5] = NULL; /* the game wrote none: the event counts say "not checked" */
    int st = gf_stack_run_helper(argv, env_for(r, "check"), log, out, 120000, cancelled, r);
    /* exit 1 = counts above 0, still a complete check.json */
    return st == 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 1) ? NULL : "gamefn check failed";
}

/* gamefn-report on the run directory; its path, or why there is none. */
static bool report(run *r, char *line, size_t size)
{
    char bin[GF_STACK_PATH_MAX + 48], log[GF_STACK_PATH_MAX + 32];
    snprintf(bin, sizeof bin, "%s/tools/report/gamefn-report", r->o->paths.build);
    if (access(bin, X_OK) != 0) {
        snprintf(line, size, "not made: this build has no gamefn-report; run data in %s",
                 r->run_dir);
        return false;
    }
    snprintf(log, sizeof log, "%s/report.log", r->o->paths.logs);
    char *const argv[] = {bin, r->run_dir, NULL};
    int st = gf_stack_run_helper(argv, env_for(r, "report"), log, NULL, 120000, NULL, NULL);
    if (st == 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 3)) {
        snprintf(line, size, "%s/report.html%s", r->run_dir,
                 st == 0 ? "" : " (some input was unusable: see the report's Input problems)");
        return true;
    }
    snprintf(line, size, "not made (gamefn-report failed; see %s); run data in %s", log,
             r->run_dir);
    return false;
}

static void print_summary(run *r, const char *status, double elapsed, const char *check_why,
                          const char *report_line, long long *broken)
{
    FILE *out = stdout;
    gf_progress_finish(&r->prog);
    fprintf(out, "\n== summary: run %s, %s after %.0f s (seed %llu, %s population)\n", r->run_id,
            status, elapsed, (unsigned long long)r->o->seed, r->o->population);
    for (size_t i = 0; i < r->n_summary; i++)
        fprintf(out, "  %s\n", r->summary[i]);
    *broken = gf_summary_print_check(out, r->run_dir, check_why ? check_why : "no check.json");
    gf_summary_print_restarts(out, &r->sup);
    fprintf(out, "  report: %s\n", report_line);
    fflush(out);
}

/* --keep: simulated game servers for tickets made by hand (the run's game has ended):
 * gamefn-gamesim with two servers per datacenter the game used (sim.json), up to eight
 * as the warm pool asks. False if there is no such program or no datacenter list. */
static bool start_kept_servers(run *r)
{
    char path[GF_STACK_PATH_MAX + 96], bin[GF_STACK_PATH_MAX + 64], spec[1024] = "";
    snprintf(path, sizeof path, "%s/sim.json", r->run_dir);
    snprintf(bin, sizeof bin, "%s/support/gamesim/gamefn-gamesim", r->o->paths.build);
    json_t *sim = json_load_file(path, 0, NULL), *dc;
    size_t i, used = 0;
    json_array_foreach(json_object_get(sim, "datacenters"), i, dc)
    {
        if (json_is_string(dc) && used < sizeof spec)
            used += (size_t)snprintf(spec + used, sizeof spec - used, "%s%s=2:8", i ? "," : "",
                                     json_string_value(dc));
    }
    json_decref(sim);
    if (!spec[0] || used >= sizeof spec || access(bin, X_OK) != 0)
        return false;
    char *const argv[] = {bin, "--servers", spec, "--prefix", "kept", "--port-base", "9000", NULL};
    return start_proc(r, "gamesim", "gamesim", argv, -1, GF_SUP_RESTART, ORDER_GAME, NULL) == GF_OK;
}

/* --keep: tell the foreground process to go, and keep supervising until asked to stop. */
static int keep_running(run *r)
{
    bool servers = start_kept_servers(r);
    printf("\n== the stack keeps running (--keep): NATS at %s\n"
           "   export GAMEFN_NATS_URL=%s GAMEFN_CONFIG=%s\n"
           "   then e.g. %s/tools/gamefn services\n"
           "   %s\n"
           "   stop it with: deploy/local/run.sh --stop --data %s\n",
           r->url, r->url, r->o->paths.config, r->o->paths.build,
           servers ? "simulated game servers (gamefn-gamesim, 2 per datacenter) take the tickets "
                     "you create"
                   : "no simulated game servers: tickets you create are matched, not assigned",
           r->o->paths.data);
    fflush(stdout);
    char log[GF_STACK_PATH_MAX + 40];
    snprintf(log, sizeof log, "%s/gamefn-local.log", r->o->paths.logs);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    r->prog.tty = false;
    if (write(r->up_fd, "detached\n", 9) != 9) {
        /* the foreground process is gone already: keep running all the same */
    }
    close(r->up_fd);
    r->up_fd = -1;
    r->detached = true;
    say(r, "gamefn-local: detached (pid %d)", (int)getpid());
    loop(r, UNTIL_STOPPED);
    say(r, "gamefn-local: stopping the kept stack");
    stop_upto(r, ORDER_NATS, GRACE_FUNCTIONS_MS);
    return GF_LOCAL_EXIT_OK;
}

static void run_id(run *r)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(r->run_id, sizeof r->run_id, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(r->run_id + strlen(r->run_id), sizeof r->run_id - strlen(r->run_id), "-%d",
             (int)getpid());
    gf_clock_rfc3339(gf_clock_unix_ns(), 0, r->started, sizeof r->started);
    snprintf(r->run_dir, sizeof r->run_dir, "%s/%s", r->o->runs, r->run_id);
}

static int finish(run *r, const char *status, int64_t since_ms, int64_t t0)
{
    bool completed = strcmp(status, "completed") == 0;
    /* The game has ended (every ticket of it ended, its events acknowledged); the
     * checker runs while the functions still do, so that it can compare the stream's
     * score events with what the leaderboard answers (it waits for the event
     * consumers to settle). Then the functions stop, unless kept. */
    if (r->have_game)
        stop_upto(r, ORDER_GAME, GRACE_GAME_MS);
    if (!completed)
        stop_upto(r, ORDER_FUNCTIONS, GRACE_FUNCTIONS_MS);
    double elapsed = (double)(gf_clock_mono_ms() - t0) / 1000.0;
    const char *check_why = "the run did not complete";
    if (completed)
        check_why = check(r, since_ms);
    if (completed && !r->o->keep)
        stop_upto(r, ORDER_FUNCTIONS, GRACE_FUNCTIONS_MS);
    gf_summary_run sr = {.id = r->run_id,
                         .started = r->started,
                         .seconds = r->o->seconds,
                         .elapsed_s = elapsed,
                         .seed = (unsigned long long)r->o->seed,
                         .population = r->o->population,
                         .status = status,
                         .replicas = r->replicas};
    if (gf_summary_write(r->run_dir, &sr, &r->sup) != GF_OK)
        say(r, "gamefn-local: cannot write %s/summary.json", r->run_dir);
    char report_line[GF_STACK_PATH_MAX * 3];
    if (completed)
        report(r, report_line, sizeof report_line);
    else
        snprintf(report_line, sizeof report_line, "not made (run %s); run data in %s", status,
                 r->run_dir);
    long long broken = 0;
    print_summary(r, status, elapsed, check_why, report_line, &broken);
    char latest[GF_STACK_PATH_MAX + 32];
    snprintf(latest, sizeof latest, "%s/latest", r->o->runs);
    unlink(latest);
    if (symlink(r->run_id, latest) != 0) {
        /* only a convenience */
    }
    if (completed && r->o->keep && broken <= 0)
        return keep_running(r);
    stop_upto(r, ORDER_NATS, GRACE_NATS_MS);
    if (!completed)
        return strcmp(status, "interrupted") == 0 ? GF_LOCAL_EXIT_INTERRUPTED
                                                  : GF_LOCAL_EXIT_FAILED;
    return broken > 0 ? GF_LOCAL_EXIT_FAILED : GF_LOCAL_EXIT_OK;
}

int gf_local_run(const gf_local_opts *o, int up_fd, int down_fd)
{
    run r = {.o = o, .up_fd = up_fd, .down_fd = down_fd, .game_fd = -1, .sfd = -1};
    gf_progress_init(&r.prog, stdout, isatty(1));
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    r.sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    char pids[GF_STACK_PATH_MAX + 16], journal[GF_STACK_PATH_MAX + 40];
    snprintf(pids, sizeof pids, "%s/run.pids", o->paths.data);
    snprintf(journal, sizeof journal, "%s/supervisor.log", o->paths.logs);
    run_id(&r);
    int code = GF_LOCAL_EXIT_FAILED;
    if (r.sfd < 0 || !env_init(&r) || gf_sup_init(&r.sup, pids, journal) != GF_OK ||
        (mkdir(o->runs, 0700) != 0 && errno != EEXIST) || mkdir(r.run_dir, 0700) != 0) {
        fprintf(stderr, "gamefn-local: cannot set up the run (%s)\n", strerror(errno));
        goto out;
    }
    int64_t t0 = gf_clock_mono_ms(), since = gf_clock_unix_ms();
    const char *status = "failed";
    if (start_nats(&r) == GF_OK && provision(&r) == GF_OK && start_functions(&r) == GF_OK &&
        start_game(&r) == GF_OK)
        status = loop(&r, UNTIL_GAME_ENDS);
    else if (r.interrupts)
        status = "interrupted";
    if (strcmp(status, "interrupted") == 0)
        say(&r, "== interrupted: stopping everything this run started");
    code = finish(&r, status, since, t0);
out:
    if (gf_sup_running(&r.sup) > 0)
        gf_sup_stop(&r.sup, ORDER_NATS, 0);
    for (size_t i = 0; i < r.n_summary; i++)
        free(r.summary[i]);
    free(r.summary);
    gf_sup_fini(&r.sup);
    env_free(&r);
    if (r.game_fd >= 0)
        close(r.game_fd);
    if (r.sfd >= 0)
        close(r.sfd);
    return code;
}
