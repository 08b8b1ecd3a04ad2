/*
 * self.c — what every bench shares about itself: where gamefn-bench is
 * (<build>/bench/gamefn-bench), to find the binaries of the same build, how its
 * options are read and how its --json line is printed (see bench.h).
 */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A value of option o into its place; false after saying why. */
static bool store(const char *bench, const gf_bench_opt *o, const char *text)
{
    if (o->kind == GF_BENCH_FLAG) {
        *(bool *)o->out = true;
        return true;
    }
    if (o->kind == GF_BENCH_TEXT) {
        for (size_t i = 0; o->choices && o->choices[i]; i++) {
            if (strcmp(text, o->choices[i]) == 0)
                break;
            if (!o->choices[i + 1]) {
                fprintf(stderr, "gamefn-bench %s: --%s: one of", bench, o->name);
                for (size_t k = 0; o->choices[k]; k++)
                    fprintf(stderr, "%s %s", k ? "," : "", o->choices[k]);
                fprintf(stderr, "; got '%s'\n", text);
                return false;
            }
        }
        *(const char **)o->out = text;
        return true;
    }
    char *end = NULL;
    errno = 0;
    double d = o->kind == GF_BENCH_NUMBER ? strtod(text, &end) : 0;
    long long x = o->kind == GF_BENCH_NUMBER ? 0 : strtoll(text, &end, 10);
    bool whole = o->kind != GF_BENCH_NUMBER;
    if (!*text || *end || errno || (whole && (x < (long long)o->lo || x > (long long)o->hi)) ||
        (!whole && !(d >= o->lo && d <= o->hi))) {
        fprintf(stderr, "gamefn-bench %s: --%s: a %s in %.15g..%.15g, got '%s'\n", bench, o->name,
                whole ? "whole number" : "number", o->lo, o->hi, text);
        return false;
    }
    switch (o->kind) {
    case GF_BENCH_NUMBER:
        *(double *)o->out = d;
        break;
    case GF_BENCH_INT:
        *(int *)o->out = (int)x;
        break;
    case GF_BENCH_LONG:
        *(long *)o->out = (long)x;
        break;
    case GF_BENCH_UINT:
        *(unsigned *)o->out = (unsigned)x;
        break;
    default:
        *(long long *)o->out = x;
        break;
    }
    return true;
}

/* The table read into its places: 0, 1 (--help) or -1 (said why). */
static int read_options(const char *bench, int argc, char **argv, const gf_bench_opt *opts,
                        size_t n)
{
    enum { MAX_OPTS = 32, FIRST = 256 }; /* getopt_long codes of the table: FIRST + index */
    struct option longopts[MAX_OPTS + 2];
    if (n > MAX_OPTS) {
        fprintf(stderr, "gamefn-bench %s: more than %d options\n", bench, MAX_OPTS);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        longopts[i] = (struct option){
            opts[i].name, opts[i].kind == GF_BENCH_FLAG ? no_argument : required_argument, NULL,
            FIRST + (int)i};
    longopts[n] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n + 1] = (struct option){NULL, 0, NULL, 0};
    optind = 0; /* a fresh scan: argv is the subcommand's */
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h')
            return 1;
        if (c < FIRST || c >= FIRST + (int)n) /* getopt_long said what is wrong */
            return -1;
        if (!store(bench, &opts[c - FIRST], optarg))
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "gamefn-bench %s: unexpected argument '%s'\n", bench, argv[optind]);
        return -1;
    }
    return 0;
}

int gf_bench_options(const char *bench, int argc, char **argv, const gf_bench_opt *opts, size_t n,
                     void (*usage)(FILE *f))
{
    int rc = read_options(bench, argc, argv, opts, n);
    if (rc != 0)
        usage(rc > 0 ? stdout : stderr);
    return rc;
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
