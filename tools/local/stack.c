/*
 * stack.c — the local stack's files and helpers (see stack.h).
 */
#define _GNU_SOURCE
#include "stack.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "gamefn/clock.h"

gf_err gf_stack_write_file(const char *path, const char *text, size_t len)
{
    char tmp[GF_STACK_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return GF_ERR_IO;
    bool ok = fwrite(text, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return GF_ERR_IO;
    }
    return GF_OK;
}

char *gf_stack_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (cap - n - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

/* text with every `from` replaced by `to`; caller frees. */
static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t nf = strlen(from), nt = strlen(to), count = 0;
    for (const char *p = text; (p = strstr(p, from)); p += nf)
        count++;
    char *out = malloc(strlen(text) + count * nt + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = text, *hit; *p; p = hit + nf) {
        hit = strstr(p, from);
        if (!hit) {
            strcpy(o, p);
            return out;
        }
        memcpy(o, p, (size_t)(hit - p));
        o += hit - p;
        memcpy(o, to, nt);
        o += nt;
    }
    *o = '\0';
    return out;
}

static gf_err write_substituted(const char *in, const char *out, const char *from, const char *to,
                                char *why, size_t why_size)
{
    char *text = gf_stack_read_file(in, NULL);
    if (!text) {
        snprintf(why, why_size, "cannot read %s: %s", in, strerror(errno));
        return GF_ERR_IO;
    }
    char *done = replace_all(text, from, to);
    free(text);
    gf_err err = done ? gf_stack_write_file(out, done, strlen(done)) : GF_ERR_NOMEM;
    free(done);
    if (err != GF_OK)
        snprintf(why, why_size, "cannot write %s", out);
    return err;
}

gf_err gf_stack_write_configs(const gf_stack_paths *p, char *why, size_t why_size)
{
    char in[GF_STACK_PATH_MAX + 64], out[GF_STACK_PATH_MAX + 64], keys[GF_STACK_PATH_MAX + 8];
    snprintf(in, sizeof in, "%s/deploy/local/nats.conf.in", p->source);
    snprintf(out, sizeof out, "%s/nats.conf", p->data);
    gf_err err = write_substituted(in, out, "@DATA@", p->data, why, why_size);
    if (err != GF_OK)
        return err;
    /* config/gamefn.yaml names the join-token key files under deploy/local/data/keys;
     * the functions read a copy naming the ones of this data directory. */
    snprintf(in, sizeof in, "%s/config/gamefn.yaml", p->source);
    snprintf(keys, sizeof keys, "%s/keys/", p->data);
    return write_substituted(in, p->config, "deploy/local/data/keys/", keys, why, why_size);
}

/* ---- nats-server -------------------------------------------------------------------- */

static bool first_url(json_t *root, const char *key, char *out, size_t size)
{
    json_t *a = json_object_get(root, key), *v = json_array_get(a, 0);
    if (!json_is_string(v))
        return false;
    snprintf(out, size, "%s", json_string_value(v));
    return true;
}

gf_err gf_stack_nats_ports(const gf_stack_paths *p, pid_t pid, int64_t timeout_ms, char *url,
                           size_t url_size, char *monitor, size_t monitor_size)
{
    char path[GF_STACK_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/nats-server_%d.ports", p->data, (int)pid);
    for (int64_t until = gf_clock_mono_ms() + timeout_ms; gf_clock_mono_ms() < until;
         gf_clock_sleep_ms(50)) {
        if (kill(pid, 0) != 0)
            return GF_ERR_UNAVAILABLE;
        json_t *root = json_load_file(path, 0, NULL);
        bool ok = root && first_url(root, "nats", url, url_size) &&
                  first_url(root, "monitoring", monitor, monitor_size);
        json_decref(root);
        if (ok)
            return GF_OK;
    }
    return GF_ERR_TIMEOUT;
}

/* One GET of path on http://127.0.0.1:port; true on a 200 answer. */
static bool http_ok(int port, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char req[256], resp[64] = "";
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && write(fd, req, (size_t)n) == n;
    if (ok) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        ssize_t got = poll(&pfd, 1, 1000) == 1 ? read(fd, resp, sizeof resp - 1) : -1;
        resp[got > 0 ? got : 0] = '\0';
        ok = strncmp(resp, "HTTP/1.", 7) == 0 && strncmp(resp + 8, " 200", 4) == 0;
    }
    close(fd);
    return ok;
}

gf_err gf_stack_nats_healthy(const char *monitor, int64_t timeout_ms)
{
    const char *colon = strrchr(monitor, ':');
    int port = colon ? atoi(colon + 1) : 0;
    if (port <= 0 || port > 65535)
        return GF_ERR_INVALID;
    for (int64_t until = gf_clock_mono_ms() + timeout_ms; gf_clock_mono_ms() < until;
         gf_clock_sleep_ms(100))
        if (http_ok(port, "/healthz?js-enabled-only=true"))
            return GF_OK;
    return GF_ERR_TIMEOUT;
}

/* ---- the build ---------------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

size_t gf_stack_functions(const gf_stack_paths *p, char names[][32], size_t max)
{
    char dir[GF_STACK_PATH_MAX + 16], bin[GF_STACK_PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s/functions", p->build);
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && n < max && (e = readdir(d));) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= 32)
            continue;
        snprintf(bin, sizeof bin, "%s/%s/gamefn-%s", dir, e->d_name, e->d_name);
        if (access(bin, X_OK) == 0)
            snprintf(names[n++], 32, "%s", e->d_name);
    }
    if (d)
        closedir(d);
    qsort(names, n, sizeof names[0], cmp_name);
    return n;
}

/* ---- helpers ------------------------------------------------------------------------ */

int gf_stack_run_helper(char *const argv[], char *const envp[], const char *log_path,
                        const char *out_path, int64_t timeout_ms, gf_stack_cancel cancel, void *arg)
{
    int out = -1;
    if (out_path && (out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
        return -1;
    pid_t pid = gf_child_start(argv, envp, log_path, out);
    if (out >= 0)
        close(out);
    if (pid < 0)
        return -1;
    int status = 0, result = -1;
    for (int64_t until = gf_clock_mono_ms() + timeout_ms;; gf_clock_sleep_ms(50)) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0)
            return -1;
        if (cancel && cancel(arg)) {
            result = -2;
            break;
        }
        if (gf_clock_mono_ms() >= until)
            break;
    }
    gf_child_kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return result;
}

gf_err gf_stack_keys(const gf_stack_paths *p, char *const envp[], char *why, size_t why_size)
{
    char keys[GF_STACK_PATH_MAX + 8], tmp[GF_STACK_PATH_MAX + 16], sk[GF_STACK_PATH_MAX + 32],
        pk[GF_STACK_PATH_MAX + 32], bin[GF_STACK_PATH_MAX + 32], log[GF_STACK_PATH_MAX + 32];
    snprintf(keys, sizeof keys, "%s/keys", p->data);
    snprintf(sk, sizeof sk, "%s/local.key", keys);
    snprintf(pk, sizeof pk, "%s/local.pub", keys);
    if (access(sk, R_OK) == 0 && access(pk, R_OK) == 0)
        return GF_OK;
    snprintf(tmp, sizeof tmp, "%s/keys.tmp", p->data);
    snprintf(bin, sizeof bin, "%s/tools/gamefn", p->build);
    snprintf(log, sizeof log, "%s/keygen.log", p->logs);
    /* Whatever an interrupted earlier attempt left: a pair is made whole or not at all. */
    char *const rm[] = {"/bin/rm", "-rf", tmp, keys, NULL};
    char *const gen[] = {bin, "keygen", "--key-id", "local", "--dir", tmp, NULL};
    int st = gf_stack_run_helper(rm, envp, log, NULL, 10000, NULL, NULL);
    if (st == 0)
        st = mkdir(tmp, 0700) == 0 ? gf_stack_run_helper(gen, envp, log, NULL, 10000, NULL, NULL)
                                   : -1;
    if (st != 0 || rename(tmp, keys) != 0) {
        snprintf(why, why_size, "gamefn keygen failed; see %s", log);
        return GF_ERR_IO;
    }
    return GF_OK;
}
