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

/* A whole number option of `gamefn-bench <bench>` within [lo, hi] into *out; false after
 * "gamefn-bench <bench>: a value in lo..hi, got 'text'" on stderr. */
bool gf_bench_integer(const char *bench, const char *text, long long lo, long long hi,
                      long long *out);

/* The --json line: j (json_dumps flags, e.g. JSON_COMPACT) and a newline on stdout, as the
 * last thing a subcommand prints. Takes j (NULL is fine); false if nothing was printed. */
bool gf_bench_json_line(json_t *j, size_t flags);

#endif
