/*
 * natsd_probe.c — asking a nats-server whether it is up, without nats.c.
 *
 * Design notes:
 * - Readiness must not depend on the client library under test, so the harness
 *   speaks just enough of two protocols itself: the NATS client port greets every
 *   connection with one "INFO {json}\r\n" line, and the monitoring port answers a
 *   plain HTTP/1.0 GET with a JSON body and then closes the connection (no chunked
 *   encoding for 1.0 clients). JSON is parsed with jansson.
 * - Every socket operation is bounded: non-blocking connect + poll, then poll
 *   before each read against one deadline.
 * - The ports file is written by the server non-atomically, so a file that does
 *   not parse yet is reported as "not there yet"; the caller's deadline bounds it.
 * - nats-server prints -1 in some unsigned fields as 18446744073709551615 (2.9.10
 *   /jsz `reserved_memory`, `reserved_storage` once streams exist), past what jansson
 *   accepts: a body would not parse at all. That exact number is read as -1.
 */
#include "natsd_probe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gamefn/clock.h"

enum { PROBE_MAX_RESPONSE = 4 * 1024 * 1024 };

/* Port number at the end of a URL like "nats://127.0.0.1:4222"; 0 if absent. */
static int url_port(json_t *arr)
{
    const char *url = json_string_value(json_array_get(arr, 0));
    if (!url)
        return 0;
    const char *colon = strrchr(url, ':');
    if (!colon)
        return 0;
    char *end = NULL;
    long p = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || (*end != '\0' && *end != '/') || p < 1 || p > 65535)
        return 0;
    return (int)p;
}

int gf_natsd_probe_ports_file(const char *dir, pid_t pid, int *client, int *monitor, int *cluster)
{
    char suffix[64], path[4096];
    int found = 0;
    json_t *root = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    snprintf(suffix, sizeof suffix, "_%ld.ports", (long)pid);
    size_t slen = strlen(suffix);
    struct dirent *e;
    path[0] = '\0';
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > slen && strcmp(e->d_name + len - slen, suffix) == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            break;
        }
    }
    closedir(d);
    if (!path[0])
        return 0;
    root = json_load_file(path, 0, NULL);
    if (!json_is_object(root))
        goto out; /* probably half-written: try again later */
    *client = url_port(json_object_get(root, "nats"));
    *monitor = url_port(json_object_get(root, "monitoring"));
    *cluster = url_port(json_object_get(root, "cluster"));
    found = *client > 0 ? 1 : 0;
out:
    json_decref(root);
    return found;
}

void gf_natsd_probe_clear_ports(const char *dir)
{
    char path[4096];
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 6 && strcmp(e->d_name + len - 6, ".ports") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    closedir(d);
}

/* Connected TCP socket to host:port within the deadline, or -1 with err set. */
static int connect_by(const char *host, int port, long long deadline, char *err, size_t err_size)
{
    struct addrinfo hints, *res = NULL;
    char service[16];
    int fd = -1;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof service, "%d", port);
    int gai = getaddrinfo(host, service, &hints, &res);
    if (gai != 0) {
        snprintf(err, err_size, "resolve %s: %s", host, gai_strerror(gai));
        return -1;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            long long left = deadline - gf_clock_mono_ms();
            int soerr = ETIMEDOUT;
            socklen_t sl = sizeof soerr;
            if (left > 0 && poll(&pfd, 1, (int)left) == 1)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            errno = soerr;
            rc = soerr == 0 ? 0 : -1;
        }
        if (rc == 0)
            break;
        snprintf(err, err_size, "connect %s:%d: %s", host, port, strerror(errno));
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* Reads into a growing buffer until EOF (or, with stop_at_newline, the first
 * '\n'), bounded by the deadline. Returns the NUL-terminated data or NULL. */
static char *read_until(int fd, long long deadline, int stop_at_newline, size_t *len_out, char *err,
                        size_t err_size)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= PROBE_MAX_RESPONSE) {
                snprintf(err, err_size, "response larger than %d bytes", PROBE_MAX_RESPONSE);
                goto fail;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                snprintf(err, err_size, "out of memory");
                goto fail;
            }
            buf = nb;
            cap *= 2;
        }
        long long left = deadline - gf_clock_mono_ms();
        struct pollfd pfd = {fd, POLLIN, 0};
        if (left <= 0 || poll(&pfd, 1, (int)left) != 1) {
            snprintf(err, err_size, "timed out reading");
            goto fail;
        }
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            snprintf(err, err_size, "read: %s", strerror(errno));
            goto fail;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (stop_at_newline && memchr(buf, '\n', len))
            break;
    }
    buf[len] = '\0';
    *len_out = len;
    return buf;
fail:
    free(buf);
    return NULL;
}

int gf_natsd_probe_info(const char *host, int port, int timeout_ms, json_t **info, char *err,
                        size_t err_size)
{
    int rc = -1;
    char *line = NULL;
    size_t len = 0;
    long long deadline = gf_clock_mono_ms() + timeout_ms;
    *info = NULL;
    int fd = connect_by(host, port, deadline, err, err_size);
    if (fd < 0)
        return -1;
    line = read_until(fd, deadline, 1, &len, err, err_size);
    if (!line)
        goto out;
    if (len < 5 || strncmp(line, "INFO ", 5) != 0) {
        snprintf(err, err_size, "%s:%d did not greet with INFO", host, port);
        goto out;
    }
    char *eol = strpbrk(line, "\r\n");
    if (eol)
        *eol = '\0';
    json_error_t jerr;
    *info = json_loads(line + 5, 0, &jerr);
    if (!json_is_object(*info)) {
        snprintf(err, err_size, "INFO from %s:%d is not a JSON object: %s", host, port, jerr.text);
        json_decref(*info);
        *info = NULL;
        goto out;
    }
    rc = 0;
out:
    free(line);
    close(fd);
    return rc;
}

int gf_natsd_probe_http(int port, const char *path, int timeout_ms, int *status, json_t **body,
                        char *err, size_t err_size)
{
    int rc = -1;
    char *resp = NULL, req[1024];
    size_t len = 0;
    long long deadline = gf_clock_mono_ms() + timeout_ms;
    *body = NULL;
    *status = 0;
    int fd = connect_by("127.0.0.1", port, deadline, err, err_size);
    if (fd < 0)
        return -1;
    int reqlen =
        snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", path, port);
    if (reqlen < 0 || (size_t)reqlen >= sizeof req) {
        snprintf(err, err_size, "path too long");
        goto out;
    }
    if (send(fd, req, (size_t)reqlen, MSG_NOSIGNAL) != reqlen) {
        snprintf(err, err_size, "send: %s", strerror(errno));
        goto out;
    }
    resp = read_until(fd, deadline, 0, &len, err, err_size);
    if (!resp)
        goto out;
    if (sscanf(resp, "HTTP/%*d.%*d %d", status) != 1) {
        snprintf(err, err_size, "GET %s: not an HTTP response", path);
        goto out;
    }
    char *sep = strstr(resp, "\r\n\r\n");
    if (!sep) {
        snprintf(err, err_size, "GET %s: no end of headers", path);
        goto out;
    }
    static const char uint64_minus_1[] = "18446744073709551615";
    const size_t n = sizeof uint64_minus_1 - 1;
    for (char *p = sep + 4; (p = strstr(p, uint64_minus_1)) != NULL; p += n) {
        if ((p[-1] == ':' || p[-1] == ' ') && strchr(",}] \r\n", p[n])) {
            memset(p, ' ', n); /* a value, not part of a string: whitespace keeps the JSON */
            memcpy(p, "-1", 2);
        }
    }
    json_error_t jerr;
    *body = json_loads(sep + 4, 0, &jerr);
    if (!*body) {
        snprintf(err, err_size, "GET %s: HTTP %d, body is not JSON: %s", path, *status, jerr.text);
        goto out;
    }
    rc = 0;
out:
    free(resp);
    close(fd);
    return rc;
}
