/*
 * gamefn-local — the local stack's supervisor (local.h). deploy/local/run.sh installs,
 * builds and then hands over to `gamefn-local run`.
 *
 *   gamefn-local run --source DIR --build DIR --data DIR [--report-dir DIR]
 *                    [--seconds N] [--seed S] [--population low|mid|high]
 *                    [--replicas NAME=N,...] [--keep] [--lock-fd FD]
 *   gamefn-local stop --data DIR
 *
 * The data directory is locked (flock on <data>/run.lock) for as long as anything of
 * the run is up: a second run on it is refused with the first one's pid, and `stop`
 * finds the supervisor through <data>/run.pid and signals only that process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gamefn/clock.h"
#include "local.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-local run --source DIR --build DIR --data DIR [--report-dir DIR]\n"
               "                        [--seconds N] [--seed S] [--population low|mid|high]\n"
               "                        [--replicas NAME=N,...] [--keep] [--lock-fd FD]\n"
               "       gamefn-local stop --data DIR\n"
               "deploy/local/run.sh is the way to use it (see its --help).\n");
}

static bool set_path(char *dst, const char *src)
{
    char *real = realpath(src, NULL);
    if (!real || strlen(real) >= GF_STACK_PATH_MAX) {
        free(real);
        return false;
    }
    strcpy(dst, real);
    free(real);
    return true;
}

/* ---- the lock ------------------------------------------------------------------------ */

static void lock_path(const char *data, char *buf, size_t size)
{
    snprintf(buf, size, "%s/run.lock", data);
}

/* Who holds the data directory, from run.pid, for the busy message. */
static void say_busy(const char *data)
{
    char path[GF_STACK_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/run.pid", data);
    char *text = gf_stack_read_file(path, NULL);
    int pid = 0, keep = 0;
    char started[64] = "?";
    if (text)
        sscanf(text, "%d %d %63s", &pid, &keep, started);
    free(text);
    fprintf(stderr,
            "gamefn-local: another run is using %s (supervisor pid %d, started %s%s).\n"
            "Stop it with: deploy/local/run.sh --stop --data %s   (or wait for it to end)\n",
            data, pid, started, keep ? ", kept running with --keep" : "", data);
}

/* Takes the lock (or takes over run.sh's, fd given). -1 when another run holds it. */
static int take_lock(const char *data, int fd)
{
    char path[GF_STACK_PATH_MAX + 16];
    lock_path(data, path, sizeof path);
    if (fd < 0)
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "gamefn-local: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        say_busy(data);
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

/* ---- the foreground process ------------------------------------------------------------ */

/* Waits for the supervisor: its exit code, or 0 once it says it detached (--keep).
 * Ctrl-C, SIGTERM and SIGHUP are passed on to it (a second one makes it hurry). */
static int foreground(pid_t sup, int up)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    char buf[64];
    size_t got = 0;
    for (;;) {
        struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN}, {.fd = up, .events = POLLIN}};
        poll(pfd, 2, 1000);
        struct signalfd_siginfo si;
        while (sfd >= 0 && read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
            if (si.ssi_signo != SIGCHLD)
                kill(sup, SIGTERM);
        int status = 0;
        if (waitpid(sup, &status, WNOHANG) == sup)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (pfd[1].revents && up >= 0) {
            ssize_t n = read(up, buf + got, sizeof buf - got - 1);
            if (n > 0) {
                got += (size_t)n;
                buf[got] = '\0';
                if (strstr(buf, "detached"))
                    return GF_LOCAL_EXIT_OK;
                if (got == sizeof buf - 1)
                    got = 0;
            } else {
                close(up); /* EOF: the supervisor is exiting; its status follows */
                up = -1;
            }
        }
    }
}

static int cmd_run(gf_local_opts *o)
{
    int lock = take_lock(o->paths.data, o->lock_fd);
    if (lock < 0)
        return GF_LOCAL_EXIT_BUSY;
    int up[2], down[2];
    if (pipe2(up, O_CLOEXEC) != 0 || pipe2(down, O_CLOEXEC) != 0) {
        perror("gamefn-local: pipe");
        return GF_LOCAL_EXIT_FAILED;
    }
    /* Signals are taken from signalfds on both sides; reset what a non-interactive
     * shell may have set to "ignore" for a background job, then block. */
    sigset_t set;
    sigemptyset(&set);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        signal(sigs[i], SIG_DFL);
        sigaddset(&set, sigs[i]);
    }
    sigprocmask(SIG_BLOCK, &set, NULL);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("gamefn-local: fork");
        return GF_LOCAL_EXIT_FAILED;
    }
    if (pid > 0) {
        close(lock); /* the supervisor holds it from here */
        close(up[1]);
        close(down[0]);
        return foreground(pid, up[0]);
    }
    setsid();
    close(up[0]);
    close(down[1]);
    o->lock_fd = lock;
    char path[GF_STACK_PATH_MAX + 16], line[128], started[40];
    gf_clock_rfc3339(gf_clock_unix_ns(), 0, started, sizeof started);
    snprintf(path, sizeof path, "%s/run.pid", o->paths.data);
    int n = snprintf(line, sizeof line, "%d %d %s\n", (int)getpid(), o->keep ? 1 : 0, started);
    gf_stack_write_file(path, line, (size_t)n);
    int code = gf_local_run(o, up[1], down[0]);
    unlink(path);
    _exit(code);
}

/* ---- stop -------------------------------------------------------------------------------- */

static bool lock_free(const char *data)
{
    char path[GF_STACK_PATH_MAX + 16];
    lock_path(data, path, sizeof path);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return true;
    bool free_now = flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    return free_now;
}

static int cmd_stop(const char *data)
{
    if (lock_free(data)) {
        printf("gamefn-local: nothing is running on %s\n", data);
        return GF_LOCAL_EXIT_OK;
    }
    char path[GF_STACK_PATH_MAX + 16], exe[64], target[PATH_MAX] = "";
    snprintf(path, sizeof path, "%s/run.pid", data);
    char *text = gf_stack_read_file(path, NULL);
    int pid = text ? atoi(text) : 0;
    free(text);
    snprintf(exe, sizeof exe, "/proc/%d/exe", pid);
    ssize_t len = pid > 0 ? readlink(exe, target, sizeof target - 1) : -1;
    target[len > 0 ? len : 0] = '\0';
    /* A rebuild while the stack runs replaces the binary: "/path/gamefn-local (deleted)". */
    size_t tl = strlen(target), dl = strlen(" (deleted)");
    if (tl > dl && strcmp(target + tl - dl, " (deleted)") == 0)
        target[tl - dl] = '\0';
    const char *base = strrchr(target, '/');
    /* Only the supervisor this data directory names, and only if it is ours. */
    if (!base || strcmp(base + 1, "gamefn-local") != 0 || kill(pid, SIGTERM) != 0) {
        fprintf(stderr, "gamefn-local: %s is locked but %s names no running gamefn-local\n", data,
                path);
        return GF_LOCAL_EXIT_FAILED;
    }
    printf("gamefn-local: stopping the stack on %s (supervisor pid %d)\n", data, pid);
    fflush(stdout);
    for (int64_t until = gf_clock_mono_ms() + 90000; gf_clock_mono_ms() < until;
         gf_clock_sleep_ms(200))
        if (lock_free(data)) {
            printf("gamefn-local: stopped\n");
            return GF_LOCAL_EXIT_OK;
        }
    fprintf(stderr, "gamefn-local: the stack on %s did not stop within 90 s\n", data);
    return GF_LOCAL_EXIT_FAILED;
}

/* ---- the command line ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"source", required_argument, NULL, 'S'},
        {"build", required_argument, NULL, 'b'},
        {"data", required_argument, NULL, 'd'},
        {"report-dir", required_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 's'},
        {"seed", required_argument, NULL, 'e'},
        {"population", required_argument, NULL, 'p'},
        {"replicas", required_argument, NULL, 'R'},
        {"keep", no_argument, NULL, 'k'},
        {"lock-fd", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? GF_LOCAL_EXIT_USAGE : GF_LOCAL_EXIT_OK;
    }
    const char *cmd = argv[1];
    gf_local_opts o = {.seconds = 60, .seed = 1, .population = "mid", .lock_fd = -1};
    const char *source = ".", *build = NULL, *data = NULL, *runs = NULL;
    char *end = NULL;
    int c;
    optind = 2;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'S':
            source = optarg;
            break;
        case 'b':
            build = optarg;
            break;
        case 'd':
            data = optarg;
            break;
        case 'r':
            runs = optarg;
            break;
        case 's':
            o.seconds = (int)strtol(optarg, &end, 10);
            if (*end || o.seconds < 1 || o.seconds > 86400)
                goto bad;
            break;
        case 'e':
            o.seed = strtoull(optarg, &end, 10);
            if (*end || !optarg[0])
                goto bad;
            break;
        case 'p':
            if (strcmp(optarg, "low") && strcmp(optarg, "mid") && strcmp(optarg, "high"))
                goto bad;
            snprintf(o.population, sizeof o.population, "%s", optarg);
            break;
        case 'R':
            snprintf(o.replicas, sizeof o.replicas, "%s", optarg);
            break;
        case 'k':
            o.keep = true;
            break;
        case 'l':
            o.lock_fd = (int)strtol(optarg, &end, 10);
            if (*end || o.lock_fd < 0)
                goto bad;
            break;
        case 'h':
            usage(stdout);
            return GF_LOCAL_EXIT_OK;
        default:
            goto bad;
        }
    }
    if (optind != argc || !data || !set_path(o.paths.data, data))
        goto bad;
    if (strcmp(cmd, "stop") == 0)
        return cmd_stop(o.paths.data);
    if (strcmp(cmd, "run") != 0 || !build || !set_path(o.paths.build, build) ||
        !set_path(o.paths.source, source))
        goto bad;
    snprintf(o.paths.config, sizeof o.paths.config, "%s/gamefn.yaml", o.paths.data);
    snprintf(o.paths.logs, sizeof o.paths.logs, "%s/logs", o.paths.data);
    if (runs) {
        if (!set_path(o.runs, runs))
            goto bad;
    } else {
        snprintf(o.runs, sizeof o.runs, "%s/runs", o.paths.data);
    }
    if (mkdir(o.paths.logs, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "gamefn-local: %s: %s\n", o.paths.logs, strerror(errno));
        return GF_LOCAL_EXIT_FAILED;
    }
    return cmd_run(&o);
bad:
    fprintf(stderr, "gamefn-local: bad arguments (an existing --data/--build/--source, "
                    "--seconds 1..86400, --population low|mid|high)\n");
    usage(stderr);
    return GF_LOCAL_EXIT_USAGE;
}
