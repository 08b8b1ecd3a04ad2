/*
 * natsd_dir.c — temporary directories of harness servers, and sweeping the ones
 * crashed tests left behind.
 *
 * Design notes:
 * - A directory is only swept when its owner is provably dead. "Dead" is judged
 *   by (pid, start time in clock ticks since boot from /proc/<pid>/stat): a reused
 *   pid has another start time. The pid namespace is recorded too, so a /tmp shared
 *   with another container (other pids) is never swept from here, and so is the
 *   uid (we never touch other users' directories).
 * - A directory whose owner file is missing or unreadable is being created right
 *   now or is not ours: it is left alone.
 * - A dead owner's servers are dead too (PR_SET_PDEATHSIG in proc.c), so removing
 *   the store cannot pull it from under a running server.
 */
#define _XOPEN_SOURCE 700 /* nftw */

#include "natsd_dir.h"
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static const char *const prefixes[] = {"gamefn-natsd-", "gamefn-cluster-"};

static const char *tmp_base(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

/* Field 22 of /proc/<pid>/stat: start time in clock ticks after boot. */
static int start_time(pid_t pid, unsigned long long *out)
{
    return gf_proc_stat_field(pid, 22, out);
}

static int pid_namespace(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/ns/pid", buf, size - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return 0;
}

static int write_owner(const char *dir)
{
    char path[4200], ns[64];
    unsigned long long start = 0;
    if (start_time(getpid(), &start) != 0 || pid_namespace(ns, sizeof ns) != 0)
        return 0; /* no /proc: nothing to record, the directory is just never swept */
    snprintf(path, sizeof path, "%s/owner", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "natsd: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "%ld %llu %s\n", (long)getpid(), start, ns);
    return fclose(f) == 0 ? 0 : -1;
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

int gf_natsd_dir_create(const char *prefix, char *out, size_t size)
{
    if (snprintf(out, size, "%s/%s-XXXXXX", tmp_base(), prefix) >= (int)size) {
        fprintf(stderr, "natsd: TMPDIR path too long\n");
        out[0] = '\0';
        return -1;
    }
    if (!config_safe(out)) {
        fprintf(stderr, "natsd: TMPDIR %s has characters a config file cannot hold\n", out);
        out[0] = '\0';
        return -1;
    }
    if (!mkdtemp(out)) {
        fprintf(stderr, "natsd: mkdtemp %s: %s\n", out, strerror(errno));
        out[0] = '\0';
        return -1;
    }
    if (write_owner(out) != 0) {
        gf_natsd_dir_remove(out);
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

void gf_natsd_dir_remove(const char *dir)
{
    if (dir && dir[0])
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* true only when the owner recorded in dir is provably gone. */
static bool owner_dead(const char *dir, const char *my_ns)
{
    char path[4400], ns[64];
    long pid = 0;
    unsigned long long start = 0, now_start = 0;
    snprintf(path, sizeof path, "%s/owner", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    int got = fscanf(f, "%ld %llu %63s", &pid, &start, ns);
    fclose(f);
    if (got != 3 || pid <= 0 || strcmp(ns, my_ns) != 0 || pid == (long)getpid())
        return false;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    return start_time((pid_t)pid, &now_start) == 0 && now_start != start;
}

void gf_natsd_dir_sweep(void)
{
    char my_ns[64], path[4200];
    if (pid_namespace(my_ns, sizeof my_ns) != 0)
        return;
    DIR *d = opendir(tmp_base());
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        bool ours = false;
        for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
            ours = ours || strncmp(e->d_name, prefixes[i], strlen(prefixes[i])) == 0;
        if (!ours)
            continue;
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", tmp_base(), e->d_name);
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
            continue;
        if (owner_dead(path, my_ns)) {
            fprintf(stderr, "natsd: removing %s, left by a test that died\n", path);
            gf_natsd_dir_remove(path);
        }
    }
    closedir(d);
}
