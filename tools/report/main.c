/*
 * gamefn-report — turns a run directory into one self-contained HTML report.
 *
 *   gamefn-report DIR [--out FILE]
 *
 * Reads DIR (the format is docs/REPORT.md), draws the plots with gnuplot, writes
 * DIR/report.html (or FILE) atomically (a temporary file renamed into place, so a reader
 * never sees half a report) and prints one line: the report's path and the verdict.
 *
 * Exit status: 0 written; 3 written, but some input was unusable or a plot could not be
 * drawn (each listed under "Input problems" in the report and on stderr); 1 no report
 * (DIR is not a run, gnuplot is missing, the file cannot be written); 2 usage.
 */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gnuplot.h"
#include "report.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gamefn-report DIR [--out FILE]\n\n"
               "Writes an HTML report (default DIR/report.html) of the run whose data is in DIR:\n"
               "summary.json, check.json and the .tsv files described in docs/REPORT.md.\n"
               "Needs gnuplot (Debian: gnuplot-nox); $GAMEFN_GNUPLOT names another program.\n\n"
               "Exit status: 0 written; 3 written with input problems (listed in the report);\n"
               "1 no report; 2 usage.\n");
}

/* Writes data to path through a temporary file in the same directory, renamed into place;
 * the file gets 0666 less the umask. 0, or -1 with why. */
static int write_atomically(const char *path, const char *data, size_t len, char *why,
                            size_t whysize)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp) {
        snprintf(why, whysize, "out of memory");
        return -1;
    }
    snprintf(tmp, n + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(why, whysize, "%s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    int rc = fchmod(fd, 0666 & ~mask);
    for (size_t off = 0; rc == 0 && off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = -1;
        else
            off += (size_t)w;
    }
    if (close(fd) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0) {
        snprintf(why, whysize, "%s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out_path = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (argc - optind != 1) {
        usage(stderr);
        return 2;
    }
    const char *dir = argv[optind];
    signal(SIGPIPE, SIG_IGN); /* a gnuplot that dies early closes its input */

    char why[512], version[128];
    if (gf_gnuplot_version(version, sizeof version, why, sizeof why) != GF_OK) {
        fprintf(stderr,
                "gamefn-report: gnuplot is required to draw the plots (Debian: gnuplot-nox, "
                "installed by scripts/install-deps.sh): %s\n",
                why);
        return 1;
    }
    gf_run *run = NULL;
    gf_err e = gf_run_load(dir, &run, why, sizeof why);
    if (e != GF_OK) {
        fprintf(stderr, "gamefn-report: %s\n", why);
        return 1;
    }
    char *default_out = NULL;
    if (!out_path) {
        if (asprintf(&default_out, "%s/report.html", dir) < 0) {
            gf_run_free(run);
            fprintf(stderr, "gamefn-report: out of memory\n");
            return 1;
        }
        out_path = default_out;
    }
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    gf_report_opts opts = {
        .gnuplot_timeout_ms = 30000, .gnuplot_version = version, .generated_at = now};
    gf_buf html = {0};
    gf_report_result *res = calloc(1, sizeof *res);
    int code = 1;
    if (!res) {
        fprintf(stderr, "gamefn-report: out of memory\n");
        goto out;
    }
    gf_report_render(run, &opts, &html, res);
    if (html.oom) {
        fprintf(stderr, "gamefn-report: out of memory\n");
        goto out;
    }
    if (write_atomically(out_path, html.p, html.len, why, sizeof why) != 0) {
        fprintf(stderr, "gamefn-report: cannot write the report: %s\n", why);
        goto out;
    }
    for (size_t i = 0; i < run->nproblems; i++)
        fprintf(stderr, "gamefn-report: input problem: %s\n", run->problems[i]);
    if (res->plots_failed)
        fprintf(stderr, "gamefn-report: %zu plot(s) could not be drawn; the first: %s\n",
                res->plots_failed, res->first_failure);
    const gf_verdict *v = &res->verdict;
    printf("report: %s\nverdict: %s", out_path, gf_quality_level_name(v->level));
    const gf_verdict_list *why_list = v->level == GF_UNHEALTHY    ? &v->fails
                                      : v->level == GF_INCOMPLETE ? &v->missing
                                                                  : NULL;
    for (size_t i = 0; why_list && i < why_list->n && i < 3; i++)
        printf("%s%s", i ? "; " : " (", why_list->line[i]);
    if (why_list && why_list->n)
        printf("%s)", why_list->n > 3 ? "; ..." : "");
    printf("\nplots: %zu drawn, %zu not measured, %zu failed\n", res->plots_drawn,
           res->plots_not_measured, res->plots_failed);
    code = run->nproblems || run->problems_dropped || res->plots_failed ? 3 : 0;
out:
    free(res);
    gf_buf_free(&html);
    free(default_out);
    gf_run_free(run);
    return code;
}
