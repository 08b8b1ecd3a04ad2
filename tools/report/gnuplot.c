/*
 * gnuplot.c — gnuplot as a child process (gnuplot.h).
 *
 * Design notes: the script goes in through a pipe while stdout and stderr come back
 * through two others, all three served by one poll() loop with non-blocking ends, so
 * neither side can block the other however large the script or the SVG is. The child is
 * reaped on every path; on timeout it is SIGKILLed first.
 */
#define _GNU_SOURCE /* pipe2 */
#include "gnuplot.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { SVG_MAX = 64 * 1024 * 1024, ERR_MAX = 64 * 1024 };

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *program(void)
{
    const char *p = getenv("GAMEFN_GNUPLOT");
    return p && p[0] ? p : "gnuplot";
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* The first line of gnuplot's complaints that says something: gnuplot echoes the
 * offending line and a caret before "line N: message". */
static void first_error(const gf_buf *err, char *why, size_t size)
{
    const char *text = err->p ? err->p : "";
    const char *pick = strstr(text, "line ");
    if (!pick)
        pick = text;
    while (*pick == '\n' || *pick == ' ')
        pick++;
    size_t n = strcspn(pick, "\n");
    if (n == 0) {
        snprintf(why, size, "no message");
        return;
    }
    snprintf(why, size, "%.*s", (int)(n > 300 ? 300 : n), pick);
}

static gf_err run(char *const argv[], const char *input, size_t len, int timeout_ms, gf_buf *out,
                  char *why, size_t whysize)
{
    int in[2] = {-1, -1}, so[2] = {-1, -1}, se[2] = {-1, -1}, ex[2] = {-1, -1};
    gf_buf err = {0};
    gf_err rc = GF_OK;
    pid_t pid = -1;
    if (pipe2(in, O_CLOEXEC) || pipe2(so, O_CLOEXEC) || pipe2(se, O_CLOEXEC) ||
        pipe2(ex, O_CLOEXEC)) {
        snprintf(why, whysize, "pipe: %s", strerror(errno));
        rc = GF_ERR_IO;
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(why, whysize, "fork: %s", strerror(errno));
        rc = GF_ERR_IO;
        goto out;
    }
    if (pid == 0) {
        /* Child: only async-signal-safe calls until exec. ex[1] (close-on-exec) tells the
         * parent the errno of a failed exec. */
        if (dup2(in[0], 0) < 0 || dup2(so[1], 1) < 0 || dup2(se[1], 2) < 0)
            _exit(127);
        execvp(argv[0], argv);
        int e = errno;
        ssize_t w = write(ex[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close_fd(&in[0]);
    close_fd(&so[1]);
    close_fd(&se[1]);
    close_fd(&ex[1]);
    int exec_errno = 0;
    ssize_t got = read(ex[0], &exec_errno, sizeof exec_errno);
    close_fd(&ex[0]);
    if (got == (ssize_t)sizeof exec_errno) {
        snprintf(why, whysize, "cannot run %s: %s", argv[0], strerror(exec_errno));
        rc = GF_ERR_NOT_FOUND;
        goto out;
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    size_t sent = 0;
    if (len == 0)
        close_fd(&in[1]);
    int64_t deadline = now_ms() + timeout_ms;
    while (in[1] >= 0 || so[0] >= 0 || se[0] >= 0) {
        struct pollfd p[3] = {{.fd = in[1], .events = POLLOUT},
                              {.fd = so[0], .events = POLLIN},
                              {.fd = se[0], .events = POLLIN}};
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            snprintf(why, whysize, "%s did not finish within %d ms", argv[0], timeout_ms);
            rc = GF_ERR_TIMEOUT;
            goto out;
        }
        int n = poll(p, 3, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(why, whysize, "poll: %s", strerror(errno));
            rc = GF_ERR_IO;
            goto out;
        }
        if (p[0].revents) {
            ssize_t w = write(in[1], input + sent, len - sent);
            if (w > 0)
                sent += (size_t)w;
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || sent == len)
                close_fd(&in[1]); /* done, or the child stopped reading (EPIPE) */
        }
        for (int i = 1; i < 3; i++) {
            if (!p[i].revents)
                continue;
            char chunk[65536];
            ssize_t r = read(p[i].fd, chunk, sizeof chunk);
            if (r > 0) {
                gf_buf *dst = i == 1 ? out : &err;
                if (dst->len + (size_t)r <= (i == 1 ? (size_t)SVG_MAX : (size_t)ERR_MAX))
                    gf_buf_put(dst, chunk, (size_t)r);
                else if (i == 1) {
                    snprintf(why, whysize, "%s wrote more than %d bytes", argv[0], SVG_MAX);
                    rc = GF_ERR_IO;
                    goto out;
                }
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                close_fd(i == 1 ? &so[0] : &se[0]);
            }
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
    if (out->oom || err.oom) {
        snprintf(why, whysize, "out of memory");
        rc = GF_ERR_NOMEM;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char first[320];
        first_error(&err, first, sizeof first);
        if (WIFEXITED(status))
            snprintf(why, whysize, "%s exited with status %d: %s", argv[0], WEXITSTATUS(status),
                     first);
        else
            snprintf(why, whysize, "%s was killed by signal %d", argv[0], WTERMSIG(status));
        rc = GF_ERR_IO;
    }
out:
    if (pid > 0) {
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    int *fds[] = {&in[0], &in[1], &so[0], &so[1], &se[0], &se[1], &ex[0], &ex[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        close_fd(fds[i]);
    gf_buf_free(&err);
    return rc;
}

gf_err gf_gnuplot_run(const char *script, size_t len, int timeout_ms, gf_buf *svg, char *why,
                      size_t whysize)
{
    char prog[1024];
    snprintf(prog, sizeof prog, "%s", program());
    char *argv[] = {prog, NULL};
    gf_err e = run(argv, script, len, timeout_ms, svg, why, whysize);
    if (e == GF_OK && svg->len == 0) {
        snprintf(why, whysize, "%s wrote nothing", argv[0]);
        e = GF_ERR_IO;
    }
    return e;
}

gf_err gf_gnuplot_version(char *version, size_t size, char *why, size_t whysize)
{
    char prog[1024], flag[] = "--version";
    snprintf(prog, sizeof prog, "%s", program());
    char *argv[] = {prog, flag, NULL};
    gf_buf out = {0};
    gf_err e = run(argv, NULL, 0, 10000, &out, why, whysize);
    if (e == GF_OK) {
        const char *t = out.p ? out.p : "";
        snprintf(version, size, "%.*s", (int)strcspn(t, "\n"), t);
    }
    gf_buf_free(&out);
    return e;
}

/* Where in s[0..n) `needle` first occurs at or after from; n if nowhere. */
static size_t find(const char *s, size_t n, size_t from, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = from; i + m <= n; i++)
        if (memcmp(s + i, needle, m) == 0)
            return i;
    return n;
}

gf_err gf_svg_inline(const char *svg, size_t len, const char *prefix, gf_buf *out)
{
    size_t start = find(svg, len, 0, "<svg");
    size_t end = 0;
    for (size_t i = find(svg, len, start, "</svg>"); i < len; i = find(svg, len, i + 1, "</svg>"))
        end = i + 6;
    if (start == len || end <= start)
        return GF_ERR_INVALID;
    static const char *const refs[] = {"id='", "id=\"", "href='#", "href=\"#", "url(#"};
    gf_buf_puts(out, "<svg class=\"plot\"");
    size_t i = start + 4, copied = i;
    while (i < end) {
        bool hit = false;
        for (size_t r = 0; r < sizeof refs / sizeof refs[0]; r++) {
            size_t m = strlen(refs[r]);
            /* an attribute name starts after a space or a colon (xlink:href) */
            bool boundary = r == 4 || (i > 0 && (svg[i - 1] == ' ' || svg[i - 1] == ':' ||
                                                 svg[i - 1] == '\t' || svg[i - 1] == '\n'));
            if (boundary && i + m <= end && memcmp(svg + i, refs[r], m) == 0) {
                gf_buf_put(out, svg + copied, i + m - copied);
                gf_buf_puts(out, prefix);
                i += m;
                copied = i;
                hit = true;
                break;
            }
        }
        if (!hit)
            i++;
    }
    gf_buf_put(out, svg + copied, end - copied);
    gf_buf_puts(out, "\n");
    return GF_OK;
}
