/*
 * supervise.c — the process table (see supervise.h).
 *
 * Design notes: every state change happens on the supervisor's one thread, from the
 * caller's loop: a SIGCHLD becomes gf_sup_reap, a timer gf_sup_restart_due. A process
 * that died is not restarted from the reap itself, so a burst of deaths (nats-server
 * restarting under the functions) costs one pass and the backoff spreads the restarts.
 */
#define _GNU_SOURCE
#include "supervise.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "gamefn/backoff.h"
#include "gamefn/clock.h"
#include "gamefn/util.h"

enum {
    QUICK_MS = 2000,   /* a run shorter than this is a failure to start */
    STABLE_MS = 10000, /* a run longer than this resets the backoff */
    GIVE_UP_AFTER = 5, /* quick deaths in a row */
    BACKOFF_BASE_MS = 500,
    BACKOFF_CAP_MS = 30000,
    POLL_MS = 20,
};

static char **strv_copy(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    char **out = calloc(n + 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
        out[i] = strdup(v[i]);
        if (!out[i]) {
            for (size_t j = 0; j < i; j++)
                free(out[j]);
            free(out);
            return NULL;
        }
    }
    return out;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

gf_err gf_sup_init(gf_sup *s, const char *pids_path, const char *journal_path)
{
    memset(s, 0, sizeof *s);
    s->t0_ms = gf_clock_mono_ms();
    if (pids_path && !(s->pids_path = strdup(pids_path)))
        return GF_ERR_NOMEM;
    if (journal_path && !(s->journal = fopen(journal_path, "ae")))
        return GF_ERR_IO;
    return GF_OK;
}

static void note(const gf_sup *s, const char *what, const gf_sup_proc *p, pid_t pid)
{
    if (!s->journal)
        return;
    char how[96] = "";
    if (strcmp(what, "exit") == 0)
        gf_child_describe(p->status, how, sizeof how);
    fprintf(s->journal, "%lld %s %d %s%s%s\n", (long long)gf_clock_unix_ms(), what, (int)pid,
            p->instance, how[0] ? " " : "", how);
    fflush(s->journal);
}

void gf_sup_fini(gf_sup *s)
{
    for (size_t i = 0; i < s->n_procs; i++) {
        strv_free(s->procs[i].argv);
        strv_free(s->procs[i].envp);
        free(s->procs[i].log_path);
    }
    free(s->procs);
    free(s->restarts);
    free(s->pids_path);
    if (s->journal)
        fclose(s->journal);
    memset(s, 0, sizeof *s);
}

/* The pids file, replaced whole (write, rename) so a reader never sees half of it. */
static void write_pids(const gf_sup *s)
{
    if (!s->pids_path)
        return;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp", s->pids_path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    for (size_t i = 0; i < s->n_procs; i++)
        if (s->procs[i].pid > 0)
            fprintf(f, "%d %s\n", (int)s->procs[i].pid, s->procs[i].instance);
    if (fclose(f) == 0)
        rename(tmp, s->pids_path);
}

static gf_err start(gf_sup *s, gf_sup_proc *p, int64_t now)
{
    pid_t pid = gf_child_start(p->argv, p->envp, p->log_path, p->out_fd);
    if (pid < 0)
        return GF_ERR_IO;
    p->pid = pid;
    p->started_ms = now;
    p->restart_at_ms = 0;
    write_pids(s);
    note(s, "start", p, pid);
    return GF_OK;
}

gf_err gf_sup_add(gf_sup *s, const gf_sup_spec *spec, size_t *index)
{
    gf_sup_proc *v = gf_grow(s->procs, &s->cap_procs, s->n_procs + 1, sizeof *v);
    if (!v)
        return GF_ERR_NOMEM;
    s->procs = v;
    gf_sup_proc *p = &s->procs[s->n_procs];
    memset(p, 0, sizeof *p);
    snprintf(p->function, sizeof p->function, "%s", spec->function);
    snprintf(p->instance, sizeof p->instance, "%s", spec->instance);
    p->argv = strv_copy(spec->argv);
    p->envp = strv_copy(spec->envp);
    p->log_path = spec->log_path ? strdup(spec->log_path) : NULL;
    p->out_fd = spec->out_fd;
    p->policy = spec->policy;
    p->stop_order = spec->stop_order;
    p->stop_signal = spec->stop_signal ? spec->stop_signal : SIGTERM;
    if (!p->argv || !p->envp || (spec->log_path && !p->log_path)) {
        strv_free(p->argv);
        strv_free(p->envp);
        free(p->log_path);
        return GF_ERR_NOMEM;
    }
    s->n_procs++;
    if (index)
        *index = s->n_procs - 1;
    return start(s, p, gf_clock_mono_ms());
}

static gf_sup_proc *by_pid(gf_sup *s, pid_t pid)
{
    for (size_t i = 0; i < s->n_procs; i++)
        if (s->procs[i].pid == pid)
            return &s->procs[i];
    return NULL;
}

/* A RESTART process died: schedule it again, or give up on it. */
static void schedule(gf_sup *s, gf_sup_proc *p, int64_t now,
                     void (*log)(void *, const gf_sup_restart *, const gf_sup_proc *), void *arg)
{
    int64_t ran = now - p->started_ms;
    p->quick_deaths = ran < QUICK_MS ? p->quick_deaths + 1 : 0;
    p->attempt = ran >= STABLE_MS ? 1 : p->attempt + 1;
    gf_sup_restart r = {.t = (double)(now - s->t0_ms) / 1000.0};
    if (r.t < 0)
        r.t = 0;
    snprintf(r.function, sizeof r.function, "%s", p->function);
    snprintf(r.instance, sizeof r.instance, "%s", p->instance);
    gf_child_describe(p->status, r.reason, sizeof r.reason);
    if (p->quick_deaths >= GIVE_UP_AFTER) {
        p->failed = true;
        s->gave_up = true;
        r.delay_ms = -1;
    } else {
        r.delay_ms = gf_backoff_ms(p->attempt, BACKOFF_BASE_MS, BACKOFF_CAP_MS, 0);
        p->restart_at_ms = now + r.delay_ms;
        p->restarts++;
    }
    gf_sup_restart *v = gf_grow(s->restarts, &s->cap_restarts, s->n_restarts + 1, sizeof *v);
    if (v) {
        s->restarts = v;
        s->restarts[s->n_restarts++] = r;
    }
    if (log)
        log(arg, &r, p);
}

size_t gf_sup_reap(gf_sup *s, int64_t now_ms, gf_sup_exit *exits, size_t max_exits,
                   void (*log)(void *arg, const gf_sup_restart *r, const gf_sup_proc *p), void *arg)
{
    size_t n = 0;
    bool changed = false;
    for (;;) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            break;
        gf_sup_proc *p = by_pid(s, pid);
        if (!p)
            continue; /* a helper the caller waits for itself (provision, keygen) */
        p->pid = 0;
        p->status = status;
        note(s, "exit", p, pid);
        changed = true;
        if (p->policy == GF_SUP_ONCE || s->stopping) {
            p->exited = true;
            if (p->policy == GF_SUP_ONCE && n < max_exits)
                exits[n++] = (gf_sup_exit){.index = (size_t)(p - s->procs), .status = status};
            continue;
        }
        schedule(s, p, now_ms, log, arg);
    }
    if (changed)
        write_pids(s);
    return n;
}

int64_t gf_sup_restart_due(gf_sup *s, int64_t now_ms)
{
    int64_t next = -1;
    for (size_t i = 0; i < s->n_procs; i++) {
        gf_sup_proc *p = &s->procs[i];
        if (p->restart_at_ms == 0 || p->failed || s->stopping)
            continue;
        if (p->restart_at_ms <= now_ms) {
            if (start(s, p, now_ms) != GF_OK) {
                p->status = 127 << 8;
                schedule(s, p, now_ms, NULL, NULL);
            }
            continue;
        }
        if (next < 0 || p->restart_at_ms < next)
            next = p->restart_at_ms;
    }
    return next;
}

size_t gf_sup_running(const gf_sup *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_procs; i++)
        n += s->procs[i].pid > 0;
    return n;
}

/* Reaps what exited among the group; true when none of it runs. */
static bool group_done(gf_sup *s, int order)
{
    bool done = true;
    for (size_t i = 0; i < s->n_procs; i++) {
        gf_sup_proc *p = &s->procs[i];
        if (p->pid <= 0 || p->stop_order != order)
            continue;
        int status = 0;
        pid_t r = waitpid(p->pid, &status, WNOHANG);
        if (r == p->pid || (r < 0 && errno == ECHILD)) {
            p->status = status;
            note(s, "exit", p, p->pid);
            p->pid = 0;
            p->exited = true;
        } else {
            done = false;
        }
    }
    return done;
}

void gf_sup_stop(gf_sup *s, int max_order, int64_t grace_ms)
{
    s->stopping = true;
    for (size_t i = 0; i < s->n_procs; i++)
        s->procs[i].restart_at_ms = 0;
    for (;;) {
        int order = 0;
        bool any = false;
        for (size_t i = 0; i < s->n_procs; i++) {
            const gf_sup_proc *p = &s->procs[i];
            if (p->pid > 0 && p->stop_order <= max_order && (!any || p->stop_order < order)) {
                order = p->stop_order;
                any = true;
            }
        }
        if (!any)
            break;
        for (size_t i = 0; i < s->n_procs; i++)
            if (s->procs[i].pid > 0 && s->procs[i].stop_order == order)
                gf_child_kill(s->procs[i].pid, s->procs[i].stop_signal);
        int64_t until = gf_clock_mono_ms() + grace_ms;
        while (!group_done(s, order) && gf_clock_mono_ms() < until)
            gf_clock_sleep_ms(POLL_MS);
        for (size_t i = 0; i < s->n_procs; i++) {
            gf_sup_proc *p = &s->procs[i];
            if (p->pid <= 0 || p->stop_order != order)
                continue;
            gf_child_kill(p->pid, SIGKILL);
            int status = 0;
            if (waitpid(p->pid, &status, 0) == p->pid)
                p->status = status;
            note(s, "exit", p, p->pid);
            p->pid = 0;
            p->exited = true;
        }
        write_pids(s);
    }
    write_pids(s);
}
