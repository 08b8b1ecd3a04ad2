/*
 * bench/bench.h — subcommands of the gamefn-bench program.
 *
 * Each subcommand parses its own flags, prints human-readable figures, and with
 * --json prints one JSON object as the very last line of stdout. Figures are
 * measured in the run that prints them; ratios are against baselines measured in
 * the same run, because the machines are shared and noisy (docs/BENCHMARKS.md).
 */
#ifndef GAMEFN_BENCH_H
#define GAMEFN_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

int gf_bench_raw(int argc, char **argv);         /* raw JetStream / KV / req-rep rates */
int gf_bench_match(int argc, char **argv);       /* matchmaking engine tick */
int gf_bench_partitioned(int argc, char **argv); /* events/s through a partitioned consumer */
int gf_bench_intake(int argc, char **argv);      /* ticket.create rate of intake replicas */
int gf_bench_service(int argc, char **argv);     /* intake + ticker + matchers: time to match */
int gf_bench_events(int argc, char **argv);      /* events: producer to leaderboard effect */
int gf_bench_lag(int argc, char **argv);         /* the lag monitor's cost: consumer info, gaps */
int gf_bench_producer(int argc, char **argv);    /* event producer library vs raw publish */
int gf_bench_alloc(int argc, char **argv);       /* allocator + fleet + simulated servers */
int gf_bench_e2e(int argc, char **argv);         /* the whole service: submit to assignment */
int gf_bench_check(int argc, char **argv);       /* the independent checker over a history */

/* The build this program belongs to (it is <build>/bench/gamefn-bench): <build> into buf. */
void gf_bench_build_dir(char *buf, size_t size);
/* "<build>/bench/<relative>" into buf: a binary next to this program. */
void gf_bench_near_me(char *buf, size_t size, const char *relative);

/* One option of a subcommand: --<name> and where its value goes. Made with GF_BENCH_OPT,
 * which takes the kind from the type of `out`: bool * a flag (no value; sets true),
 * const char ** a text, double * a number, int * / long * / long long * / unsigned * a
 * whole number. Numbers must lie in lo..hi. GF_BENCH_CHOICE_OPT makes a text that must be
 * one of a NULL-terminated list. A table of these is the subcommand's flags; its usage()
 * text says what they mean. */
typedef enum gf_bench_opt_kind {
    GF_BENCH_FLAG,
    GF_BENCH_TEXT,
    GF_BENCH_NUMBER,
    GF_BENCH_INT,
    GF_BENCH_LONG,
    GF_BENCH_LLONG,
    GF_BENCH_UINT,
} gf_bench_opt_kind;

typedef struct gf_bench_opt {
    const char *name;
    gf_bench_opt_kind kind;
    void *out;
    double lo, hi;              /* whole numbers too: every bound in use is exact in a double */
    const char *const *choices; /* a text's allowed values, NULL-terminated; NULL = any */
} gf_bench_opt;

/* The kind of option a place of this type holds. */
#define GF_BENCH_KIND(out)                                                                         \
    _Generic((out), bool *: GF_BENCH_FLAG, const char **: GF_BENCH_TEXT,                           \
             double *: GF_BENCH_NUMBER, int *: GF_BENCH_INT, long *: GF_BENCH_LONG,                \
             long long *: GF_BENCH_LLONG, unsigned *: GF_BENCH_UINT)
#define GF_BENCH_OPT(name, out, lo, hi)                                                            \
    {                                                                                              \
        (name), GF_BENCH_KIND(out), (out), (lo), (hi), NULL                                        \
    }
#define GF_BENCH_FLAG_OPT(name, out) GF_BENCH_OPT(name, out, 0, 0)
#define GF_BENCH_CHOICE_OPT(name, out, choices)                                                    \
    {                                                                                              \
        (name), GF_BENCH_TEXT, (out), 0, 0, (choices)                                              \
    }

/* Reads the options of `gamefn-bench <bench>` (argv[0] is the subcommand) into the table's
 * places; --help is always there. 0: run; 1: --help, usage printed on stdout; -1: a bad
 * option, value or stray argument, said on stderr ("gamefn-bench <bench>: --<name>: a
 * whole number in lo..hi, got 'text'") and usage after it. The subcommand then exits
 * with 0 after --help, 2 after a bad option. */
int gf_bench_options(const char *bench, int argc, char **argv, const gf_bench_opt *opts, size_t n,
                     void (*usage)(FILE *f));

/* The --json line: j (json_dumps flags, e.g. JSON_COMPACT) and a newline on stdout, as the
 * last thing a subcommand prints. Takes j (NULL is fine); false if nothing was printed. */
bool gf_bench_json_line(json_t *j, size_t flags);

#endif
