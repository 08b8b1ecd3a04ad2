/*
 * proc.c — child processes for tests and benchmarks, by pid.
 *
 * Design notes:
 * - Tests link nats.c, whose threads may be running when we fork. Between fork()
 *   and execve() the child therefore only makes async-signal-safe calls: the
 *   program path, the environment array and every file descriptor are prepared in
 *   the parent before fork().
 * - The child asks the kernel to SIGKILL it when its parent dies
 *   (PR_SET_PDEATHSIG), then re-checks getppid() because the parent may have died
 *   between fork() and prctl(). A crashed or aborted test therefore cannot leave a
 *   nats-server or function binary running. The signal fires when the *thread*
 *   that forked exits, so spawn from a long-lived thread (the main thread).
 * - Exec failures are reported back through a CLOEXEC pipe, so gf_proc_spawn()
 *   fails at once instead of leaving a child that exited with 127.
 * - The child gets stdin from /dev/null, stdout+stderr appended to the log file,
 *   no inherited descriptors beyond 0-2 (a leaked client socket in a server child
 *   would keep connections half-open), default signal dispositions and an empty
 *   signal mask (both survive execve otherwise).
 * - Only waitpid(pid, ...) on our own pids, never waitpid(-1): other code in the
 *   same test may own other children.
 */
#define _GNU_SOURCE /* close_range */

#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gamefn/clock.h"

extern char **environ;

/* Resolves a program name the way execvp would, before fork (getenv and
 * access are not async-signal-safe promises we want to rely on in the child). */
static int resolve_program(const char *name, char *out, size_t size)
{
    if (strchr(name, '/')) {
        if (snprintf(out, size, "%s", name) >= (int)size)
            return -1;
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len > 0 && snprintf(out, size, "%.*s/%s", (int)len, path, name) < (int)size &&
            access(out, X_OK) == 0)
            return 0;
        path += len;
        if (*path == ':')
            path++;
    }
    return -1;
}

static size_t env_key_len(const char *kv)
{
    const char *eq = strchr(kv, '=');
    return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* environ plus `extra`; an extra entry replaces an inherited one with the same key.
 * The strings are borrowed; only the array is allocated. */
static char **build_env(char *const extra[])
{
    size_t n_env = 0, n_extra = 0;
    while (environ && environ[n_env])
        n_env++;
    while (extra && extra[n_extra])
        n_extra++;
    char **envp = calloc(n_env + n_extra + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < n_env; i++) {
        size_t klen = env_key_len(environ[i]);
        bool overridden = false;
        for (size_t j = 0; j < n_extra && !overridden; j++)
            overridden = env_key_len(extra[j]) == klen && strncmp(extra[j], environ[i], klen) == 0;
        if (!overridden)
            envp[n++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        envp[n++] = extra[j];
    envp[n] = NULL;
    return envp;
}

static void child_fail(int report_fd, int err)
{
    ssize_t w = write(report_fd, &err, sizeof err);
    (void)w;
    _exit(127);
}

/* Runs in the child between fork and exec: async-signal-safe calls only. */
static void child_exec(const char *path, char *const argv[], char **envp, pid_t parent, int null_fd,
                       int log_fd, int report_fd, long max_fd)
{
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        child_fail(report_fd, errno);
    if (getppid() != parent)
        _exit(127); /* the parent died before prctl took effect */

    static const int reset[] = {SIGPIPE, SIGINT,  SIGTERM, SIGHUP,
                                SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaction(reset[i], &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(log_fd, STDOUT_FILENO) < 0 ||
        dup2(log_fd, STDERR_FILENO) < 0)
        child_fail(report_fd, errno);

    /* Close everything above 2 except the CLOEXEC report pipe (exec closes it). */
    if (report_fd > 3 && close_range(3, (unsigned)report_fd - 1, 0) != 0) {
        for (int fd = 3; fd < report_fd; fd++)
            close(fd);
    }
    if (close_range((unsigned)report_fd + 1, ~0U, 0) != 0) {
        for (long fd = report_fd + 1; fd < max_fd; fd++)
            close((int)fd);
    }
    execve(path, argv, envp);
    child_fail(report_fd, errno);
}

int gf_proc_spawn(gf_proc *p, char *const argv[], char *const env[], const char *log_path)
{
    int rc = -1;
    char path[4096];
    char **envp = NULL;
    int null_fd = -1, log_fd = -1, pipe_fds[2] = {-1, -1};

    if (!p || !argv || !argv[0]) {
        fprintf(stderr, "gf_proc_spawn: no program given\n");
        return -1;
    }
    memset(p, 0, sizeof *p);
    if (log_path &&
        snprintf(p->log_path, sizeof p->log_path, "%s", log_path) >= (int)sizeof p->log_path) {
        fprintf(stderr, "gf_proc_spawn: log path too long: %s\n", log_path);
        goto out;
    }
    if (resolve_program(argv[0], path, sizeof path) != 0) {
        fprintf(stderr, "gf_proc_spawn: %s: not found or not executable\n", argv[0]);
        goto out;
    }
    envp = build_env(env);
    if (!envp) {
        fprintf(stderr, "gf_proc_spawn: out of memory\n");
        goto out;
    }
    null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    log_fd = log_path ? open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
                      : open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd < 0 || log_fd < 0) {
        fprintf(stderr, "gf_proc_spawn: cannot open %s: %s\n", log_path ? log_path : "/dev/null",
                strerror(errno));
        goto out;
    }
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "gf_proc_spawn: pipe: %s\n", strerror(errno));
        goto out;
    }
    long max_fd = sysconf(_SC_OPEN_MAX);
    if (max_fd < 0 || max_fd > 65536)
        max_fd = 65536;

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gf_proc_spawn: fork: %s\n", strerror(errno));
        goto out;
    }
    if (pid == 0)
        child_exec(path, argv, envp, parent, null_fd, log_fd, pipe_fds[1], max_fd);

    close(pipe_fds[1]);
    pipe_fds[1] = -1;
    int child_errno = 0;
    ssize_t got;
    do {
        got = read(pipe_fds[0], &child_errno, sizeof child_errno);
    } while (got < 0 && errno == EINTR);
    if (got > 0) {
        /* exec failed: the child exits at once; reap it so nothing is left. */
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        fprintf(stderr, "gf_proc_spawn: exec %s: %s\n", path, strerror(child_errno));
        goto out;
    }
    p->pid = pid;
    rc = 0;
out:
    if (pipe_fds[0] >= 0)
        close(pipe_fds[0]);
    if (pipe_fds[1] >= 0)
        close(pipe_fds[1]);
    if (null_fd >= 0)
        close(null_fd);
    if (log_fd >= 0)
        close(log_fd);
    free(envp);
    return rc;
}

int gf_proc_signal(gf_proc *p, int sig)
{
    if (!p || p->pid <= 0)
        return 0;
    if (kill(p->pid, sig) != 0) {
        fprintf(stderr, "gf_proc_signal: kill(%d, %d): %s\n", (int)p->pid, sig, strerror(errno));
        return -1;
    }
    return 0;
}

/* One non-blocking reap attempt: 1 reaped, 0 still running, -1 error. */
static int try_reap(gf_proc *p)
{
    int st = 0;
    pid_t r;
    do {
        r = waitpid(p->pid, &st, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == p->pid) {
        p->exit_status = st;
        p->pid = 0;
        return 1;
    }
    if (r < 0) {
        fprintf(stderr, "gf_proc: waitpid(%d): %s\n", (int)p->pid, strerror(errno));
        return -1;
    }
    return 0;
}

int gf_proc_wait(gf_proc *p, int timeout_ms)
{
    if (!p || p->pid <= 0)
        return 0;
    long long deadline = gf_clock_mono_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
    int nap = 1;
    for (;;) {
        int r = try_reap(p);
        if (r != 0)
            return r > 0 ? 0 : -1;
        if (timeout_ms >= 0 && gf_clock_mono_ms() >= deadline)
            return -1;
        gf_clock_sleep_ms(nap);
        if (nap < 20)
            nap *= 2;
    }
}

bool gf_proc_running(gf_proc *p)
{
    return p && p->pid > 0 && try_reap(p) == 0;
}

bool gf_proc_exited_with(const gf_proc *p, int code)
{
    return p && p->pid == 0 && WIFEXITED(p->exit_status) && WEXITSTATUS(p->exit_status) == code;
}

void gf_proc_describe(const gf_proc *p, char *buf, size_t size)
{
    int st = p->exit_status;
    if (p->pid > 0)
        snprintf(buf, size, "still running (pid %d)", (int)p->pid);
    else if (WIFEXITED(st))
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, size, "ended (wait status 0x%x)", (unsigned)st);
}

void gf_proc_cleanup(gf_proc *p)
{
    if (!p || p->pid <= 0)
        return;
    kill(p->pid, SIGKILL);
    int st = 0;
    pid_t r;
    do {
        r = waitpid(p->pid, &st, 0);
    } while (r < 0 && errno == EINTR);
    if (r == p->pid)
        p->exit_status = st;
    p->pid = 0;
}

void gf_proc_dump_log(const gf_proc *p, int max_lines)
{
    if (!p || !p->log_path[0])
        return;
    gf_proc_dump_file(p->log_path, max_lines);
}

void gf_proc_dump_file(const char *path, int max_lines)
{
    enum { TAIL_BYTES = 64 * 1024 };
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "--- %s: %s\n", path, strerror(errno));
        return;
    }
    buf = malloc(TAIL_BYTES + 1);
    if (!buf)
        goto out;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > TAIL_BYTES)
            fseek(f, size - TAIL_BYTES, SEEK_SET);
        else
            fseek(f, 0, SEEK_SET);
    }
    size_t n = fread(buf, 1, TAIL_BYTES, f);
    buf[n] = '\0';
    /* Walk back max_lines newlines (ignoring a trailing one) to find the start. */
    size_t start = n;
    int lines = 0;
    if (start > 0 && buf[start - 1] == '\n')
        start--;
    while (start > 0 && lines < max_lines) {
        if (buf[start - 1] == '\n' && ++lines == max_lines)
            break;
        start--;
    }
    fprintf(stderr, "--- last %d lines of %s ---\n%s%s--- end of %s ---\n", max_lines, path,
            buf + start, (n > 0 && buf[n - 1] != '\n') ? "\n" : "", path);
out:
    free(buf);
    fclose(f);
}

int gf_proc_stat_field(pid_t pid, int field, unsigned long long *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f || field < 3)
        return f ? (fclose(f), -1) : -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may contain spaces */
    if (!p)
        return -1;
    p++;
    for (int at = 3; at <= field; at++) {
        while (*p == ' ')
            p++;
        if (at == field) {
            char *end = NULL;
            *out = strtoull(p, &end, 10);
            return end != p ? 0 : -1;
        }
        p = strchr(p, ' ');
        if (!p)
            return -1;
    }
    return -1;
}

bool gf_proc_pid_stopped(pid_t pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool all = true;
    int n = 0;
    for (struct dirent *de; all && (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.')
            continue;
        char path[384], text[256];
        snprintf(path, sizeof path, "%s/%s/stat", dir, de->d_name);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
        if (f)
            fclose(f);
        text[len] = '\0';
        const char *close = strrchr(text, ')'); /* "pid (comm) S ..." */
        all = close && close[1] == ' ' && close[2] == 'T';
        n++;
    }
    closedir(d);
    return all && n > 0;
}

bool gf_proc_pid_stop(pid_t pid, int timeout_ms)
{
    if (kill(pid, SIGSTOP) != 0)
        return false;
    for (int waited = 0; !gf_proc_pid_stopped(pid) && waited < timeout_ms; waited += 5)
        gf_clock_sleep_ms(5);
    return gf_proc_pid_stopped(pid);
}
