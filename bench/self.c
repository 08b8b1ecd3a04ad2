/*
 * self.c — what every bench shares about itself: where gamefn-bench is
 * (<build>/bench/gamefn-bench), to find the binaries of the same build, how its
 * options are read and how its --json line is printed (see bench.h).
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"

/* This program's directory, <build>/bench, into self. */
static char *self_dir(char *self, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", self, size - 1);
    self[n > 0 ? n : 0] = '\0';
    return dirname(self);
}

void gf_bench_build_dir(char *buf, size_t size)
{
    char self[1024];
    snprintf(buf, size, "%s", dirname(self_dir(self, sizeof self)));
}

void gf_bench_near_me(char *buf, size_t size, const char *relative)
{
    char self[1024];
    snprintf(buf, size, "%s/%s", self_dir(self, sizeof self), relative);
}

bool gf_bench_integer(const char *bench, const char *text, long long lo, long long hi,
                      long long *out)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(text, &end, 10);
    if (!*text || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "gamefn-bench %s: a value in %lld..%lld, got '%s'\n", bench, lo, hi, text);
        return false;
    }
    *out = x;
    return true;
}

bool gf_bench_json_line(json_t *j, size_t flags)
{
    char *line = j ? json_dumps(j, flags) : NULL;
    if (line)
        printf("%s\n", line);
    free(line);
    json_decref(j);
    return line != NULL;
}
